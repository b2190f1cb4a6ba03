"""Perturbation of keys besides microaggregation (issue 43.6): additive and correlated noise with
the noise level published, rank swapping, and targeted record swapping of households between
geographic areas (as sdcMicro's ``recordSwap``)."""

"""Perturbation of keys besides microaggregation (issue 43.6): additive and correlated noise with
the noise level published, rank swapping, and targeted record swapping of households between
geographic areas (as sdcMicro's ``recordSwap``)."""

from .noise import NoiseResult, add_noise
from .rankswap import RankSwapResult, rank_swap
from .recordswap import RecordSwapResult, record_swap

__all__ = ["NoiseResult", "RankSwapResult", "RecordSwapResult", "add_noise", "rank_swap", "record_swap"]

"""The container of what an estimator's ``transform`` returns (scikit-learn's ``set_output``).

``get_params``, ``set_params``, ``repr`` and ``clone`` come from :class:`sklearn.base.BaseEstimator`;
this mixin only adds probanon's default container: a DataFrame in gives a DataFrame out.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import ParameterError

#: ``set_output(transform=...)``: "auto" (probanon's default: a DataFrame in gives a DataFrame
#: out, with its index and the fitted column names; an array gives an array), "pandas" (always a
#: DataFrame), "default" (always a NumPy array, scikit-learn's default)
OUTPUTS = ("auto", "pandas", "default")


class OutputMixin:
    """``set_output`` and the wrapping of ``transform``'s values. The mode is kept where
    scikit-learn keeps it (``_sklearn_output_config``, which :func:`sklearn.base.clone` copies);
    without one set, scikit-learn's global ``transform_output="pandas"`` (``sklearn.set_config``)
    gives "pandas", else "auto"."""

    def set_output(self, *, transform=None):
        """What ``transform`` and ``fit_transform`` return (scikit-learn's ``set_output``):
        ``transform`` one of :data:`OUTPUTS`, or None to leave it unchanged. Returns self."""
        if transform is not None:
            if transform not in OUTPUTS:
                raise ParameterError(f"set_output: transform must be one of {', '.join(OUTPUTS)}, got {transform!r}")
            self._sklearn_output_config = {**getattr(self, "_sklearn_output_config", {}), "transform": transform}
        return self

    def _output_mode(self) -> str:
        mode = getattr(self, "_sklearn_output_config", {}).get("transform")
        if mode is not None:
            return mode
        from sklearn import get_config

        return "pandas" if get_config()["transform_output"] == "pandas" else "auto"

    def _wrap_output(self, values, X, columns):
        """``values`` (n, d) as the configured container: a DataFrame with ``columns`` (x0, x1...
        when None) and X's index when X is a DataFrame, else the array itself. Each column keeps
        its own type (numbers as numbers, categories as they were released)."""
        mode = self._output_mode()
        if mode == "default" or (mode == "auto" and not isinstance(X, pd.DataFrame)):
            return np.asarray(values)
        from .data import values_frame

        return values_frame(values, columns, X.index if isinstance(X, pd.DataFrame) else None)

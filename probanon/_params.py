"""Parameter handling of the estimators (scikit-learn's contract): ``get_params``,
``set_params`` and ``repr`` from the class attribute ``_param_names``; the container of what
``transform`` returns (scikit-learn's ``set_output``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import ParameterError

#: ``set_output(transform=...)``: "auto" (probanon's default: a DataFrame in gives a DataFrame
#: out, with its index and the fitted column names; an array gives an array), "pandas" (always a
#: DataFrame), "default" (always a NumPy array, scikit-learn's default)
OUTPUTS = ("auto", "pandas", "default")


class ParamsMixin:
    _param_names: tuple = ()

    def get_params(self, deep=True) -> dict:
        return {name: getattr(self, name) for name in self._param_names}

    def set_params(self, **params):
        for name, value in params.items():
            if name not in self._param_names:
                raise ValueError(f"unknown parameter {name!r}")
            setattr(self, name, value)
        return self

    def set_output(self, *, transform=None):
        """What ``transform`` and ``fit_transform`` return (scikit-learn's ``set_output``):
        ``transform`` one of :data:`OUTPUTS`, or None to leave it unchanged. Returns self."""
        if transform is not None:
            if transform not in OUTPUTS:
                raise ParameterError(f"set_output: transform must be one of {', '.join(OUTPUTS)}, got {transform!r}")
            self._output = transform
        return self

    def _wrap_output(self, values, X, columns):
        """``values`` (n, d) as the configured container: a DataFrame with ``columns`` (x0, x1...
        when None) and X's index when X is a DataFrame, else the array itself. Each column keeps
        its own type (numbers as numbers, categories as they were released)."""
        mode = getattr(self, "_output", "auto")
        if mode == "default" or (mode == "auto" and not isinstance(X, pd.DataFrame)):
            return np.asarray(values)
        from .data import values_frame

        return values_frame(values, columns, X.index if isinstance(X, pd.DataFrame) else None)

    def __repr__(self) -> str:
        args = ", ".join(f"{p}={getattr(self, p)!r}" for p in self._param_names)
        return f"{type(self).__name__}({args})"

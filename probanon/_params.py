"""Parameter handling of the estimators (scikit-learn's contract): ``get_params``,
``set_params`` and ``repr`` from the class attribute ``_param_names``."""

from __future__ import annotations


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

    def __repr__(self) -> str:
        args = ", ".join(f"{p}={getattr(self, p)!r}" for p in self._param_names)
        return f"{type(self).__name__}({args})"

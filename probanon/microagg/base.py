"""Estimator contract shared by the microaggregation methods (scikit-learn style).

``fit(X)`` standardises the quasi-identifiers (population sd; constant columns are only
centred), partitions the records and sets ``labels_``, ``centroids_`` (original units),
``sizes_``, ``standardizer_`` and ``function_`` (the publishable
:class:`~probanon.microagg.function.MicroaggregationFunction`). ``transform(X)`` applies the
fitted function to any records; ``fit_transform(X)`` returns the fitted records replaced by
their group centroid.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._params import ParamsMixin
from .._validation import check_k, check_matrix
from ..data import Standardizer, select_columns
from ..errors import NotFittedError
from .function import MicroaggregationFunction


def group_means(X: np.ndarray, labels: np.ndarray, n_groups: int, weights=None) -> np.ndarray:
    """Mean of each group's rows (weighted if ``weights``), shape (n_groups, d):
    x_g = sum_{i in g} w_i x_i / sum_{i in g} w_i."""
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    total = np.bincount(labels, weights=w, minlength=n_groups)
    return np.column_stack([np.bincount(labels, weights=w * X[:, j], minlength=n_groups) for j in range(X.shape[1])]) / total[:, None]


def _quiet(stage: str, done: int, total: int) -> None:
    """The default progress callback: says nothing."""


class Microaggregator(ParamsMixin):
    """Base class: subclasses implement ``_partition(Z, X, progress) -> (labels, function
    kind, rule)`` (Z standardised, X the original values, ``progress`` a callable, see
    :meth:`fit`)."""

    def _validate_input(self, X):
        """The quasi-identifier matrix; a DataFrame gives its numeric columns, whose names
        are recorded in ``feature_names_in_`` (scikit-learn's convention; absent after a fit
        on an array, so a refit never keeps stale names)."""
        self.__dict__.pop("feature_names_in_", None)
        if isinstance(X, pd.DataFrame):
            cols = select_columns(X)
            self.feature_names_in_ = list(cols)
            X = X[cols]
        return check_matrix(X, name="data")

    def fit(self, X, y=None, *, progress=None):
        """Partition the records of X (array or DataFrame; see the module docstring).

        ``progress``, if given, is called as ``progress(stage, done, total)``: ``stage`` a
        short label of the current step (e.g. "MDAV", "Lloyd"), ``done`` of ``total`` units of
        that stage done; a new label starts a new stage. It is called at least once before the
        work starts (and before any numba compilation), so a caller can show a first message;
        without it the fit prints nothing."""
        X = self._validate_input(X)
        self.k_ = check_k(self.k, X.shape[0])  # the parameter itself stays as given
        self.n_features_in_ = X.shape[1]
        self.standardizer_ = Standardizer.fit(X)
        Z = np.ascontiguousarray(self.standardizer_.transform(X))
        labels, kind, rule = self._partition(Z, X, _quiet if progress is None else progress)
        self.labels_ = labels
        if kind == "intervals":
            self.centroids_ = [group_means(X[:, [j]], labels[:, j], labels[:, j].max() + 1)[:, 0] for j in range(X.shape[1])]
            self.sizes_ = [np.bincount(labels[:, j]) for j in range(X.shape[1])]
        else:
            n_groups = int(labels.max()) + 1
            self.centroids_ = group_means(X, labels, n_groups)
            self.sizes_ = np.bincount(labels, minlength=n_groups)
        self.function_ = MicroaggregationFunction(
            kind=kind,
            standardizer=self.standardizer_,
            centroids=self.centroids_,
            sizes=self.sizes_,
            rule=rule,
            columns=getattr(self, "feature_names_in_", None),
            meta={"method": type(self).__name__, "k": self.k_, "n_records": int(X.shape[0])},
        )
        return self

    def _check_fitted(self):
        if not hasattr(self, "function_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit first")

    def transform(self, X) -> np.ndarray:
        """Records replaced by the centroid of the cell the fitted function assigns them to.
        Fitted on a DataFrame, the function carries its names (``feature_names_in_``) and
        reads a DataFrame by name (extra columns ignored, a missing one an InputError); a
        Series is one record (see :meth:`MicroaggregationFunction.assign`)."""
        self._check_fitted()
        return self.function_.transform(X)

    def fit_transform(self, X, y=None, *, progress=None) -> np.ndarray:
        """Fit, then return every fitted record replaced by its group centroid."""
        self.fit(X, progress=progress)
        if isinstance(self.centroids_, list):
            return np.column_stack([c[self.labels_[:, j]] for j, c in enumerate(self.centroids_)])
        return self.centroids_[self.labels_]

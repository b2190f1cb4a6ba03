"""Group means, the step every microaggregation method ends with: used by the estimators, the
blocked and missing-value paths, the settling of published diagrams and the survey design. With
keys some records lack: :func:`released_means` and :func:`observed_standardizer`."""

from __future__ import annotations

import numpy as np

from ..data import Standardizer
from ..errors import InputError


def group_means(X: np.ndarray, labels: np.ndarray, n_groups: int, weights=None) -> np.ndarray:
    """Mean of each group's rows (weighted if ``weights``), shape (n_groups, d):
    x_g = sum_{i in g} w_i x_i / sum_{i in g} w_i."""
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    total = np.bincount(labels, weights=w, minlength=n_groups)
    return np.column_stack([np.bincount(labels, weights=w * X[:, j], minlength=n_groups) for j in range(X.shape[1])]) / total[:, None]


def released_means(X: np.ndarray, labels: np.ndarray, weights=None) -> np.ndarray:
    """(groups x keys) the released values of each group: the (weighted) mean of a key every
    member observes, NaN for a key some member lacks (:mod:`.missing`, step 4)."""
    n_groups = int(labels.max()) + 1
    lacking = np.isnan(X)
    out = group_means(np.where(lacking, 0.0, X), labels, n_groups, weights)
    out[group_means(lacking.astype(np.float64), labels, n_groups) > 0] = np.nan
    return out


def observed_standardizer(X: np.ndarray, weights=None):
    """The :class:`~probanon.data.Standardizer` of each column's observed values (NaN skipped)."""
    parts = []
    for j in range(X.shape[1]):
        seen = ~np.isnan(X[:, j])
        if not seen.any():
            raise InputError(f"key {j} has no observed value")
        parts.append(Standardizer.fit_valid(X[seen, j:j + 1], None if weights is None else np.asarray(weights)[seen]))
    return Standardizer(mean_=np.concatenate([p.mean_ for p in parts]), scale_=np.concatenate([p.scale_ for p in parts]))

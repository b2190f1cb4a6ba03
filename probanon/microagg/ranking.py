"""Individual ranking: univariate microaggregation of each column separately.

Each column is sorted on its own and cut into groups of ``k`` consecutive values (the
last group absorbs the remainder, so it holds ``k .. 2k - 1`` values); every value is
replaced by the mean of its group. This is the "individual ranking" method of
Defays & Nanopoulos (1993), as in sdcMicro's ``microaggregation(method = "onedims")``
where each variable is aggregated independently. k-anonymity holds per column only,
not for combinations of columns.

Optional ``keep_ties``: a group boundary never separates equal values, so the same value
always gets the same replacement, and the groups become intervals of the real line that
can assign NEW values (:func:`ranking_intervals`, :func:`apply_ranking_intervals`).
"""

from __future__ import annotations

import numpy as np

from .._validation import BOOLEAN, check_k, check_matrix
from .base import CONSTRAINTS, Microaggregator

__all__ = [
    "individual_ranking_partition",
    "individual_ranking",
    "ranking_intervals",
    "apply_ranking_intervals",
]


def _column_groups(sorted_x: np.ndarray, k: int, keep_ties: bool) -> np.ndarray:
    """Group label of each position of one sorted column (non-decreasing labels)."""
    n = sorted_x.size
    if not keep_ties:
        return np.minimum(np.arange(n) // k, n // k - 1).astype(np.int64)
    # run_end[p] = one past the last position of the run of equal values containing p
    new_run = np.flatnonzero(sorted_x[1:] != sorted_x[:-1]) + 1
    bounds = np.append(new_run, n)
    run_end = np.repeat(bounds, np.diff(np.concatenate(([0], bounds))))
    pos = np.empty(n, dtype=np.int64)
    s, g = 0, 0
    while s < n:
        e = s + k
        if e >= n:
            e = n
        else:
            e = int(run_end[e - 1])  # the group holding the first of a run takes it all
            if n - e < k:
                e = n  # fewer than k left: merged into this (last) group
        pos[s:e] = g
        s, g = e, g + 1
    return pos


def individual_ranking_partition(X, k, keep_ties: bool = False) -> np.ndarray:
    """Group labels of individual ranking, one column of labels per column of ``X``.

    Parameters
    ----------
    X : array-like (n, d)
        Numeric data (a 1-D input is treated as one column).
    k : int
        Minimum group size, ``1 <= k <= n`` (:class:`ParameterError` otherwise).
    keep_ties : bool, default False
        If False, each column is sorted stably (equal values in row order) and cut into
        groups of ``k`` consecutive records; the last group absorbs the remainder
        (``k .. 2k - 1`` records). Equal values may fall into different groups.
        If True, a boundary never splits a run of equal values: the group containing the
        first value of a run takes the whole run (groups may exceed ``2k - 1``); if
        fewer than ``k`` records remain after a group, they are merged into it, so the
        last group also has at least ``k`` records.

    Returns
    -------
    labels : ndarray of int64, shape (n, d)
        ``labels[i, j]`` is the group of record ``i`` in column ``j``; groups are
        numbered 0, 1, ... by increasing values within each column.
    """
    X = check_matrix(X, "X")
    return _ranking_partition(X, check_k(k, X.shape[0]), bool(keep_ties))


def _ranking_partition(X: np.ndarray, k: int, keep_ties: bool) -> np.ndarray:
    """:func:`individual_ranking_partition` of valid arguments (``X`` finite float64 (n, d),
    1 <= k <= n): the estimator checked them at its edge."""
    n, d = X.shape
    labels = np.empty((n, d), dtype=np.int64)
    for j in range(d):
        order = np.argsort(X[:, j], kind="stable")
        labels[order, j] = _column_groups(X[order, j], k, keep_ties)
    return labels


def _group_means(x: np.ndarray, lab: np.ndarray) -> np.ndarray:
    return np.bincount(lab, weights=x) / np.bincount(lab)


def individual_ranking(X, k, keep_ties: bool = False) -> np.ndarray:
    """Individual ranking: every value replaced by the mean of its column-group.

    Groups are those of :func:`individual_ranking_partition` (same ``k`` and
    ``keep_ties``). Returns a float64 array of shape (n, d); each column keeps its mean
    (up to rounding).
    """
    X = check_matrix(X, "X")
    labels = _ranking_partition(X, check_k(k, X.shape[0]), bool(keep_ties))
    out = np.empty_like(X)
    for j in range(X.shape[1]):
        out[:, j] = _group_means(X[:, j], labels[:, j])[labels[:, j]]
    return out


def ranking_intervals(X, k, keep_ties: bool = True) -> list[tuple[np.ndarray, np.ndarray]]:
    """Interval form of individual ranking, to assign new values.

    Returns, for each column, ``(upper_bounds, means)``: two float64 arrays indexed by
    group (groups in increasing order), ``upper_bounds[g]`` being the largest value of
    group ``g`` and ``means[g]`` its mean. A value ``v`` maps to the first group whose
    upper bound is ``>= v``; values above the last bound go to the last group (see
    :func:`apply_ranking_intervals`).

    With ``keep_ties=True`` (the default) the bounds are strictly increasing and this
    rule reproduces the fitted labels exactly. With ``keep_ties=False`` a run of equal
    values split across a boundary is mapped entirely to the first of those groups.
    """
    X = check_matrix(X, "X")
    labels = _ranking_partition(X, check_k(k, X.shape[0]), bool(keep_ties))
    out = []
    for j in range(X.shape[1]):
        x, lab = X[:, j], labels[:, j]
        G = int(lab.max()) + 1
        upper = np.full(G, -np.inf)
        np.maximum.at(upper, lab, x)
        out.append((upper, _group_means(x, lab)))
    return out


def apply_ranking_intervals(X, intervals, return_means: bool = False) -> np.ndarray:
    """Assign (new) values to the groups of :func:`ranking_intervals`.

    ``X`` must have one column per entry of ``intervals``. Returns the (n, d) int64
    labels, or, with ``return_means=True``, the (n, d) float64 group means.
    """
    from .rule_kernels import assign_intervals

    labels = assign_intervals(X, [upper for upper, _ in intervals])
    if not return_means:
        return labels
    return np.column_stack([np.asarray(means, dtype=np.float64)[labels[:, j]] for j, (_, means) in enumerate(intervals)])


class IndividualRanking(Microaggregator):
    """Individual ranking estimator: each column microaggregated on its own.

    ``labels_`` has shape (n, d) (the group of each value in its column), ``centroids_`` is a
    list of per-column group means. ``keep_ties`` (default True here, so that the published
    "intervals" function reproduces the labels) never splits equal values across groups.
    """

    _parameter_constraints = {**{p: c for p, c in CONSTRAINTS.items() if p not in ("block_size", "n_jobs")},
                              "keep_ties": [BOOLEAN]}
    _split_option = "keep_ties=False"

    def __init__(self, k: int = 3, *, keep_ties: bool = True, nominal=(), ordinal=(), missing="raise",
                 merge_small_strata=False):
        self.k = k
        self.keep_ties = keep_ties
        self.nominal = nominal  # options of every microaggregator (categorical keys, missing-value patterns and
        self.ordinal = ordinal  # strata are refused: individual ranking aggregates each column on its own)
        self.missing = missing
        self.merge_small_strata = merge_small_strata

    def _keeps_identical(self) -> bool:
        return bool(self.keep_ties)

    def _partition(self, Z, X, progress):
        progress("individual ranking", 0, 1)
        labels = _ranking_partition(X, self.k_, bool(self.keep_ties))
        upper = []
        for j in range(X.shape[1]):  # largest value of each group, in one pass per column
            top = np.full(labels[:, j].max() + 1, -np.inf)
            np.maximum.at(top, labels[:, j], X[:, j])
            upper.append(top)
        progress("individual ranking", 1, 1)
        return labels, "intervals", {"upper": upper}

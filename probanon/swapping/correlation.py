r"""Correlation preservation, the utility measure of paper 2 (Tables VI-XI).

The paper compares "the correlations from all attributes to the confidential attributes"
(Tables VI-IX: rows A1..A13, columns A7..A13, upper triangle). With C the confidential
attributes, the compared pairs are

.. math::

    P = \{(i, j) : i < j,\ i \in C \text{ or } j \in C\},

|P| = (d - |C|)|C| + |C|(|C| - 1)/2 (63 on the census: 6 x 7 + 21). Table X/XI report,
over R runs of a method, the mean and standard deviation of

.. math::

    |r'_{ij} - r_{ij}|, \quad (i, j) \in P,

pooled over the pairs and the runs (|P| R values), with r the Pearson correlation of the
original and r' that of the release. The standard deviation is the population one (ddof =
0): R identical runs (MDAV-ID is deterministic) give the same figures as one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..progress import quiet
from .._validation import check_k, check_matrix, check_random_state
from ..errors import InputError, ParameterError
from ..metrics.utility import constant_columns
from .groups import check_confidential, check_method, partition_groups
from .release import _release_values


def confidential_pairs(d: int, confidential) -> np.ndarray:
    """The pairs P (|P|, 2) of the module docstring, (i, j) with i < j in row-major order."""
    conf = set(check_confidential(confidential, d))
    return np.array([(i, j) for i in range(d) for j in range(i + 1, d) if i in conf or j in conf],
                    dtype=np.int64).reshape(-1, 2)


def pearson_correlations(X, name: str = "data") -> np.ndarray:
    r"""Pearson correlation matrix of the columns of ``X``:
    r_ij = sum_k (x_ki - m_i)(x_kj - m_j) / sqrt(sum_k (x_ki - m_i)^2 sum_k (x_kj - m_j)^2).

    A constant column (sd <= 1e-12 max(1, |mean|), as in :mod:`probanon.metrics.utility`)
    has no correlation: :class:`InputError`.
    """
    X = check_matrix(X, name=name)
    flat = np.flatnonzero(constant_columns(X))
    if flat.size:
        raise InputError(f"{name}: column {int(flat[0])} is constant, its correlations are undefined")
    D = X - X.mean(axis=0)
    norm = np.sqrt(np.einsum("ij,ij->j", D, D))
    return np.clip((D.T @ D) / np.outer(norm, norm), -1.0, 1.0)


def correlation_differences(original, released, confidential) -> np.ndarray:
    """|r'_ij - r_ij| over the pairs P (in the order of :func:`confidential_pairs`)."""
    X = check_matrix(original, name="original")
    Y = check_matrix(released, name="released")
    if X.shape != Y.shape:
        raise InputError(f"original has shape {X.shape} but released has shape {Y.shape}")
    pairs = confidential_pairs(X.shape[1], confidential)
    r, r_rel = pearson_correlations(X, "original"), pearson_correlations(Y, "released")
    return np.abs(r_rel[pairs[:, 0], pairs[:, 1]] - r[pairs[:, 0], pairs[:, 1]])


@dataclass(frozen=True)
class CorrelationDifference:
    """Table X/XI statistic of one method at one k.

    ``mean``, ``sd``: mean and population sd of |r' - r| pooled over pairs and runs;
    ``differences`` (runs computed, |P|); ``pairs`` (|P|, 2); ``runs`` runs requested
    (MDAV-ID, deterministic, is computed once); ``method``, ``k``.
    """

    mean: float
    sd: float
    differences: np.ndarray
    pairs: np.ndarray
    runs: int
    method: str
    k: int


def correlation_difference_runs(X, k, method: str, confidential, runs: int = 100, random_state=None,
                                standardize: bool = True, progress=None) -> CorrelationDifference:
    """Run ``method`` ``runs`` times on ``X`` (paper 2, Tables X and XI: R = 100) and pool
    |r' - r| over the pairs P and the runs.

    The partition does not depend on the seed, so it is computed once and only the
    permutations are redrawn. ``progress``: None or a callback ``progress("runs", done, total)``
    (:mod:`probanon.progress`), with 0 before the first run and after each run.
    """
    X = check_matrix(X, name="data")
    if isinstance(runs, bool) or not isinstance(runs, (int, np.integer)) or runs < 1:
        raise ParameterError(f"runs must be a positive integer, got {runs!r}")
    k = check_k(k, X.shape[0])
    conf = check_confidential(confidential, X.shape[1])
    pairs = confidential_pairs(X.shape[1], conf)
    groups = partition_groups(X, k, method, check_method(method, conf, X.shape[1]), standardize)
    rng = check_random_state(random_state)
    drawn = 1 if method == "mdav-id" else int(runs)
    r = pearson_correlations(X, "original")[pairs[:, 0], pairs[:, 1]]
    diffs = np.empty((drawn, len(pairs)))
    progress = quiet if progress is None else progress
    progress("runs", 0, drawn)
    for run in range(drawn):
        Y, _ = _release_values(X, groups, rng)
        diffs[run] = np.abs(pearson_correlations(Y, "released")[pairs[:, 0], pairs[:, 1]] - r)
        progress("runs", run + 1, drawn)
    return CorrelationDifference(float(diffs.mean()), float(diffs.std()), diffs, pairs, int(runs), method, k)

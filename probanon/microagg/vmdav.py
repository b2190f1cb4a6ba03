"""V-MDAV: multivariate microaggregation with variable group size.

Reference: A. Solanas and A. Martinez-Balleste, "V-MDAV: a multivariate
microaggregation with variable group size", COMPSTAT 2006 (17th Conference of
IASC-ERS), Physica-Verlag, pp. 917-925.

Only the partition is computed here, on data that is already standardised (z-scores);
the estimator wrapper replaces the records by their group centroids.

Memory is O(n d): the unassigned records are kept compacted (column by column, in
original row order) and every step computes distances to one point at a time; no
n x n matrix is ever built. Time is O(n^2 d / k) for the group construction plus
O(n d) per extension attempt.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from .._validation import check_k, check_matrix, real
from ..errors import ParameterError
from .base import CONSTRAINTS, Microaggregator, group_means

__all__ = ["vmdav_partition"]


def _sqdist(A: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances of the columns of ``A`` (d x m) to ``point`` (d,),
    summed coordinate by coordinate."""
    t = A[0] - point[0]
    out = t * t
    for c in range(1, A.shape[0]):
        t = A[c] - point[c]
        out += t * t
    return out


def _k_smallest(dist: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` smallest entries of ``dist``; ties go to the lowest
    positions (the result of a stable argsort, in O(m))."""
    if k >= dist.size:
        return np.arange(dist.size)
    kth = np.partition(dist, k - 1)[k - 1]
    below = np.flatnonzero(dist < kth)
    equal = np.flatnonzero(dist == kth)[: k - below.size]
    return np.concatenate([below, equal])


def _check_gamma(gamma) -> float:
    if isinstance(gamma, bool) or not isinstance(gamma, numbers.Real):
        raise ParameterError(f"gamma must be a real number, got {gamma!r}")
    gamma = float(gamma)
    if not math.isfinite(gamma) or gamma < 0:
        raise ParameterError(f"gamma must be a finite number >= 0, got {gamma!r}")
    return gamma


def vmdav_partition(Z, k, gamma: float = 0.2, progress=None) -> np.ndarray:
    """Partition the rows of ``Z`` with V-MDAV (Solanas & Martinez-Balleste, 2006).

    Parameters
    ----------
    Z : array-like (n, d)
        Standardised data. Distances are Euclidean on ``Z`` as given.
    k : int
        Minimum group size, ``1 <= k <= n`` (:class:`ParameterError` otherwise).
    gamma : float, default 0.2
        Extension gain, ``gamma >= 0`` and finite (:class:`ParameterError` otherwise).
    progress : callable, optional
        Called as ``progress("V-MDAV", assigned, n)`` before the first group and after each
        group (records assigned so far, of n).

    Returns
    -------
    labels : ndarray of int64, shape (n,)
        Group of each record; groups are numbered 0, 1, 2, ... in the order they are
        formed.

    Algorithm
    ---------
    While at least ``k`` records are unassigned:

    1. ``c`` = centroid of the unassigned records; ``e`` = the unassigned record farthest
       from ``c``.
    2. ``G`` = ``e`` and its ``k - 1`` nearest unassigned records.
    3. Extension: while ``|G| < 2k - 1`` and unassigned records remain outside ``G``,
       let ``u`` be the unassigned record outside ``G`` with the smallest distance
       ``d_in`` to its nearest member of ``G``, and ``d_out`` the distance from ``u`` to
       its nearest other unassigned record outside ``G`` (``+inf`` if there is none).
       If ``d_in < gamma * d_out``, ``u`` joins ``G``; otherwise extension stops.
    4. ``G`` becomes the next group.

    Semantics of ``gamma``: a record joins a group only when it is more than
    ``1 / gamma`` times closer to the group than to any other unassigned record. With
    ``gamma = 0`` the test ``d_in < 0`` is never true: no extension, every group is formed
    with exactly ``k`` records (plain "fixed size" behaviour). Larger ``gamma`` extends
    more readily; the paper recommends values around 0.2 for scattered data and up to
    about 1.1 for clustered data. A record with ``d_out = +inf`` (the last one outside
    ``G``) is always added when ``gamma > 0``, so the extension may use up all remaining
    records.

    Leftovers: when fewer than ``k`` records remain unassigned (which can happen after an
    extension, or from the start of the last step), each of them joins the group of its
    nearest *already assigned* record (distances to the other leftovers are not used, so
    the order of the leftovers does not matter). This is the standard V-MDAV rule. Hence
    every group has between ``k`` and ``2k - 1`` records, except the groups that receive
    leftovers, which can hold up to ``2k - 1 + (k - 1)`` records (at most ``k - 1``
    leftovers exist in total).

    Ties: always resolved towards the lowest row index, as ``np.argmax`` / ``np.argmin``
    / a stable argsort would: the farthest record ``e``, the ``k - 1`` nearest neighbours
    of ``e`` (``e`` itself always comes first, even if it has exact duplicates), the
    candidate ``u`` and the nearest assigned record of a leftover.
    """
    Z = check_matrix(Z, "Z")
    return _vmdav_partition(Z, check_k(k, Z.shape[0]), _check_gamma(gamma), progress)


def _vmdav_partition(Z: np.ndarray, k: int, gamma: float, progress=None) -> np.ndarray:
    """:func:`vmdav_partition` of valid arguments (``Z`` finite float64, 1 <= k <= n, gamma a
    finite float >= 0): the estimator checked them at its edge."""
    n = Z.shape[0]
    labels = np.full(n, -1, dtype=np.int64)
    idx = np.arange(n)  # unassigned rows, increasing: position order == row order
    A = np.ascontiguousarray(Z.T)  # d x m, compacted unassigned records
    extend = gamma > 0 and k >= 2
    g = 0
    if progress is not None:
        progress("V-MDAV", 0, n)
    while idx.size >= k:
        m = idx.size
        c = A.mean(axis=1)
        e = int(np.argmax(_sqdist(A, c)))
        de = _sqdist(A, A[:, e])
        de[e] = -np.inf  # e first, whatever its duplicates
        members = _k_smallest(de, k)
        in_g = np.zeros(m, dtype=bool)
        in_g[members] = True

        if extend and m > k:
            # d_in^2 for every record: distance to its nearest member of G
            din = de
            din[e] = 0.0
            for p in members:
                if p != e:
                    np.minimum(din, _sqdist(A, A[:, p]), out=din)
            din[in_g] = np.inf
            size = k
            while size < 2 * k - 1 and size < m:
                u = int(np.argmin(din))
                du = _sqdist(A, A[:, u])
                du[in_g] = np.inf
                du[u] = np.inf
                d_out2 = du.min() if m - size > 1 else np.inf
                if math.sqrt(din[u]) < gamma * math.sqrt(d_out2):
                    in_g[u] = True
                    size += 1
                    np.minimum(din, du, out=din)
                    din[u] = np.inf
                else:
                    break

        labels[idx[in_g]] = g
        g += 1
        keep = ~in_g
        idx = idx[keep]
        A = np.ascontiguousarray(A[:, keep])
        if progress is not None:
            progress("V-MDAV", n - idx.size, n)

    if idx.size:
        assigned = labels >= 0
        ZT = np.ascontiguousarray(Z.T)
        new = labels.copy()
        for i in idx:
            dist = _sqdist(ZT, ZT[:, i])
            dist[~assigned] = np.inf
            new[i] = labels[int(np.argmin(dist))]
        labels = new
        if progress is not None:
            progress("V-MDAV", n, n)
    return labels


class VMDAV(Microaggregator):
    """V-MDAV estimator (variable group size k..2k-1, extension parameter ``gamma``).

    Its published function is a power diagram (kind "power-diagram") whose sites are the
    V-MDAV group means: V-MDAV groups are not balls, so a record goes to the closest site, and
    the diagram is settled on the fitted records (:mod:`.settle`: offsets lowered for cells
    short of k records, cells that cannot reach k removed). The release (``labels_``,
    ``centroids_``) is that diagram's own partition, so ``transform`` reproduces
    ``fit_transform`` on the fitted data (issue 39.1); ``records_settled_`` counts the records
    whose group differs from V-MDAV's.
    """

    _parameter_constraints = {**CONSTRAINTS, "gamma": [real(0)]}
    _blockable = True

    def __init__(self, k: int = 3, *, gamma: float = 0.2, block_size=None, n_jobs=None, nominal=(), ordinal=(),
                 missing="raise", merge_small_strata=False):
        self.k = k
        self.gamma = gamma
        self.block_size = block_size  # blocks for large files: see Microaggregator
        self.n_jobs = n_jobs
        self.nominal = nominal  # options of every microaggregator: see Microaggregator
        self.ordinal = ordinal
        self.missing = missing
        self.merge_small_strata = merge_small_strata

    def _partition(self, Z, X, progress):
        labels = _vmdav_partition(Z, self.k_, float(self.gamma), progress=progress)
        centers = group_means(Z, labels, int(labels.max()) + 1)
        return labels, "power-diagram", {"centers": np.ascontiguousarray(centers), "offsets": np.zeros(len(centers))}

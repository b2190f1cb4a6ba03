"""Optimal univariate microaggregation (Hansen & Mukherjee, 2003).

Reference: S. L. Hansen and S. Mukherjee, "A polynomial algorithm for optimal univariate
microaggregation", IEEE Transactions on Knowledge and Data Engineering 15(4), 2003,
pp. 1043-1044.

In one dimension an SSE-optimal partition into groups of at least k records consists of
groups that are contiguous in sorted order (their Lemma) and hold between k and 2k - 1
records (a group of >= 2k splits into two of >= k without raising the SSE; Domingo-Ferrer &
Mateo-Sanz, IEEE TKDE 14(1), 2002). The optimum is then a shortest path in the DAG whose nodes
are the cut positions 0..n of the sorted values and whose edge j -> j + s (k <= s <= 2k - 1)
costs the SSE of sorted values j..j+s-1:

    F(0) = 0,   F(e) = min over s in [k, 2k-1], s <= e, of F(e - s) + SSE(e - s, e).

O(n k) time, O(n) memory. Each group's SSE is accumulated by Welford's update while its start
moves left from the end e, so no cancellation of prefix sums of squares enters (EIA columns
reach 10^7). Ties: the sort is stable, and for each end e the smallest last group of least
cost wins (strict comparison), so the same input always gives the same labels.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .._validation import check_k
from ..errors import ParameterError

__all__ = ["optimal_univariate"]


@njit(cache=True)
def _shortest_path(v, k):
    """F and the last group size of the optimal path to each cut e = 0..n (sorted ``v``)."""
    n = v.size
    F = np.full(n + 1, np.inf)
    last = np.zeros(n + 1, np.int64)
    F[0] = 0.0
    for e in range(k, n + 1):
        mean = 0.0
        m2 = 0.0
        for s in range(1, min(2 * k - 1, e) + 1):  # group v[e-s .. e-1], grown to the left
            x = v[e - s]
            delta = x - mean
            mean += delta / s
            m2 += delta * (x - mean)
            if s >= k and F[e - s] + m2 < F[e]:
                F[e] = F[e - s] + m2
                last[e] = s
    return F, last


def optimal_univariate(z, k) -> np.ndarray:
    """Labels 0..Q-1 of the SSE-optimal partition of the values ``z`` (1-D, n >= k) into groups
    of at least ``k`` records (module docstring); groups are numbered in increasing order of
    their values."""
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 1:
        raise ParameterError(f"optimal_univariate needs a 1-D array, got shape {z.shape}")
    if not np.isfinite(z).all():
        raise ParameterError("optimal_univariate needs finite values")
    return _optimal_univariate(z, check_k(k, z.size))


def _optimal_univariate(z: np.ndarray, k: int) -> np.ndarray:
    """:func:`optimal_univariate` of valid arguments (``z`` finite float64, 1-D; 1 <= k <= n)."""
    order = np.argsort(z, kind="stable")
    F, last = _shortest_path(np.ascontiguousarray(z[order]), k)
    sizes = []
    e = z.size
    while e > 0:
        sizes.append(int(last[e]))
        e -= sizes[-1]
    labels = np.empty(z.size, np.int64)
    labels[order] = np.repeat(np.arange(len(sizes)), sizes[::-1])
    return labels

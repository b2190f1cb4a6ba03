"""Rank swapping (Moore 1996, "Controlled data-swapping techniques for masking public use
microdata", U.S. Census Bureau RR 96-04), as sdcMicro's ``rankSwap`` (R/rankSwap.R,
src/RankSwapping.h, the IHSN/OECD code).

Each column on its own (missing values left where they are):

1. its m present values sorted from the highest; the ``top`` percent highest (``int(m * top/100)``
   values) are replaced by their mean, and so are the ``bottom`` percent lowest (top and bottom
   coding, as sdcMicro; these records take part in no swap);
2. the u values left, ranked 1..u from the highest, are swapped pairwise: in rank order, a value
   not yet swapped is exchanged with one chosen uniformly among the values not yet swapped whose
   rank is higher by 1..L, ``L = floor(u * P)`` (P the window as a fraction of u); a value with no
   such partner keeps its own. So every value is swapped at most once, moves at most L ranks, and
   the column's multiset of (uncoded) values is unchanged.

The window P is given directly (``p``, percent: two ranks may differ by at most p% of the
records, sdcMicro's documentation; its C code uses ``P`` as a fraction and one rank fewer), or
from the correlation-preservation factor ``r0`` (``P = sqrt(2 var (1 - R0)) / |B - T|``), or
from the subset-mean factor ``k0`` (``P = sqrt(8/3) K0 |mean| / |B - T|``), with var and mean
those of the uncoded values (divisor u) and T, B the lowest top-coded and highest
bottom-coded original values (the extreme values when nothing is coded), as
src/RankSwapping.h. Without any, R0 = 0.95 (sdcMicro's default).

The pairs are drawn with a Fenwick tree over the values not yet swapped (O(u log u) per column,
numba), so 10^6 records take about a second.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numba import njit

from .._validation import check_matrix, check_random_state
from ..errors import GuaranteeError, ParameterError


@dataclass(frozen=True)
class RankSwapResult:
    """A rank-swapped release. ``released`` the columns (DataFrame, input's columns and index);
    per record and column, ``source`` the row whose original value it received (its own row when
    not swapped, -1 for a top/bottom-coded or missing value) and ``coded`` 1 where the value was
    top-coded, 2 bottom-coded, else 0; per column, ``window`` L (ranks), ``fraction`` P, ``swapped`` the number
    of values that moved, ``top_mean``/``bottom_mean`` the released value of the coded tails (NaN
    when none) and ``n_top``/``n_bottom`` how many."""

    released: pd.DataFrame
    columns: list
    source: np.ndarray
    coded: np.ndarray
    window: np.ndarray
    fraction: np.ndarray
    swapped: np.ndarray
    top_mean: np.ndarray
    bottom_mean: np.ndarray
    n_top: np.ndarray
    n_bottom: np.ndarray


@njit(cache=True)
def _pair_ranks(u, window, draws):
    """partner[j] (0-based ranks 0..u-1): the rank whose value rank j receives (pairs, or j
    itself). Rank j, if still free, takes a free rank uniformly among j+1..min(u-1, j+window)
    (``draws[j]`` uniform in [0, 1)); a Fenwick tree counts the free ranks."""
    partner = np.arange(u)
    tree = np.zeros(u + 1, np.int64)
    for i in range(1, u + 1):  # all free: tree[i] = lowbit(i)
        tree[i] = i & (-i)
    free = np.ones(u, np.bool_)
    top = 1
    while top * 2 <= u:
        top *= 2
    for j in range(u):
        if not free[j]:
            continue
        hi = min(u - 1, j + window)
        if hi <= j:
            continue
        # free ranks among 0..j (prefix up to j inclusive) and 0..hi
        a = 0
        i = j + 1
        while i > 0:
            a += tree[i]
            i -= i & (-i)
        b = 0
        i = hi + 1
        while i > 0:
            b += tree[i]
            i -= i & (-i)
        # rank j itself is free and counted in a
        count = b - a
        if count <= 0:
            continue
        t = int(draws[j] * count)
        if t >= count:
            t = count - 1
        target = a + t + 1  # the target-th free rank overall
        pos = 0
        step = top
        rem = target
        while step > 0:
            nxt = pos + step
            if nxt <= u and tree[nxt] < rem:
                pos = nxt
                rem -= tree[nxt]
            step //= 2
        k = pos  # 0-based rank
        partner[j] = k
        partner[k] = j
        for r in (j, k):
            free[r] = False
            i = r + 1
            while i <= u:
                tree[i] -= 1
                i += i & (-i)
    return partner


def _check_share(name, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or not np.isfinite(value):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    return float(value)


def rank_swap(X, *, p=None, r0=None, k0=None, top: float = 5.0, bottom: float = 5.0,
              random_state=None) -> RankSwapResult:
    """Rank-swap every column of ``X`` (numeric; see the module docstring). ``p``: the window in
    percent of the records (0..100); or ``r0`` in [0, 1] or ``k0`` >= 0 (at most one of the three;
    none: r0 = 0.95); ``top``, ``bottom``: percent of values top- and bottom-coded (sdcMicro's
    defaults 5 and 5; 0 codes none); ``random_state``: seed or Generator."""
    given = [name for name, v in (("p", p), ("r0", r0), ("k0", k0)) if v is not None]
    if len(given) > 1:
        raise ParameterError(f"give only one of p, r0 and k0 (got {', '.join(given)})")
    if not given:
        r0 = 0.95
    if p is not None and not 0 <= _check_share("p", p) <= 100:
        raise ParameterError(f"p must be a percentage in 0..100, got {p!r}")
    if r0 is not None and not 0 <= _check_share("r0", r0) <= 1:
        raise ParameterError(f"r0 must lie in 0..1, got {r0!r}")
    if k0 is not None and not 0 <= _check_share("k0", k0):
        raise ParameterError(f"k0 must be >= 0, got {k0!r}")
    top, bottom = _check_share("top", top), _check_share("bottom", bottom)
    if top < 0 or bottom < 0 or top + bottom >= 100:
        raise ParameterError(f"top and bottom must be percentages >= 0 that add up to less than 100, got {top}, {bottom}")
    frame = X if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X, dtype=np.float64))
    M = check_matrix(frame, name="data", missing=True)
    rng = check_random_state(random_state)
    n, d = M.shape
    out = M.copy()
    source = np.full((n, d), -1, np.int64)
    coded = np.zeros((n, d), np.int8)
    window, fraction, swapped = np.zeros(d, np.int64), np.zeros(d), np.zeros(d, np.int64)
    top_mean, bottom_mean = np.full(d, np.nan), np.full(d, np.nan)
    n_top, n_bottom = np.zeros(d, np.int64), np.zeros(d, np.int64)
    for j in range(d):
        rows = np.flatnonzero(~np.isnan(M[:, j]))
        m = rows.size
        order = rows[np.argsort(-M[rows, j])]  # highest first (ties in a fixed, seed-independent order)
        v = M[order, j]
        T, B = int(m * top / 100.0), int(np.floor(m * bottom / 100.0))
        if T:
            top_mean[j] = v[:T].mean()
            out[order[:T], j] = top_mean[j]
            coded[order[:T], j] = 1
        if B:
            bottom_mean[j] = v[m - B:].mean()
            out[order[m - B:], j] = bottom_mean[j]
            coded[order[m - B:], j] = 2
        n_top[j], n_bottom[j] = T, B
        mid = order[T:m - B]
        u = mid.size
        if u == 0:
            continue
        vals = M[mid, j]
        if p is not None:
            P = p / 100.0
        else:
            t_value = v[T - 1] if T else v[0]
            b_value = v[m - B] if B else v[m - 1]
            delta = abs(b_value - t_value)
            if r0 is not None:
                P = np.sqrt(2.0 * vals.var() * (1.0 - r0)) / delta if delta else 0.0
            else:
                P = np.sqrt(8.0 / 3.0) * k0 * abs(vals.mean()) / delta if delta else 0.0
        L = int(np.floor(u * P))
        partner = _pair_ranks(u, L, rng.random(u))
        out[mid, j] = vals[partner]
        source[mid, j] = mid[partner]
        window[j], fraction[j], swapped[j] = L, P, int((partner != np.arange(u)).sum())
    released = pd.DataFrame(out, columns=frame.columns, index=frame.index)
    return RankSwapResult(released, [str(c) for c in frame.columns], source, coded, window, fraction, swapped,
                          top_mean, bottom_mean, n_top, n_bottom)


def rank_intervals(values: np.ndarray, ascending: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``values``, the first and last 0-based rank it can hold among the values
    ``ascending`` (sorted) ranked from the highest (ties share a range of ranks)."""
    u = ascending.size
    order = np.argsort(values)  # sorted needles: searchsorted stays in cache
    first, last = np.empty(values.size, np.int64), np.empty(values.size, np.int64)
    first[order] = u - np.searchsorted(ascending, values[order], side="right")
    last[order] = u - 1 - np.searchsorted(ascending, values[order], side="left")
    return first, last


@dataclass
class RankSwapPromise:
    """What a rank swap promises (checked on the released records before anything is written),
    column by column: missing values where the original has them; the top- and bottom-coded
    records (``coded``, released order, 1 top, 2 bottom) hold their tail's mean and were the tail's highest or
    lowest originals; the other records hold exactly the multiset of their original values, and
    each released value's rank lies within ``window`` ranks of the record's original rank (ranks
    among the uncoded originals from the highest, ties taking any rank of their range).
    ``original``: the original columns in released order."""

    original: pd.DataFrame
    result: RankSwapResult
    coded: np.ndarray  # released order
    columns: tuple = ()
    mechanism: str = "rank swapping"

    def check(self, data: pd.DataFrame) -> None:
        r = self.result
        for j, c in enumerate(r.columns):
            x = self.original[c].to_numpy(np.float64)
            y = pd.to_numeric(data[c], errors="coerce").to_numpy(np.float64)
            if not np.array_equal(np.isnan(x), np.isnan(y)):
                raise GuaranteeError(f"{c}: the release's missing values are not the original's; nothing written")
            present, coded = ~np.isnan(x), self.coded[:, j]
            mid = present & (coded == 0)
            for code, mean, count in ((1, r.top_mean[j], r.n_top[j]), (2, r.bottom_mean[j], r.n_bottom[j])):
                rows = coded == code
                if rows.sum() != count or (count and not np.allclose(y[rows], x[rows].mean(), rtol=1e-12, atol=0)):
                    raise GuaranteeError(f"{c}: a coded tail does not hold its mean; nothing written")
            top_rows, bottom_rows = coded == 1, coded == 2
            if mid.any() and ((top_rows.any() and x[top_rows].min() < x[mid].max())
                              or (bottom_rows.any() and x[bottom_rows].max() > x[mid].min())):
                raise GuaranteeError(f"{c}: a coded value is not in its tail; nothing written")
            xs, ys = x[mid], y[mid]
            ascending = np.sort(xs)
            if not np.array_equal(ascending, np.sort(ys)):
                raise GuaranteeError(f"{c}: the swapped values are not a permutation of the originals; nothing written")
            f, last = rank_intervals(xs, ascending)
            fy, ly = rank_intervals(ys, ascending)
            gap = np.maximum(0, np.maximum(fy - last, f - ly))
            if gap.size and gap.max() > r.window[j]:
                raise GuaranteeError(f"{c}: a value moved {int(gap.max())} ranks, more than the window of "
                                     f"{int(r.window[j])}; nothing written")

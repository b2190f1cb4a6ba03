"""Support of (generalized) itemsets: the hot path of paper 5 (Section IV-B, Algorithm 2).

A partition of the items maps item i to part ``partition[i]``. A generalized itemset
is a set of parts {P_1, ..., P_l}; record u supports it when D_u meets every part:

    supp({P_1..P_l}, D) = | R(P_1) ∩ ... ∩ R(P_l) |,   R(P) = ∪_{i ∈ P} T[i],

with T[i] the sorted list of records containing item i (the table T of Section IV-B).
The intersection walks the shortest list and looks every candidate up in the other
lists by galloping (exponential) search from a cursor that only moves forward, and
stops as soon as k records are found when only "support >= k" matters.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from .._validation import check_k
from ..errors import InputError
from .data import SetData


@dataclass(frozen=True)
class PartIndex:
    """Records per part of a partition: R(P) = ``records[indptr[P]:indptr[P+1]]`` (sorted, int32)."""

    partition: np.ndarray
    indptr: np.ndarray
    records: np.ndarray

    @property
    def n_parts(self) -> int:
        return len(self.indptr) - 1


def check_partition(partition, n_items: int) -> np.ndarray:
    """Return ``partition`` as int32 part ids 0..p-1, one per item, or raise :class:`InputError`."""
    part = np.asarray(partition)
    if part.ndim != 1 or len(part) != n_items:
        raise InputError(f"partition must give one part id per item ({n_items}), got shape {part.shape}")
    if not np.issubdtype(part.dtype, np.integer):
        raise InputError("partition must contain integer part ids")
    if n_items and (part.min() < 0):
        raise InputError("partition has a negative part id")
    return part.astype(np.int32)


def part_index(data: SetData, partition) -> PartIndex:
    """Precompute R(P) = ∪_{i ∈ P} T[i] for every part P (sorted, deduplicated CSR).

    Part ids need not be contiguous; parts without items get an empty list.
    """
    part = check_partition(partition, data.n_items)
    n_parts = int(part.max()) + 1 if len(part) else 0
    key = np.repeat(part.astype(np.int64), data.item_counts) * data.n_records + data.item_records
    key.sort()
    key = key[np.concatenate(([True], key[1:] != key[:-1]))] if len(key) else key
    records = (key % data.n_records).astype(np.int32)
    indptr = np.zeros(n_parts + 1, dtype=np.int64)
    np.cumsum(np.bincount(key // data.n_records, minlength=n_parts), out=indptr[1:])
    return PartIndex(part, indptr, records)


def identity_index(data: SetData) -> PartIndex:
    """The trivial partition (every item its own part), sharing the item -> records table."""
    return PartIndex(np.arange(data.n_items, dtype=np.int32), data.item_indptr, data.item_records)


@numba.njit(cache=True, nogil=True)
def _gallop(values, lo, hi, x):
    """Smallest index j in [lo, hi) with values[j] >= x (hi if none), by exponential then binary search."""
    if lo >= hi or values[lo] >= x:
        return lo
    bound = 1
    while lo + bound < hi and values[lo + bound] < x:
        bound *= 2
    prev = lo + bound // 2 + 1
    j = lo + bound
    j = min(j, hi)
    a = prev
    b = j
    while a < b:
        mid = (a + b) >> 1
        if values[mid] < x:
            a = mid + 1
        else:
            b = mid
    return a


@numba.njit(cache=True, nogil=True)
def intersection_count(indptr, values, rows, k):
    """|∩_{r in rows} values[indptr[r]:indptr[r+1]]|, or min(that, k) when k > 0 (early exit).

    ``rows`` must be distinct. Shortest list first; each candidate is galloped for in
    the other lists from forward-only cursors.
    """
    return span_intersection_count(indptr[:-1], indptr[1:], values, rows, k)


@numba.njit(cache=True, nogil=True)
def span_intersection_count(first, last, values, rows, k):
    """:func:`intersection_count` with list r stored at ``values[first[r]:last[r]]`` (lists need
    not be contiguous nor in order: an arena, as the incremental index of Algorithm 2 keeps)."""
    return span_count_unless_below(first, last, values, rows, -1, k, NO_LIMIT)


NO_LIMIT = np.iinfo(np.int32).max


@numba.njit(cache=True, inline="always")
def _tally(record, u, count):
    """One more common record: -1 if it lies below ``u`` (an earlier supporter), else count + 1.
    The caller stops at -1 or when the count reaches its cap."""
    return -1 if record < u else count + 1


@numba.njit(cache=True, nogil=True)
def span_count_unless_below(first, last, values, rows, u, k, limit):
    """-1 if the intersection of the lists holds a value < ``u``; otherwise its size, or
    min(size, k) when k > 0 (u = -1: a plain count), counting only values < ``limit`` (records
    sorted by decreasing size: those past the last record with enough items cannot match).
    Candidates are visited in increasing order, so the test stops at the first common value."""
    l = len(rows)
    if l == 0:
        return 0
    lens = np.empty(l, dtype=np.int64)
    for j in range(l):
        lens[j] = last[rows[j]] - first[rows[j]]
    order = np.argsort(lens)
    starts = np.empty(l, dtype=np.int64)
    ends = np.empty(l, dtype=np.int64)
    for j in range(l):
        r = rows[order[j]]
        starts[j] = first[r]
        ends[j] = last[r]
    count = 0
    n0 = ends[0] - starts[0]
    for c in range(n0):
        x = values[starts[0] + c]
        if x >= limit:
            return count
        ok = True
        for j in range(1, l):
            p = _gallop(values, starts[j], ends[j], x)
            starts[j] = p
            if p == ends[j]:
                return count  # a list is exhausted: no further candidate can match
            if values[p] != x:
                ok = False
                break
        if ok:
            count = _tally(x, u, count)
            if count < 0 or (k > 0 and count >= k):
                return count
    return count


@numba.njit(cache=True, nogil=True)
def _batch_counts(indptr, values, itemsets, k):
    out = np.empty(itemsets.shape[0], dtype=np.int64)
    for s in range(itemsets.shape[0]):
        out[s] = intersection_count(indptr, values, itemsets[s], k)
    return out


def _check_rows(rows, n_rows: int, what: str) -> np.ndarray:
    arr = np.asarray(rows)
    if arr.ndim not in (1, 2) or arr.shape[-1] == 0:
        raise InputError(f"an itemset needs at least one {what}")
    if not np.issubdtype(arr.dtype, np.integer):
        raise InputError(f"{what} ids must be integers")
    if arr.min() < 0 or arr.max() >= n_rows:
        raise InputError(f"{what} id out of range 0..{n_rows - 1}")
    srt = np.sort(arr, axis=-1)
    if (np.diff(srt, axis=-1) == 0).any():
        raise InputError(f"an itemset repeats a {what}")
    return np.ascontiguousarray(arr, dtype=np.int32)


def _k_arg(k) -> int:
    return 0 if k is None else check_k(k)


def generalized_support(index: PartIndex, parts, k=None):
    """Support of the generalized itemset ``parts`` (distinct part ids) under ``index``.

    supp = |∩_{P in parts} R(P)|; with ``k`` given, returns min(supp, k) and stops
    early (enough to decide supp >= k, Definition 1). ``parts`` may be a 2-D array
    (one itemset per row): an int64 array of supports is returned.
    """
    rows = _check_rows(parts, index.n_parts, "part")
    kk = _k_arg(k)
    if rows.ndim == 2:
        return _batch_counts(index.indptr, index.records, rows, kk)
    return int(intersection_count(index.indptr, index.records, rows, kk))


def itemset_support(data: SetData, items, k=None):
    """Support of the plain itemset ``items`` (item codes): records containing all of them.

    Same contract as :func:`generalized_support` with every item its own part.
    """
    rows = _check_rows(items, data.n_items, "item")
    kk = _k_arg(k)
    if rows.ndim == 2:
        return _batch_counts(data.item_indptr, data.item_records, rows, kk)
    return int(intersection_count(data.item_indptr, data.item_records, rows, kk))


def generalize_itemset(partition, items) -> np.ndarray:
    """Parts met by the items: R(x) = {partition[i] : i in x}, sorted and distinct."""
    part = np.asarray(partition)
    return np.unique(part[np.asarray(items, dtype=np.int64)]).astype(np.int32)


"""Is a sampled itemset k-anonymous under the current partition? (Definition 1; the check of
Algorithm 2, line 10, run on every draw.)

For an itemset s and partition R, supp({R(i) : i in s}, <R, D>) = |∩_{P} R(P)| over the
distinct parts P met by s. Three ways to decide "supp >= k", cheapest first:

1. every item of s is alone in its part (a part holding one item of the data): the
   generalized itemset is s itself and its support is already known from the sampler;
2. at least two items are alone in their parts: every supporter contains both, so the records
   of their pair (a list of the pair index, hundreds of records) are the candidates; each is
   tested for the other lone items (galloping in D_v) and for meeting every larger part
   (one pass over D_v with part stamps);
3. otherwise the galloping intersection of the parts' record lists R(P), with an early exit
   at k (:func:`.support.span_intersection_count`).

``ctx`` bundles the arrays: (first, last, records, part_of_item) of the incremental part
index, ``n_data`` (items of the data per part), (record_indptr, record_items) of the data,
the pair index arrays, the scratch arrays ``mark``/``seen`` (one per part) with the
counters ``tick``, and the record limits of :func:`.data.size_limits` (a record meeting n
parts has at least n items; with the records sorted by decreasing size the walks stop early).
"""

from __future__ import annotations

import numba
import numpy as np

from .pairs import _contains
from .passcache import contains as cache_contains
from .passcache import insert as cache_insert
from .support import span_count_unless_below


@numba.njit(cache=True, nogil=True)
def parts_of(part_of_item, items, buf):
    """{R(i) : i in items} into buf[:n], sorted and distinct; returns n."""
    n = 0
    for j in range(items.shape[0]):
        p = part_of_item[items[j]]
        t = n
        while t > 0 and buf[t - 1] > p:
            t -= 1
        if t > 0 and buf[t - 1] == p:
            continue
        for q in range(n, t, -1):
            buf[q] = buf[q - 1]
        buf[t] = p
        n += 1
    return n


@numba.njit(cache=True, nogil=True)
def _candidates_pass(ctx, n, buf, singles, ns, s, k):
    """Way 2: count supporters among the records of pair list ``s`` (early exit at k)."""
    _, _, _, part_of_item, n_data, rec_indptr, rec_items, pairs, mark, seen, tick, limits = ctx
    limit = limits[min(n, len(limits) - 1)]
    list_indptr, plist = pairs[2], pairs[3]
    tick[0] += 1
    q = tick[0]
    multi = 0
    for j in range(n):
        if n_data[buf[j]] > 1:
            mark[buf[j]] = q
            multi += 1
    count = 0
    for t in range(list_indptr[s], list_indptr[s + 1]):
        v = plist[t]
        if v >= limit:
            return False
        lo, hi = rec_indptr[v], rec_indptr[v + 1]
        if not _contains(rec_items, lo, hi, singles[:ns]):
            continue
        if multi > 0:
            tick[1] += 1
            token = tick[1]
            met = 0
            for p in range(lo, hi):
                g = part_of_item[rec_items[p]]
                if mark[g] == q and seen[g] != token:
                    seen[g] = token
                    met += 1
                    if met == multi:
                        break
            if met < multi:
                continue
        count += 1
        if count >= k:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def passes(ctx, items, supp, k, buf, singles):
    """supp({R(i) : i in items}) >= k; ``supp`` = supp(items) in the data, or -1 if unknown."""
    return _passes(ctx, items, parts_of(ctx[3], items, buf), supp, k, buf, singles)


@numba.njit(cache=True, nogil=True)
def _passes(ctx, items, n, supp, k, buf, singles):
    """:func:`passes` with the n parts of the items already in buf[:n]."""
    first, last, records, part_of_item, n_data, _, _, pairs, _, _, _, limits = ctx
    ns = 0
    for j in range(items.shape[0]):  # items are sorted, so are the singles
        if n_data[part_of_item[items[j]]] == 1:
            singles[ns] = items[j]
            ns += 1
    if ns == items.shape[0] and supp >= 0:
        return supp >= k
    counts, slot = pairs[0], pairs[1]
    if ns >= 2 and counts.shape[0] > 0:
        best = np.int64(1) << 62
        s = -1
        for i in range(ns):
            for j in range(i + 1, ns):
                c = np.int64(counts[singles[i], singles[j]])
                if c < best:
                    best, s = c, slot[singles[i], singles[j]]
        if best < k:
            return False
        if s >= 0:
            return _candidates_pass(ctx, n, buf, singles, ns, s, k)
    limit = limits[min(n, len(limits) - 1)]  # a supporter has at least n items
    return span_count_unless_below(first, last, records, buf[:n], -1, k, limit) >= k


@numba.njit(cache=True, nogil=True)
def first_failure(ctx, itemsets, supports, k, start, keys, lens):
    """(index of the first itemset from ``start`` that is not k-anonymous, or len(itemsets);
    number of generalized itemsets added to the pass cache ``keys``/``lens``). An itemset whose
    own support is >= k passes unchecked (merges never lower it)."""
    buf = np.empty(itemsets.shape[1], dtype=np.int32)
    singles = np.empty(itemsets.shape[1], dtype=np.int32)
    added = 0
    for s in range(start, itemsets.shape[0]):
        if supports[s] >= k:
            continue
        n = parts_of(ctx[3], itemsets[s], buf)
        if cache_contains(keys, lens, buf, n):
            continue
        if not _passes(ctx, itemsets[s], n, supports[s], k, buf, singles):
            return s, added
        added += cache_insert(keys, lens, buf, n)
    return itemsets.shape[0], added


@numba.njit(cache=True, nogil=True)
def count_passing(ctx, itemsets, supports, k):
    buf = np.empty(itemsets.shape[1], dtype=np.int32)
    singles = np.empty(itemsets.shape[1], dtype=np.int32)
    count = 0
    for s in range(itemsets.shape[0]):
        if supports[s] >= k or passes(ctx, itemsets[s], supports[s], k, buf, singles):
            count += 1
    return count

"""Exact enumeration of the distinct l-itemsets and their supports (deterministic phase of
paper 5, Section V-C; sigma = 1).

Depth-first over prefixes in item order, with the records of each prefix (its "tid list",
as in Eclat): the records of prefix P + c are those of P that contain c, bucketed in one
pass over the records of P; at the last level only the counts are needed,

    supp(P + c) = |{v in T(P) : c in D_v}|,   c > max(P).

The work is sum_u C(|D_u|, l - 1) (|D_u| - l + 1) at most, the memory one tid list per
depth; no itemset is ever hashed. Itemsets come out in lexicographic order; with
``max_support`` only those with support <= it are returned (the rest are counted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba.typed import List

from .data import SetData
from .sampling import check_level
from .support import _gallop


@dataclass(frozen=True)
class Enumeration:
    """Distinct l-itemsets (rows of sorted item codes, lexicographic) with their supports;
    ``n_distinct`` counts all of them, also those left out by ``max_support``."""

    itemsets: np.ndarray
    supports: np.ndarray
    n_distinct: int


@numba.njit(cache=True, nogil=True)
def _children(rec_indptr, rec_items, tids, last, counter, touched, lists):
    """Items c > last met by the records ``tids`` and, per c, its records (sorted): (cs, ptr, buf);
    without ``lists`` only the counts ptr[j + 1] - ptr[j] (buf empty)."""
    nt = 0
    for v in tids:
        for p in range(_gallop(rec_items, rec_indptr[v], rec_indptr[v + 1], last + 1), rec_indptr[v + 1]):
            c = rec_items[p]
            if counter[c] == 0:
                touched[nt] = c
                nt += 1
            counter[c] += 1
    cs = np.sort(touched[:nt])
    ptr = np.zeros(nt + 1, dtype=np.int64)
    for j in range(nt):
        ptr[j + 1] = ptr[j] + counter[cs[j]]
        counter[cs[j]] = ptr[j]  # reused as the fill cursor of c
    buf = np.empty(ptr[nt] if lists else 0, dtype=np.int32)
    for v in tids:
        if not lists:
            break
        for p in range(_gallop(rec_items, rec_indptr[v], rec_indptr[v + 1], last + 1), rec_indptr[v + 1]):
            c = rec_items[p]
            buf[counter[c]] = v
            counter[c] += 1
    for j in range(nt):
        counter[cs[j]] = 0
    return cs, ptr, buf


@numba.njit(cache=True, nogil=True)
def _enumerate(rec_indptr, rec_items, item_indptr, item_records, l, max_support, roots):
    """The l-itemsets whose first (smallest) item is one of ``roots`` (sorted)."""
    m = len(item_indptr) - 1
    counter = np.zeros(m, dtype=np.int64)
    touched = np.empty(m, dtype=np.int32)
    out = np.empty((1024, l), dtype=np.int32)
    out_s = np.empty(1024, dtype=np.int64)
    n = 0
    total = 0
    prefix = np.empty(l, dtype=np.int32)
    cs_stack = List()
    ptr_stack = List()
    buf_stack = List()
    cs_stack.append(roots)
    ptr_stack.append(item_indptr)  # unused at the root: its lists are the item lists
    buf_stack.append(item_records)
    pos = np.zeros(l, dtype=np.int64)
    while len(cs_stack) > 0:
        d = len(cs_stack) - 1
        cs, ptr, buf = cs_stack[d], ptr_stack[d], buf_stack[d]
        if pos[d] == len(cs):
            cs_stack.pop()
            ptr_stack.pop()
            buf_stack.pop()
            continue
        i = pos[d]
        pos[d] += 1
        lo, hi = (item_indptr[cs[i]], item_indptr[cs[i] + 1]) if d == 0 else (ptr[i], ptr[i + 1])
        if hi == lo:
            continue
        prefix[d] = cs[i]
        tids = buf[lo:hi]
        if d + 1 < l:
            ccs, cptr, cbuf = _children(rec_indptr, rec_items, tids, cs[i], counter, touched, d + 2 < l)
            if d + 2 < l:
                cs_stack.append(ccs)
                ptr_stack.append(cptr)
                buf_stack.append(cbuf)
                pos[d + 1] = 0
                continue
            emit = ccs
            supp = cptr[1:] - cptr[:-1]
        else:  # l == 1
            emit = cs[i:i + 1]
            supp = np.full(1, hi - lo, dtype=np.int64)
        for j in range(len(emit)):
            total += 1
            if max_support >= 0 and supp[j] > max_support:
                continue
            if n == out.shape[0]:
                bigger = np.empty((2 * n, l), dtype=np.int32)
                bigger[:n] = out
                out = bigger
                bigger_s = np.empty(2 * n, dtype=np.int64)
                bigger_s[:n] = out_s
                out_s = bigger_s
            out[n, :l - 1] = prefix[:l - 1]
            out[n, l - 1] = emit[j]
            out_s[n] = supp[j]
            n += 1
    return out[:n].copy(), out_s[:n].copy(), total


def enumerate_distinct(data: SetData, l: int, max_support: int | None = None, first=None) -> Enumeration:
    """All distinct l-itemsets of ``data`` and their supports (see the module docstring);
    with ``first`` (item codes) only those whose smallest item is one of them."""
    l = check_level(l, data)
    cap = -1 if max_support is None else int(max_support)
    roots = np.arange(data.n_items, dtype=np.int32) if first is None else np.unique(np.asarray(first, dtype=np.int32))
    items, supports, total = _enumerate(data.record_indptr, data.record_items, data.item_indptr,
                                        data.item_records, l, cap, roots)
    return Enumeration(items, supports, int(total))


def enumerate_itemsets(data: SetData, l: int):
    """(itemsets, supports) of :func:`enumerate_distinct` with no support bound."""
    result = enumerate_distinct(data, l)
    return result.itemsets, result.supports

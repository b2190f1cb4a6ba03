"""Numba kernels of :mod:`probanon.metrics.suda`: group sizes of one subset of the keys, and the
minimal sample uniques found in it. Valid arrays assumed (the public function checks)."""

from __future__ import annotations

import numpy as np
from numba import njit

#: mixed-radix codes stay below this bound (then they are renumbered densely first)
_CODE_BOUND = 1 << 62
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def _hash_slots(key, table, slot, bits):
    """Open addressing (linear probing) of the int64 ``key`` of every record into ``table``
    (-1 = empty, size 2**bits): ``slot[r]`` the slot of record r's key. Returns nothing;
    ``table`` holds the distinct keys."""
    n = key.shape[0]
    mask = (1 << bits) - 1
    shift = np.uint64(64 - bits)
    for r in range(n):
        k = key[r]
        h = np.int64((np.uint64(k) * _GOLDEN) >> shift)
        while table[h] != -1 and table[h] != k:
            h = (h + 1) & mask
        table[h] = k
        slot[r] = h


@njit(cache=True)
def group_sizes(codes, radix, subset, table, slot, counts, sizes, direct_limit, bits):
    """``sizes[r]``: how many records share record r's values on the keys ``subset`` (rows of
    ``codes``, one per key; a missing value is a category of its own, code radix-1). The key of
    a record is its mixed-radix code; when that could pass 2**62 it is renumbered densely (a hash
    of the codes so far) before the next key is added. Counts by a direct array when the codes
    stay below ``direct_limit``, else through the hash ``table`` (2**bits slots)."""
    n = codes.shape[1]
    key = np.zeros(n, dtype=np.int64)
    bound = 1
    for t in range(subset.shape[0]):
        j = subset[t]
        rj = radix[j]
        if bound > _CODE_BOUND // rj:  # renumber densely before the next key
            table[:] = -1
            _hash_slots(key, table, slot, bits)
            ids = np.full(table.shape[0], -1, dtype=np.int64)
            g = 0
            for r in range(n):
                s = slot[r]
                if ids[s] < 0:
                    ids[s] = g
                    g += 1
                key[r] = ids[s]
            bound = g
        for r in range(n):
            key[r] = key[r] * rj + codes[j, r]
        bound *= rj
    if bound <= direct_limit:
        counts[:bound] = 0
        for r in range(n):
            counts[key[r]] += 1
        for r in range(n):
            sizes[r] = counts[key[r]]
        return
    table[:] = -1
    _hash_slots(key, table, slot, bits)
    counts[:] = 0
    for r in range(n):
        counts[slot[r]] += 1
    for r in range(n):
        sizes[r] = counts[slot[r]]


@njit(cache=True)
def record_msus(mask, subset, weight, sizes, cand, cand_missing, head, msu_mask, msu_next,
                msu_owner, used, n_msu, score, contrib, covered, full):
    """The candidates (records unique on all keys) for which the subset ``mask`` (its keys
    ``subset``) is a minimal sample unique: unique on it (``sizes`` 1), none of its keys missing,
    and no MSU already found for the record (all smaller: subsets come by size) inside it. Each
    new MSU is stored at position ``used`` (``msu_mask``, ``msu_owner``) and adds ``weight`` to
    the record's score and to the contribution of each of its keys. Whether an MSU lies inside
    ``mask`` is read from the record's bitset of covered subsets (``covered``, one row of
    2**M bits per candidate, the supersets of its MSUs up to ``full``) when it has columns,
    else by walking the record's list of MSUs (``head``/``msu_next``). Returns the new ``used``."""
    size = subset.shape[0]
    bits = covered.shape[1] > 0
    for c in range(cand.shape[0]):
        r = cand[c]
        if sizes[r] != 1 or (cand_missing[c] & mask) != 0:
            continue
        if bits:
            if (covered[c, mask >> 6] >> np.uint64(mask & 63)) & np.uint64(1):
                continue
            sup = mask  # mark every superset of the new MSU
            while True:
                covered[c, sup >> 6] |= np.uint64(1) << np.uint64(sup & 63)
                if sup == full:
                    break
                sup = (sup + 1) | mask
        else:
            p = head[c]
            covered_ = False
            while p >= 0:
                if (msu_mask[p] & ~mask) == 0:
                    covered_ = True
                    break
                p = msu_next[p]
            if covered_:
                continue
            msu_next[used] = head[c]
            head[c] = used
        msu_mask[used] = mask
        msu_owner[used] = c
        used += 1
        n_msu[c, size - 1] += 1
        score[c] += weight
        for t in range(size):
            contrib[c, subset[t]] += weight
    return used

"""A set of generalized itemsets already found k-anonymous, to skip repeated checks.

Algorithm 2 checks hundreds of thousands of sampled itemsets per level, and many map to the
same generalized itemset {R(i) : i in s}. Once k-anonymous, a generalized itemset stays so:
a merge only enlarges parts (monotonicity, R(P ∪ Q) ⊇ R(P)), and it keeps the id of one of
the merged parts, so a stored set of part ids either still names parts that are at least as
large, or names a part that no longer exists and is never looked up again. Entries are
never invalidated; the table is cleared when it would outgrow ``max_entries``.

Open addressing with linear probing over sorted part-id tuples (stored in full, so a hash
collision can never let an itemset pass unchecked).
"""

from __future__ import annotations

import numba
import numpy as np

_MIX = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True)
def _slot(keys, lens, parts, n):
    """Slot of the tuple parts[:n] (sorted) in the table, or of the empty slot where it belongs."""
    h = np.uint64(n)
    for j in range(n):
        h = (h ^ np.uint64(parts[j])) * _MIX
        h ^= h >> np.uint64(29)
    mask = lens.shape[0] - 1
    i = np.int64(h & np.uint64(mask))
    while True:
        if lens[i] == 0:
            return i
        if lens[i] == n:
            same = True
            for j in range(n):
                if keys[i, j] != parts[j]:
                    same = False
                    break
            if same:
                return i
        i = (i + 1) & mask


@numba.njit(cache=True, nogil=True)
def contains(keys, lens, parts, n):
    return lens[_slot(keys, lens, parts, n)] != 0


@numba.njit(cache=True, nogil=True)
def insert(keys, lens, parts, n):
    """Add parts[:n]; return 1 if it was new."""
    i = _slot(keys, lens, parts, n)
    if lens[i] != 0:
        return 0
    lens[i] = n
    keys[i, :n] = parts[:n]
    return 1


@numba.njit(cache=True, nogil=True)
def _rehash(keys, lens, new_keys, new_lens):
    for i in range(lens.shape[0]):
        if lens[i] != 0:
            insert(new_keys, new_lens, keys[i], lens[i])


class PassCache:
    """The table (``keys``, ``lens``) and its fill ``size``; :meth:`reserve` before a batch."""

    def __init__(self, width: int, capacity: int = 1 << 12, max_entries: int = 1 << 21):
        self.width, self.max_entries = int(width), int(max_entries)
        self.keys = np.zeros((capacity, self.width), dtype=np.int32)
        self.lens = np.zeros(capacity, dtype=np.int32)
        self.size = 0

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more entries at load <= 1/2 (cleared past ``max_entries``)."""
        if self.size + extra > self.max_entries:
            self.lens[:] = 0
            self.size = 0
        need = 2 * (self.size + extra)
        if need <= len(self.lens):
            return
        capacity = 1 << int(need - 1).bit_length()
        keys = np.zeros((capacity, self.width), dtype=np.int32)
        lens = np.zeros(capacity, dtype=np.int32)
        _rehash(self.keys, self.lens, keys, lens)
        self.keys, self.lens = keys, lens

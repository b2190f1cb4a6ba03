"""Plain NumPy MDAV: the readable reference the numba kernel is checked against.

It follows exactly the same rules as :func:`probanon.microagg._mdav_kernel.mdav_numba`
(see :func:`probanon.microagg.mdav.mdav_partition` for the rules), so both return the
same partition bit for bit. It is O(n^2 d) like the kernel but re-sorts candidates with
``np.lexsort``, so it is several times slower.
"""

from __future__ import annotations

import numpy as np


def _sqdist(Z: np.ndarray, point: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances, summed column by column (the kernel's order)."""
    out = np.zeros(Z.shape[0])
    for j in range(Z.shape[1]):
        t = Z[:, j] - point[j]
        out += t * t
    return out


def _nearest_group(Z: np.ndarray, dist: np.ndarray, k: int, keep_duplicates: bool) -> np.ndarray:
    """Positions of the k records of smallest key (dist, coordinates, position), plus, with
    ``keep_duplicates``, every exact duplicate of the k-th. Returned in key order."""
    kth = np.partition(dist, k - 1)[k - 1]
    cand = np.flatnonzero(dist <= kth)
    keys = [cand] + [Z[cand, j] for j in range(Z.shape[1] - 1, -1, -1)] + [dist[cand]]
    cand = cand[np.lexsort(keys)]
    chosen = list(cand[:k])
    if not keep_duplicates:
        return np.asarray(chosen, dtype=np.int64)
    b = chosen[-1]
    for i in cand[k:]:
        if dist[i] == dist[b] and np.array_equal(Z[i], Z[b]):
            chosen.append(i)
    return np.asarray(chosen, dtype=np.int64)


def mdav_numpy(Z: np.ndarray, k: int, keep_duplicates: bool = False):
    """Return (labels, ref, radius2, boundary) exactly as the numba kernel does."""
    n, d = Z.shape
    labels = np.full(n, -1, dtype=np.int64)
    refs, rad2, bnds = [], [], []
    alive = np.arange(n)
    sums = np.zeros(d)
    for i in range(n):
        sums += Z[i]

    def take(members_pos, ref, dist):
        nonlocal alive, sums
        members = alive[members_pos]
        if alive.size - members.size < k:  # would leave fewer than k: take all, last group
            labels[alive] = len(refs)
            refs.append(-1), rad2.append(np.inf), bnds.append(-1)
            alive = alive[:0]
            return False
        labels[members] = len(refs)
        refs.append(ref), rad2.append(dist[members_pos[k - 1]]), bnds.append(members[k - 1])
        for i in members:
            sums -= Z[i]
        keep = np.ones(alive.size, bool)
        keep[members_pos] = False
        alive = alive[keep]
        return True

    while alive.size >= 2 * k:
        two = alive.size >= 3 * k
        Za = Z[alive]
        r = int(np.argmax(_sqdist(Za, sums / alive.size)))
        dr = _sqdist(Za, Za[r])
        gr = _nearest_group(Za, dr, k, keep_duplicates)
        free = np.ones(alive.size, bool)
        free[gr] = False
        s_orig = alive[np.flatnonzero(free)[np.argmax(dr[free])]] if two and free.any() else -1
        if not take(gr, alive[r], dr) or not two:
            break
        # s: farthest from r outside r's group (first position on ties)
        Za = Z[alive]
        ds = _sqdist(Za, Z[s_orig])
        if not take(_nearest_group(Za, ds, k, keep_duplicates), s_orig, ds):
            break
    if alive.size:
        labels[alive] = len(refs)
        refs.append(-1), rad2.append(np.inf), bnds.append(-1)
    return labels, np.asarray(refs), np.asarray(rad2), np.asarray(bnds)

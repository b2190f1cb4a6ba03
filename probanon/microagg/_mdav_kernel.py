"""numba kernel of classical MDAV, O(n d) memory, three passes over the remaining records
per pair of groups.

Layout: the remaining records are kept compacted, in their original order, column-major
(d x m) so the distance loops vectorise over records; the centroid is a running sum. The
arithmetic (squared distances summed column by column, running sums subtracted member by
member in key order) is the same as in :mod:`._mdav_reference`, so both return the same
partition bit for bit. No fastmath: contraction into FMA would change the last bits.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

BLOCK = 256  # records per block: the block's distances stay in L1


@njit(cache=True, inline="always")
def _less(A, dist, i, j, d):
    """Key order (dist, coordinates...) of two columns of A; equal keys are not less."""
    if dist[i] != dist[j]:
        return dist[i] < dist[j]
    for c in range(d):
        if A[c, i] != A[c, j]:
            return A[c, i] < A[c, j]
    return False


@njit(cache=True, inline="always")
def _same_tuple(A, i, j, d):
    for c in range(d):
        if A[c, i] != A[c, j]:
            return False
    return True


@njit(cache=True)
def _block_sqdist(A, point, start, stop, out):
    """out[start:stop] = squared distances of A[:, start:stop] to point, column by column.
    (0-based loops over slices: a range(start, stop) loop does not vectorise.)"""
    o = out[start:stop]
    L = stop - start
    for i in range(L):
        o[i] = 0.0
    for c in range(A.shape[0]):
        p = point[c]
        row = A[c, start:stop]
        for i in range(L):
            t = row[i] - p
            o[i] += t * t


@njit(cache=True, parallel=True)
def _dist_argmax(A, point, m, dist, dead, nchunks):
    """dist[i] = ||A[:, i] - point||^2 for i < m; return the first i of largest dist among
    records not marked dead."""
    best_i = np.full(nchunks, -1, np.int64)
    best_d = np.full(nchunks, -1.0)
    per = (m + nchunks - 1) // nchunks
    for t in prange(nchunks):
        lo = t * per
        hi = min(m, lo + per)
        bd = -1.0
        bi = -1
        for b in range(lo, hi, BLOCK):
            e = min(hi, b + BLOCK)
            _block_sqdist(A, point, b, e, dist)
            db = dist[b:e]
            dd = dead[b:e]
            for i in range(e - b):
                if db[i] > bd and dd[i] == 0:
                    bd = db[i]
                    bi = b + i
        best_d[t] = bd
        best_i[t] = bi
    bi = -1
    bd = -1.0
    for t in range(nchunks):  # chunks are in order: strict > keeps the first on ties
        if best_d[t] > bd:
            bd = best_d[t]
            bi = best_i[t]
    return bi


@njit(cache=True)
def _insert(A, dist, buf, cnt, cap, i, d):
    """Insert record i into buf[:cnt], kept in key order with at most cap entries."""
    if cnt == cap:
        if not _less(A, dist, i, buf[cap - 1], d):
            return cnt
        pos = cap - 1
    else:
        pos = cnt
        cnt += 1
    while pos > 0 and _less(A, dist, i, buf[pos - 1], d):
        buf[pos] = buf[pos - 1]
        pos -= 1
    buf[pos] = i
    return cnt


@njit(cache=True, parallel=True)
def _dist_nearest(A, point, m, dist, dead, k, nchunks):
    """Distances to ``point`` and the k+1 alive records of smallest key, in key order."""
    cap = k + 1
    bufs = np.empty((nchunks, cap), np.int64)
    cnts = np.zeros(nchunks, np.int64)
    d = A.shape[0]
    per = (m + nchunks - 1) // nchunks
    for t in prange(nchunks):
        lo = t * per
        hi = min(m, lo + per)
        cnt = 0
        buf = bufs[t]
        thr = np.inf  # a record can enter only with dist <= the current (k+1)-th
        for b in range(lo, hi, BLOCK):
            e = min(hi, b + BLOCK)
            _block_sqdist(A, point, b, e, dist)
            db = dist[b:e]
            dd = dead[b:e]
            for i in range(e - b):
                if db[i] <= thr and dd[i] == 0:
                    cnt = _insert(A, dist, buf, cnt, cap, b + i, d)
                    if cnt == cap:
                        thr = dist[buf[cap - 1]]
        cnts[t] = cnt
    out = np.empty(cap, np.int64)
    cnt = 0
    for t in range(nchunks):  # merging in chunk order keeps the lower position on equal keys
        for j in range(cnts[t]):
            cnt = _insert(A, dist, out, cnt, cap, bufs[t, j], d)
    return out[:cnt]


@njit(cache=True, parallel=True)
def _compact(A, B, idx, idx2, dead, m, nchunks):
    """Copy the alive records of A[:, :m] into B in order; return the new count."""
    per = (m + nchunks - 1) // nchunks
    counts = np.zeros(nchunks + 1, np.int64)
    for t in prange(nchunks):
        lo = t * per
        hi = min(m, lo + per)
        c = 0
        for i in range(lo, hi):
            c += dead[i] == 0
        counts[t + 1] = c
    for t in range(nchunks):
        counts[t + 1] += counts[t]
    d = A.shape[0]
    for t in prange(nchunks):
        lo = t * per
        hi = min(m, lo + per)
        w = counts[t]
        for i in range(lo, hi):
            if dead[i] == 0:
                for c in range(d):
                    B[c, w] = A[c, i]
                idx2[w] = idx[i]
                w += 1
        for i in range(lo, hi):
            dead[i] = 0
    return counts[nchunks]


@njit(cache=True)
def _collect(A, dist, near, k, keep_duplicates, dead, m, members):
    """Members of the group: the k nearest, plus (keep_duplicates) every copy of the k-th
    tuple; returns their count. The records are marked dead = 2 (tentative)."""
    d = A.shape[0]
    for j in range(k):
        members[j] = near[j]
        dead[near[j]] = 2
    cnt = k
    b = near[k - 1]
    if keep_duplicates and near.size > k and not _less(A, dist, b, near[k], d):
        for i in range(m):
            if dead[i] == 0 and dist[i] == dist[b] and _same_tuple(A, i, b, d):
                members[cnt] = i
                dead[i] = 2
                cnt += 1
    return cnt


@njit(cache=True)
def mdav_numba(Z, k, keep_duplicates, nchunks):
    """Classical MDAV on the rows of Z; see :func:`probanon.microagg.mdav.mdav_partition`.

    Returns (labels, ref, radius2, boundary) with one entry per group in formation order;
    the last group has ref = boundary = -1 and radius2 = inf.
    """
    n, d = Z.shape
    A = np.empty((d, n))
    for i in range(n):
        for c in range(d):
            A[c, i] = Z[i, c]
    B = np.empty((d, n))
    idx = np.arange(n)
    idx2 = np.empty(n, np.int64)
    dead = np.zeros(n, np.uint8)
    dist = np.empty(n)
    labels = np.full(n, -1, np.int64)
    members = np.empty(n, np.int64)
    ng = n // k + 1
    refs = np.full(ng, -1, np.int64)
    rad2 = np.full(ng, np.inf)
    bnds = np.full(ng, -1, np.int64)
    sums = np.zeros(d)
    for i in range(n):
        for c in range(d):
            sums[c] += Z[i, c]
    point = np.empty(d)
    m = n
    alive = n
    g = 0
    while alive >= 2 * k:
        if 8 * (m - alive) > m:  # compact once dead records pass 1/8 of the array
            m = _compact(A, B, idx, idx2, dead, m, nchunks)
            A, B = B, A
            idx, idx2 = idx2, idx
        two = alive >= 3 * k
        for c in range(d):
            point[c] = sums[c] / alive
        ref = _dist_argmax(A, point, m, dist, dead, nchunks)
        stop = False
        for step in range(2 if two else 1):
            if step == 1:
                # s: farthest from r among the records not in r's group (first on ties);
                # dist still holds the distances to r.
                ref = -1
                best = -1.0
                for i in range(m):
                    if dead[i] == 0 and dist[i] > best:
                        best = dist[i]
                        ref = i
            for c in range(d):
                point[c] = A[c, ref]
            near = _dist_nearest(A, point, m, dist, dead, k, nchunks)
            cnt = _collect(A, dist, near, k, keep_duplicates, dead, m, members)
            if alive - cnt < k:  # it would leave fewer than k: everything left is the last group
                for j in range(cnt):
                    dead[members[j]] = 0
                stop = True
                break
            for j in range(cnt):
                i = members[j]
                dead[i] = 1
                labels[idx[i]] = g
                for c in range(d):
                    sums[c] -= A[c, i]
            b = near[k - 1]
            refs[g] = idx[ref]
            rad2[g] = dist[b]
            bnds[g] = idx[b]
            g += 1
            alive -= cnt
        if stop or not two:
            break
    for i in range(m):
        if dead[i] == 0:
            labels[idx[i]] = g
    return labels, refs[: g + 1], rad2[: g + 1], bnds[: g + 1]

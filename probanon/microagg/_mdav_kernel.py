"""numba kernel of classical MDAV: O(n d) memory, about two passes over the remaining
records per pair of groups, bit-identical to the NumPy reference :mod:`._mdav_reference`.

How it is fast and still exact
------------------------------
Each pass (distances to the centroid, to r, to s) runs over a float32, column-major,
compacted copy of the remaining records: half the bytes of float64 and contiguous per
column, so it vectorises and stays in cache. A float32 squared distance differs from the
float64 one by at most ``err`` (bound below), so the pass only *collects candidates*: the
records whose float32 distance is within ``2 err`` of the running maximum (or of the running
(k+1)-th smallest). The candidates' distances are then recomputed in float64 from the
original rows with exactly the reference's arithmetic, and the decisions (farthest record,
k nearest by key) are taken on those exact values. Proof for the nearest side: let A be the
(k+1)-th smallest float32 distance; the k+1 records achieving it have exact distance
<= A + err, so the (k+1)-th smallest exact distance D <= A + err, and any record with exact
distance <= D has float32 distance <= A + 2 err: it is a candidate. The farthest side is
symmetric.

The farthest record from the centroid rarely needs a pass: a list keeps the records whose
float32 distance to an earlier centroid c0 was near the top, and with eps = ||c - c0|| the
triangle inequality bounds every distance to the current centroid c; the list decides when
the largest lower bound beats every upper bound outside the list (see _anchor_candidates),
otherwise one pass refreshes it.

Error bound: with |x_j|, |p_j| <= M, rounding to float32 (unit u = 2^-24) perturbs each
difference by <= 4 u M, each square by <= 20 u M^2, and the d-term float32 sum adds
<= 4 d^2 u M^2, so err <= u M^2 (20 d + 4 d^2). We use twice that.

The centroid is a running sum (float64, members subtracted in key order, like the reference).
No fastmath anywhere: contraction into FMA would change the last bits of the exact path.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._threads import _clock_ns, choose, preferred, record

BLOCK = 256  # records per block of a pass
CAP = 2048  # candidate slots per chunk; on overflow a full scan of the float32 distances
LIMIT = 512  # most candidates taken from the anchor list before a full pass is cheaper
PARALLEL_MIN = 20000  # fewer remaining records: one thread (a parallel region costs more)
# at or above it, serial or parallel as the governor measures (probanon._threads)

# ---------------------------------------------------------------------------------------
# float32 passes


@njit(cache=True)
def _block_sqdist32(A, point, start, stop, out):
    """out[start:stop] = float32 squared distances of A[:, start:stop] to point; returns
    (min, max) of the block, NaN (dead records) excluded.

    Four columns per sweep so out is read and written d/4 times, not d times; 0-based loops
    over slices (a range(start, stop) loop does not vectorise). Float32 is only a filter:
    the summation order is covered by the error bound in the module docstring."""
    o = out[start:stop]
    L = stop - start
    d = A.shape[0]
    for i in range(L):
        o[i] = 0.0
    c = 0
    while c + 4 <= d:
        p0, p1, p2, p3 = point[c], point[c + 1], point[c + 2], point[c + 3]
        r0, r1, r2, r3 = A[c, start:stop], A[c + 1, start:stop], A[c + 2, start:stop], A[c + 3, start:stop]
        for i in range(L):
            t0 = r0[i] - p0
            t1 = r1[i] - p1
            t2 = r2[i] - p2
            t3 = r3[i] - p3
            o[i] += (t0 * t0 + t1 * t1) + (t2 * t2 + t3 * t3)
        c += 4
    while c < d:
        p0 = point[c]
        r0 = A[c, start:stop]
        for i in range(L):
            t0 = r0[i] - p0
            o[i] += t0 * t0
        c += 1
    lo = np.float32(np.inf)
    hi = np.float32(-np.inf)
    for i in range(L):
        v = o[i]
        lo = v if v < lo else lo
        hi = v if v > hi else hi
    return lo, hi


@njit(cache=True, inline="always")
def _collect_far(d32, b, e, best, margin, row, cnt):
    """Append to row the records of block [b, e) within margin of the running max;
    return the new (max, count). The count may pass CAP: that flags an overflow."""
    for i in range(b, e):
        v = d32[i]
        if v >= best - margin:
            if v > best:
                best = v
            if cnt < CAP:
                row[cnt] = i
            cnt += 1
    return best, cnt


@njit(cache=True)
def _far_chunk(A, point, lo, hi, d32, margin, row):
    """float32 distances to point over [lo, hi); records within margin of the running max go
    to row. Returns (max, count); dead records carry NaN and fail every comparison."""
    best = np.float32(-1.0)
    cnt = 0
    for b in range(lo, hi, BLOCK):
        e = min(hi, b + BLOCK)
        _, top = _block_sqdist32(A, point, b, e, d32)
        if top >= best - margin:
            best, cnt = _collect_far(d32, b, e, best, margin, row, cnt)
    return best, cnt


@njit(cache=True, inline="always")
def _heap_replace(heap, size, v):
    """Put v into the max-heap heap[:size] (size < capacity: grows; else replaces the root)."""
    if size < heap.size:
        j = size
        while j > 0 and heap[(j - 1) // 2] < v:
            heap[j] = heap[(j - 1) // 2]
            j = (j - 1) // 2
        heap[j] = v
        return size + 1
    j = 0
    while True:
        c = 2 * j + 1
        if c >= size:
            break
        if c + 1 < size and heap[c + 1] > heap[c]:
            c += 1
        if heap[c] <= v:
            break
        heap[j] = heap[c]
        j = c
    heap[j] = v
    return size


@njit(cache=True)
def _near_chunk(A, point, lo, hi, d32, k, margin, row, kth, far, frow):
    """float32 distances to point over [lo, hi); records within margin of the running
    (k+1)-th smallest go to row (kth receives the k+1 smallest, sorted; a max-heap keeps them,
    O(log k) per insertion) and, if ``far``, those within margin of the running max to frow.
    Returns (count, far count, max)."""
    cap = k + 1
    heap = np.empty(cap, np.float32)  # thread-local: kth rows share a cache line
    held = 0
    thr = np.float32(np.inf)
    best = np.float32(-1.0)
    cnt = 0
    fc = 0
    for b in range(lo, hi, BLOCK):
        e = min(hi, b + BLOCK)
        low, top = _block_sqdist32(A, point, b, e, d32)
        if low <= thr:
            for i in range(b, e):
                v = d32[i]
                if v <= thr:
                    if held < cap or v < heap[0]:
                        held = _heap_replace(heap, held, v)
                        if held == cap:
                            thr = heap[0] + margin
                    if cnt < CAP:
                        row[cnt] = i
                    cnt += 1
        if far and top >= best - margin:
            best, fc = _collect_far(d32, b, e, best, margin, frow, fc)
    kth[:] = np.inf
    kth[:held] = np.sort(heap[:held])
    return cnt, fc, best


@njit(cache=True, parallel=True)
def _far_parallel(A, point, m, d32, margin, nchunks, cand, ccnt, cmax):
    per = (m + nchunks - 1) // nchunks
    for t in prange(nchunks):
        cmax[t], ccnt[t] = _far_chunk(A, point, t * per, min(m, (t + 1) * per), d32, margin, cand[t])


@njit(cache=True, parallel=True)
def _near_parallel(A, point, m, d32, k, margin, nchunks, cand, ccnt, ckth, far, fcand, fcnt, fmax):
    per = (m + nchunks - 1) // nchunks
    for t in prange(nchunks):
        ccnt[t], fcnt[t], fmax[t] = _near_chunk(A, point, t * per, min(m, (t + 1) * per), d32, k, margin,
                                                cand[t], ckth[t], far, fcand[t])


@njit(cache=True)
def _pass_far(A, point, m, d32, margin, nchunks, cand, ccnt, cmax, par=None):
    """One pass for the farthest records, in parallel chunks if ``par`` (chunk 0 alone
    otherwise; the other chunks are left empty). The candidates are the same either way.
    Without ``par``: parallel when m >= PARALLEL_MIN."""
    if (m >= PARALLEL_MIN) if par is None else par:
        _far_parallel(A, point, m, d32, margin, nchunks, cand, ccnt, cmax)
        return
    ccnt[:] = 0
    cmax[:] = -1.0
    cmax[0], ccnt[0] = _far_chunk(A, point, 0, m, d32, margin, cand[0])


@njit(cache=True)
def _pass_near(A, point, m, d32, k, margin, nchunks, cand, ccnt, ckth, far, fcand, fcnt, fmax, par=None):
    """One pass for the nearest (and optionally farthest) records; see _pass_far."""
    if (m >= PARALLEL_MIN) if par is None else par:
        _near_parallel(A, point, m, d32, k, margin, nchunks, cand, ccnt, ckth, far, fcand, fcnt, fmax)
        return
    ccnt[:] = 0
    fcnt[:] = 0
    fmax[:] = -1.0
    ckth[:] = np.inf
    ccnt[0], fcnt[0], fmax[0] = _near_chunk(A, point, 0, m, d32, k, margin, cand[0], ckth[0], far, fcand[0])


@njit(cache=True)
def _gather(d32, dead, m, lo, hi, cand, ccnt, out):
    """Alive positions with lo <= d32 <= hi in increasing order, from the chunk lists or,
    if a list overflowed, from a full scan. Returns the count written to out."""
    overflow = False
    for t in range(ccnt.size):
        if ccnt[t] > CAP:
            overflow = True
    n = 0
    if overflow:
        for i in range(m):
            if dead[i] == 0 and lo <= d32[i] <= hi:
                out[n] = i
                n += 1
        return n
    for t in range(ccnt.size):
        for j in range(ccnt[t]):
            i = cand[t, j]
            if dead[i] == 0 and lo <= d32[i] <= hi:
                out[n] = i
                n += 1
    return n


# ---------------------------------------------------------------------------------------
# exact float64 decisions on candidates


@njit(cache=True, inline="always")
def _sqdist64(Z, o, point):
    """Squared distance of row o of Z to point, summed column by column (reference order)."""
    acc = 0.0
    for c in range(Z.shape[1]):
        t = Z[o, c] - point[c]
        acc += t * t
    return acc


@njit(cache=True)
def _less(Z, dist, a, b, oa, ob):
    """Key order (exact dist, coordinates) of candidates a, b (rows oa, ob of Z)."""
    if dist[a] != dist[b]:
        return dist[a] < dist[b]
    for c in range(Z.shape[1]):
        if Z[oa, c] != Z[ob, c]:
            return Z[oa, c] < Z[ob, c]
    return False


@njit(cache=True)
def _farthest(Z, ids, nids, point):
    """Id of largest exact distance to point among ids (sorted; the first one on ties)."""
    best = -1.0
    r = -1
    for j in range(nids):
        v = _sqdist64(Z, ids[j], point)
        if v > best:
            best = v
            r = ids[j]
    return r


@njit(cache=True)
def _anchor_candidates(lids, lv, head, ln, labels, err, eps, thr_out, limit, out):
    """Ids that may be the farthest record from the current centroid c, from the list of
    records whose float32 squared distance v to an earlier centroid c0 is >= thr_out (all
    the alive records when thr_out < 0), sorted by v descending from ``head`` on. With
    eps = ||c - c0|| and |v - d(x,c0)^2| <= err, d(x,c) lies in
    [sqrt(v - err) - eps, sqrt(v + err) + eps]: x is a candidate when its upper bound reaches
    the largest lower bound (that of the first alive entry), and the walk stops at the first
    entry whose upper bound does not. Returns (count, new head), ids sorted; count -1 when the
    list cannot decide (a record outside it might win, or too many candidates)."""
    while head < ln and labels[lids[head]] != -1:
        head += 1
    if head == ln:
        return -1, head
    lstar = np.sqrt(max(lv[head] - err, 0.0)) - eps
    if thr_out >= 0.0 and np.sqrt(thr_out + err) + eps >= lstar:
        return -1, head
    cnt = 0
    for j in range(head, ln):
        if np.sqrt(lv[j] + err) + eps < lstar:
            break
        if labels[lids[j]] == -1:
            if cnt == limit:
                return -1, head
            out[cnt] = lids[j]
            cnt += 1
    out[:cnt].sort()
    return cnt, head


@njit(cache=True)
def _same_tuple(Z, oa, ob):
    for c in range(Z.shape[1]):
        if Z[oa, c] != Z[ob, c]:
            return False
    return True


@njit(cache=True)
def _nearest(Z, idx, pos, npos, point, k, keep_duplicates, members, dist):
    """Fill members with the k candidates of smallest key (exact dist, coordinates,
    position), plus (keep_duplicates) every candidate that repeats the k-th tuple; return
    (count, exact squared distance of the k-th). ``pos`` is in increasing position order,
    so stable sorts keep the lower position first on equal keys. O(npos log npos): an
    insertion into a sorted buffer of k + 1 took O(npos k), 3.6 s per MDAV run at
    n = 2^16, k = 4096."""
    for j in range(npos):
        dist[j] = _sqdist64(Z, idx[pos[j]], point)
    # sorted by exact distance (stable: increasing position on ties), then runs of equal
    # distance by coordinates (stable insertion), so the order is the key order
    order = np.argsort(dist[:npos], kind="mergesort")
    cap = min(k + 1, npos)
    run = 0
    while run < cap:
        end = run + 1
        while end < npos and dist[order[end]] == dist[order[run]]:
            end += 1
        for j in range(run + 1, end):
            a = order[j]
            q = j
            while q > run and _less(Z, dist, a, order[q - 1], idx[pos[a]], idx[pos[order[q - 1]]]):
                order[q] = order[q - 1]
                q -= 1
            order[q] = a
        run = end
    buf = order
    cnt = cap
    for j in range(k):
        members[j] = pos[buf[j]]
    size = k
    b = buf[k - 1]
    ob = idx[pos[b]]
    if keep_duplicates and cnt > k and not _less(Z, dist, b, buf[k], ob, idx[pos[buf[k]]]):
        taken = np.zeros(npos, np.bool_)
        for q in range(k):
            taken[buf[q]] = True
        for j in range(npos):  # the k-th tuple has more copies: take them all
            if dist[j] == dist[b] and _same_tuple(Z, idx[pos[j]], ob):
                if not taken[j]:
                    members[size] = pos[j]
                    size += 1
    return size, dist[b]


# ---------------------------------------------------------------------------------------
# compaction and the driver


@njit(cache=True)
def _copy_alive(A, B, idx, idx2, dead, lo, hi, w):
    """Copy the alive records of A[:, lo:hi] (and their ids) to B from column w on."""
    for i in range(lo, hi):
        if dead[i] == 0:
            for c in range(A.shape[0]):
                B[c, w] = A[c, i]
            idx2[w] = idx[i]
            w += 1
        dead[i] = 0


@njit(cache=True, parallel=True)
def _compact_parallel(A, B, idx, idx2, dead, m, nchunks):
    per = (m + nchunks - 1) // nchunks
    counts = np.zeros(nchunks + 1, np.int64)
    for t in prange(nchunks):
        counts[t + 1] = np.sum(dead[t * per: min(m, (t + 1) * per)] == 0)
    for t in range(nchunks):
        counts[t + 1] += counts[t]
    for t in prange(nchunks):
        _copy_alive(A, B, idx, idx2, dead, t * per, min(m, (t + 1) * per), counts[t])
    return counts[nchunks]


@njit(cache=True)
def _compact(A, B, idx, idx2, dead, m, nchunks, par=None):
    """Copy the alive records of A[:, :m] (and their ids) into B in order; return the count
    (parallel as in _pass_far)."""
    if (m >= PARALLEL_MIN) if par is None else par:
        return _compact_parallel(A, B, idx, idx2, dead, m, nchunks)
    alive = np.sum(dead[:m] == 0)
    _copy_alive(A, B, idx, idx2, dead, 0, m, 0)
    return alive


@njit(cache=True)
def mdav_numba(Z, k, keep_duplicates, nchunks, gov):
    """Classical MDAV on the rows of Z (C-contiguous float64); see
    :func:`probanon.microagg.mdav.mdav_partition` for the rules.

    Passes over at least PARALLEL_MIN records run serial or parallel as ``gov`` (a
    :func:`probanon._threads.governor` state) chooses: the nearest-record passes, the bulk
    of the work, are timed; the others follow the cheaper mode. Same result either way.

    Returns (labels, ref, radius2, boundary) with one entry per group in formation order;
    the last group has ref = boundary = -1 and radius2 = inf.
    """
    n, d = Z.shape
    A = np.empty((d, n), np.float32)
    M = 0.0
    for i in range(n):
        for c in range(d):
            A[c, i] = Z[i, c]
            M = max(M, abs(Z[i, c]))
    M = M * (1.0 + 1e-9)
    u = 2.0**-24
    margin = np.float32(2.0 * 2.0 * u * M * M * (20.0 * d + 4.0 * d * d) + d * 1e-37)
    B = np.empty((d, n), np.float32)
    idx = np.arange(n)
    idx2 = np.empty(n, np.int64)
    dead = np.zeros(n, np.uint8)
    d32 = np.empty(n, np.float32)
    labels = np.full(n, -1, np.int64)
    ng = n // k + 1
    refs = np.full(ng, -1, np.int64)
    rad2 = np.full(ng, np.inf)
    bnds = np.full(ng, -1, np.int64)
    sums = np.zeros(d)
    for i in range(n):
        for c in range(d):
            sums[c] += Z[i, c]
    cand = np.empty((nchunks, CAP), np.int64)
    ccnt = np.zeros(nchunks, np.int64)
    fcand = np.empty((nchunks, CAP), np.int64)
    fcnt = np.zeros(nchunks, np.int64)
    fmax = np.empty(nchunks, np.float32)
    ckth = np.empty((nchunks, k + 1), np.float32)
    pos = np.empty(n, np.int64)
    members = np.empty(n, np.int64)
    cdist = np.empty(n)
    point = np.empty(d)
    p32 = np.empty(d, np.float32)
    allk = np.empty(nchunks * (k + 1), np.float32)
    # anchor list for the farthest-from-centroid search (see _anchor_candidates)
    ids = np.empty(n, np.int64)
    lids = np.empty(n, np.int64)
    lv = np.empty(n)
    ln = 0
    head = 0
    c0 = np.empty(d)
    thr_out = -1.0
    err = 0.5 * margin
    window = 16.0 * margin
    m = n
    alive = n
    g = 0
    while alive >= 2 * k:
        if 8 * (m - alive) > m:  # compact once dead records pass 1/8 of the array
            m = _compact(A, B, idx, idx2, dead, m, nchunks, m >= PARALLEL_MIN and preferred(gov))
            A, B = B, A
            idx, idx2 = idx2, idx
        two = alive >= 3 * k
        for c in range(d):
            point[c] = sums[c] / alive
            p32[c] = point[c]
        nc = -1
        if ln > 0:
            eps = 0.0
            for c in range(d):
                eps += (point[c] - c0[c]) ** 2
            eps = np.sqrt(eps) * (1.0 + 1e-9)
            nc, head = _anchor_candidates(lids, lv, head, ln, labels, err, eps, thr_out, LIMIT, ids)
        if nc < 0:  # refresh the list with a full pass to the current centroid
            _pass_far(A, p32, m, d32, window, nchunks, cand, ccnt, fmax, m >= PARALLEL_MIN and preferred(gov))
            top = fmax.max()
            ln = _gather(d32, dead, m, top - window, np.float32(np.inf), cand, ccnt, pos)
            order = np.argsort(-d32[pos[:ln]])  # farthest first: walks stop early
            for j in range(ln):
                lids[j] = idx[pos[order[j]]]
                lv[j] = d32[pos[order[j]]]
            head = 0
            thr_out = top - window if ln < alive else -1.0
            c0[:] = point
            if ln < 512 and ln < alive:
                window *= 2.0
            elif ln > 4096:
                window *= 0.5
            nc, head = _anchor_candidates(lids, lv, head, ln, labels, err, 0.0, thr_out, n, ids)
            if nc < 0:  # degenerate ties: every record within margin of the max
                nc = _gather(d32, dead, m, top - margin, np.float32(np.inf), cand, ccnt, pos)
                for j in range(nc):
                    ids[j] = idx[pos[j]]
        o = _farthest(Z, ids, nc, point)
        stop = False
        for step in range(2 if two else 1):
            if step == 1:
                # s: farthest from r outside r's group; d32 still holds distances to r.
                # The far list covers everything within margin of the overall max; if that
                # max fell into r's group, the list may miss some: scan instead.
                second = np.float32(-1.0)
                full = fcnt.max() > CAP
                if not full:
                    for t in range(nchunks):
                        for j in range(fcnt[t]):
                            if dead[fcand[t, j]] == 0:
                                second = max(second, d32[fcand[t, j]])
                    full = second < fmax.max()
                if full:
                    second = np.float32(-1.0)
                    for i in range(m):
                        if dead[i] == 0:
                            second = max(second, d32[i])
                    fcnt[0] = CAP + 1  # forces _gather to scan
                npos = _gather(d32, dead, m, second - margin, np.float32(np.inf), fcand, fcnt, pos)
                for j in range(npos):
                    ids[j] = idx[pos[j]]
                o = _farthest(Z, ids, npos, point)
            for c in range(d):
                point[c] = Z[o, c]
                p32[c] = point[c]
            timed = m >= PARALLEL_MIN
            par = timed and choose(gov)
            t0 = _clock_ns()
            _pass_near(A, p32, m, d32, k, margin, nchunks, cand, ccnt, ckth, two and step == 0,
                       fcand, fcnt, fmax, par)
            if timed:
                record(gov, par, float(_clock_ns() - t0), float(m))
            allk[:] = ckth.ravel()
            allk.sort()
            npos = _gather(d32, dead, m, np.float32(-np.inf), allk[k] + margin, cand, ccnt, pos)
            cnt, r2 = _nearest(Z, idx, pos, npos, point, k, keep_duplicates, members, cdist)
            if alive - cnt < k:  # it would leave fewer than k: everything left is the last group
                stop = True
                break
            for j in range(cnt):
                i = members[j]
                dead[i] = 1
                A[0, i] = np.nan  # every later float32 distance of i is NaN
                labels[idx[i]] = g
                for c in range(d):
                    sums[c] -= Z[idx[i], c]
            refs[g] = o
            rad2[g] = r2
            bnds[g] = idx[members[k - 1]]
            g += 1
            alive -= cnt
        if stop or not two:
            break
    for i in range(m):
        if dead[i] == 0:
            labels[idx[i]] = g
    return labels, refs[: g + 1], rad2[: g + 1], bnds[: g + 1]

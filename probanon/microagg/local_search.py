"""Exact-gain local search for clustering with cells of at least k records (moves, swaps,
dissolves, splits).

Fixed centroids + optimal assignment (the transportation step) and centroid updates stop in
local minima where moving one record changes the centroids it leaves and joins. These moves
are evaluated with their exact effect on the SSE (c_A, c_B centroids, n_A, n_B sizes):

    move x from A to B (only if n_A > k):
        dSSE = n_B/(n_B+1) ||x - c_B||^2 - n_A/(n_A-1) ||x - c_A||^2
    swap x in A with y in B (sizes unchanged), v = y - x:
        dSSE = -2 (c_A - c_B) . v - ||v||^2 (1/n_A + 1/n_B)

Free cell sizes (``free_sizes=True``): the number of cells and their sizes are part of the
optimisation (every cell >= k records, as in V-MDAV), with two more moves:

    dissolve A: its records go one by one to the neighbouring cell B of least insertion cost;
        dSSE = sum over the records, in that order, of the move formula above (the last record
        leaves a cell of one record: removal term 0);
    split A (n_A >= 2k) into A1, A2 (each >= k), cut along the direction between A's record
        farthest from c_A and the record farthest from that one, at the cut of largest
        dSSE = -n_1 n_2 / n_A ||c_1 - c_2||^2   (the between-parts term of SSE_A: a split
        never raises the SSE, and a cell of >= 2k records can always be split).

Candidates: each cell keeps a list of its ``candidates`` nearest cells (by centroid), built
once by an approximate SciPy ``cKDTree`` query and kept current by descent steps (a cell's new
list: the nearest among its list and its list's lists, current centroids) for the cells that
the last sweep of :func:`local_search` changed and, in :func:`iterated_local_search`, for the
cells a kept kick changed. A record of cell A tries the ``neighbours`` cells of A's list
nearest to it. After the first sweep, only the records whose cell, or a cell of its list,
changed in the last sweep are tried again (for the others nothing they could see changed).
No n x |Q| matrix: a sweep costs O(n (candidates d + neighbours k d)) time, memory is
O(n d + |Q| candidates). Improving moves are applied at once (first improvement), and sweeps
repeat until none improves. The SSE never increases and every cell keeps at least k records.

:func:`iterated_local_search` escapes the local minima of these moves: a kick (a few random
swaps between a random cell and its ``around`` nearest cells, or with free sizes, half of the
time, the dissolution of that cell), moves and swaps on the records of those cells until none
improves, splits of the cells that reached 2k records (free sizes) and moves and swaps again;
the kick is kept only if the SSE fell (else undone from its log). The descent tries the
records the kick moved last (:func:`_kicked_last`). From HALVES_MIN cells the kicks run on two
halves of the cells at once (two threads; the split, at the median centroid of one coordinate,
changes between PHASES phases), each half an independent search with its own seed.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import njit
from scipy.spatial import cKDTree

from .. import _threads
from ..errors import ParameterError

LOG_ROWS = 1 << 16  # undo log of one kick; a change that would overflow it is not made
#: length of each cell's candidate list. 10-D Gaussian, 20,000 records, k = 5 (PCL, seed 0):
#: IL 15.137 / 15.102 / 15.048 with lists of 16 / 24 / 32 cells, for 7% more time at 32
LIST = 32


#: The helpers that the kernels call per record or per pair of records (_relocate, the distance
#: and swap terms, insert_sorted, _candidates, _best_move, ...) are compiled without numba's
#: reference counting (``_nrt=False``: they take arrays and allocate none). With it, the calls
#: keep increfs and decrefs of their array arguments (our reading; measured here): a record's
#: candidate selection (32 cells, d = 13) took 800 ns instead of 210 (inline="always" did not
#: help), fused into the caller by hand 236 ns, a PCL fit on tarragona,
#: k = 10, 0.75 s instead of 0.41 s (census k = 3 0.63 -> 0.32 s, eia k = 5 2.03 -> 0.95 s,
#: 20,000 x 10 3.2 -> 1.9 s), with the same results bit for bit
@njit(cache=True, _nrt=False)
def _relocate(Z, i, a, b, labels, sums, counts, head, nxt, prv, cent):
    """Move record i from cell a to cell b: sums, counts, centroids, member lists."""
    if prv[i] >= 0:  # unlink from a
        nxt[prv[i]] = nxt[i]
    else:
        head[a] = nxt[i]
    if nxt[i] >= 0:
        prv[nxt[i]] = prv[i]
    prv[i] = -1  # link at the head of b
    nxt[i] = head[b]
    if head[b] >= 0:
        prv[head[b]] = i
    head[b] = i
    counts[a] -= 1
    counts[b] += 1
    labels[i] = b
    d = Z.shape[1]
    for c in range(d):
        sums[a, c] -= Z[i, c]
        sums[b, c] += Z[i, c]
        cent[b, c] = sums[b, c] / counts[b]
        if counts[a] > 0:
            cent[a, c] = sums[a, c] / counts[a]
        else:
            sums[a, c] = 0.0  # an empty cell restarts from exact zeros


@njit(cache=True, _nrt=False)
def _swap_terms(Z, i, j, g, w):
    """-2 g . (z_j - z_i) - w ||z_j - z_i||^2: the swap formula with g = c_A - c_B and
    w = 1/n_A + 1/n_B given (computed once per pair of cells)."""
    dot = 0.0
    vv = 0.0
    for c in range(Z.shape[1]):
        v = Z[j, c] - Z[i, c]
        dot += g[c] * v
        vv += v * v
    return -2.0 * dot - vv * w


@njit(cache=True, _nrt=False)
def _swap_terms4(Z, i, j0, j1, j2, j3, g, w):
    """:func:`_swap_terms` of four partners, each with the same operations in the same order
    (the same bits), interleaved: four independent chains of additions instead of one whose
    latency bounds the loop (census, k = 10: a PCL fit 1.75 -> 1.15 s, same result)."""
    t0 = t1 = t2 = t3 = 0.0
    s0 = s1 = s2 = s3 = 0.0
    for c in range(Z.shape[1]):
        x, gc = Z[i, c], g[c]
        v0, v1, v2, v3 = Z[j0, c] - x, Z[j1, c] - x, Z[j2, c] - x, Z[j3, c] - x
        t0 += gc * v0
        t1 += gc * v1
        t2 += gc * v2
        t3 += gc * v3
        s0 += v0 * v0
        s1 += v1 * v1
        s2 += v2 * v2
        s3 += v3 * v3
    return -2.0 * t0 - s0 * w, -2.0 * t1 - s1 * w, -2.0 * t2 - s2 * w, -2.0 * t3 - s3 * w


@njit(cache=True)
def _swap_delta(Z, i, j, a, b, counts, cent):
    """SSE change of swapping record i (cell a) with record j (cell b)."""
    return _swap_terms(Z, i, j, cent[a] - cent[b], 1.0 / counts[a] + 1.0 / counts[b])


@njit(cache=True, _nrt=False)
def _sqdist(Z, i, cent, q):
    """||Z[i] - cent[q]||^2 summed column by column (the published rules' order)."""
    acc = 0.0
    for c in range(Z.shape[1]):
        v = Z[i, c] - cent[q, c]
        acc += v * v
    return acc


@njit(cache=True, _nrt=False)
def _sqdist4(Z, i, cent, q0, q1, q2, q3):
    """:func:`_sqdist` to four centroids, each in the same order (the same bits), interleaved
    (10^5 x 10, k = 5: a PCL fit 29.4-30.1 -> 27.1-27.8 s, same result)."""
    s0 = s1 = s2 = s3 = 0.0
    for c in range(Z.shape[1]):
        x = Z[i, c]
        v0, v1, v2, v3 = x - cent[q0, c], x - cent[q1, c], x - cent[q2, c], x - cent[q3, c]
        s0 += v0 * v0
        s1 += v1 * v1
        s2 += v2 * v2
        s3 += v3 * v3
    return s0, s1, s2, s3


@njit(cache=True, _nrt=False)
def insert_sorted(key, out, v, q):
    """Partial selection: put (v, q) into the ascending ``key``/``out`` lists if v is below
    their last key (ties keep the earlier entry first)."""
    t = key.size - 1
    if not v < key[t]:
        return
    while t > 0 and key[t - 1] > v:
        key[t] = key[t - 1]
        out[t] = out[t - 1]
        t -= 1
    key[t] = v
    out[t] = q


@njit(cache=True, _nrt=False)
def _candidates(Z, i, a, nbr, counts, cent, dist, out):
    """The T = out.size non-empty cells of a's neighbour list nearest to record i (partial
    selection, -1 where fewer)."""
    T = out.size
    for t in range(T):
        dist[t] = np.inf
        out[t] = -1
    R = nbr.shape[1]
    r = 0
    while r + 3 < R:  # four at a time; -1 entries may stand anywhere (a split's new cell takes the last slot)
        e0, e1, e2, e3 = _sqdist4(Z, i, cent, nbr[a, r], nbr[a, r + 1], nbr[a, r + 2], nbr[a, r + 3])
        for q, e in ((nbr[a, r], e0), (nbr[a, r + 1], e1), (nbr[a, r + 2], e2), (nbr[a, r + 3], e3)):
            if q >= 0 and q != a and counts[q] > 0:
                insert_sorted(dist, out, e, q)
        r += 4
    for r in range(r, R):
        q = nbr[a, r]
        if q >= 0 and q != a and counts[q] > 0:
            insert_sorted(dist, out, _sqdist(Z, i, cent, q), q)


@njit(cache=True, _nrt=False)
def _best_move(Z, i, a, near, counts, cent, head, nxt, k, eps, g):
    """Best move or swap of record i (cell a) into one of the cells ``near``:
    (SSE change, target cell or -1, swap partner or -1). ``g``: scratch of d entries. The
    terms that do not depend on the partner are computed once per cell (same arithmetic)."""
    na = counts[a]
    d = Z.shape[1]
    best = -eps
    best_b = -1
    best_j = -1
    leave = na / (na - 1.0) * _sqdist(Z, i, cent, a) if na > k else 0.0
    for t in range(near.size):
        b = near[t]
        if b < 0:
            continue
        nb = counts[b]
        if na > k:  # move
            delta = nb / (nb + 1.0) * _sqdist(Z, i, cent, b) - leave
            if delta < best:
                best, best_b, best_j = delta, b, -1
        w = 1.0 / na + 1.0 / nb
        for c in range(d):
            g[c] = cent[a, c] - cent[b, c]
        j = head[b]
        while j >= 0:  # swaps with every member of b, four at a time where there are four
            j1 = nxt[j]
            j2 = nxt[j1] if j1 >= 0 else -1
            j3 = nxt[j2] if j2 >= 0 else -1
            if j3 < 0:
                delta = _swap_terms(Z, i, j, g, w)
                if delta < best:
                    best, best_b, best_j = delta, b, j
                j = j1
                continue
            d0, d1, d2, d3 = _swap_terms4(Z, i, j, j1, j2, j3, g, w)
            for delta, jj in ((d0, j), (d1, j1), (d2, j2), (d3, j3)):  # in list order, as one at a time
                if delta < best:
                    best, best_b, best_j = delta, b, jj
            j = nxt[j3]
    return best, best_b, best_j


@njit(cache=True, _nrt=False)
def _log(log, nlog, x, y, z):
    if nlog < log.shape[0]:
        log[nlog, 0], log[nlog, 1], log[nlog, 2] = x, y, z
    return nlog + 1


@njit(cache=True, _nrt=False)
def _unchanged(i, a, nbr, changed, seen):
    """Whether no cell record i can see (its cell a and a's candidate list) has changed since
    the record was last evaluated (``changed[q]``, ``seen[i]``: clock values)."""
    if changed[a] > seen[i]:
        return False
    for r in range(nbr.shape[1]):
        q = nbr[a, r]
        if q >= 0 and changed[q] > seen[i]:
            return False
    return True


@njit(cache=True)
def _improve(Z, records, nbr, labels, sums, counts, head, nxt, prv, cent, k, T, eps, max_sweeps, log, nlog, clock,
             changed, seen):
    """Sweeps of best moves/swaps of ``records`` into their T nearest candidate cells until none
    improves; changes are logged as (record, from, to) while ``log`` has room (none is made
    past it; an empty log means no undo). Returns (SSE decrease, log length).

    After the first sweep a record is evaluated again only if a cell it can see changed since
    its last evaluation (its best move depends on nothing else, so the result is the same as
    evaluating it): ``clock`` (one entry), ``changed`` (per cell) and ``seen`` (per record) are
    the caller's scratch, kept across calls (the clock only grows)."""
    dist = np.empty(T)
    near = np.empty(T, np.int64)
    scratch = np.empty(Z.shape[1])
    gain = 0.0
    undo = log.shape[0] > 0
    for sweep in range(max_sweeps):
        g = 0.0
        for r in range(records.size):
            if undo and nlog + 2 > log.shape[0]:
                break
            i = records[r]
            a = labels[i]
            if sweep > 0 and _unchanged(i, a, nbr, changed, seen):
                continue
            seen[i] = clock[0]
            _candidates(Z, i, a, nbr, counts, cent, dist, near)
            delta, b, j = _best_move(Z, i, a, near, counts, cent, head, nxt, k, eps, scratch)
            if b >= 0:
                clock[0] += 1
                changed[a] = clock[0]
                changed[b] = clock[0]
                g -= delta
                _relocate(Z, i, a, b, labels, sums, counts, head, nxt, prv, cent)
                if undo:
                    nlog = _log(log, nlog, i, a, b)
                if j >= 0:
                    _relocate(Z, j, b, a, labels, sums, counts, head, nxt, prv, cent)
                    if undo:
                        nlog = _log(log, nlog, j, b, a)
        gain += g
        if g <= eps:
            break
    return gain, nlog


@njit(cache=True, _nrt=False)
def _members(a, head, nxt, buf):
    """Members of cell a into buf; their number."""
    m = 0
    j = head[a]
    while j >= 0:
        buf[m] = j
        m += 1
        j = nxt[j]
    return m


@njit(cache=True)
def _split(Z, a, k, labels, sums, counts, head, nxt, prv, cent, free, top, nbr, buf, proj, eps, log, nlog):
    """Split cell a (>= 2k records) in two of >= k at the best cut along its extreme direction
    (module docstring); the second part takes a cell id from the ``free`` stack. Returns
    (SSE decrease, new cell or -1, log length). Not made when it gains nothing or the log is
    full."""
    m = _members(a, head, nxt, buf)
    undo = log.shape[0] > 0
    if m < 2 * k or top[0] == 0 or (undo and nlog + m + 1 > log.shape[0]):
        return 0.0, -1, nlog
    d = Z.shape[1]
    far, far_d = buf[0], -1.0
    for t in range(m):
        dd = _sqdist(Z, buf[t], cent, a)
        if dd > far_d:
            far, far_d = buf[t], dd
    other, other_d = far, -1.0
    for t in range(m):
        dd = 0.0
        for c in range(d):
            dd += (Z[buf[t], c] - Z[far, c]) ** 2
        if dd > other_d:
            other, other_d = buf[t], dd
    for t in range(m):
        acc = 0.0
        for c in range(d):
            acc += (Z[buf[t], c] - Z[far, c]) * (Z[other, c] - Z[far, c])
        proj[t] = acc
    order = np.argsort(proj[:m], kind="mergesort")
    total = np.zeros(d)
    for t in range(m):
        for c in range(d):
            total[c] += Z[buf[t], c]
    part = np.zeros(d)
    best, cut = eps, -1
    for t in range(m - k):
        for c in range(d):
            part[c] += Z[buf[order[t]], c]
        n1 = t + 1
        if n1 >= k:
            n2 = m - n1
            acc = 0.0
            for c in range(d):
                v = part[c] / n1 - (total[c] - part[c]) / n2
                acc += v * v
            between = n1 * n2 / m * acc
            if between > best:
                best, cut = between, n1
    if cut < 0:
        return 0.0, -1, nlog
    top[0] -= 1
    new = free[top[0]]
    if undo:
        nlog = _log(log, nlog, -2, new, 0)
    for t in range(cut, m):
        i = buf[order[t]]
        _relocate(Z, i, a, new, labels, sums, counts, head, nxt, prv, cent)
        if undo:
            nlog = _log(log, nlog, i, a, new)
    _split_lists(nbr, a, new)
    return best, new, nlog


@njit(cache=True, _nrt=False)
def _split_lists(nbr, a, new):
    """Candidate lists after cell a was split off into cell ``new``: new's list is a, then a's
    list without ``new``; a's list takes ``new`` in its last slot unless it holds it already.
    ``new`` is a freed id, which lists may still hold (a dissolved cell stays in its
    neighbours' lists): copied as it stood, a list held one cell twice, and a kick's region (a
    cell and its nearest cells, each taken once) then held some records three times and wrote
    past the end of its record buffer. Each list holds a cell once, and never its own."""
    R = nbr.shape[1]
    nbr[new, 0] = a
    w = 1
    for r in range(R):
        q = nbr[a, r]
        if w < R and q != new:
            nbr[new, w] = q
            w += 1
    for r in range(w, R):
        nbr[new, r] = -1
    for r in range(R):
        if nbr[a, r] == new:
            return
    nbr[a, R - 1] = new


@njit(cache=True)
def _split_large(Z, cells, ncells, k, labels, sums, counts, head, nxt, prv, cent, free, top, nbr, buf, proj, eps,
                 log, nlog):
    """Split the cells of ``cells[:ncells]`` (a work stack, may hold repeats) while they hold
    >= 2k records. Returns (SSE decrease, log length)."""
    gain = 0.0
    while ncells > 0:
        ncells -= 1
        a = cells[ncells]
        if counts[a] < 2 * k:
            continue
        g, new, nlog = _split(Z, a, k, labels, sums, counts, head, nxt, prv, cent, free, top, nbr, buf, proj, eps,
                              log, nlog)
        if new >= 0 and ncells + 2 <= cells.size:
            gain += g
            cells[ncells] = a
            cells[ncells + 1] = new
            ncells += 2
        elif new >= 0:
            gain += g
    return gain, nlog


@njit(cache=True)
def _dissolve(Z, a, labels, sums, counts, head, nxt, prv, cent, free, top, nbr, buf, log, nlog):
    """Dissolve cell a: each record (in member order) to the non-empty cell of a's neighbour
    list of least insertion cost; a's id goes on the ``free`` stack. Returns (SSE change, log
    length); nothing is done without a neighbour or room in the log."""
    m = _members(a, head, nxt, buf)
    usable = False
    for r in range(nbr.shape[1]):
        q = nbr[a, r]
        usable = usable or (q >= 0 and q != a and counts[q] > 0)
    if not usable or nlog + m + 1 > log.shape[0]:
        return 0.0, nlog
    change = 0.0
    for t in range(m):
        i = buf[t]
        na = counts[a]
        best, best_b = np.inf, -1
        for r in range(nbr.shape[1]):
            q = nbr[a, r]
            if q < 0 or q == a or counts[q] == 0:
                continue
            cost = counts[q] / (counts[q] + 1.0) * _sqdist(Z, i, cent, q)
            if cost < best:
                best, best_b = cost, q
        change += best - (na / (na - 1.0) * _sqdist(Z, i, cent, a) if na > 1 else 0.0)
        _relocate(Z, i, a, best_b, labels, sums, counts, head, nxt, prv, cent)
        nlog = _log(log, nlog, i, a, best_b)
    free[top[0]] = a
    top[0] += 1
    nlog = _log(log, nlog, -1, a, 0)
    return change, nlog


@njit(cache=True)
def _undo(Z, log, nlog, labels, sums, counts, head, nxt, prv, cent, free, top):
    for e in range(nlog - 1, -1, -1):
        if log[e, 0] >= 0:
            _relocate(Z, log[e, 0], log[e, 2], log[e, 1], labels, sums, counts, head, nxt, prv, cent)
        elif log[e, 0] == -1:  # a dissolved cell's id was pushed
            top[0] -= 1
        else:  # a split took this id
            free[top[0]] = log[e, 1]
            top[0] += 1


@njit(cache=True)
def _state(Z, labels, Qmax):
    """Cell sums, sizes, centroids, member lists (head per cell, next/previous per record)."""
    n, d = Z.shape
    counts = np.zeros(Qmax)
    sums = np.zeros((Qmax, d))
    head = np.full(Qmax, -1, np.int64)
    nxt = np.full(n, -1, np.int64)
    prv = np.full(n, -1, np.int64)
    for i in range(n - 1, -1, -1):  # lists in record order
        q = labels[i]
        counts[q] += 1.0
        for c in range(d):
            sums[q, c] += Z[i, c]
        if head[q] >= 0:
            prv[head[q]] = i
        nxt[i] = head[q]
        head[q] = i
    cent = np.zeros((Qmax, d))
    for q in range(Qmax):
        if counts[q] > 0:
            for c in range(d):
                cent[q, c] = sums[q, c] / counts[q]
    return sums, counts, head, nxt, prv, cent


@njit(cache=True)
def member_lists(labels, Q, cap):
    """Members of each cell (rows of a (Q, cap) array), the cell sizes, and each record's
    position in its cell's row."""
    members = np.empty((Q, cap), np.int64)
    sizes = np.zeros(Q, np.int64)
    pos = np.empty(labels.size, np.int64)
    for i in range(labels.size):
        q = labels[i]
        members[q, sizes[q]] = i
        pos[i] = sizes[q]
        sizes[q] += 1
    return members, sizes, pos


def _neighbour_lists(cent, counts, R):
    """Each non-empty cell's R nearest other non-empty cells (nearest first; -1 padded), from
    an approximate k-d tree query (eps = 1: within twice the true distances; exact queries
    take seconds at 20,000 centroids in 10-D) refined by one :func:`_descend` step."""
    alive = np.flatnonzero(counts > 0)
    nbr = np.full((cent.shape[0], R), -1, np.int64)
    r = min(R, alive.size - 1)
    if r >= 1:
        _, idx = cKDTree(cent[alive]).query(cent[alive], r + 1, eps=1.0, workers=-1)
        own = idx == np.arange(alive.size)[:, None]
        own[~own.any(1), -1] = True  # coincident centroids: drop the farthest instead
        nbr[alive, :r] = alive[idx[~own].reshape(-1, r)]
        _descend(cent, counts, nbr, alive, np.zeros(cent.shape[0], np.int64), np.zeros(1, np.int64))
    return nbr


@njit(cache=True)
def _descend(cent, counts, nbr, cells, seen, stamp):
    """One neighbour-descent step: each non-empty cell of ``cells`` takes as its list the R
    nearest non-empty cells (current centroids) among its list and its list's lists."""
    R = nbr.shape[1]
    dist = np.empty(R)
    out = np.empty(R, np.int64)
    for a in cells:
        if counts[a] == 0:
            continue
        stamp[0] += 1
        seen[a] = stamp[0]
        for t in range(R):
            dist[t] = np.inf
            out[t] = -1
        for r in range(-1, R):
            p = a if r < 0 else nbr[a, r]
            if p < 0:
                continue
            for u in range(R):
                q = nbr[p, u]
                if q < 0 or seen[q] == stamp[0] or counts[q] == 0:
                    continue
                seen[q] = stamp[0]
                insert_sorted(dist, out, _sqdist(cent, q, cent, a), q)
        for t in range(R):
            nbr[a, t] = out[t]


class CellLists:
    """Candidate lists carried from one search to the next on the same cells (``nbr``: None,
    or the (cells, candidates) array the last search ended with; ``cent``: the centroids it
    ended with). A search that starts from them takes one descent step on the cells whose
    centroid has moved since, instead of building them anew (the k-d tree query cost 0.6 s a
    search at 10^5 records, 20,000 cells, 10-D; the cells moved little in between; a descent
    step on every cell 0.3-0.5 s). A search whose renumbering of the cells changes their ids
    leaves None."""

    def __init__(self):
        self.nbr = None
        self.cent = None


class _Search:
    """Labels, cell state (``_state``) with room for n // k cells, the stack of unused cell
    ids and the cells' candidate lists (``candidates`` long; from ``lists``, a
    :class:`CellLists`, when it holds lists of the right shape)."""

    def __init__(self, Z, labels, k, candidates, lists=None):
        self.Z = np.ascontiguousarray(Z, dtype=np.float64)
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.size != self.Z.shape[0] or not np.issubdtype(labels.dtype, np.integer):
            raise ParameterError(f"labels must be {self.Z.shape[0]} integers, one per record")
        if labels.min() < 0:
            raise ParameterError("labels must be >= 0")
        _, self.labels = np.unique(labels, return_inverse=True)
        self.labels = self.labels.astype(np.int64).ravel()
        sizes = np.bincount(self.labels)
        if sizes.min() < k:
            raise ParameterError(f"every cell must hold at least k = {k} records; the smallest has {sizes.min()}")
        self.k = int(k)
        Q = sizes.size
        Qmax = max(Q, self.Z.shape[0] // self.k)
        self.sums, self.counts, self.head, self.nxt, self.prv, self.cent = _state(self.Z, self.labels, Qmax)
        self.free = np.concatenate([np.arange(Qmax - 1, Q - 1, -1), np.zeros(Q)]).astype(np.int64)
        self.top = np.array([Qmax - Q], np.int64)
        self.tol = 1e-12 * float((self.Z**2).sum() + 1.0)
        self.buf = np.empty(self.Z.shape[0], np.int64)
        self.proj = np.empty(self.Z.shape[0])
        self.seen = np.zeros(Qmax, np.int64)
        self.stamp = np.zeros(1, np.int64)
        self.lists = lists
        carried = None if lists is None else lists.nbr
        if carried is not None and carried.shape == (Qmax, int(candidates)) and lists.cent is not None:
            self.nbr = carried.copy()
            # moved: not only the rounding of sums built afresh against sums kept up to date
            self.refresh(np.flatnonzero(~np.isclose(self.cent, lists.cent, rtol=1e-9, atol=1e-12).all(1)))
        else:
            self.nbr = _neighbour_lists(self.cent, self.counts, int(candidates))
        self.clock = np.zeros(1, np.int64)  # scratch of _improve: when each cell last changed, each record was seen
        self.changed = np.zeros(Qmax, np.int64)
        self.seen_at = np.zeros(self.Z.shape[0], np.int64)

    @property
    def alive(self) -> int:
        return int((self.counts > 0).sum())

    def refresh(self, cells):
        """One descent step on the candidate lists of ``cells``."""
        _descend(self.cent, self.counts, self.nbr, cells, self.seen, self.stamp)

    def touching(self, cells) -> np.ndarray:
        """The records whose cell is one of ``cells`` or has one of them in its candidate list
        (in record order)."""
        mark = np.zeros(self.counts.size + 1, bool)  # the last entry stands for the -1 pads
        mark[cells] = True
        near = mark[self.nbr].any(1) | mark[:-1]
        return np.flatnonzero(near[self.labels])

    def split_all(self):
        """Split every cell of >= 2k records (free sizes). Returns the SSE decrease."""
        cells = np.flatnonzero(self.counts >= 2 * self.k)
        if cells.size == 0:
            return 0.0
        stack = np.empty(self.counts.size, np.int64)
        stack[:cells.size] = cells[::-1]
        return _split_large(self.Z, stack, cells.size, self.k, self.labels, self.sums, self.counts, self.head,
                            self.nxt, self.prv, self.cent, self.free, self.top, self.nbr, self.buf, self.proj,
                            self.tol, np.empty((0, 3), np.int64), 0)[0]

    def result(self) -> np.ndarray:
        """Labels renumbered 0..Q'-1 in the order of the cell ids (the lists, if carried, are
        handed on when that keeps every id: the live cells are the first Q')."""
        alive = self.counts > 0
        if self.lists is not None:
            keep = alive[:int(alive.sum())].all()
            self.lists.nbr, self.lists.cent = (self.nbr, self.cent.copy()) if keep else (None, None)
        ids = np.cumsum(alive) - 1
        return ids[self.labels].astype(np.int64)


def local_search(Z, labels, k: int, neighbours: int = 6, max_sweeps: int = 100, candidates: int = LIST,
                 free_sizes: bool = False, lists: CellLists | None = None) -> np.ndarray:
    """Improve a partition with every cell >= k records by exact-gain moves and swaps of each
    record into the ``neighbours`` cells nearest to it among its cell's ``candidates`` nearest
    cells (module docstring); with ``free_sizes``, cells of >= 2k records are split in two as
    well, so the number of cells can grow. Returns new labels 0..Q'-1 (the input is not
    modified); the SSE is never higher than the input's."""
    T = max(1, int(neighbours))
    s = _Search(Z, labels, k, max(T, int(candidates)), lists)
    records = np.arange(s.Z.shape[0])
    no_log = np.empty((0, 3), np.int64)
    changed = np.empty(0, np.int64)  # cells the last sweep changed
    for sweep in range(max_sweeps):
        if s.alive < 2:
            break
        if sweep:  # only what the last sweep changed: lists of the changed cells, records that see them
            s.refresh(changed)
            records = s.touching(changed)
        before = s.cent.copy()
        gain = _improve(s.Z, records, s.nbr, s.labels, s.sums, s.counts, s.head, s.nxt, s.prv, s.cent, s.k, T, s.tol,
                        1, no_log, 0, s.clock, s.changed, s.seen_at)[0]
        if free_sizes:
            gain += s.split_all()
        if gain <= s.tol:
            break
        changed = np.flatnonzero((s.cent != before).any(1) & (s.counts > 0))
    return s.result()


@njit(cache=True)
def _kicked_last(records, m, log, nlog, mark, buf):
    """Put the records that the kick moved (those of the first ``nlog`` log rows; rows past
    the log's end are not read) after the others in ``records[:m]``, each part in its order
    (``mark``: all False on entry and exit; ``buf``: scratch of at least m entries). The
    descent then first adapts the region's other records to the kick, instead of trying the
    kicked records first, whose best move is mostly back to where they were (which undoes the
    kick). CASC files (census k = 10, tarragona k = 5,
    10; iterated local search from the same local minimum, 12 seeds): SSE per record 1.548 /
    2.655 / 3.954 with the kicked records first (the member lists' order), 1.524 / 2.651 /
    3.941 with them last."""
    rows = min(nlog, log.shape[0])
    for e in range(rows):
        if log[e, 0] >= 0:
            mark[log[e, 0]] = True
    w, nt = 0, 0
    for t in range(m):
        i = records[t]
        if mark[i]:
            buf[nt] = i
            nt += 1
        else:
            records[w] = i
            w += 1
    for t in range(nt):
        records[w + t] = buf[t]
    for e in range(rows):
        if log[e, 0] >= 0:
            mark[log[e, 0]] = False


@njit(cache=True, nogil=True)
def _kicks(Z, labels, k, T, kicks, swaps, around, dissolve, seed, tol, sums, counts, head, nxt, prv, cent, free,
           top, nbr, seen, stamp, buf, proj, clock, changed, seen_at):
    """``kicks`` kicks of the iterated local search (module docstring). Returns the SSE
    decrease."""
    np.random.seed(seed)
    Qmax = counts.size
    max_sweeps = 50
    log = np.empty((LOG_ROWS, 3), np.int64)
    records = np.empty(2 * Z.shape[0], np.int64)  # a dissolved cell's records may come twice
    cells = np.empty(around, np.int64)
    dist = np.empty(around)
    stack = np.empty(Qmax, np.int64)
    mark = np.zeros(Z.shape[0], np.bool_)  # scratch of _kicked_last (records may hold 2n entries)
    tail = np.empty(records.size, np.int64)
    total = 0.0
    for _ in range(kicks):
        a = np.random.randint(Qmax)
        while counts[a] == 0:
            a = np.random.randint(Qmax)
        _candidates(cent, a, a, nbr, counts, cent, dist, cells)  # a's nearest cells, current centroids
        m_cells = 0
        while m_cells < around and cells[m_cells] >= 0:
            m_cells += 1
        if m_cells == 0:
            continue
        change = 0.0
        nlog = 0
        if dissolve > 0.0 and np.random.random() < dissolve:
            m = _members(a, head, nxt, buf)
            for t in range(m):
                records[t] = buf[t]
            delta, nlog = _dissolve(Z, a, labels, sums, counts, head, nxt, prv, cent, free, top, nbr, buf, log, nlog)
            change += delta
        else:
            for _s in range(swaps):  # random swaps between a and its nearest cells
                b = cells[np.random.randint(m_cells)]
                i = head[a]
                for _t in range(np.random.randint(int(counts[a]))):
                    i = nxt[i]
                j = head[b]
                for _t in range(np.random.randint(int(counts[b]))):
                    j = nxt[j]
                change += _swap_delta(Z, i, j, a, b, counts, cent)
                _relocate(Z, i, a, b, labels, sums, counts, head, nxt, prv, cent)
                _relocate(Z, j, b, a, labels, sums, counts, head, nxt, prv, cent)
                nlog = _log(log, nlog, i, a, b)
                nlog = _log(log, nlog, j, b, a)
            m = _members(a, head, nxt, buf)
            for t in range(m):
                records[t] = buf[t]
        for t in range(m_cells):
            mt = _members(cells[t], head, nxt, buf)
            for u in range(mt):
                records[m + u] = buf[u]
            m += mt
        _kicked_last(records, m, log, nlog, mark, tail)
        for rnd in range(2):
            gain, nlog = _improve(Z, records[:m], nbr, labels, sums, counts, head, nxt, prv, cent, k, T, tol,
                                  max_sweeps, log, nlog, clock, changed, seen_at)
            change -= gain
            if dissolve <= 0.0:
                break
            ns = 0
            for t in range(m):  # cells of these records that reached 2k (each once)
                q = labels[records[t]]
                if counts[q] >= 2 * k and ns < stack.size and (ns == 0 or stack[ns - 1] != q):
                    stack[ns] = q
                    ns += 1
            gain, nlog = _split_large(Z, stack, ns, k, labels, sums, counts, head, nxt, prv, cent, free, top, nbr,
                                      buf, proj, tol, log, nlog)
            change -= gain
            if gain <= 0.0:
                break
        if change < -tol:
            total -= change
            ns = 0
            stack[ns] = a
            ns += 1
            for t in range(m):  # the cells of the kicked records: fresh candidate lists
                q = labels[records[t]]
                if ns < stack.size and stack[ns - 1] != q:
                    stack[ns] = q
                    ns += 1
            _descend(cent, counts, nbr, np.unique(stack[:ns]), seen, stamp)
            continue
        _undo(Z, log, nlog, labels, sums, counts, head, nxt, prv, cent, free, top)
    return total


#: from this many cells the kicks run on two halves of the cells, each half an independent
#: search with its share of the kicks and its own seed, the two at once on two threads where
#: numba has two (one after the other otherwise: the same result, as the split depends on the
#: data only). In PHASES phases, each with its share of the kicks, the cells are split at the
#: median centroid of the widest, then the second widest coordinate: kicks between the
#: halves of one phase are made in the other (10-D: 20% of the cells' 32 nearest cells lie
#: across a median split, and 51% of the cells have one of their 6 nearest across). 10^5 x 10,
#: k = 5 (19,785 cells), SSE per record at the end of PCL (seed 0): 1.1173 with 20,000 kicks a
#: round on one thread (7.5 s for both rounds); in two halves 1.1254 (one phase) and 1.1222
#: (two phases) with 20,000, 1.1124 with 40,000 in two phases (5-6 s): PCL gives each half
#: KICKS_MAX kicks (:func:`searches`)
HALVES_MIN, PHASES = 8_000, 2


def searches(cells: int) -> int:
    """How many independent searches the kicks on ``cells`` cells run in (1 or 2: HALVES_MIN)."""
    return 2 if cells >= HALVES_MIN else 1


def _run_kicks(s, kicks, seed, T, swaps, around, dissolve) -> float:
    """The kicks on the search ``s`` (its state changes in place): the SSE decrease."""
    if kicks > 0 and s.alive > 2:
        return _kicks(s.Z, s.labels, s.k, T, int(kicks), int(swaps), int(around), dissolve, int(seed), s.tol, s.sums,
                      s.counts, s.head, s.nxt, s.prv, s.cent, s.free, s.top, s.nbr, s.seen, s.stamp, s.buf, s.proj,
                      s.clock, s.changed, s.seen_at)
    return 0.0


def _run_all(work) -> list:
    """:func:`_run_kicks` on each argument tuple of ``work`` (independent searches), on two
    threads where numba has two, else one after the other (the same results)."""
    if len(work) > 1 and numba.get_num_threads() >= 2 and _threads.MODE != _threads.SERIAL:
        with ThreadPoolExecutor(2) as pool:
            return list(pool.map(lambda job: _run_kicks(*job), work))
    return [_run_kicks(*job) for job in work]


def _half_lists(lists, cells, local, Qmax):
    """The carried candidate lists of ``cells`` (global ids) in a half's ids (``local``: the
    global -> half map, -1 for the other half; rows up to Qmax), or None."""
    if lists is None or lists.nbr is None or lists.cent is None:
        return None
    half = CellLists()
    half.nbr = np.full((Qmax, lists.nbr.shape[1]), -1, np.int64)
    nbr = lists.nbr[cells]
    half.nbr[:cells.size] = np.where(nbr >= 0, local[np.maximum(nbr, 0)], -1)
    half.cent = np.zeros((Qmax, lists.cent.shape[1]))
    half.cent[:cells.size] = lists.cent[cells]
    return half


def _kicks_in_halves(s, kicks, seeds, axis, T, swaps, around, dissolve, candidates, lists):
    """``kicks`` kicks of :func:`iterated_local_search` on the two halves of the cells of the
    search ``s`` split at the median centroid of coordinate ``axis`` (HALVES_MIN), seeded by
    ``seeds``: new labels (without ``dissolve`` each cell keeps its id; else the first half's
    cells come first)."""
    Q = int(s.labels.max()) + 1
    first = np.zeros(Q, bool)
    first[np.argsort(s.cent[:Q, axis], kind="stable")[: Q // 2]] = True
    halves = []
    for h, mask in enumerate((first, ~first)):
        cells = np.flatnonzero(mask)
        rows = np.flatnonzero(mask[s.labels])
        local = np.full(Q, -1, np.int64)
        local[cells] = np.arange(cells.size)
        Qmax = max(cells.size, rows.size // s.k)
        half = _Search(s.Z[rows], local[s.labels[rows]], s.k, candidates, _half_lists(lists, cells, local, Qmax))
        halves.append((half, rows, cells, seeds[h]))
    shares = [kicks * int(first.sum()) // Q]  # the kicks in proportion to the cells
    shares.append(kicks - shares[0])
    work = [(half, n_kicks, seed, T, swaps, around, dissolve) for (half, _, _, seed), n_kicks in zip(halves, shares)]
    _run_all(work)
    labels = np.empty(s.labels.size, np.int64)
    base = 0
    for half, rows, cells, _ in halves:
        part = half.result()
        if dissolve == 0.0:  # every cell keeps its id (and the carried lists stay valid)
            labels[rows] = cells[part]
        else:  # the first half's cells, then the second's
            labels[rows] = base + part
            base += int(part.max()) + 1
    return labels


def iterated_local_search(Z, labels, k: int, kicks: int, rng, neighbours: int = 6, swaps: int = 3,
                          around: int = 3, candidates: int = LIST, free_sizes: bool = False,
                          dissolve: float = 0.5, lists: CellLists | None = None, restarts: int = 1) -> np.ndarray:
    """Iterated local search (module docstring): ``kicks`` kicks, each ``swaps`` random swaps
    between a random cell and its ``around`` nearest cells (with ``free_sizes``, a fraction
    ``dissolve`` of the kicks dissolve the cell instead, and cells reaching 2k records are
    split), then moves and swaps of the records of those cells into their ``neighbours``
    nearest cells among their cell's ``candidates`` nearest (the lists of the cells a kept
    kick changed are refreshed by a descent step). From HALVES_MIN cells, on two halves of the
    cells at once; below, ``restarts`` independent searches from the same start, each with
    ``kicks`` kicks and its own seed (two at once where numba has two threads), and the one
    that lowered the SSE most is kept (ties: the first). Seeded from the NumPy Generator
    ``rng``. Returns new labels 0..Q'-1 whose SSE is never higher than the input's; without
    ``free_sizes`` the cells and their number stay those of the input."""
    T = max(1, int(neighbours))
    R = max(T, int(candidates), int(around))
    dissolve = float(dissolve) if free_sizes else 0.0
    s = _Search(Z, labels, k, R, lists)
    if searches(s.alive) == 2 and kicks > 0:
        Q = int(s.labels.max()) + 1
        axes = np.argsort(-(s.cent[:Q].max(0) - s.cent[:Q].min(0)), kind="stable")
        for phase in range(PHASES):
            if phase:
                s = _Search(Z, labels, k, R, lists)
            if lists is not None:  # current lists (refreshed where cells moved) for the halves and after
                lists.nbr, lists.cent = s.nbr, s.cent.copy()
            labels = _kicks_in_halves(s, kicks * (phase + 1) // PHASES - kicks * phase // PHASES,
                                      rng.integers(2**31 - 1, size=2), int(axes[phase % axes.size]), T, swaps, around,
                                      dissolve, R, lists)
            if lists is not None and dissolve > 0.0:  # cells renumbered: no carried lists
                lists.nbr, lists.cent = None, None
        return labels
    if restarts <= 1:
        _run_kicks(s, kicks, rng.integers(2**31 - 1), T, swaps, around, dissolve)
        return s.result()
    runs = [s] + [_Search(Z, labels, k, R, lists) for _ in range(int(restarts) - 1)]  # each copies the lists
    gains = _run_all([(run, kicks, seed, T, swaps, around, dissolve)
                      for run, seed in zip(runs, rng.integers(2**31 - 1, size=len(runs)))])
    return runs[int(np.argmax(gains))].result()  # the first of the largest decreases

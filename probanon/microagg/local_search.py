"""Exact-gain local search for size-constrained clustering (moves and swaps).

Fixed centroids + optimal assignment (the transportation step) and centroid updates stop in
local minima where moving one record changes the centroids it leaves and joins. These moves
are evaluated with their exact effect on the SSE (c_A, c_B centroids, n_A, n_B sizes):

    move x from A to B (only if n_A > k):
        dSSE = n_B/(n_B+1) ||x - c_B||^2 - n_A/(n_A-1) ||x - c_A||^2
    swap x in A with y in B (sizes unchanged), v = y - x:
        dSSE = -2 (c_A - c_B) . v - ||v||^2 (1/n_A + 1/n_B)

Each record tries its ``neighbours`` nearest other cells; improving moves are applied at once
(first improvement), and sweeps repeat until none improves. The SSE never increases and every
cell keeps at least k records.

:func:`iterated_local_search` escapes the local minima of these moves: a kick of a few random
swaps between a random cell and its nearest cells, moves and swaps on the records of those
cells until none improves, and the kick is kept only if the SSE fell (else undone).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _nearest_of(Z, i, cent, a, cand, T, dist, out):
    """The T cells other than a whose centroids are nearest to record i (partial selection),
    among the cells ``cand`` (all cells if it is empty)."""
    d = cent.shape[1]
    for t in range(T):
        dist[t] = np.inf
        out[t] = -1
    m = cand.size if cand.size > 0 else cent.shape[0]
    for r in range(m):
        q = cand[r] if cand.size > 0 else r
        if q == a:
            continue
        acc = 0.0
        for c in range(d):
            v = Z[i, c] - cent[q, c]
            acc += v * v
        if acc < dist[T - 1]:
            t = T - 1
            while t > 0 and dist[t - 1] > acc:
                dist[t] = dist[t - 1]
                out[t] = out[t - 1]
                t -= 1
            dist[t] = acc
            out[t] = q


@njit(cache=True)
def _relocate(Z, i, a, b, labels, sums, counts, members, sizes, pos, cent):
    """Move record i from cell a to cell b, updating sums, counts, centroids, member lists."""
    p = pos[i]
    last = members[a, sizes[a] - 1]
    members[a, p] = last
    pos[last] = p
    sizes[a] -= 1
    members[b, sizes[b]] = i
    pos[i] = sizes[b]
    sizes[b] += 1
    for c in range(Z.shape[1]):
        sums[a, c] -= Z[i, c]
        sums[b, c] += Z[i, c]
    counts[a] -= 1
    counts[b] += 1
    labels[i] = b
    for c in range(Z.shape[1]):
        cent[a, c] = sums[a, c] / counts[a]
        cent[b, c] = sums[b, c] / counts[b]


@njit(cache=True)
def _swap_delta(Z, i, j, a, b, counts, cent):
    """SSE change of swapping record i (cell a) with record j (cell b)."""
    dot = 0.0
    vv = 0.0
    for c in range(Z.shape[1]):
        v = Z[j, c] - Z[i, c]
        dot += (cent[a, c] - cent[b, c]) * v
        vv += v * v
    return -2.0 * dot - vv * (1.0 / counts[a] + 1.0 / counts[b])


@njit(cache=True)
def _best_move(Z, i, a, near, counts, cent, members, sizes, k, eps):
    """Best move or swap of record i (cell a) into one of the cells ``near``:
    (SSE change, target cell or -1, swap partner or -1)."""
    d = Z.shape[1]
    na = counts[a]
    best = -eps
    best_b = -1
    best_j = -1
    for t in range(near.size):
        b = near[t]
        if b < 0:
            continue
        nb = counts[b]
        if na > k and sizes[b] < members.shape[1]:  # move
            da = 0.0
            db = 0.0
            for c in range(d):
                ta = Z[i, c] - cent[a, c]
                tb = Z[i, c] - cent[b, c]
                da += ta * ta
                db += tb * tb
            delta = nb / (nb + 1.0) * db - na / (na - 1.0) * da
            if delta < best:
                best, best_b, best_j = delta, b, -1
        for s in range(sizes[b]):  # swaps with every member of b
            j = members[b, s]
            delta = _swap_delta(Z, i, j, a, b, counts, cent)
            if delta < best:
                best, best_b, best_j = delta, b, j
    return best, best_b, best_j


@njit(cache=True)
def _apply(Z, i, a, b, j, labels, sums, counts, members, sizes, pos, cent, log, nlog):
    """Apply a move (j < 0) or swap, appending (record, from, to) to the log; new log length."""
    _relocate(Z, i, a, b, labels, sums, counts, members, sizes, pos, cent)
    if nlog < log.shape[0]:
        log[nlog, 0], log[nlog, 1], log[nlog, 2] = i, a, b
    nlog += 1
    if j >= 0:
        _relocate(Z, j, b, a, labels, sums, counts, members, sizes, pos, cent)
        if nlog < log.shape[0]:
            log[nlog, 0], log[nlog, 1], log[nlog, 2] = j, b, a
        nlog += 1
    return nlog


@njit(cache=True)
def _improve(Z, records, cand, labels, sums, counts, members, sizes, pos, cent, k, T, eps, max_sweeps, log, nlog):
    """Sweeps of best moves/swaps of ``records`` into their T nearest cells among ``cand`` (all
    if empty) until none improves. Returns (SSE decrease, log length)."""
    dist = np.empty(T)
    near = np.empty(T, np.int64)
    gain = 0.0
    for _ in range(max_sweeps):
        g = 0.0
        for r in range(records.size):
            i = records[r]
            a = labels[i]
            _nearest_of(Z, i, cent, a, cand, T, dist, near)
            delta, b, j = _best_move(Z, i, a, near, counts, cent, members, sizes, k, eps)
            if b >= 0:
                g -= delta
                nlog = _apply(Z, i, a, b, j, labels, sums, counts, members, sizes, pos, cent, log, nlog)
        gain += g
        if g <= eps:
            break
    return gain, nlog


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


@njit(cache=True)
def _state(Z, labels, Q, k):
    n, d = Z.shape
    counts = np.zeros(Q)
    sums = np.zeros((Q, d))
    for i in range(n):
        counts[labels[i]] += 1.0
        for c in range(d):
            sums[labels[i], c] += Z[i, c]
    members, sizes, pos = member_lists(labels, Q, int(counts.max()) + 2 * k + 2)
    return sums, counts, members, sizes, pos, sums / counts.reshape(-1, 1)


@njit(cache=True)
def _local_search(Z, labels, Q, k, T, max_sweeps, tol):
    sums, counts, members, sizes, pos, cent = _state(Z, labels, Q, k)
    log = np.empty((0, 3), np.int64)
    return _improve(Z, np.arange(Z.shape[0]), np.empty(0, np.int64), labels, sums, counts, members, sizes, pos, cent,
                    k, T, tol, max_sweeps, log, 0)[0]


@njit(cache=True)
def _ils(Z, labels, Q, k, T, kicks, swaps, around, region, seed, tol):
    np.random.seed(seed)
    sums, counts, members, sizes, pos, cent = _state(Z, labels, Q, k)
    max_sweeps = 50
    records = np.empty(members.shape[1] * (around + 1), np.int64)
    log = np.empty((2 * swaps + 2 * max_sweeps * records.size, 3), np.int64)  # never overflows
    R = min(Q - 1, max(around, region))  # the kick's region: a and its R nearest cells
    dist = np.empty(R)
    cells = np.empty(R + 1, np.int64)
    centre = np.empty((1, Z.shape[1]))
    every = np.empty(0, np.int64)
    total = 0.0
    for _ in range(kicks):
        a = np.random.randint(Q)
        cells[0] = a
        centre[0] = cent[a]
        _nearest_of(centre, 0, cent, a, every, R, dist, cells[1:])
        change = 0.0
        nlog = 0
        for _s in range(swaps):  # the kick: random swaps between a and its nearest cells
            b = cells[1 + np.random.randint(around)]
            i = members[a, np.random.randint(sizes[a])]
            j = members[b, np.random.randint(sizes[b])]
            change += _swap_delta(Z, i, j, a, b, counts, cent)
            nlog = _apply(Z, i, a, b, j, labels, sums, counts, members, sizes, pos, cent, log, nlog)
        m = 0
        for t in range(around + 1):
            for s in range(sizes[cells[t]]):
                records[m] = members[cells[t], s]
                m += 1
        gain, nlog = _improve(Z, records[:m], cells, labels, sums, counts, members, sizes, pos, cent, k, min(T, R),
                              tol, max_sweeps, log, nlog)
        change -= gain
        if change < -tol:
            total -= change
            continue
        for e in range(nlog - 1, -1, -1):  # undo
            _relocate(Z, log[e, 0], log[e, 2], log[e, 1], labels, sums, counts, members, sizes, pos, cent)
    return total


def local_search(Z, labels, k: int, neighbours: int = 6, max_sweeps: int = 100) -> np.ndarray:
    """Improve a partition with every cell >= k records by exact-gain moves and swaps
    (module docstring); returns new labels (the input is not modified)."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    labels = np.array(labels, dtype=np.int64)
    Q = int(labels.max()) + 1
    T = max(1, min(neighbours, Q - 1))
    if Q > 1:
        _local_search(Z, labels, Q, int(k), T, max_sweeps, 1e-12 * float((Z**2).sum() + 1.0))
    return labels


def iterated_local_search(Z, labels, k: int, kicks: int, rng, neighbours: int = 6, swaps: int = 3,
                          around: int = 3, region: int = 64) -> np.ndarray:
    """Iterated local search (module docstring): ``kicks`` kicks of ``swaps`` random swaps
    between a random cell and its ``around`` nearest cells, then moves and swaps of their
    records into their ``neighbours`` nearest cells among the ``region`` cells nearest to the
    kicked one; seeded from the NumPy Generator ``rng``. Returns new labels whose SSE is never
    higher than the input's."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    labels = np.array(labels, dtype=np.int64)
    Q = int(labels.max()) + 1
    if Q > 2 and kicks > 0:
        T = max(1, min(neighbours, Q - 1))
        _ils(Z, labels, Q, int(k), T, int(kicks), int(swaps), min(around, Q - 1), int(region), int(rng.integers(2**31 - 1)),
             1e-12 * float((Z**2).sum() + 1.0))
    return labels

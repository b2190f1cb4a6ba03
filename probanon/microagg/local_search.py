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
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _nearest_cells(Z, cent, labels, T):
    n, d = Z.shape
    Q = cent.shape[0]
    out = np.empty((n, T), np.int64)
    dist = np.empty(Q)
    for i in range(n):
        for q in range(Q):
            acc = 0.0
            for c in range(d):
                t = Z[i, c] - cent[q, c]
                acc += t * t
            dist[q] = acc
        dist[labels[i]] = np.inf
        order = np.argsort(dist)
        for t in range(T):
            out[i, t] = order[t]
    return out


@njit(cache=True)
def _relocate(Z, i, a, b, labels, sums, counts, members, sizes, pos):
    """Move record i from cell a to cell b, updating sums, counts and member lists."""
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


@njit(cache=True)
def _sweep(Z, labels, sums, counts, members, sizes, pos, near, k, eps):
    """One pass over the records; returns the total SSE decrease."""
    n, d = Z.shape
    gain = 0.0
    for i in range(n):
        a = labels[i]
        na = counts[a]
        best = -eps
        best_b = -1
        best_j = -1
        for t in range(near.shape[1]):
            b = near[i, t]
            nb = counts[b]
            # move
            if na > k and sizes[b] < members.shape[1]:
                da = 0.0
                db = 0.0
                for c in range(d):
                    ta = Z[i, c] - sums[a, c] / na
                    tb = Z[i, c] - sums[b, c] / nb
                    da += ta * ta
                    db += tb * tb
                delta = nb / (nb + 1.0) * db - na / (na - 1.0) * da
                if delta < best:
                    best = delta
                    best_b = b
                    best_j = -1
            # swaps with every member of b
            for s in range(sizes[b]):
                j = members[b, s]
                dot = 0.0
                vv = 0.0
                for c in range(d):
                    v = Z[j, c] - Z[i, c]
                    dot += (sums[a, c] / na - sums[b, c] / nb) * v
                    vv += v * v
                delta = -2.0 * dot - vv * (1.0 / na + 1.0 / nb)
                if delta < best:
                    best = delta
                    best_b = b
                    best_j = j
        if best_b < 0:
            continue
        gain -= best
        _relocate(Z, i, a, best_b, labels, sums, counts, members, sizes, pos)
        if best_j >= 0:  # a swap: j goes the other way
            _relocate(Z, best_j, best_b, a, labels, sums, counts, members, sizes, pos)
    return gain


@njit(cache=True)
def _local_search(Z, labels, Q, k, T, max_sweeps, tol):
    n, d = Z.shape
    counts = np.zeros(Q)
    sums = np.zeros((Q, d))
    for i in range(n):
        counts[labels[i]] += 1.0
        for c in range(d):
            sums[labels[i], c] += Z[i, c]
    cap = int(counts.max()) + 2 * k + 2
    members = np.empty((Q, cap), np.int64)
    sizes = np.zeros(Q, np.int64)
    pos = np.empty(n, np.int64)
    for i in range(n):
        q = labels[i]
        members[q, sizes[q]] = i
        pos[i] = sizes[q]
        sizes[q] += 1
    total = 0.0
    for _ in range(max_sweeps):
        cent = sums / counts.reshape(-1, 1)
        near = _nearest_cells(Z, cent, labels, T)
        g = _sweep(Z, labels, sums, counts, members, sizes, pos, near, k, tol)
        total += g
        if g <= tol:
            break
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

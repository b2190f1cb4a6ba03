"""Offsets that make a given assignment the power diagram's own (strict potentials).

For centres xhat_q and labels a(i), the power diagram q(x) = argmin_q ||x - xhat_q||^2 + c_q
reproduces the labels with a margin eps when, for every record i and every other cell b,

    d(i, a(i)) + c_a(i) <= d(i, b) + c_b - eps,   i.e.   c_a - c_b <= W[a, b] - eps,
    W[a, b] = min over i in a of d(i, b) - d(i, a).

These are difference constraints: c is a shortest-path potential on the graph with an edge
b -> a of weight W[a, b] - eps, found by Bellman-Ford from the transportation duals (which
satisfy them with eps = 0 up to the LP tolerance, so few rounds are needed; a negative cycle
left by that tolerance is an improving exchange and is cancelled first). A solution exists
iff the graph has no negative cycle, i.e. iff no cyclic exchange of records between cells
lowers the cost by less than eps per step: true for labels that are optimal for the centres,
except for exact ties (identical records split between cells, which no function of the
quasi-identifiers can separate; they are left out and counted by the caller).

Only each record's ``candidates`` nearest cells give edges; a final exact assignment checks
the far cells and adds any edge it finds violated.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .function import _assign_power


@njit(cache=True)
def _edges(Z, centers, labels, near, keep):
    """Edges of the constraint graph: for each kept record i (label a) and candidate cell b,
    an edge b -> a of weight d(i, b) - d(i, a), and the record i."""
    n, d = Z.shape
    T = near.shape[1]
    src = np.empty(n * T, np.int64)
    dst = np.empty(n * T, np.int64)
    rec = np.empty(n * T, np.int64)
    w = np.empty(n * T)
    m = 0
    for i in range(n):
        if not keep[i]:
            continue
        a = labels[i]
        da = 0.0
        for c in range(d):
            t = Z[i, c] - centers[a, c]
            da += t * t
        for s in range(T):
            b = near[i, s]
            if b == a:
                continue
            db = 0.0
            for c in range(d):
                t = Z[i, c] - centers[b, c]
                db += t * t
            src[m] = b  # constraint c_a <= c_b + (db - da - eps): edge b -> a
            dst[m] = a
            rec[m] = i
            w[m] = db - da
            m += 1
    return src[:m], dst[:m], w[:m], rec[:m]


@njit(cache=True)
def _bellman_ford(Q, src, dst, w, c, eps, max_rounds, pred):
    """Relax c[dst] <= c[src] + w - eps until stable (pred: last edge that lowered each node).
    Returns -1 when stable, else a node lowered in the last round (a negative cycle)."""
    last = -1
    for _ in range(max_rounds):
        last = -1
        for e in range(src.size):
            v = c[src[e]] + w[e] - eps
            if v < c[dst[e]]:
                c[dst[e]] = v
                pred[dst[e]] = e
                last = dst[e]
        if last < 0:
            return -1
    return last


def _negative_cycle(src, pred, node, Q):
    """Edges of the cycle reached by following ``pred`` back from ``node``."""
    for _ in range(Q):
        node = src[pred[node]]
    cycle, v = [], node
    while True:
        e = pred[v]
        cycle.append(e)
        v = src[e]
        if v == node:
            return cycle


def _nearest(Z, centers, offsets, T):
    from .transport import squared_distances

    D = squared_distances(Z, centers) + offsets[None, :]
    T = min(T, centers.shape[0])
    return np.argpartition(D, T - 1, axis=1)[:, :T] if T < centers.shape[0] else np.tile(np.arange(T), (Z.shape[0], 1))


def split_duplicates(Z, labels) -> np.ndarray:
    """Mask of records that have an identical record in another cell."""
    _, inverse = np.unique(Z, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    lo = np.full(inverse.max() + 1, np.iinfo(np.int64).max)
    hi = np.full(inverse.max() + 1, -1)
    np.minimum.at(lo, inverse, labels)
    np.maximum.at(hi, inverse, labels)
    return lo[inverse] != hi[inverse]


def strict_offsets(Z, centers, labels, offsets=None, candidates: int = 16, max_rounds: int = 10,
                   max_cancel: int = 10_000):
    """Labels and offsets c for which the power diagram (centers, c) assigns every record its
    label (module docstring), except records with an identical twin in another cell. Labels
    that are optimal only to a solver's tolerance are first polished: each negative exchange
    cycle found is cancelled (its records move one cell along it; sizes are unchanged and the
    cost falls). Returns (labels, c), or None when that does not converge."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    centers = np.ascontiguousarray(centers, dtype=np.float64)
    labels = np.array(labels, dtype=np.int64)
    Q = centers.shape[0]
    c0 = np.zeros(Q) if offsets is None else np.array(offsets, dtype=np.float64)
    keep = ~split_duplicates(Z, labels)
    scale = 1.0 + float(np.abs(c0).max()) + float(((Z[:, None, :] - centers[None, :1, :]) ** 2).sum(-1).max())
    near = _nearest(Z, centers, c0, candidates)
    pred = np.zeros(Q, np.int64)
    for _ in range(max_rounds):
        for _ in range(max_cancel):  # polish: cancel negative cycles
            src, dst, w, rec = _edges(Z, centers, labels, near, keep)
            last = _bellman_ford(Q, src, dst, w, c0.copy(), -1e-13 * scale, Q + 1, pred)  # beyond rounding
            if last < 0:
                break
            for e in _negative_cycle(src, pred, last, Q):
                labels[rec[e]] = src[e]
        else:
            return None
        for eps in (1e-9 * scale, 1e-11 * scale, 1e-13 * scale, 0.0, -1e-13 * scale):
            c = c0.copy()
            if _bellman_ford(Q, src, dst, w, c, eps, Q + 1, pred) < 0:
                break
        c -= c.mean()
        got = _assign_power(Z, centers, c)
        wrong = keep & (got != labels)
        if not wrong.any():
            return labels, c
        extra = np.column_stack([near[wrong], got[wrong]])  # add the violated far cells
        grown = np.full((Z.shape[0], extra.shape[1]), -1, np.int64)
        grown[:, : near.shape[1]] = near
        grown[wrong] = extra
        grown[grown < 0] = labels[np.nonzero(grown < 0)[0]]
        near = grown
    return None

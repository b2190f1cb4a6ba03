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

Only each record's ``candidates`` cells of lowest power cost give edges (:mod:`.candidates`,
O(n L) memory); a final scan over all cells with the published rule's arithmetic finds the
far cells that a record would still prefer and adds their edges.

The same graph, with one more node (the sink s) and edges s -> q (c_q <= c_s = 0) and
q -> s for cells above their minimum size (c_q >= c_s), gives the duals of the
size-constrained assignment (:mod:`.transport`): :func:`feasible_potentials`. When a
few pairs are added to an optimal assignment, :func:`cancel_cycles` goes on from its
potentials instead: a queue-based Bellman-Ford with Tarjan's subtree disassembly, which finds
each negative cycle as soon as it closes and cancels it at once.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .candidates import _pair_costs, improving_cells, nearest_cells


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
            if b == a or b < 0:
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
    """Edges of the cycle reached by following ``pred`` back from ``node`` (Q nodes)."""
    for _ in range(Q):
        node = src[pred[node]]
    cycle, v = [], node
    while True:
        e = pred[v]
        cycle.append(e)
        v = src[e]
        if v == node:
            return cycle


def _graph(Z, centers, labels, near, keep, min_sizes):
    """Edges (src, dst, w, rec) of the constraint graph; with ``min_sizes``, also the sink
    node Q and its edges (rec = -1)."""
    src, dst, w, rec = _edges(Z, centers, labels, near, keep)
    if min_sizes is None:
        return src, dst, w, rec
    Q = centers.shape[0]
    surplus = np.flatnonzero(np.bincount(labels, minlength=Q) > min_sizes)
    sink = np.full(Q, Q, np.int64)
    return (np.concatenate([src, sink, surplus]), np.concatenate([dst, np.arange(Q), np.full(surplus.size, Q)]),
            np.concatenate([w, np.zeros(Q + surplus.size)]), np.concatenate([rec, np.full(Q + surplus.size, -1)]))


def feasible_potentials(Z, centers, labels, near, c0, tol, keep=None, min_sizes=None, max_cancel: int = 10_000):
    """Labels and potentials c with d(i, a(i)) + c_a <= d(i, b) + c_b + tol for every record i
    and candidate cell b in ``near[i]`` (-1 pads), found by Bellman-Ford from ``c0`` (c only
    falls). Negative exchange cycles beyond ``tol`` are cancelled first (their records move
    one cell along the cycle: sizes kept, cost lowered). With ``min_sizes``, the sink node of
    the module docstring is added: c has Q + 1 entries, c_Q = 0 at the start, cells above
    their minimum size end at the sink's potential and the others at or below it; a cycle
    through the sink moves a record out of a cell above its minimum. ``keep``: records that
    give edges (default all). Returns (labels, c, edges) or None when cancelling does not end."""
    labels = np.array(labels, dtype=np.int64)
    keep = np.ones(labels.size, bool) if keep is None else keep
    nodes = centers.shape[0] + (min_sizes is not None)
    pred = np.zeros(nodes, np.int64)
    for _ in range(max_cancel):
        edges = _graph(Z, centers, labels, near, keep, min_sizes)
        c = np.array(c0, dtype=np.float64)
        last = _bellman_ford(nodes, *edges[:3], c, -tol, nodes + 1, pred)
        if last < 0:
            return labels, c, edges
        src, rec = edges[0], edges[3]
        for e in _negative_cycle(src, pred, last, nodes):
            if rec[e] >= 0:
                labels[rec[e]] = src[e]
    return None


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
                   max_cancel: int = 10_000, near=None, margin: float = 0.0):
    """Labels and offsets c for which the power diagram (centers, c) assigns every record its
    label (module docstring), except records with an identical twin in another cell. Labels
    that are optimal only to a solver's tolerance are first polished: each negative exchange
    cycle found is cancelled (its records move one cell along it; sizes are unchanged and the
    cost falls). Returns (labels, c), or None when that does not converge. Memory O(n (d +
    candidates)). ``near`` (n, T; -1 pads): the first candidate cells of each record, instead
    of its ``candidates`` cheapest (a scan over all cells). ``margin`` > 0 certifies that every
    pair (i, b) outside ``near`` costs more than i's own cell by more than ``margin`` at
    ``offsets`` (:class:`.transport.TransportAssignment`'s margin): when the labels need no
    polishing and the offsets moved by less than margin / 2 against each other, those pairs
    keep their order and only the candidate pairs are checked, instead of a scan over all
    cells."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    centers = np.ascontiguousarray(centers, dtype=np.float64)
    labels = np.array(labels, dtype=np.int64)
    Q = centers.shape[0]
    c0 = np.zeros(Q) if offsets is None else np.array(offsets, dtype=np.float64)
    keep = ~split_duplicates(Z, labels)
    scale = 1.0 + float(np.abs(c0).max()) + float(((Z - centers[:1]) ** 2).sum(1).max())
    near = nearest_cells(Z, centers, c0, candidates)[0] if near is None else np.asarray(near, dtype=np.int64)
    pred = np.zeros(Q, np.int64)
    given = labels.copy()
    for _ in range(max_rounds):
        polished = feasible_potentials(Z, centers, labels, near, c0, 1e-13 * scale, keep, max_cancel=max_cancel)
        if polished is None:
            return None
        labels, _, (src, dst, w, _rec) = polished
        for eps in (1e-9 * scale, 1e-11 * scale, 1e-13 * scale, 0.0, -1e-13 * scale):
            c = c0.copy()
            if _bellman_ford(Q, src, dst, w, c, eps, Q + 1, pred) < 0:
                break
        c -= c.mean()
        moved = c0 - c
        if (margin > 0.0 and eps > 0.0 and float(moved.max() - moved.min()) < margin / 2
                and np.array_equal(labels, given) and not (keep & _beaten(Z, centers, c, labels, near)).any()):
            return labels, c  # the far pairs' margin holds (docstring): no scan over all cells
        better, count = improving_cells(Z, centers, c, labels, 0.0)  # exactly the published rule's choice
        wrong = keep & (count > 0)
        if not wrong.any():
            return labels, c
        grown = np.full((Z.shape[0], near.shape[1] + better.shape[1]), -1, np.int64)  # add the violated far cells
        grown[:, : near.shape[1]] = near
        grown[wrong, near.shape[1]:] = better[wrong]
        near = grown
    return None


def _beaten(Z, centers, c, labels, near):
    """Records that a candidate cell (``near``, -1 pads) beats at offsets c by the published
    rule: a lower cost, or an equal one and a lower index (:func:`.candidates._beats`)."""
    cost = _pair_costs(Z, centers, c, near)
    own = _pair_costs(Z, centers, c, labels[:, None])
    other = (near >= 0) & (near != labels[:, None])
    return (other & ((cost < own) | ((cost == own) & (near < labels[:, None])))).any(1)


@njit(cache=True)
def _parent(pred, esrc, v, sink):
    """The node whose edge last lowered v (-1: none): a record edge's source cell, the sink
    (code -2) or the cell of a cell -> sink edge (code -3 - cell)."""
    p = pred[v]
    if p >= 0:
        return esrc[p]
    if p == -2:
        return sink
    if p <= -3:
        return -3 - p
    return -1


@njit(cache=True)
def _flat(nxt, prv, depth, intree, pred):
    """The search tree with every node a child of the root (the last index): thread in order."""
    R = nxt.size - 1
    for v in range(R):
        nxt[v], prv[v], depth[v], intree[v], pred[v] = v + 1, v - 1, 1, True, -1
    prv[0], nxt[R], prv[R], depth[R] = R, 0, R - 1, 0


@njit(cache=True)
def _graft(u, v, nxt, prv, depth, intree):
    """Tarjan's subtree disassembly: take v's subtree out of the preorder thread (its nodes
    leave the tree) and hang v under u. Returns True, leaving the thread broken, when u is in
    v's subtree (the new edge u -> v closes a negative cycle)."""
    if intree[v]:
        y = nxt[v]
        while depth[y] > depth[v]:
            if y == u:
                return True
            intree[y] = False
            y = nxt[y]
        nxt[prv[v]], prv[y] = y, prv[v]
    w = nxt[u]
    nxt[u], prv[w], nxt[v], prv[v] = v, v, w, u
    depth[v], intree[v] = depth[u] + 1, True
    return False


@njit(cache=True)
def _enqueue(queue, inq, head, size, v):
    if inq[v]:
        return size
    queue[(head + size) % queue.size] = v
    inq[v] = True
    return size + 1


@njit(cache=True)
def _cancel_cycles(near, D, labels, counts, m, c, tol, max_scans):
    """Shortest-path potentials with immediate cycle detection (SPFA with Tarjan's subtree
    disassembly) on the constraint graph of :func:`feasible_potentials`: record edges b -> a(i)
    of weight D[i, t] - d(i, a(i)) + tol for b = near[i, t], sink edges of weight tol. Each
    negative cycle found is cancelled at once (its records move one cell along it: sizes kept
    or, through the sink, a surplus cell gives a record) and the search goes on from the
    potentials reached. Modifies labels, counts and c in place. Returns the number of cycles
    cancelled, or -1 when a record's cell is not among its candidates or more than
    ``max_scans`` nodes were scanned."""
    n, T = near.shape
    Q = counts.size
    sink = Q
    start = np.zeros(Q + 2, np.int64)  # edges grouped by source cell (CSR)
    for i in range(n):
        for t in range(T):
            if near[i, t] >= 0:
                start[near[i, t] + 2] += 1
    for q in range(Q):
        start[q + 2] += start[q + 1]
    E = start[Q + 1]
    erec = np.empty(E, np.int64)
    eslot = np.empty(E, np.int64)
    esrc = np.empty(E, np.int64)
    for i in range(n):
        for t in range(T):
            b = near[i, t]
            if b >= 0:
                e = start[b + 1]
                erec[e], eslot[e], esrc[e] = i, t, b
                start[b + 1] += 1
    du = np.empty(n)  # each record's cost in its own cell
    for i in range(n):
        du[i] = np.inf
        for t in range(T):
            if near[i, t] == labels[i]:
                du[i] = D[i, t]
                break
        if du[i] == np.inf:
            return -1
    queue = np.empty(Q + 1, np.int64)
    inq = np.zeros(Q + 1, np.bool_)
    nxt = np.empty(Q + 2, np.int64)
    prv = np.empty(Q + 2, np.int64)
    depth = np.empty(Q + 2, np.int64)
    intree = np.empty(Q + 2, np.bool_)
    pred = np.empty(Q + 1, np.int64)
    _flat(nxt, prv, depth, intree, pred)
    head, size = 0, 0
    for v in range(Q + 1):
        size = _enqueue(queue, inq, head, size, v)
    cancelled, scans = 0, 0
    while True:
        while size > 0:
            u = queue[head]
            head = (head + 1) % (Q + 1)
            size -= 1
            inq[u] = False
            if not intree[u]:  # an ancestor fell since u was queued: u falls again first
                continue
            scans += 1
            if scans > max_scans:
                return -1
            cycle = -1
            if u == sink:
                v = c[sink] + tol
                for q in range(Q):
                    if v < c[q]:
                        c[q], pred[q] = v, -2
                        if _graft(u, q, nxt, prv, depth, intree):
                            cycle = q
                            break
                        size = _enqueue(queue, inq, head, size, q)
            else:
                cu = c[u]
                for e in range(start[u], start[u + 1]):
                    i = erec[e]
                    a = labels[i]
                    if a == u:
                        continue
                    v = cu + D[i, eslot[e]] - du[i] + tol
                    if v < c[a]:
                        c[a], pred[a] = v, e
                        if _graft(u, a, nxt, prv, depth, intree):
                            cycle = a
                            break
                        size = _enqueue(queue, inq, head, size, a)
                if cycle < 0 and counts[u] > m[u] and cu + tol < c[sink]:
                    c[sink], pred[sink] = cu + tol, -3 - u
                    if _graft(u, sink, nxt, prv, depth, intree):
                        cycle = sink
                    else:
                        size = _enqueue(queue, inq, head, size, sink)
            if cycle < 0:
                continue
            total, v = 0.0, cycle  # the cycle's weight with today's labels: cancel only a negative one
            while True:
                p = pred[v]
                if p >= 0:
                    total += D[erec[p], eslot[p]] - du[erec[p]] + tol
                else:
                    total += tol
                v = _parent(pred, esrc, v, sink)
                if v == cycle:
                    break
            if total < 0.0:
                v = cycle
                while True:
                    p = pred[v]
                    u = _parent(pred, esrc, v, sink)
                    if p >= 0:  # record erec[p] moves from cell v to cell u
                        i = erec[p]
                        labels[i], du[i] = u, D[i, eslot[p]]
                        counts[v] -= 1
                        counts[u] += 1
                        for t in range(T):  # its edges changed: rescan their sources
                            if near[i, t] >= 0:
                                size = _enqueue(queue, inq, head, size, near[i, t])
                    v = u
                    if v == cycle:
                        break
                cancelled += 1
            for v in range(Q + 1):  # nodes that fell but were not scanned since: scan again
                if not intree[v]:
                    size = _enqueue(queue, inq, head, size, v)
            size = _enqueue(queue, inq, head, size, sink)
            _flat(nxt, prv, depth, intree, pred)
        _flat(nxt, prv, depth, intree, pred)
        for u in range(Q):  # the certificate: every edge holds, else search on
            cu = c[u]
            bad = counts[u] > m[u] and cu + tol < c[sink]
            for e in range(start[u], start[u + 1]):
                i = erec[e]
                if labels[i] != u and cu + D[i, eslot[e]] - du[i] + tol < c[labels[i]]:
                    bad = True
                    break
            if bad or c[sink] + tol < c[u]:
                size = _enqueue(queue, inq, head, size, u)
                size = _enqueue(queue, inq, head, size, sink)
        if size == 0:
            return cancelled


def cancel_cycles(near, cost, labels, min_sizes, c0, tol, max_scans: int | None = None):
    """Labels optimal over the candidate pairs ``near`` (n, T; -1 pads; ``cost`` their squared
    distances) with at least ``min_sizes[q]`` records in cell q, and potentials c (Q + 1
    entries, the sink last) certifying it as :func:`feasible_potentials` does, reached from
    feasible ``labels`` (each among its candidates) and potentials ``c0`` by cancelling negative
    exchange cycles (:func:`_cancel_cycles`). Cheaper than solving the flow again when the
    labels are optimal over most of the pairs (pairs just added by pricing). Returns (labels,
    c) or None (a record's cell not among its candidates, or the work bound, by default 200
    scans per node, exceeded)."""
    labels = np.array(labels, dtype=np.int64)
    Q = len(c0) - 1
    counts = np.bincount(labels, minlength=Q).astype(np.int64)
    c = np.array(c0, dtype=np.float64)
    max_scans = 200 * (Q + 1) if max_scans is None else max_scans
    done = _cancel_cycles(np.ascontiguousarray(near, dtype=np.int64), np.ascontiguousarray(cost, dtype=np.float64),
                          labels, counts, np.broadcast_to(np.asarray(min_sizes, dtype=np.int64), Q).copy(), c,
                          float(tol), int(max_scans))
    return None if done < 0 else (labels, c)

"""Cost offsets for given cell sizes: Levenberg-Marquardt on the cell counts (paper 3,
Appendix A), for cells large enough that counts vary smoothly with the offsets.

For centroids xhat_q and offsets c, points go to q(x) = argmin_q ||x - xhat_q||^2 + c_q and
the residual is p(c) = counts(c) - targets. Appendix A solves p(c) = 0:

1. Jacobian, column by column: raising c_q by delta_q moves the points of cell q whose margin
   (second-best cost - own cost) is below delta_q to their second-best cells. delta_q is the
   5% quantile of the margins in q (NOTES.md §3: no root finding needed), so
   J[q, q] = -moved / delta_q and J[r, q] = moved to r / delta_q. J is then replaced by the
   nearest symmetric negative semidefinite matrix in the Frobenius norm.
2. Step: (J^T J + mu diag(J^T J)) d = -J^T p (Marquardt's scaling; J is singular since
   1^T J = 0, the damping handles it, and mean(c) is kept at 0).
3. Backtracking line search with Armijo's rule on ||p||^2.

Counts are integers (and records may tie), so LM stops near the targets; :func:`fill_deficits`
then reaches the exact sizes optimally by successive shortest paths between the cells.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._threads import chunk_plan, next_chunk, parallel_worth
from .local_search import member_lists



@njit(cache=True, inline="always")
def _assign_row(D, c, own, margin, second, i):
    """Best and second-best cell of point i for the costs D[i] + c, and the margin."""
    b1, b2 = np.inf, np.inf
    q1, q2 = 0, 0
    for q in range(D.shape[1]):
        v = D[i, q] + c[q]
        if v < b1:
            b2, q2 = b1, q1
            b1, q1 = v, q
        elif v < b2:
            b2, q2 = v, q
    own[i] = q1
    second[i] = q2
    margin[i] = b2 - b1


@njit(cache=True, parallel=True)
def _assign_kernel(D, c, own, margin, second, threads, per, counter):
    for _ in prange(threads):  # chunks taken dynamically (_threads.next_chunk)
        while True:
            lo, hi = next_chunk(counter, D.shape[0], per)
            if lo >= hi:
                break
            for i in range(lo, hi):
                _assign_row(D, c, own, margin, second, i)


@njit(cache=True)
def _assign_serial(D, c, own, margin, second):
    for i in range(D.shape[0]):
        _assign_row(D, c, own, margin, second, i)


def _assign(D, c):
    """Best cell, second-best cell and margin (second-best cost - own cost) of each point
    for the costs D + c (first cell on ties); one region: parallel only for enough work."""
    n = D.shape[0]
    own, second, margin = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    c = np.asarray(c, dtype=np.float64)
    if parallel_worth(D.size):
        _assign_kernel(D, c, own, margin, second, *chunk_plan(n))
    else:
        _assign_serial(D, c, own, margin, second)
    return own, margin, second


def _jacobian(own, margin, second, Q, fraction=0.05):
    J = np.zeros((Q, Q))
    for q in range(Q):
        inside = own == q
        if not inside.any():
            continue
        m = margin[inside]
        delta = max(float(np.quantile(m, fraction)), 1e-12 + float(m.min()))
        moved = inside & (margin <= delta)
        J[:, q] += np.bincount(second[moved], minlength=Q) / delta
        J[q, q] -= moved.sum() / delta
    J = 0.5 * (J + J.T)
    w, V = np.linalg.eigh(J)
    return (V * np.minimum(w, 0.0)) @ V.T


def lm_offsets(D, targets, c0=None, max_iter: int = 100, mu: float = 1e-3, tolerance: float = 1.0):
    """Offsets c with counts(argmin D + c) within ``tolerance`` of ``targets`` (or as close
    as LM gets in ``max_iter`` steps; D: n x Q squared distances)."""
    n, Q = D.shape
    targets = np.asarray(targets, dtype=np.float64)
    c = np.zeros(Q) if c0 is None else np.array(c0, dtype=np.float64)
    own, margin, second = _assign(D, c)
    r = np.bincount(own, minlength=Q) - targets
    f = float(r @ r)
    for _ in range(max_iter):
        if np.abs(r).max() <= tolerance:
            break
        J = _jacobian(own, margin, second, Q)
        A = J.T @ J
        g = J.T @ r
        step = np.linalg.solve(A + mu * np.diag(np.diag(A)) + 1e-12 * np.eye(Q), -g)
        step -= step.mean()
        t, accepted = 1.0, False
        for _ in range(30):
            cn = c + t * step
            own_n, margin_n, second_n = _assign(D, cn)
            rn = np.bincount(own_n, minlength=Q) - targets
            fn = float(rn @ rn)
            if fn < f - 1e-4 * t * abs(float(g @ step)):
                accepted = True
                break
            t *= 0.5
        if not accepted:
            mu *= 10.0
            if mu > 1e6:
                break
            continue
        mu = max(mu / 3.0, 1e-6)
        c, own, margin, second, r, f = cn - cn.mean(), own_n, margin_n, second_n, rn, fn
    return c


@njit(cache=True)
def _cheapest_row(D, a, members, size, W, A):
    """W[a, b] = min over i in cell a of D[i, b] - D[i, a] (the cheapest move of a point from
    cell a to cell b), A[a, b] = that point."""
    Q = D.shape[1]
    W[a] = np.inf
    for s in range(size):
        i = members[s]
        for b in range(Q):
            v = D[i, b] - D[i, a]
            if b != a and v < W[a, b]:
                W[a, b] = v
                A[a, b] = i


@njit(cache=True)
def _gain_point(D, t, i, W, A):
    """Cell t gained point i: its cheapest moves can only get cheaper, O(|Q|)."""
    for b in range(D.shape[1]):
        v = D[i, b] - D[i, t]
        if b != t and v < W[t, b]:
            W[t, b] = v
            A[t, b] = i


@njit(cache=True)
def _lose_point(D, a, i, members, size, W, A):
    """Cell a lost point i: rescan only the moves whose cheapest point was i."""
    for b in range(D.shape[1]):
        if b == a or A[a, b] != i:
            continue
        W[a, b] = np.inf
        for s in range(size):
            j = members[s]
            v = D[j, b] - D[j, a]
            if v < W[a, b]:
                W[a, b] = v
                A[a, b] = j


@njit(cache=True)
def _potentials(W, c):
    """Lower c until c_a <= c_b + W[a, b] for all cells (Bellman-Ford); False on a negative cycle."""
    Q = c.size
    for _ in range(Q + 1):
        changed = False
        for a in range(Q):
            for b in range(Q):
                if c[b] + W[a, b] < c[a]:
                    c[a] = c[b] + W[a, b]
                    changed = True
        if not changed:
            return True
    return False


@njit(cache=True)
def _fill_deficits(D, labels, targets, max_steps, c):
    n, Q = D.shape
    tol = 1e-13 * (1.0 + np.abs(D).max())
    counts = np.zeros(Q, np.int64)
    for i in range(n):
        counts[labels[i]] += 1
    cap = counts.max() + max(0, (targets - counts).max()) + 1
    members, size, pos = member_lists(labels, Q, cap)
    W = np.empty((Q, Q))
    A = np.zeros((Q, Q), np.int64)
    for a in range(Q):
        _cheapest_row(D, a, members[a], size[a], W, A)
    dist = np.empty(Q)
    pred = np.empty(Q, np.int64)
    path = np.empty(Q + 1, np.int64)
    moved = np.empty(Q + 1, np.int64)
    for _ in range(max_steps):
        if (size >= targets).all():
            return _potentials(W, c)
        for q in range(Q):
            dist[q] = 0.0 if size[q] > targets[q] else np.inf
            pred[q] = -1
        for _ in range(Q):  # Bellman-Ford from every cell with a surplus
            changed = False
            for a in range(Q):
                if dist[a] == np.inf:
                    continue
                for b in range(Q):
                    if dist[a] + W[a, b] < dist[b] - tol:  # tol: no rounding-level cycles
                        dist[b] = dist[a] + W[a, b]
                        pred[b] = a
                        changed = True
            if not changed:
                break
        t = -1
        for q in range(Q):
            if size[q] < targets[q] and (t < 0 or dist[q] < dist[t]):
                t = q
        if dist[t] == np.inf or size[t] >= cap:
            return False
        m = 0
        path[0] = t
        for _ in range(Q + 1):  # shift one point along the path, ending at the source
            a = pred[t]
            if a < 0:
                break
            i = A[a, t]
            last = members[a, size[a] - 1]  # remove i from a, append it to t
            members[a, pos[i]] = last
            pos[last] = pos[i]
            size[a] -= 1
            members[t, size[t]] = i
            pos[i] = size[t]
            size[t] += 1
            labels[i] = t
            moved[m] = i
            t = a
            m += 1
            path[m] = t
        if pred[t] >= 0:  # a cycle in the tree: only rounding can cause it
            return False
        for s in range(m):  # path[s] gained moved[s] from path[s + 1]: update their moves
            _gain_point(D, path[s], moved[s], W, A)
        for s in range(m):
            _lose_point(D, path[s + 1], moved[s], members[path[s + 1]], size[path[s + 1]], W, A)
    return False


def fill_deficits(D, labels, targets, c, max_steps: int = 100_000):
    """Exact sizes >= ``targets`` from an assignment that is optimal for its own sizes (such as
    the power diagram's own, after LM): successive shortest paths (paper: the reassignment of
    the +-1..2 stragglers, done optimally). Each step moves one point along the cheapest chain
    of moves from a cell with a surplus to a cell short of points, found by Bellman-Ford on the
    |Q| cells with edge weights W[a, b] = min over i in a of d(i, b) - d(i, a), kept up to date
    after each step (a cell that gains a point: O(|Q|); one that loses a point rescans only the
    moves that point was the cheapest for; 2.8 s -> 0.6 s per PCL run at n = 2^16); the result is
    optimal for its sizes (no negative exchange cycle), so strict offsets exist for it.
    Returns (labels, offsets): new labels, and the offsets ``c`` lowered (Bellman-Ford on W)
    until the power diagram of D + offsets agrees with them up to ties; None when some cell
    cannot be reached."""
    labels = np.array(labels, dtype=np.int64)
    c = np.array(c, dtype=np.float64)
    ok = _fill_deficits(np.ascontiguousarray(D), labels, np.asarray(targets, dtype=np.int64), max_steps, c)
    return (labels, c - c.mean()) if ok else None

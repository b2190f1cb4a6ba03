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

Counts are integers, so LM stops within a point or two of the targets; :func:`boundary_offsets`
then re-assigns the points nearest to the cell boundaries exactly (a small transportation
LP), and adds its duals to the offsets. The labels are the power diagram's own assignment.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange



@njit(cache=True, parallel=True)
def _assign_kernel(D, c, own, margin, second):
    n, Q = D.shape
    for i in prange(n):
        b1, b2 = np.inf, np.inf
        q1, q2 = 0, 0
        for q in range(Q):
            v = D[i, q] + c[q]
            if v < b1:
                b2, q2 = b1, q1
                b1, q1 = v, q
            elif v < b2:
                b2, q2 = v, q
        own[i] = q1
        second[i] = q2
        margin[i] = b2 - b1


def _assign(D, c):
    """Best cell, second-best cell and margin (second-best cost - own cost) of each point
    for the costs D + c (first cell on ties)."""
    n = D.shape[0]
    own, second, margin = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n)
    _assign_kernel(D, np.asarray(c, dtype=np.float64), own, margin, second)
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


def lm_offsets(D, targets, c0=None, max_iter: int = 100, mu: float = 1e-3):
    """Offsets c with counts(argmin D + c) close to ``targets`` (D: n x Q squared distances)."""
    n, Q = D.shape
    targets = np.asarray(targets, dtype=np.float64)
    c = np.zeros(Q) if c0 is None else np.array(c0, dtype=np.float64)
    own, margin, second = _assign(D, c)
    r = np.bincount(own, minlength=Q) - targets
    f = float(r @ r)
    for _ in range(max_iter):
        if np.abs(r).max() <= 1.0:
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


def boundary_offsets(D, c, targets, per_cell: int = 64):
    """Exact counts after LM: points whose margin is among the ``per_cell`` smallest of their
    cell are re-assigned by an exact transportation LP (the paper's "posterior reassignment
    of the stragglers", done optimally); the others keep their cells. Returns the offsets
    c + the LP duals, or None when the fixed points alone overfill a cell. Ties left by the
    degenerate duals are settled by :func:`probanon.microagg.pcl.power_labels`."""
    n, Q = D.shape
    targets = np.asarray(targets, dtype=np.int64)
    own, margin, _ = _assign(D, c)
    free = np.zeros(n, bool)
    for q in range(Q):
        inside = np.flatnonzero(own == q)
        free[inside[np.argsort(margin[inside])[:per_cell]]] = True
    need = targets - np.bincount(own[~free], minlength=Q)
    if (need < 0).any():
        return None
    offsets = c + _transport_on_costs(D[free] + c, need)
    return offsets - offsets.mean()


def _transport_on_costs(cost, need):
    """Transportation LP on an explicit cost matrix (all pairs): >= need[q] points per cell."""
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix

    m, Q = cost.shape
    rows = np.repeat(np.arange(m), Q)
    cols = np.tile(np.arange(Q), m)
    nv = m * Q
    A_eq = csr_matrix((np.ones(nv), (rows, np.arange(nv))), shape=(m, nv))
    A_ub = csr_matrix((-np.ones(nv), (cols, np.arange(nv))), shape=(Q, nv))
    res = linprog(cost.ravel(), A_ub=A_ub, b_ub=-need, A_eq=A_eq, b_eq=np.ones(m), bounds=(0, None), method="highs")
    return np.asarray(res.ineqlin.marginals)

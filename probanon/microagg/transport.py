"""Exact size-constrained assignment for fixed centroids (paper 3, Sec. 4 / NOTES.md §3).

With the centroids xhat_q fixed, the best assignment of points to cells with at least m_q
points each is the transportation problem

    minimise   sum_{i,q} d_iq y_iq,          d_iq = ||x_i - xhat_q||^2
    subject to sum_q y_iq = 1   (every point in one cell),
               sum_i y_iq >= m_q (every cell at least m_q points),   y >= 0,

whose constraint matrix is totally unimodular, so HiGHS returns an integral vertex. Its duals
lambda_q of the cell constraints are the cost offsets of the power diagram
q(x) = argmin_q d(x, q) + lambda_q (Theorem 4's modified nearest-neighbour condition).

Only each point's ``candidates`` nearest cells enter the LP; afterwards every excluded pair
is priced with the duals (d_iq + lambda_q < u_i means it would improve) and added, until
none is (column generation): the result is optimal for the full problem.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linprog
from scipy.sparse import csr_matrix

from ..errors import ParameterError, ProbanonError


@dataclass(frozen=True)
class TransportAssignment:
    """Result of :func:`transport_assign`."""

    labels: np.ndarray  # cell of each point
    offsets: np.ndarray  # lambda_q: cost offsets (duals of the size constraints)
    cost: float  # sum of d over the assignment (the SSE for squared distances)
    columns: int  # candidate pairs in the final LP


def squared_distances(Z: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """d_iq = ||z_i - c_q||^2, shape (n, |Q|), by the expansion with a floor at 0."""
    d = (Z**2).sum(1)[:, None] - 2.0 * Z @ centers.T + (centers**2).sum(1)[None, :]
    return np.maximum(d, 0.0)


def transport_assign(Z, centers, min_sizes, candidates: int = 8, max_rounds: int = 20) -> TransportAssignment:
    """Optimal assignment of the rows of ``Z`` to ``centers`` with at least ``min_sizes[q]``
    points in cell q (an int applies to every cell). See the module docstring."""
    Z = np.asarray(Z, dtype=np.float64)
    centers = np.asarray(centers, dtype=np.float64)
    n, Q = Z.shape[0], centers.shape[0]
    m = np.full(Q, int(min_sizes)) if np.isscalar(min_sizes) else np.asarray(min_sizes, dtype=np.int64)
    if m.sum() > n:
        raise ParameterError(f"cells need {m.sum()} points but there are only {n}")
    D = squared_distances(Z, centers)
    L = min(Q, max(2, candidates))
    mask = np.zeros((n, Q), bool)
    near = np.argpartition(D, L - 1, axis=1)[:, :L] if L < Q else np.tile(np.arange(Q), (n, 1))
    mask[np.arange(n)[:, None], near] = True
    for _ in range(max_rounds):
        rows, cols = np.nonzero(mask)
        nv = rows.size
        A_eq = csr_matrix((np.ones(nv), (rows, np.arange(nv))), shape=(n, nv))
        A_ub = csr_matrix((-np.ones(nv), (cols, np.arange(nv))), shape=(Q, nv))
        res = linprog(D[rows, cols], A_ub=A_ub, b_ub=-m, A_eq=A_eq, b_eq=np.ones(n),
                      bounds=(0, None), method="highs")
        if res.status == 2:  # infeasible with these candidates: widen them
            if mask.all():
                raise ProbanonError("size-constrained assignment is infeasible")
            L = min(Q, 2 * L)
            near = np.argpartition(D, L - 1, axis=1)[:, :L] if L < Q else np.tile(np.arange(Q), (n, 1))
            mask[np.arange(n)[:, None], near] = True
            continue
        if res.status != 0:
            raise ProbanonError(f"transportation LP failed: {res.message}")
        u = res.eqlin.marginals
        lam = res.ineqlin.marginals
        # price the excluded pairs: reduced cost d_iq + lam_q - u_i < 0 would improve
        reduced = D + lam[None, :] - u[:, None]
        improving = (~mask) & (reduced < -1e-9 * (1.0 + np.abs(D)))
        if not improving.any():
            break
        mask |= improving
    x = res.x
    labels = np.empty(n, np.int64)
    chosen = x > 0.5
    labels[rows[chosen]] = cols[chosen]
    return TransportAssignment(labels=labels, offsets=np.asarray(lam), cost=float(D[np.arange(n), labels].sum()),
                               columns=int(nv))

"""Exact size-constrained assignment for fixed centroids (paper 3, Sec. 4 / NOTES.md §3).

With the centroids xhat_q fixed, the best assignment of points to cells with at least m_q
points each is the transportation problem

    minimise   sum_{i,q} d_iq y_iq,          d_iq = ||x_i - xhat_q||^2
    subject to sum_q y_iq = 1   (every point in one cell),
               sum_i y_iq >= m_q (every cell at least m_q points),   y >= 0,

whose constraint matrix is totally unimodular: it is a min-cost flow (points -> cells ->
sink, each cell demanding m_q, the sink the remaining n - sum m), solved by OR-Tools'
network simplex-free cost-scaling solver (``SimpleMinCostFlow``; costs scaled to integers
with 2^-39 relative resolution, rounding made good by the polishing below). Measured at
n = 20,000 / 100,000 (10-D Gaussian, k = 5, 8 candidates per point): HiGHS's LP 2.0 s / 13.0 s,
the min-cost flow 0.23 s / 1.6 s, same optimum.

Its duals lambda_q of the cell constraints are the cost offsets of the power diagram
q(x) = argmin_q d(x, q) + lambda_q (Theorem 4's modified nearest-neighbour condition). The
flow solver does not return them: they are shortest-path potentials of the cells
(:func:`.potentials.feasible_potentials`, with the sink node; any exchange cycle that
rounding left negative is cancelled there).

Only each point's ``candidates`` cells of lowest cost enter the flow (:mod:`.candidates`,
no n x |Q| matrix); afterwards every excluded pair is priced with the potentials
(d_iq + lambda_q < d_ia + lambda_a - tol, a the point's cell, means it would improve; cell by
cell with a triangle-inequality filter and early exit, O(n + |Q|) memory) and added, until
none is (column generation): the result is optimal for the full problem to within
tol = 1e-10 of the largest candidate cost per point. Once few records gained pairs, the next
round cancels the negative cycles those pairs close (:func:`.potentials.cancel_cycles`)
instead of solving the flow again, and a round prices over all cells only the records whose
cell's offset or label moved, the others against the cells whose offset moved (:func:`_price`).
Given a feasible start (``labels``, each record among its candidates), the first round too
cancels the start's cycles instead of solving a flow.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from ..errors import ParameterError, ProbanonError
from .candidates import _pair_costs, improving_cells, nearest_cells
from .potentials import cancel_cycles, feasible_potentials


@dataclass(frozen=True)
class TransportAssignment:
    """Result of :func:`transport_assign`."""

    labels: np.ndarray  # cell of each point
    offsets: np.ndarray  # lambda_q: cost offsets (duals of the size constraints)
    cost: float  # sum of d over the assignment (the SSE for squared distances)
    columns: int  # candidate pairs in the final flow problem
    candidates: np.ndarray  # (n, T) candidate cells of each point in the final flow problem, -1 pads
    #: every pair outside ``candidates`` costs more than the point's own cell by more than this
    #: at ``offsets`` (0: not certified; see MARGIN)
    margin: float = 0.0


def squared_distances(Z: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """d_iq = ||z_i - c_q||^2, shape (n, |Q|), by the expansion with a floor at 0 (dense: only
    for the large-cell path, where |Q| <= n / 256)."""
    d = (Z**2).sum(1)[:, None] - 2.0 * Z @ centers.T + (centers**2).sum(1)[None, :]
    return np.maximum(d, 0.0)


#: the pricing's tolerance is 1e-10 of the largest candidate cost, at least this: where every
#: candidate cost is 0 (identical records at their cells' means) a tolerance of 0 made the
#: pricing the published rule's tie-break (:func:`.candidates._beats`), under which every
#: record tied with every lower cell improved on its own, round after round, and the
#: assignment failed after max_rounds
TOL_MIN = np.finfo(np.float64).tiny

#: integer costs of the flow: the largest candidate cost becomes 2^39 (OR-Tools needs the
#: largest cost times the number of nodes to fit in 63 bits)
COST_BITS = 39


def _integer_costs(cost):
    """The flow's integer costs: ``cost`` (>= 0) over its largest, times 2^COST_BITS, rounded.
    All zero when every cost is (identical records at their cells' means): the scale factor
    2^COST_BITS / max(top, 1e-300) was infinite there (and for any largest cost below 3e-297),
    and 0 times it NaN (OR-Tools: BAD_COST_RANGE)."""
    top = float(cost.max()) if cost.size else 0.0
    if not top > 0.0:
        return np.zeros(cost.size, np.int64)
    scale = 2.0**COST_BITS / top
    scaled = cost * scale if np.isfinite(scale) else cost / top * 2.0**COST_BITS  # the former: as before
    return np.round(scaled).astype(np.int64)


def _min_cost_flow(near, cost, m):
    """Labels of the cheapest assignment over the candidate pairs (``near``: -1 pads) with cell
    q receiving at least m_q points; None when these candidates admit none."""
    from ortools.graph.python import min_cost_flow

    n, Q = near.shape[0], m.size
    valid = near >= 0
    rows = np.nonzero(valid)[0]
    cols = near[valid]
    solver = min_cost_flow.SimpleMinCostFlow()
    solver.add_arcs_with_capacity_and_unit_cost(
        np.r_[rows, n + np.arange(Q)], np.r_[n + cols, np.full(Q, n + Q)],
        np.r_[np.ones(rows.size, np.int64), np.full(Q, n, np.int64)],
        np.r_[_integer_costs(cost[valid]), np.zeros(Q, np.int64)])
    solver.set_nodes_supplies(np.arange(n + Q + 1), np.r_[np.ones(n, np.int64), -m, [m.sum() - n]])
    status = solver.solve()
    if status == solver.INFEASIBLE:
        return None
    if status != solver.OPTIMAL:
        raise ProbanonError(f"size-constrained assignment failed: min-cost flow status {status}")
    chosen = solver.flows(np.arange(rows.size)) > 0
    labels = np.empty(n, np.int64)
    labels[rows[chosen]] = cols[chosen]
    return labels


#: after a pricing round that found improving cells for at most CANCEL_MAX records, the next
#: round cancels the negative cycles that the added pairs close (:func:`.potentials.cancel_cycles`,
#: bounded by CANCEL_SWEEPS scans per cell, else the flow is solved again); so does the first
#: round from a start (``labels``). PCL's last assignment at 10^5 records, 10-D: rounds with
#: 69 / 21 / 5 improving records took 0.12 s each this way against 1.1-1.2 s for a new flow; a
#: round with 187 records failed at 10 scans per cell (0.3 s, then a flow of 1.35 s) and took
#: 0.33 s at 60; PCL's alternation after the free-size kicks (a start) needed more than 10 too
#: (0.7 s, 45 records moved, against 1.6-2.5 s for the flow); 300 records: 0.8 s against 1.5 s,
#: 1,035 records: slower than the flow
CANCEL_MAX, CANCEL_SWEEPS = 400, 60
#: the last pricing rounds also add, as candidates, the cells that cost less than a record's own
#: cell plus MARGIN times the largest candidate cost (tol is 1e-10 times it): every other pair
#: is then certified above the own cost by that margin (``TransportAssignment.margin``), so
#: strict offsets that move by less need no pricing over all cells
#: (:func:`.potentials.strict_offsets`: 1.7-2.0 s saved at 10^5 records, 10-D). There, no pair
#: outside the candidates came within 2e-3 of its own cost (costs around 1), 1e-4 of the
#: largest candidate cost
MARGIN = 1e-5
CANCEL_SCANS_MIN = 2_000  # scans allowed on top of the per-cell bound (small problems: a cancelled cycle rescans its cells)


class _Priced:
    """What the pricing rounds since the last full one certify (:func:`_price`): the offsets
    of each round (``history``), per record the last round that priced it over all cells
    (``rows``), per cell the last round that priced it against every record (``cells``), the
    labels of the last round and its records with more than P improving cells (``overflow``)."""

    def __init__(self, c, labels, overflow):
        self.history = [c.copy()]
        self.rows = np.zeros(labels.size, np.int64)
        self.cells = np.zeros(c.size, np.int64)
        self.labels, self.overflow = labels.copy(), overflow


def _price(Z, centers, c, labels, tol, P, priced, margin=0.0):
    """Pricing of the excluded pairs (:func:`.candidates.improving_cells` with ``near``, P
    cells per record) at offsets c: (cells, count, close, around, state for the next round);
    ``cells`` also lists the cells within ``margin`` of the own cost, ``close`` counts both.

    A pair (i, q) priced at round s (not improving at 7/8 tol) stays certified to within tol
    while the offsets of q and of i's cell a moved by at most tol / 16 each since s, beyond
    the median move (a common shift of all offsets changes no comparison: a new flow's
    potentials shift every offset), and i kept its cell. Each round prices over all cells
    the records whose cell moved since their pair's round, that changed cells since the last
    round, or had more than P improving cells (or cells within the margin) in it (not all of
    them were added); every other record against the cells that moved since their pair's
    round. A pair's round is the later of the last round that priced the record over all
    cells and the last that priced the cell against every record (``_Priced``). A full pricing
    starts over when these records or cells are more than a third. The same holds for the
    margin: a pair priced at round s above the own cost by more than ``margin`` stays above it
    by more than margin - tol / 8. PCL's last assignment at 10^5 records, 10-D (P = 8): after
    a full pricing of 2.5 s, its five rounds took 1.1 / 0.6 / 0.2 / 0.06 / 0.04 s, against 1.1 / 1.1
    / 1.1 / 1.1 / 0.9 s when each measured the moves from the full pricing (same pairs found);
    after its first flow every offset had moved by tol / 4, 3,886 of 19,775 by more than
    tol / 16 beyond that, and 4 of 2,495 records overflowed in the full pricing."""
    n, Q = Z.shape[0], centers.shape[0]
    if priced is not None:
        moved = np.empty((len(priced.history), Q), bool)  # moved since round s, beyond the median move
        for s, old in enumerate(priced.history):
            shift = c - old
            moved[s] = np.abs(shift - np.median(shift)) > tol / 16
        since = np.logical_or.accumulate(moved[::-1], axis=0)[::-1]  # moved in some round >= s
        full = since[priced.rows, labels] | (labels != priced.labels) | priced.overflow
        groups = np.unique(priced.rows[~full])
        targets = np.zeros(Q, bool)
        for g in groups:
            targets |= moved[np.maximum(g, priced.cells), np.arange(Q)]
        targets = np.flatnonzero(targets)
    close = np.zeros(n, np.int64)
    if priced is None or targets.size > Q // 3 or np.count_nonzero(full) > n // 3:
        better, count, around = improving_cells(Z, centers, c, labels, 0.875 * tol, P, near=True, margin=margin,
                                                close=close)
        return better, count, close, around, _Priced(c, labels, close > P)
    better = np.full((n, P), -1, np.int64)
    count = np.zeros(n, np.int64)
    around = np.full((n, min(P + 1, Q)), -1, np.int64)
    for rows, cells in ((np.flatnonzero(full), None), (np.flatnonzero(~full), targets)):
        if rows.size and (cells is None or cells.size):
            some = np.zeros(rows.size, np.int64)
            better[rows], count[rows], around[rows] = improving_cells(Z[rows], centers, c, labels[rows], 0.875 * tol,
                                                                      P, near=True, targets=cells, margin=margin,
                                                                      close=some)
            close[rows] = some
    s = len(priced.history)
    priced.history.append(c.copy())
    priced.rows[full] = s
    priced.cells[targets] = s
    priced.labels, priced.overflow = labels.copy(), close > P
    return better, count, close, around, priced


@njit(cache=True)
def _grown(near, rows, new):
    """``near`` with the cells of ``new[r]`` (-1 pads) added to row ``rows[r]``: each row's
    distinct cells packed to the left, -1 after them, as many columns as the fullest row
    needs. Only the rows that gain cells widen the matrix (a column stack of the new cells
    for every row grew it by 17 columns a round: PCL's last assignment at 10^5 records took
    eight rounds)."""
    n, T = near.shape
    cells = np.empty((rows.size, T + new.shape[1]), np.int64)
    sizes = np.empty(rows.size, np.int64)
    for r in range(rows.size):
        sizes[r] = _distinct(near[rows[r]], new[r], cells[r])
    out = np.full((n, max(T, sizes.max()) if rows.size else T), -1, np.int64)
    out[:, :T] = near
    for r in range(rows.size):
        out[rows[r], :sizes[r]] = cells[r, :sizes[r]]
    return out


@njit(cache=True)
def _distinct(a, b, seen):
    """The distinct cells (>= 0) of a then b, in order, into ``seen``; their number."""
    m = 0
    for part in (a, b):
        for q in part:
            if q < 0:
                continue
            fresh = True
            for t in range(m):
                if seen[t] == q:
                    fresh = False
                    break
            if fresh:
                seen[m] = q
                m += 1
    return m


def transport_assign(Z, centers, min_sizes, candidates: int = 8, max_rounds: int = 50, offsets=None, near=None,
                     exact: bool = True, pricing: int = 4, labels=None) -> TransportAssignment:
    """Optimal assignment of the rows of ``Z`` to ``centers`` with at least ``min_sizes[q]``
    points in cell q (an int applies to every cell). See the module docstring. ``offsets``
    (e.g. the previous call's) pick the first candidates by d + offset and start the
    potentials: fewer pricing rounds when the centres moved little. ``near`` (n, T; -1 pads)
    gives the first candidates instead (e.g. :func:`.candidates.pooled_cells`, no scan over
    all cells). ``exact=False`` stops after the first solution: optimal over the candidates
    only (no duals: ``offsets`` is None). ``pricing``: at most this many improving cells per
    point are added in a pricing round. ``labels``: a start; if it is feasible (every cell >=
    its minimum) and each record's cell is among its candidates, the first round cancels its negative
    exchange cycles (:func:`.potentials.cancel_cycles`, bounded; else a flow) instead of
    solving a flow: PCL's last assignment at 10^5 records, 10-D, from the local search's
    labels 0.13 s against 1.8 s for the flow, same optimum over the candidates (7 records
    moved). Memory O(n (d + candidates))."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    centers = np.ascontiguousarray(centers, dtype=np.float64)
    n, Q = Z.shape[0], centers.shape[0]
    m = np.full(Q, int(min_sizes), np.int64) if np.isscalar(min_sizes) else np.asarray(min_sizes, dtype=np.int64)
    if m.sum() > n:
        raise ParameterError(f"cells need {m.sum()} points but there are only {n}")
    start = np.zeros(Q) if offsets is None else np.minimum(np.asarray(offsets, dtype=np.float64) - np.max(offsets), 0.0)
    L = min(Q, max(2, candidates))
    near = nearest_cells(Z, centers, start, L)[0] if near is None else np.asarray(near, dtype=np.int64)
    c0 = np.r_[start, 0.0]
    c, priced, few, least = None, None, False, np.inf
    if labels is not None:  # a feasible start: cancel its cycles instead of a first flow
        labels = np.array(labels, dtype=np.int64)
        if labels.shape != (n,) or labels.min() < 0 or labels.max() >= Q:
            raise ParameterError(f"labels must be {n} cells in 0..{Q - 1}")
        few = bool((np.bincount(labels, minlength=Q) >= m).all() and (near == labels[:, None]).any(1).all())
    for _ in range(max_rounds):
        cost = _pair_costs(Z, centers, np.zeros(Q), near)
        top = float(cost[np.isfinite(cost)].max())
        tol = max(1e-10 * top, TOL_MIN)
        found = None
        if few:  # a start, or few records gained pairs: cancel the cycles they close instead of a new flow
            scans = CANCEL_SWEEPS * (Q + 1) + CANCEL_SCANS_MIN
            found = cancel_cycles(near, cost, labels, m, c0, tol / 4, max_scans=scans)
        few = False
        if found is not None and not exact:
            labels = found[0]
            break
        if found is None:
            labels = _min_cost_flow(near, cost, m)
            if labels is None:  # infeasible with these candidates: widen them
                if L == Q:
                    raise ProbanonError("size-constrained assignment is infeasible")
                L = min(Q, 2 * L)
                near, priced, least = nearest_cells(Z, centers, start, L)[0], None, np.inf  # added pairs gone
                continue
            if not exact:
                break
            found = feasible_potentials(Z, centers, labels, near, c0, tol / 4, min_sizes=m)
            if found is None:
                raise ProbanonError("size-constrained assignment: rounding cycles do not end")
        labels, c = found[:2]
        c = c[:Q] - c[Q]
        # the excluded pairs: add the improving cells, those within the margin and, for the
        # records that have improving cells, the other cells of lowest cost at these duals (fewer rounds)
        better, count, close, around, priced = _price(Z, centers, c, labels, tol, pricing, priced, MARGIN * top)
        least = min(least, MARGIN * top)  # the first rounds' margin (top grows with near)
        rows = np.flatnonzero(close > 0)
        if rows.size:
            near = _grown(near, rows, np.column_stack([around[rows], better[rows]]))
        if not count.any():
            break
        few, c0 = np.count_nonzero(count) <= CANCEL_MAX, np.r_[c, 0.0]
    else:
        raise ProbanonError(f"size-constrained assignment: pricing did not end in {max_rounds} rounds")
    own = _pair_costs(Z, centers, np.zeros(Q), labels[:, None])[:, 0]
    # a pair last priced at an earlier round may have come closer by tol / 8 since (:func:`_price`)
    certified = 0.0 if c is None or priced.overflow.any() else max(0.0, least - tol / 4)
    return TransportAssignment(labels=labels, offsets=c, cost=float(own.sum()), columns=int((near >= 0).sum()),
                               candidates=near, margin=certified)

"""The kernels of the published rules (:mod:`.rules`): the ordered-balls and power-diagram
rules over many records (numba, in parallel chunks when the work is worth it), the interval
rule, and the one projection of the "blocked" kind."""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from .._threads import chunk_plan, next_chunk, parallel_worth
from .._validation import check_matrix
from ..errors import InputError

PARALLEL_MIN = 5000  # fewer records, or less work than _threads.WORK_MIN: one thread


@njit(cache=True)
def _balls_rows(Z, lo, hi, refs, rad2, bounds, out):
    """Ordered-balls rule for rows lo..hi-1 of Z (the default group is refs.shape[0])."""
    G = refs.shape[0]
    for i in range(lo, hi):
        out[i] = G
        for g in range(G):
            acc = 0.0
            for c in range(Z.shape[1]):
                t = Z[i, c] - refs[g, c]
                acc += t * t
            inside = acc < rad2[g]
            if acc == rad2[g]:
                inside = True
                for c in range(Z.shape[1]):  # lexicographic tie rule against the boundary tuple
                    if Z[i, c] != bounds[g, c]:
                        inside = Z[i, c] < bounds[g, c]
                        break
            if inside:
                out[i] = g
                break


@njit(cache=True)
def _power_rows(Z, lo, hi, centers, offsets, out):
    """Power-diagram rule argmin_g ||z - c_g||^2 + w_g for rows lo..hi-1 (lowest g on ties)."""
    for i in range(lo, hi):
        best = np.inf
        arg = 0
        for g in range(centers.shape[0]):
            acc = 0.0
            for c in range(Z.shape[1]):
                t = Z[i, c] - centers[g, c]
                acc += t * t
            acc += offsets[g]
            if acc < best:
                best = acc
                arg = g
        out[i] = arg


@njit(cache=True, parallel=True)
def _balls_parallel(Z, refs, rad2, bounds, out, threads, per, counter):
    for _ in prange(threads):  # rows in chunks taken dynamically (_threads.next_chunk)
        while True:
            lo, hi = next_chunk(counter, Z.shape[0], per)
            if lo >= hi:
                break
            _balls_rows(Z, lo, hi, refs, rad2, bounds, out)


@njit(cache=True, parallel=True)
def _power_parallel(Z, centers, offsets, out, threads, per, counter):
    for _ in prange(threads):  # as _balls_parallel
        while True:
            lo, hi = next_chunk(counter, Z.shape[0], per)
            if lo >= hi:
                break
            _power_rows(Z, lo, hi, centers, offsets, out)


def _assign_balls(Z, refs, rad2, bounds):
    out = np.empty(Z.shape[0], np.int64)
    if Z.shape[0] >= PARALLEL_MIN and parallel_worth(Z.size * refs.shape[0]):
        _balls_parallel(Z, refs, rad2, bounds, out, *chunk_plan(Z.shape[0]))
    else:
        _balls_rows(Z, 0, Z.shape[0], refs, rad2, bounds, out)
    return out


#: cells from which the power-diagram rule goes through a k-d tree (with an exact check that
#: keeps it bit for bit, :func:`.candidates.power_assign`) instead of a pass over every cell:
#: at n = 20,000, |Q| = 4,000, d = 10 the tree took 0.9 s against 1.3 s for the pass, and the
#: gap grows with |Q|
TREE_MIN_CELLS = 2048


def _assign_power(Z, centers, offsets):
    if centers.shape[0] >= TREE_MIN_CELLS and Z.shape[0] >= PARALLEL_MIN:
        from .candidates import power_assign

        return power_assign(Z, centers, offsets)
    out = np.empty(Z.shape[0], np.int64)
    if Z.shape[0] >= PARALLEL_MIN and parallel_worth(Z.size * centers.shape[0]):
        _power_parallel(Z, centers, offsets, out, *chunk_plan(Z.shape[0]))
    else:
        _power_rows(Z, 0, Z.shape[0], centers, offsets, out)
    return out


def assign_intervals(X, uppers) -> np.ndarray:
    """Per column j, the first group whose upper bound uppers[j][g] is >= the value (the last
    group above all bounds); shape (n, d)."""
    X = check_matrix(X, name="records")
    if X.shape[1] != len(uppers):
        raise InputError(f"records have {X.shape[1]} columns, the intervals describe {len(uppers)}")
    out = np.empty(X.shape, np.int64)
    for j, upper in enumerate(uppers):
        upper = np.asarray(upper, dtype=np.float64)
        out[:, j] = np.minimum(np.searchsorted(upper, X[:, j], side="left"), upper.size - 1)
    return out


@njit(cache=True)
def _project_kernel(Z, rows, axis, out):
    for i in range(rows.size):
        acc = 0.0
        for c in range(Z.shape[1]):
            acc += Z[rows[i], c] * axis[c]
        out[i] = acc


def project_rows(Z, rows, axis) -> np.ndarray:
    """z . axis for the rows ``rows`` of Z, summed column by column in float64. The ONE
    projection of the "blocked" kind: :mod:`.blocks` cuts with it and :meth:`.rules.Blocked.assign`
    routes with it, so a record goes down the tree exactly as it went in the fit."""
    out = np.empty(len(rows), np.float64)
    _project_kernel(np.ascontiguousarray(Z, dtype=np.float64), np.ascontiguousarray(rows, dtype=np.int64),
                    np.ascontiguousarray(axis, dtype=np.float64), out)
    return out


__all__ = ["PARALLEL_MIN", "TREE_MIN_CELLS", "assign_intervals", "project_rows"]

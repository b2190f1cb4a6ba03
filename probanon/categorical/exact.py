"""The exact optimum of local suppression (issue 43, point 2) as an integer program solved by
HiGHS (:func:`scipy.optimize.milp`), for small problems and as the reference the fast method is
measured against.

Records with the same values (and stratum) are one **tuple** t with c_t records. For every
pattern S of t's observed keys, x_{t,S} in {0..c_t} records of t get the keys of S suppressed:

    minimise    sum_{t,S} cost(S) x_{t,S},    cost(S) = sum of the key weights of S
    subject to  sum_S x_{t,S} = c_t                                    for every tuple t
                x_{t,S} <= c_t y_{t,S}                                 y binary: pattern used
                sum_{(j,S') ~_B (t,S)} x_{j,S'} >= k y_{t,S}           for every key set B

where (j,S') ~_B (t,S) says that the released records match on the key set B (every key set
asked: all keys, or each combination of exactly m keys) with the missing-value rule, within the
stratum. A used pattern (y = 1) then has k matching released records; an unused one is free.
Under "a missing value is a category" the matching released records form a class, so the
indicator and the count are written once per class of each key set (z_{B,g}: class g of B
non-empty), which keeps the program sparse.

``only_violating=True`` fixes the records that are not violating before suppression (x_{t,{}} =
c_t): the problem the fast method solves (it never suppresses them), smaller; it is then the
optimum of that restricted problem, an upper bound of the unrestricted one.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_matrix

from ..errors import InputError
from ..frequencies import key_sets, match_counts, row_ids

#: at most this many (tuple, pattern) variables (a larger program is refused: use the fast method)
MAX_VARIABLES = 400_000


def exact_suppression(codes: np.ndarray, cost: np.ndarray, k: int, *, combinations=None, missing: str = "any",
                      strata=None, only_violating: bool = False, time_limit: float | None = None):
    """The integer program of the module docstring on integer codes (n x m, -1 missing) with key
    weights ``cost``. Returns (suppressed: n x m bool, optimal: bool, lower_bound: float)."""
    n, m = codes.shape
    s = np.zeros(n, dtype=np.int64) if strata is None else np.asarray(strata, dtype=np.int64)
    rows = np.column_stack([s, codes + 1])
    _, first, tuple_of = np.unique(row_ids(rows), return_index=True, return_inverse=True)
    tuple_of = tuple_of.ravel()
    U = first.size
    c = np.bincount(tuple_of, minlength=U)
    T = codes[first]
    st = s[first]
    blocks = [list(b) for b in key_sets(m, combinations)]
    blocks = [b for b in blocks if len(b) == max(len(x) for x in blocks)]
    fixed = np.zeros(U, dtype=bool)
    if only_violating:
        bad = np.zeros(n, dtype=bool)
        for b in blocks:
            f, _ = match_counts(codes[:, b], missing=missing, strata=strata)
            bad |= f < k
        fixed = ~np.bincount(tuple_of, weights=bad, minlength=U).astype(bool)
    # the (tuple, pattern) variables
    var_t, var_S = [], []
    for t in range(U):
        obs = int(sum(1 << x for x in range(m) if T[t, x] >= 0))
        if fixed[t]:
            var_t.append(t)
            var_S.append(0)
            continue
        for S in range(1 << m):
            if S & ~obs == 0:
                var_t.append(t)
                var_S.append(S)
    var_t, var_S = np.asarray(var_t, dtype=np.int64), np.asarray(var_S, dtype=np.int64)
    V = var_t.size
    if V > MAX_VARIABLES:
        raise InputError(f"the exact program would have {V:,} (tuple, pattern) variables (limit {MAX_VARIABLES:,}); "
                         "use the fast method")
    bits = ((var_S[:, None] >> np.arange(m)) & 1).astype(bool)
    released = np.where(bits, -1, T[var_t])
    weight = bits @ np.asarray(cost, dtype=np.float64)
    if missing == "category":
        A, lo, hi, n_ind = _category_rows(released, st[var_t], c[var_t], blocks, k, V)
    else:
        A, lo, hi, n_ind = _any_rows(released, st[var_t], c[var_t], blocks, k, V)
    # sum_S x_{t,S} = c_t
    eq = coo_matrix((np.ones(V), (var_t, np.arange(V))), shape=(U, V + n_ind))
    from scipy.sparse import vstack

    matrix = vstack([A, eq]).tocsr()
    lower = np.concatenate([lo, c.astype(np.float64)])
    upper = np.concatenate([hi, c.astype(np.float64)])
    objective = np.concatenate([weight, np.zeros(n_ind)])
    bounds = Bounds(np.zeros(V + n_ind), np.concatenate([c[var_t].astype(np.float64), np.ones(n_ind)]))
    options = {"time_limit": float(time_limit)} if time_limit else {}
    res = milp(objective, integrality=np.ones(V + n_ind), bounds=bounds,
               constraints=LinearConstraint(matrix, lower, upper), options=options)
    if res.x is None:
        raise InputError(f"the exact program found no solution ({res.message})")
    x = np.rint(res.x[:V]).astype(np.int64)
    suppressed = np.zeros((n, m), dtype=bool)
    order = np.argsort(tuple_of, kind="stable")
    starts = np.concatenate([[0], np.cumsum(c)])
    taken = np.zeros(U, dtype=np.int64)
    for v in np.flatnonzero(x > 0):
        t = var_t[v]
        members = order[starts[t] + taken[t]: starts[t] + taken[t] + x[v]]
        suppressed[members] = bits[v]
        taken[t] += x[v]
    optimal = res.status == 0
    bound = float(getattr(res, "mip_dual_bound", np.nan)) if not optimal else float(res.fun)
    return suppressed, optimal, bound


def _compatible(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Pairwise: released rows of a and b match (equal where both observed)."""
    ok = np.ones((a.shape[0], b.shape[0]), dtype=bool)
    for x in range(a.shape[1]):
        ax, bx = a[:, x][:, None], b[:, x][None, :]
        ok &= (ax == bx) | (ax < 0) | (bx < 0)
    return ok


def _any_rows(released, stratum, c, blocks, k, V):
    """Rule "any": y_v per variable; x_v - c y_v <= 0; per block sum over matches - k y_v >= 0."""
    r, col, val = [np.arange(V)], [np.arange(V)], [np.ones(V)]
    r.append(np.arange(V))
    col.append(V + np.arange(V))
    val.append(-c.astype(np.float64))
    lo, hi = [np.full(V, -np.inf)], [np.zeros(V)]
    row = V
    for b in blocks:
        for start in range(0, V, 2048):  # pairwise matches in slices (memory)
            part = slice(start, min(V, start + 2048))
            match = _compatible(released[part][:, b], released[:, b]) & (stratum[part][:, None] == stratum[None, :])
            i, j = np.nonzero(match)
            r += [row + i, row + np.arange(match.shape[0])]
            col += [j, V + np.arange(part.start, part.stop)]
            val += [np.ones(i.size), np.full(match.shape[0], -float(k))]
            row += match.shape[0]
        lo.append(np.zeros(V))
        hi.append(np.full(V, np.inf))
    A = coo_matrix((np.concatenate(val), (np.concatenate(r), np.concatenate(col))), shape=(row, 2 * V))
    return A, np.concatenate(lo), np.concatenate(hi), V


def _category_rows(released, stratum, c, blocks, k, V):
    """Rule "category": one indicator z per class of each block; x_v - c z_{g(v)} <= 0 and
    sum_{v in g} x_v - k z_g >= 0."""
    r, col, val, lo, hi = [], [], [], [], []
    row, n_ind = 0, 0
    for b in blocks:
        g = row_ids(np.column_stack([stratum, released[:, b] + 1]))
        G = int(g.max()) + 1
        # x_v - c_v z_g <= 0
        r += [row + np.arange(V)] * 2
        col += [np.arange(V), V + n_ind + g]
        val += [np.ones(V), -c.astype(np.float64)]
        lo.append(np.full(V, -np.inf))
        hi.append(np.zeros(V))
        row += V
        # sum x - k z >= 0
        r += [row + g, row + np.arange(G)]
        col += [np.arange(V), V + n_ind + np.arange(G)]
        val += [np.ones(V), np.full(G, -float(k))]
        lo.append(np.zeros(G))
        hi.append(np.full(G, np.inf))
        row += G
        n_ind += G
    A = coo_matrix((np.concatenate(val), (np.concatenate(r), np.concatenate(col))), shape=(row, V + n_ind))
    return A, np.concatenate(lo), np.concatenate(hi), n_ind


__all__ = ["MAX_VARIABLES", "exact_suppression"]

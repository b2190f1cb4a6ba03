"""Survey design for untrusted respondents: cells as products of ranges and categories (issue 18.1;
paper 1, Sec. III, Fig. 3, the mode the paper leaves open).

A respondent who trusts no software must find their cell by hand. The cells are therefore the
leaves of a binary tree of single-key questions ("Is your age under 35?", "Is your region one of
North, East?"), function kind "decision-tree" (:mod:`probanon.microagg.function`).

Construction (top-down, as CART's regression trees, Breiman et al. 1984, with a safety
constraint): a node holding the population records S is split by the question that minimises
the distortion of its two children,

    SSE_w(L) + SSE_w(R),   SSE_w(A) = sum_{j in A} w_j ||z_j||^2 - ||sum_{j in A} w_j z_j||^2 / sum_{j in A} w_j,

with w_j = pi_j (times the design weight d_j), z_j the standardised keys: the criterion of the
distortion D of the MDAV design (Sec. VI.B), so every cut point of every key is tried, not only
the median. A question is admissible only when both children are safe cells themselves:

* constant pi: both hold at least n_cell records (:func:`.design.safe_cell_size`: every size
  from n_cell on fails with probability <= pbar);
* per-record pi_j: Algorithm A on each child's pi_j gives qbar <= pbar (the failures of every
  prefix and every suffix of the sorted records, two O(|S| k) scans per key,
  :func:`.anonymity.prefix_log_failures`).

A node with no admissible question is a leaf: a cell. So every cell is safe by construction,
and the rule the respondent follows is the partition itself.

Questions. A numeric key is cut between two consecutive distinct values a < b of the node at
the roundest number t with a < t <= b (fewest significant decimal digits: "under 35", not "under
34.5"); "yes" (value < t) goes left. An ordinal key is cut between two levels (yes: the levels up
to the cut). A nominal key's categories are ordered by the mean, over the node's records of each
category, of the projection of z on the node's principal axis (for a one-dimensional response
the best binary split of a categorical predictor is a prefix of the categories ordered by their
means, Breiman et al. 1984, Thm. 4.5; in several dimensions this ordering is our heuristic),
and cut between two of them (yes: the categories before the cut). The cells are numbered in the
order a questionnaire visits them (depth first, "yes" first).
"""

from __future__ import annotations

import math
from decimal import ROUND_FLOOR, Decimal

import numpy as np

from .anonymity import prefix_log_failures


def round_threshold(a: float, b: float) -> float:
    """The number with the fewest significant decimal digits in (a, b] (a < b): a question
    "under t?" separates every value <= a from every value >= b. Among equally short numbers
    the largest (the one nearest to b) is taken. Exact decimal arithmetic: for each power of ten
    10^e, from above b's magnitude down to b's last decimal digit, the largest multiple of 10^e
    that is <= b (the shortest decimal form of b, which reads back as b)."""
    if not a < b:
        raise ValueError("round_threshold needs a < b")
    exact = Decimal(repr(float(b)))
    top = max(abs(a), abs(b))
    for e in range(math.floor(math.log10(top)) + 1, exact.as_tuple().exponent - 1, -1):
        quantum = Decimal(1).scaleb(e)
        t = float((exact / quantum).to_integral_value(rounding=ROUND_FLOOR) * quantum)
        if a < t <= b:
            return t
    return float(b)


def _sse_split(Zs: np.ndarray, ws: np.ndarray) -> np.ndarray:
    """SSE_w(first t) + SSE_w(rest) for t = 1..n-1 (records in the given order)."""
    cw = np.cumsum(ws)
    czw = np.cumsum(ws[:, None] * Zs, axis=0)
    cq = np.cumsum(ws * (Zs**2).sum(axis=1))
    left = cq[:-1] - (czw[:-1] ** 2).sum(axis=1) / cw[:-1]
    rw, rz, rq = cw[-1] - cw[:-1], czw[-1] - czw[:-1], cq[-1] - cq[:-1]
    right = rq - (rz**2).sum(axis=1) / np.maximum(rw, 1e-300)
    return left + right


def _principal_axis(Zs: np.ndarray, ws: np.ndarray) -> np.ndarray:
    mean = ws @ Zs / ws.sum()
    C = ((Zs - mean) * ws[:, None]).T @ (Zs - mean)
    return np.linalg.eigh(C)[1][:, -1]


class _Safety:
    """Which children are safe cells: sizes >= n_cell (constant pi) or Algorithm A (pi_j)."""

    def __init__(self, k: int, risk: float, pis: np.ndarray, cell_size: int | None):
        self.k, self.log_pbar, self.pis, self.cell_size = k, math.log(risk), pis, cell_size

    def splits(self, rows: np.ndarray) -> np.ndarray:
        """For records ``rows`` in this order: whether the first t and the remaining n - t are
        both safe, t = 1..n-1."""
        n = rows.size
        t = np.arange(1, n)
        if self.cell_size is not None:
            return (t >= self.cell_size) & (n - t >= self.cell_size)
        p = np.ascontiguousarray(self.pis[rows])
        head = prefix_log_failures(p, self.k)[:-1] <= self.log_pbar
        tail = prefix_log_failures(p[::-1].copy(), self.k)[::-1][1:] <= self.log_pbar
        return head & tail


def _best_split(V, Z, w, rows, kinds, safety):
    """The admissible question of least SSE_w for the records ``rows``: (cost, key, order of
    ``rows``, t, categories order or None), or None."""
    best = None
    axis = None
    for j, kind in enumerate(kinds):
        v = V[rows, j]
        rank = None
        if kind == "nominal":
            if axis is None:
                axis = _principal_axis(Z[rows], w[rows])
            codes, inverse = np.unique(v.astype(np.int64), return_inverse=True)
            proj = Z[rows] @ axis
            means = np.bincount(inverse, w[rows] * proj) / np.bincount(inverse, w[rows])
            rank = np.argsort(np.argsort(means, kind="stable"), kind="stable")  # category -> its place
            key = rank[inverse].astype(np.float64)
        else:
            key = v
        order = np.argsort(key, kind="stable")
        ks = key[order]
        ok = (ks[1:] > ks[:-1]) & safety.splits(rows[order])
        if not ok.any():
            continue
        cost = np.where(ok, _sse_split(Z[rows[order]], w[rows[order]]), np.inf)
        t = int(np.argmin(cost))  # left: order[:t + 1]
        if best is None or cost[t] < best[0]:
            categories = None if rank is None else codes[np.argsort(rank)]
            best = (float(cost[t]), j, rows[order], t + 1, categories, ks)
    return best


def tree_partition(V, Z, w, kinds, levels, k: int, risk: float, pis: np.ndarray, cell_size: int | None):
    """The cells of the untrusted design (module docstring) and their tree.

    ``V`` (N x p): key values (numbers; categorical keys as positions among ``levels[j]``);
    ``Z`` (N x m): standardised embedding on which the distortion is measured; ``w``: pi_j
    (times d_j); ``kinds[j]``: "numeric", "ordinal" or "nominal"; ``cell_size``: n_cell for
    constant pi, None for per-record pi_j (``pis``). Returns (labels, nodes), nodes as in the
    "decision-tree" rule."""
    safety = _Safety(k, risk, pis, cell_size)
    nodes: list[dict] = []
    labels = np.empty(V.shape[0], np.int64)
    cells = 0
    stack = [(np.arange(V.shape[0]), None, None)]
    while stack:
        rows, parent, side = stack.pop()
        here = len(nodes)
        if parent is not None:
            nodes[parent][side] = here
        split = _best_split(V, Z, w, rows, kinds, safety)
        if split is None:
            nodes.append({"cell": cells})
            labels[rows] = cells
            cells += 1
            continue
        _, j, ordered, t, categories, ks = split
        if kinds[j] == "numeric":
            node = {"column": j, "threshold": round_threshold(float(ks[t - 1]), float(ks[t]))}
        elif kinds[j] == "ordinal":  # the levels below the first level on the right
            node = {"column": j, "categories": list(levels[j][:int(ks[t])])}
        else:  # the node's categories ranked before the cut
            node = {"column": j, "categories": [levels[j][int(c)] for c in categories[:int(ks[t])]]}
        nodes.append({**node, "left": None, "right": None})
        stack += [(np.sort(ordered[t:]), here, "right"), (np.sort(ordered[:t]), here, "left")]
    return labels, nodes

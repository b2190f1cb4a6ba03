"""A hierarchy respected as given: its uniform level cuts, checked against sigma with the test of
Algorithm 2, beside the greedy search (paper 5, Section V; issue 13 point 8).

A hierarchy may be a forest. Parts never cross roots (no implicit common root) unless
``allow_root_merge``; so the coarsest permitted partition is the roots themselves, and Algorithm 2
may find no sigma-k^m-anonymous partition within the hierarchy.

**Level cuts.** The cut at depth d replaces every leaf by its ancestor at depth d (roots have depth
0), or keeps the leaf when it is shallower. Each cut is a permitted (full-subtree) generalization;
the cut at depth d coarsens the one at d + 1 and the deepest cut is the identity.

**"Satisfies sigma"** is decided, level by level l = 1..m, by the very test that ends a level of
Algorithm 2 (line 7: the level ends after gamma + 1 consecutive k-anonymous draws):

* sampled levels (sigma_l < 1 and l > ``exact_upto``): gamma(sigma_l) + 1 i.i.d. uniform draws of
  distinct l-itemsets of the ORIGINAL data (the sampler and gamma_l of Algorithm 2) must all be
  k_l-anonymous under the cut, i.e. the cut meets the conditions of Theorem 1 (zero failures);
* exact levels (sigma_l = 1 or l <= ``exact_upto``): every distinct l-itemset k_l-anonymous, as in
  the deterministic phase;
* levels above the largest record: vacuously satisfied.

The draws of a level are made once (from a seed derived from the first run's seed) and serve
every cut; the cuts are fixed before the draws, so each cut's test is Theorem 1's. Supports only
grow under coarsening (R(P u Q) contains R(P)), so a cut failing at level l makes every finer cut
fail at l too: the cuts are checked from the roots down, and such failures are inferred, not
re-tested. Like Algorithm 2, the test certifies with zero failures only: a cut whose exact
fraction f_l is below 1 passes a sampled level with probability f_l^(gamma_l + 1) (at sigma = .9,
gamma = 321: 0.2% for f = .981), however far above sigma f_l is.

The result of :func:`.generalize.anonymize` is the greedy result (best of r runs) or the best
satisfying cut, whichever has the smaller ``err`` (the greedy on ties); both are reported in
:class:`HierarchyReport`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .constraints import GeneralizationConstraints, partition_error
from .enumeration import enumerate_distinct
from .sampling import sample_itemsets


@dataclass(frozen=True)
class CutCheck:
    """One level cut: its ``depth``, number of parts and ``err``; ``failed_level`` is the first l at
    which it fails the test (None: it satisfies sigma at every level l <= m). At a sampled failing
    level, ``failures`` of the ``checked`` draws were not k-anonymous (None when the level was
    exact or the failure inferred from a coarser cut); ``k`` is that level's k_l. ``levels``: the
    reports of the levels passed."""

    depth: int
    n_parts: int
    err: float
    failed_level: int | None
    failures: int | None = None
    checked: int | None = None
    k: int | None = None
    levels: tuple = ()

    def satisfies(self, m: int) -> bool:
        """Whether the cut passes the test at every level l <= m."""
        return self.failed_level is None or self.failed_level > m

    def to_dict(self) -> dict:
        return {"depth": self.depth, "parts": self.n_parts, "err": self.err, "failed_level": self.failed_level,
                "failures": self.failures, "checked": self.checked}


@dataclass(frozen=True)
class HierarchyReport:
    """What the hierarchy permitted and which release was kept (see the module docstring).

    ``greedy_err`` is the err of the greedy result (None when it is not sigma-k^m-anonymous: a
    failing itemset admitted no permitted merge); ``cuts`` the level cuts checked, coarsest
    first; ``chosen`` is "greedy", "cut" (the best satisfying cut, ``best_cut``) or "none"
    (neither satisfies sigma). ``root_crossing_parts`` counts the parts of the release holding
    leaves of several roots (0 unless ``allow_root_merge``).
    """

    allow_root_merge: bool
    n_roots: int
    depth: int
    cuts: tuple
    greedy_err: float | None
    chosen: str
    root_crossing_parts: int
    m: int

    @property
    def best_cut(self) -> CutCheck | None:
        """The least-err cut satisfying sigma at every level (the coarsest of equal ones), or None."""
        ok = [c for c in self.cuts if c.satisfies(self.m)]
        return min(ok, key=lambda c: c.err) if ok else None

    def to_dict(self) -> dict:
        best = self.best_cut
        return {"allow_root_merge": self.allow_root_merge, "roots": self.n_roots, "depth": self.depth,
                "root_crossing_parts": self.root_crossing_parts, "chosen": self.chosen,
                "greedy_err": self.greedy_err, "best_cut": None if best is None else best.to_dict(),
                "cuts": [c.to_dict() for c in self.cuts]}

    def summary(self) -> str:
        """One line: greedy against the best level cut, and which was kept."""
        greedy = ("found no sigma-anonymous partition" if self.greedy_err is None
                  else f"err {self.greedy_err:.6g}")
        best = self.best_cut
        cut = ("no level cut satisfies sigma" if best is None
               else f"best level cut depth {best.depth} ({best.n_parts} parts) err {best.err:.6g}")
        line = f"greedy {greedy}; {cut}; kept the {self.chosen}"
        if self.allow_root_merge:
            line += f"; root merges allowed: {self.root_crossing_parts} part(s) span several roots"
        return line

    def failure(self) -> str:
        """Why nothing within the hierarchy satisfies sigma, naming the level reached."""
        top = self.cuts[0]
        why = f"fails at l = {top.failed_level}"
        if top.failures is not None:
            why += (f" ({top.failures} of {top.checked} sampled {top.failed_level}-itemsets are not "
                    f"{top.k}-anonymous; sigma needs all {top.checked} to be)")
        else:
            why += f" (a {top.failed_level}-itemset is not {top.k}-anonymous)"
        return (f"no partition within the hierarchy satisfies sigma: its coarsest level (depth {top.depth}, "
                f"every leaf replaced by its root: {top.n_parts} parts) {why}")


def depths(constraints: GeneralizationConstraints) -> np.ndarray:
    """Depth of every node of the hierarchy (roots 0)."""
    parent = constraints.parent
    depth = np.full(len(parent), -1, dtype=np.int64)
    for start in range(len(parent)):
        path, v = [], start
        while v != -1 and depth[v] < 0:
            path.append(v)
            v = parent[v]
        d = -1 if v == -1 else depth[v]
        for u in reversed(path):
            d += 1
            depth[u] = d
    return depth


def roots(constraints: GeneralizationConstraints) -> np.ndarray:
    """The root above every leaf (item)."""
    parent = constraints.parent
    out = np.empty(constraints.n_items, dtype=np.int64)
    for leaf in range(constraints.n_items):
        v = leaf
        while parent[v] != -1:
            v = parent[v]
        out[leaf] = v
    return out


def level_cut(constraints: GeneralizationConstraints, depth: int) -> np.ndarray:
    """Node of the cut at ``depth`` for every leaf: its ancestor at that depth, or itself if shallower."""
    parent, dep = constraints.parent, depths(constraints)
    node = np.arange(constraints.n_items, dtype=np.int64)
    for leaf in range(constraints.n_items):
        v = leaf
        while dep[v] > depth:
            v = parent[v]
        node[leaf] = v
    return node


def by_first_item(labels) -> np.ndarray:
    """Part ids 0..P-1 numbered in the order of their first item."""
    _, first, inverse = np.unique(np.asarray(labels), return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse]


def crossing_parts(partition, constraints: GeneralizationConstraints) -> int:
    """Parts holding leaves below different roots."""
    root = roots(constraints)
    pairs = np.unique(np.column_stack([np.asarray(partition, dtype=np.int64), root]), axis=0)
    return int((np.bincount(pairs[:, 0]) > 1).sum())


def _groups(labels) -> list:
    """The items of each part (sorted), parts in the order of their ids."""
    order = np.argsort(labels, kind="stable")
    return np.split(order, np.flatnonzero(np.diff(labels[order])) + 1)


def _exact_passes(state, l: int) -> tuple[bool, int]:
    """Every distinct l-itemset k-anonymous under the state's partition? (ok, distinct itemsets seen)."""
    total = 0
    for a in range(state.data.n_items):
        found = enumerate_distinct(state.data, l, max_support=state.k - 1, first=[a])
        total += found.n_distinct
        if state.first_failure(found.itemsets, found.supports, 0) < len(found.supports):
            return False, total
    return True, total


def check_cuts(data, constraints, align, plan, exact_upto, pairs, method, seed, make_state) -> tuple:
    """Check every level cut of the hierarchy against sigma (see the module docstring), coarsest
    first. ``data`` and ``pairs`` as the runs of Algorithm 2 use them; ``make_state(k)`` a fresh
    identity partition. Returns the :class:`CutCheck` of each depth and the cut labels."""
    from .generalize import LevelReport

    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x6375]))
    dep = depths(constraints)
    deepest = int(dep[:constraints.n_items].max())
    m, biggest = len(plan.levels), int(data.record_sizes.max())
    occ = np.bincount(align, weights=data.item_counts.astype(float), minlength=constraints.n_items)
    draws = {}  # l -> sample, drawn once in increasing l (the same stream whatever the cuts)
    checks, labels_of = [], []
    limit = None  # first failing level of the previous (coarser) cut: this one fails there too
    for depth in range(deepest + 1):
        node = level_cut(constraints, depth)
        labels = by_first_item(node)
        err = partition_error(labels, occ, constraints)
        reports, failed = [], None
        if limit == 1:  # a coarser cut fails at l = 1: so does this one
            checks.append(CutCheck(depth, int(labels.max()) + 1, float(err), 1, k=int(plan.k[0])))
            labels_of.append(labels)
            continue
        state = make_state(int(plan.k[0]))
        for items in _groups(labels):
            if len(items) > 1:
                state.merge(items.tolist(), int(node[items[0]]))
        for l in range(1, m + 1):
            k, sigma, gamma = int(plan.k[l - 1]), float(plan.sigma[l - 1]), plan.gamma[l - 1]
            if limit is not None and l == limit:
                failed = (l, None, None, k)
                break
            state.set_k(k)
            if l > biggest:
                reports.append(LevelReport(l, "empty", None, 0, 0, 1.0, True, k, sigma))
            elif gamma is None or l <= exact_upto:
                ok, total = _exact_passes(state, l)
                if not ok:
                    failed = (l, None, None, k)
                    break
                reports.append(LevelReport(l, "exact", None, total, 0, 1.0, True, k, sigma))
            else:
                if l not in draws:
                    draws[l] = sample_itemsets(data, l, gamma + 1, method=method, random_state=rng, pairs=pairs,
                                               support_cap=k)
                s = draws[l]
                bad = len(s.supports) - state.count_anonymous(s.itemsets, s.supports, k)
                if bad:
                    failed = (l, int(bad), len(s.supports), k)
                    break
                reports.append(LevelReport(l, "sampled", gamma, len(s.supports), 0, 1.0, True, k, sigma))
        if failed is not None:
            limit = failed[0]
        checks.append(CutCheck(depth, int(labels.max()) + 1, float(err), *(failed or (None, None, None, None)),
                               levels=tuple(reports)))
        labels_of.append(labels)
    return tuple(checks), labels_of


def keep_better(greedy, checks, labels_of, constraints, align, allow_root_merge: bool):
    """The greedy result or the best satisfying cut (smaller err; the greedy on ties), with the
    :class:`HierarchyReport` in ``hierarchy``."""
    m = greedy.m
    ok = [j for j, c in enumerate(checks) if c.satisfies(m)]
    best = min(ok, key=lambda j: checks[j].err) if ok else None
    if greedy.satisfied and (best is None or greedy.err <= checks[best].err):
        chosen, result = "greedy", greedy
    elif best is not None:
        chosen, cut, labels = "cut", checks[best], labels_of[best]
        merges = tuple(items for items in _groups(labels) if len(items) > 1)
        result = replace(greedy, partition=labels, data_partition=labels[align], err=cut.err,
                         n_parts=cut.n_parts, levels=cut.levels[:m], merges=merges)
    else:
        chosen, result = "none", greedy
    report = HierarchyReport(bool(allow_root_merge), int(len(np.unique(roots(constraints)))),
                             int(depths(constraints)[:constraints.n_items].max()), tuple(checks),
                             float(greedy.err) if greedy.satisfied else None, chosen,
                             crossing_parts(result.partition, constraints), m)
    return replace(result, hierarchy=report)

"""A hierarchy respected as given: its uniform level cuts, certified against sigma with the test of
Theorem 1 tolerating failures, beside the greedy search (paper 5, Section V; issue 13 point 8).

A hierarchy may be a forest. Parts never cross roots (no implicit common root) unless
``allow_root_merge``; so the coarsest permitted partition is the roots themselves, and Algorithm 2
may find no sigma-k^m-anonymous partition within the hierarchy.

**Level cuts.** The cut at depth d replaces every leaf by its ancestor at depth d (roots have depth
0), or keeps the leaf when it is shallower. Each cut is a permitted (full-subtree) generalization;
the cut at depth d coarsens the one at d + 1 and the deepest cut is the identity.

**"Satisfies sigma"** (the fraction of distinct l-itemsets that are k_l-anonymous is >= sigma_l)
is decided level by level, l = 1..m, with Theorem 1 in a form that tolerates failures:

* sampled levels (sigma_l < 1 and l > ``exact_upto``): N i.i.d. uniform draws of distinct
  l-itemsets of the ORIGINAL data (the sampler of Algorithm 2), of which f are not k_l-anonymous
  under the cut; the level is certified when (1 - f/N - eps)(1 - delta) >= sigma_l with
  eps = sqrt(ln(2/delta) / (2N)) (ln(1/delta) for the one-sided bound) and delta that of
  gamma(sigma_l) (:func:`.sample_size.certify`). N = :func:`.sample_size.certification_sample_size`
  (about 16 gamma: a level failing on at most half the share sigma tolerates is certified with
  probability >= 1 - delta/2). At f = 0 and N = gamma + 1 this is Algorithm 2's own test (all
  gamma + 1 draws k-anonymous), which alone would pass a level of fraction F with probability
  F^(gamma + 1) only (0.2% for F = .981 at sigma = .9, gamma = 321), however far above sigma F is;
* exact levels (sigma_l = 1 or l <= ``exact_upto``): every distinct l-itemset k_l-anonymous, as in
  the deterministic phase;
* levels above the largest record: vacuously satisfied.

The draws of a level are made once (in chunks of ``_CHUNK``, from a seed derived from the first
run's seed, levels in increasing order) and serve every cut; the cuts are fixed before the draws,
so each cut's test is the one above (choosing the least-err certified cut among D cuts holds
with probability >= 1 - D delta by the union bound). Supports only grow under coarsening
(R(P u Q) contains R(P)): a finer cut fails every draw a coarser one fails, so once a cut cannot
be certified at level l any more (its failures so far already exceed what N draws allow), every
finer cut fails at l too and is not counted further (reported as inferred); drawing stops when
the coarsest cut still tested fails.

The result of :func:`.generalize.anonymize` is the greedy result (best of r runs) or the best
satisfying cut, whichever has the smaller ``err`` (the greedy on ties); both are reported in
:class:`HierarchyReport`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .constraints import GeneralizationConstraints, partition_error
from .enumeration import enumerate_distinct
from .levels import LevelReport
from .sample_size import certification_sample_size, certify
from .sampling import proposal, sample_itemsets


_CHUNK = 1 << 18  # draws per sampler call when certifying a level (bounds the memory at large N)


@dataclass(frozen=True)
class LevelTest:
    """One cut at itemset size ``l`` (k_l = ``k``, sigma_l = ``sigma``): ``method`` "sampled"
    (``failures`` of ``checked`` draws not k-anonymous, ``lower`` the certified lower bound of the
    fraction, :func:`.sample_size.certify`; ``gamma`` that of Algorithm 2), "exact" (``checked``
    distinct itemsets enumerated; ``lower`` 1 when all pass, else None) or "empty" (no record has
    l items). ``inferred``: failed because a coarser cut failed at l (nothing counted)."""

    l: int
    method: str
    k: int
    sigma: float
    passed: bool
    checked: int | None = None
    failures: int | None = None
    lower: float | None = None
    gamma: int | None = None
    inferred: bool = False

    def to_dict(self) -> dict:
        return {"l": self.l, "method": self.method, "k": self.k, "sigma": self.sigma, "passed": self.passed,
                "checked": self.checked, "failures": self.failures, "lower_bound": self.lower,
                "inferred": self.inferred}

    def describe(self) -> str:
        """E.g. "l = 3: 80 of 5127 draws not 5-anonymous, fraction >= 0.93 certified"."""
        head = f"l = {self.l}: "
        if self.inferred:
            return head + "fails as a coarser cut does"
        if self.method == "empty":
            return head + "no record this long"
        if self.method == "exact":
            return head + (f"all {self.checked} {self.k}-anonymous (exact)" if self.passed
                           else f"a {self.l}-itemset is not {self.k}-anonymous (exact)")
        verdict = (f"fraction >= {self.lower:.4g} certified" if self.passed
                   else f"fraction certified >= {self.lower:.4g} only, below sigma {self.sigma:g}")
        return head + f"{self.failures} of {self.checked} draws not {self.k}-anonymous, {verdict}"


@dataclass(frozen=True)
class CutCheck:
    """One level cut: its ``depth``, number of parts, ``err`` and the :class:`LevelTest` of each
    level l = 1, 2, ... tested, up to the first failing one (all m when it satisfies sigma)."""

    depth: int
    n_parts: int
    err: float
    tests: tuple = ()

    @property
    def failed(self) -> LevelTest | None:
        """The failing level's test (None: every level tested passed)."""
        return next((t for t in self.tests if not t.passed), None)

    @property
    def failed_level(self) -> int | None:
        return None if self.failed is None else self.failed.l

    def satisfies(self, m: int) -> bool:
        """Whether the cut passes the test at every level l <= m."""
        return self.failed_level is None or self.failed_level > m

    @property
    def levels(self) -> tuple:
        """:class:`.levels.LevelReport` of the levels passed (``fraction`` = 1 - f/N sampled)."""
        out = []
        for t in self.tests:
            if not t.passed:
                break
            fraction = 1.0 if t.method != "sampled" else 1.0 - t.failures / t.checked
            out.append(LevelReport(t.l, t.method, t.gamma, t.checked or 0, 0, fraction, True, t.k, t.sigma))
        return tuple(out)

    def to_dict(self) -> dict:
        bad = self.failed
        return {"depth": self.depth, "parts": self.n_parts, "err": self.err, "failed_level": self.failed_level,
                "failures": None if bad is None else bad.failures, "checked": None if bad is None else bad.checked,
                "levels": [t.to_dict() for t in self.tests]}


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
               else f"best level cut depth {best.depth} ({best.n_parts} parts) err {best.err:.6g} "
                    f"[{', '.join(t.describe() for t in best.tests[:self.m])}]")
        line = f"greedy {greedy}; {cut}; kept the {self.chosen}"
        if self.allow_root_merge:
            line += f"; root merges allowed: {self.root_crossing_parts} part(s) span several roots"
        return line

    def failure(self) -> str:
        """Why nothing within the hierarchy satisfies sigma, naming the level reached."""
        top = self.cuts[0]
        return (f"no partition within the hierarchy satisfies sigma: its coarsest level (depth {top.depth}, "
                f"every leaf replaced by its root: {top.n_parts} parts) fails at {top.failed.describe()}")


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


def _exact_level(live, state_of, l, k, sigma) -> dict:
    """Exact level: the cuts ``live`` (coarsest first; ``state_of(cut, k)`` its partition) up to
    the first failing one; the finer ones fail with it (inferred). {cut: LevelTest}."""
    out = {}
    for idx, j in enumerate(live):
        ok, total = _exact_passes(state_of(j, k), l)
        out[j] = LevelTest(l, "exact", k, sigma, ok, total, lower=1.0 if ok else None)
        if not ok:
            out.update({i: LevelTest(l, "exact", k, sigma, False, inferred=True) for i in live[idx + 1:]})
            break
    return out


def _sampled_level(live, state_of, l, k, sigma, gamma, bound, draw) -> dict:
    """Sampled level: N = certification_sample_size draws (``draw(n)`` gives n more), counted
    for the cuts ``live`` (coarsest first) while they can still be certified. {cut: LevelTest}."""
    n = certification_sample_size(sigma, bound)
    failures = [0] * len(live)
    counting, drawn, out = len(live), 0, {}
    while drawn < n and counting:
        sample = draw(min(_CHUNK, n - drawn))
        drawn += len(sample.supports)
        for idx in range(counting):
            failures[idx] += len(sample.supports) - state_of(live[idx], k).count_anonymous(
                sample.itemsets, sample.supports, k)
            if not certify(failures[idx], n, sigma, bound).certified:  # nor can any finer cut be
                c = certify(failures[idx], drawn, sigma, bound)
                out[live[idx]] = LevelTest(l, "sampled", k, sigma, False, drawn, c.failures, c.lower, gamma)
                out.update({i: LevelTest(l, "sampled", k, sigma, False, gamma=gamma, inferred=True)
                            for i in live[idx + 1:counting]})
                counting = idx
                break
    for idx in range(counting):
        c = certify(failures[idx], n, sigma, bound)
        out[live[idx]] = LevelTest(l, "sampled", k, sigma, True, n, c.failures, c.lower, gamma)
    return out


def check_cuts(data, constraints, align, plan, exact_upto, pairs, method, seed, make_state) -> tuple:
    """Certify every level cut of the hierarchy against sigma (see the module docstring), level by
    level, the cuts coarsest first. ``data`` and ``pairs`` as the runs of Algorithm 2 use them;
    ``make_state(k)`` a fresh identity partition. Returns the :class:`CutCheck` of each depth and
    the cut labels."""
    rng = np.random.default_rng(np.random.SeedSequence([int(seed), 0x6375]))
    dep = depths(constraints)
    deepest = int(dep[:constraints.n_items].max())
    m, biggest = len(plan.levels), int(data.record_sizes.max())
    occ = np.bincount(align, weights=data.item_counts.astype(float), minlength=constraints.n_items)
    nodes = [level_cut(constraints, depth) for depth in range(deepest + 1)]
    labels_of = [by_first_item(node) for node in nodes]
    tests = [[] for _ in nodes]
    states = {}

    def state_of(j, k):  # built when first tested: none for a cut a coarser one fails at l = 1
        if j not in states:
            states[j] = make_state(int(plan.k[0]))
            for items in _groups(labels_of[j]):
                if len(items) > 1:
                    states[j].merge(items.tolist(), int(nodes[j][items[0]]))
        states[j].set_k(k)
        return states[j]

    live = list(range(len(nodes)))  # cuts passing every level so far, coarsest first
    for l in range(1, m + 1):
        if not live:
            break
        k, sigma, gamma = int(plan.k[l - 1]), float(plan.sigma[l - 1]), plan.gamma[l - 1]
        if l > biggest:
            found = {j: LevelTest(l, "empty", k, sigma, True) for j in live}
        elif gamma is None or l <= exact_upto:
            found = _exact_level(live, state_of, l, k, sigma)
        else:
            prop = proposal(data, l)
            found = _sampled_level(live, state_of, l, k, sigma, gamma, plan.bound,
                                   lambda n: sample_itemsets(data, l, n, method=method, random_state=rng,
                                                             pairs=pairs, prop=prop, support_cap=k))
        for j, test in found.items():
            tests[j].append(test)
        live = [j for j in live if found[j].passed]
        for j in set(states) - set(live):
            del states[j]
    checks = tuple(CutCheck(depth, int(labels.max()) + 1, float(partition_error(labels, occ, constraints)),
                            tuple(t)) for depth, (labels, t) in enumerate(zip(labels_of, tests)))
    return checks, labels_of


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

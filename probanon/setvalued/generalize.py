"""sigma-k^m-anonymity by global recoding: Algorithm 2 of paper 5 (Section V), with the
amplification A^(r) (Section V-B) and the deterministic phase (Sections V-C, VI-D).

Algorithm 2 (line numbers of the paper). R starts as the identity (line 4). For l = 1..m
(line 5), S is emptied (line 6) and, while |S| <= gamma(sigma_l) and |Image(R)| > 1 (line 7),
an l-itemset s is drawn uniformly from the distinct l-itemsets of the ORIGINAL data (line 8);
s' = {R(i) : i in s} (line 9); if supp(s', <R, D>) >= k it joins S (lines 10-11), otherwise R
moves to the permitted neighbour generalization at an item j in s with fewer parts and the
least error (lines 13-14), and S := {s} (line 15). So a level ends after gamma + 1 consecutive
k-anonymous samples.

Two points the paper leaves open are fixed here (reported in the result):

* |S| counts samples (i.i.d. draws, as Theorem 1 requires), not distinct itemsets: with fewer
  than gamma distinct l-itemsets a set S could never grow past gamma.
* after a merge, s is re-checked and merged again until it is k-anonymous, so that S := {s}
  (line 15) only ever holds k-anonymous samples.

Neighbours (paper, Section V): for an adjacency graph or Voronoi cells, part P may merge with
any part Q holding a graph neighbour of an item of P (P and Q connected => P u Q connected);
for a hierarchy (horizontal cuts), the neighbour at item j replaces the subtree of j's part by
the leaves below the parent node; a part that is a whole tree of a forest has no neighbour
(parts never cross roots) unless ``allow_root_merge``, which merges all parts into one as under
an implicit common root. With a hierarchy the result is also compared with its uniform level
cuts (:mod:`.cuts`). The error of a candidate is ``partition_error`` (Section V-C),

    err(D, D') = sum_i occ_i ||c_i - c_{R(i)}|| / sum_i occ_i,

and the merge minimising it (equivalently, its increase) is taken; ties go to the lowest part id.

Deterministic phase (sigma = 1, Section V-C): for l <= ``exact_upto`` every distinct l-itemset
of support < k is enumerated (:mod:`.enumeration`; by smallest item, the items in a random order
per run, each item's itemsets shuffled; the others pass whatever the partition) and each failing
one is merged until it passes; since merging never lowers a support (monotonicity of
k-anonymity [24]: R(P u Q) ⊇ R(P)), one pass leaves all of them k-anonymous.

k and sigma may vary with the level (k_l, sigma_l; gamma(sigma_l) draws at level l). The check
of line 10 is :func:`.gencheck.first_failure`. For speed the records are renumbered by
decreasing size (:func:`.data.by_decreasing_size`) and the sampler uses a pair index
(:mod:`.pairs`); neither changes what is computed.

Amplification A^(r): r independent runs (seeds drawn from ``random_state``), in separate
processes when r > 1 (forked, sharing the data); the run with the least err is returned
(Theorem 4).
"""

from __future__ import annotations

import contextvars
import multiprocessing
import numbers
import os
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field, replace

import numba
import numpy as np

from .._validation import check_k, check_random_state, check_runs
from ..errors import InputError, ParameterError
from . import gencheck
from .constraints import GeneralizationConstraints, partition_error
from .data import SetData, _transpose, by_decreasing_size, size_limits
from .enumeration import enumerate_distinct
from .levels import LevelReport
from .pairs import DEFAULT_BUDGET, build_pair_index, no_pair_index
from .passcache import PassCache
from .sample_size import sample_size_plan
from .sampling import proposal, sample_itemsets


@dataclass(frozen=True)
class Generalization:
    """A sigma-k^m-anonymous global recoding (Algorithm 2 / A^(r)).

    ``partition[i]`` is the part id (0..n_parts-1, numbered by first item) of item i of the
    constraints' item universe ``items``; ``data_partition`` the part of each item code of the
    data. ``merges`` lists, in order, the items of every part created by a merge (for replay).
    ``run_errors`` are the errors of all r runs; ``seed`` the seed of the returned run.
    ``earlier[m']`` is the result for a smaller m' asked for with ``also_m`` (same seeds).
    ``k``/``sigma`` are tuples (k_l)/(sigma_l) when they vary with the level. With a hierarchy,
    ``hierarchy`` (:class:`.cuts.HierarchyReport`) compares the greedy result with the best
    uniform level cut and says which is returned (then ``levels`` are those of the returned one).
    """

    items: np.ndarray
    partition: np.ndarray
    data_partition: np.ndarray
    err: float
    n_parts: int
    k: int | tuple
    m: int
    sigma: float | tuple
    levels: tuple
    merges: tuple = field(repr=False)
    run_errors: tuple
    seed: int
    earlier: dict = field(default_factory=dict, repr=False)
    hierarchy: object = field(default=None, repr=False)

    @property
    def satisfied(self) -> bool:
        return all(level.satisfied for level in self.levels)

    @property
    def fractions(self) -> dict:
        """l -> achieved fraction (see :class:`LevelReport`)."""
        return {level.l: level.fraction for level in self.levels}

    def mapping(self) -> dict:
        """Item label (str) -> part id."""
        return {str(lab): int(p) for lab, p in zip(self.items, self.partition)}


def complete_constraints(labels) -> GeneralizationConstraints:
    """No constraint: every pair of items adjacent (any partition permitted), err = NCP."""
    labels = np.array([str(x) for x in labels], dtype=object)
    n = len(labels)
    indptr = np.arange(n + 1, dtype=np.int64) * max(n - 1, 0)
    idx = np.arange(n, dtype=np.int32)
    indices = np.concatenate([np.delete(idx, i) for i in range(n)]) if n > 1 else np.empty(0, np.int32)
    return GeneralizationConstraints("adjacency", labels, indptr, indices)


def align_items(data: SetData, constraints: GeneralizationConstraints) -> np.ndarray:
    """Index in the constraints' items of every data item, or :class:`InputError` for an unknown one."""
    index = {str(lab): i for i, lab in enumerate(constraints.items)}
    align = np.empty(data.n_items, dtype=np.int64)
    for code, lab in enumerate(data.item_labels):
        j = index.get(str(lab))
        if j is None:
            raise InputError(f"item {str(lab)!r} of the data is not in the {constraints.kind} constraints")
        align[code] = j
    return align


@numba.njit(cache=True, nogil=True)
def _union_into(values, a0, a1, b0, b1, o):
    """Write the sorted union of the sorted spans values[a0:a1], values[b0:b1] at values[o:]
    (o >= a1, b1: past both spans); return the end. O(|A| + |B|)."""
    i, j = a0, b0
    while i < a1 and j < b1:
        x, y = values[i], values[j]
        if x < y:
            values[o] = x
            i += 1
        elif y < x:
            values[o] = y
            j += 1
        else:
            values[o] = x
            i += 1
            j += 1
        o += 1
    while i < a1:
        values[o] = values[i]
        i += 1
        o += 1
    while j < b1:
        values[o] = values[j]
        j += 1
        o += 1
    return o


@numba.njit(cache=True, nogil=True)
def _compact(values, first, last, live, out):
    """Copy the spans of the ``live`` parts contiguously into ``out`` (updating first/last)."""
    o = 0
    for p in live:
        n = last[p] - first[p]
        out[o:o + n] = values[first[p]:last[p]]
        first[p] = o
        o += n
        last[p] = o
    return o


class _RecordIndex:
    """R(P) for every part P, kept incrementally: an arena of int32 record lists, part p's
    sorted list at ``records[first[p]:last[p]]``. A merge appends the sorted union of the merged
    parts' lists (O(sum of their sizes)); the arena is compacted when full (amortised O(1) per
    appended entry). ``part_of_item`` maps each data item code to its part id."""

    def __init__(self, data, align, n):
        nnz = len(data.item_records)
        self.records = np.empty(2 * nnz + 16, dtype=np.int32)
        self.records[:nnz] = data.item_records
        self.used = nnz
        self.first = np.zeros(n, dtype=np.int64)
        self.last = np.zeros(n, dtype=np.int64)
        self.first[align] = data.item_indptr[:-1]
        self.last[align] = data.item_indptr[1:]
        self.part_of_item = align.astype(np.int32)
        self.n_data = np.zeros(n, dtype=np.int32)  # items of the data in each part
        self.n_data[align] = 1
        self.code_of = np.full(n, -1, dtype=np.int64)
        self.code_of[align] = np.arange(len(align))

    def args(self):
        return self.first, self.last, self.records, self.part_of_item, self.n_data

    def _reserve(self, size, live):
        if self.used + size <= len(self.records):
            return
        live = np.asarray(sorted(live), dtype=np.int64)
        need = int((self.last[live] - self.first[live]).sum()) + size
        out = np.empty(max(len(self.records), 2 * need), dtype=np.int32)
        self.used = int(_compact(self.records, self.first, self.last, live, out))
        self.records = out

    def merge(self, parts, items, live):
        """Parts ``parts`` (rep = parts[0]) become one holding constraint items ``items``."""
        rep = parts[0]
        self._reserve(int(sum(self.last[q] - self.first[q] for q in parts)), live)
        f, la, rec = self.first, self.last, self.records
        if len(parts) == 2:
            end = int(_union_into(rec, f[parts[0]], la[parts[0]], f[parts[1]], la[parts[1]], self.used))
        else:
            merged = np.unique(np.concatenate([rec[f[q]:la[q]] for q in parts]))
            end = self.used + len(merged)
            rec[self.used:end] = merged
        total = int(sum(self.n_data[q] for q in parts))
        for q in parts:
            f[q] = la[q] = 0
            self.n_data[q] = 0
        self.n_data[rep] = total
        f[rep], la[rep] = self.used, end
        self.used = end
        codes = self.code_of[items]
        self.part_of_item[codes[codes >= 0]] = rep


class _State:
    """Partition over the constraint items, the data's part index and the merge machinery."""

    def __init__(self, data, constraints, align, k, m, pairs=None, allow_root_merge=False):
        self.data = data
        self.cache = PassCache(m)
        self.pairs = no_pair_index() if pairs is None else pairs.arrays()
        self.scratch = (np.zeros(constraints.n_items, np.int64), np.zeros(constraints.n_items, np.int64),
                        np.zeros(2, np.int64), size_limits(data))
        self.start(constraints, align, data.item_counts, k, allow_root_merge)
        self.index = _RecordIndex(data, align, constraints.n_items)

    def start(self, constraints, align, item_counts, k, allow_root_merge) -> None:
        """The identity partition of the constraint items (line 4) and its merge machinery, from
        the data's item counts alone (the part index ``self.index`` is the caller's)."""
        self.c, self.align, self.k = constraints, align, k
        self.allow_root_merge = bool(allow_root_merge)
        n = constraints.n_items
        self.occ = np.bincount(align, weights=np.asarray(item_counts).astype(float), minlength=n)
        if self.occ.sum() <= 0:
            raise InputError("the data has no item occurrences")
        self.part = np.arange(n, dtype=np.int64)  # part id = a representative item
        self.members = {i: [i] for i in range(n)}
        self.merges = []
        self.hier = constraints.kind == "hierarchy"
        if self.hier:
            self.node = {i: i for i in range(n)}  # part id -> hierarchy node
            self.leaves = self._leaves_below()

    def _leaves_below(self):
        parent, n = self.c.parent, self.c.n_items
        below = [[] for _ in range(len(parent))]
        for leaf in range(n):
            v = leaf
            while v != -1:
                below[v].append(leaf)
                v = parent[v]
        return below

    @property
    def n_parts(self):
        return len(self.members)

    def set_k(self, k: int) -> None:
        """Use k for the checks from now on (per-level k_l); passes at another k are forgotten."""
        if k != self.k:
            self.k = k
            self.cache.reserve(0)
            self.cache.lens[:] = 0
            self.cache.size = 0

    def _ctx(self):
        first, last, records, part_of_item, n_data = self.index.args()
        return (first, last, records, part_of_item, n_data, self.data.record_indptr, self.data.record_items,
                self.pairs, *self.scratch)

    def proposal(self, l: int):
        """The sampler's proposal of level l (:func:`.sampling.proposal`)."""
        return proposal(self.data, l)

    def sample(self, l, n, rng, method, pairs, prop):
        """n draws of distinct l-itemsets of the original data, supports capped at k (line 8)."""
        return sample_itemsets(self.data, l, n, method=method, random_state=rng, pairs=pairs, prop=prop,
                               support_cap=self.k)

    def anonymous(self, items) -> bool:
        items = np.asarray(items, dtype=np.int32)
        return bool(gencheck.passes(self._ctx(), items, -1, self.k, np.empty(len(items), np.int32),
                                    np.empty(len(items), np.int32)))

    def first_failure(self, itemsets, supports, start: int) -> int:
        self.cache.reserve(len(itemsets) - start)
        fail, added = gencheck.first_failure(self._ctx(), itemsets, supports, self.k, start,
                                             self.cache.keys, self.cache.lens)
        self.cache.size += int(added)
        return int(fail)

    def count_anonymous(self, itemsets, supports, k: int) -> int:
        return int(gencheck.count_passing(self._ctx(), itemsets, supports, k))

    def _cost(self, items) -> float:
        """sum_{i in P} occ_i dist(i, P): the numerator of partition_error restricted to one part."""
        items = np.asarray(items, dtype=np.int64)
        c = self.c
        if c.centroids is None:
            return float(self.occ[items].sum() * (len(items) - 1) / max(c.n_items - 1, 1))
        w = c.areas[items] if c.areas is not None else np.ones(len(items))
        centre = (w[:, None] * c.centroids[items]).sum(0) / w.sum()
        return float(self.occ[items] @ np.hypot(*(c.centroids[items] - centre).T))

    def candidates(self, p):
        """Permitted neighbour generalizations at part p: lists of parts merged into one."""
        if self.hier:
            node, parent = self.node[p], self.c.parent
            v = parent[node]
            while v != -1 and len(self.leaves[v]) == len(self.members[p]):
                v = parent[v]
            if v == -1:  # p is a whole tree of the forest: parts never cross roots unless allowed,
                if self.allow_root_merge and self.n_parts > 1:  # then all parts merge into one
                    return [(sorted(self.members), -1)]
                return []
            return [(sorted({int(self.part[i]) for i in self.leaves[v]}), int(v))]
        nbrs = set()
        for i in self.members[p]:
            nbrs.update(int(self.part[j]) for j in self.c.neighbours(i))
        nbrs.discard(p)
        return [([min(p, q), max(p, q)], None) for q in sorted(nbrs)]

    def merge_for(self, items) -> bool:
        """Lines 13-14: merge to the least-error neighbour at an item of ``items``; False if none."""
        best = None
        for p in sorted({int(self.part[self.align[i]]) for i in np.asarray(items, dtype=np.int64)}):
            for parts, node in self.candidates(p):
                new = [i for q in parts for i in self.members[q]]
                delta = self._cost(new) - sum(self._cost(self.members[q]) for q in parts)
                key = (delta, parts)
                if best is None or key < best[0]:
                    best = (key, parts, node)
        if best is None:
            return False
        self.merge(best[1], best[2])
        return True

    def merge(self, parts, node) -> None:
        """Parts ``parts`` (sorted part ids) become one part (id parts[0]), at hierarchy ``node``."""
        rep = parts[0]
        new = sorted(i for q in parts for i in self.members[q])
        self.index.merge(parts, np.asarray(new, dtype=np.int64), self.members.keys())
        for q in parts:
            del self.members[q]
            if self.hier:
                del self.node[q]
        self.members[rep] = new
        self.part[new] = rep
        if self.hier:
            self.node[rep] = node
        self.merges.append(np.asarray(new, dtype=np.int64))

    def fix(self, items) -> tuple[bool, int]:
        """Merge until ``items`` is k-anonymous; (success, merges made)."""
        made = 0
        while not self.anonymous(items):
            if not self.merge_for(items):
                return False, made
            made += 1
        return True, made


def _sampled_level(state, l, gamma, rng, method, pairs):
    """Algorithm 2, lines 6-15, for one l: (the draws examined, their supports, merges, ok)."""
    draws, supports, streak, merges, ok = [], [], 0, 0, True
    batch = gamma + 1
    prop = state.proposal(l)
    while streak <= gamma and state.n_parts > 1:
        drawn = state.sample(l, batch, rng, method, pairs, prop)
        sample = drawn.itemsets
        pos, end = 0, len(sample)
        while pos < len(sample) and streak <= gamma:
            fail = state.first_failure(sample, drawn.supports, pos)
            if fail - pos > gamma - streak:  # gamma + 1 consecutive k-anonymous samples
                end = pos + gamma + 1 - streak
                streak = gamma + 1
                break
            streak += fail - pos
            if fail == len(sample):
                break
            fixed, made = state.fix(sample[fail])
            merges += made
            if not fixed:
                ok, end = False, fail + 1
                break
            streak, pos = 1, fail + 1  # S := {s}
        draws.append(sample[:end])
        supports.append(drawn.supports[:end])
        if not ok:
            break
    if not draws:
        return np.empty((0, l), np.int32), np.empty(0, np.int64), merges, ok
    return np.concatenate(draws), np.concatenate(supports), merges, ok


def _exact_level(state, l, rng):
    """Deterministic phase: every distinct l-itemset of support < k (the others pass whatever
    the partition) is merged until it passes. The itemsets are enumerated by their smallest
    item, the items taken in a random order and each item's itemsets shuffled, so that the
    memory stays that of one item's itemsets. Returns (merges, ok, number of distinct itemsets)."""
    merges, ok, total = 0, True, 0
    for a in rng.permutation(state.data.n_items):
        found = enumerate_distinct(state.data, l, max_support=state.k - 1, first=[a])
        total += found.n_distinct
        order = rng.permutation(len(found.supports))
        itemsets, supports = found.itemsets[order], found.supports[order]
        pos = 0
        while pos < len(itemsets):
            fail = state.first_failure(itemsets, supports, pos)
            if fail == len(itemsets):
                break
            fixed, made = state.fix(itemsets[fail])
            merges += made
            if not fixed:
                return merges, False, total
            pos = fail + 1
    return merges, ok, total


def _exact_failures(state, l, k) -> int:
    """Distinct l-itemsets that are not k-anonymous under the current partition (after an
    unsatisfied level)."""
    failed = 0
    for a in range(state.data.n_items):
        found = enumerate_distinct(state.data, l, max_support=k - 1, first=[a])
        failed += len(found.supports) - state.count_anonymous(found.itemsets, found.supports, k)
    return failed


def _run(data, constraints, align, plan, exact_upto, pairs, root_merge, seed, method, progress=None, also=()):
    """One run of Algorithm 2 with the per-level (sigma_l, k_l, gamma_l) of ``plan``:
    {m': (labels, err, levels, merges)} for m' = m and each m' in ``also`` (the state after
    level m', which is what a run with m = m' and this seed returns)."""
    state = _State(data, constraints, align, int(plan.k[0]), len(plan.levels), pairs, root_merge)
    return run_levels(state, int(data.record_sizes.max()), plan, exact_upto, pairs, seed, method, progress, also)


def run_levels(state, biggest, plan, exact_upto, pairs, seed, method, progress=None, also=()):
    """The levels l = 1..m of one run of Algorithm 2 on ``state`` (a :class:`_State`, or one
    whose records live elsewhere, e.g. sharded on a cluster), ``biggest`` the largest record size."""
    rng = np.random.default_rng(seed)
    m = len(plan.levels)
    raw, out = [], {}
    for l in range(1, m + 1):
        k_l, sigma_l, gamma = int(plan.k[l - 1]), float(plan.sigma[l - 1]), plan.gamma[l - 1]
        state.set_k(k_l)
        if l > biggest:
            raw.append((l, "empty", None, None, None, 0, 0, True, k_l, sigma_l))
        elif gamma is None or l <= exact_upto:
            merges, ok, total = _exact_level(state, l, rng)
            raw.append((l, "exact", None, None, None, total, merges, ok, k_l, sigma_l))
        else:
            checked, supports, merges, ok = _sampled_level(state, l, gamma, rng, method, pairs)
            raw.append((l, "sampled", gamma, checked, supports, len(checked), merges, ok, k_l, sigma_l))
        if l == m or l in also:
            out[l] = _snapshot(state, raw)
        if progress is not None:
            progress("levels", l, m)
    return out


def _snapshot(state, raw):
    """(labels, err, level reports, merges) of the current partition."""
    levels = []
    for l, how, g, checked, supports, total, merges, ok, k, sigma in raw:
        if total == 0:
            levels.append(LevelReport(l, how, g, 0, merges, 1.0, ok, k, sigma))
            continue
        # a satisfied level: every itemset examined passed or was merged until it did, and later
        # merges never lower a support, so all pass under the final partition; an exact level
        # examined only the itemsets of support < k, the others pass
        if ok:
            failed = 0
        elif how == "exact":
            failed = _exact_failures(state, l, k)
        else:
            failed = len(checked) - state.count_anonymous(checked, supports, k)
        levels.append(LevelReport(l, how, g, total, merges, 1.0 - failed / total, ok, k, sigma))
    _, labels = np.unique(state.part, return_inverse=True)
    err = partition_error(labels, state.occ, state.c)
    return labels.astype(np.int64), err, tuple(levels), tuple(state.merges)


def _check_m(m) -> int:
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, numbers.Integral) or m < 1:
        raise ParameterError(f"m must be an integer >= 1, got {m!r}")
    return int(m)


_SHARED = None  # the arguments of the runs, inherited by forked workers instead of pickled

#: when set (:func:`probanon.distributed.km.runs_on_dask`): ``runner(args, seeds, method, progress,
#: also)`` returns the results of ``_run(*args, seed, method, None, also)`` for the seeds, in order
#: (the r > 1 runs of A^(r) elsewhere than in local processes); ``progress("levels", done, r m)``
#: as runs finish (m levels each)
RUNS_RUNNER: contextvars.ContextVar = contextvars.ContextVar("km_runs_runner", default=None)


def _shared_run(seed, method, also):
    return _run(*_SHARED, seed, method, None, also)


def _parallel_runs(args, seeds, method, workers, progress=None, also=()):
    """The runs in ``workers`` processes. Forked workers share the data (copy-on-write);
    elsewhere the arguments are pickled to every task. ``progress("levels", done, r m)`` after
    each run (m levels each)."""
    global _SHARED
    fork = "fork" in multiprocessing.get_all_start_methods()
    _SHARED = args if fork else None
    try:
        context = multiprocessing.get_context("fork") if fork else None
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            futures = {(pool.submit(_shared_run, s, method, also) if fork
                        else pool.submit(_run, *args, s, method, None, also)): j for j, s in enumerate(seeds)}
            results, m = [None] * len(seeds), len(args[3].levels)
            for finished, done in enumerate(as_completed(futures), 1):
                results[futures[done]] = done.result()
                if progress is not None:
                    progress("levels", finished * m, len(seeds) * m)
            return results
    finally:
        _SHARED = None


def anonymize(data: SetData, k, m, sigma, constraints: GeneralizationConstraints | None = None,
              runs: int = 1, exact_upto: int = 0, method: str = "rejection", random_state=None,
              n_jobs: int | None = None, pair_budget: int = DEFAULT_BUDGET, progress=None,
              also_m=(), bound: str = "two-sided", allow_root_merge: bool = False) -> Generalization:
    """sigma-k^m-anonymity by A^(r) (Algorithm 2, Section V-B), see the module docstring.

    ``k`` and ``sigma`` are scalars or per-level vectors (k_l, sigma_l), l = 1..m (Algorithm 2
    draws gamma(sigma_l) samples at level l); ``bound`` is the sample-size bound of
    :func:`.sample_size.sample_size` ("two-sided", the paper's numbers, or "one-sided").

    ``constraints`` None permits any partition (err = NCP). ``exact_upto`` = L enumerates every
    l-itemset for l <= L (sigma = 1 there; sigma = 1 enumerates every level). ``runs`` = r runs,
    in up to ``n_jobs`` processes (default: min(r, CPUs)) when r > 1. ``pair_budget`` bounds the
    record lists of the pair index that speeds up sampling (:mod:`.pairs`; 4 bytes per entry,
    shared by the runs); 0 turns the index off. ``progress("levels", done, r m)``
    (:mod:`probanon.progress`), if given, is called as levels complete (per level for one run,
    per finished run otherwise).
    ``also_m`` (values 1 <= m' < m) adds, in ``result.earlier[m']``, the result for m' from the
    same runs: each run's partition after level m', the best of the r kept (what this function
    returns for m = m' and the same seed, at the cost of one run).

    A hierarchy is respected as given (:mod:`.cuts`): parts never cross its roots unless
    ``allow_root_merge`` (then the parts below different roots may merge into one, as under an
    implicit common root). Its uniform level cuts are certified by Theorem 1's test with failures allowed
    (:func:`.sample_size.certify`, which is Algorithm 2's test when no draw fails) and the best
    one certified is returned when its err is below the greedy's (or the greedy
    found no sigma-k^m-anonymous partition); ``result.hierarchy`` reports both. When neither
    satisfies sigma the greedy result is returned with ``satisfied`` False and
    ``result.hierarchy.failure()`` explains why.
    """
    if not isinstance(data, SetData):
        raise ParameterError("data must be a SetData (see probanon.setvalued.load_records)")
    m = _check_m(m)
    plan = sample_size_plan(sigma, k, m, bound)
    for k_l in plan.k:
        check_k(int(k_l), data.n_records)
    runs = check_runs(runs)
    if isinstance(exact_upto, (bool, np.bool_)) or not isinstance(exact_upto, numbers.Integral) or exact_upto < 0:
        raise ParameterError(f"exact_upto must be an integer >= 0, got {exact_upto!r}")
    if constraints is None:
        constraints = complete_constraints(data.item_labels)
    align = align_items(data, constraints)
    data = by_decreasing_size(data)  # same items, records renumbered: faster intersections
    rng = check_random_state(random_state)
    seeds = [int(s) for s in rng.integers(0, 2**63 - 1, size=runs)]
    if isinstance(pair_budget, (bool, np.bool_)) or not isinstance(pair_budget, numbers.Integral) or pair_budget < 0:
        raise ParameterError(f"pair_budget must be an integer >= 0, got {pair_budget!r}")
    also = tuple(sorted({_check_m(x) for x in also_m}))
    if any(x >= m for x in also):
        raise ParameterError(f"also_m must hold values below m = {m}, got {tuple(also_m)!r}")
    sampled = any(g is not None for g in plan.gamma[exact_upto:])
    pairs = build_pair_index(data, int(pair_budget)) if pair_budget and sampled else None
    hier = constraints.kind == "hierarchy"
    if not isinstance(allow_root_merge, (bool, np.bool_)):
        raise ParameterError(f"allow_root_merge must be True or False, got {allow_root_merge!r}")
    if allow_root_merge and not hier:
        raise ParameterError("allow_root_merge applies to hierarchy constraints only")
    args = (data, constraints, align, plan, int(exact_upto), pairs, bool(allow_root_merge) and hier)
    if runs == 1:
        results = [_run(*args, seeds[0], method, progress, also)]
    elif RUNS_RUNNER.get() is not None:
        results = RUNS_RUNNER.get()(args, seeds, method, progress, also)
    else:
        workers = min(runs, os.cpu_count() or 1) if n_jobs is None else int(n_jobs)
        results = _parallel_runs(args, seeds, method, max(1, workers), progress, also)
    found = {mm: _best(constraints, align, plan, mm, [r[mm] for r in results], seeds) for mm in also}
    result = _best(constraints, align, plan, m, [r[m] for r in results], seeds)
    if hier:
        from .cuts import check_cuts, keep_better

        checks, labels = check_cuts(data, constraints, align, plan, int(exact_upto), pairs, method, seeds[0],
                                    lambda k: _State(data, constraints, align, k, m, pairs))
        found = {mm: keep_better(g, checks, labels, constraints, align, allow_root_merge) for mm, g in found.items()}
        result = keep_better(result, checks, labels, constraints, align, allow_root_merge)
    return replace(result, earlier=found)


def _best(constraints, align, plan, m, results, seeds) -> Generalization:
    """A^(r): the first of the least-error runs. k and sigma: scalars when equal at every level."""
    errors = [r[1] for r in results]
    best = int(np.argmin(errors))
    labels, err, levels, merges = results[best]
    k = [int(x) for x in plan.k[:m]]
    sigma = [float(x) for x in plan.sigma[:m]]
    return Generalization(constraints.items, labels, labels[align], float(err), int(labels.max()) + 1,
                          k[0] if len(set(k)) == 1 else tuple(k), m,
                          sigma[0] if len(set(sigma)) == 1 else tuple(sigma), levels, merges,
                          tuple(float(e) for e in errors), seeds[best])


@numba.njit(cache=True)
def _released_csr(indptr, items, part, n_parts):
    """Distinct sorted part ids of every record (CSR)."""
    stamp = np.full(n_parts, -1, dtype=np.int64)
    out_indptr = np.zeros(len(indptr), dtype=np.int64)
    out = np.empty(len(items), dtype=np.int32)
    o = 0
    for u in range(len(indptr) - 1):
        start = o
        for j in range(indptr[u], indptr[u + 1]):
            q = part[items[j]]
            if stamp[q] != u:
                stamp[q] = u
                out[o] = q
                o += 1
        out[start:o].sort()
        out_indptr[u + 1] = o
    return out_indptr, out[:o].copy()


def release_data(data: SetData, result: Generalization) -> SetData:
    """<R, D> as :class:`SetData`: record u holds the (distinct, sorted) part ids of its items;
    item i of the release is part i (0..n_parts - 1)."""
    part = np.asarray(result.data_partition, dtype=np.int32)
    indptr, parts = _released_csr(data.record_indptr, data.record_items, part, result.n_parts)
    rec = np.repeat(np.arange(data.n_records, dtype=np.int32), np.diff(indptr))
    item_indptr, item_records = _transpose(rec, parts, result.n_parts)
    return SetData(indptr, parts, item_indptr, item_records, np.arange(result.n_parts), data.record_labels)


def release_records(data: SetData, result: Generalization) -> list[list[int]]:
    """<R, D> as lists: every record with its items replaced by their (distinct, sorted) part ids."""
    released = release_data(data, result)
    return [released.record(u).tolist() for u in range(released.n_records)]

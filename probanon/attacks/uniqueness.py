"""The uniqueness attack on a set-valued release (paper 5: probabilistic-km-anonymity.txt).

The release ``<R, D>`` replaces every item of every record by its part under a published global
recoding R (a partition of the items; with a hierarchy, a cut of it), records in a random order.
The intruder of paper 5 (Sec. III) knows m items of a person -- one m-itemset x of the person's
record -- and nothing else about them; it knows R (published with the release) and the release.
It generalizes what it knows, ``R(x) = {R(i) : i in x}``, and picks uniformly one of the released
records that contain every part of ``R(x)``; it succeeds when it picks the person's record (truth
from the private link file of ``probanon km anonymize --link``). With ``S(x) = supp(R(x), <R, D>)``
candidates, one attempt succeeds with probability ``1 / S(x)``.

Claimed bound. sigma-k^m-anonymity (Definition 1, with B_l uniform over the DISTINCT l-itemsets
occurring in D, Sec. IV) says ``Pr_{x ~ B_m}[S(x) >= k] >= sigma``. For x drawn from B_m the
success probability is ``E[1 / S(x)]``: at most ``1/k`` on the share f >= sigma of itemsets with
``S >= k`` and at most 1 on the rest, so

    Pr[success] <= f / k + (1 - f) <= sigma / k + (1 - sigma) = 1 - sigma (1 - 1/k),

the right side decreasing in f. With sigma = 1 this is the 1/k of deterministic k^m-anonymity.
Levels with their own k_l, sigma_l use those of level m; an intruder knowing more items than the
release's m has no claimed bound.

Two intruders (:data:`DRAWS`) differ in how the known itemset comes about:

* ``itemset``: x uniform over the distinct m-itemsets of D (B_m, exactly the law of Definition 1),
  the person uniform among the records holding x -- the intruder the bound is about;
* ``person``: the person uniform among the records with at least m items, x a uniform m-subset
  of their record (someone who learned m places of a random person). This weighs itemsets by how
  many people hold them, which Definition 1 does not; the same bound is shown beside it, and the
  guarantee's scope (:mod:`.scope`, ``"km"``) says it is not covered.

Every attempt draws afresh (the itemset or the person's items, the person, the pick), so for the
one release attacked the attempts are independent trials of its success probability, and the
Clopper-Pearson interval applies to them. (The ``person`` intruder attacks every eligible record
once per run by default: stratified trials, for which the interval is conservative.)
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import numba
import numpy as np

from .._validation import check_confidence, check_k, check_random_state, check_runs
from ..errors import InputError, ParameterError
from ..metrics.risk import reidentification_result
from ..progress import quiet
from .scope import guarantee
from .suite import AttackReport, with_bound

ITEMSET_KNOWS = ("m items of the person: an m-itemset drawn uniformly from the distinct m-itemsets of the "
                 "original data (Definition 1's B_m), the person uniform among its holders; the published "
                 "recoding; picks uniformly one released record containing the generalized itemset")
PERSON_KNOWS = ("m items of the person: a uniform m-subset of the record of a person drawn uniformly among "
                "those with at least m items; the published recoding; picks uniformly one released record "
                "containing the generalized itemset")
#: The intruders: name -> (rule shown in reports, what it knows and does).
DRAWS = {"itemset": ("uniqueness (itemset of B_m)", ITEMSET_KNOWS),
         "person": ("uniqueness (a person's items)", PERSON_KNOWS)}


# ---------------------------------------------------------------------------------------------
# kernels


@numba.njit(cache=True)
def _choose_items(record_indptr, record_items, targets, m, U, out):
    """A uniform m-subset of every target's record (Floyd's algorithm, uniforms ``U[t, :m]``)."""
    for t in range(targets.shape[0]):
        a = record_indptr[targets[t]]
        s = record_indptr[targets[t] + 1] - a
        for n, j in enumerate(range(s - m, s)):
            pos = min(int(U[t, n] * (j + 1)), j)
            for h in range(n):
                if out[t, h] == pos:
                    pos = j
                    break
            out[t, n] = pos
        for h in range(m):
            out[t, h] = record_items[a + out[t, h]]


@numba.njit(cache=True)
def _contains(values, lo, hi, v):
    q = lo + np.searchsorted(values[lo:hi], v)
    return q < hi and values[q] == v


@numba.njit(cache=True)
def _in_all(indptr, values, g, n, s, v):
    """Value v is in every list g[h] (h < n) but the walked one g[s]."""
    for h in range(n):
        if h != s and not _contains(values, indptr[g[h]], indptr[g[h] + 1], v):
            return False
    return True


@numba.njit(cache=True)
def _intersect_pick(indptr, values, code, items, U, counts, picks):
    """For every row t of ``items``: the lists ``code[items[t, j]]`` of the CSR (indptr, values),
    their intersection's size ``counts[t]`` and its member number ``floor(U[t] * count)`` in
    ``picks[t]`` (-1 when empty). A negative code is an empty list."""
    T, m = items.shape
    g = np.empty(m, dtype=np.int64)
    for t in range(T):
        n = 0
        empty = False
        for j in range(m):
            c = code[items[t, j]]
            if c < 0:
                empty = True
            dup = False
            for h in range(n):
                if g[h] == c:
                    dup = True
                    break
            if not dup:
                g[n] = c
                n += 1
        counts[t] = 0
        picks[t] = -1
        if empty:
            continue
        s = 0
        for h in range(1, n):
            if indptr[g[h] + 1] - indptr[g[h]] < indptr[g[s] + 1] - indptr[g[s]]:
                s = h
        a, b = indptr[g[s]], indptr[g[s] + 1]
        count = 0
        for p in range(a, b):
            count += _in_all(indptr, values, g, n, s, values[p])
        counts[t] = count
        if count == 0:
            continue
        want = min(int(U[t] * count), count - 1)
        seen = 0
        for p in range(a, b):
            if _in_all(indptr, values, g, n, s, values[p]):
                if seen == want:
                    picks[t] = values[p]
                    break
                seen += 1


def holders(data, items, code, U) -> tuple[np.ndarray, np.ndarray]:
    """Size of, and a uniform member (by ``U``) of, the records holding every list of each row."""
    items = np.ascontiguousarray(items, dtype=np.int64)
    counts = np.empty(items.shape[0], dtype=np.int64)
    picks = np.empty(items.shape[0], dtype=np.int64)
    _intersect_pick(data.item_indptr, data.item_records, code, items, U, counts, picks)
    return counts, picks


# ---------------------------------------------------------------------------------------------
# inputs


def _records(source, name: str):
    from ..setvalued.data import load_records

    try:
        return load_records(source)
    except InputError as exc:
        raise InputError(f"the {name} records: {exc}") from None


def _part_codes(data, released, partition) -> np.ndarray:
    """Released item code of every original item's part (the published recoding)."""
    if not isinstance(partition, Mapping) or not partition:
        raise InputError("the partition must map every item to its part id (a non-empty mapping)")
    part = {}
    for label, pid in partition.items():
        if isinstance(pid, (bool, np.bool_)) or not isinstance(pid, (int, np.integer)):
            raise InputError(f"the part of item {label!r} is not an integer part id ({pid!r})")
        part[str(label)] = int(pid)
    labels = [str(x) for x in released.item_labels]
    try:
        released_part = [int(x) for x in labels]
    except ValueError:
        raise InputError(f"the released items must be part ids (integers), found {labels[0]!r}") from None
    code_of_part = dict(zip(released_part, range(len(released_part))))
    codes = np.empty(data.n_items, dtype=np.int64)
    for i, label in enumerate(data.item_labels):
        pid = part.get(str(label))
        if pid is None:
            raise InputError(f"item {str(label)!r} of the original has no part in the partition")
        codes[i] = code_of_part.get(pid, -1)
    return codes


def _check_release(data, released, codes, truth) -> None:
    """Released record ``truth[u]`` must be original record u recoded (InputError otherwise)."""
    n = data.n_records
    u = np.repeat(np.arange(n, dtype=np.int64), data.record_sizes)
    width = np.int64(max(released.n_items, 1) + 1)
    orig = np.unique(u * width + codes[data.record_items] + 1)  # code -1 (part not released) -> 0
    owner = np.empty(n, dtype=np.int64)
    owner[truth] = np.arange(n)
    r = np.repeat(np.arange(n, dtype=np.int64), released.record_sizes)
    rel = np.sort(owner[r] * width + released.record_items + 1)
    if orig.shape == rel.shape and np.array_equal(orig, rel):
        return
    size = min(orig.size, rel.size)
    differ = np.flatnonzero(orig[:size] != rel[:size])
    first = int(differ[0]) if differ.size else size
    key = orig[first] if first < orig.size and (first >= rel.size or orig[first] < rel[first]) else rel[first]
    record = int(key // width)
    raise InputError(f"released record {int(truth[record]) + 1} is not original record {record + 1} recoded by the "
                     "partition (wrong link, partition or release file?)")


def _level_value(value, m: int, levels: int, name: str):
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) != levels:
            raise ParameterError(f"{name} has {len(value)} values for the release's {levels} levels")
        return value[m - 1]
    return value


def claimed_bound(m: int, k, sigma, levels: int) -> tuple[float | None, int | None, str]:
    """The bound ``1 - sigma_m (1 - 1/k_m)`` on an intruder knowing m items of a sigma-k^M-anonymous
    release (M = ``levels``), its k_m and the formula in words; (None, None, why) when m > M."""
    from ..setvalued.sample_size import check_sigma

    if m > levels:
        for name, value in (("k", k), ("sigma", sigma)):
            if isinstance(value, (list, tuple, np.ndarray)) and len(value) != levels:
                raise ParameterError(f"{name} has {len(value)} values for the release's {levels} levels")
        return None, None, f"none: the release claims itemsets of at most {levels} items"
    k_m = check_k(_level_value(k, m, levels, "k"), name="k")
    s_m = check_sigma(_level_value(sigma, m, levels, "sigma"))
    return 1.0 - s_m * (1.0 - 1.0 / k_m), k_m, f"1 - sigma (1 - 1/k), sigma = {s_m:g}, k = {k_m}"


# ---------------------------------------------------------------------------------------------
# the attack


def uniqueness_attack(original, released, partition, m: int, k, sigma, *, levels: int | None = None, link=None,
                      intruders=None, runs: int = 10, targets: int | None = None, confidence: float = 0.99,
                      random_state=None, progress=None) -> AttackReport:
    """Run the uniqueness intruders (:data:`DRAWS`) against a set-valued release.

    Parameters
    ----------
    original, released : SetData, path or iterable of records
        The original records and the release (items are part ids), same number of records.
    partition : mapping
        Item label -> part id: the published recoding (``partition`` of ``OUT.partition.json``).
    m : int
        Items the intruder knows (records with fewer are not targets).
    k, sigma : int / float, or one per level l = 1..levels
        The release's claim (sigma-k^m-anonymity); the bound uses level m (see the module docstring).
    levels : int, optional
        The release's m (levels claimed; default m, or the length of a per-level k or sigma).
    link : array of int, optional
        ``link[u]`` = released record of original record u (default: the same position).
    intruders : list of str, optional
        Subset of :data:`DRAWS` (default both).
    runs : int
        Independent runs of each intruder; the Clopper-Pearson interval pools them.
    targets : int, optional
        Attacks per run (default: the number of records with at least m items; the ``person``
        intruder then attacks each of them once per run).
    confidence : float
        Level of the intervals.
    random_state : None, int or Generator
        Same seed, same report.
    progress : callable, optional
        ``progress("runs", done, total)`` (:mod:`probanon.progress`): 0 once the inputs are
        checked, then after each run of each intruder.

    Returns
    -------
    AttackReport
        One :class:`~probanon.metrics.ReidentificationTest` per intruder, compared with the bound.
    """
    data, rel = _records(original, "original"), _records(released, "released")
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ParameterError(f"m must be an integer >= 1, got {m!r}")
    m = int(m)
    if levels is None:
        sized = [len(v) for v in (k, sigma) if isinstance(v, (list, tuple, np.ndarray))]
        levels = sized[0] if sized else m
    levels = check_runs(levels, name="levels")
    bound, k_m, formula = claimed_bound(m, k, sigma, levels)
    runs, confidence = check_runs(runs), check_confidence(confidence)
    names = list(DRAWS) if intruders is None else list(intruders)
    unknown = [i for i in names if i not in DRAWS]
    if unknown or not names:
        raise ParameterError(f"unknown intruder {unknown[0]!r} (use {', '.join(DRAWS)})" if unknown else
                             "name at least one intruder")
    rng = check_random_state(random_state)
    n = data.n_records
    if rel.n_records != n:
        raise InputError(f"the original has {n:,} records and the release {rel.n_records:,}")
    truth = np.arange(n, dtype=np.int64) if link is None else np.asarray(link)
    if truth.shape != (n,) or not np.issubdtype(truth.dtype, np.integer) or \
            not np.array_equal(np.sort(truth), np.arange(n)):
        raise InputError(f"link must give every original record its released record (a permutation of 0..{n - 1})")
    truth = truth.astype(np.int64)
    codes = _part_codes(data, rel, partition)
    _check_release(data, rel, codes, truth)
    eligible = np.flatnonzero(data.record_sizes >= m)
    if eligible.size == 0:
        raise ParameterError(f"no record has {m} items (the largest has {int(data.record_sizes.max())})")
    per_run = eligible.size if targets is None else check_runs(targets, name="targets")
    identity = np.arange(data.n_items, dtype=np.int64)
    progress = quiet if progress is None else progress
    done, total = 0, runs * len(names)
    progress("runs", done, total)
    results, formulas = [], []
    for name in names:
        successes, candidates = [], []
        for _ in range(runs):
            if name == "itemset":
                from ..setvalued.sampling import sample_itemsets

                items = sample_itemsets(data, m, per_run, random_state=rng).itemsets
                _, target = holders(data, items, identity, rng.random(per_run))
            else:
                target = eligible if targets is None else eligible[rng.integers(0, eligible.size, per_run)]
                items = np.empty((per_run, m), dtype=np.int64)
                _choose_items(data.record_indptr, data.record_items, target.astype(np.int64), m,
                              rng.random((per_run, m)), items)
            count, pick = holders(rel, items, codes, rng.random(per_run))
            successes.append(int(np.count_nonzero(pick == truth[target])))
            candidates.append(count)
            done += 1
            progress("runs", done, total)
        count = np.concatenate(candidates)
        parts = [f"{np.mean(count >= k_m):.1%} of the known itemsets had >= {k_m} candidate records"
                 if k_m is not None else None,
                 f"{np.mean(count == 1):.1%} exactly one (found for sure)",
                 f"mean 1/candidates {np.mean(1.0 / count):.4f} (the success chance given these draws)"]
        if name == "person" and eligible.size < n:
            short = n - eligible.size
            parts.append(f"{short:,} record{'s' if short > 1 else ''} with fewer than {m} items not targeted")
        rule, knows = DRAWS[name]
        result = reidentification_result(rule, [f"{m} items"], per_run, successes, None, confidence, knows=knows,
                                         note="; ".join(p for p in parts if p))
        results.append(with_bound(result, bound, k_m))
        formulas.append(formula)
    note = (f"candidates: the released records containing every part of the generalized known items "
            f"({data.n_items:,} items in {rel.n_items:,} released parts)")
    return AttackReport("km", k_m, bound, guarantee("km"), n, [f"{m} items"], [], note, tuple(results),
                       formulas=tuple(formulas))


def partition_file(path) -> dict:
    """The JSON written beside a release by ``probanon km anonymize`` (``OUT.partition.json``)."""
    try:
        spec = json.loads(Path(path).read_text())
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError:
        raise InputError(f"{path}: not JSON") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("partition"), dict):
        raise InputError(f"{path}: not a partition JSON ({{\"partition\": {{item: part}}, ...}})")
    return spec


def attack_km_files(original, released, *, partition=None, link=None, by_position: bool = False, m=None, k=None,
                    sigma=None, **options) -> AttackReport:
    """:func:`uniqueness_attack` on files: ``original`` and ``released`` records (FIMI or pairs),
    the partition JSON (default ``released + ".partition.json"``), whose recorded m, k and sigma
    are the claim unless given, and how the records match: the private ``link`` file of
    ``km anonymize --link`` or ``by_position`` (checked: record i of the release must be record i
    of the original recoded)."""
    from ..release import read_link

    if link is not None and by_position:
        raise InputError("give one of --link and --by-position, not both")
    if link is None and not by_position:
        raise InputError("say how the records of the two files match: --link FILE (written by 'km anonymize "
                         "--link') or --by-position (a release made with --keep-order)")
    spec = partition_file(partition or f"{released}.partition.json")
    levels = spec.get("m")
    if isinstance(levels, bool) or not isinstance(levels, int) or levels < 1:
        raise InputError(f"{partition or f'{released}.partition.json'} records no m (levels claimed)")
    m = levels if m is None else m
    k = spec.get("k") if k is None else k
    sigma = spec.get("sigma") if sigma is None else sigma
    if k is None or sigma is None:
        raise InputError("the partition JSON records no k or sigma; give -k and --sigma")
    data, rel = _records(original, "original"), _records(released, "released")
    position = None if by_position else read_link(link, data.n_records, rel.n_records)
    return uniqueness_attack(data, rel, spec["partition"], m, k, sigma, levels=levels, link=position, **options)

"""The linkage attack on released count tables (l-delta-diversity.txt, Secs. 2.3, 3 and 4.2).

An adversary holds t releases, each a count table ``n^(qbar_j)(s)`` over its own partition of
the QI domain into classes, and knows the quasi-identifiers q of a target who contributes to
every release (Assumption 1). With ``qbar_j`` the class of q in release j, the linked counts are
the per-class minimum (Sec. 2.3)

    n_[t]^(q)(s) = min_j n^(qbar_j)(s),

and the surviving sensitive values ``L_[t]^(q) = {(s, n_[t]^(q)(s)) : n_[t]^(q)(s) > 0}``; their
number is the l-diversity left after linkage. For plain l-diverse releases with ``|S| = L + 1``
the worst case over releases is (Proposition 3.1; NOTES.md Sec. 4: also when t does not divide L)

    l_[t] = max(1, L + 1 - t (L - l + 1)),

while releases of the (l, delta) mechanism (Algorithm 1) stay l-diverse after linking t of them
with probability >= 1 - t delta (Theorem 4.5), which :func:`linkage_monte_carlo` measures.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_confidence, check_k, check_random_state, check_runs
from ..errors import InputError, ParameterError
from .checks import sensitive_counts
from .distribution import JointDistribution, check_pmf


def _native(value):
    """A NumPy scalar as the Python scalar it holds (for JSON)."""
    return value.item() if isinstance(value, np.generic) else value


def _check_worst_case(L, l, t) -> tuple[int, int, int]:
    L = check_k(L, name="L")
    l = check_k(l, name="l")
    t = check_k(t, name="t")
    if l > L + 1:
        raise ParameterError(f"l = {l} is larger than the number of sensitive values |S| = L + 1 = {L + 1}")
    return L, l, t


def worst_case_linked_l(L: int, l: int, t: int) -> int:
    """Worst-case l-diversity after linking t plain l-diverse releases with ``|S| = L + 1``:
    ``l_[t] = max(1, L + 1 - t (L - l + 1))`` (Proposition 3.1, Eq. (1); NOTES.md Sec. 4).

    The value is the minimum, over all t releases whose target classes hold >= l distinct
    values including the target's own, of the number of values present in all t classes.
    """
    L, l, t = _check_worst_case(L, l, t)
    return max(1, L + 1 - t * (L - l + 1))


def worst_case_supports(L: int, l: int, t: int) -> list[frozenset]:
    """Supports (sets of sensitive values, within ``{0, ..., L}``, the target's value being 0)
    of t target classes, each of exactly l values, whose intersection has
    :func:`worst_case_linked_l` values.

    Release j misses the cyclic block of ``z = L - l + 1`` values starting at ``1 + (j z mod L)``
    among ``1..L``: the blocks are disjoint while ``t z <= L`` and cover ``1..L`` afterwards, so
    ``|intersection| = 1 + max(0, L - t z)``. This is the construction of Eq. (3) with the zeros,
    rather than the ones, laid out consecutively, which attains the bound for every t (Eq. (3)
    needs t to divide L).
    """
    L, l, t = _check_worst_case(L, l, t)
    z = L - l + 1
    supports = []
    for j in range(t):
        missing = {1 + (j * z + i) % L for i in range(z)}
        supports.append(frozenset({0} | (set(range(1, L + 1)) - missing)))
    return supports


def worst_case_releases(L: int, l: int, t: int) -> list[pd.DataFrame]:
    """The construction of :func:`worst_case_supports` as t l-diverse count tables (columns
    ``class``, ``sensitive``, ``count``; one class ``0`` holding each value of its support once).
    Linking them with :func:`linkage_attack` (target class 0 in each) leaves ``l_[t]`` values."""
    return [pd.DataFrame({"class": 0, "sensitive": sorted(s), "count": 1}) for s in worst_case_supports(L, l, t)]


def brute_force_linked_l(L: int, l: int, t: int) -> int:
    """``l_[t]`` of Eq. (1) by exhaustive search (small L): the fewest values common to t
    subsets of ``{0, ..., L}`` that each contain the target's value 0 and at least l values.

    The set of intersections reachable with j subsets is closed under intersecting with one
    more subset; it is computed on bit masks of ``{1, ..., L}`` (2^L of them) until t subsets
    or a fixed point (the full set is admissible, so the sets only grow).
    """
    L, l, t = _check_worst_case(L, l, t)
    if L > 16:
        raise ParameterError(f"brute force is for small L (<= 16), got L = {L}")
    masks = np.arange(1 << L, dtype=np.int64)
    weight = np.zeros(1 << L, dtype=np.int64)
    for bit in range(L):
        weight += (masks >> bit) & 1
    family = masks[weight >= l - 1]
    reachable = np.zeros(1 << L, dtype=bool)
    reachable[family] = True
    for _ in range(t - 1):
        current = np.flatnonzero(reachable)
        grown = np.zeros_like(reachable)
        grown[(current[:, None] & family[None, :]).ravel()] = True
        if (grown == reachable).all():
            break
        reachable = grown
    return 1 + int(weight[reachable].min())


@dataclass(frozen=True)
class LinkageResult:
    """What linking t releases on one target reveals (Sec. 2.3).

    Attributes
    ----------
    releases : int
        t.
    target_classes : tuple
        The target's class in each release.
    l_releases : tuple of int
        Distinct sensitive values in the target's class of each release.
    surviving : tuple of (value, count)
        Sensitive values with ``n_[t](s) = min_j n^(qbar_j)(s) > 0``, sorted by value, with that
        minimum count.
    l_linked : int
        ``len(surviving)``: the target's l-diversity after linkage.
    worst_case_l : int
        :func:`worst_case_linked_l` for these releases: ``L + 1`` = values present in some
        target class, ``l = min(l_releases)``; no t releases so diverse can leave fewer.
    """

    releases: int
    target_classes: tuple
    l_releases: tuple
    surviving: tuple
    l_linked: int
    worst_case_l: int

    def to_dict(self) -> dict:
        """Plain-Python, JSON-serialisable copy."""
        return {
            "releases": self.releases,
            "target_classes": [_native(c) for c in self.target_classes],
            "l_releases": list(self.l_releases),
            "surviving": [{"sensitive": _native(s), "count": int(n)} for s, n in self.surviving],
            "l_linked": self.l_linked, "worst_case_l": self.worst_case_l,
        }


def _lookup(mapping, key, j: int):
    try:
        if isinstance(mapping, pd.Series):
            return mapping.loc[key]
        if isinstance(mapping, dict):
            return mapping[key]
        if isinstance(key, (bool, np.bool_)) or not isinstance(key, numbers.Integral) or key < 0:
            raise KeyError(key)
        return np.asarray(mapping)[int(key)]
    except (KeyError, IndexError, TypeError):
        raise InputError(f"the target's QI value {key!r} is not in class_of of release {j + 1}") from None


def _target_classes(t: int, target, class_of) -> list:
    if class_of is None:
        if isinstance(target, (str, bytes)) or np.ndim(target) != 1:
            raise InputError("target must give the target's class in each release (one per release)")
        classes = list(target)
        if len(classes) != t:
            raise InputError(f"target gives {len(classes)} classes for {t} releases")
        return classes
    single = isinstance(class_of, (dict, pd.Series)) or (isinstance(class_of, np.ndarray) and class_of.ndim == 1)
    mappings = [class_of] * t if single else list(class_of)
    if len(mappings) != t:
        raise InputError(f"class_of gives {len(mappings)} mappings for {t} releases")
    return [_lookup(m, target, j) for j, m in enumerate(mappings)]


def linkage_attack(releases, target, class_of=None) -> LinkageResult:
    """Link t released count tables on a target and report the surviving sensitive values.

    Parameters
    ----------
    releases : sequence of DataFrame
        t >= 1 count tables with columns ``class``, ``sensitive``, ``count`` (each with its
        own classes).
    target
        Without ``class_of``: the target's class label in each release (a sequence of t labels).
        With ``class_of``: the target's QI value.
    class_of : mapping or sequence of mappings, optional
        QI value -> class label of each release (a dict, a Series indexed by QI value, or a 1-D
        array indexed by QI position): one mapping for all releases (releases of one mechanism
        share its classes) or a list of t mappings, one per release.

    Returns
    -------
    LinkageResult
        ``n_[t](s) = min_j n^(qbar_j)(s)`` over the target's classes (Sec. 2.3).
    """
    if isinstance(releases, pd.DataFrame) or not hasattr(releases, "__len__") or len(releases) == 0:
        raise InputError("releases must be a non-empty sequence of count tables")
    tables = [sensitive_counts(r) if isinstance(r, pd.DataFrame) else None for r in releases]
    if any(tab is None for tab in tables):
        raise InputError("every release must be a count table (DataFrame with class, sensitive, count)")
    t = len(tables)
    classes = _target_classes(t, target, class_of)
    rows = []
    for j, (tab, cls) in enumerate(zip(tables, classes, strict=True)):
        if cls not in tab.index:
            raise InputError(f"release {j + 1} has no class {_native(cls)!r}")
        row = tab.loc[cls]
        if row.sum() == 0:
            raise InputError(f"release {j + 1} has no record in class {_native(cls)!r} (the target cannot be in it)")
        rows.append(row[row > 0])
    linked = pd.concat(rows, axis=1, join="inner").min(axis=1)
    try:
        linked = linked.sort_index()
    except TypeError:
        pass
    union = set().union(*(set(r.index) for r in rows))
    l_releases = tuple(len(r) for r in rows)
    worst = worst_case_linked_l(len(union) - 1, min(l_releases), t) if len(union) > 1 else 1
    return LinkageResult(
        releases=t, target_classes=tuple(classes), l_releases=l_releases,
        surviving=tuple((s, int(n)) for s, n in linked.items()), l_linked=len(linked),
        worst_case_l=worst,
    )


@dataclass(frozen=True)
class LinkageMonteCarlo:
    """Failure rates of l-diversity in releases drawn from a joint pmf, alone and linked.

    Attributes
    ----------
    n_samples, l, t, runs, classes : int
        Records per release N, the l checked, releases linked per run, runs, classes.
    release_failures, release_trials : int
        Releases that are not l-diverse (a non-empty class with < l distinct values,
        Definition 2.1) among ``runs * t`` independent releases.
    linked_failures, linked_trials : int
        Runs whose t linked releases (per-class minimum of counts; classes non-empty in every
        release) leave a class with < l distinct values, among ``runs``.
    release_rate, linked_rate : float
        ``failures / trials``.
    release_interval, linked_interval : tuple of float
        Two-sided Clopper-Pearson intervals at ``confidence`` (``scipy.stats.binomtest``,
        ``method="exact"``).
    delta : float or None
        With delta: ``release_exceeds = release_interval[0] > delta`` and
        ``linked_exceeds = linked_interval[0] > t delta`` (a significant violation of
        Theorem 4.4 / 4.5).
    """

    n_samples: int
    l: int
    t: int
    runs: int
    classes: int
    release_failures: int
    release_trials: int
    release_rate: float
    release_interval: tuple
    linked_failures: int
    linked_trials: int
    linked_rate: float
    linked_interval: tuple
    confidence: float
    delta: float | None
    release_exceeds: bool | None
    linked_exceeds: bool | None

    def to_dict(self) -> dict:
        """Plain-Python, JSON-serialisable copy."""
        out = dict(self.__dict__)
        out["release_interval"] = [float(v) for v in self.release_interval]
        out["linked_interval"] = [float(v) for v in self.linked_interval]
        return out


def _check_delta(delta) -> float | None:
    if delta is None:
        return None
    if isinstance(delta, (bool, np.bool_)) or not isinstance(delta, numbers.Real) or not 0 < delta < 1:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
    return float(delta)


def _interval(failures: int, trials: int, confidence: float) -> tuple:
    ci = stats.binomtest(failures, trials).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


#: runs of one seeded batch of :func:`linkage_monte_carlo` (one task on a Dask cluster), whatever the workers
RUNS_PER_BATCH = 250
#: counts drawn at once within a batch (memory bound)
MAX_DRAW_ELEMENTS = 4_000_000


def _linkage_batch(pvals: np.ndarray, n_samples: int, l: int, t: int, classes: int, runs: int,
                   seed: np.random.SeedSequence) -> tuple[int, int]:
    """One seeded batch of :func:`linkage_monte_carlo`: ``runs`` runs drawn from
    ``default_rng(seed)``; the failing releases and the failing linked runs."""
    rng = np.random.default_rng(seed)
    S = pvals.size // classes
    release_failures = linked_failures = 0
    chunk = max(1, MAX_DRAW_ELEMENTS // (t * pvals.size))
    for start in range(0, runs, chunk):
        size = min(chunk, runs - start)
        counts = rng.multinomial(n_samples, pvals, size=(size, t)).reshape(size, t, classes, S)
        nonempty = counts.sum(axis=3) > 0
        distinct = (counts > 0).sum(axis=3)
        release_failures += int((nonempty & (distinct < l)).any(axis=2).sum())
        linked_distinct = (counts.min(axis=1) > 0).sum(axis=2)
        linked_failures += int((nonempty.all(axis=1) & (linked_distinct < l)).any(axis=1).sum())
    return release_failures, linked_failures


def linkage_monte_carlo(pmf, class_of, n_samples: int, l: int, t: int = 2, runs: int = 1000,
                        delta=None, confidence: float = 0.99, random_state=None, runner=None,
                        progress=None) -> LinkageMonteCarlo:
    """Monte Carlo of Algorithm 1's releases: draw t independent samples of N records from the
    joint pmf, publish counts per (class, sensitive), check l-diversity of each release and of
    the t releases linked by per-class minimum (Theorems 4.4 and 4.5: failure probabilities
    <= delta and <= t delta when N = ceil(ln(m l / delta) / ln(1/(1-p)))).

    The counts of a release are drawn directly as a multinomial over the merged cells
    ``P(qbar, s) = sum_{q in qbar} P(q, s)``, which is the law of the class counts of N i.i.d.
    records (sums of multinomial cells are multinomial).

    Parameters
    ----------
    pmf : array_like, shape (|Q|, |S|), or JointDistribution
        Joint pmf P(q, s) (checked by :func:`probanon.diversity.distribution.check_pmf`).
    class_of : array_like, shape (|Q|,)
        Class label of each QI value.
    n_samples : int
        N, records per release.
    l : int
        l-diversity checked (1 <= l <= |S|).
    t : int
        Releases linked per run.
    runs : int
        Independent runs.
    delta : float, optional
        Failure bound to compare with (``t delta`` after linkage).
    confidence : float
        Level of the Clopper-Pearson intervals.
    random_state : None, int or numpy Generator
        The runs are seeded batches of :data:`RUNS_PER_BATCH` runs, batch b drawn from
        ``default_rng(SeedSequence(seed).spawn(batches)[b])``; their failure counts are summed.
    runner : callable, optional
        Where the seeded batches run (:mod:`probanon.montecarlo`; None: here;
        ``probanon.distributed.batches_on_dask(client)``: as tasks of a Dask cluster): the same result.
    progress : callable, optional
        ``progress("batches", done, total)`` over the batches.

    Returns
    -------
    LinkageMonteCarlo
    """
    from ..montecarlo import seeded_totals

    P = pmf.probabilities if isinstance(pmf, JointDistribution) else check_pmf(pmf, "the pmf")
    labels = np.asarray(class_of)
    if labels.ndim != 1 or labels.shape[0] != P.shape[0]:
        raise InputError(f"class_of must give one class per QI value ({P.shape[0]}), got shape {labels.shape}")
    codes, uniques = pd.factorize(pd.Series(labels))
    if (codes < 0).any():
        raise InputError(f"class_of has a missing class (QI value {int(np.argmax(codes < 0))})")
    n_samples = check_runs(n_samples, name="n_samples")
    l = check_k(l, name="l")
    if l > P.shape[1]:
        raise ParameterError(f"l = {l} is larger than the number of sensitive values ({P.shape[1]})")
    t = check_runs(t, name="t")
    runs = check_runs(runs)
    delta = _check_delta(delta)
    confidence = check_confidence(confidence)
    rng = check_random_state(random_state)

    R, S = len(uniques), P.shape[1]
    merged = np.zeros((R, S))
    np.add.at(merged, codes, P)
    pvals = merged.ravel() / merged.sum()
    release_failures, linked_failures = seeded_totals(_linkage_batch, runs, RUNS_PER_BATCH, rng,
                                                      fixed=(n_samples, l, t, R), shared=(pvals,), runner=runner,
                                                      progress=progress)
    release_trials = runs * t
    release_interval = _interval(release_failures, release_trials, confidence)
    linked_interval = _interval(linked_failures, runs, confidence)
    return LinkageMonteCarlo(
        n_samples=n_samples, l=l, t=t, runs=runs, classes=R,
        release_failures=release_failures, release_trials=release_trials,
        release_rate=release_failures / release_trials, release_interval=release_interval,
        linked_failures=linked_failures, linked_trials=runs,
        linked_rate=linked_failures / runs, linked_interval=linked_interval,
        confidence=confidence, delta=delta,
        release_exceeds=None if delta is None else bool(release_interval[0] > delta),
        linked_exceeds=None if delta is None else bool(linked_interval[0] > t * delta),
    )


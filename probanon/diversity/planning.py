"""Planning the (l, delta)-diversity mechanism (l-delta-diversity.txt, Sec. 4; NOTES.md Sec. 4).

A central agency that knows the joint pmf ``P(q, s)`` fixes a threshold ``p in (0, p_l]``
(``p_l``: the l-th largest value of ``P_S``), partitions the ordered QI domain into equivalence
classes ``qbar`` that are *admissible*,

    |{s : P(qbar, s) >= p}| >= l                               (Algorithm 1, step 3),

and broadcasts the number of samples

    N = ceil( ln(m l / delta) / ln(1 / (1 - p)) )               (Algorithm 1, step 4)

with ``m = min(|Q|, 1/(l p), sum_{i>=l} p_i / p)`` (Lemma 4.3, ``m >= |Qbar|``) or the real
class count ``|Qbar|`` (the proof of Theorem 4.4 only needs ``m >= |Qbar|``). Each dataset of
N i.i.d. records is then l-diverse with probability >= 1 - delta (Theorem 4.4), and t datasets
released with the same classes, linked on a person's QI, stay l-diverse with probability
>= 1 - t delta (Theorem 4.5).

Partitions (contiguous in the QI order):

* :func:`greedy_generalize` -- Greedy-Generalize (Algorithm 2, corrected as in NOTES.md): scan
  the ordered QI values, close a class as soon as it is admissible, merge an inadmissible tail
  into the last class. It returns the largest number of classes of any admissible contiguous
  partition (Proposition 4.6).
* :func:`generalize_independent` -- Generalize-Ind (Algorithm 3) for ``P = P_Q x P_S``: equal
  blocks of ``T = ceil(|Q| p / (theta p_l))`` QI values, ``theta = |Q| min_q P_Q(q)``, the
  remainder joining the last block: ``floor(|Q| / T)`` classes. The paper's
  ``T = |Q| / floor(theta p_l / p)`` need not be an integer; Lemma 4.7's argument only needs
  every block to hold at least ``|Q| p / (theta p_l)`` values, and rounding that up directly
  gives at least as many classes as rounding ``|Q| / floor(theta p_l / p)`` up. Lemma 4.7's
  count ``floor(theta p_l / p)`` (and Corollary 4.8's ``floor(p_l / p)``) holds when T divides
  |Q|; otherwise fewer classes may be possible at all (|Q| = 10 uniform, p = p_l / 4: four
  classes would need 2.5 QI values each, so the optimum is 3).

Comparisons. ``P(qbar, s) >= p`` is decided on compensated (Neumaier) sums with the documented
relative tolerance ``RTOL = 1e-9``: a class holds s when ``P(qbar, s) >= (p + eps)(1 - RTOL)``.
The tolerance absorbs the rounding of the inputs themselves (|Q| = 3000 uniform has
``P(q, s) = 1/150000``, not a binary fraction: sixty of them summed in floating point fall short
of ``p = 0.02/50`` and a plain float greedy finds 49 classes instead of 50, NOTES.md). Pmfs are
checked to sum to 1 within 1e-9, so no real difference in mass is that small relative to p.
Every p that the chooser and the Pareto front report is the bottleneck of its partition or a
value at which the partition is admissible, so re-planning at a reported p reproduces its class
count.

Estimated pmfs: with a total-variation margin eps (:mod:`.distribution`) the threshold is
``p + eps`` on the estimate and the tail sum of Lemma 4.3 becomes ``sum_{i>=l} p^_i + eps``
(the true top-(l-1) mass is at least the estimate's minus eps).

Choosing p (:func:`plan_diversity`): given ``p``, ``beta`` (``p = beta (p_l - eps)``, as in
Sec. 5), or ``budget`` -- the largest number of classes subject to ``N <= budget``, then the
largest p (fewest samples) that keeps that many classes; with none of them, the most classes
and, among plans with that many, the fewest samples. :func:`pareto_front` lists every class
count R with the largest p that reaches it: the exact trade-off between classes and samples.
The breakpoints are class masses ``P(qbar, s)`` of contiguous classes (the finite candidate set
of Sec. 4.3), found by bisection on the floating-point numbers between known breakpoints.
"""

from __future__ import annotations

import json
import math
import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_k
from ..errors import InputError, ParameterError, SpecificationError
from ._greedy_kernel import class_sums_kernel, greedy_kernel
from .distribution import (
    SUM_TOLERANCE,
    JointDistribution,
    distribution_from_array,
    value_key,
)

RTOL = 1e-9
_ONE_MINUS_RTOL = 1.0 - RTOL
METHODS = ("greedy", "independent")
M_RULES = ("bound", "classes")
_TINY = float(np.finfo(np.float64).tiny)
_SWEEP_STEPS = 4


# ---------------------------------------------------------------------------------------
# parameter checks


def check_l(l, n_sensitive: int | None = None) -> int:
    """l as an int with 1 <= l <= |S|."""
    l = check_k(l, name="l")
    if n_sensitive is not None and l > n_sensitive:
        raise ParameterError(f"l = {l} is larger than the number of sensitive values |S| = {n_sensitive}")
    return l


def check_delta(delta) -> float:
    """delta as a float in the open interval (0, 1)."""
    if (isinstance(delta, (bool, np.bool_)) or not isinstance(delta, numbers.Real)
            or not (0.0 < float(delta) < 1.0)):
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}")
    return float(delta)


def check_datasets(t) -> int:
    """The number t >= 1 of linked releases."""
    if isinstance(t, (bool, np.bool_)) or not isinstance(t, numbers.Integral) or t < 1:
        raise ParameterError(f"the number of datasets t must be a positive integer, got {t!r}")
    return int(t)


def _check_p(p, name: str = "p") -> float:
    if (isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real) or not math.isfinite(p)
            or not (0.0 < float(p) <= 1.0)):
        raise ParameterError(f"{name} must be in (0, 1], got {p!r}")
    return float(p)


def _distribution(distribution) -> JointDistribution:
    if isinstance(distribution, JointDistribution):
        return distribution
    if isinstance(distribution, pd.DataFrame):
        raise InputError("a distribution table must be converted with distribution_from_frame first")
    return distribution_from_array(distribution)


def _positive_l(dist: JointDistribution, l) -> int:
    l = check_l(l, dist.n_sensitive)
    positive = int((dist.probabilities > 0).any(axis=0).sum())  # P_S(s) > 0, without the kernel
    if positive < l:
        raise ParameterError(f"only {positive} sensitive values have positive probability, fewer than l = {l}")
    return l


# ---------------------------------------------------------------------------------------
# formulas


def class_bound(p: float, l: int, sensitive_marginal, n_qi: int, margin: float = 0.0) -> float:
    """``m = min(|Q|, 1/(l p), (sum_{i>=l} p_i + eps) / p)`` (Lemma 4.3: ``|Qbar| <= m``).

    ``p_i`` is the i-th largest value of ``P_S``; eps the total-variation margin of an estimate.
    """
    p = _check_p(p)
    ps = np.sort(np.asarray(sensitive_marginal, dtype=np.float64))[::-1]
    l = check_l(l, ps.size)
    tail = math.fsum(ps[l - 1:]) + margin
    return float(min(float(n_qi), 1.0 / (l * p), tail / p))


def sample_size(p: float, l: int, delta: float, m: float) -> float:
    """``N = ln(m l / delta) / ln(1 / (1 - p))`` before rounding up (Algorithm 1, step 4;
    Theorem 4.4: ``Pr[not l-diverse] <= m l (1 - p)^N = delta``). p = 1 gives 0."""
    p = _check_p(p)
    l = check_l(l)
    delta = check_delta(delta)
    if not (isinstance(m, numbers.Real) and math.isfinite(m) and m >= 1):
        raise ParameterError(f"m must be a number >= 1, got {m!r}")
    if p == 1.0:
        return 0.0
    return math.log(m * l / delta) / -math.log1p(-p)


def n_samples_from(exact: float) -> int:
    """The integer number of samples: ``max(1, ceil(N))``."""
    if not math.isfinite(exact):
        raise ParameterError("the number of samples N is not finite (p is too small)")
    return max(1, math.ceil(exact))


def delta_after_linkage(delta: float, t: int = 1) -> float:
    """The failure probability after linking t releases of one plan: ``min(1, t delta)``
    (Theorem 4.5, a union bound over the t datasets; 1 means no guarantee)."""
    return min(1.0, check_datasets(t) * check_delta(delta))


# ---------------------------------------------------------------------------------------
# partitions


@dataclass(frozen=True, eq=False)
class Generalization:
    """A contiguous partition of the ordered QI domain into equivalence classes.

    ``labels[i]`` is the class of the i-th QI value (0..n_classes-1, non-decreasing);
    ``bottleneck`` the smallest, over the classes, l-th largest ``P(qbar, s)``: the partition is
    admissible for every threshold up to it. ``n_classes = 0`` means not even the whole domain
    is admissible at ``threshold``.
    """

    labels: np.ndarray
    n_classes: int
    bottleneck: float
    threshold: float


def _cut(threshold: float) -> float:
    return threshold * _ONE_MINUS_RTOL


def greedy_generalize(distribution, l: int, p: float) -> Generalization:
    """Greedy-Generalize (Algorithm 2, corrected, NOTES.md Sec. 4) at threshold ``p + eps``.

    Scan ``q_1 < q_2 < ...``; add ``q_i`` to the open class; close the class as soon as
    ``|{s : P(qbar, s) >= p + eps}| >= l``; at the end, an inadmissible open tail joins the last
    class (the paper's loop condition ``i < |Q|`` skips the last value and ``j`` is advanced past
    an empty class). Optimal among contiguous admissible partitions (Proposition 4.6).
    O(|Q| |S|).
    """
    dist = _distribution(distribution)
    l = _positive_l(dist, l)
    threshold = _check_p(p) + dist.margin
    return _greedy(dist.probabilities, l, threshold)


def _greedy(P: np.ndarray, l: int, threshold: float) -> Generalization:
    labels, R, bottleneck = greedy_kernel(P, _cut(threshold), l)
    return Generalization(labels, int(R), float(bottleneck), threshold)


def class_masses(distribution, labels) -> np.ndarray:
    """``P(qbar, s) = sum_{q in qbar} P(q, s)`` for every class (rows) and sensitive value."""
    dist = _distribution(distribution)
    labels = np.asarray(labels, dtype=np.int64)
    if labels.shape != (dist.n_qi,) or (labels.size and labels.min() < 0):
        raise InputError("labels must give a class id >= 0 for every QI value")
    return class_sums_kernel(dist.probabilities, labels, int(labels.max()) + 1)


def _lth_largest_rows(sums: np.ndarray, l: int) -> np.ndarray:
    return np.sort(sums, axis=1)[:, sums.shape[1] - l]


def check_independent(distribution) -> None:
    """Raise :class:`ParameterError` unless ``P(q, s) = P_Q(q) P_S(s)`` within 1e-9."""
    dist = _distribution(distribution)
    P = dist.probabilities
    deviation = float(np.abs(P - np.outer(P.sum(axis=1), P.sum(axis=0))).max())
    if deviation > SUM_TOLERANCE:
        raise ParameterError(f"Generalize-Ind needs independent QI and sensitive values; "
                             f"max |P(q,s) - P_Q(q) P_S(s)| = {deviation:.3g} (use the greedy method)")


def generalize_independent(distribution, l: int, p: float) -> Generalization:
    """Generalize-Ind (Algorithm 3) for ``P = P_Q x P_S`` at threshold ``p + eps``.

    Blocks of ``T = ceil(|Q| (p + eps) / (theta p_l))`` consecutive QI values with
    ``theta = |Q| min_q P_Q(q)`` (Lemma 4.7: a block of T values has
    ``P(qbar, s) >= T theta / |Q| p_s >= p + eps`` for the l most likely s; the tolerance RTOL
    applies to the ratio), the remainder joining the last block. Should rounding leave a block
    inadmissible, T grows until every block is admissible.
    """
    dist = _distribution(distribution)
    l = _positive_l(dist, l)
    check_independent(dist)
    return _independent(dist, l, _check_p(p) + dist.margin)


def _independent(dist: JointDistribution, l: int, threshold: float) -> Generalization:
    P = dist.probabilities
    n_q = dist.n_qi
    theta = n_q * float(dist.qi_marginal.min())
    if theta <= 0:
        raise ParameterError("Generalize-Ind needs every QI value to have positive probability")
    ratio = theta * dist.p_l(l) / _cut(threshold)
    T = max(1, math.ceil(n_q / ratio)) if ratio > 0 else n_q + 1
    while T <= n_q:
        labels = np.minimum(np.arange(n_q) // T, n_q // T - 1).astype(np.int64)
        sums = class_sums_kernel(P, labels, n_q // T)
        lam = _lth_largest_rows(sums, l)
        if (lam >= _cut(threshold)).all():
            return Generalization(labels, int(n_q // T), float(lam.min()), threshold)
        T += 1
    return Generalization(np.zeros(n_q, np.int64), 0, 0.0, threshold)


# ---------------------------------------------------------------------------------------
# searching p


def _bits(x: float) -> int:
    return int(np.float64(x).view(np.int64))


def _from_bits(b: int) -> float:
    return float(np.int64(b).view(np.float64))


def _up(x: float) -> float:
    return float(np.nextafter(x, np.inf))


def _down(x: float) -> float:
    return float(np.nextafter(x, -np.inf))


class _Search:
    """Class counts R(p) of one method on one distribution, with a cache of (R, bottleneck)
    by p. R(p) is non-increasing in p for both methods. ``progress("partitions", tried, None)``
    after each partition."""

    def __init__(self, dist: JointDistribution, l: int, method: str, progress=None):
        self.dist, self.l, self.method, self.progress = dist, l, method, progress
        self.cache: dict[float, tuple[int, float]] = {}
        self.tried = 0

    def partition(self, p: float) -> Generalization:
        threshold = p + self.dist.margin
        if self.method == "greedy":
            g = _greedy(self.dist.probabilities, self.l, threshold)
        else:
            g = _independent(self.dist, self.l, threshold)
        self.cache[p] = (g.n_classes, g.bottleneck)
        self.tried += 1
        if self.progress is not None:
            self.progress("partitions", self.tried, None)
        return g

    def count(self, p: float) -> tuple[int, float]:
        if p not in self.cache:
            self.partition(p)
        return self.cache[p]

    def p_for_mass(self, v: float) -> float:
        """The largest p with ``(p + eps)(1 - RTOL) <= v`` (0 when there is none), by bisection
        on the floating-point numbers (p + eps rounds, so stepping p by ulps could stall)."""
        eps = self.dist.margin

        def holds(x: float) -> bool:
            return _cut(x + eps) <= v

        if not holds(_TINY):
            return 0.0
        x = max(v / _ONE_MINUS_RTOL - eps, _TINY)
        lo, hi = (x, 2 * x) if holds(x) else (_TINY, x)
        while holds(hi):
            lo, hi = hi, 2 * hi
        while _bits(hi) - _bits(lo) > 1:
            mid = _from_bits((_bits(lo) + _bits(hi)) // 2)
            lo, hi = (mid, hi) if holds(mid) else (lo, mid)
        return lo

    def top(self) -> float:
        """The largest p with at least one class (about p_l - eps); 0 when there is none."""
        whole = self.dist.sensitive_marginal
        x = self.p_for_mass(float(np.sort(whole)[whole.size - self.l]))
        if x <= 0 or self.count(_TINY)[0] == 0:
            return 0.0
        if self.count(x)[0] >= 1:
            lo, hi = x, 2 * x
            while self.count(hi)[0] >= 1:
                lo, hi = hi, 2 * hi
        else:
            lo, hi = _TINY, x
        return self.last_p(1, lo, hi)

    def snap(self, p: float) -> float:
        """The bottleneck of the partition at p, as a threshold (``bottleneck - eps``), when it
        is below p: the same partition, admissible without the tolerance."""
        q = self.count(p)[1] - self.dist.margin
        return q if 0.0 < q < p else p

    def _jump(self, p: float, R: int) -> float:
        """A p' >= p with R(p') >= R, from the bottleneck of the partition at p (greedy only:
        its partition stays admissible up to the bottleneck and greedy is optimal)."""
        if self.method != "greedy":
            return p
        _, bottleneck = self.count(p)
        return max(p, self.p_for_mass(bottleneck))

    def last_p(self, R: int, lo: float, hi: float) -> float:
        """The largest p in [lo, hi) with R(p) >= R, given R(lo) >= R > R(hi)."""
        for p, (r, _) in self.cache.items():  # tighten the bracket with what is known
            if r >= R and p > lo:
                lo = p
            elif r < R and p < hi:
                hi = p
        steps = 0
        while True:
            jumped = self._jump(lo, R)
            if jumped < hi:
                lo = jumped
            if _bits(hi) - _bits(lo) <= 1:
                return lo
            probe = _up(lo) if steps < _SWEEP_STEPS else _from_bits((_bits(lo) + _bits(hi)) // 2)
            steps += 1
            if self.count(probe)[0] >= R:
                lo = probe
            else:
                hi = probe

    def first_p(self, predicate, lo: float, hi: float) -> float:
        """The smallest p in (lo, hi] with ``predicate(p)``, given not predicate(lo), predicate(hi)
        and a monotone predicate."""
        while _bits(hi) - _bits(lo) > 1:
            mid = _from_bits((_bits(lo) + _bits(hi)) // 2)
            if predicate(mid):
                hi = mid
            else:
                lo = mid
        return hi


def _m(p: float, R: int, l: int, dist: JointDistribution, m_rule: str) -> float:
    if m_rule == "classes":
        return float(R)
    return class_bound(p, l, dist.sensitive_marginal, dist.n_qi, dist.margin)


def _n_exact(p: float, R: int, l: int, delta: float, dist: JointDistribution, m_rule: str) -> float:
    return sample_size(p, l, delta, _m(p, R, l, dist, m_rule))


def _check_choice(method: str, m_rule: str) -> None:
    if method not in METHODS:
        raise ParameterError(f"unknown method {method!r} (use one of {', '.join(METHODS)})")
    if m_rule not in M_RULES:
        raise ParameterError(f"unknown m rule {m_rule!r} (use one of {', '.join(M_RULES)})")


def _prepare(distribution, l, delta, method, m_rule):
    """The checked arguments; no numerical kernel runs here (see :func:`_start`)."""
    dist = _distribution(distribution)
    l = _positive_l(dist, l)
    delta = check_delta(delta)
    _check_choice(method, m_rule)
    if method == "independent":
        check_independent(dist)
    return dist, l, delta


def _start(dist: JointDistribution, l: int, method: str, progress, stage: str):
    """``progress(stage, 0, None)`` (the checks passed, the kernels start), then the search and its
    largest threshold; ``stage`` "partitions": the search reports each partition it tries."""
    if progress is not None:
        progress(stage, 0, None)
    search = _Search(dist, l, method, progress if stage == "partitions" else None)
    top = search.top()
    if top <= 0:
        raise ParameterError(f"no admissible threshold: the margin eps = {dist.margin:g} is not smaller than "
                             f"p_l = {dist.p_l(l):.6g}")
    return search, top


def pareto_front(distribution, l: int, delta: float, *, method: str = "greedy",
                 m_rule: str = "bound", progress=None) -> pd.DataFrame:
    """The trade-off between the number of classes R and the number of samples N.

    One row per achievable class count R (decreasing): the largest p whose partition has R
    classes (so the fewest samples for R classes), ``m`` and N (``n_samples_exact`` before
    rounding up). A row whose rounded N is not below that of the row before (fewer classes for
    the same N) is left out, so every row is Pareto-optimal. Costs O(log) partitions per row.
    ``progress``: None or a callback ``progress("class counts", passed, R)``
    (:mod:`probanon.progress`), called with 0 once the arguments are checked (before the kernels
    run or compile), then with the class counts passed of the first row's R (known after the
    first partition).
    """
    dist, l, delta = _prepare(distribution, l, delta, method, m_rule)
    search, top = _start(dist, l, method, progress, "class counts")
    hi_all = _up(top)
    rows = []
    p = _TINY
    R_before = R_first = None
    while p <= top:
        R = search.count(p)[0]
        R_first = R if R_first is None else R_first
        if progress is not None and R_before is not None:
            progress("class counts", R_first - R, R_first)
        R_before = R
        p_last = search.last_p(R, p, hi_all)
        p_R = search.snap(p_last)
        exact = _n_exact(p_R, R, l, delta, dist, m_rule)
        if math.isfinite(exact) and (not rows or n_samples_from(exact) < rows[-1]["n_samples"]):
            N = n_samples_from(exact)
            rows.append({"classes": R, "p": p_R, "n_samples": N, "n_samples_exact": exact,
                         "m": _m(p_R, R, l, dist, m_rule)})
        p = _up(p_last)
    if progress is not None and R_before is not None:
        progress("class counts", R_first, R_first)
    return pd.DataFrame(rows, columns=["classes", "p", "n_samples", "n_samples_exact", "m"])


def plan_diversity(distribution, l: int, delta: float, *, t: int = 1, p: float | None = None,
                   beta: float | None = None, budget: int | None = None, method: str = "greedy",
                   m_rule: str = "bound", progress=None) -> DiversityPlan:
    """Plan the mechanism: classes, threshold p and number of samples N (Algorithm 1).

    At most one of ``p`` (the threshold itself), ``beta`` (``p = beta (p_l - eps)``, beta in
    (0, 1]) and ``budget`` (the most classes with ``N <= budget``, then the largest p keeping
    them) may be given; with none, the plan has the most classes and, for them, the fewest
    samples. ``t`` is the number of releases that may be linked (Theorem 4.5). ``method`` is
    ``"greedy"`` (Algorithm 2) or ``"independent"`` (Algorithm 3, P = P_Q x P_S); ``m_rule``
    ``"bound"`` (Lemma 4.3) or ``"classes"`` (the real class count). ``progress``: None or a
    callback ``progress("partitions", tried, None)`` (:mod:`probanon.progress`), called with 0
    once the arguments are checked (before the kernels run or compile), then after each
    partition tried (their number is not known ahead).
    """
    given = [name for name, v in (("p", p), ("beta", beta), ("budget", budget)) if v is not None]
    if len(given) > 1:
        raise ParameterError(f"give at most one of p, beta and budget (got {' and '.join(given)})")
    t = check_datasets(t)
    dist, l, delta = _prepare(distribution, l, delta, method, m_rule)
    if p is not None:
        p = _check_p(p)
    if beta is not None and (isinstance(beta, (bool, np.bool_)) or not isinstance(beta, numbers.Real)
                             or not (0.0 < float(beta) <= 1.0)):
        raise ParameterError(f"beta must be in (0, 1], got {beta!r}")
    if budget is not None and (isinstance(budget, (bool, np.bool_)) or not isinstance(budget, numbers.Integral)
                               or budget < 1):
        raise ParameterError(f"budget must be a positive integer, got {budget!r}")
    search, top = _start(dist, l, method, progress, "partitions")
    hi_all = _up(top)
    if p is not None:
        if p > top:
            raise ParameterError(f"p = {p!r} is above the largest admissible threshold p_l - eps = {top:.6g}")
    elif beta is not None:
        p = float(beta) * (dist.p_l(l) - dist.margin)
        p = min(p, top)
    elif budget is not None:

        def within(x: float) -> bool:  # ceil(N) <= budget <=> N <= budget (budget an integer)
            R = search.count(x)[0] if m_rule == "classes" else 0  # the bound needs no partition
            return _n_exact(x, R, l, delta, dist, m_rule) <= budget

        if not within(top):
            need = n_samples_from(_n_exact(top, search.count(top)[0], l, delta, dist, m_rule))
            raise ParameterError(f"budget {budget} is too small: even the largest threshold needs N = {need}")
        p_min = _TINY if within(_TINY) else search.first_p(within, _TINY, top)
        p = search.last_p(search.count(p_min)[0], p_min, hi_all)
        snapped = search.snap(p)
        p = snapped if within(snapped) else p
    else:
        p = search.snap(search.last_p(search.count(_TINY)[0], _TINY, hi_all))
    part = search.partition(p)
    if part.n_classes == 0:  # pragma: no cover - p <= top guarantees a class
        raise ParameterError(f"no admissible partition at p = {p!r}")
    exact = _n_exact(p, part.n_classes, l, delta, dist, m_rule)
    return DiversityPlan(
        l=l, delta=delta, t=t, p=p, margin=dist.margin, p_l=dist.p_l(l), method=method, m_rule=m_rule,
        m=_m(p, part.n_classes, l, dist, m_rule), n_samples=n_samples_from(exact), n_samples_exact=exact,
        delta_after_linkage=delta_after_linkage(delta, t), bottleneck=part.bottleneck,
        class_of=part.labels, qi_keys=tuple(dist.qi_keys()), qi_columns=tuple(dist.qi_columns),
        sensitive_column=dist.sensitive_column,
        sensitive_values=tuple(value_key(s) for s in dist.sensitive_values),
    )


# ---------------------------------------------------------------------------------------
# the plan


PLAN_FORMAT = "probanon.diversity-plan/1"
_FIELDS = ("l", "delta", "t", "p", "margin", "p_l", "method", "m_rule", "m", "n_samples",
           "n_samples_exact", "delta_after_linkage", "bottleneck", "qi_columns", "sensitive_column",
           "sensitive_values")


@dataclass(frozen=True, eq=False)
class DiversityPlan:
    """What the central agency broadcasts (Algorithm 1, step 4): the classes, the threshold p
    and the number of samples N, with the guarantee (l, delta) per release and
    (l, delta_after_linkage) for t linked releases.

    ``class_of[i]`` is the class of the i-th QI value ``qi_keys[i]`` (multi-column values joined
    by ``|``); ``bottleneck`` is the smallest l-th largest class mass ``P(qbar, s)`` (>= p + eps
    up to RTOL).
    """

    l: int
    delta: float
    t: int
    p: float
    margin: float
    p_l: float
    method: str
    m_rule: str
    m: float
    n_samples: int
    n_samples_exact: float
    delta_after_linkage: float
    bottleneck: float
    class_of: np.ndarray
    qi_keys: tuple
    qi_columns: tuple
    sensitive_column: str
    sensitive_values: tuple

    @property
    def classes(self) -> int:
        """The number of equivalence classes |Qbar|."""
        return int(self.class_of.max()) + 1

    def class_mapping(self) -> dict:
        """QI key -> class id, in the planning order."""
        return dict(zip(self.qi_keys, (int(c) for c in self.class_of)))

    def to_dict(self) -> dict:
        out = {"format": PLAN_FORMAT}
        for name in _FIELDS[:3]:
            out[name] = getattr(self, name)
        out["p"] = self.p
        out["classes"] = self.classes
        for name in _FIELDS[4:]:
            value = getattr(self, name)
            out[name] = list(value) if isinstance(value, tuple) else value
        out["class_of"] = self.class_mapping()
        return out

    def to_json(self, indent=None) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False)

    @classmethod
    def from_dict(cls, data) -> DiversityPlan:
        """Rebuild and check a plan; any missing, ill-typed or inconsistent entry raises
        :class:`SpecificationError` (one line)."""
        if not isinstance(data, dict):
            raise SpecificationError("a diversity plan must be a JSON object")
        if data.get("format") != PLAN_FORMAT:
            raise SpecificationError(f"not a diversity plan (format {data.get('format')!r}, expected {PLAN_FORMAT!r})")
        missing = [k for k in _FIELDS + ("classes", "class_of") if k not in data]
        if missing:
            raise SpecificationError(f"the plan has no {missing[0]!r}")
        try:
            plan = _plan_from(data)
        except (TypeError, ValueError, ParameterError) as exc:
            raise SpecificationError(f"the plan is invalid: {str(exc).splitlines()[0]}") from None
        _check_consistent(plan, data)
        return plan

    @classmethod
    def from_json(cls, text_or_path) -> DiversityPlan:
        from .._validation import read_json_document

        return cls.from_dict(read_json_document(text_or_path, "the diversity plan"))


def _real(data, name) -> float:
    v = data[name]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"{name} must be a finite number")
    return float(v)


def _integer(data, name) -> int:
    v = data[name]
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"{name} must be an integer")
    return v


def _texts(data, name) -> tuple:
    v = data[name]
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError(f"{name} must be a list of texts")
    return tuple(v)


def _plan_from(data) -> DiversityPlan:
    class_of = data["class_of"]
    if not isinstance(class_of, dict) or not class_of:
        raise ValueError("class_of must be a non-empty object")
    ids = list(class_of.values())
    if not all(isinstance(c, int) and not isinstance(c, bool) for c in ids):
        raise ValueError("class ids must be integers")
    if not isinstance(data["method"], str) or not isinstance(data["m_rule"], str):
        raise TypeError("method and m_rule must be texts")
    _check_choice(data["method"], data["m_rule"])
    if not isinstance(data["sensitive_column"], str):
        raise TypeError("sensitive_column must be a text")
    return DiversityPlan(
        l=check_l(_integer(data, "l")), delta=check_delta(_real(data, "delta")),
        t=check_datasets(_integer(data, "t")), p=_check_p(_real(data, "p")), margin=_real(data, "margin"),
        p_l=_real(data, "p_l"), method=data["method"], m_rule=data["m_rule"], m=_real(data, "m"),
        n_samples=_integer(data, "n_samples"), n_samples_exact=_real(data, "n_samples_exact"),
        delta_after_linkage=_real(data, "delta_after_linkage"), bottleneck=_real(data, "bottleneck"),
        class_of=np.asarray(ids, dtype=np.int64), qi_keys=tuple(class_of.keys()),
        qi_columns=_texts(data, "qi_columns"), sensitive_column=data["sensitive_column"],
        sensitive_values=_texts(data, "sensitive_values"),
    )


def _check_consistent(plan: DiversityPlan, data: dict) -> None:
    ids = plan.class_of
    if ids[0] != 0 or (np.diff(ids) < 0).any() or (np.diff(ids) > 1).any():
        raise SpecificationError("class ids must start at 0 and increase by steps of at most 1 in QI order "
                                 "(contiguous classes)")
    if data["classes"] != plan.classes:
        raise SpecificationError(f"the plan says {data['classes']!r} classes but class_of has {plan.classes}")
    if plan.l > len(plan.sensitive_values):
        raise SpecificationError(f"l = {plan.l} exceeds the {len(plan.sensitive_values)} sensitive values")
    if len(set(plan.sensitive_values)) != len(plan.sensitive_values):
        raise SpecificationError("a sensitive value is listed twice")
    if not 0.0 <= plan.margin < 1.0:
        raise SpecificationError(f"margin must be in [0, 1), got {plan.margin!r}")
    if plan.m_rule == "classes" and plan.m != plan.classes:
        raise SpecificationError(f"m = {plan.m!r} but the m rule 'classes' needs m = {plan.classes}")
    if plan.m_rule == "bound" and not (plan.classes <= plan.m * (1 + RTOL) and plan.m <= len(plan.qi_keys)):
        raise SpecificationError(f"m = {plan.m!r} is not a bound on the {plan.classes} classes (Lemma 4.3)")
    try:
        exact = sample_size(plan.p, plan.l, plan.delta, plan.m)
    except ParameterError as exc:
        raise SpecificationError(f"the plan is invalid: {exc}") from None
    if abs(exact - plan.n_samples_exact) > 1e-9 * max(1.0, exact) or plan.n_samples != n_samples_from(exact):
        raise SpecificationError(f"n_samples = {plan.n_samples} does not follow from p, l, delta and m "
                                 f"(N = {exact:.6f})")
    if plan.delta_after_linkage != delta_after_linkage(plan.delta, plan.t):
        raise SpecificationError(f"delta_after_linkage = {plan.delta_after_linkage!r} is not min(1, t delta)")
    if plan.p + plan.margin > plan.p_l / _ONE_MINUS_RTOL:
        raise SpecificationError(f"p + margin = {plan.p + plan.margin!r} exceeds p_l = {plan.p_l!r}")

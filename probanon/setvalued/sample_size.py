"""Sample sizes of paper 5: gamma(sigma) (Theorem 1, Algorithm 2 line 3) and uniqueness (Section VI-A).

gamma(sigma): the fewest samples |S| such that "all of S is k-anonymous" certifies
Pr[H_k < eps] >= 1 - delta with (1 - eps)(1 - delta) = sigma (condition (1)).

* two-sided (default; the bound that gives the paper's numbers, NOTES §5):
      minimise ln(2/delta) / (2 eps^2)  s.t. (1 - eps)(1 - delta) = sigma.
  The KKT condition gives x = delta as the root in (0, 1 - sigma) of
      x^2 + 2 x sigma ln(x/2) + (sigma - 2) x - sigma + 1 = 0
  (x = 1 is a spurious root), eps = 1 - sigma/(1 - x), gamma = ceil(ln(2/x) / (2 eps^2)):
  45,845 at sigma = .99 and 5,866,617 at .999.
* one-sided (Theorem 1, condition 3, as printed): the root of
      x^2 + 2 x sigma ln(x) + (sigma - 2) x - sigma + 1 = 0,
  gamma = ceil(ln(1/x)/2 * (1 - sigma/(1 - x))^-2).

sigma = 1 needs every itemset checked (exact enumeration): gamma is None.

Uniqueness (Section VI-A): the fraction of l-itemsets with support 1 is estimated from
n uniform samples within +-eps with probability >= 1 - delta when
n >= ln(2/delta) / (2 eps^2) (two-sided Hoeffding): 26,492 at eps = delta = .01.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq

from .._validation import check_k
from ..errors import ParameterError

BOUNDS = ("two-sided", "one-sided")


@dataclass(frozen=True)
class SampleSize:
    """gamma(sigma) with the (eps, delta) split achieving it; gamma is None when sigma = 1."""

    sigma: float
    gamma: int | None
    epsilon: float
    delta: float
    bound: str


@dataclass(frozen=True)
class SampleSizePlan:
    """Per-level plan for l = 1..m: sigma_l, k_l and gamma_l (None where sigma_l = 1: enumerate)."""

    levels: np.ndarray
    sigma: np.ndarray
    k: np.ndarray
    gamma: list
    bound: str


@dataclass(frozen=True)
class UniquenessEstimate:
    """Estimated fraction of distinct l-itemsets with support 1, with its Hoeffding interval.

    The interval [lower, upper] = fraction -+ eps, eps = sqrt(ln(2/delta) / (2 n)),
    holds with probability >= 1 - delta.
    """

    l: int
    n_samples: int
    n_unique: int
    fraction: float
    lower: float
    upper: float
    epsilon: float
    delta: float


def check_sigma(sigma, name: str = "sigma") -> float:
    """Return sigma as a float in (0, 1] or raise :class:`ParameterError`."""
    if (isinstance(sigma, (bool, np.bool_)) or not isinstance(sigma, numbers.Real)
            or not (0.0 < float(sigma) <= 1.0)):
        raise ParameterError(f"{name} must be in (0, 1], got {sigma!r}")
    return float(sigma)


def _check_open_unit(value, name: str) -> float:
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real)
            or not (0.0 < float(value) < 1.0)):
        raise ParameterError(f"{name} must be in (0, 1), got {value!r}")
    return float(value)


def sample_size(sigma, bound: str = "two-sided") -> SampleSize:
    """gamma(sigma) of Theorem 1 (see the module docstring for both bounds)."""
    sigma = check_sigma(sigma)
    if bound not in BOUNDS:
        raise ParameterError(f"unknown bound {bound!r} (use {' or '.join(BOUNDS)})")
    if sigma == 1.0:
        return SampleSize(sigma, None, 0.0, 0.0, bound)
    shift = math.log(2.0) if bound == "two-sided" else 0.0

    def kkt(x):
        return x * x + 2.0 * x * sigma * (math.log(x) - shift) + (sigma - 2.0) * x - sigma + 1.0

    x = brentq(kkt, 1e-300, 1.0 - sigma, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    eps = 1.0 - sigma / (1.0 - x)
    gamma = (math.log(2.0 / x) if bound == "two-sided" else math.log(1.0 / x)) / (2.0 * eps * eps)
    return SampleSize(sigma, math.ceil(gamma - 1e-9), eps, x, bound)


def sample_size_plan(sigma, k, m: int | None = None, bound: str = "two-sided") -> SampleSizePlan:
    """gamma_l for l = 1..m from per-level vectors (sigma_l, k_l); scalars are broadcast.

    ``m`` is taken from the vectors when omitted; every vector must have length m.
    """
    sig = np.atleast_1d(np.asarray(sigma, dtype=object))
    kk = np.atleast_1d(np.asarray(k, dtype=object))
    if sig.ndim != 1 or kk.ndim != 1:
        raise ParameterError("sigma and k must be scalars or 1-D vectors")
    lengths = {len(v) for v in (sig, kk) if len(v) != 1}
    if m is None:
        if len(lengths) > 1:
            raise ParameterError(f"sigma and k vectors have different lengths {sorted(lengths)}")
        m = lengths.pop() if lengths else 1
    if isinstance(m, (bool, np.bool_)) or not isinstance(m, numbers.Integral) or m < 1:
        raise ParameterError(f"m must be an integer >= 1, got {m!r}")
    m = int(m)
    for name, v in (("sigma", sig), ("k", kk)):
        if len(v) not in (1, m):
            raise ParameterError(f"{name} has {len(v)} values for m = {m} levels")
    sig = np.asarray([check_sigma(s, "sigma") for s in np.broadcast_to(sig, (m,))], dtype=np.float64)
    kk = np.asarray([check_k(x) for x in np.broadcast_to(kk, (m,))], dtype=np.int64)
    gammas = [sample_size(s, bound).gamma for s in sig]
    return SampleSizePlan(np.arange(1, m + 1), sig, kk, gammas, bound)


def uniqueness_sample_size(epsilon: float = 0.01, delta: float = 0.01) -> int:
    """n = ceil(ln(2/delta) / (2 eps^2)) (two-sided Hoeffding, Section VI-A): 26,492 at .01/.01."""
    epsilon = _check_open_unit(epsilon, "epsilon")
    delta = _check_open_unit(delta, "delta")
    return math.ceil(math.log(2.0 / delta) / (2.0 * epsilon * epsilon) - 1e-9)


def uniqueness_from_supports(supports, l: int, delta: float = 0.01) -> UniquenessEstimate:
    """Fraction of supports equal to 1 in a uniform sample of l-itemsets, with the
    Hoeffding interval fraction -+ sqrt(ln(2/delta) / (2 n)) clipped to [0, 1]."""
    s = np.asarray(supports)
    delta = _check_open_unit(delta, "delta")
    if s.ndim != 1 or len(s) == 0:
        raise ParameterError("the sample of supports is empty")
    n = len(s)
    unique = int(np.count_nonzero(s == 1))
    frac = unique / n
    eps = math.sqrt(math.log(2.0 / delta) / (2.0 * n))
    return UniquenessEstimate(int(l), n, unique, frac, max(0.0, frac - eps), min(1.0, frac + eps), eps, delta)


def estimate_uniqueness(data, l: int, epsilon: float = 0.01, delta: float = 0.01,
                        n_samples: int | None = None, method: str = "rejection",
                        random_state=None, pairs=None) -> UniquenessEstimate:
    """Estimate the uniqueness of l-itemsets (Section VI-A): |{x : supp(x) = 1}| / |Omega^l|
    from ``n_samples`` uniform samples (default: :func:`uniqueness_sample_size`); ``pairs``: a
    :func:`.pairs.build_pair_index` of ``data`` to speed up the sampler."""
    from .sampling import sample_itemsets

    if n_samples is None:
        n_samples = uniqueness_sample_size(epsilon, delta)
    sample = sample_itemsets(data, l, n_samples, method=method, random_state=random_state, pairs=pairs,
                             support_cap=2)
    return uniqueness_from_supports(sample.supports, l, delta)


@dataclass(frozen=True)
class Certificate:
    """The tolerant test of Theorem 1 on ``n`` i.i.d. uniform draws of which ``failures`` were not
    k-anonymous: ``lower`` = (1 - failures/n - epsilon)(1 - delta) bounds the fraction of
    k-anonymous l-itemsets as condition (1) does, and ``certified`` says lower >= sigma."""

    sigma: float
    n: int
    failures: int
    fraction: float
    epsilon: float
    delta: float
    lower: float
    certified: bool
    bound: str


def _hoeffding_epsilon(n: int, delta: float, bound: str) -> float:
    """eps(n) = sqrt(ln(c/delta) / (2n)), c = 2 (two-sided) or 1 (one-sided): Theorem 1's proof."""
    return math.sqrt(math.log((2.0 if bound == "two-sided" else 1.0) / delta) / (2.0 * n))


def certify(failures, n, sigma, bound: str = "two-sided") -> Certificate:
    """Theorem 1 with failures tolerated: n uniform draws of l-itemsets, ``failures`` of them not
    k-anonymous, H-hat = failures/n. Hoeffding (the proof of Theorem 1) gives, with probability
    >= 1 - delta, H_k < H-hat + eps with

        eps = sqrt(ln(2/delta) / (2n))   (two-sided; ln(1/delta) for the one-sided bound),

    so the fraction is certified >= sigma when, as condition (1),

        lower = (1 - H-hat - eps)(1 - delta) >= sigma,

    with delta the delta of gamma(sigma) (:func:`sample_size`, same ``bound``). With no failure
    this is Theorem 1's test: n = gamma(sigma) is the least n certified, and one failure among
    Algorithm 2's gamma + 1 draws is rejected. sigma = 1 is a :class:`ParameterError` (it needs
    every itemset checked)."""
    size = sample_size(sigma, bound)
    if size.gamma is None:
        raise ParameterError("sigma = 1 is certified by enumerating every itemset, not by sampling")
    for name, v in (("n", n), ("failures", failures)):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral) or v < 0:
            raise ParameterError(f"{name} must be an integer >= 0, got {v!r}")
    n, failures = int(n), int(failures)
    if n < 1 or failures > n:
        raise ParameterError(f"need 0 <= failures <= n and n >= 1, got {failures} of {n}")
    eps = _hoeffding_epsilon(n, size.delta, bound)
    fraction = 1.0 - failures / n
    lower = (fraction - eps) * (1.0 - size.delta)
    # gamma is rounded up from the real optimum: allow for the rounding of the last few bits
    return Certificate(size.sigma, n, failures, fraction, eps, size.delta, lower,
                       lower >= size.sigma * (1.0 - 1e-12), bound)


def certification_sample_size(sigma, bound: str = "two-sided", tolerance: float = 0.5) -> int | None:
    """Draws N for :func:`certify`, so that a level failing by a fair margin less than sigma
    allows is certified (Theorem 1, tolerant form). With eps*, delta the split of gamma(sigma)
    ((1 - eps*)(1 - delta) = sigma: a failure share H up to eps* is what sigma tolerates at best)
    and tolerance tau in [0, 1):

        N = max(gamma + 1, ceil(2 ln(c/delta) / ((1 - tau) eps*)^2)),   c = 2 two-sided, 1 one-sided,

    i.e. eps(N) <= (1 - tau) eps*/2. Then a level whose true failure share is H <= tau eps* is
    certified with probability >= 1 - delta/c (certify fails only if H-hat > H + eps(N), Hoeffding
    again). tau = 1/2 (default): N ~ 16 gamma, e.g. 5,127 at sigma = .9 (two-sided), where
    levels with a fraction >= 1 - eps*/2 = 0.954 pass; gamma + 1 draws (Algorithm 2) pass only
    a level whose draws all are k-anonymous (probability f^(gamma+1) for a fraction f).
    None when sigma = 1 (enumerate)."""
    size = sample_size(sigma, bound)
    if (isinstance(tolerance, (bool, np.bool_)) or not isinstance(tolerance, numbers.Real)
            or not (0.0 <= float(tolerance) < 1.0)):
        raise ParameterError(f"tolerance must be in [0, 1), got {tolerance!r}")
    if size.gamma is None:
        return None
    c = 2.0 if bound == "two-sided" else 1.0
    half = (1.0 - float(tolerance)) * size.epsilon / 2.0
    return max(size.gamma + 1, math.ceil(math.log(c / size.delta) / (2.0 * half * half) - 1e-9))

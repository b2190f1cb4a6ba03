"""Theorem 1 of paper 5 with failures tolerated (issue 13 point 8): ``certify`` and
``certification_sample_size``. The expected values come from the formulas, with delta and eps*
of gamma(sigma) solved here independently (bisection on the KKT equation of NOTES §5)."""

import math

import pytest
from scipy.stats import binom

from probanon.errors import ParameterError
from probanon.setvalued.sample_size import certification_sample_size, certify, sample_size


def split(sigma, bound="two-sided"):
    """(delta, eps*) of gamma(sigma): the root x in (0, 1 - sigma) of
    x^2 + 2 x sigma ln(x/c) + (sigma - 2) x - sigma + 1 = 0 (c = 2 two-sided, 1 one-sided)."""
    c = 2.0 if bound == "two-sided" else 1.0

    def g(x):
        return x * x + 2 * x * sigma * math.log(x / c) + (sigma - 2) * x - sigma + 1

    lo, hi = 1e-300, 1 - sigma
    for _ in range(2000):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if (g(lo) > 0) == (g(mid) > 0) else (lo, mid)
    return lo, 1 - sigma / (1 - lo)


@pytest.mark.parametrize("bound", ["two-sided", "one-sided"])
@pytest.mark.parametrize("sigma", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
def test_no_failure_is_algorithm_2s_test(sigma, bound):
    gamma = sample_size(sigma, bound).gamma
    # with no failure, gamma is the least number of draws certified (condition 3 of Theorem 1) ...
    assert certify(0, gamma, sigma, bound).certified
    assert not certify(0, gamma - 1, sigma, bound).certified
    # ... and among Algorithm 2's gamma + 1 draws, one failure is rejected
    assert certify(0, gamma + 1, sigma, bound).certified
    assert not certify(1, gamma + 1, sigma, bound).certified


def test_a_hand_computed_case_with_failures():
    # sigma = .9, two-sided: delta = 0.0092941699856036, sigma/(1 - delta) = 0.9084432257625;
    # N = 5127: eps = sqrt(ln(2/delta) / 10254) = 0.0228876785595; the largest certified f is
    # floor(5127 (1 - eps - 0.9084432257625)) = floor(352.066) = 352
    delta, _ = split(0.9)
    assert delta == pytest.approx(0.0092941699856036, rel=1e-12)
    eps = math.sqrt(math.log(2 / delta) / (2 * 5127))
    assert eps == pytest.approx(0.0228876785595, rel=1e-10)
    for f, lower, ok in ((88, 0.951026365327522, True), (352, 0.9000128410201687, True),
                         (353, 0.89981960797355, False)):
        c = certify(f, 5127, 0.9)
        assert c.lower == pytest.approx((1 - f / 5127 - eps) * (1 - delta), rel=1e-12)
        assert c.lower == pytest.approx(lower, rel=1e-12)
        assert c.certified is ok and c.failures == f and c.n == 5127
        assert c.epsilon == pytest.approx(eps, rel=1e-12) and c.delta == pytest.approx(delta, rel=1e-12)
        assert c.fraction == pytest.approx(1 - f / 5127)
    # one-sided: ln(1/delta) with that bound's delta
    d1, _ = split(0.9, "one-sided")
    c = certify(88, 5127, 0.9, "one-sided")
    assert c.lower == pytest.approx((1 - 88 / 5127 - math.sqrt(math.log(1 / d1) / 10254)) * (1 - d1), rel=1e-12)


@pytest.mark.parametrize("bound", ["two-sided", "one-sided"])
@pytest.mark.parametrize("sigma", [0.8, 0.9, 0.99])
def test_certification_sample_size(sigma, bound):
    delta, eps = split(sigma, bound)
    c = 2.0 if bound == "two-sided" else 1.0
    gamma = sample_size(sigma, bound).gamma
    for tau in (0.0, 0.25, 0.5, 0.9):
        want = max(gamma + 1, math.ceil(2 * math.log(c / delta) / ((1 - tau) * eps) ** 2))
        assert certification_sample_size(sigma, bound, tau) == want
    n = certification_sample_size(sigma, bound)
    # tau = 1/2: about 16 gamma
    assert n == max(gamma + 1, math.ceil(8 * math.log(c / delta) / eps ** 2))
    assert 15 * gamma < n <= 16 * gamma
    # the promise: a level failing on a share H = eps*/2 is certified with probability >= 1 - delta/c
    # (exact binomial tail of the largest f certified)
    f_max = math.floor(n * (1 - math.sqrt(math.log(c / delta) / (2 * n)) - sigma / (1 - delta)))
    assert certify(f_max, n, sigma, bound).certified and not certify(f_max + 1, n, sigma, bound).certified
    assert binom.sf(f_max, n, eps / 2) <= delta / c


def test_known_sizes_and_bad_input():
    assert certification_sample_size(0.9) == 5127  # ceil(5126.32): 8 ln(2/delta) / eps*^2
    assert certification_sample_size(0.9, tolerance=0.0) == 1282  # ceil(1281.58)
    assert certification_sample_size(1.0) is None
    with pytest.raises(ParameterError, match="tolerance"):
        certification_sample_size(0.9, tolerance=1.0)
    with pytest.raises(ParameterError, match="sigma = 1"):
        certify(0, 10, 1.0)
    with pytest.raises(ParameterError, match="failures"):
        certify(11, 10, 0.9)
    with pytest.raises(ParameterError, match="n must"):
        certify(0, -1, 0.9)
    with pytest.raises(ParameterError, match="sigma"):
        certify(0, 10, 1.5)

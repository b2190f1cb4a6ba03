"""Tests of effective anonymity (Algorithm A, probanon.survey.anonymity) and of the closed-form
approximations of n_min (probanon.survey.approximations), paper 1, Sec. VI-VII.

Every expected number comes from the paper's Tables II-IV and Fig. 7, from ../shared/papers/
NOTES.md section 1, from a formula of the paper, or from an independent computation written
here (scipy.stats.binom in the log domain, brute-force enumeration of participation
patterns), never from the code under test. A printed value matches when ours rounds to it:
|ours - printed| <= half a unit of the last printed digit.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.special import logsumexp
from scipy.stats import binom

from probanon.errors import ParameterError
from probanon.survey import approximations as ap
from probanon.survey.anonymity import cell_failure, effective_anonymity, n_min, table_failure

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- independent references


def assert_printed(value: float, printed: str, what: str = "") -> None:
    """``value`` rounds to the paper's ``printed`` number (half a unit of its last digit)."""
    d = Decimal(printed)
    half = 0.5 * 10.0 ** d.as_tuple().exponent
    assert abs(value - float(d)) <= half * (1 + 1e-9), f"{what}: ours {value!r}, paper {printed}"


def ref_log_qbar(n, k: int, pi: float):
    """log P{0 < K_n < k}, K_n ~ Binomial(n, pi), summed in the log domain (n may be an array)."""
    n = np.atleast_1d(np.asarray(n))
    i = np.arange(1, k)
    if i.size == 0:
        return np.full(n.shape, -np.inf)
    return logsumexp(binom.logpmf(i[None, :], n[:, None], pi), axis=1)


def ref_moment(n: int, k: int, pi: float) -> float:
    """sum_{i=1}^{k-1} i P{K_n = i}."""
    i = np.arange(1, k)
    return float((i * binom.pmf(i, n, pi)).sum())


def brute_force(pis, k: int) -> dict:
    """qbar, u, rbar, rbar' of a cell by enumerating all 2^n participation patterns."""
    pis = np.asarray(pis, dtype=float)
    n = pis.size
    bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1  # pattern x record
    prob = np.prod(np.where(bits == 1, pis, 1.0 - pis), axis=1)
    active = bits.sum(axis=1)
    fail = (active > 0) & (active < k)
    qbar = prob[fail].sum()
    u = (prob * active)[fail].sum() / qbar if qbar > 0 else math.nan
    joint = np.array([prob[fail & (bits[:, j] == 1)].sum() for j in range(n)])  # P{I_j = 1, fail}
    given_active = np.array([joint[j] / prob[bits[:, j] == 1].sum() for j in range(n)])  # P{fail | I_j = 1}
    return dict(qbar=qbar, u=u, rbar=joint.mean(), rbar_p=given_active.mean())


def n_min_k2(pi: float, pbar: float, n_max: int = 200_000) -> int:
    """Exact n_min for k = 2: the first n >= 2 with n pibar^(n-1) pi <= pbar (Sec. VI.A)."""
    n = np.arange(2, n_max)
    logq = np.log(n) + (n - 1) * math.log1p(-pi) + math.log(pi)
    ok = logq <= math.log(pbar)
    assert ok.any()
    return int(n[np.argmax(ok)])


# ---------------------------------------------------------------- paper tables

# Table III: k, pi, pbar -> n_min, qbar, u, rbar, rbar'
TABLE_III = [
    (10, 0.75, 1e-4, 25, "4.31e-5", "8.80", "1.52e-5", "2.02e-5"),
    (10, 0.75, 1e-5, 27, "6.05e-6", "8.82", "1.98e-6", "2.64e-6"),
    (10, 0.75, 1e-6, 29, "7.95e-7", "8.84", "2.42e-7", "3.23e-7"),
    (10, 0.5, 1e-4, 43, "8.51e-5", "8.69", "1.72e-5", "3.44e-5"),
    (10, 0.5, 1e-5, 48, "7.61e-6", "8.73", "1.38e-6", "2.77e-6"),
    (10, 0.5, 1e-6, 53, "6.1e-7", "8.77", "1.01e-7", "2.02e-7"),
    (50, 0.75, 1e-4, 88, "6.2e-5", "48.4", "3.41e-5", "4.54e-5"),
    (50, 0.75, 1e-5, 91, "9.82e-6", "48.4", "5.22e-6", "6.97e-6"),
    (50, 0.75, 1e-6, 95, "7.14e-7", "48.5", "3.64e-7", "4.86e-7"),
    (50, 0.5, 1e-4, 144, "7.86e-5", "48.1", "2.62e-5", "5.25e-5"),
    (50, 0.5, 1e-5, 151, "9.64e-6", "48.2", "3.08e-6", "6.15e-6"),
    (50, 0.5, 1e-6, 159, "7.35e-7", "48.3", "2.23e-7", "4.46e-7"),
]

# Table IV (pi = 0.75): k, N, pbar -> rbar, rbar', tbar
TABLE_IV = [
    (10, 10**4, 1e-4, "1.52e-5", "2.02e-5", "0.0171"),
    (10, 10**4, 1e-5, "1.98e-6", "2.64e-6", "0.00223"),
    (10, 10**4, 1e-6, "2.42e-7", "3.23e-7", "0.000273"),
    (10, 10**5, 1e-4, "1.52e-5", "2.02e-5", "0.158"),
    (10, 10**5, 1e-5, "1.98e-6", "2.64e-6", "0.0221"),
    (10, 10**5, 1e-6, "2.42e-7", "3.23e-7", "0.00274"),
    (10, 10**6, 1e-4, "1.52e-5", "2.02e-5", "0.822"),
    (10, 10**6, 1e-5, "1.98e-6", "2.64e-6", "0.201"),
    (10, 10**6, 1e-6, "2.42e-7", "3.23e-7", "0.027"),
    (50, 10**4, 1e-4, "3.41e-5", "4.54e-5", "0.00692"),
    (50, 10**4, 1e-5, "5.22e-6", "6.97e-6", "0.00106"),
    (50, 10**4, 1e-6, "3.64e-7", "4.86e-7", "7.42e-5"),
    (50, 10**5, 1e-4, "3.41e-5", "4.54e-5", "0.0679"),
    (50, 10**5, 1e-5, "5.22e-6", "6.97e-6", "0.0107"),
    (50, 10**5, 1e-6, "3.64e-7", "4.86e-7", "0.00075"),
    (50, 10**6, 1e-4, "3.41e-5", "4.54e-5", "0.505"),
    (50, 10**6, 1e-5, "5.22e-6", "6.97e-6", "0.102"),
    (50, 10**6, 1e-6, "3.64e-7", "4.86e-7", "0.00748"),
]


@pytest.mark.parametrize("k, pi, pbar, nmin, qbar, u, rbar, rbar_p", TABLE_III)
def test_table_iii(k, pi, pbar, nmin, qbar, u, rbar, rbar_p):
    e = effective_anonymity(k, pi, pbar)
    assert e.n_min == nmin and e.feasible
    assert n_min(k, pi, pbar) == nmin
    assert_printed(e.cell_failure, qbar, "qbar")
    assert_printed(e.mean_unprotected, u, "u")
    assert_printed(e.record_failure, rbar, "rbar")
    assert_printed(e.record_failure_participant, rbar_p, "rbar'")


@pytest.mark.parametrize("k, pi, pbar, nmin", [row[:4] for row in TABLE_III])
def test_table_iii_against_binomial(k, pi, pbar, nmin):
    """Beyond the printed digits: every indicator against scipy's binomial, and n_min is the
    first size n >= k with qbar(n) <= pbar."""
    e = effective_anonymity(k, pi, pbar)
    ref = float(np.exp(ref_log_qbar(nmin, k, pi))[0])
    moment = ref_moment(nmin, k, pi)
    assert e.cell_failure == pytest.approx(ref, rel=1e-10)
    assert e.mean_unprotected == pytest.approx(moment / ref, rel=1e-10)
    assert e.record_failure == pytest.approx(moment / nmin, rel=1e-10)
    assert e.record_failure_participant == pytest.approx(moment / nmin / pi, rel=1e-10)
    assert np.all(ref_log_qbar(np.arange(k, nmin), k, pi) > math.log(pbar))


@pytest.mark.parametrize("k, records, pbar, rbar, rbar_p, tbar", TABLE_IV)
def test_table_iv(k, records, pbar, rbar, rbar_p, tbar):
    pi = 0.75
    t = table_failure(records, k, pi, pbar)
    assert_printed(t, tbar, f"tbar (k={k}, N={records}, pbar={pbar})")
    e = effective_anonymity(k, pi, pbar)
    assert_printed(e.record_failure, rbar, "rbar")
    assert_printed(e.record_failure_participant, rbar_p, "rbar'")
    # the exact product form of Sec. VI.A, recomputed with scipy: |C| = floor(N / n_min)
    # cells, the last one of size n' = N - (|C| - 1) n_min
    cells = records // e.n_min
    last = records - (cells - 1) * e.n_min
    q = float(np.exp(ref_log_qbar(e.n_min, k, pi))[0])
    q_last = float(np.exp(ref_log_qbar(last, k, pi))[0])
    expected = -math.expm1((cells - 1) * math.log1p(-q) + math.log1p(-q_last))
    assert t == pytest.approx(expected, rel=1e-9)


def test_table_failure_last_cell_is_checked():
    """N < 2 n_min: a single cell of size N; N < n_min: that cell is smaller than n_min."""
    k, pi, pbar = 10, 0.5, 1e-4  # n_min = 43 (Table III)
    for records in (20, 43, 60, 85):
        expected = float(np.exp(ref_log_qbar(records, k, pi))[0])
        assert table_failure(records, k, pi, pbar) == pytest.approx(expected, rel=1e-10)


def test_table_ii():
    e = effective_anonymity(20, 0.5, 0.1)
    assert e.n_min == 48
    assert_printed(e.cell_failure, "0.09671", "qbar")
    assert_printed(e.mean_unprotected, "17.85", "u")
    assert_printed(e.record_failure, "0.03597", "rbar")


@pytest.mark.parametrize("pbar, expected", [(0.5, 100), (0.1, 113), (1e-2, 125), (1e-3, 135), (1e-4, 144),
                                            (1e-5, 151), (1e-6, 159), (1e-7, 165), (1e-8, 172)])
def test_fig7(pbar, expected):
    assert n_min(50, 0.5, pbar) == expected


def test_fig7_trivial_risk_gives_k():
    """Fig. 7 starts at pbar -> 1, where n_min = k: a cell of exactly k fails with probability
    1 - (pibar^k + pi^k) (Sec. VII.E, Fig. 13(b)), 1 - 2^-49 for k = 50, pi = 0.5."""
    assert n_min(50, 0.5, 1 - 2.0**-50) == 50
    assert n_min(50, 0.5, 1 - 2.0**-48) > 50
    assert cell_failure(50, 50, 0.5).cell_failure == pytest.approx(1 - 2.0**-49, abs=1e-15)


# ---------------------------------------------------------------- non-monotone qbar


def test_non_monotone_cell_failure():
    """pi = 0.01, k = 2: a cell of 2 is acceptable at pbar = 0.05 but a cell of 10 is not."""
    pi = 0.01
    assert n_min(2, pi, 0.05) == 2
    assert cell_failure(2, 2, pi).cell_failure == pytest.approx(2 * pi * (1 - pi), rel=1e-13)
    expected = 10 * pi * (1 - pi) ** 9  # P{K = 1} = n pi (1 - pi)^(n - 1)
    assert_printed(expected, "0.091", "NOTES.md")
    c = cell_failure(10, 2, pi)
    assert c.cell_failure == pytest.approx(expected, rel=1e-13)
    assert c.cell_failure > 0.05
    assert c.mean_unprotected == pytest.approx(1.0, rel=1e-13)  # u = k - 1 for k = 2 (Sec. VI.A)


# ---------------------------------------------------------------- numerical stability


@pytest.mark.parametrize("k, pi", [(2, 0.5), (20, 0.5), (50, 0.75), (10, 0.1), (3, 0.02)])
@pytest.mark.parametrize("pbar", [1e-17, 1e-100, 1e-300])
def test_stability_tiny_risk(k, pi, pbar):
    e = effective_anonymity(k, pi, pbar)
    assert e.feasible and math.isfinite(e.n_min) and e.n_min >= k
    assert 0 < e.cell_failure <= pbar
    ref = ref_log_qbar(np.arange(k, e.n_min + 1), k, pi)
    assert e.log_cell_failure == pytest.approx(ref[-1], rel=1e-12, abs=1e-9)
    assert e.cell_failure == pytest.approx(math.exp(ref[-1]), rel=1e-9)
    assert np.all(ref[:-1] > math.log(pbar))  # no smaller n >= k works: n_min is the first
    moment_log = logsumexp(binom.logpmf(np.arange(1, k), e.n_min, pi), b=np.arange(1, k))
    assert e.record_failure == pytest.approx(math.exp(moment_log) / e.n_min, rel=1e-9)


def test_fig6_point():
    """NOTES.md: k = 20, pi = 0.5, pbar = 1e-17 -> n_min = 132 (the paper's -0.84% error there comes
    from its subtraction form; the sum of the pmf must agree with the binomial)."""
    e = effective_anonymity(20, 0.5, 1e-17)
    assert e.n_min == 132
    assert e.cell_failure == pytest.approx(math.exp(ref_log_qbar(132, 20, 0.5)[0]), rel=1e-9)


@pytest.mark.parametrize("k, pi, n", [(20, 0.5, 2000), (5, 0.9, 400), (3, 0.3, 5000)])
def test_cell_failure_far_below_underflow(k, pi, n):
    """Cells far beyond n_min: qbar underflows a double but its logarithm does not."""
    c = cell_failure(n, k, pi)
    assert c.log_cell_failure == pytest.approx(ref_log_qbar(n, k, pi)[0], rel=1e-12)


# ---------------------------------------------------------------- per-record participation


@pytest.mark.parametrize("k, pi, pbar", [(10, 0.75, 1e-4), (50, 0.5, 1e-6), (2, 0.3, 1e-3), (1, 0.4, 0.1)])
def test_constant_array_equals_scalar(k, pi, pbar):
    scalar = effective_anonymity(k, pi, pbar)
    array = effective_anonymity(k, np.full(400, pi), pbar)
    assert array.n_min == scalar.n_min and array.feasible
    for field in ("cell_failure", "log_cell_failure", "record_failure", "record_failure_participant"):
        assert getattr(array, field) == pytest.approx(getattr(scalar, field), rel=1e-10), field
    if k > 1:
        assert array.mean_unprotected == pytest.approx(scalar.mean_unprotected, rel=1e-10)
    for n in (1, k, scalar.n_min + 7):
        a, s = cell_failure(n, k, [pi] * n), cell_failure(n, k, pi)
        assert a.cell_failure == pytest.approx(s.cell_failure, rel=1e-10)
        assert a.record_failure_participant == pytest.approx(s.record_failure_participant, rel=1e-10)


def _assert_brute(c, ref):
    assert c.cell_failure == pytest.approx(ref["qbar"], rel=1e-10, abs=1e-300)
    assert c.record_failure == pytest.approx(ref["rbar"], rel=1e-10, abs=1e-300)
    assert c.record_failure_participant == pytest.approx(ref["rbar_p"], rel=1e-10, abs=1e-300)
    if ref["qbar"] > 0:
        assert c.mean_unprotected == pytest.approx(ref["u"], rel=1e-10)
    else:
        assert math.isnan(c.mean_unprotected)


def test_per_record_cell_brute_force_example():
    pis = [0.9, 0.2, 0.55, 0.7, 0.05, 1.0, 0.33, 0.8, 0.6, 0.15, 0.45, 0.95]
    for k in (1, 2, 3, 5, 8, 12, 13):
        _assert_brute(cell_failure(len(pis), k, pis), brute_force(pis, k))


@FAST
@given(pis=st.lists(st.floats(0.01, 1.0), min_size=1, max_size=12), k=st.integers(1, 13))
def test_per_record_cell_brute_force(pis, k):
    _assert_brute(cell_failure(len(pis), k, pis), brute_force(pis, k))


@FAST
@given(pis=st.lists(st.floats(0.3, 1.0), min_size=12, max_size=12), k=st.integers(1, 6),
       log_pbar=st.floats(-6.0, -0.05))
def test_per_record_effective_anonymity_brute_force(pis, k, log_pbar):
    """n_min over records joining in the given order = first prefix n >= k with qbar <= pbar."""
    pbar = 10.0**log_pbar
    e = effective_anonymity(k, pis, pbar)
    first = next((n for n in range(k, 13) if brute_force(pis[:n], k)["qbar"] <= pbar), None)
    if first is None:
        assert not e.feasible and e.n == len(pis)
    else:
        assert e.feasible and e.n_min == first
    _assert_brute(e, brute_force(pis[: e.n], k))


def test_max_records_never_beyond_the_records():
    """Only 5 records (or 1) exist: the search stops there even with a larger cap."""
    for pis in (np.full(5, 0.5), [0.5]):
        e = effective_anonymity(3, pis, 1e-6, max_records=100)
        assert e.n == len(pis) and not e.feasible
        _assert_brute(e, brute_force(pis, 3))
    e = effective_anonymity(10, 0.5, 1e-6, max_records=30)  # n_min = 53 (NOTES.md)
    assert e.n == 30 and not e.feasible
    assert e.cell_failure == pytest.approx(math.exp(ref_log_qbar(30, 10, 0.5)[0]), rel=1e-10)
    for bad in (0, -3, 2.5, True):
        _raises_one_line(effective_anonymity, 3, 0.5, 1e-6, bad)


# ---------------------------------------------------------------- bad arguments


BAD_PI = [0, 0.0, -0.1, 1.5, math.nan, math.inf, True, "0.5", None]
BAD_PI_ALGORITHM_A = BAD_PI
BAD_RISK = [0, 0.0, 1, 1.0, -1e-3, 1.5, math.nan, True, "0.1"]
BAD_K = [0, -1, 2.5, True, "3"]


def _raises_one_line(fn, *args):
    with pytest.raises(ParameterError) as info:
        fn(*args)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("pi", BAD_PI_ALGORITHM_A)
def test_bad_participation(pi):
    _raises_one_line(effective_anonymity, 10, pi, 1e-4)
    _raises_one_line(cell_failure, 20, 10, pi)
    _raises_one_line(table_failure, 1000, 10, pi, 1e-4)
    _raises_one_line(n_min, 10, pi, 1e-4)


@pytest.mark.parametrize("pbar", BAD_RISK)
def test_bad_risk(pbar):
    _raises_one_line(effective_anonymity, 10, 0.5, pbar)
    _raises_one_line(table_failure, 1000, 10, 0.5, pbar)
    _raises_one_line(n_min, 10, 0.5, pbar)


@pytest.mark.parametrize("k", BAD_K)
def test_bad_k(k):
    _raises_one_line(effective_anonymity, k, 0.5, 1e-4)
    _raises_one_line(cell_failure, 20, k, 0.5)
    _raises_one_line(table_failure, 1000, k, 0.5, 1e-4)


@pytest.mark.parametrize("pis", [[0.5, 0.0, 0.7], [0.5, 1.2], [0.5, math.nan], [], [[0.5, "a"]]])
def test_bad_per_record_participation(pis):
    _raises_one_line(effective_anonymity, 2, pis, 1e-2)


def test_bad_cell_and_table_sizes():
    _raises_one_line(cell_failure, 0, 2, 0.5)
    _raises_one_line(cell_failure, 2.5, 2, 0.5)
    _raises_one_line(cell_failure, 3, 2, [0.5, 0.5])  # 2 probabilities for 3 records
    _raises_one_line(table_failure, 0, 2, 0.5, 0.1)
    _raises_one_line(table_failure, 10.0, 2, 0.5, 0.1)


def test_full_participation_is_deterministic():
    """pi = 1: no uncertainty, n_min = k and nothing fails (u is 0/0)."""
    e = effective_anonymity(7, 1.0, 1e-9)
    assert e.n_min == 7 and e.cell_failure == 0.0 and e.record_failure == 0.0
    assert math.isnan(e.mean_unprotected)
    assert table_failure(100, 7, 1.0, 1e-9) == 0.0


# ---------------------------------------------------------------- approximations (Sec. VI.C)

APPROX_ANY_K = [ap.n_min_kl, ap.n_min_n1_prime, ap.n_min_n1_second, ap.n_min_n2]
APPROX_K2 = [ap.n_min_lambert_k2, ap.n_min_k2_n0, ap.n_min_k2_n1, ap.n_min_k2_n2]


@pytest.mark.parametrize("k, nmin, kl, n1p, n1s, n2", [
    (10, 53, "55.39", "58.05", "54.12", "49.37"),
    (100, 278, "286.2", "287.06", "285.78", "271.57"),
])
def test_approximations_notes(k, nmin, kl, n1p, n1s, n2):
    """NOTES.md section 1, pi = 0.5, pbar = 1e-6 (Fig. 8-9)."""
    pi, pbar = 0.5, 1e-6
    assert n_min(k, pi, pbar) == nmin
    assert_printed(ap.n_min_kl(k, pi, pbar), kl, "KL equation")
    assert_printed(ap.n_min_n1_prime(k, pi, pbar), n1p, "n1'")
    assert_printed(ap.n_min_n1_second(k, pi, pbar), n1s, "n1''")
    assert_printed(ap.n_min_n2(k, pi, pbar), n2, "n2")


def _kl(kappa, pi):
    """D(kappa || pi) in nats, written out (0 ln 0 = 0)."""
    first = kappa * math.log(kappa / pi) if kappa > 0 else 0.0
    return first + (1 - kappa) * math.log((1 - kappa) / (1 - pi))


@pytest.mark.parametrize("k", [1, 2, 5, 20, 100, 1000])
@pytest.mark.parametrize("pi, pbar", [(0.5, 1e-6), (0.1, 1e-3), (0.9, 1e-12), (0.02, 1e-300), (0.5, 0.3)])
def test_approximations_solve_their_equations(k, pi, pbar):
    """Each approximation solves its own equation of Sec. VI.C.4, on the branch kappa <= pi."""
    lhs = lambda n: -math.log(pbar) / n  # noqa: E731
    n = ap.n_min_kl(k, pi, pbar)
    assert (k - 1) / n <= pi
    assert _kl((k - 1) / n, pi) == pytest.approx(lhs(n), rel=1e-9)
    n = ap.n_min_n1_prime(k, pi, pbar)
    assert (k - 1) / n <= pi
    assert 0.5 * ((k - 1) / n - pi) ** 2 / (pi * (1 - pi)) == pytest.approx(lhs(n), rel=1e-9)
    n = ap.n_min_n2(k, pi, pbar)
    assert (k - 1) / n <= pi
    assert -math.log1p(-pi) * (1 - (k - 1) / n / pi) ** 2 == pytest.approx(lhs(n), rel=1e-9)
    # n1'' drops sqrt(x + a) - sqrt(x) from n1': 0 <= n1' - n1'' <= -pibar ln pbar / pi
    c = -(1 - pi) * math.log(pbar)
    gap = ap.n_min_n1_prime(k, pi, pbar) - ap.n_min_n1_second(k, pi, pbar)
    assert -1e-9 * c <= gap <= c / pi * (1 + 1e-12)
    assert ap.n_min_n1_second(k, pi, pbar) == pytest.approx(
        (k - 1 + math.sqrt(-2 * (1 - pi) * math.log(pbar)) * math.sqrt(k - 1) - (1 - pi) * math.log(pbar)) / pi,
        rel=1e-12)


def test_kl_divergence_helper():
    assert ap.bernoulli_kl_divergence(0.3, 0.5) == pytest.approx(_kl(0.3, 0.5), rel=1e-14)
    assert ap.bernoulli_kl_divergence(0.0, 0.25) == pytest.approx(-math.log(0.75), rel=1e-14)
    assert ap.bernoulli_kl_divergence(0.4, 0.4) == 0.0
    np.testing.assert_allclose(ap.bernoulli_kl_divergence(np.array([0.1, 0.2]), 0.5),
                               [_kl(0.1, 0.5), _kl(0.2, 0.5)], rtol=1e-14)


@pytest.mark.parametrize("pi", [0.5, 0.25, 0.75, 0.1, 0.9, 0.01])
@pytest.mark.parametrize("pbar", [1e-3, 1e-6, 1e-17, 1e-100, 1e-300])
def test_k2_lambert_and_logarithmic_approximations(pi, pbar):
    """Sec. VI.C.3: the Lambert-W root solves n pibar^(n-1) pi = pbar on the decreasing side of
    qbar, its ceiling is n_min, and n~2 <= root <= n~1 (ln x lies below its tangent and above its
    second-order expansion for x >= n~0), with n~0 = 1 + log_pibar(pbar / pi) below all."""
    root = ap.n_min_lambert_k2(2, pi, pbar)
    assert root >= -1 / math.log1p(-pi)
    log_q = math.log(root) + (root - 1) * math.log1p(-pi) + math.log(pi)
    assert log_q == pytest.approx(math.log(pbar), rel=1e-12, abs=1e-12)
    exact = n_min_k2(pi, pbar)
    assert math.ceil(root) == exact == n_min(2, pi, pbar)
    n0 = ap.n_min_k2_n0(2, pi, pbar)
    assert n0 == pytest.approx(1 + math.log(pbar / pi) / math.log1p(-pi), rel=1e-12)
    assert n0 == pytest.approx((-math.log(pbar) + math.log(pi / (1 - pi))) / -math.log1p(-pi), rel=1e-12)
    n1, n2 = ap.n_min_k2_n1(2, pi, pbar), ap.n_min_k2_n2(2, pi, pbar)
    assert n0 < n2 <= root * (1 + 1e-12) and root <= n1 * (1 + 1e-12)


def test_k2_fig10_claims():
    """Fig. 10 (pbar from 1e-7 to 1e-3, exponent steps of 0.001; pi = 0.5 as in Sec. VII.D):
    ceil(n~1) is an upper bound of n_min, ceil(n~2) is optimistic but more often exact."""
    pi = 0.5
    upper, optimistic, exact1, exact2 = [], [], 0, 0
    for e in np.arange(-7.0, -3.0 + 1e-9, 0.001):
        pbar = 10.0**e
        nmin = n_min_k2(pi, pbar, n_max=200)
        c1, c2 = math.ceil(ap.n_min_k2_n1(2, pi, pbar)), math.ceil(ap.n_min_k2_n2(2, pi, pbar))
        upper.append(c1 >= nmin)
        optimistic.append(c2 <= nmin)
        exact1 += c1 == nmin
        exact2 += c2 == nmin
    assert all(upper) and all(optimistic) and exact2 > exact1


def test_asymptotic_equivalence():
    """n~0 ~ n~1 ~ n~2 ~ n_min as pbar -> 0 (k = 2), and the KL root ~ n_min (any k)."""
    for pi in (0.5, 0.1):
        nmin = n_min(2, pi, 1e-300)
        assert abs(ap.n_min_k2_n0(2, pi, 1e-300) / nmin - 1) < 0.02
        assert abs(ap.n_min_k2_n1(2, pi, 1e-300) / nmin - 1) < 1e-3
        assert abs(ap.n_min_k2_n2(2, pi, 1e-300) / nmin - 1) < 1e-3
    for k in (10, 50):
        nmin = n_min(k, 0.5, 1e-300)
        assert abs(ap.n_min_kl(k, 0.5, 1e-300) / nmin - 1) < 0.01


def test_approximations_at_full_participation_return_the_limit():
    for fn in APPROX_ANY_K:
        assert fn(7, 1.0, 1e-6) == 6.0
    for fn in APPROX_K2:
        assert fn(2, 1.0, 1e-6) == 1.0


@pytest.mark.parametrize("fn", APPROX_ANY_K + APPROX_K2)
def test_approximations_bad_arguments(fn):
    k = 2
    for pi in BAD_PI:
        _raises_one_line(fn, k, pi, 1e-6)
    for pbar in BAD_RISK:
        _raises_one_line(fn, k, 0.5, pbar)
    for bad_k in BAD_K:
        _raises_one_line(fn, bad_k, 0.5, 1e-6)


@pytest.mark.parametrize("fn", APPROX_K2)
def test_k2_approximations_need_k2(fn):
    _raises_one_line(fn, 3, 0.5, 1e-6)
    assert fn(2.0, 0.5, 1e-6) == fn(2, 0.5, 1e-6)


def test_k2_approximations_outside_their_domain():
    # pi = 0.01, pbar = 0.5: qbar(n) = n 0.99^(n-1) 0.01 <= 0.37 < pbar for every n: no root
    _raises_one_line(ap.n_min_lambert_k2, 2, 0.01, 0.5)
    # (1 - pi) / pi * pbar >= 1: n~0 <= 0, the logarithmic expansions are undefined
    for fn in (ap.n_min_k2_n0, ap.n_min_k2_n1, ap.n_min_k2_n2):
        _raises_one_line(fn, 2, 0.1, 0.5)

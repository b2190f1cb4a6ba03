"""Monte Carlo verification of Algorithm A's failure metrics (paper 1, Sec. VII.A, Table II).

Expected values come from the paper / NOTES.md or from an independent computation in this file
(the exact distribution of K_c by convolution of the Bernoulli(pi_j), scipy's binomial pmf,
scipy's Clopper-Pearson interval), never from the code under test.
"""

import json
import math

import numpy as np
import pytest
from scipy import stats

import probanon.survey.simulation as sim
from probanon.errors import ParameterError
from probanon.survey.anonymity import table_failure
from probanon.survey.simulation import SimulationResult, simulate_cells, simulate_table

Z99 = stats.norm.ppf(0.995)


# --------------------------------------------------------------------------- independent theory


def pmf_of_active(pis):
    """Exact distribution of K = sum Bernoulli(pi_j) (Poisson binomial), by convolution."""
    pmf = np.array([1.0])
    for p in pis:
        pmf = np.convolve(pmf, [1.0 - p, p])
    return pmf


def theory(cells, k):
    """Per-cell moments of K and Y = K 1{0 < K < k}, and the five predicted metrics."""
    rows = []
    pmfs = {}
    for c in cells:
        c = np.asarray(c, dtype=float)
        key = c.tobytes()
        if key not in pmfs:
            pmfs[key] = pmf_of_active(c)
        pmf = pmfs[key]
        i = np.arange(pmf.size)
        f = (i > 0) & (i < k)
        rows.append(dict(
            n=c.size,
            q=pmf[f].sum(),  # P{0 < K < k}
            m=(i * pmf)[f].sum(),  # E[Y]
            m2=(i * i * pmf)[f].sum(),  # E[Y^2] = E[K Y]
            ek=c.sum(),
            ek2=(c * (1 - c)).sum() + c.sum() ** 2,
        ))
    q = np.array([r["q"] for r in rows])
    m = sum(r["m"] for r in rows)
    return rows, dict(
        cell_failure=q.mean(),
        mean_unprotected=m / q.sum(),
        record_failure=m / sum(r["n"] for r in rows),
        record_failure_participant=m / sum(r["ek"] for r in rows),
        table_failure=1.0 - np.prod(1.0 - q),
    )


def ratio_se(rows, runs, ratio, x):
    """Large-sample standard error of sum Y / sum X over independent (cell, run) pairs,
    with X = 1{fail} ('fail'), n_c ('n') or K ('k')."""
    var = 0.0
    ex_total = 0.0
    for r in rows:
        ex, ex2, exy = {"fail": (r["q"], r["q"], r["m"]),
                        "n": (r["n"], r["n"] ** 2, r["n"] * r["m"]),
                        "k": (r["ek"], r["ek2"], r["m2"])}[x]
        var += r["m2"] - 2 * ratio * exy + ratio**2 * ex2 - (r["m"] - ratio * ex) ** 2
        ex_total += ex
    return math.sqrt(runs * var) / (runs * ex_total)


def exact_ci(successes, trials, confidence=0.99):
    ci = stats.binomtest(successes, trials).proportion_ci(confidence_level=confidence, method="exact")
    return ci.low, ci.high


def check_agreement(res, cells, k, runs):
    """Every metric's independent prediction lies inside its 99% interval."""
    rows, expected = theory(cells, k)
    # the predictions of Algorithm A equal the independent exact values
    for name, value in expected.items():
        assert getattr(res, f"predicted_{name}") == pytest.approx(value, rel=1e-9, abs=1e-300), name
    # cell and table failure: Clopper-Pearson, recomputed here with scipy.stats.binomtest
    lo, hi = exact_ci(res.failing_cells, len(cells) * runs)
    assert res.cell_failure_interval == pytest.approx((lo, hi), rel=1e-9, abs=1e-12)
    assert lo <= expected["cell_failure"] <= hi
    lo, hi = exact_ci(res.failing_runs, runs)
    assert res.table_failure_interval == pytest.approx((lo, hi), rel=1e-9, abs=1e-12)
    assert lo <= expected["table_failure"] <= hi
    # ratios: within z_.995 theoretical standard errors
    for name, x in (("mean_unprotected", "fail"), ("record_failure", "n"), ("record_failure_participant", "k")):
        se = ratio_se(rows, runs, expected[name], x)
        observed = getattr(res, f"observed_{name}")
        assert abs(observed - expected[name]) <= Z99 * se, (name, observed, expected[name], se)
    assert res.agrees
    for name in expected:
        assert getattr(res, f"{name}_agrees") is True, name
    return expected


# --------------------------------------------------------------------------- Table II


def test_table_ii_paper_values():
    """k = 20, pbar = 0.1, pi = 0.5, n_min = 48, 10^5 cells (one run over all of them)."""
    k, n, pi, cells_count = 20, 48, 0.5, 100_000
    res = simulate_cells([np.full(n, pi)] * cells_count, k, runs=1, random_state=20151)
    # Algorithm A column of Table II
    assert res.predicted_cell_failure == pytest.approx(0.09671, abs=5e-6)
    assert res.predicted_mean_unprotected == pytest.approx(17.85, abs=5e-3)
    assert res.predicted_record_failure == pytest.approx(0.03597, abs=5e-6)
    assert res.predicted_record_failure_participant == pytest.approx(0.03597 / pi, abs=1e-5)
    # observed cell failure agrees with the paper's qbar within the 99% exact interval
    lo, hi = exact_ci(res.failing_cells, cells_count)
    assert lo <= 0.09671 <= hi
    assert res.cell_failure_agrees
    # u and rbar: standard errors from the binomial(48, 0.5) distribution, computed here
    i = np.arange(1, k)
    p = stats.binom.pmf(i, n, pi)
    q = p.sum()
    u = (i * p).sum() / q
    var_u = ((i - u) ** 2 * p).sum() / q  # Var(K | 0 < K < k)
    se_u = math.sqrt(var_u / (cells_count * q))
    assert abs(res.observed_mean_unprotected - 17.85) <= Z99 * se_u + 0.005  # + rounding of the paper
    y1, y2 = (i * p).sum(), (i * i * p).sum()
    se_r = math.sqrt((y2 - y1**2) / cells_count) / n
    assert abs(res.observed_record_failure - 0.03597) <= Z99 * se_r + 5e-6
    # counts are consistent with the rates
    assert res.observed_cell_failure == res.failing_cells / cells_count
    assert res.observed_record_failure == res.unprotected_records / (n * cells_count)
    assert res.observed_mean_unprotected == res.unprotected_records / res.failing_cells
    assert res.observed_table_failure == 1.0 and res.failing_runs == 1
    print("\nTable II", {key: v for key, v in res.to_dict().items() if key.startswith(("observed", "predicted"))})


def test_table_ii_many_runs():
    cells = [np.full(48, 0.5)] * 10_000
    res = simulate_cells(cells, 20, runs=10, random_state=7)
    check_agreement(res, cells, 20, 10)


# --------------------------------------------------------------------------- other parameter sets


def test_per_record_participation_mixed_sizes():
    rng = np.random.default_rng(12345)
    sizes = rng.integers(5, 41, size=300)
    cells = [rng.uniform(0.3, 0.9, size=s) for s in sizes]
    k, runs = 8, 200
    res = simulate_cells(cells, k, runs, random_state=99)
    expected = check_agreement(res, cells, k, runs)
    # rbar' is the pi-weighted mean of P{fail | I_j = 1}: check the definition directly
    num = den = 0.0
    for c in cells:
        for j in range(c.size):
            pmf = pmf_of_active(np.delete(c, j))  # K_{-j}; fail given I_j = 1 <=> K_{-j} <= k - 2
            num += c[j] * pmf[: k - 1].sum()
            den += c[j]
    assert expected["record_failure_participant"] == pytest.approx(num / den, rel=1e-12)
    print("\nper-record", {key: v for key, v in res.to_dict().items() if key.startswith(("observed", "predicted"))})


def test_small_participation():
    k, pi = 3, 0.05
    cells = [np.full(n, pi) for n in (3, 20, 60, 123, 200)]  # 123 = n_min for pbar = 0.05
    runs = 20_000
    res = simulate_cells(cells, k, runs, random_state=5)
    check_agreement(res, cells, k, runs)
    # constant pi: rbar' = rbar / pi cell by cell
    rows, _ = theory(cells, k)
    assert res.predicted_record_failure_participant == pytest.approx(
        sum(r["m"] for r in rows) / (pi * sum(r["n"] for r in rows)), rel=1e-12)


def test_mixed_constant_and_uneven_cells():
    rng = np.random.default_rng(3)
    cells = [np.full(30, 0.7), rng.uniform(0.5, 1.0, 25), np.full(12, 0.9), np.full(30, 0.7)]
    res = simulate_cells(cells, 10, 30_000, random_state=11)
    check_agreement(res, cells, 10, 30_000)


def test_small_table_failure():
    N, k, pi, pbar = 500, 5, 0.6, 0.05
    runs = 20_000
    res = simulate_table(N, k, pi, pbar, runs, random_state=2024)
    n = 13  # n_min(5, 0.6, 0.05): qbar(12) = 0.0593 > 0.05 >= qbar(13) = 0.0321
    assert stats.binom.cdf(k - 1, 12, pi) - stats.binom.pmf(0, 12, pi) > pbar
    assert stats.binom.cdf(k - 1, 13, pi) - stats.binom.pmf(0, 13, pi) <= pbar
    count = N // n
    cells = [np.full(n, pi)] * (count - 1) + [np.full(N - (count - 1) * n, pi)]
    assert res.cells == count == 38 and res.records == N
    check_agreement(res, cells, k, runs)
    tbar = table_failure(N, k, pi, pbar)
    lo, hi = exact_ci(res.failing_runs, runs)
    assert lo <= tbar <= hi
    assert res.predicted_table_failure == pytest.approx(tbar, rel=1e-12)
    print("\ntable", res.observed_table_failure, tbar, (lo, hi))


def test_table_smaller_than_n_min_is_one_cell():
    res = simulate_table(10, 5, 0.6, 0.05, 1000, random_state=0)
    assert res.cells == 1 and res.records == 10
    check_agreement(res, [np.full(10, 0.6)], 5, 1000)


def test_deterministic_participation_is_exact():
    # pi = 1: a cell of 3 < k always fails with K = 3, a cell of 10 >= k never fails
    res = simulate_cells([np.ones(3), np.ones(10)], 5, 50, random_state=1)
    assert res.failing_cells == 50 and res.failing_runs == 50 and res.active_records == 13 * 50
    assert res.observed_cell_failure == res.predicted_cell_failure == 0.5
    assert res.observed_mean_unprotected == 3.0 and res.predicted_mean_unprotected == pytest.approx(3.0)
    assert res.observed_record_failure == pytest.approx(3 / 13) and res.predicted_record_failure == pytest.approx(3 / 13)
    assert res.predicted_record_failure_participant == pytest.approx(3 / 13)
    assert res.observed_table_failure == res.predicted_table_failure == 1.0
    assert res.agrees


def test_no_failure_possible_gives_none_not_nan():
    res = simulate_cells([np.full(4, 0.5), np.full(7, 0.2)], 1, 100, random_state=0)
    assert res.failing_cells == 0 and res.predicted_cell_failure == 0.0
    d = res.to_dict()
    assert d["observed_mean_unprotected"] is None and d["predicted_mean_unprotected"] is None
    assert d["mean_unprotected_interval"] is None and d["mean_unprotected_agrees"] is None
    assert d["cell_failure_agrees"] is True and d["table_failure_agrees"] is True
    json.dumps(d, allow_nan=False)


# --------------------------------------------------------------------------- API behaviour


def test_to_dict_is_json_and_result_is_frozen():
    res = simulate_cells([np.full(20, 0.5)] * 10, 5, 100, random_state=0)
    assert isinstance(res, SimulationResult)
    d = res.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False)) == d
    assert isinstance(d["cell_failure_interval"], list) and len(d["cell_failure_interval"]) == 2
    with pytest.raises(AttributeError):
        res.runs = 3


def test_reproducible():
    cells = [np.full(48, 0.5)] * 50 + [np.linspace(0.3, 0.9, 17)]
    a = simulate_cells(cells, 20, 300, random_state=42).to_dict()
    b = simulate_cells(cells, 20, 300, random_state=42).to_dict()
    c = simulate_cells(cells, 20, 300, random_state=np.random.default_rng(42)).to_dict()
    assert a == b == c
    d = simulate_cells(cells, 20, 300, random_state=43).to_dict()
    assert (a["failing_cells"], a["active_records"], a["unprotected_records"]) != (
        d["failing_cells"], d["active_records"], d["unprotected_records"])


def test_batches_do_not_change_the_result(monkeypatch):
    cells = [np.full(48, 0.5)] * 20 + [np.linspace(0.2, 1.0, 33)]
    records = 20 * 48 + 33
    reference = simulate_cells(cells, 20, 100, random_state=8).to_dict()
    monkeypatch.setattr(sim, "MAX_BATCH_ELEMENTS", 3 * records)  # batches of 3 runs (34 batches)
    assert simulate_cells(cells, 20, 100, random_state=8).to_dict() == reference
    monkeypatch.setattr(sim, "MAX_BATCH_ELEMENTS", 100)  # fewer elements than records: cells in blocks
    res = simulate_cells(cells, 20, 2000, random_state=8)
    check_agreement(res, cells, 20, 2000)


def test_bad_arguments():
    ok = [np.full(5, 0.5)]
    cases = [
        lambda: simulate_cells(ok, 3, 0),
        lambda: simulate_cells(ok, 3, -2),
        lambda: simulate_cells(ok, 3, 1.5),
        lambda: simulate_cells(ok, 3, True),
        lambda: simulate_cells([], 3, 10),
        lambda: simulate_cells([np.array([])], 3, 10),
        lambda: simulate_cells([np.full(5, 0.5), np.array([0.5, 0.0])], 3, 10),
        lambda: simulate_cells([[0.5, 1.2]], 3, 10),
        lambda: simulate_cells([[0.5, -0.1]], 3, 10),
        lambda: simulate_cells([[0.5, np.nan]], 3, 10),
        lambda: simulate_cells([["a", "b"]], 3, 10),
        lambda: simulate_cells([np.full((2, 2), 0.5)], 3, 10),
        lambda: simulate_cells(np.full((2, 2), 0.5), 3, 10),
        lambda: simulate_cells(ok, 0, 10),
        lambda: simulate_cells(ok, 3, 10, confidence=1.0),
        lambda: simulate_cells(ok, 3, 10, random_state="seed"),
        lambda: simulate_table(100, 3, 0.0, 0.05, 10),
        lambda: simulate_table(100, 3, 1.5, 0.05, 10),
        lambda: simulate_table(0, 3, 0.5, 0.05, 10),
        lambda: simulate_table(100, 3, 0.5, 1.0, 10),
        lambda: simulate_table(100, 3, 0.5, 0.05, 0),
    ]
    for i, case in enumerate(cases):
        with pytest.raises(ParameterError) as err:
            case()
        message = str(err.value)
        assert message and "\n" not in message, (i, message)

"""Local suppression to k-anonymity (issue 43, point 2) and the counting core behind it: every
count against a brute-force comparison of every pair of records written here, the exact optimum
against a brute force over every set of suppressed values, the fast method's releases checked by
that brute-force count (both missing-value rules, combinations, strata, the risk threshold)."""

import itertools

import numpy as np
import pandas as pd
import pytest

from probanon.categorical.suppression import key_weights, local_suppression
from probanon.errors import GuaranteeError, InputError, ParameterError
from probanon.frequencies import k_violations, match_counts
from probanon.metrics.frequency import individual_risk
from probanon.release import Promise, combination_promise


def _pairwise(codes, strata, missing):
    """n x n: record j counts for record i (equal, or missing on either side under "any")."""
    a, b = codes[:, None, :], codes[None, :, :]
    same = (a == b) | ((a < 0) | (b < 0)) if missing == "any" else (a == b)
    return same.all(axis=2) & (strata[:, None] == strata[None, :])


def _sets(m, combinations):
    size = m if combinations is None or combinations >= m else combinations
    return [list(c) for c in itertools.combinations(range(m), size)]


def _min_counts(codes, strata, missing, combinations):
    """Per record its smallest count over the key sets asked (brute force)."""
    return np.min([_pairwise(codes[:, s], strata, missing).sum(axis=1) for s in _sets(codes.shape[1], combinations)],
                  axis=0)


def _codes(frame, keys):
    """Codes of the released keys, -1 missing (each key's values are small whole numbers here)."""
    return np.column_stack([frame[c].astype("Float64").fillna(-1).to_numpy(dtype=float) for c in keys]).astype(int)


def _random_case(rng, n, m, levels=3, p_missing=0.1, n_strata=1):
    codes = rng.integers(0, levels, size=(n, m))
    codes[rng.random((n, m)) < p_missing] = -1
    strata = rng.integers(0, n_strata, size=n)
    frame = pd.DataFrame(np.where(codes < 0, np.nan, codes), columns=[f"k{j}" for j in range(m)])
    frame["s"] = strata
    return frame, codes, strata


# ------------------------------------------------------------------------------- the counting core

@pytest.mark.parametrize("missing", ["any", "category"])
def test_match_counts_against_every_pair(missing):
    rng = np.random.default_rng(3)
    frame, codes, strata = _random_case(rng, 60, 4, levels=3, p_missing=0.25, n_strata=2)
    w = rng.uniform(1, 5, 60)
    f, F = match_counts(codes, missing=missing, strata=strata, weights=w)
    pairs = _pairwise(codes, strata, missing)
    np.testing.assert_array_equal(f, pairs.sum(axis=1))
    np.testing.assert_allclose(F, pairs @ w)


@pytest.mark.parametrize("missing", ["any", "category"])
@pytest.mark.parametrize("combinations", [None, 1, 2])
def test_k_violations_per_combination(missing, combinations):
    rng = np.random.default_rng(5)
    frame, codes, strata = _random_case(rng, 50, 3, levels=4, p_missing=0.15, n_strata=2)
    keys = ["k0", "k1", "k2"]
    v = k_violations(frame, keys, 3, combinations=combinations, missing=missing, strata="s")
    sizes = range(1, (combinations or 3) + 1) if combinations else [3]
    expected = [c for size in sizes for c in itertools.combinations(range(3), size)]
    assert v.combinations == tuple(tuple(keys[i] for i in c) for c in expected)
    violating = np.zeros(50, dtype=bool)
    for c, records, classes in zip(expected, v.records, v.classes):
        below = _pairwise(codes[:, list(c)], strata, missing).sum(axis=1) < 3
        assert records == below.sum()
        assert classes == len({(strata[i],) + tuple(codes[i, list(c)]) for i in np.flatnonzero(below)})
        violating |= below
    assert v.total == violating.sum()
    table = v.table()
    assert list(table["records_below_k"]) == list(v.records) and len(v.lines()) >= 1


# ---------------------------------------------------------------------------------- exact optimum

def _brute_force_optimum(codes, strata, k, missing, combinations):
    """The fewest suppressed values (over every set of observed cells, by increasing size) that
    leave every record with k matching records on every key set asked."""
    cells = [(i, x) for i in range(codes.shape[0]) for x in range(codes.shape[1]) if codes[i, x] >= 0]
    for size in range(len(cells) + 1):
        for chosen in itertools.combinations(cells, size):
            c = codes.copy()
            for i, x in chosen:
                c[i, x] = -1
            if (_min_counts(c, strata, missing, combinations) >= k).all():
                return size
    raise AssertionError("no solution")


CASES = [(seed, missing) for seed in range(8) for missing in ("any", "category")]


@pytest.mark.parametrize("seed, missing", CASES)
def test_exact_optimum_equals_brute_force(seed, missing):
    rng = np.random.default_rng(100 + seed)
    n, m = int(rng.integers(4, 6)), int(rng.integers(2, 4))
    frame, codes, strata = _random_case(rng, n, m, levels=3, p_missing=0.1)
    k = int(rng.integers(2, 4))
    combinations = 2 if m == 3 and seed % 2 else None
    keys = [f"k{j}" for j in range(m)]
    unit = {c: 1.0 for c in keys}
    exact = local_suppression(frame, keys, k, combinations=combinations, missing=missing, importance=unit,
                              method="exact")
    assert exact.optimal is True and exact.lower_bound == pytest.approx(exact.total)
    assert exact.total == _brute_force_optimum(codes, strata, k, missing, combinations)
    assert (_min_counts(_codes(exact.data, keys), strata, missing, combinations) >= k).all()
    fast = local_suppression(frame, keys, k, combinations=combinations, missing=missing, importance=unit)
    assert fast.total >= exact.total


def test_fast_close_to_exact_on_small_random_cases():
    """Summed over small random files, under "a missing value is a category" the fast method
    suppresses at most 30% more values than the optimum (measured: 20% on these files, 16-23% on
    others of 20-40 records). Under "any" the optimum uses wildcards (records with most keys
    suppressed match nearly every record), which the fast method does not seek: there it is only
    checked to be no better than the optimum."""
    rng = np.random.default_rng(7)
    totals = {"any": [0, 0], "category": [0, 0]}
    for trial in range(12):
        missing = ("any", "category")[trial % 2]
        frame, codes, strata = _random_case(rng, 30, 3, levels=3, p_missing=0.0)
        keys = ["k0", "k1", "k2"]
        unit = {c: 1.0 for c in keys}
        fast = local_suppression(frame, keys, 3, missing=missing, importance=unit)
        exact = local_suppression(frame, keys, 3, missing=missing, importance=unit, method="exact")
        assert exact.optimal and fast.total >= exact.total
        totals[missing][0] += fast.total
        totals[missing][1] += exact.total
    fast, exact = totals["category"]
    assert fast <= 1.3 * exact, (fast, exact)


# ------------------------------------------------------------------------------ the fast method

@pytest.mark.parametrize("missing", ["any", "category"])
@pytest.mark.parametrize("combinations, n_strata", [(None, 1), (None, 3), (2, 1), (2, 2), (1, 2)])
def test_fast_never_leaves_a_violation(missing, combinations, n_strata):
    rng = np.random.default_rng(11 + n_strata)
    frame, codes, strata = _random_case(rng, 300, 4, levels=6, p_missing=0.05, n_strata=n_strata)
    keys = ["k0", "k1", "k2", "k3"]
    for k in (2, 3, 5):
        result = local_suppression(frame, keys, k, combinations=combinations, strata="s", missing=missing)
        released = _codes(result.data, keys)
        assert (_min_counts(released, strata, missing, combinations) >= k).all()
        assert result.violations_after.total == 0
        before = _min_counts(codes, strata, missing, combinations) < k
        assert result.violations_before.total == before.sum()
        # only values that were there are suppressed, exactly where the mask says
        np.testing.assert_array_equal(result.suppressed.to_numpy(), (codes >= 0) & (released < 0))
        assert result.total == result.suppressed.to_numpy().sum() == sum(result.n_suppressed.values())
        # records that were not violating are never suppressed under "any"
        if missing == "any":
            assert not result.suppressed.to_numpy()[~before].any()


def test_risk_threshold_variant():
    """Every record's individual risk (from its count and the weights of its matching records,
    counted here pair by pair) ends below the threshold."""
    rng = np.random.default_rng(21)
    frame, codes, strata = _random_case(rng, 200, 3, levels=5, p_missing=0.05)
    frame["w"] = rng.uniform(1, 30, 200)
    keys = ["k0", "k1", "k2"]
    result = local_suppression(frame, keys, weights="w", risk_threshold=0.2)
    pairs = _pairwise(_codes(result.data, keys), strata, "any")
    risk = individual_risk(pairs.sum(axis=1), pairs @ frame["w"].to_numpy())
    assert (risk < 0.2).all()
    pairs0 = _pairwise(codes, strata, "any")
    before = individual_risk(pairs0.sum(axis=1), pairs0 @ frame["w"].to_numpy()) >= 0.2
    assert before.any() and result.violations_before.total == before.sum() and result.total > 0


def test_a_singleton_next_to_a_class_of_k_minus_1_costs_one_value():
    """Under "any" the singleton that differs in one key suppresses it and both are safe."""
    frame = pd.DataFrame({"a": [1, 1, 2, 3, 3, 3], "b": [5, 5, 5, 6, 6, 6]})
    result = local_suppression(frame, ["a", "b"], 3)
    assert result.total == 1 and bool(result.suppressed.loc[2, "a"])


def test_importance_decides_between_equally_few_values():
    """The singleton (2, 7) can join (1, 7) by suppressing a, or (2, 8) by suppressing b: the
    less important key goes."""
    frame = pd.DataFrame({"a": [1, 1, 2, 2, 2], "b": [7, 7, 8, 8, 7]})
    for first, other in (("a", "b"), ("b", "a")):
        result = local_suppression(frame, ["a", "b"], 2, importance=[first, other])
        assert result.total == result.n_suppressed[other] == 1 and bool(result.suppressed.loc[4, other])
    # default (sdcMicro): the key with more categories is suppressed first (the cheaper)
    w = key_weights(pd.DataFrame({"x": [1, 2, 3], "y": [1, 1, 2]}), ["x", "y"], None)
    assert w[0] < w[1]
    weighted = local_suppression(frame, ["a", "b"], 2, importance={"a": 1.0, "b": 5.0})
    assert weighted.n_suppressed == {"a": 1, "b": 0} and weighted.cost == 1.0


def test_the_data_and_the_result():
    frame = pd.DataFrame({"age": [30, 30, 31, 40, 40, 40], "sex": list("MMMFFF"), "z": range(6)})
    result = local_suppression(frame, ["age", "sex"], 3)
    assert result.data["age"].isna().sum() == result.n_suppressed["age"] and result.total >= 1
    assert list(result.data["z"]) == list(range(6)) and frame["age"].notna().all()  # the input is untouched
    assert result.k == 3 and result.missing == "any" and result.method == "fast" and result.optimal is None
    assert result.lines()[0].startswith(f"{result.total:,} key values suppressed")


def test_bad_inputs():
    frame = pd.DataFrame({"a": [1, 2, 3], "b": [1, 1, 2], "w": [1.0, 2.0, 3.0]})
    with pytest.raises(InputError, match="'c' is not in the table"):
        local_suppression(frame, ["a", "c"], 2)
    with pytest.raises(InputError, match="missing must be one of"):
        local_suppression(frame, ["a"], 2, missing="none")
    with pytest.raises(ParameterError, match="larger than the number of records"):
        local_suppression(frame, ["a"], 4)
    with pytest.raises(ParameterError, match="method must be"):
        local_suppression(frame, ["a"], 2, method="best")
    with pytest.raises(ParameterError, match="go together"):
        local_suppression(frame, ["a"], 2, weights="w")
    with pytest.raises(InputError, match="importance"):
        local_suppression(frame, ["a", "b"], 2, importance=["a"])
    with pytest.raises(InputError, match="combinations"):
        local_suppression(frame, ["a", "b"], 2, combinations=0)
    with pytest.raises(InputError, match="stratum holds fewer"):
        local_suppression(frame.assign(s=[1, 1, 2]), ["a"], 2, strata="s")


# ----------------------------------------------------------------------------------- the promise

def test_promise_with_the_missing_value_rule():
    data = pd.DataFrame({"a": [1, 1, 1, 2, None], "b": [1, 2, 1, 1, 1], "s": [0] * 5})
    # counts under "any": 3, 1, 3, 2, 4 (record 4 matches every record with b = 1, and record 3)
    with pytest.raises(GuaranteeError, match="k achieved = 1 .2 records"):
        combination_promise(3, ["a", "b"], None, "local suppression", strata=["s"]).check(data)
    with pytest.raises(GuaranteeError, match="on b, s"):  # each key alone: b = 2 is unique
        combination_promise(2, ["a", "b"], 1, "local suppression", strata=["s"]).check(data)
    combination_promise(2, ["a"], None, "x", strata=["s"]).check(data)  # a = 2 matches the missing a
    with pytest.raises(GuaranteeError, match="k achieved = 1"):
        combination_promise(2, ["a"], None, "x", missing="category").check(data)  # not as a category
    assert Promise(2, (("a",),), "x").missing == "category"
    # a missing stratum is a stratum of its own, never a wildcard
    strata = pd.DataFrame({"a": [1, 1, 1, 1], "s": [0, 0, None, None]})
    combination_promise(2, ["a"], None, "x", strata=["s"]).check(strata)
    with pytest.raises(GuaranteeError):
        combination_promise(3, ["a"], None, "x", strata=["s"]).check(strata)


def test_promise_checks_a_suppression_release():
    rng = np.random.default_rng(2)
    frame, codes, strata = _random_case(rng, 200, 4, levels=5, p_missing=0.0)
    keys = ["k0", "k1", "k2", "k3"]
    for missing in ("any", "category"):
        result = local_suppression(frame, keys, 3, combinations=2, missing=missing)
        promise = combination_promise(3, keys, 2, "local suppression", missing=missing)
        promise.check(result.data)
        with pytest.raises(GuaranteeError):
            promise.check(frame)

"""Tests of probanon.metrics.risk: record linkage, interval disclosure, re-identification tests.

Expected numbers are worked out by hand in the tests or recomputed here by brute force.
"""

import json

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main
from probanon.errors import InputError, ParameterError
from probanon.metrics import (
    ReidentificationTest,
    interval_disclosure,
    linkage_probabilities,
    mechanism_reidentification_test,
    record_linkage,
    reidentification_test,
)
from probanon.microagg import MDAV

CENSUS_QI = list(range(6))  # A1-A6, the non-confidential quasi-identifiers of the swapping paper


def _brute_linkage(X, Y):
    """Independent DBRL: all pairwise distances on z-scores (original mean, population sd);
    own record among the t nearest (ties within 1e-9) counts 1/t."""
    mu, sd = X.mean(0), X.std(0)
    Zx, Zy = (X - mu) / sd, (Y - mu) / sd
    D2 = np.zeros((len(X), len(Y)))
    for j in range(X.shape[1]):
        D2 += (Zx[:, [j]] - Zy[None, :, j]) ** 2
    D = np.sqrt(D2)
    dmin = D.min(axis=1, keepdims=True)
    tied = D <= dmin + 1e-9 * np.maximum(1.0, dmin)
    own = tied[np.arange(len(X)), np.arange(len(X))]
    return np.where(own, 1.0 / tied.sum(axis=1), 0.0)


def _brute_interval(X, Y, p=0.05):
    """Independent sdcMicro dRisk: every original value within released +- p * sd(released, n-1)."""
    n = len(Y)
    sd = np.sqrt(((Y - Y.mean(0)) ** 2).sum(0) / (n - 1))
    return float(np.mean(np.all(np.abs(X - Y) <= p * sd, axis=1)))


def _mdav_id(X, k):
    m = MDAV(k).fit(X)
    return m.centroids_[m.labels_], m.labels_


# --- record linkage -------------------------------------------------------------------


def test_identity_release_links_every_record():
    X = np.random.default_rng(0).normal(size=(200, 3))
    assert record_linkage(X, X.copy()) == 1.0
    assert (linkage_probabilities(X, X.copy()) == 1.0).all()


def test_hand_example_uses_the_original_z_scores():
    # original mean (0.5, 50), population sd (0.5, 50): z(X) = (-1,-1), (1,-1), (-1,1), (1,1)
    X = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 100.0], [1.0, 100.0]])
    # z(Y) = (-1,-0.2), (0.2,-1), (1,1), (1,1)
    Y = np.array([[0.0, 40.0], [0.6, 0.0], [1.0, 100.0], [1.0, 100.0]])
    # target 0: d = 0.8 (own), 1.2, 2.83, 2.83 -> 1  (in raw units row 1 would be nearest: 0.6 < 40)
    # target 1: d = 2.15, 0.8 (own), 2, 2 -> 1
    # target 2: d = 1.2, 2.33, 2, 2 -> row 0, not own -> 0
    # target 3: rows 2 and 3 both at 0, own among them -> 1/2
    np.testing.assert_allclose(linkage_probabilities(X, Y), [1.0, 1.0, 0.0, 0.5])
    assert record_linkage(X, Y) == pytest.approx(2.5 / 4)


def test_duplicates_in_an_identity_release_share_the_link():
    X = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [5.0, 2.0], [3.0, 7.0]])
    np.testing.assert_allclose(linkage_probabilities(X, X), [1 / 3, 1 / 3, 1 / 3, 1.0, 1.0])


def test_ties_between_distinct_released_tuples():
    # target at 0 on a line; released 1 (own) and -1 are equally near -> 1/2 each way
    X = np.array([[0.0], [4.0], [8.0]])
    Y = np.array([[1.0], [-1.0], [8.0]])
    np.testing.assert_allclose(linkage_probabilities(X, Y), [0.5, 0.0, 1.0])


def test_columns_are_the_known_attributes():
    df = pd.DataFrame({"a": [0.0, 1.0, 2.0, 3.0], "b": [9.0, 1.0, 5.0, 7.0]})
    rel = pd.DataFrame({"b": [0.0, 0.0, 0.0, 0.0], "a": [0.0, 1.0, 2.0, 3.0]})  # columns by name
    assert record_linkage(df, rel, columns=["a"]) == 1.0
    assert record_linkage(df, rel, columns="b") == pytest.approx(0.25)  # all four tied
    assert record_linkage(df.to_numpy(), rel.to_numpy()[:, ::-1], columns=[0]) == 1.0


def test_mdav_id_on_census_is_at_most_one_over_k(census):
    for k in (3, 5):
        released, labels = _mdav_id(census, k)
        p = linkage_probabilities(census, released)
        np.testing.assert_allclose(p, _brute_linkage(census, released), rtol=0, atol=1e-15)
        sizes = np.bincount(labels)[labels]
        assert (p <= 1.0 / sizes + 1e-15).all()
        assert record_linkage(census, released) <= 1.0 / k


def test_perturbed_release_matches_brute_force():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4)) * [1, 10, 100, 0.1]
    Y = X + rng.normal(scale=0.4, size=X.shape) * [1, 10, 100, 0.1]
    Y[::7] = Y[::7].round(0)  # a few exact coincidences
    np.testing.assert_allclose(linkage_probabilities(X, Y), _brute_linkage(X, Y), atol=1e-15)


# --- interval disclosure ----------------------------------------------------------------


def test_interval_disclosure_hand_example():
    # released sds (n - 1): column a [0, 1, 2] -> 1, column b [10, 20, 30] -> 10
    Y = np.array([[0.0, 10.0], [1.0, 20.0], [2.0, 30.0]])
    X = np.array([[0.2, 12.0], [1.25, 20.0], [2.0, 40.0]])
    # p = 0.25: half-widths 0.25 and 2.5. rec 0 inside both; rec 1 on the boundary (inside);
    # rec 2 outside in b -> 2/3. (With the original's sd or the population sd, 0.25 * sd < 0.25
    # and record 1 would fall out.)
    assert interval_disclosure(X, Y, p=0.25) == pytest.approx(2 / 3)
    # default p = 0.05: half-widths 0.05 and 0.5 -> only exact values count: none here
    assert interval_disclosure(X, Y) == 0.0
    assert interval_disclosure(X, X) == 1.0


def test_interval_disclosure_matches_formula_on_census(census):
    released, _ = _mdav_id(census, 3)
    noisy = census + np.random.default_rng(0).normal(scale=0.3, size=census.shape) * census.std(0)
    for Y in (released, noisy):
        for p in (0.05, 0.5):
            assert interval_disclosure(census, Y, p=p) == pytest.approx(_brute_interval(census, Y, p))
    assert 0.0 < interval_disclosure(census, noisy, p=0.5) < 1.0


# --- empirical re-identification ----------------------------------------------------------


def _swap_mechanism(labels, qi):
    """MDAV-SWAP (uninformed intruder, paper Sec. IV-A): the quasi-identifier tuples are permuted
    uniformly at random inside each group; row i keeps record i's confidential values."""
    members = [np.flatnonzero(labels == g) for g in range(labels.max() + 1)]

    def mechanism(X, rng):
        released = X.copy()
        for idx in members:
            released[np.ix_(idx, qi)] = X[np.ix_(rng.permutation(idx), qi)]
        return released, labels

    return mechanism


@pytest.mark.parametrize("k", [3, 5, 10])
def test_swapping_within_groups_is_probabilistically_k_anonymous(census, k):
    labels = MDAV(k).fit(census[:, CENSUS_QI]).labels_
    expected = (labels.max() + 1) / len(census)  # sum over groups of |G| * 1/|G|, divided by n
    mechanism = _swap_mechanism(labels, CENSUS_QI)
    for rule in ("nearest", "group"):
        res = mechanism_reidentification_test(census, mechanism, releases=100, columns=CENSUS_QI,
                                              rule=rule, k=k, random_state=2026)
        assert res.trials == 100 * len(census) and len(res.run_rates) == 100
        low, high = res.interval
        assert res.rate <= 1 / k + (res.rate - low)  # rate <= 1/k + 99% margin
        assert res.lower_exceeds_bound is False
        assert low <= expected <= high


def test_the_test_detects_a_violation(census):
    # swapping inside pairs protects only at k = 2: tested at k = 3 it must be rejected
    pairs = np.arange(len(census)) // 2
    res = mechanism_reidentification_test(census, _swap_mechanism(pairs, CENSUS_QI), releases=20,
                                          columns=CENSUS_QI, rule="group", k=3, random_state=1)
    assert res.lower_exceeds_bound is True and res.interval[0] <= 0.5 <= res.interval[1]
    # publishing the original links everybody
    res = reidentification_test(census, census, columns=CENSUS_QI, k=2, runs=3, random_state=0)
    assert res.rate == 1.0 and res.run_rates == (1.0, 1.0, 1.0) and res.lower_exceeds_bound is True


def test_nearest_intruder_on_a_fixed_release_and_reproducibility(census):
    released, _ = _mdav_id(census, 5)
    expected = _brute_linkage(census, released).mean()
    res = reidentification_test(census, released, k=5, runs=200, random_state=7)
    assert isinstance(res, ReidentificationTest)
    assert res.interval[0] <= expected <= res.interval[1]
    # some targets are nearer another group's centroid: expected ~0.16, certified below 1/5
    assert expected < 0.19 and res.upper_exceeds_bound is False and res.lower_exceeds_bound is False
    assert len(set(res.run_rates)) > 1  # ties are broken at random, run by run
    again = reidentification_test(census, released, k=5, runs=200, random_state=7)
    assert again == res
    assert json.loads(json.dumps(res.to_dict()))["successes"] == res.successes


def test_callable_rule_and_clopper_pearson():
    from scipy.stats import beta

    X = np.arange(20, dtype=float).reshape(10, 2)

    def first_half(Zx, Zy, groups, rng):  # links everybody to row i for i < 5, else row 0
        return np.where(np.arange(len(Zx)) < 5, np.arange(len(Zx)), 0)

    res = reidentification_test(X, X, rule=first_half, runs=4, k=4, confidence=0.9)
    assert res.rule == "first_half" and res.successes == 4 * 5 and res.trials == 40
    lo, hi = beta.ppf(0.05, 20, 21), beta.ppf(0.95, 21, 20)  # Clopper-Pearson, 20 of 40
    assert res.interval == pytest.approx((lo, hi), rel=1e-9)
    assert res.upper_exceeds_bound is True and res.lower_exceeds_bound is True  # lo ~ 0.37 > 0.25


# --- errors -------------------------------------------------------------------------------


def test_invalid_inputs():
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(InputError, match="shape"):
        record_linkage(X, X[:5])
    bad = X.copy()
    bad[2, 1] = np.nan
    with pytest.raises(InputError, match="missing or infinite"):
        record_linkage(X, bad)
    with pytest.raises(InputError, match="missing or infinite"):
        interval_disclosure(bad, X)
    with pytest.raises(InputError, match="no numeric column"):
        record_linkage(pd.DataFrame({"a": ["x"] * 6}), pd.DataFrame({"a": ["x"] * 6}))
    with pytest.raises(InputError, match="at least 2 records"):
        interval_disclosure(X[:1], X[:1])
    for p in (0, -0.1, np.inf, "0.05", True):
        with pytest.raises(ParameterError, match="p must be"):
            interval_disclosure(X, X, p=p)
    with pytest.raises(ParameterError, match="rule"):
        reidentification_test(X, X, rule="farthest")
    with pytest.raises(ParameterError, match="groups"):
        reidentification_test(X, X, rule="group")
    with pytest.raises(InputError, match="one label per record"):
        reidentification_test(X, X, rule="group", groups=[0, 1])
    with pytest.raises(InputError, match="missing label"):
        reidentification_test(X, X, rule="group", groups=[0, 0, 0, None, 1, 1])
    with pytest.raises(ParameterError, match="runs"):
        reidentification_test(X, X, runs=0)
    with pytest.raises(ParameterError, match="confidence"):
        reidentification_test(X, X, confidence=1.0)
    with pytest.raises(ParameterError, match="larger than the number of records"):
        reidentification_test(X, X, k=7)
    with pytest.raises(InputError, match="row indices"):
        reidentification_test(X, X, rule=lambda *a: np.full(6, 6))
    with pytest.raises(ParameterError, match="mechanism"):
        mechanism_reidentification_test(X, "swap")
    with pytest.raises(InputError, match="pair"):
        mechanism_reidentification_test(X, lambda X, rng: X)
    with pytest.raises(ParameterError, match="releases"):
        mechanism_reidentification_test(X, lambda X, rng: (X, None), releases=0)
    with pytest.raises(ParameterError, match="k must be >= 1"):
        mechanism_reidentification_test(X, lambda X, rng: (X, None), k=0)


# --- command line -------------------------------------------------------------------------


def _files(tmp_path, census, k=5):
    cols = [f"A{j + 1}" for j in range(census.shape[1])]
    original = pd.DataFrame(census, columns=cols).assign(name=[f"p{i}" for i in range(len(census))])
    released_qi, _ = _mdav_id(census[:, :6], k)
    released = original.copy()
    released[cols[:6]] = released_qi
    original.to_csv(tmp_path / "orig.csv", index=False)
    released.to_csv(tmp_path / "rel.csv", index=False)
    return original, cols[:6]


def test_cli_evaluate_risk(tmp_path, capsys, census):
    original, qi = _files(tmp_path, census)
    argv = ["evaluate", str(tmp_path / "orig.csv"), str(tmp_path / "rel.csv"), "--columns", ",".join(qi), "--by-position"]
    assert main(argv + ["--json"]) == 0
    assert not {"record_linkage", "interval_disclosure"} & set(json.loads(capsys.readouterr().out))
    assert main(argv + ["--json", "--risk"]) == 0
    result = json.loads(capsys.readouterr().out)
    X, Y = original[qi].to_numpy(float), pd.read_csv(tmp_path / "rel.csv")[qi].to_numpy(float)
    assert result["record_linkage"] == pytest.approx(_brute_linkage(X, Y).mean(), abs=1e-12)
    assert result["record_linkage"] <= 1 / 5
    assert result["interval_disclosure"] == pytest.approx(_brute_interval(X, Y))
    assert result["k_achieved"] >= 5
    assert main(argv + ["--risk"]) == 0
    out = capsys.readouterr().out
    assert f"record linkage:     {result['record_linkage']:.4f}" in out
    assert f"interval disclosure: {result['interval_disclosure']:.4f}" in out


def test_cli_evaluate_risk_errors(tmp_path, capsys):
    pd.DataFrame({"a": [1.0, 2.0, 3.0]}).to_csv(tmp_path / "o.csv", index=False)
    pd.DataFrame({"a": [1.0, 2.0]}).to_csv(tmp_path / "r.csv", index=False)
    assert main(["evaluate", str(tmp_path / "o.csv"), str(tmp_path / "r.csv"), "--keys", "a", "--by-position",
                 "--risk", "--json"]) == 2
    err = capsys.readouterr()
    assert err.out == "" and len(err.err.strip().splitlines()) == 1 and "different numbers of records" in err.err

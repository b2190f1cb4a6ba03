"""Noise, rank swapping and targeted record swapping (issue 43.6): each release's property
checked by an independent computation here (sample moments against the published law within
statistical tolerance, ranks and multisets by sorting, households and areas by counting), the
reference behaviour of sdcMicro's tests (tests/testthat/test_recordSwap_outputs.R: exactly
swaprate * households swapped when no household is risky; test_rankSwap.R: P = 0, R0 = 1 and
K0 = 0 leave the data unchanged), seeds, and the commands' refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from probanon.cli import main
from probanon.errors import GuaranteeError, InputError, ParameterError
from probanon.perturbation.noise import NoisePromise, add_noise
from probanon.perturbation.rankswap import RankSwapPromise, rank_swap
from probanon.perturbation.recordswap import RecordSwapPromise, record_swap


def _correlated(n=20000, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    C = np.array([[4.0, 1.8, -0.6], [1.8, 1.0, 0.1], [-0.6, 0.1, 2.25]])
    return pd.DataFrame(rng.multivariate_normal([10, -3, 100], C, size=n), columns=["a", "b", "c"])


def _sd_range(sigma, m, alpha=1e-4):
    lo, hi = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], m - 1)
    return sigma * np.sqrt(lo / (m - 1)), sigma * np.sqrt(hi / (m - 1))


# ------------------------------------------------------------------------------------------ noise

def test_additive_noise_has_the_published_sd_per_column_and_no_correlation():
    X = _correlated()
    r = add_noise(X, "additive", 30, random_state=1)
    E = r.released.to_numpy() - X.to_numpy()
    for j, c in enumerate(X.columns):
        sigma = 0.30 * np.std(X[c].to_numpy(), ddof=1)  # sdcMicro: rnorm(N, 0, noise/100 * sd(x))
        assert r.noise_sd[j] == pytest.approx(sigma, rel=1e-12)
        lo, hi = _sd_range(sigma, len(X))
        assert lo <= np.std(E[:, j], ddof=1) <= hi
        assert abs(E[:, j].mean()) < 5 * sigma / np.sqrt(len(X))
    R = np.corrcoef(E, rowvar=False)
    assert np.abs(R[np.triu_indices(3, 1)]).max() < 5 / np.sqrt(len(X))


def test_correlated_noise_keeps_the_correlations():
    X = _correlated()
    r = add_noise(X, "correlated", 50, random_state=2)
    E = r.released.to_numpy() - X.to_numpy()
    S = np.cov(X.to_numpy(), rowvar=False)
    # noise covariance 0.5 S (sdcMicro: mvrnorm(N, 0, Sigma = noise/100 * cov(x)))
    assert np.allclose(np.cov(E, rowvar=False), 0.5 * S, atol=0.05 * np.sqrt(np.outer(np.diag(S), np.diag(S))).max())
    assert np.allclose(r.noise_sd, np.sqrt(0.5 * np.diag(S)), rtol=1e-12)
    assert np.allclose(np.corrcoef(r.released.to_numpy(), rowvar=False), np.corrcoef(X.to_numpy(), rowvar=False),
                       atol=0.02)
    additive = add_noise(X, "additive", 100 * np.sqrt(0.5), random_state=2)  # same noise variance, independent
    r_add = np.corrcoef(additive.released.to_numpy(), rowvar=False)[0, 1]
    assert abs(r_add - np.corrcoef(X.to_numpy(), rowvar=False)[0, 1]) > 0.1  # which additive noise does not keep


def test_correlated2_keeps_means_and_variances():
    X = _correlated()
    delta = 0.3
    r = add_noise(X, "correlated2", delta=delta, random_state=3)
    a = np.sqrt(1 - delta ** 2)
    for j, c in enumerate(X.columns):
        x, y = X[c].to_numpy(), r.released[c].to_numpy()
        sd = np.std(x, ddof=1)
        assert abs(y.mean() - x.mean()) < 5 * delta * sd / np.sqrt(len(x))
        assert np.std(y, ddof=1) == pytest.approx(sd, rel=0.03)
        lo, hi = _sd_range(delta * sd, len(x))
        assert lo <= np.std(y - a * x, ddof=1) <= hi
    assert r.parameters()["columns"]["a"]["scale"] == pytest.approx(a)


def test_noise_is_seeded_and_keeps_missing_values():
    X = _correlated(200)
    X.iloc[5, 1] = np.nan
    one, two = add_noise(X, "additive", 20, random_state=7), add_noise(X, "additive", 20, random_state=7)
    pd.testing.assert_frame_equal(one.released, two.released)
    assert not add_noise(X, "additive", 20, random_state=8).released.equals(one.released)
    assert np.isnan(one.released.iloc[5, 1]) and one.released.isna().sum().sum() == 1
    NoisePromise(X, one).check(one.released)


def test_noise_promise_refuses_a_misstated_level():
    X = _correlated(5000)
    r = add_noise(X, "additive", 40, random_state=1)
    from dataclasses import replace

    with pytest.raises(GuaranteeError, match="published noise sd"):
        NoisePromise(X, replace(r, noise_sd=r.noise_sd * 1.1)).check(r.released)
    with pytest.raises(ParameterError):
        add_noise(X, "ROMM")
    with pytest.raises(InputError):
        add_noise(X.head(1), "additive")


# ------------------------------------------------------------------------------------ rank swap

def _rank_check(x, y, p, top, bottom):
    """Independent check of one column of distinct values: (coded count, window, moved count)."""
    m = x.size
    order = np.argsort(-x)
    T, B = int(m * top / 100), int(np.floor(m * bottom / 100))
    assert np.allclose(y[order[:T]], x[order[:T]].mean()) if T else True
    assert np.allclose(y[order[m - B:]], x[order[m - B:]].mean()) if B else True
    mid = order[T:m - B]
    u = mid.size
    L = int(np.floor(u * p / 100))
    rank_of = {v: i for i, v in enumerate(x[mid])}  # rank among the uncoded, from the highest
    assert sorted(y[mid]) == sorted(x[mid])  # the multiset
    got = np.array([rank_of[v] for v in y[mid]])  # rank i received the value of rank got[i]
    assert np.abs(got - np.arange(u)).max() <= L
    assert (got[got] == np.arange(u)).all()  # pairs: each value swapped at most once
    return L, int((got != np.arange(u)).sum())


def test_rank_swap_window_multiset_and_pairs_by_brute_force():
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"a": rng.permutation(1000).astype(float), "b": rng.normal(size=1000)})
    r = rank_swap(X, p=5, top=5, bottom=3, random_state=1)
    for j, c in enumerate(X.columns):
        L, moved = _rank_check(X[c].to_numpy(), r.released[c].to_numpy(), 5, 5, 3)
        assert r.window[j] == L == 46 and r.swapped[j] == moved
        assert moved > 0.9 * (1000 - 50 - 30)  # nearly every value finds a partner
    RankSwapPromise(X, r, r.coded).check(r.released)


def test_rank_swap_r0_window_as_sdcmicro_computes_it():
    rng = np.random.default_rng(5)
    x = rng.lognormal(size=2000)
    r = rank_swap(pd.DataFrame({"x": x}), r0=0.9, random_state=2)
    s = np.sort(x)[::-1]
    T, B = 100, 100
    mid = s[T:2000 - B]
    P = np.sqrt(2 * mid.var() * (1 - 0.9)) / abs(s[2000 - B] - s[T - 1])  # src/RankSwapping.h
    assert r.window[0] == int(np.floor(mid.size * P))
    _rank_check(x, r.released["x"].to_numpy(), 100 * P, 5, 5)


@pytest.mark.parametrize("option", [{"p": 0}, {"r0": 1.0}, {"k0": 0.0}])
def test_rank_swap_without_a_window_changes_nothing(option):
    X = pd.DataFrame({"a": np.arange(10000.0), "b": np.arange(10000.0)})  # sdcMicro's test_rankSwap.R
    r = rank_swap(X, top=0, bottom=0, random_state=1, **option)
    assert r.released.equals(X)


def test_rank_swap_is_seeded_and_its_promise_refuses_a_far_move():
    rng = np.random.default_rng(6)
    X = pd.DataFrame({"a": rng.normal(size=500)})
    one, two = rank_swap(X, p=2, random_state=3), rank_swap(X, p=2, random_state=3)
    pd.testing.assert_frame_equal(one.released, two.released)
    bad = one.released.copy()
    mid = np.flatnonzero(one.coded[:, 0] == 0)
    hi, lo = mid[np.argmax(X["a"].to_numpy()[mid])], mid[np.argmin(X["a"].to_numpy()[mid])]
    bad.iloc[[hi, lo], 0] = bad.iloc[[lo, hi], 0].to_numpy()
    with pytest.raises(GuaranteeError, match="ranks"):
        RankSwapPromise(X, one, one.coded).check(bad)
    with pytest.raises(ParameterError):
        rank_swap(X, p=5, r0=0.9)


# ---------------------------------------------------------------------------------- record swap

def _census(H=2000, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 6, H)
    n1 = rng.integers(0, 3, H)
    n2 = n1 * 10 + rng.integers(0, 4, H)
    n3 = n2 * 10 + rng.integers(0, 5, H)
    i = np.repeat(np.arange(H), size)
    return pd.DataFrame({"hid": np.repeat(rng.permutation(H) * 3 + 11, size), "nuts1": n1[i], "nuts2": n2[i],
                         "nuts3": n3[i], "hsize": size[i], "tenure": rng.integers(0, 3, H)[i],
                         "age": rng.integers(0, 8, i.size), "sex": rng.integers(1, 3, i.size),
                         "income": rng.normal(size=i.size)})


HIER = ["nuts1", "nuts2", "nuts3"]


def _households(frame):
    return frame.groupby("hid", sort=True)[HIER + ["tenure", "hsize"]].first()


@pytest.mark.parametrize("rate", [0.05, 0.1, 0.25])
def test_record_swap_moves_whole_households_at_the_rate(rate):
    d = _census()
    r = record_swap(d, "hid", HIER, similar=[["hsize"]], swaprate=rate, k=1, risk_variables=["age", "sex"],
                    carry_along=["tenure"], random_state=2021)
    out = r.released
    assert (out.groupby("hid")[HIER + ["tenure"]].nunique() == 1).all().all()  # households intact
    before, after = _households(d), _households(out)
    changed = (before[HIER] != after[HIER]).any(axis=1)
    assert changed.sum() == round(rate * 2000) == r.households_swapped  # sdcMicro: exactly swaprate * nhid
    for h in range(3):  # households per area at every level kept
        pd.testing.assert_series_equal(before.groupby(HIER[:h + 1]).size(), after.groupby(HIER[:h + 1]).size())
    pd.testing.assert_series_equal(d.groupby("nuts3").size(), out.groupby("nuts3").size())  # hsize in the profile
    # each swapped household took the geography and tenure of one other, of the same size
    moved = after[changed]
    for hid, row in moved.iterrows():
        src = before[(before[HIER + ["tenure"]] == row[HIER + ["tenure"]]).all(axis=1) & changed]
        assert (src["hsize"] == row["hsize"]).any()
    pd.testing.assert_frame_equal(d.drop(columns=HIER + ["tenure"]), out.drop(columns=HIER + ["tenure"]))
    RecordSwapPromise(d, r, "hid").check(out)


def test_record_swap_swaps_every_risky_household_across_its_level():
    d = _census(1500, seed=3)
    r = record_swap(d, "hid", HIER, similar=[["hsize"], []], swaprate=0.02, k=3, risk_variables=["age", "sex"],
                    random_state=5)
    # risk by brute force: a household is risky at the first level where a member's cell has < 3 records
    H = d["hid"].nunique()
    codes = pd.factorize(d["hid"])[0]
    first_level = np.full(H, 3)
    for h in range(2, -1, -1):
        count = d.groupby(["age", "sex"] + HIER[:h + 1])["hid"].transform("size").to_numpy()
        risky = np.zeros(H, bool)
        np.logical_or.at(risky, codes, count < 3)
        first_level[risky] = h
    assert (first_level < 3).sum() == r.risky_before > 0
    assert r.unmatched == 0
    heads = np.unique(codes, return_index=True)[1]
    geo_before = d.iloc[heads][HIER].to_numpy()
    geo_after = r.released.iloc[heads][HIER].to_numpy()
    for hh in np.flatnonzero(first_level < 3):
        level = first_level[hh]
        assert r.partner[hh] != hh
        assert (geo_before[hh, :level + 1] != geo_after[hh, :level + 1]).any()  # moved across that level
    assert r.households_swapped >= 2 * r.target_pairs


def test_record_swap_is_seeded_and_refuses_bad_households():
    d = _census(400, seed=1)
    kw = dict(similar=[["hsize"]], swaprate=0.1, k=2, risk_variables=["age"], random_state=9)
    pd.testing.assert_frame_equal(record_swap(d, "hid", HIER, **kw).released, record_swap(d, "hid", HIER, **kw).released)
    bad = d.copy()
    second = int(np.flatnonzero(bad["hid"].duplicated().to_numpy())[0])  # a member after the first of its household
    bad.loc[second, "tenure"] += 1
    with pytest.raises(InputError, match="differs within a household"):
        record_swap(bad, "hid", HIER, carry_along=["tenure"], **kw)
    with pytest.raises(ParameterError):
        record_swap(d, "hid", HIER, swaprate=1.5)


# ---------------------------------------------------------------------------------------- the CLI

def _run(argv):
    try:
        return main([str(a) for a in argv])
    except SystemExit as exc:
        return exc.code


def _original_in_released_order(original, link):
    return original.iloc[np.argsort(pd.read_csv(link)["released_row"].to_numpy())].reset_index(drop=True)


def test_cli_noise_publishes_the_level_that_was_drawn(tmp_path):
    X = _correlated(3000)
    X["other"] = np.arange(3000)
    X.to_csv(tmp_path / "in.csv", index=False)
    out = tmp_path / "out.csv"
    assert _run(["noise", tmp_path / "in.csv", "-o", out, "--keys", "a,b", "--keep-other", "--noise", "25",
                 "--seed", "1", "--link", tmp_path / "lk.csv"]) == 0
    law = json.loads(Path(str(out) + ".noise.json").read_text())
    assert law["method"] == "additive" and law["noise_percent"] == 25
    released, original = pd.read_csv(out), _original_in_released_order(X, tmp_path / "lk.csv")
    for c in ("a", "b"):
        sigma = 0.25 * np.std(X[c], ddof=1)
        assert law["columns"][c]["noise_sd"] == pytest.approx(sigma)
        lo, hi = _sd_range(sigma, 3000)
        assert lo <= np.std(released[c] - original[c], ddof=1) <= hi
    assert (released["c"] == original["c"]).all()


def test_cli_noise_refuses_a_release_whose_noise_does_not_match(tmp_path, monkeypatch):
    import probanon.perturbation.noise as noise
    from dataclasses import replace

    real = noise.add_noise
    monkeypatch.setattr(noise, "add_noise", lambda *a, **k: (lambda r: replace(r, noise_sd=r.noise_sd / 2))(real(*a, **k)))
    _correlated(2000).to_csv(tmp_path / "in.csv", index=False)
    before = sorted(os.listdir(tmp_path))
    assert _run(["noise", tmp_path / "in.csv", "-o", tmp_path / "out.csv", "--keys", "a,b,c", "--seed", "1"]) == 2
    assert sorted(os.listdir(tmp_path)) == before


def test_cli_rank_swap_keeps_each_column_values(tmp_path):
    rng = np.random.default_rng(2)
    X = pd.DataFrame({"a": rng.permutation(600), "b": rng.normal(size=600).round(6), "c": np.arange(600)})
    X.to_csv(tmp_path / "in.csv", index=False)
    assert _run(["rank-swap", tmp_path / "in.csv", "-o", tmp_path / "out.csv", "--keys", "a,b",
                 "--confidential", "c", "-p", "3", "--top", "0", "--bottom", "0", "--seed", "4",
                 "--link", tmp_path / "lk.csv"]) == 0
    released, original = pd.read_csv(tmp_path / "out.csv"), _original_in_released_order(X, tmp_path / "lk.csv")
    for c in ("a", "b"):
        _rank_check(original[c].to_numpy(np.float64), released[c].to_numpy(np.float64), 3, 0, 0)
    assert (released["c"] == original["c"]).all()


def test_cli_record_swap(tmp_path, capsys):
    d = _census(800, seed=2)
    d.to_csv(tmp_path / "in.csv", index=False)
    out = tmp_path / "out.csv"
    assert _run(["record-swap", tmp_path / "in.csv", "-o", out, "--household", "hid", "--hierarchy", "nuts1,nuts2,nuts3",
                 "--risk-variables", "age,sex", "--similar", "hsize", "--carry-along", "tenure", "--swaprate", "0.1",
                 "-k", "1", "--keep-other", "--seed", "3", "--link", tmp_path / "lk.csv"]) == 0
    assert "80 of 800 households swapped" in capsys.readouterr().err
    released, original = pd.read_csv(out), _original_in_released_order(d, tmp_path / "lk.csv")
    assert (released.groupby("hid")[HIER + ["tenure"]].nunique() == 1).all().all()
    assert released["hid"].nunique() == 800 and released["hid"].min() == 1  # renumbered
    assert (pd.factorize(released["hid"])[0] == pd.factorize(original["hid"])[0]).all()  # same grouping
    changed = (released[HIER].to_numpy() != original[HIER].to_numpy()).any(axis=1)
    assert original.loc[changed, "hid"].nunique() == 80


@pytest.mark.parametrize("change", [
    ["--swaprate", "1.5"], ["--hierarchy", "nuts1,nope"], ["--carry-along", "age"], ["-k", "-1"],
    ["--household", "age"], ["--household", None]])
def test_cli_record_swap_bad_input_writes_nothing(tmp_path, capsys, change):
    _census(100, seed=2).to_csv(tmp_path / "in.csv", index=False)
    argv = ["record-swap", tmp_path / "in.csv", "-o", tmp_path / "out.csv", "--household", "hid",
            "--hierarchy", "nuts1,nuts2", "--risk-variables", "sex", "--keep-other", "--seed", "1"]
    i = argv.index(change[0]) if change[0] in argv else None
    argv = argv[:i] + [c for c in change if c is not None and change[1] is not None] + argv[i + 2:] \
        if i is not None else argv + change
    before = sorted(os.listdir(tmp_path))
    assert _run(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("probanon: error:"), err
    assert sorted(os.listdir(tmp_path)) == before


def test_recipe_runs_record_swap_and_its_resolved_recipe_repeats_it(tmp_path):
    _census(300, seed=4).to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "r.toml").write_text(
        'command = "record-swap"\ninput = "in.csv"\noutput = "out.csv"\n[options]\nhousehold = "hid"\n'
        'hierarchy = ["nuts1", "nuts2"]\nrisk_variables = ["age"]\nsimilar = "hsize/"\nswaprate = 0.1\n'
        'drop = ["nuts3"]\nkeep_other = true\nseed = 5\n')
    assert _run(["release", tmp_path / "r.toml"]) == 0
    first = (tmp_path / "out.csv").read_bytes()
    assert _run(["release", tmp_path / "out.csv.recipe.toml", "--force"]) == 0
    assert (tmp_path / "out.csv").read_bytes() == first


def test_cli_record_swap_may_drop_the_household_id(tmp_path):
    d = _census(200, seed=6)
    d.to_csv(tmp_path / "in.csv", index=False)
    assert _run(["record-swap", tmp_path / "in.csv", "-o", tmp_path / "out.csv", "--household", "hid",
                 "--hierarchy", "nuts1,nuts2", "--risk-variables", "sex", "--drop", "hid,nuts3", "--keep-other",
                 "--seed", "2", "--link", tmp_path / "lk.csv"]) == 0
    released, original = pd.read_csv(tmp_path / "out.csv"), _original_in_released_order(d, tmp_path / "lk.csv")
    assert "hid" not in released
    assert (released.groupby(original["hid"])[["nuts1", "nuts2"]].nunique() == 1).all().all()

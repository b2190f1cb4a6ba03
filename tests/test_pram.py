"""Invariant PRAM (issue 43, point 4): the matrices' invariance and the release's frequencies checked
by computations written here, sdcMicro's construction on a case worked by hand, strata, households,
missing values, the corrected estimator, the promise and the ``pram`` command."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from probanon.categorical.pram import PRAM, corrected_frequencies, invariant_matrix, invariant_of
from probanon.categorical.pram_measure import PramPromise, matrices_from_table, matrix_table, pram_measure
from probanon.cli import main
from probanon.errors import GuaranteeError, InputError, ParameterError


def _people(n=3000, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"region": rng.choice(list("abcde"), n, p=[0.4, 0.25, 0.15, 0.12, 0.08]),
                         "marital": rng.choice(["single", "married", "widowed"], n, p=[0.5, 0.4, 0.1]),
                         "sex": rng.choice(["F", "M"], n), "income": rng.normal(3e4, 5e3, n).round(2)})


def _invariance_gap(t, R) -> float:
    p = np.asarray(t, dtype=float) / np.sum(t)
    return float(np.abs(p @ R - p).max())


# ------------------------------------------------------------------ the matrix


def test_sdcmicro_construction_on_a_case_worked_by_hand():
    # t = (75, 25), P = [[.8, .2], [.2, .8]] (diagonal fixed at pd): s = pP = (.65, .35);
    # Q = [[.6/.65, .05/.65], [.15/.35, .2/.35]] = [[12/13, 1/13], [3/7, 4/7]];
    # R = PQ = [[75, 16], [48, 43]] / 91; alpha = 0.5 gives (R + I) / 2
    R = invariant_matrix([75, 25], pd=0.8, alpha=1.0, diagonal="fixed")
    np.testing.assert_allclose(R, np.array([[75, 16], [48, 43]]) / 91, rtol=1e-12)
    half = invariant_matrix([75, 25], pd=0.8, alpha=0.5, diagonal="fixed")
    np.testing.assert_allclose(half, (np.array([[75, 16], [48, 43]]) / 91 + np.eye(2)) / 2, rtol=1e-12)
    np.testing.assert_allclose(np.array([75, 25]) @ R, [75, 25], rtol=1e-12)


def test_the_real_sdcmicro_matrix_is_reproduced():
    # sdcMicro 5.8.1, built here (../shared/peers/sdcmicro): x = factor(50 a, 30 b, 15 c, 5 d);
    # set.seed(42); d <- runif(4, 0.7, 1)   (the diagonal pram() draws first)
    # set.seed(42); Rs <- attr(pram(x, pd = 0.7, alpha = 0.6), "pram_params")$x$Rs
    d = np.array([0.97444181304890665, 0.98112262398935857, 0.78584186043590298, 0.9491342878201976])
    sdcmicro = np.array([
        [0.96954930929231609, 0.0072827586213025453, 0.018357313973157457, 0.0048106181132239233],
        [0.012137931035504243, 0.95883789590725221, 0.024597110130567104, 0.0044270629266763969],
        [0.061191046577191523, 0.049194220261134215, 0.85461802603512504, 0.034996707126549183],
        [0.048106181132239224, 0.026562377560058383, 0.10499012137964756, 0.82034131992805481]])
    P = np.repeat(((1 - d) / 3)[:, None], 4, axis=1)
    np.fill_diagonal(P, d)
    np.testing.assert_allclose(invariant_of(P, [50, 30, 15, 5], alpha=0.6), sdcmicro, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("pd_, alpha, diagonal", [(0.8, 0.5, "uniform"), (0.1, 1.0, "uniform"), (0.5, 0.3, "fixed"),
                                                  (1.0, 0.5, "uniform")])
def test_built_matrices_are_row_stochastic_and_invariant(pd_, alpha, diagonal):
    rng = np.random.default_rng(5)
    for L in (2, 3, 7, 40):
        t = rng.integers(1, 10_000, L)
        R = invariant_matrix(t, pd=pd_, alpha=alpha, random_state=rng, diagonal=diagonal)
        assert (R >= 0).all() and np.allclose(R.sum(axis=1), 1.0, atol=1e-12)
        assert _invariance_gap(t, R) < 1e-12
        if pd_ == 1.0:  # P = I: nothing moves (sdcMicro's identity-matrix test: no change)
            np.testing.assert_allclose(R, np.eye(L), atol=1e-12)
        # the diagonal keeps at least (1 - alpha): the released matrix is alpha R + (1 - alpha) I
        assert (np.diag(R) >= 1 - alpha - 1e-12).all()


def test_the_structured_construction_is_the_general_one():
    # invariant_matrix draws P's diagonal as sdcMicro's runif(L, pd, 1) and uses P's structure;
    # invariant_of takes P as a matrix and multiplies
    t = np.array([40.0, 7.0, 13.0, 25.0, 15.0])
    d = np.random.default_rng(9).uniform(0.6, 1.0, 5)
    P = np.repeat(((1 - d) / 4)[:, None], 5, axis=1)
    np.fill_diagonal(P, d)
    np.testing.assert_allclose(invariant_matrix(t, pd=0.6, alpha=0.7, random_state=9), invariant_of(P, t, alpha=0.7),
                               rtol=1e-12, atol=1e-15)


def test_bad_matrix_parameters_are_refused():
    with pytest.raises(ParameterError, match="pd"):
        invariant_matrix([1, 2], pd=0.0)
    with pytest.raises(ParameterError, match="alpha"):
        invariant_matrix([1, 2], alpha=1.5)
    with pytest.raises(InputError):
        invariant_matrix([3, 0])
    with pytest.raises(ParameterError, match="pd"):
        PRAM(pd=1.2).fit(_people(20)[["sex"]])
    with pytest.raises(ParameterError, match="no value for the key"):
        PRAM(pd={"sex": 0.5}).fit(_people(20)[["sex", "region"]])
    with pytest.raises(ParameterError, match="one number each"):
        PRAM(pd={"sex": 0.5, "region": 0.5}, joint=True).fit(_people(20)[["sex", "region"]])
    with pytest.raises(ParameterError, match="alpha"):
        PRAM(alpha=[0.5, 2.0]).fit(_people(20)[["sex", "region"]])


# ------------------------------------------------------------------ the release


def test_empirical_frequencies_and_transitions_follow_the_matrix():
    n = 200_000
    rng = np.random.default_rng(1)
    t = np.array([0.45, 0.25, 0.15, 0.1, 0.05])
    X = pd.DataFrame({"k": rng.choice(list("vwxyz"), n, p=t)})
    model = PRAM(pd=0.5, alpha=0.8, random_state=2)
    Y = model.fit_transform(X)
    (tm,) = model.transition_matrices_
    R = tm.matrix
    counts = X["k"].value_counts().reindex(tm.categories).to_numpy()
    after = Y["k"].value_counts().reindex(tm.categories, fill_value=0).to_numpy()
    # released count of j: a sum of independent Bernoulli(R[c_i, j]); mean (t R)_j = t_j
    sd = np.sqrt(counts @ (R * (1 - R)))
    assert (np.abs(after - counts) <= 5 * sd).all(), (after, counts, sd)
    # records of category i land in j with probability R[i, j]: binomial tolerance per cell
    observed = pd.crosstab(X["k"], Y["k"]).reindex(index=tm.categories, columns=tm.categories, fill_value=0).to_numpy()
    sd_cells = np.sqrt(counts[:, None] * R * (1 - R))
    assert (np.abs(observed - counts[:, None] * R) <= 5 * sd_cells + 1).all()
    assert (observed.diagonal() < counts).all()  # something moved


def test_same_seed_same_output_and_another_seed_another():
    X = _people()
    a = PRAM(random_state=7).fit_transform(X[["region", "marital"]])
    b = PRAM(random_state=7).fit_transform(X[["region", "marital"]])
    c = PRAM(random_state=8).fit_transform(X[["region", "marital"]])
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)


def test_strata_never_mix_and_each_matrix_keeps_its_stratum_frequencies():
    X = _people()
    X.loc[X["sex"] == "M", "region"] = X.loc[X["sex"] == "M", "region"].replace({"e": "d"})  # no 'e' among men
    model = PRAM(pd=0.3, alpha=1.0, random_state=3)
    Y = model.fit_transform(X[["region", "marital"]], strata=X[["sex"]])
    for sex, rows in X.groupby("sex").groups.items():
        for key in ("region", "marital"):
            assert set(Y.loc[rows, key]) <= set(X.loc[rows, key])
    assert "e" not in set(Y.loc[X["sex"] == "M", "region"])
    numbered = X.assign(zone=np.where(X["sex"] == "F", 1.0, np.nan))  # a missing stratum value is a stratum
    Z = PRAM(pd=0.3, random_state=3).fit_transform(numbered[["region"]], strata=numbered[["zone"]])
    assert "e" not in set(Z.loc[numbered["zone"].isna(), "region"])
    assert len(model.transition_matrices_) == 4
    for tm in model.transition_matrices_:
        (key,), (sex,) = tm.keys, tm.stratum
        t = X.loc[X["sex"] == sex, key].value_counts().reindex(tm.categories).to_numpy()
        assert _invariance_gap(t, tm.matrix) < 1e-12


def test_missing_values_stay_missing_and_are_not_counted():
    X = _people(500)
    X.loc[[1, 5, 9], "region"] = None
    X.loc[[2, 5], "marital"] = None
    model = PRAM(pd=0.1, alpha=1.0, random_state=4)
    Y = model.fit_transform(X[["region", "marital"]])
    for key in ("region", "marital"):
        assert (Y[key].isna() == X[key].isna()).all()
    tm = next(m for m in model.transition_matrices_ if m.keys == ("region",))
    assert tm.frequencies.sum() == 497
    joint = PRAM(pd=0.1, alpha=1.0, joint=True, random_state=4).fit_transform(X[["region", "marital"]])
    untouched = X["region"].isna() | X["marital"].isna()
    pd.testing.assert_frame_equal(joint[untouched], X.loc[untouched, ["region", "marital"]])


def test_joint_pram_releases_original_combinations_and_keeps_their_frequencies():
    X = _people()
    model = PRAM(pd=0.2, alpha=1.0, joint=True, random_state=5)
    Y = model.fit_transform(X[["region", "marital"]])
    original = set(map(tuple, X[["region", "marital"]].to_numpy()))
    assert set(map(tuple, Y.to_numpy())) <= original
    (tm,) = model.transition_matrices_
    t = X.groupby(["region", "marital"]).size().reindex(pd.MultiIndex.from_tuples(tm.categories)).to_numpy()
    assert _invariance_gap(t, tm.matrix) < 1e-12
    assert (Y != X[["region", "marital"]]).any(axis=1).mean() > 0.05


def test_households_get_one_value_and_the_matrix_counts_households():
    rng = np.random.default_rng(6)
    sizes = rng.integers(1, 6, 400)
    house = np.repeat(np.arange(400), sizes)
    region = np.repeat(rng.choice(list("abcd"), 400, p=[0.4, 0.3, 0.2, 0.1]), sizes)
    X = pd.DataFrame({"region": region, "age": rng.integers(0, 90, house.size)})
    model = PRAM(pd=0.2, alpha=1.0, random_state=1)
    Y = model.fit_transform(X[["region"]], households=house)
    assert (pd.Series(Y["region"].to_numpy()).groupby(house).nunique() == 1).all()
    assert (Y["region"] != X["region"]).any()
    (tm,) = model.transition_matrices_
    per_household = pd.Series(region).groupby(house).first().value_counts().reindex(tm.categories).to_numpy()
    np.testing.assert_array_equal(tm.frequencies, per_household)
    assert _invariance_gap(per_household, tm.matrix) < 1e-12
    with pytest.raises(InputError, match="not a household variable"):
        PRAM().fit(X[["age"]], households=house)


def test_transform_applies_the_fitted_matrices_to_other_records_and_keeps_the_index():
    X = _people(1000)
    X.index = X.index * 3 + 10
    model = PRAM(pd=0.3, random_state=1).fit(X[["region", "marital"]])
    part = model.transform(X[["region", "marital"]].head(200))
    assert list(part.index) == list(X.index[:200])
    assert set(part["region"]) <= set(X["region"])
    with pytest.raises(InputError, match="'zz' of region was not a category of it"):
        model.transform(X[["region", "marital"]].head(5).assign(region="zz"))
    with pytest.raises(InputError, match="fitted on the keys"):
        model.transform(X[["marital", "region"]])


# ------------------------------------------------------------------ correction and measure


def test_corrected_frequencies_recover_the_expected_frequencies():
    t = np.array([500.0, 300.0, 150.0, 50.0])
    R = invariant_matrix(t, pd=0.6, alpha=0.7, random_state=3)
    np.testing.assert_allclose(corrected_frequencies(t @ R, R), t, rtol=1e-10)
    other = np.array([10.0, 200.0, 5.0, 90.0])  # a subgroup's table: E[t_obs] = other R, not other
    np.testing.assert_allclose(corrected_frequencies(other @ R, R), other, rtol=1e-10)
    names = ["a", "b", "c", "d"]
    frame = pd.DataFrame(R, index=names, columns=names)
    observed = pd.Series(other @ R, index=names)[["d", "a", "c", "b"]]
    got = corrected_frequencies(observed, frame)
    np.testing.assert_allclose(got[names].to_numpy(), other, rtol=1e-10)
    with pytest.raises(InputError, match="singular"):
        corrected_frequencies([1.0, 1.0], np.ones((2, 2)) / 2)


def test_the_published_matrix_corrects_a_subgroup_table_of_a_release():
    # region's matrix is built on everyone; a subgroup (sex F) with another distribution: its
    # released counts are biased towards the others (E = t_F R), the corrected ones are not
    n = 60_000
    rng = np.random.default_rng(11)
    sex = rng.choice(["F", "M"], n)
    region = np.where(sex == "F", rng.choice(list("abcd"), n, p=[0.7, 0.1, 0.1, 0.1]),
                      rng.choice(list("abcd"), n, p=[0.1, 0.2, 0.3, 0.4]))
    X = pd.DataFrame({"region": region, "sex": sex})
    model = PRAM(pd=0.2, alpha=1.0, random_state=4)
    Y = model.fit_transform(X[["region"]])
    (tm,) = model.transition_matrices_
    R = tm.matrix
    women = X["sex"] == "F"
    t_f = X.loc[women, "region"].value_counts().reindex(tm.categories).to_numpy(float)
    observed = Y.loc[women, "region"].value_counts().reindex(tm.categories, fill_value=0).to_numpy(float)
    t_hat = corrected_frequencies(observed, R)
    # Cov(t_obs) = sum_i t_i (diag(R_i) - R_i' R_i) (a multinomial per original category), Cov(t_hat) = R^-T C R^-1
    cov = sum(t_f[i] * (np.diag(R[i]) - np.outer(R[i], R[i])) for i in range(len(t_f)))
    inv = np.linalg.inv(R)
    sd = np.sqrt(np.diag(inv.T @ cov @ inv))
    assert (np.abs(t_hat - t_f) <= 5 * sd).all(), (t_hat, t_f, sd)
    assert np.abs(observed - t_f).max() > 10 * sd.max()  # uncorrected, the subgroup's table is far off


def test_measure_counts_changes_frequencies_and_transitions():
    X = pd.DataFrame({"k": ["a", "a", "b", "b", None], "j": [1, 2, 3, 4, 5]})
    Y = pd.DataFrame({"k": ["a", "b", "b", "a", None], "j": [1, 2, 3, 4, 5]})
    m = pram_measure(X, Y, ["k", "j"])
    assert m.changes["k"].changed == 2 and m.changes["j"].changed == 0 and m.any_changed == 2
    freq = m.changes["k"].frequencies.set_index("category")
    assert freq.loc["a", "before"] == 2 and freq.loc["a", "after"] == 2
    pairs = {(r["from"], r["to"]): r["records"] for _, r in m.changes["k"].transitions.dropna().iterrows()}
    assert pairs == {("a", "a"): 1, ("a", "b"): 1, ("b", "b"): 1, ("b", "a"): 1}
    assert "k: 2 of 5 records changed (40.00%)" in m.lines()[0]


def test_matrix_table_round_trip_and_the_promise_refuses_what_it_does_not_keep():
    X = _people(2000)
    model = PRAM(pd=0.5, random_state=2)
    Y = model.fit_transform(X[["region", "marital"]], strata=X[["sex"]])
    table = matrix_table(model.transition_matrices_, ["sex"])
    back = matrices_from_table(table, ["region", "marital"], False, ["sex"])
    for tm in model.transition_matrices_:
        np.testing.assert_allclose(back[(tm.keys, tm.stratum)].loc[tm.categories, tm.categories].to_numpy(), tm.matrix)
    promise = PramPromise(X, ["region", "marital"], table, False, ["sex"])
    promise.check(Y)
    moved = Y.copy()
    moved.loc[X.index[X["sex"] == "M"][0], "region"] = "zz"
    with pytest.raises(GuaranteeError, match="not categories"):
        promise.check(moved)
    skewed = table.copy()
    skewed.loc[0, "probability"] += 1e-6
    skewed.loc[1, "probability"] -= 1e-6
    with pytest.raises(GuaranteeError, match="not invariant"):
        PramPromise(X, ["region", "marital"], skewed, False, ["sex"]).check(Y)
    X2 = X.copy()
    X2.loc[X2.index[:3], "marital"] = None
    Y2 = PRAM(pd=0.5, random_state=2).fit_transform(X2[["region", "marital"]], strata=X2[["sex"]])
    table2 = matrix_table(PRAM(pd=0.5, random_state=2).fit(X2[["region", "marital"]], strata=X2[["sex"]])
                          .transition_matrices_, ["sex"])
    PramPromise(X2, ["region", "marital"], table2, False, ["sex"]).check(Y2)
    filled = Y2.copy()
    filled.loc[X2.index[0], "marital"] = "single"
    with pytest.raises(GuaranteeError, match="missing value was perturbed"):
        PramPromise(X2, ["region", "marital"], table2, False, ["sex"]).check(filled)
    with pytest.raises(GuaranteeError, match="members of a household"):
        PramPromise(X2.assign(house=0), ["region"], table2, False, ["sex"], household="house").check(Y2)
    with pytest.raises(GuaranteeError, match="row-stochastic"):
        PramPromise(X, ["region", "marital"], table.assign(probability=table["probability"] * 1.01), False,
                    ["sex"]).check(Y)


# ------------------------------------------------------------------ the command


def _write(tmp_path, frame=None):
    frame = _people() if frame is None else frame
    frame.insert(0, "house", np.arange(len(frame)) // 3)
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    return path, frame


def test_pram_command_writes_release_matrix_and_link(tmp_path, capsys):
    path, frame = _write(tmp_path)
    out, matrix, link = tmp_path / "out.csv", tmp_path / "m.csv", tmp_path / "lk.csv"
    argv = ["pram", str(path), "-o", str(out), "--keys", "region,marital", "--strata", "sex", "--pd", "0.6",
            "--alpha", "region=0.9,marital=0.4", "--confidential", "income", "--drop", "house",
            "--matrix", str(matrix), "--seed", "3", "--link", str(link)]
    assert main(argv) == 0, capsys.readouterr().err
    err = capsys.readouterr().err
    assert "what PRAM changed" in err and "region:" in err
    released, table, lk = pd.read_csv(out), pd.read_csv(matrix), pd.read_csv(link)
    assert list(table.columns) == ["key", "sex", "from", "to", "probability"]
    original = frame.iloc[lk.sort_values("released_row")["original_row"].to_numpy() - 1].reset_index(drop=True)
    assert (released["income"] == original["income"]).all() and (released["sex"] == original["sex"]).all()
    for (key, sex), cells in table.groupby(["key", "sex"]):
        R = cells.pivot(index="from", columns="to", values="probability")
        t = frame.loc[frame["sex"] == sex, key].value_counts().reindex(R.index).to_numpy()
        assert np.allclose(R.sum(axis=1), 1.0, atol=1e-12) and _invariance_gap(t, R.to_numpy()) < 1e-9
        assert set(released.loc[original["sex"] == sex, key]) <= set(R.index)
    changed = (released["region"] != original["region"]).mean()
    assert 0.0 < changed < 0.5
    again = tmp_path / "again.csv"
    assert main(argv[:3] + [str(again)] + argv[4:] + ["--force"]) == 0
    assert again.read_bytes() == out.read_bytes()


def test_pram_command_households_and_joint(tmp_path, capsys):
    frame = _people(900)
    frame["region"] = np.repeat(frame["region"].to_numpy()[::3], 3)
    path, frame = _write(tmp_path, frame)
    out, matrix = tmp_path / "out.csv", tmp_path / "m.csv"
    assert main(["pram", str(path), "-o", str(out), "--keys", "region", "--household", "house", "--keep-other",
                 "--matrix", str(matrix), "--seed", "1", "--keep-order", "--pd", "0.3"]) == 0, capsys.readouterr().err
    released = pd.read_csv(out)
    assert (released.groupby("house")["region"].nunique() == 1).all()
    assert (released["region"] != frame["region"]).any()
    out2, matrix2 = tmp_path / "joint.csv", tmp_path / "mj.csv"
    assert main(["pram", str(path), "-o", str(out2), "--keys", "region,marital", "--joint", "--keep-other",
                 "--drop", "house", "--matrix", str(matrix2), "--seed", "1", "--keep-order"]) == 0
    table = pd.read_csv(matrix2)
    assert {"from_region", "from_marital", "to_region", "to_marital", "probability"} == set(table.columns)
    released = pd.read_csv(out2)
    assert set(map(tuple, released[["region", "marital"]].to_numpy())) <= \
        set(map(tuple, frame[["region", "marital"]].to_numpy()))


@pytest.mark.parametrize("change, says", [
    (["--pd", "0"], "--pd"), (["--pd", "1.5"], "--pd"), (["--alpha", "-0.1"], "--alpha"),
    (["--pd", "region=0.5,marital"], "KEY=NUMBER"), (["--keys", "region,nope"], "nope"),
    (["--pd", "region=0.5"], "no value for the key 'marital'"), (["--household", "house"], "not a household variable"),
    (["--matrix", "{input}", "--force"], "would overwrite the input"), (["--matrix", "{output}"], "named twice"),
    (["--keys", "region,marital,income", "--confidential", "sex"], "categories"),
    (["--joint", "--pd", "region=0.5,marital=0.5"], "--joint"),
])
def test_pram_command_bad_inputs_are_one_line_and_write_nothing(tmp_path, capsys, change, says):
    path, _ = _write(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    argv = ["pram", str(path), "-o", str(tmp_path / "out.csv"), "--keys", "region,marital", "--confidential",
            "income,sex", "--drop", "house", "--matrix", str(tmp_path / "m.csv"), "--seed", "1"]
    if "--keys" in change:
        i = argv.index("--keys")
        del argv[i:i + 2]
    if "--confidential" in change:
        i = argv.index("--confidential")
        del argv[i:i + 2]
    if "--household" in change:
        argv.remove("--drop"), argv.remove("house")
        argv += ["--drop", "sex"]
        i = argv.index("income,sex")
        argv[i] = "income"
    if "--matrix" in change:
        i = argv.index("--matrix")
        del argv[i:i + 2]
    argv += [c.format(input=path, output=tmp_path / "out.csv") for c in change]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("probanon: error:") and says in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_pram_recipe_writes_the_matrix_beside_the_release(tmp_path, capsys):
    path, _ = _write(tmp_path)
    (tmp_path / "r.toml").write_text('command = "pram"\ninput = "people.csv"\noutput = "out.csv"\n[options]\n'
                                     'keys = ["region", "marital"]\nkeep_other = true\nmatrix = "m.csv"\n'
                                     'pd = "region=0.7,marital=0.9"\nseed = 4\n')
    assert main(["release", str(tmp_path / "r.toml")]) == 0, capsys.readouterr().err
    assert (tmp_path / "m.csv").exists() and (tmp_path / "out.csv.recipe.toml").exists()
    first = (tmp_path / "out.csv").read_bytes()
    assert main(["release", str(tmp_path / "out.csv.recipe.toml"), "--force"]) == 0, capsys.readouterr().err
    assert (tmp_path / "out.csv").read_bytes() == first


def test_pram_command_refuses_a_matrix_that_is_not_invariant_and_writes_nothing(tmp_path, capsys, monkeypatch):
    import probanon.categorical.pram as pram_module

    def skewed(t, pd_, alpha, rng, diagonal):  # row-stochastic, not invariant: a broken construction
        L = t.size
        return np.full((L, L), 1.0 / L)
    monkeypatch.setattr(pram_module, "_invariant", skewed)
    path, _ = _write(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["pram", str(path), "-o", str(tmp_path / "out.csv"), "--keys", "region,marital", "--keep-other",
                 "--matrix", str(tmp_path / "m.csv"), "--seed", "1", "--link", str(tmp_path / "lk.csv")])
    err = capsys.readouterr().err
    assert code == 2 and "not invariant for the original frequencies" in err and "nothing written" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before

"""Households kept together (issue 43, point 5): --household in microaggregate, swap and apply.

Every property is counted here, independently of probanon: the households of each released
group (by pandas on the household ids), the members' released values, the group means over
households (one value per household), the multiset of household tuples a swap permutes.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main
from probanon.errors import GuaranteeError, InputError, ParameterError
from probanon.households import by_household
from probanon.microagg import METHODS
from probanon.release import Promise
from probanon.swapping.release import swap


def _households(n_households=45, seed=4) -> pd.DataFrame:
    """Households of 1..5 members: region, income, rooms and weight of the household (the same
    for every member), age and hours of the person."""
    rng = np.random.default_rng(seed)
    size = rng.integers(1, 6, n_households)
    h = np.repeat(np.arange(n_households), size)
    n = h.size
    return pd.DataFrame({
        "hid": 1000 + 7 * h,
        "region": rng.integers(1, 3, n_households)[h],
        "income": np.round(rng.lognormal(10, 0.4, n_households), 0)[h],
        "rooms": rng.integers(1, 7, n_households)[h].astype(float),
        "w": np.round(rng.uniform(50, 150, n_households), 1)[h],
        "age": rng.integers(0, 90, n),
        "hours": rng.integers(0, 60, n).astype(float),
    })


def _fewest_households(frame: pd.DataFrame, columns, household="hid") -> int:
    """The fewest distinct households sharing a combination of ``columns`` (counted by pandas)."""
    return int(frame.groupby(list(columns))[household].nunique().min())


def _members_share(frame: pd.DataFrame, columns, household="hid") -> bool:
    return bool((frame.groupby(household)[list(columns)].nunique(dropna=False) == 1).all().all())


# ---------------------------------------------------------------------------------------- library


@pytest.mark.parametrize("method", sorted(METHODS))
def test_every_group_holds_k_households_and_members_share_values(method):
    df = _households()
    keys = ["income", "rooms"]
    model = METHODS[method](3).set_output(transform="default")
    released = model.fit_transform(df[keys].to_numpy(), households=df["hid"])
    out = df.assign(**dict(zip(keys, released.T)))
    assert _members_share(out, keys)
    labels = model.labels_ if model.labels_.ndim == 2 else model.labels_[:, None]
    for j in range(labels.shape[1]):  # each group (each column's, for individual ranking)
        per_group = pd.Series(df["hid"].to_numpy()).groupby(labels[:, j]).nunique()
        assert per_group.min() >= 3
    groups = [keys] if method != "ranking" else [[c] for c in keys]
    for columns in groups:  # the released combinations, too
        assert _fewest_households(out, columns) >= 3
    if method == "ranking":
        return
    # each released value is its group's mean over households, each household once
    first = df.drop_duplicates("hid").set_index("hid")[keys]
    for _, members in pd.Series(df["hid"].to_numpy()).groupby(model.labels_):
        mean = first.loc[members.unique()].mean().to_numpy()
        np.testing.assert_allclose(released[members.index[0]], mean, rtol=1e-12)


def test_weighted_means_use_the_households_weight():
    df = _households()
    model = METHODS["mdav"](3).set_output(transform="default")
    released = model.fit_transform(df[["income"]].to_numpy(), households=df["hid"], sample_weight=df["w"])
    first = df.drop_duplicates("hid").set_index("hid")
    for _, members in pd.Series(df["hid"].to_numpy()).groupby(model.labels_):
        h = first.loc[members.unique()]
        np.testing.assert_allclose(released[members.index[0], 0], (h["w"] * h["income"]).sum() / h["w"].sum(),
                                   rtol=1e-12)
    varying = df["w"].copy()
    varying.iloc[int(np.flatnonzero(df["hid"].duplicated().to_numpy())[0])] += 1  # one member's weight
    with pytest.raises(InputError, match="sampling weight"):
        model.fit(df[["income"]].to_numpy(), households=df["hid"], sample_weight=varying)


def test_a_person_level_key_is_refused_naming_the_household_and_key():
    df = _households()
    second = int(np.flatnonzero(df["hid"].duplicated().to_numpy())[0])  # a household's second member
    hid = df["hid"].iloc[second]
    with pytest.raises(InputError, match=rf"household {hid} \(hid\) has different values of 'age'.*person-level"):
        METHODS["mdav"](3).fit(df[["income", "age"]], households=df["hid"])
    with pytest.raises(InputError, match=rf"household {hid} .*'hours'"):
        swap(df[["rooms", "hours"]], 3, "mdav-swap-informed", ["hours"], households=df["hid"])
    # mdav-swap moves only the keys: person-level confidential values are allowed (and stay the person's)
    result = swap(df[["rooms", "hours"]], 3, "mdav-swap", ["hours"], random_state=1, households=df["hid"])
    np.testing.assert_array_equal(result.released["hours"].to_numpy(), df["hours"].to_numpy())


def test_a_household_straddling_strata_is_refused():
    df = _households()
    second = int(np.flatnonzero(df["hid"].duplicated().to_numpy())[0])
    strata = df["region"].copy()
    strata.iloc[second] = 3 - strata.iloc[second]
    with pytest.raises(InputError, match=f"household {df['hid'].iloc[second]} .*different strata"):
        METHODS["mdav"](3).fit(df[["income"]], households=df["hid"], strata=strata)
    with pytest.raises(InputError, match="different strata"):
        swap(df[["rooms", "hours"]], 3, "mdav-swap", ["hours"], households=df["hid"], strata=strata)


@pytest.mark.parametrize("method", ["mdav-swap", "mdav-swap-informed", "ir-swap", "mdav-id"])
def test_swaps_move_whole_households(method):
    df = _households()
    columns = ["rooms", "income"]  # household-level both
    result = swap(df[columns], 3, method, None if method == "mdav-id" else ["income"], random_state=5,
                  strata=df["region"], households=df["hid"])
    out = df.assign(**{c: result.released[c].to_numpy() for c in columns})
    assert _members_share(out, columns)
    for t in range(result.groups.n_partitions):
        labels = result.groups.labels[:, t]
        assert pd.Series(df["hid"].to_numpy()).groupby(labels).nunique().min() >= 3
        # no group mixes regions
        assert (pd.Series(df["region"].to_numpy()).groupby(labels).nunique() == 1).all()
        if method == "mdav-id":
            continue
        moved = [columns[j] for j in result.groups.columns[t]]
        for g in np.unique(labels):  # the households' tuples of a group, permuted among its households
            rows = labels == g
            before = df.loc[rows].drop_duplicates("hid")[moved].sort_values(moved).to_numpy()
            after = out.loc[rows].drop_duplicates("hid")[moved].sort_values(moved).to_numpy()
            np.testing.assert_array_equal(before, after)
    if method == "mdav-id":
        assert _fewest_households(out, columns + ["region"]) >= 3
    else:  # no record holds a given record's values when households differ in size
        with pytest.raises(ParameterError, match="households"):
            result.value_rows()
    # the estimator's front end: the same release from the same seed
    from probanon.swapping.release import Swapper

    fitted = Swapper(3, method, None if method == "mdav-id" else ["income"], random_state=5).fit(
        df[columns], strata=df["region"], households=df["hid"])
    pd.testing.assert_frame_equal(fitted.released_, result.released)


def test_by_household_collapse_and_expand():
    view = by_household(np.array([[1.0], [1.0], [5.0], [9.0], [9.0], [9.0]]), ["a", "a", "b", "c", "c", "c"])
    assert view.first.tolist() == [0, 2, 3] and view.sizes.tolist() == [2, 1, 3]
    assert view.expand(np.array([7, 8, 9])).tolist() == [7, 7, 8, 9, 9, 9]
    # household 0 received household 2's values, 1 household 0's, 2 household 1's
    assert view.source_rows(np.array([2, 0, 1])).tolist() == [3, 3, 0, 2, 2, 2]
    with pytest.raises(InputError, match="missing"):
        by_household(np.ones((3, 1)), ["a", None, "b"])


# ---------------------------------------------------------------------------------------- the promise


def test_the_promise_counts_households_not_records():
    # combination (1, 2) held by 4 records of ONE household, (3, 4) by 3 records of 3 households
    release = pd.DataFrame({"a": [1, 1, 1, 1, 3, 3, 3], "b": [2, 2, 2, 2, 4, 4, 4], "hid": [5, 5, 5, 5, 6, 7, 8]})
    Promise(3, (("a", "b"),), "test").check(release)  # 3-anonymous on records
    with pytest.raises(GuaranteeError, match=r"k achieved = 1 \(1 households \(hid\) in 1 combinations"):
        Promise(3, (("a", "b"),), "test", household="hid").check(release)
    Promise(3, (("a", "b"),), "test", household="hid").check(release.iloc[4:])
    # two households of 2 members: 4 records, 2 households
    with pytest.raises(GuaranteeError):
        Promise(3, (("a",),), "test", household="hid").check(pd.DataFrame({"a": [1] * 4, "hid": [1, 1, 2, 2]}))


# ---------------------------------------------------------------------------------------- command line


def _write(tmp_path, df, name="hh.csv"):
    path = tmp_path / name
    df.to_csv(path, index=False)
    return path


def _run(tmp_path, capsys, argv):
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_microaggregate_household_release(tmp_path, capsys):
    df = _households()
    path = _write(tmp_path, df)
    out = tmp_path / "out.csv"
    argv = ["microaggregate", path, "-o", out, "-k", 3, "--keys", "income,rooms", "--confidential", "age,hours",
            "--weights", "w", "--strata", "region", "--household", "hid", "--seed", 11, "--link", tmp_path / "l.csv"]
    code, err = _run(tmp_path, capsys, argv + ["--accept-risk"])
    assert code == 0, err
    rel = pd.read_csv(out)
    assert sorted(rel["hid"].unique()) == list(range(1, df["hid"].nunique() + 1))  # renumbered
    assert _members_share(rel, ["income", "rooms", "region"])
    assert _fewest_households(rel, ["income", "rooms", "region"]) >= 3
    # each record's household: the link maps the released record to its original
    link = pd.read_csv(tmp_path / "l.csv")
    original = df.iloc[link.sort_values("released_row")["original_row"].to_numpy() - 1].reset_index(drop=True)
    assert (rel.groupby("hid").apply(lambda g: original.loc[g.index, "hid"].nunique()) == 1).all()
    np.testing.assert_array_equal(rel["age"], original["age"])
    assert "households" in err
    first = out.read_bytes()  # same seed, same release
    code, _ = _run(tmp_path, capsys, argv + ["--accept-risk", "--force"])
    assert code == 0 and out.read_bytes() == first


def test_microaggregate_household_dropped_still_counts_households(tmp_path, capsys, monkeypatch):
    df = _households()
    path = _write(tmp_path, df)
    out = tmp_path / "out.csv"
    code, err = _run(tmp_path, capsys, ["microaggregate", path, "-o", out, "-k", 3, "--method", "pcl",
                                        "--keys", "income,rooms", "--drop", "hid,w,age,hours,region",
                                        "--household", "hid", "--seed", 2])
    assert code == 0, err
    assert "hid" not in pd.read_csv(out).columns
    # a method that ignored the households: the check on the records refuses it (nothing written)
    from probanon.microagg.base import Microaggregator

    real = Microaggregator.fit

    def ignoring(self, X, y=None, *, households=None, **kwargs):
        real(self, X, **kwargs)
        self.households_ = by_household(X, households)
        return self
    monkeypatch.setattr(Microaggregator, "fit", ignoring)
    out2 = tmp_path / "out2.csv"
    code, err = _run(tmp_path, capsys, ["microaggregate", path, "-o", out2, "-k", 3, "--keys", "income,rooms",
                                        "--drop", "hid,w,age,hours,region", "--household", "hid", "--seed", 2])
    assert code == 2 and "counted in households" in err and not out2.exists()


@pytest.mark.parametrize("method", ["mdav-swap", "mdav-id"])
def test_swap_household_release(tmp_path, capsys, method):
    df = _households()
    path = _write(tmp_path, df)
    out = tmp_path / "s.csv"
    argv = ["swap", path, "-o", out, "-k", 3, "--method", method, "--keys", "rooms", "--confidential", "income",
            "--drop", "age,hours,w", "--strata", "region", "--household", "hid", "--seed", 3,
            "--link", tmp_path / "l.csv", "--accept-risk"]  # (the household sizes the ids give away: below)
    code, err = _run(tmp_path, capsys, argv)
    assert code == 0, err
    rel = pd.read_csv(out)
    assert _members_share(rel, ["rooms", "income", "region"])
    if method == "mdav-id":
        assert _fewest_households(rel, ["rooms", "income", "region"]) >= 3
    else:  # the households' key values (moved) and incomes (kept) are those of the original households, per region
        for region in (1, 2):
            for c in ("rooms", "income"):
                before = np.sort(df[df.region == region].drop_duplicates("hid")[c].to_numpy())
                after = np.sort(rel[rel.region == region].drop_duplicates("hid")[c].to_numpy())
                np.testing.assert_array_equal(before, after)
    assert "at least" in err and "households each" in err
    first = out.read_bytes()
    code, _ = _run(tmp_path, capsys, argv + ["--force"])
    assert code == 0 and out.read_bytes() == first


def test_apply_household_counts_households_per_cell(tmp_path, capsys):
    df = _households()
    path = _write(tmp_path, df)
    function = tmp_path / "f.json"
    code, err = _run(tmp_path, capsys, ["microaggregate", path, "-o", tmp_path / "m.csv", "-k", 3,
                                        "--keys", "income,rooms", "--drop", "w,age,hours,region,hid", "--household",
                                        "hid", "--function", function, "--seed", 1])
    assert code == 0, err
    assert json.loads(function.read_text())["meta"]["k"] == 3
    big = df[df["hid"] == df["hid"].value_counts().idxmax()]  # one household of >= 3 members alone
    assert len(big) >= 3
    small = _write(tmp_path, big, "one.csv")
    argv = ["apply", function, small, "-o", tmp_path / "a.csv", "--drop", "w,age,hours,region", "--seed", 1]
    code, err = _run(tmp_path, capsys, argv + ["--household", "hid", "--accept-risk"])
    assert code == 2 and "counted in households" in err and not (tmp_path / "a.csv").exists()
    code, err = _run(tmp_path, capsys, argv + ["--keep-other"])  # counted on records, the same file passes
    assert code == 0, err
    code, err = _run(tmp_path, capsys, ["apply", function, path, "-o", tmp_path / "b.csv", "--drop",
                                        "w,hours,region,hid", "--keep-other", "--household", "hid"])
    assert code == 0, err  # the whole file: every cell holds k households
    varying = _write(tmp_path, df.assign(income=df["income"] + np.arange(len(df)) % 2), "varying.csv")
    code, err = _run(tmp_path, capsys, ["apply", function, varying, "-o", tmp_path / "c.csv", "--drop",
                                        "w,age,hours,region", "--household", "hid"])
    assert code == 2 and "'income'" in err and not (tmp_path / "c.csv").exists()


def _spoiled(df):
    second = int(np.flatnonzero(df["hid"].duplicated().to_numpy())[0])
    straddling = df.copy()
    straddling.loc[second, "region"] = 3 - straddling.loc[second, "region"]
    weights = df.copy()
    weights.loc[second, "w"] += 1
    return {"person-level key": (df, ["--keys", "income,age"], "different values of 'age'"),
            "straddling strata": (straddling, ["--keys", "income,rooms"], "different strata"),
            "varying weights": (weights, ["--keys", "income,rooms"], "sampling weight"),
            "missing id": (df.assign(hid=df["hid"].where(df.index != 5)), ["--keys", "income,rooms"], "missing"),
            "unknown column": (df, ["--keys", "income,rooms"], "not in the table")}


@pytest.mark.parametrize("case", ["person-level key", "straddling strata", "varying weights", "missing id",
                                  "unknown column"])
@pytest.mark.parametrize("command", ["microaggregate", "swap"])
def test_bad_inputs_exit_2_and_write_nothing(tmp_path, capsys, case, command):
    frame, keys, message = _spoiled(_households())[case]
    path = _write(tmp_path, frame)
    before = sorted(p.name for p in tmp_path.iterdir())
    household = "nope" if case == "unknown column" else "hid"
    weights = ["--weights", "w"] if command == "microaggregate" else ["--drop", "w"]
    method = ["--method", "mdav-id"] if command == "swap" else []
    argv = [command, path, "-o", tmp_path / "out.csv", "-k", 3, *keys, *method, "--strata", "region",
            "--household", household, *weights, "--keep-other", "--accept-risk", "--seed", 1,
            "--link", tmp_path / "link.csv"]
    if command == "swap" and case == "varying weights":  # swap has no weights: a varying moved column instead
        argv[argv.index("income,rooms")] = "income,hours"
        message = "different values of 'hours'"
    code, err = _run(tmp_path, capsys, argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("probanon: error:") and message in lines[0], err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_household_is_refused_where_it_cannot_apply(tmp_path, capsys):
    df = _households()
    path = _write(tmp_path, df)
    code, err = _run(tmp_path, capsys, ["microaggregate", path, "-o", tmp_path / "t.csv", "-k", 3,
                                        "--keys", "income,rooms", "--confidential", "hours", "--drop", "w,age,region",
                                        "--household", "hid", "--t-closeness", "0.5", "--sensitive", "hours"])
    assert code == 2 and "--household" in err and not (tmp_path / "t.csv").exists()
    function = tmp_path / "f.json"
    assert main([str(a) for a in ["microaggregate", path, "-o", tmp_path / "m.csv", "-k", 3, "--keys", "income,rooms",
                                  "--drop", "w,age,hours,region,hid", "--household", "hid", "--function",
                                  function]]) == 0
    capsys.readouterr()
    code, err = _run(tmp_path, capsys, ["apply", function, path, "-o", tmp_path / "a.csv", "--drop",
                                        "w,age,hours,region", "--household", "hid", "--chunk-size", 50])
    assert code == 2 and "chunks" in err and not (tmp_path / "a.csv").exists()


def test_a_recipe_takes_the_household(tmp_path, capsys):
    df = _households()
    _write(tmp_path, df)
    (tmp_path / "r.toml").write_text('command = "microaggregate"\ninput = "hh.csv"\noutput = "out.csv"\n[options]\n'
                                     'k = 3\nkeys = ["income", "rooms"]\ndrop = ["w", "age", "hours"]\n'
                                     'strata = ["region"]\nhousehold = "hid"\nseed = 4\naccept_risk = true\n')
    code, err = _run(tmp_path, capsys, ["release", tmp_path / "r.toml"])
    assert code == 0, err
    rel = pd.read_csv(tmp_path / "out.csv")
    assert _fewest_households(rel, ["income", "rooms", "region"]) >= 3 and _members_share(rel, ["income", "rooms"])
    assert 'household = "hid"' in (tmp_path / "out.csv.recipe.toml").read_text()


def test_published_household_ids_give_sizes_away():
    from probanon.households import sizes_singled_out

    # group 0: households a (2 members), b (2), c (1); group 1: d, e, f of 1 member each
    ids = ["a", "a", "b", "b", "c", "d", "e", "f"]
    groups = [np.array([0, 0, 0, 0, 0, 1, 1, 1])]
    assert sizes_singled_out(ids, groups, 2) == (1, 1)  # c: the only 1-member household of group 0
    assert sizes_singled_out(ids, groups, 3) == (3, 5)  # a, b (2 of size 2) and c
    assert sizes_singled_out(ids, [np.zeros(8, int)], 2) == (0, 0)  # one group: 4 of size 1, 2 of size 2


def test_swap_refuses_to_publish_household_sizes_unless_within_them(tmp_path, capsys):
    df = _households()
    df["size"] = df.groupby("hid")["hid"].transform("size")
    path = _write(tmp_path, df)
    argv = ["swap", path, "-o", tmp_path / "s.csv", "-k", 3, "--method", "mdav-swap", "--keys", "rooms",
            "--confidential", "income", "--drop", "age,hours,w,region", "--household", "hid", "--seed", 3,
            "--keep-other"]
    code, err = _run(tmp_path, capsys, argv)
    assert code == 2 and "give away each household's size" in err and not (tmp_path / "s.csv").exists()
    code, err = _run(tmp_path, capsys, argv + ["--strata", "size", "--merge-small-strata"])
    assert code == 0 and "household's size" not in err, err
    rel = pd.read_csv(tmp_path / "s.csv")
    sizes = rel.groupby("hid").size()
    assert (rel.groupby("hid")["size"].first() == sizes).all()  # the released ids count the members


def test_categorical_keys_with_missing_values_stay_with_their_household():
    df = _households()
    df["dwelling"] = np.where(df["rooms"] > 3, "house", "flat")
    df.loc[df["hid"] == df["hid"].iloc[0], "income"] = np.nan  # one household lacks its income
    model = METHODS["mdav"](3, nominal=["dwelling"], missing="pattern").set_output(transform="default")
    with pytest.warns(Warning):
        released = model.fit_transform(df[["income", "dwelling"]], households=df["hid"])
    out = df.assign(income=released[:, 0], dwelling=released[:, 1])
    assert _members_share(out, ["income", "dwelling"])
    assert out.groupby(["income", "dwelling"], dropna=False)["hid"].nunique().min() >= 3

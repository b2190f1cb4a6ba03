"""Strata (issue 17, point 2): microaggregation within each stratum, the stratified function,
small strata refused or merged (and recoded in the release)."""

import numpy as np
import pandas as pd
import pytest
from helpers import DATA

from probanon.cli import main
from probanon.errors import InputError, ParameterError, SpecificationError
from probanon.microagg import MDAV, PCL, IndividualRanking, function_from_json
from probanon.microagg.mdav import mdav_partition


def _census(tmp_path=None, small=3):
    frame = pd.read_csv(DATA / "census.csv")[["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX"]]
    rng = np.random.default_rng(0)
    frame["region"] = rng.choice(["N", "S", "E", "W"], len(frame))
    frame["sex"] = rng.choice([1, 2], len(frame))
    frame.loc[: small - 1, "region"] = "X"  # a stratum of `small` records
    if tmp_path is None:
        return frame
    path = tmp_path / "census.csv"
    frame.to_csv(path, index=False)
    return frame, path


KEYS = ["AFNLWGT", "AGI", "EMCONTRB"]


@pytest.mark.parametrize("model", [MDAV(5), PCL(5, random_state=0, kicks=200)])
def test_groups_never_mix_strata_and_equal_the_method_on_each_stratum(model):
    frame = _census(small=20)
    strata = frame[["region", "sex"]]
    model.fit(frame[KEYS], strata=strata)
    mixed = frame.groupby(model.labels_)[["region", "sex"]].nunique()
    assert (mixed == 1).all().all()
    assert np.bincount(model.labels_).min() >= 5
    assert len(model.strata_) == 10 and model.function_.kind == "stratified"
    if isinstance(model, MDAV):  # within a stratum the cells are MDAV's on its rows of the global z-scores
        Z = model.standardizer_.transform(frame[KEYS].to_numpy(float))
        rows = np.flatnonzero((frame["region"] == "N") & (frame["sex"] == 2))
        got = model.labels_[rows]
        np.testing.assert_array_equal(got - got.min(), mdav_partition(np.ascontiguousarray(Z[rows]), 5).labels)
    # the function: by name from a DataFrame, or with strata=; it round-trips
    np.testing.assert_array_equal(model.function_.assign(frame), model.labels_)
    g = function_from_json(model.function_.to_json())
    np.testing.assert_array_equal(g.assign(frame[KEYS].to_numpy(float), strata=strata), model.labels_)
    assert g.to_json() == model.function_.to_json()


def test_a_small_stratum_is_refused_or_merged_into_its_neighbour():
    frame = _census()
    with pytest.raises(InputError, match="stratum X has 3 records, fewer than k = 5"):
        MDAV(5).fit(frame[KEYS], strata=frame["region"])
    model = MDAV(5, merge_small_strata=True).fit(frame[KEYS], strata=frame["region"])
    # sorted strata E < N < S < W < X: the last one merges into the previous, W
    assert model.strata_merged_ == ["stratum X (3 records < k = 5) merged into stratum W"]
    assert [("W",), ("X",)] in model.strata_
    x = np.flatnonzero(frame["region"] == "X")
    assert set(frame.loc[model.labels_ == model.labels_[x[0]], "region"]) <= {"W", "X"}


def test_unknown_stratum_missing_stratum_and_ranking_are_errors():
    frame = _census(small=10)
    model = MDAV(5).fit(frame[KEYS], strata=frame["region"])
    new = frame.head(3).assign(region="Z")
    with pytest.raises(InputError, match="stratum Z is not one of the function's strata"):
        model.function_.assign(new)
    with pytest.raises(InputError, match="give the strata"):
        model.function_.assign(frame[KEYS].to_numpy(float))
    with pytest.raises(InputError, match="missing value"):
        MDAV(5).fit(frame[KEYS], strata=frame["region"].where(frame.index != 4))
    with pytest.raises(ParameterError, match="not IndividualRanking"):
        IndividualRanking(5).fit(frame[KEYS], strata=frame["region"])
    spoiled = model.function_.to_dict()
    spoiled["rule"]["strata"][1]["values"] = spoiled["rule"]["strata"][0]["values"]
    import json

    with pytest.raises(SpecificationError, match="values of another stratum"):
        function_from_json(json.dumps(spoiled))


def test_cli_strata_merge_recode_and_apply(tmp_path, capsys):
    frame, path = _census(tmp_path)
    out, function = tmp_path / "out.csv", tmp_path / "f.json"
    args = ["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", ",".join(KEYS), "--confidential",
            "FEDTAX", "--strata", "region,sex", "--keep-order", "--quiet", "--function", str(function)]
    assert main(args) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stratum ('X', " in err[0] and "--merge-small-strata" in err[0] and not out.exists()
    assert main(args + ["--merge-small-strata"]) == 0
    err = capsys.readouterr().err
    assert "merged into stratum" in err and "k achieved = 5" in err
    released = pd.read_csv(out)
    # the small strata's values are recoded with their neighbour's: no released tuple singles them out
    assert not (released["region"] == "X").any() and (released["region"].str.contains(r"\+")).any()
    assert released.groupby(KEYS + ["region", "sex"]).size().min() >= 5
    assert (released["FEDTAX"] == frame["FEDTAX"]).all()
    applied = tmp_path / "applied.csv"
    assert main(["apply", str(function), str(path), "-o", str(applied), "--confidential", "FEDTAX", "--keep-order",
                 "--quiet"]) == 0
    again = pd.read_csv(applied)
    pd.testing.assert_frame_equal(again.drop(columns="cell"), released)


@pytest.mark.parametrize("method", ["mdav-swap", "mdav-swap-informed", "ir-swap", "mdav-id"])
def test_swapping_within_strata(method):
    from probanon.swapping import swap

    frame = _census(small=20)
    X = frame[["AFNLWGT", "AGI", "FEDTAX"]]
    result = swap(X, 5, method, None if method == "mdav-id" else ["FEDTAX"], random_state=1, strata=frame["region"])
    region = frame["region"].to_numpy()
    for t in range(result.groups.n_partitions):  # no group spans two strata, every group >= k
        labels = result.groups.labels[:, t]
        assert (pd.Series(region).groupby(labels).nunique() == 1).all() and np.bincount(labels).min() >= 5
    if result.sources is not None:  # every moved value comes from the same stratum
        assert (region[result.sources] == region[:, None]).all()
    with pytest.raises(InputError, match="stratum X has 3 records"):
        swap(X, 5, method, None if method == "mdav-id" else ["FEDTAX"], random_state=1, strata=_census()["region"])


def test_cli_swap_strata(tmp_path, capsys):
    frame, path = _census(tmp_path)
    out = tmp_path / "out.csv"
    assert main(["swap", str(path), "-o", str(out), "-k", "5", "--method", "mdav-swap", "--keys", ",".join(KEYS),
                 "--confidential", "FEDTAX", "--strata", "region", "--drop", "sex", "--merge-small-strata",
                 "--keep-order", "--seed", "3"]) == 0
    err = capsys.readouterr().err
    released = pd.read_csv(out)
    assert "merged into stratum W" in err and set(released["region"]) == {"E", "N", "S", "W+X"}
    # the swapped key tuples stay within their stratum (W and X together)
    by_region = frame.assign(region=frame["region"].replace({"W": "W+X", "X": "W+X"}))
    for region, part in released.groupby("region"):
        original = by_region[by_region["region"] == region]
        assert sorted(map(tuple, part[KEYS].to_numpy())) == sorted(map(tuple, original[KEYS].to_numpy()))


def test_a_missing_stratum_column_is_a_one_line_error_without_output(tmp_path, capsys):
    _, path = _census(tmp_path)
    out = tmp_path / "out.csv"
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", ",".join(KEYS), "--confidential",
                 "FEDTAX,sex,region", "--strata", "county", "--quiet"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "stratum column 'county' is not in the table" in err[0] and not out.exists()


def test_numeric_strata_merged_are_released_as_text_in_parquet(tmp_path, capsys):
    frame = _census()
    frame["code"] = frame["region"].map({"E": 1, "N": 2, "S": 3, "W": 4, "X": 5})
    path, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    frame.drop(columns=["region"]).to_parquet(path)
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", ",".join(KEYS), "--confidential",
                 "FEDTAX,sex", "--strata", "code", "--merge-small-strata", "--quiet"]) == 0
    assert set(pd.read_parquet(out)["code"]) == {"1", "2", "3", "4+5"}

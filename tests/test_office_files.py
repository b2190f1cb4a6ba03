"""Ordinary office files go through (issue 39, points 4-6): missing values outside the keys,
--missing pattern with categorical keys and strata, SPSS/Stata user-missing codes, value labels
of nominal keys, 1-based case numbers, and released values in the input's type and precision.

Inputs are small extracts of UCI Adult made with pandas/pyreadstat; every property is checked on
the written release, read back with pandas or pyreadstat, with counts made here (pandas
groupby with dropna=False: missing values compared as equal)."""

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from helpers import SHARED_DATA

from probanon.attacks.audit import audit
from probanon.cli import main
from probanon.data import read_table
from probanon.microagg import METHODS

READ = {"sav": pyreadstat.read_sav, "dta": pyreadstat.read_dta}
REGIONS = {1: "Amer-Indian-Eskimo", 2: "Asian-Pac-Islander", 3: "Black", 4: "Other", 5: "White"}


def _adult(n=300):
    frame = pd.read_csv(SHARED_DATA / "adult" / "adult.csv", nrows=n, skipinitialspace=True)
    codes = {v: c for c, v in REGIONS.items()}
    return pd.DataFrame({
        "age": frame["age"].astype(np.int64),
        "hours": frame["hours-per-week"].astype(np.int64),
        "region": frame["race"].map(codes).astype(np.int64),
        "sex": frame["sex"].astype(str),
        "edu": frame["education-num"].astype(np.int64),
        "gain": frame["capital-gain"].astype(float),
        "native": frame["native-country"].astype(str),
    })


def _smallest_class(table: pd.DataFrame, columns) -> int:
    """k achieved, counted here: the smallest group of identical tuples, missing equal to missing."""
    return int(table.groupby(list(columns), dropna=False).size().min())


def _original_order(release: pd.DataFrame, link_path) -> pd.DataFrame:
    link = pd.read_csv(link_path)
    return release.iloc[link.sort_values("original_row")["released_row"].to_numpy() - 1].reset_index(drop=True)


def _run(*argv) -> int:
    return main([str(a) for a in argv])


# -- point 4: missing values outside the keys; --missing pattern with categorical keys and strata ----------


def test_missing_confidential_values_are_released_as_they_are(tmp_path, capsys):
    """A confidential column with empty cells is released as it is, by microaggregate and by
    apply (also read in chunks, whose audit checks each chunk)."""
    frame = _adult()
    frame.loc[frame["native"] == "?", "native"] = np.nan
    frame["native_code"] = frame["native"].astype("category").cat.codes.replace(-1, np.nan)  # numeric, 5 missing
    assert frame["native_code"].isna().sum() > 0
    source = tmp_path / "in.csv"
    frame.to_csv(source, index=False)
    common = ["--confidential", "native_code,gain,region,edu", "--drop", "sex,native"]
    code = _run("microaggregate", source, "-o", tmp_path / "out.csv", "-k", 3, "--keys", "age,hours", *common,
                "--link", tmp_path / "link.csv", "--function", tmp_path / "f.json", "--quiet")
    assert code == 0, capsys.readouterr().err
    released = _original_order(pd.read_csv(tmp_path / "out.csv"), tmp_path / "link.csv")
    pd.testing.assert_series_equal(released["native_code"], frame["native_code"], check_dtype=False)
    for size in (1000, 64):
        out = tmp_path / f"applied{size}.csv"
        assert _run("apply", tmp_path / "f.json", source, "-o", out, *common, "--chunk-size", size, "--seed", 1,
                    "--quiet") == 0, capsys.readouterr().err
    applied = pd.read_csv(tmp_path / "applied1000.csv")
    pd.testing.assert_frame_equal(applied, pd.read_csv(tmp_path / "applied64.csv"))
    assert applied["native_code"].isna().sum() == frame["native_code"].isna().sum()


def test_audit_reads_confidential_columns_with_missing_values():
    """The audit runs on the records that have every audited value: a relation holding there is
    found although the confidential column lacks values elsewhere."""
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"a": rng.integers(0, 1000, 200).astype(float), "b": rng.integers(0, 1000, 200).astype(float)})
    frame["total"] = frame["a"] + frame["b"]
    frame.loc[::7, "total"] = np.nan
    result = audit(frame, ["a", "b"], ["total"])
    assert not result.passed and any("total" in f.text for f in result.findings)


def _with_missing(frame: pd.DataFrame, seed: int = 0, columns=("age", "sex", "edu")) -> pd.DataFrame:
    """Missing values in a numeric key (age), a nominal key (sex) and an ordinal key (edu)."""
    rng = np.random.default_rng(seed)
    out = frame.copy()
    out["age"] = out["age"].astype(float)
    out["edu"] = out["edu"].astype(float)
    for c, count in (("age", 12), ("sex", 9), ("edu", 7)):
        if c in columns:
            out.loc[rng.choice(len(out), count, replace=False), c] = np.nan
    return out


def _check_pattern_groups(original: pd.DataFrame, released: pd.DataFrame, labels, keys, categorical, k) -> None:
    """The rule of --missing pattern, checked group by group: a key some member lacks is missing
    for the whole group; otherwise one value per group, for a categorical key one of the members'."""
    for g in np.unique(labels):
        members = np.flatnonzero(labels == g)
        assert members.size >= k
        for c in keys:
            given, out = original[c].iloc[members], released[c].iloc[members]
            if given.isna().any():
                assert out.isna().all(), (g, c)
            else:
                assert out.notna().all() and out.nunique() == 1, (g, c)
                if c in categorical:
                    assert out.iloc[0] in set(given), (g, c)


@pytest.mark.parametrize("method", ["mdav", "pcl"])
def test_pattern_with_nominal_and_ordinal_keys(method):
    frame = _with_missing(_adult())
    keys, k = ["age", "hours", "sex", "edu"], 4
    model = METHODS[method](k, random_state=0) if method == "pcl" else METHODS[method](k)
    model.set_params(missing="pattern", nominal=["sex"], ordinal=["edu"])
    released = pd.DataFrame(model.fit_transform(frame[keys]), columns=keys)
    assert model.function_ is None and model.missing_patterns_ >= 2
    _check_pattern_groups(frame, released, model.labels_, keys, ["sex", "edu"], k)
    assert _smallest_class(released, keys) >= k
    assert (released.isna() | frame[keys].notna()).all().all()  # a missing value stays missing


def test_pattern_within_strata():
    """Patterns are formed and merged within each stratum: no group mixes strata, and k holds on
    the keys and the strata columns together."""
    frame = _with_missing(_adult(), seed=1, columns=("age", "edu"))
    keys, k = ["age", "hours", "edu"], 3
    model = METHODS["mdav"](k)
    released = pd.DataFrame(model.set_params(missing="pattern").fit_transform(frame[keys], strata=frame[["sex"]]),
                            columns=keys)
    labels = model.labels_
    assert (frame["sex"].groupby(labels).nunique() == 1).all()
    _check_pattern_groups(frame, released, labels, keys, [], k)
    assert _smallest_class(released.assign(sex=frame["sex"]), keys + ["sex"]) >= k
    assert model.strata_ == [[("Female",)], [("Male",)]]


def test_pattern_with_categorical_keys_and_strata_on_the_command_line(tmp_path, capsys):
    frame = _with_missing(_adult(400), seed=2)
    frame["region"] = frame["region"].map(REGIONS)  # strata of 331, 48, 15, 3 and 3 records
    source = tmp_path / "in.csv"
    frame.to_csv(source, index=False, float_format="%.15g")  # whole numbers as such
    out = tmp_path / "out.csv"
    code = _run("microaggregate", source, "-o", out, "-k", 4, "--keys", "age,hours", "--nominal", "sex",
                "--ordinal", "edu", "--strata", "region", "--merge-small-strata", "--missing", "pattern",
                "--confidential", "gain", "--drop", "native", "--link", tmp_path / "link.csv", "--quiet")
    err = capsys.readouterr().err
    assert code == 0, err
    released = _original_order(pd.read_csv(out), tmp_path / "link.csv")
    assert _smallest_class(released, ["age", "hours", "sex", "edu", "region"]) >= 4
    assert set(released["region"]) == {"Amer-Indian-Eskimo+Asian-Pac-Islander", "Black", "Other+White"}
    for c in ("age", "sex", "edu"):  # kept missing, or suppressed for a whole group
        assert released[c].isna().sum() >= frame[c].isna().sum()
        assert not (released[c].notna() & frame[c].isna()).any()
    assert "kept missing" in err and "merged into stratum" in err and "stratum Black: " in err
    assert "age     key: replaced by its MDAV group mean, rounded to 0 decimals" in err


# -- SPSS and Stata: user-missing codes, value labels of nominal keys, case numbers ---------------------------


def _sav(tmp_path, frame, **meta):
    path = tmp_path / "in.sav"
    pyreadstat.write_sav(frame, str(path), **meta)
    return path


def _coded(n=300) -> pd.DataFrame:
    frame = _adult(n)
    return frame[["age", "hours", "region", "edu", "gain"]].astype(float)


def test_spss_user_missing_codes_are_missing_and_written_back(tmp_path, capsys):
    """SPSS missing values: missing for every method and check (a confidential column keeps them,
    written back as the same codes with the same declaration; a key's groups release them as
    system-missing), value labels of a nominal key coded as numbers written back, the input's
    display formats kept (a whole-number format widened for means with decimals)."""
    frame = _coded()
    frame.loc[3::40, "gain"] = -9.0  # refused
    frame.loc[5::40, "gain"] = -8.0  # don't know
    frame.loc[7::50, "gain"] = np.nan
    frame.loc[[0, 11, 22], "hours"] = 999.0  # user-missing in a key
    source = _sav(tmp_path, frame, missing_ranges={"gain": [-9.0, -8.0], "hours": [{"lo": 997.0, "hi": 999.0}]},
                  variable_value_labels={"region": {float(c): t for c, t in REGIONS.items()},
                                         "gain": {-9.0: "refused", -8.0: "don't know"}},
                  variable_format={"age": "F3.0", "hours": "F3.0", "region": "F1.0", "edu": "F2.0", "gain": "F8.2"},
                  variable_measure={"region": "nominal"})
    table = read_table(source)
    assert table["gain"].isna().sum() == (frame["gain"].isin([-9, -8]) | frame["gain"].isna()).sum()
    assert table["hours"].isna().sum() == 3
    out = tmp_path / "out.sav"
    code = _run("microaggregate", source, "-o", out, "-k", 3, "--keys", "age,hours,edu", "--nominal", "region",
                "--confidential", "gain", "--missing", "pattern", "--decimals", 1, "--link", tmp_path / "link.csv",
                "--quiet")
    assert code == 0, capsys.readouterr().err
    back, meta = pyreadstat.read_sav(str(out), user_missing=True)
    back = _original_order(back, tmp_path / "link.csv")
    pd.testing.assert_series_equal(back["gain"], frame["gain"])  # -9, -8 and system-missing where they were
    assert meta.missing_ranges == {"gain": [{"lo": -9.0, "hi": -9.0}, {"lo": -8.0, "hi": -8.0}]}
    assert back["hours"].iloc[[0, 11, 22]].isna().all()  # a key's code: suppressed, system-missing
    assert {int(c): t for c, t in meta.variable_value_labels["region"].items()} == REGIONS
    assert set(back["region"].dropna()) <= set(REGIONS)
    assert meta.variable_value_labels["gain"] == {-9.0: "refused", -8.0: "don't know"}
    assert meta.original_variable_types["age"] == "F5.1" and meta.original_variable_types["region"] == "F1.0"
    assert meta.variable_measure["region"] == "nominal"
    assert _smallest_class(back, ["age", "hours", "edu", "region"]) >= 3


def test_stata_extended_missing_values_are_written_back(tmp_path, capsys):
    frame = _coded().astype(object)
    frame.loc[2::30, "gain"] = "a"
    frame.loc[4::30, "gain"] = "b"
    source = tmp_path / "in.dta"
    pyreadstat.write_dta(frame, str(source), missing_user_values={"gain": ["a", "b"]},
                         variable_value_labels={"region": REGIONS, "gain": {"a": "refused", 0: "none"}})
    out = tmp_path / "out.dta"
    code = _run("microaggregate", source, "-o", out, "-k", 3, "--keys", "age,hours,edu", "--nominal", "region",
                "--confidential", "gain", "--link", tmp_path / "link.csv", "--quiet")
    assert code == 0, capsys.readouterr().err
    back, meta = pyreadstat.read_dta(str(out), user_missing=True)
    back = _original_order(back, tmp_path / "link.csv")
    assert back["gain"].tolist() == frame["gain"].tolist()
    assert meta.missing_user_values == {"gain": ["a", "b"]}
    assert meta.variable_value_labels["region"] == REGIONS and meta.variable_value_labels["gain"]["a"] == "refused"
    assert back["age"].tolist() == back["age"].round().tolist()  # whole years, as the input's


@pytest.mark.parametrize("ext", ["sav", "dta"])
def test_value_labels_of_a_nominal_key_are_written_back(tmp_path, capsys, ext):
    frame = _coded()
    source = tmp_path / f"in.{ext}"
    labels = {"region": {float(c): t for c, t in REGIONS.items()} if ext == "sav" else REGIONS}
    (pyreadstat.write_sav if ext == "sav" else pyreadstat.write_dta)(frame, str(source), variable_value_labels=labels)
    for out_ext in ("sav", "dta"):
        out = tmp_path / f"out.{out_ext}"
        code = _run("microaggregate", source, "-o", out, "-k", 4, "--keys", "age,hours", "--nominal", "region",
                    "--confidential", "gain,edu", "--quiet")
        assert code == 0, capsys.readouterr().err
        back, meta = READ[out_ext](str(out))
        assert {int(c): t for c, t in meta.variable_value_labels["region"].items()} == REGIONS
        assert set(back["region"]) <= set(REGIONS)


@pytest.mark.parametrize("ext", ["sav", "dta"])
def test_case_numbers_are_counted_from_one(tmp_path, capsys, ext):
    frame = _coded(40)
    frame.loc[2, "age"] = np.nan  # the third case
    source = tmp_path / f"in.{ext}"
    (pyreadstat.write_sav if ext == "sav" else pyreadstat.write_dta)(frame, str(source))
    code = _run("microaggregate", source, "-o", tmp_path / "out.csv", "-k", 3, "--keys", "age,hours",
                "--confidential", "gain,edu,region")
    err = capsys.readouterr().err.strip()
    assert code == 2 and "(case 3, column 'age')" in err, err


# -- point 6: the input's type and precision ----------------------------------------------------------------


def _decimals_in_text(path, column) -> int:
    texts = pd.read_csv(path, dtype=str)[column].dropna()
    return int(texts.str.partition(".")[2].str.len().max())


def test_integer_columns_stay_integers(tmp_path, capsys):
    """Whole-number columns are released as whole numbers: means of integer keys rounded to 0
    decimals, modes of a nominal key coded as numbers, swapped values, suppressed values (empty)."""
    frame = _adult()
    frame["age"] = frame["age"].astype("Int64")
    frame.loc[[5, 50, 150], "age"] = pd.NA
    source = tmp_path / "in.csv"
    frame.to_csv(source, index=False)
    out = tmp_path / "out.csv"
    assert _run("microaggregate", source, "-o", out, "-k", 3, "--keys", "age,hours", "--nominal", "region",
                "--missing", "pattern", "--confidential", "gain,edu", "--drop", "sex,native", "--quiet") == 0, \
        capsys.readouterr().err
    text = out.read_text()
    lines = text.splitlines()
    assert lines[0] == "age,hours,region,edu,gain"
    for line in lines[1:]:
        age, hours, region = line.split(",")[:3]
        assert "." not in age + hours + region, line
    assert any(line.startswith(",") for line in lines[1:])  # suppressed or kept missing: empty, not "nan"
    swapped = tmp_path / "swapped.csv"
    assert _run("swap", source, "-o", swapped, "-k", 3, "--method", "mdav-swap-informed", "--keys", "hours,region",
                "--confidential", "edu", "--drop", "age,sex,native,gain", "--seed", 2) == 0
    assert pd.read_csv(swapped, dtype=str)["edu"].str.fullmatch(r"\d+").all()
    aggregated = tmp_path / "aggregated.csv"  # MDAV-ID: group means, rounded as microaggregate's
    assert _run("swap", source, "-o", aggregated, "-k", 3, "--method", "mdav-id", "--keys", "hours,region",
                "--confidential", "edu", "--drop", "age,sex,native,gain", "--link", tmp_path / "l.csv") == 0
    released = _original_order(pd.read_csv(aggregated, dtype=str), tmp_path / "l.csv")
    assert released["edu"].str.fullmatch(r"\d+").all() and released["hours"].str.fullmatch(r"\d+").all()
    assert _smallest_class(released, ["hours", "region", "edu"]) >= 3


def _assert_rounded(released, means, decimals):
    """``released`` is ``means`` rounded to ``decimals``: a value with that many decimals, the
    nearest to the mean (a mean half-way between two, up to the last bit of its sum, may go
    either way)."""
    np.testing.assert_array_equal(released, np.round(released, decimals))
    assert np.all(np.abs(released - means) <= 0.5 * 10.0 ** -decimals + 1e-9)
    exact = np.abs(np.abs(released - means) - 0.5 * 10.0 ** -decimals) > 1e-9
    np.testing.assert_array_equal(released[exact], np.round(means, decimals)[exact])


def test_means_are_rounded_to_the_input_decimals(tmp_path, capsys):
    """Means rounded to the decimals the CSV writes (2 here, 12.50 counting 2), or --decimals;
    the groups are those of the fit, so the rounded value of each record is its group's mean
    rounded (computed here with pandas), identical means stay identical and k holds."""
    rng = np.random.default_rng(7)
    n = 120
    frame = pd.DataFrame({"w": rng.integers(100, 900, n) / 10, "v": rng.integers(1000, 9000, n) / 100,
                          "s": rng.normal(size=n)})
    frame.loc[0, "v"] = 12.50
    source = tmp_path / "in.csv"
    frame.to_csv(source, index=False, float_format="%.2f")  # every value written with 2 decimals
    for decimals, argv in ((2, ()), (1, ("--decimals", 1)), (0, ("--decimals", 0))):
        out = tmp_path / f"out{decimals}.csv"
        link = tmp_path / f"link{decimals}.csv"
        assert _run("microaggregate", source, "-o", out, "-k", 4, "--keys", "w,v", "--confidential", "s",
                    "--link", link, "--function", tmp_path / f"f{decimals}.json", "--quiet", *argv) == 0
        err = capsys.readouterr().err
        released = _original_order(pd.read_csv(out), link)
        labels = METHODS["mdav"](4).fit(frame[["w", "v"]].round(2)).labels_
        means = frame[["w", "v"]].round(2).groupby(labels).transform("mean").to_numpy()
        _assert_rounded(released[["w", "v"]].to_numpy(), means, decimals)
        assert (released[["w", "v"]].groupby(labels).nunique() == 1).all().all()  # one value per group
        written = max(_decimals_in_text(out, c) for c in ("w", "v"))  # float columns: 39.0 for 0 decimals
        assert written == max(decimals, 1)
        assert _smallest_class(released, ["w", "v"]) >= 4
        X, Y = frame[["w", "v"]].round(2).to_numpy(), released[["w", "v"]].to_numpy()
        z = (X - X.mean(0)) / X.std(0)
        il = 100 * (((X - Y) / X.std(0)) ** 2).sum() / (z ** 2).sum()  # on what is released
        assert f"information loss = {il:.2f} %," in err
        applied = tmp_path / f"applied{decimals}.csv"  # the function rounds as the fit did
        assert _run("apply", tmp_path / f"f{decimals}.json", source, "-o", applied, "--confidential", "s",
                    "--keep-order", "--quiet") == 0
        np.testing.assert_array_equal(pd.read_csv(applied)[["w", "v"]].to_numpy(), released[["w", "v"]].to_numpy())


def test_no_float_noise_in_a_released_mean(tmp_path):
    """(38.7 + 39.1 + 39.2) / 3 is 39.00000000000001 in floating point: released as 39.0."""
    frame = pd.DataFrame({"x": [38.7, 39.1, 39.2, 80.1, 80.2, 80.3], "s": [1, 2, 3, 4, 5, 6]})
    assert (38.7 + 39.1 + 39.2) / 3 != 39.0
    source = tmp_path / "in.csv"
    frame.to_csv(source, index=False)
    out = tmp_path / "out.csv"
    assert _run("microaggregate", source, "-o", out, "-k", 3, "--keys", "x", "--confidential", "s", "--keep-order",
                "--quiet") == 0
    assert out.read_text().splitlines()[1:4] == ["39.0,1", "39.0,2", "39.0,3"]


def test_a_recipe_takes_decimals(tmp_path, capsys):
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"x": rng.normal(size=30), "s": rng.normal(size=30)})
    frame.to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "r.toml").write_text('command = "microaggregate"\ninput = "in.csv"\noutput = "out.csv"\n'
                                     '[options]\nk = 3\nkeys = ["x"]\nconfidential = ["s"]\ndecimals = 3\n')
    assert _run("release", tmp_path / "r.toml", "--quiet") == 0, capsys.readouterr().err
    assert _decimals_in_text(tmp_path / "out.csv", "x") == 3
    assert "decimals = 3" in (tmp_path / "out.csv.recipe.toml").read_text()

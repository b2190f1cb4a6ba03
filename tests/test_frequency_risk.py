"""Frequency-based risk of categorical keys (issue 17, point 5), against a hand computation, the
formulas of sdcMicro's documentation and a brute-force count."""

import math

import numpy as np
import pandas as pd
import pytest
from helpers import SHARED_DATA

from probanon.errors import InputError
from probanon.metrics.frequency import frequency_risk, individual_risk


def _example():
    """Eight records, keys sex and region; record 7 has no region, so it matches every man."""
    return pd.DataFrame({"sex": list("MMMFFFFM"), "region": ["A", "A", "B", "A", "A", "A", "B", None],
                         "w": [10, 30, 20, 15, 25, 60, 40, 50]})


def test_frequencies_and_risks_by_hand():
    result = frequency_risk(_example(), ["sex", "region"], weights="w")
    # f_k and F_k counted by hand: (M, A) = records 0, 1 and 7; (M, B) = 2 and 7; (F, A) = 3, 4, 5;
    # (F, B) = 6 alone; (M, missing) = every man: 0, 1, 2, 7
    np.testing.assert_array_equal(result.fk, [3, 3, 2, 3, 3, 3, 1, 4])
    np.testing.assert_allclose(result.Fk, [90, 90, 70, 100, 100, 100, 40, 110])
    # sdcMicro's indivRisk (approx): f = 1: p/(1-p) log(1/p); f = 2: p/(1-p) - (p/(1-p))^2 log(1/p);
    # f >= 3: p / (f - (1 - p)), with p = f/F:
    expected = [1 / 61, 1 / 61,                       # p = 3/90:  (1/30) / (3 - 29/30)
                1 / 34 - (1 / 34) ** 2 * math.log(35),  # p = 2/70:  p/(1-p) = 1/34
                0.03 / 2.03, 0.03 / 2.03, 0.03 / 2.03,   # p = 3/100
                math.log(40) / 39,                       # p = 1/40:  p/(1-p) = 1/39
                2 / 167]                                 # p = 4/110: (4/110) / (4 - 106/110)
    np.testing.assert_allclose(result.risk, expected, rtol=1e-12)
    assert result.sample_uniques == 1
    assert (result.violations(2), result.violations(3), result.violations(5)) == (1, 2, 8)
    assert result.expected_reidentifications == pytest.approx(sum(expected), rel=1e-12)
    assert result.global_risk == pytest.approx(sum(expected) / 8, rel=1e-12)
    summary = result.to_dict()
    assert summary["weighted"] and summary["violations"] == {"2": 1, "3": 2, "5": 8}


def test_without_weights_the_file_is_the_population():
    """F_k = f_k, p_k = 1: the risk is 1/f_k (the limit of sdcMicro's formulas at p = 1)."""
    result = frequency_risk(_example(), ["sex", "region"])
    np.testing.assert_allclose(result.Fk, result.fk)
    np.testing.assert_allclose(result.risk, 1 / np.array([3, 3, 2, 3, 3, 3, 1, 4]))
    for f in (1, 2, 3):  # the formulas approach 1/f as p -> 1, and stay accurate near it
        for u in (1e-3, 1e-6, 1e-9):
            assert individual_risk([f], [f / (1 - u)])[0] == pytest.approx(1 / f, rel=2 * u)
    # f = 2 on both sides of the switch to the series (u = 0.01), against the formula itself (at this u
    # its cancellation costs about 2 of 16 digits)
    for u in (0.0099, 0.0101):
        p = 1 - u
        direct = p / u - (p / u) ** 2 * math.log(1 / p)
        assert individual_risk([2], [2 / p])[0] == pytest.approx(direct, rel=1e-9)


def _brute_force(codes, w):
    """f_k and F_k by comparing every pair of records: equal, or missing (-1) on either side."""
    match = ((codes[:, None, :] == codes[None, :, :]) | (codes[:, None, :] < 0) | (codes[None, :, :] < 0)).all(2)
    return match.sum(1), match @ w


def test_adult_frequencies_with_missing_values_match_a_brute_force_count():
    """Adult's '?' (missing workclass, occupation, native country) as missing keys."""
    keys = ["workclass", "sex", "race", "occupation", "native-country"]
    frame = pd.read_csv(SHARED_DATA / "adult" / "adult.csv", nrows=1500, skipinitialspace=True, na_values="?")
    assert frame[keys].isna().any(axis=1).sum() > 50
    weights = frame["fnlwgt"].to_numpy(float) / 100
    result = frequency_risk(frame, keys, weights=weights)
    codes = np.column_stack([pd.factorize(frame[c])[0] for c in keys])
    fk, Fk = _brute_force(codes, weights)
    np.testing.assert_array_equal(result.fk, fk)
    np.testing.assert_allclose(result.Fk, Fk, rtol=1e-12)


def test_microaggregated_keys_have_no_violation_below_k():
    from helpers import casc

    from probanon.microagg import MDAV

    X = casc("census")[:, :3]
    before = frequency_risk(pd.DataFrame(X), [0, 1, 2])
    released = MDAV(k=5).fit_transform(X)
    after = frequency_risk(pd.DataFrame(released), [0, 1, 2])
    assert before.sample_uniques > 1000 and after.violations(5) == 0 and after.fk.min() >= 5
    assert after.expected_reidentifications < before.expected_reidentifications / 4


@pytest.mark.parametrize("weights, fragment", [([1, 2, 3, -1, 1, 1, 1, 1], "row 3 holds -1"),
                                               ([1, 2, 3, np.nan, 1, 1, 1, 1], "row 3 holds nan"),
                                               ([1, 2], "2 values for 8 records"),
                                               ("nope", "no weight column 'nope' in the table")])
def test_bad_weights_are_one_line_errors(weights, fragment):
    with pytest.raises(InputError, match=fragment) as info:
        frequency_risk(_example(), ["sex", "region"], weights=weights)
    assert "\n" not in str(info.value)


def _adult_file(tmp_path, n=300):
    columns = ["age", "hours-per-week", "sex", "race", "workclass", "fnlwgt"]
    frame = pd.read_csv(SHARED_DATA / "adult" / "adult.csv", nrows=n, skipinitialspace=True, na_values="?")[columns]
    path = tmp_path / "adult.csv"
    frame.to_csv(path, index=False)
    return frame, path


def test_evaluate_reports_the_frequency_risk_before_and_after(tmp_path, capsys):
    import json

    from probanon.cli import main

    frame, path = _adult_file(tmp_path)
    assert frame["workclass"].isna().sum() > 5
    released, link = tmp_path / "released.csv", tmp_path / "link.csv"
    assert main(["microaggregate", str(path), "-o", str(released), "-k", "5", "--keys", "age,hours-per-week",
                 "--keep-other", "--link", str(link), "--quiet"]) == 0
    capsys.readouterr()
    categorical = ["sex", "race", "workclass"]
    assert main(["evaluate", str(path), str(released), "--keys", "age,hours-per-week", "--categorical-keys",
                 ",".join(categorical), "--weights", "fnlwgt", "--link", str(link), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)["frequency_risk"]
    rows = pd.read_csv(link).sort_values("original_row")["released_row"].to_numpy() - 1
    aligned = pd.read_csv(released).iloc[rows].reset_index(drop=True)
    keys = ["age", "hours-per-week", *categorical]
    weights = frame["fnlwgt"].to_numpy(float)
    for table, side in ((frame, "original"), (aligned, "released")):
        codes = np.column_stack([pd.factorize(table[c])[0] for c in keys])
        fk, Fk = _brute_force(codes, weights)
        assert result[side]["sample_uniques"] == int((fk == 1).sum())
        assert result[side]["violations"] == {str(k): int((fk < k).sum()) for k in (2, 3, 5)}
        assert result[side]["expected_reidentifications"] == pytest.approx(individual_risk(fk, Fk).sum(), rel=1e-12)
    assert result["released"]["sample_uniques"] < result["original"]["sample_uniques"]


@pytest.mark.parametrize("extra, fragment", [(["--weights", "nope"], "no weight column 'nope'"),
                                             (["--weights", "age"], None),
                                             (["--categorical-keys", "sex,age"], "named by both"),
                                             (["--categorical-keys", "colour"], "no column 'colour'")])
def test_evaluate_bad_weights_and_keys(tmp_path, capsys, extra, fragment):
    from probanon.cli import main

    frame, path = _adult_file(tmp_path, 60)
    args = ["evaluate", str(path), str(path), "--keys", "age,hours-per-week", "--by-position", *extra]
    if fragment is None:  # a weight column with a negative value
        frame.loc[7, "age"] = -3
        frame.to_csv(path, index=False)
        args[args.index("--keys") + 1] = "hours-per-week"
        fragment = "line 9 holds -3"
    assert main(args) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err

"""Missing key values (issue 17, point 3): the "pattern" policy, its merge rule, the release
(no group with fewer than k records agreeing on every released value), IL with missing values."""

import json

import numpy as np
import pandas as pd
import pytest
from helpers import casc

from probanon.cli import main
from probanon.errors import InputError
from probanon.metrics import information_loss
from probanon.microagg import MDAV, PCL, VMDAV
from probanon.microagg.missing import pattern_sets


def _with_holes(X, share=0.04, seed=0):
    X = X.copy()
    X[np.random.default_rng(seed).random(X.shape) < share] = np.nan
    return X


def test_the_default_refuses_and_names_the_policy():
    X = _with_holes(casc("census")[:, :4])
    with pytest.raises(InputError, match=r"missing or infinite value \(row \d+, column \d\); give --missing pattern"):
        MDAV(5).fit(X)
    X[0, 0] = np.inf
    with pytest.raises(InputError, match="infinite value"):
        MDAV(5, missing="pattern").fit(X)


def test_merge_rule_by_hand():
    lacking = np.zeros((32, 3), bool)  # keys a, b, c
    lacking[20:22, 0] = True           # 2 records lack a
    lacking[22:28, :2] = True          # 6 lack a and b
    lacking[28:32, 2] = True           # 4 lack c
    which, observed, notes = pattern_sets(lacking, 3, ["a", "b", "c"])
    # the 2 records lacking a: nearest compatible sets differ by one key, the 20 complete records
    # (observed a,b,c) and the 6 lacking a,b (observed c); the larger wins
    assert notes == ["2 records missing a merged with 20 records missing no key"]
    assert len(set(which[:22])) == 1 and len(set(which)) == 3
    assert observed[which[0]].tolist() == [False, True, True]


@pytest.mark.parametrize("model", [MDAV(5), VMDAV(5), PCL(5, random_state=0, kicks=300)])
def test_released_groups_agree_on_every_value_and_missing_stays_missing(model):
    X = _with_holes(casc("census")[:, :5])
    released = model.set_params(missing="pattern").fit_transform(X)
    assert (np.isnan(X) <= np.isnan(released)).all()  # a missing value stays missing
    table = pd.DataFrame(released)
    assert table.groupby(list(table.columns), dropna=False).size().min() >= 5
    # each group's observed released value is the mean of its members (all observe that key)
    for g in np.unique(model.labels_)[:50]:
        rows = model.labels_ == g
        for j in range(X.shape[1]):
            if not np.isnan(released[rows, j]).any():
                assert released[rows, j][0] == pytest.approx(X[rows, j].mean(), rel=1e-12)
    assert model.function_ is None


def test_adult_numeric_keys_with_missing_values_through_the_cli(tmp_path, capsys):
    from helpers import SHARED_DATA

    frame = pd.read_csv(SHARED_DATA / "adult" / "adult.csv", nrows=2000, skipinitialspace=True, na_values="?")
    frame = frame[["age", "education-num", "hours-per-week", "workclass"]]
    holes = np.random.default_rng(3).random((len(frame), 3)) < 0.03
    for j, c in enumerate(["age", "education-num", "hours-per-week"]):
        frame.loc[holes[:, j], c] = np.nan
    path, out = tmp_path / "adult.csv", tmp_path / "out.csv"
    frame.to_csv(path, index=False)
    args = ["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", "age,education-num,hours-per-week",
            "--keep-other", "--keep-order", "--quiet"]
    assert main(args) != 0 and "--missing pattern" in capsys.readouterr().err
    assert main(args + ["--missing", "pattern", "--function", str(tmp_path / "f.json")]) != 0
    assert "publishes no function" in capsys.readouterr().err and not out.exists()
    assert main(args + ["--missing", "pattern"]) == 0
    err = capsys.readouterr().err
    assert "kept missing" in err and "k achieved = 5" in err
    released = pd.read_csv(out)
    keys = ["age", "education-num", "hours-per-week"]
    assert released.groupby(keys, dropna=False).size().min() >= 5
    assert (frame[keys].isna().to_numpy() <= released[keys].isna().to_numpy()).all()
    assert released["workclass"].isna().sum() == frame["workclass"].isna().sum()  # other columns untouched
    # evaluate reads the release with its missing values: k achieved, and the IL of the fit
    assert main(["evaluate", str(path), str(out), "--keys", "age,education-num,hours-per-week", "--by-position",
                 "--missing", "pattern", "-k", "5", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["k_achieved"] >= 5 and f"information loss = {result['information_loss']:.2f} %" in err


def test_information_loss_with_missing_values_by_hand():
    X = np.array([[1.0, 10.0], [3.0, np.nan], [5.0, 30.0], [7.0, 20.0]])
    Y = np.array([[2.0, np.nan], [2.0, np.nan], [6.0, 25.0], [6.0, 25.0]])
    # column 0: mean 4, sd sqrt(5); column 1 (observed 10, 30, 20): mean 20, sd sqrt(200/3)
    s0, s1 = np.sqrt(5), np.sqrt(200 / 3)
    sse = ((1 - 2) ** 2 * 2 + 1 + 1) / s0**2 + (10 - 20) ** 2 / s1**2 + ((30 - 25) ** 2 + (20 - 25) ** 2) / s1**2
    sst = (9 + 1 + 1 + 9) / s0**2 + (100 + 100 + 0) / s1**2
    assert information_loss(X, Y, missing=True) == pytest.approx(100 * sse / sst, rel=1e-12)


def test_records_lacking_every_key_form_their_own_groups():
    X = casc("census")[:200, :3].copy()
    X[:7] = np.nan  # 7 records with no key value (>= k = 3)
    model = MDAV(3, missing="pattern").fit(X)
    released = model.centroids_[model.labels_]
    assert np.isnan(released[:7]).all() and not np.isnan(released[7:]).any()
    assert np.bincount(model.labels_).min() >= 3
    w = np.random.default_rng(0).uniform(1, 9, len(X))
    np.testing.assert_array_equal(MDAV(3, missing="pattern").fit(X, sample_weight=w).labels_, model.labels_)

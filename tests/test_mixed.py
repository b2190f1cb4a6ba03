"""Categorical and mixed keys (issue 17, point 4): Gower-type distances, the group's mode or
median level released (never a category absent from the group), the function with its encoding."""

import json

import numpy as np
import pandas as pd
import pytest
from helpers import SHARED_DATA

from probanon.cli import main
from probanon.errors import InputError
from probanon.microagg import MDAV, PCL, VMDAV, function_from_json

NOMINAL = ["sex", "race", "workclass"]
KEYS = ["age", "hours-per-week", "education-num", *NOMINAL]


def _adult(n=2000):
    frame = pd.read_csv(SHARED_DATA / "adult" / "adult.csv", nrows=n, skipinitialspace=True)  # '?' a category
    return frame[KEYS + ["income"]]


def _first_mode(values: pd.Series):
    counts = values.value_counts()
    best = counts[counts == counts.max()].index
    return min(best, key=lambda v: (isinstance(v, str), v))


@pytest.mark.parametrize("model", [MDAV(5, keep_duplicates=True), VMDAV(5), PCL(5, random_state=0, kicks=300)])
def test_released_categories_are_the_groups_modes_and_median_levels(model):
    frame = _adult()
    model.set_params(nominal=NOMINAL, ordinal=["education-num"]).fit(frame[KEYS])
    released = pd.DataFrame(model.centroids_[model.labels_], columns=KEYS)
    assert np.bincount(model.labels_).min() >= 5
    for g, rows in pd.Series(range(len(frame))).groupby(model.labels_):
        members, out = frame.iloc[rows.to_numpy()], released.iloc[rows.to_numpy()[0]]
        for c in NOMINAL:
            assert out[c] == _first_mode(members[c])  # the mode, never a category absent from the group
        levels = np.sort(members["education-num"].to_numpy())
        assert out["education-num"] == levels[(len(levels) - 1) // 2]  # the lower median level
        assert out["age"] == pytest.approx(members["age"].mean(), rel=1e-12)


def test_function_embeds_records_and_round_trips():
    frame = _adult()
    model = MDAV(5, keep_duplicates=True, nominal=NOMINAL, ordinal=["education-num"]).fit(frame[KEYS])
    f = model.function_
    np.testing.assert_array_equal(f.assign(frame), model.labels_)
    g = function_from_json(f.to_json())
    assert g.to_json() == f.to_json()
    np.testing.assert_array_equal(g.assign(frame), model.labels_)
    assert (np.asarray(g.transform(frame), dtype=object) == model.centroids_[model.labels_]).all()  # a frame out
    # the distance: squared z-score differences plus 1 per differing nominal key (checked on a pair)
    a, b = frame.iloc[[0]], frame.iloc[[1]]
    za, zb = (f.standardizer.transform(f.encoding.embed(r))[0] for r in (a, b))
    numeric = [c for c in KEYS if c not in NOMINAL]
    z = lambda r, c: (r[c].iloc[0] - frame[c].mean()) / frame[c].std(ddof=0)  # noqa: E731
    ranks = pd.Series(np.searchsorted(np.sort(frame["education-num"].unique()), frame["education-num"]))
    expected = sum((z(a, c) - z(b, c)) ** 2 for c in ["age", "hours-per-week"])
    expected += ((ranks[0] - ranks[1]) / ranks.std(ddof=0)) ** 2
    expected += sum(a[c].iloc[0] != b[c].iloc[0] for c in NOMINAL)
    assert ((za - zb) ** 2).sum() == pytest.approx(expected, rel=1e-9) and numeric
    with pytest.raises(InputError, match="'Martian' is not one of the fitted categories"):
        f.assign(frame.head(2).assign(race="Martian"))
    spoiled = json.loads(f.to_json())
    spoiled["centroids"][0][3] = "Nobody"
    with pytest.raises(Exception, match="its categories"):
        function_from_json(json.dumps(spoiled))


def test_text_keys_must_be_declared():
    frame = _adult(200)
    with pytest.raises(InputError, match="'race' holds text: name it nominal or ordinal"):
        MDAV(5, nominal=["sex", "workclass"]).fit(frame[KEYS])
    with pytest.raises(InputError, match="not a key column"):
        MDAV(5, nominal=["colour"]).fit(frame[KEYS])


def test_cli_mixed_keys_and_apply(tmp_path, capsys):
    frame = _adult(3000)
    path, out, function = tmp_path / "adult.csv", tmp_path / "out.csv", tmp_path / "f.json"
    frame.to_csv(path, index=False)
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", "age,hours-per-week", "--nominal",
                 ",".join(NOMINAL), "--ordinal", "education-num", "--confidential", "income", "--keep-order",
                 "--function", str(function), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "k achieved = 5" in err and "replaced by its MDAV group mode" in err
    released = pd.read_csv(out)
    assert released.groupby(KEYS).size().min() >= 5
    for c in NOMINAL:  # each released category is one the record's group holds
        assert set(released[c]) <= set(frame[c])
    for size in ("1000000", "700"):  # the published function, whole file and in chunks
        applied = tmp_path / f"applied{size}.csv"
        assert main(["apply", str(function), str(path), "-o", str(applied), "--confidential", "income", "--keep-order",
                     "--chunk-size", size, "--quiet"]) == 0
        pd.testing.assert_frame_equal(pd.read_csv(applied).drop(columns="cell"), released)


def test_only_categorical_keys():
    frame = pd.DataFrame({"a": list("xxyyzzxy"), "b": list("ppqqppqq")})
    model = MDAV(2, nominal=["a", "b"]).fit(frame)
    released = pd.DataFrame(model.centroids_[model.labels_], columns=["a", "b"])
    assert released.groupby(["a", "b"]).size().min() >= 2
    for g, rows in pd.Series(range(len(frame))).groupby(model.labels_):
        assert set(released.iloc[rows.to_numpy()]["a"]) <= set(frame.iloc[rows.to_numpy()]["a"])


def test_cli_ordinal_levels_in_a_given_order(tmp_path, capsys):
    """--ordinal NAME=L1<L2<...: text levels in the office's order, not the alphabet's."""
    rng = np.random.default_rng(4)
    size = rng.choice(["small", "medium", "large"], 300)
    frame = pd.DataFrame({"x": rng.normal(size=300), "size": size})
    path, out, function = tmp_path / "f.csv", tmp_path / "out.csv", tmp_path / "f.json"
    frame.to_csv(path, index=False)
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", "x", "--ordinal",
                 "size=small<medium<large", "--keep-order", "--function", str(function), "--quiet"]) == 0
    f = json.loads(function.read_text())
    assert f["encoding"]["ordinal"] == {"size": ["small", "medium", "large"]}
    released = pd.read_csv(out)
    rank = {"small": 0, "medium": 1, "large": 2}
    for _, rows in frame.groupby(released["x"].to_numpy()):  # each group's lower median level in that order
        ranks = sorted(rank[v] for v in rows["size"])
        assert released.loc[rows.index, "size"].iloc[0] == ["small", "medium", "large"][ranks[(len(ranks) - 1) // 2]]
    capsys.readouterr()
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "5", "--keys", "x", "--ordinal", "size=small",
                 "--force"]) != 0
    assert "NAME=L1<L2<..." in capsys.readouterr().err

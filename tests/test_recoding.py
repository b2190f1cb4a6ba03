"""Global recoding (issue 43.1) and the entropy measures of the strategies (43.3): every expected
value is computed here independently (loops over intervals, hand-made tails and quantiles, counts),
never by the code under test; SPSS value labels are checked on a file written and read back."""

import json
import math

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from probanon.categorical.recoding import (BottomCode, Group, Hierarchy, Intervals, Round, TopCode, recode,
                                           step_from_dict, steps_from_json)
from probanon.categorical.strategies import entropy, entropy_lost, information_loss
from probanon.data import read_table
from probanon.errors import InputError, ParameterError
from probanon.labelled import labels_of, missing_codes, tagged_missing, write_labelled


def _fmt(v) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def _interval_by_loop(x, breaks, closed="right"):
    """The label of x, found by walking the intervals (R's cut, include.lowest = TRUE)."""
    m = len(breaks) - 1
    for i in range(m):
        a, b = breaks[i], breaks[i + 1]
        if closed == "right" and (a < x <= b or (i == 0 and x == a)):
            return ("[" if i == 0 else "(") + f"{_fmt(a)},{_fmt(b)}]"
        if closed == "left" and (a <= x < b or (i == m - 1 and x == b)):
            return f"[{_fmt(a)},{_fmt(b)}" + ("]" if i == m - 1 else ")")
    raise AssertionError(x)


@pytest.mark.parametrize("closed", ["right", "left"])
def test_intervals_from_breaks_match_a_walk_over_the_intervals(closed):
    rng = np.random.default_rng(1)
    breaks = [0, 18, 25, 40, 65, 100]
    ages = np.concatenate([rng.integers(0, 101, 400), breaks]).astype(float)
    ages[[3, 50]] = np.nan
    out, report = recode(pd.DataFrame({"age": ages}), [Intervals("age", breaks=breaks, closed=closed)])
    expected = [None if math.isnan(x) else _interval_by_loop(x, breaks, closed) for x in ages]
    assert out["age"].tolist() == expected
    assert report.categories_before["age"] == len(set(ages[~np.isnan(ages)]))
    assert report.categories_after["age"] == len({e for e in expected if e is not None})
    assert report.records_changed["age"] == int((~np.isnan(ages)).sum())  # every number became a text


@pytest.mark.parametrize("closed", ["right", "left"])
def test_width_bands_lie_on_multiples_of_the_width(closed):
    ages = np.array([17, 20, 21, 24, 25, 26, 90, 37], dtype=float)
    out, _ = recode(pd.DataFrame({"age": ages}), [Intervals("age", width=5, closed=closed, label="lower")])
    lower = [(math.ceil(a / 5) - 1) * 5 if closed == "right" else math.floor(a / 5) * 5 for a in ages]
    assert out["age"].tolist() == lower
    labels = labels_of(out).value_labels["age"]  # the band texts, as value labels of the lower bounds
    for a, lo in zip(ages, lower):
        assert labels[lo] == (f"({lo},{lo + 5}]" if closed == "right" else f"[{lo},{lo + 5})")


def test_quantile_intervals_have_equal_frequencies_and_codes():
    x = np.random.default_rng(2).normal(size=1000)  # no ties: each of 4 intervals holds 250 +- 1
    out, _ = recode(pd.DataFrame({"x": x}), [Intervals("x", quantiles=4, label="code")])
    counts = out["x"].value_counts().sort_index()
    assert counts.index.tolist() == [1, 2, 3, 4] and all(abs(c - 250) <= 1 for c in counts)
    order = np.argsort(x)  # codes increase with the value
    assert np.all(np.diff(out["x"].to_numpy()[order]) >= 0)


def test_missing_values_stay_missing_bit_for_bit():
    x = np.array([3.0, 7.0, 12.0, 1.0])
    x[1:2] = tagged_missing([99])  # an SPSS user-missing code
    for step in (Intervals("x", breaks=[0, 5, 20], label="lower"), Round("x", 5), TopCode("x", threshold=5),
                 Group("x", {3: 4})):
        out, _ = recode(pd.DataFrame({"x": x}), [step])
        tagged, codes = missing_codes(out["x"].to_numpy(np.float64))
        assert tagged.tolist() == [False, True, False, False] and codes[1] == 99.0, step


def test_values_outside_the_breaks_are_named():
    with pytest.raises(InputError, match="the value 120 lies outside the breaks 0..100"):
        recode(pd.DataFrame({"age": [10, 120]}), [Intervals("age", breaks=[0, 50, 100])])
    with pytest.raises(ParameterError, match="increasing"):
        Intervals("age", breaks=[0, 50, 50])
    with pytest.raises(ParameterError, match="one of breaks, width or quantiles"):
        Intervals("age", breaks=[0, 1], width=5)
    with pytest.raises(InputError, match="not numeric"):
        recode(pd.DataFrame({"sex": ["M", "F"]}), [Round("sex", 5)])
    with pytest.raises(InputError, match="column 'nope' is not in the table"):
        recode(pd.DataFrame({"a": [1]}), [Round("nope", 5)])


def test_rounding_to_a_base_halves_up():
    out, report = recode(pd.DataFrame({"x": [12, 12.5, 13, 17.4, -2.5, 20]}), [Round("x", 5)])
    assert out["x"].tolist() == [10, 15, 15, 15, 0, 20]
    assert report.records_changed["x"] == 5


def test_top_coding_by_quantile_with_the_weighted_tail_mean():
    x = np.arange(1, 101, dtype=float)  # R type 7: the 0.9 quantile is 1 + 0.9 * 99 = 90.1
    w = np.linspace(1, 3, 100)
    out, report = recode(pd.DataFrame({"x": x, "w": w}), [TopCode("x", quantile=0.9, replacement="mean")],
                         weights="w")
    tail = [i for i in range(100) if x[i] > 90.1]
    assert tail == list(range(90, 100))
    mean = sum(w[i] * x[i] for i in tail) / sum(w[i] for i in tail)
    assert np.allclose(out["x"].to_numpy()[tail], mean) and np.array_equal(out["x"].to_numpy()[:90], x[:90])
    assert report.records_changed["x"] == 10
    out, _ = recode(pd.DataFrame({"x": x}), [BottomCode("x", threshold=5.5), TopCode("x", threshold=95, replacement=99)])
    assert out["x"].tolist() == [5.5] * 5 + list(range(6, 96)) + [99] * 5


def test_grouping_text_categories():
    frame = pd.DataFrame({"ms": ["Married-civ", "Married-AF", "Never", None, "Divorced"]})
    out, report = recode(frame, [Group("ms", {"Married-civ": "Married", "Married-AF": "Married"})])
    assert out["ms"].tolist()[:3] == ["Married", "Married", "Never"] and pd.isna(out["ms"][3])
    assert (report.categories_before["ms"], report.categories_after["ms"], report.records_changed["ms"]) == (4, 3, 2)
    with pytest.raises(InputError, match="'Maried' is not a value"):
        recode(frame, [Group("ms", {"Maried": "M"})])


def _hierarchy_file(tmp_path, header=True, sep=";"):
    rows = [["education", "level1", "level2"]] * header + [
        ["Bachelors", "Higher", "Any"], ["Masters", "Higher", "Any"], ["HS-grad", "School", "Any"],
        ["11th", "School", "Any"]]
    path = tmp_path / "edu.csv"
    path.write_text("\n".join(sep.join(r) for r in rows) + "\n")
    return path


@pytest.mark.parametrize("header, sep", [(True, ";"), (False, ","), (False, "\t")])
def test_hierarchy_levels(tmp_path, header, sep):
    path = _hierarchy_file(tmp_path, header, sep)
    frame = pd.DataFrame({"edu": ["Masters", "11th", "Bachelors", None, "HS-grad"]})
    one, report = recode(frame, [Hierarchy("edu", str(path), 1)])
    assert one["edu"].tolist()[:3] == ["Higher", "School", "Higher"] and pd.isna(one["edu"][3])
    assert report.categories_after["edu"] == 2
    two, _ = recode(frame, [Hierarchy("edu", str(path), 2)])
    assert two["edu"].dropna().unique().tolist() == ["Any"]
    with pytest.raises(InputError, match="no level 3"):
        recode(frame, [Hierarchy("edu", str(path), 3)])


def test_a_value_missing_from_the_hierarchy_is_named(tmp_path):
    path = _hierarchy_file(tmp_path)
    with pytest.raises(InputError, match="the value 'Doctorate' of 'edu' is not in level 0"):
        recode(pd.DataFrame({"edu": ["Masters", "Doctorate"]}), [Hierarchy("edu", str(path), 1)])


def _sav(tmp_path, name="coded.sav"):
    frame = pd.DataFrame({"ms": [1, 2, 3, 4, 1, 3, 2, 4], "age": [23, 37, 45, 61, 29, 33, 50, 70]}, dtype=float)
    labels = {"ms": {1: "Married-civ", 2: "Married-AF", 3: "Never", 4: "Divorced"}}
    path = tmp_path / name
    pyreadstat.write_sav(frame, str(path), variable_value_labels=labels, column_labels=["marital status", "age"])
    return path, frame


def test_value_labels_of_an_spss_file_follow_the_recoding(tmp_path):
    path, original = _sav(tmp_path)
    frame = read_table(path)
    steps = [Group("ms", {"Married-civ": "Married", "Married-AF": "Married"}),  # named by their labels
             Group("ms", {4: 3}),  # codes: the new code's label joins the labels grouped
             Intervals("age", breaks=[0, 30, 50, 100], label="code")]
    out, _ = recode(frame, steps)
    written = tmp_path / "out.sav"
    write_labelled(out, written, "spss")
    back, meta = pyreadstat.read_sav(str(written))
    expected_ms = [1 if v in (1, 2) else 3 for v in original["ms"]]  # the smallest code of each group
    assert back["ms"].tolist() == expected_ms
    assert meta.variable_value_labels["ms"] == {1: "Married", 3: "Never / Divorced"}
    expected_age = [1 if a <= 30 else 2 if a <= 50 else 3 for a in original["age"]]
    assert back["age"].tolist() == expected_age
    assert meta.variable_value_labels["age"] == {1: "[0,30]", 2: "(30,50]", 3: "(50,100]"}
    assert meta.column_names_to_labels["ms"] == "marital status"


def test_intervals_as_text_drop_the_codes_labels(tmp_path):
    path, original = _sav(tmp_path)
    out, _ = recode(read_table(path), [Intervals("ms", breaks=[0, 2, 4])])
    assert out["ms"].tolist() == [_interval_by_loop(v, [0, 2, 4]) for v in original["ms"]]
    assert "ms" not in labels_of(out).value_labels


def test_a_labelled_hierarchy_level_zero_may_hold_the_labels(tmp_path):
    path, original = _sav(tmp_path)
    h = tmp_path / "ms.csv"
    h.write_text("Married-civ,Married\nMarried-AF,Married\nNever,Single\nDivorced,Single\n")
    out, _ = recode(read_table(path), [Hierarchy("ms", str(h), 1)])
    assert out["ms"].tolist() == [1 if v in (1, 2) else 3 for v in original["ms"]]
    assert labels_of(out).value_labels["ms"] == {1: "Married", 3: "Single"}


def test_steps_round_trip_through_json(tmp_path):
    steps = [Intervals("age", breaks=(0, 20, 100), label="lower", closed="left"), Intervals("x", width=2.5),
             Intervals("y", quantiles=10, label="code"), Round("age", 5), Group("ms", {1: 2, "a": "b"}, {2: "two"}),
             Hierarchy("edu", "h.csv", 2), TopCode("gain", quantile=0.99, replacement="mean"),
             BottomCode("gain", threshold=0, replacement=-1)]
    text = json.dumps([s.to_dict() for s in steps])
    again = steps_from_json(json.loads(text))
    assert again == steps
    assert Intervals.from_dict(steps[0].to_dict()) == steps[0]
    with pytest.raises(ParameterError, match="expected a round step"):
        Round.from_dict(steps[0].to_dict())
    with pytest.raises(ParameterError, match="kind"):
        step_from_dict({"kind": "shuffle", "column": "a"})
    with pytest.raises(ParameterError, match="unknown option 'bins'"):
        step_from_dict({"kind": "intervals", "column": "a", "bins": 3})


# -- entropy measures of the strategies (43.3) --------------------------------------------------------


def _h(counts) -> float:
    n = sum(counts)
    return -sum(c / n * math.log2(c / n) for c in counts if c)


def test_entropy_lost_by_recoding_is_the_entropy_difference():
    x = pd.Series(list("aabbbcccd"))
    y = x.map({"a": "ab", "b": "ab", "c": "c", "d": "d"})
    assert entropy(x) == pytest.approx(_h([2, 3, 3, 1]))
    assert entropy_lost(x, y) == pytest.approx(_h([2, 3, 3, 1]) - _h([5, 3, 1]))
    assert entropy_lost(x, x) == pytest.approx(0.0)


def test_entropy_lost_by_suppression_by_hand():
    x = pd.Series(["a", "a", "b", "b"])
    y = pd.Series(["a", None, "b", None])  # half the records suppressed; among them a and b equally: 1 bit
    assert entropy_lost(x, y) == pytest.approx(0.5)
    loss = information_loss(pd.DataFrame({"k": x}), pd.DataFrame({"k": y}), ["k"])
    assert loss.loc["k", "information_loss"] == pytest.approx(0.5 / 1.0)


# -- kAnon-style strategies (43.3) ---------------------------------------------------------------------

def _adult_keys(n=400):
    from helpers import SHARED_DATA

    f = pd.read_csv(SHARED_DATA / "adult" / "adult.csv", nrows=n, skipinitialspace=True)
    return pd.DataFrame({"age": f["age"], "sex": f["sex"], "race": f["race"], "ms": f["marital-status"]})


def _h_given(x, y) -> float:
    """H(X | Y) by hand: sum over y of p(y) H(X | Y = y), a missing value a category."""
    x = ["<NA>" if pd.isna(v) else v for v in x]
    y = ["<NA>" if pd.isna(v) else v for v in y]
    n, total = len(x), 0.0
    for value in set(y):
        inside = [a for a, b in zip(x, y) if b == value]
        total += len(inside) / n * _h([inside.count(a) for a in set(inside)])
    return total


def test_kanon_recodes_then_suppresses_to_k():
    pytest.importorskip("probanon.categorical.suppression")
    from probanon.categorical.strategies import kanon

    data, keys = _adult_keys(), ["age", "sex", "race", "ms"]
    result = kanon(data, keys, 3, [Intervals("age", breaks=[0, 30, 45, 60, 100])])
    out = result.data
    kept = out["age"].notna()
    assert out["age"][kept].tolist() == [_interval_by_loop(a, [0, 30, 45, 60, 100]) for a in data["age"][kept]]
    values, missing = out[keys].to_numpy(dtype=object), out[keys].isna().to_numpy()
    for i in range(len(out)):  # every record matches >= 3 records, a missing value matching any
        same = np.all((values == values[i]) | missing | missing[i], axis=1)
        assert same.sum() >= 3, i
    assert result.recoding.categories_after["age"] == 4
    assert result.suppression.total == int(sum(out[c].isna().sum() - data[c].isna().sum() for c in keys))


def test_compare_strategies_counts_and_entropy_by_hand():
    pytest.importorskip("probanon.categorical.suppression")
    from probanon.categorical.strategies import compare_strategies, kanon

    data, keys = _adult_keys(), ["age", "sex", "race", "ms"]
    candidates = {"none": [], "age by 10": [Intervals("age", width=10)],
                  "age by 20": [Intervals("age", width=20), Group("ms", {"Married-civ-spouse": "Married",
                                                                          "Married-AF-spouse": "Married"})]}
    table = compare_strategies(data, keys, 3, candidates, random_state=0)
    assert table["suppressed"].is_monotonic_increasing and set(table.index) == set(candidates)
    for name, steps in candidates.items():
        out = kanon(data, keys, 3, steps, random_state=0).data
        for c in keys:
            assert table.loc[name, f"suppressed_{c}"] == int(out[c].isna().sum())
            lost = _h_given(data[c], out[c])
            assert table.loc[name, f"entropy_lost_{c}"] == pytest.approx(lost)
            h = _h([list(data[c]).count(v) for v in set(data[c])])
            assert table.loc[name, f"information_loss_{c}"] == pytest.approx(lost / h)


def test_a_hierarchy_that_is_not_a_function_is_refused(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("a,x\nb,x\na,y\n")
    with pytest.raises(InputError, match="'a' appears twice in level 0"):
        recode(pd.DataFrame({"c": ["a", "b"]}), [Hierarchy("c", str(path), 1)])

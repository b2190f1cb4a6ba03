"""Tests of probanon.metrics; every expected number is computed independently here."""

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from probanon.errors import InputError
from probanon.metrics import (
    UtilityReport,
    equivalence_class_sizes,
    information_loss,
    k_achieved,
    utility_report,
)


@pytest.fixture
def table():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)) @ np.array([[1.0, 0.5, 0.0], [0.0, 1.0, 0.3], [0.0, 0.0, 2.0]])
    return X


def _perturbed(X, seed=1):
    return X + np.random.default_rng(seed).normal(scale=0.3, size=X.shape)


# --- information loss -------------------------------------------------------------


def test_identical_release_loses_nothing(table):
    assert information_loss(table, table.copy()) == 0.0
    assert information_loss(table, table.copy(), standardize=False) == 0.0


def test_releasing_column_means_loses_everything(table):
    means = np.tile(table.mean(axis=0), (table.shape[0], 1))
    assert information_loss(table, means) == pytest.approx(100.0)
    assert information_loss(table, means, standardize=False) == pytest.approx(100.0)


def test_hand_computed_example():
    # Column a: 0, 2, 10, 12 (mean 6, population sd sqrt((36+16+16+36)/4) = sqrt(26)).
    # Column b: 1, 1, 5, 9  (mean 4, population sd sqrt((9+9+1+25)/4) = sqrt(11)).
    # Records {0,1} and {2,3} are replaced by their group means.
    original = np.array([[0.0, 1.0], [2.0, 1.0], [10.0, 5.0], [12.0, 9.0]])
    released = np.array([[1.0, 1.0], [1.0, 1.0], [11.0, 7.0], [11.0, 7.0]])
    # Raw squared errors: a -> 1+1+1+1 = 4, b -> 0+0+4+4 = 8.
    # On z-scores each column's SSE is divided by its variance, and SST = n per column = 4.
    sse = 4 / 26 + 8 / 11
    sst = 4 + 4
    assert information_loss(original, released) == pytest.approx(100 * sse / sst)
    # Raw units: SST = 104 + 44.
    assert information_loss(original, released, standardize=False) == pytest.approx(100 * 12 / 148)


def test_constant_column_adds_nothing_to_sst_but_its_error_counts():
    original = np.array([[0.0, 5.0], [2.0, 5.0], [10.0, 5.0], [12.0, 5.0]])
    exact_constant = np.array([[1.0, 5.0], [1.0, 5.0], [11.0, 5.0], [11.0, 5.0]])
    # Only column a varies: SSE = 4/26 on z-scores, SST = 4.
    assert information_loss(original, exact_constant) == pytest.approx(100 * (4 / 26) / 4)
    # The constant column is centred with scale 1: an error of 1 in each record adds 4 to SSE.
    shifted_constant = exact_constant + np.array([0.0, 1.0])
    assert information_loss(original, shifted_constant) == pytest.approx(100 * (4 / 26 + 4) / 4)


def test_all_constant_original_is_rejected():
    original = np.full((5, 2), 3.0)
    with pytest.raises(InputError):
        information_loss(original, original)


def test_accepts_dataframes(table):
    released = _perturbed(table)
    frame = pd.DataFrame(table, columns=["a", "b", "c"])
    assert information_loss(frame, pd.DataFrame(released)) == pytest.approx(information_loss(table, released))


def test_mismatched_shapes_are_rejected(table):
    with pytest.raises(InputError):
        information_loss(table, table[:-1])
    with pytest.raises(InputError):
        information_loss(table, table[:, :2])
    with pytest.raises(InputError):
        utility_report(table, table[:-1])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_is_rejected(table, bad):
    broken = table.copy()
    broken[3, 1] = bad
    with pytest.raises(InputError):
        information_loss(broken, table)
    with pytest.raises(InputError):
        information_loss(table, broken)
    with pytest.raises(InputError):
        utility_report(table, broken)


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, (8, 3), elements=st.floats(-1e3, 1e3)), st.integers(0, 2**32 - 1))
def test_information_loss_matches_direct_formula(X, seed):
    sd = X.std(axis=0)
    if (sd <= 1e-9 * np.maximum(1.0, np.abs(X.mean(axis=0)))).any():
        return  # constant columns are covered by the dedicated tests
    Y = X + np.random.default_rng(seed).normal(size=X.shape)
    z_x = (X - X.mean(axis=0)) / sd
    z_y = (Y - X.mean(axis=0)) / sd
    expected = 100 * ((z_x - z_y) ** 2).sum() / ((z_x - z_x.mean(axis=0)) ** 2).sum()
    assert information_loss(X, Y) == pytest.approx(expected, rel=1e-9)


# --- utility report ---------------------------------------------------------------


def test_report_moments_match_numpy(table):
    released = _perturbed(table)
    report = utility_report(table, released)
    assert isinstance(report, UtilityReport)
    assert report.n_records == 30
    assert report.columns == [0, 1, 2]
    for j in range(3):
        assert report.mean_difference[j] == pytest.approx(np.mean(released[:, j]) - np.mean(table[:, j]))
        v0, v1 = np.var(table[:, j]), np.var(released[:, j])
        assert report.variance_difference[j] == pytest.approx(v1 - v0)
        assert report.relative_variance_difference[j] == pytest.approx((v1 - v0) / v0)
    diffs = [
        abs(np.corrcoef(released[:, j], released[:, l])[0, 1] - np.corrcoef(table[:, j], table[:, l])[0, 1])
        for j, l in [(0, 1), (0, 2), (1, 2)]
    ]
    assert report.correlation_difference_max == pytest.approx(max(diffs))
    assert report.correlation_difference_mean == pytest.approx(sum(diffs) / 3)
    sd = table.std(axis=0)
    sse = (((table - released) / sd) ** 2).sum()
    assert report.information_loss == pytest.approx(100 * sse / table.size)


def test_report_on_dataframes_matches_columns_by_name(table):
    original = pd.DataFrame(table, columns=["a", "b", "c"]).assign(city=["x"] * 30)
    released = pd.DataFrame(_perturbed(table), columns=["a", "b", "c"])[["c", "a", "b"]]
    report = utility_report(original, released, columns=["a", "c"])
    assert report.columns == ["a", "c"]
    assert report.mean_difference["c"] == pytest.approx(released["c"].mean() - original["c"].mean())
    r_orig = np.corrcoef(original["a"], original["c"])[0, 1]
    r_rel = np.corrcoef(released["a"], released["c"])[0, 1]
    assert report.correlation_difference_max == pytest.approx(abs(r_rel - r_orig))
    # Default columns: the numeric ones of the original.
    assert utility_report(original, released).columns == ["a", "b", "c"]


def test_report_with_constant_columns():
    original = np.array([[0.0, 5.0, 1.0], [2.0, 5.0, 3.0], [10.0, 5.0, 2.0], [12.0, 5.0, 8.0]])
    released = np.array([[1.0, 5.0, 2.0], [1.0, 5.0, 2.0], [11.0, 5.0, 5.0], [11.0, 5.0, 5.0]])
    report = utility_report(original, released)
    assert report.relative_variance_difference[1] is None
    assert report.variance_difference[1] == 0.0
    # Only the pair (0, 2) has both columns varying in both tables.
    expected = abs(np.corrcoef(released[:, 0], released[:, 2])[0, 1] - np.corrcoef(original[:, 0], original[:, 2])[0, 1])
    assert report.correlation_difference_max == pytest.approx(expected)
    assert report.correlation_difference_mean == pytest.approx(expected)


def test_report_without_any_correlation_pair():
    original = np.array([[0.0, 1.0], [2.0, 2.0], [4.0, 6.0]])
    released = np.array([[2.0, 1.0], [2.0, 2.0], [2.0, 6.0]])  # column 0 collapsed
    report = utility_report(original, released)
    assert report.correlation_difference_max is None
    assert report.correlation_difference_mean is None
    assert report.relative_variance_difference[0] == pytest.approx(-1.0)


def test_report_to_dict_is_json_serialisable():
    original = pd.DataFrame({"a": [0.0, 2.0, 10.0, 12.0], "b": [5.0] * 4, 7: [1.0, 3.0, 2.0, 8.0]})
    released = pd.DataFrame({"a": [1.0, 1.0, 11.0, 11.0], "b": [5.0] * 4, 7: [2.0, 2.0, 5.0, 5.0]})
    report = utility_report(original, released)
    payload = json.loads(json.dumps(report.to_dict(), allow_nan=False))
    assert payload["n_records"] == 4
    assert payload["columns"] == ["a", "b", "7"]
    assert payload["relative_variance_difference"]["b"] is None
    assert payload["mean_difference"]["a"] == pytest.approx(0.0)
    assert math.isfinite(payload["information_loss"])


def test_report_is_frozen(table):
    report = utility_report(table, table)
    with pytest.raises(AttributeError):
        report.n_records = 3


# --- anonymity --------------------------------------------------------------------


def test_k_achieved_is_smallest_group():
    frame = pd.DataFrame({"age": [30] * 2 + [40] * 3 + [50] * 5, "zip": [1.5] * 2 + [2.5] * 3 + [3.5] * 5})
    assert k_achieved(frame) == 2
    assert equivalence_class_sizes(frame).tolist() == [2, 3, 5]
    assert k_achieved(frame.to_numpy()) == 2


def test_k_achieved_with_strings_and_column_choice():
    frame = pd.DataFrame(
        {
            "city": ["Rome", "Rome", "Oslo", "Oslo", "Oslo", "Lima"],
            "sex": ["F", "F", "M", "M", "M", "F"],
            "income": [1, 2, 3, 4, 5, 6],
        }
    )
    assert k_achieved(frame, columns=["city", "sex"]) == 1  # Lima/F is unique
    assert k_achieved(frame[frame.city != "Lima"], columns=["city", "sex"]) == 2
    assert k_achieved(frame) == 1  # default: every column, income is unique
    assert sorted(equivalence_class_sizes(frame, columns="sex").tolist()) == [3, 3]


def test_k_achieved_with_missing_values_and_categories():
    frame = pd.DataFrame({"a": [1.0, np.nan, np.nan, 1.0], "b": pd.Categorical(["x", "y", "y", "x"], categories=["x", "y", "z"])})
    assert k_achieved(frame) == 2  # NaN rows form one class; unused category "z" is not a class


def test_k_achieved_on_numpy_string_array():
    values = np.array([["a", "1"], ["a", "1"], ["b", "2"], ["b", "2"], ["b", "2"]])
    assert k_achieved(values) == 2
    assert k_achieved(values, columns=[0]) == 2
    assert equivalence_class_sizes(values).sum() == 5


def test_k_achieved_rejects_empty_input():
    with pytest.raises(InputError):
        k_achieved(pd.DataFrame({"a": []}))
    with pytest.raises(InputError):
        equivalence_class_sizes(np.empty((0, 2)))
    with pytest.raises(InputError):
        k_achieved(pd.DataFrame({"a": [1, 2]}), columns=["missing"])

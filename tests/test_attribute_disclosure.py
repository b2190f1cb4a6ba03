"""Attribute disclosure of numeric confidential columns (issue 42.1, probanon.metrics.attribute):
the shares of people whose released group pins their value, against a record-by-record recount
and a case worked by hand."""

import numpy as np
import pandas as pd
import pytest

from probanon.errors import InputError
from probanon.metrics.attribute import pinned_shares


def test_a_case_worked_by_hand():
    # group a: 100, 104, 109; group b: 50, 80. Within 5% of 100 is [95, 105]: 109 is not, so
    # group a pins only 104 within 5% ([98.8, 109.2] holds all three); its median 104 is
    # within 5% of 100 and of 104 and of 109 ([103.55, 114.45]). Group b pins nobody; its median
    # 65 is within 5% of neither. Within 10%: 100 -> [90, 110] holds all of a; 104 -> [93.6, 114.4]
    # all; 109 -> [98.1, 119.9] all; 50 and 80 not.
    values = [100.0, 104.0, 109.0, 50.0, 80.0]
    groups = ["a", "a", "a", "b", "b"]
    r = pinned_shares(values, groups, margins=(5, 10), column="income")
    assert r.all_within == (1 / 5, 3 / 5)
    assert r.median_within == (3 / 5, 3 / 5)
    # the whole file as one group: its values span 50..109, which no 10% margin holds; its median
    # 100 is within 5% of 100 and 104 (and within 10% of 100, 104, 109: [98.1, 119.9])
    assert r.baseline_all_within == (0.0, 0.0)
    assert r.baseline_median_within == (2 / 5, 3 / 5)
    assert (r.n_records, r.n_groups) == (5, 2)
    assert r.headline() == ("60.0% of people pinned within 10% on income (baseline 0.0%); the group's median "
                            "within 10% for 60.0% (baseline 60.0%)")


def _recount(values, groups, p):
    """Record by record, straight from the definition."""
    every = middle = 0
    for i, v in enumerate(values):
        members = [values[j] for j in range(len(values)) if groups[j] == groups[i]]
        t = abs(v) * p / 100
        every += all(abs(x - v) <= t for x in members)
        middle += abs(float(np.median(members)) - v) <= t
    return every / len(values), middle / len(values)


def test_the_shares_agree_with_a_record_by_record_recount():
    rng = np.random.default_rng(42)
    values = np.round(rng.lognormal(10, 0.4, 300), 0)
    values[:5] = 0.0  # a value 0 is within only of 0
    groups = rng.integers(0, 60, 300)
    r = pinned_shares(values, groups, margins=(1, 5, 10, 30))
    for p, every, middle in zip(r.margins, r.all_within, r.median_within):
        assert (every, middle) == pytest.approx(_recount(list(values), list(groups), p), abs=1e-12)
    for p, every, middle in zip(r.margins, r.baseline_all_within, r.baseline_median_within):
        assert (every, middle) == pytest.approx(_recount(list(values), [0] * 300, p), abs=1e-12)
    assert r.n_groups == len(set(groups))


def test_groups_from_the_released_key_columns():
    keys = pd.DataFrame({"age": [30, 30, 40, 40, np.nan, np.nan], "sex": ["F", "F", "M", "M", "F", "F"]})
    values = [10.0, 10.5, 10.0, 20.0, 7.0, 7.0]
    r = pinned_shares(values, keys, margins=(10,))
    # classes (30, F), (40, M), (missing, F): the first pins both (10 and 10.5 within 10% of each other:
    # [9, 11], [9.45, 11.55]), the second neither, the third both
    assert r.all_within == (4 / 6,) and r.n_groups == 3


@pytest.mark.parametrize("values, groups, margins, message", [
    ([1.0, 2.0], ["a"], (5,), "2 values but 1 group labels"),
    ([1.0, np.nan], ["a", "b"], (5,), "missing"),
    ([1.0, 2.0], ["a", "b"], (0,), "margins must be percentages > 0"),
    ([1.0, 2.0], ["a", "b"], (), "margins must be percentages > 0"),
])
def test_bad_input_is_one_clear_error(values, groups, margins, message):
    with pytest.raises(InputError, match=message):
        pinned_shares(values, groups, margins=margins)

"""Household (hierarchical) risk (probanon.metrics.household) by a hand computation: sdcMicro's
measure_risk(hid=...) definition, R_h = 1 - prod (1 - r_i), hier_risk_ER the sum over records."""

from math import log

import numpy as np
import pandas as pd
import pytest

from probanon.errors import InputError
from probanon.metrics.household import hierarchical_risk, household_risk


def test_weighted_file_by_hand():
    table = pd.DataFrame({"key": ["A", "A", "B", "C", "C", "C"], "w": [10, 30, 5, 20, 20, 20],
                          "hid": [1, 1, 2, 2, 3, 3]})
    # individual risks (Benedetti-Franconi, sdcMicro's indivRisk) by hand: f_k, F_k per key
    p = 2 / 40
    r_a = p / (1 - p) - (p / (1 - p)) ** 2 * log(1 / p)  # f_k = 2
    p = 1 / 5
    r_b = p / (1 - p) * log(1 / p)  # f_k = 1
    p = 3 / 60
    r_c = p / (3 - (1 - p))  # f_k = 3
    h1, h2, h3 = 1 - (1 - r_a) ** 2, 1 - (1 - r_b) * (1 - r_c), 1 - (1 - r_c) ** 2
    result = hierarchical_risk(table, ["key"], "hid", weights="w")
    np.testing.assert_allclose(result.risk, [h1, h1, h2, h2, h3, h3])
    assert result.expected_reidentifications == pytest.approx(2 * (h1 + h2 + h3))
    assert result.hierarchical_risk == pytest.approx(2 * (h1 + h2 + h3) / 6)
    assert result.expected_households == pytest.approx(h1 + h2 + h3)
    summary = result.to_dict()
    assert summary["households"] == 3 and summary["hierarchical_risk_pct"] == pytest.approx(100 * (h1 + h2 + h3) / 3)
    table_ = result.table()
    assert table_["risk"].tolist() == pytest.approx(sorted([h1, h2, h3], reverse=True))
    assert dict(zip(table_["household"], table_["members"])) == {1: 2, 2: 2, 3: 2}


def test_population_file_and_a_certain_member():
    # no weights: r = 1/f_k; a sample unique (r = 1) makes its household certain
    table = pd.DataFrame({"key": [1, 2, 2, 3, 3, 3], "hid": ["a", "b", "b", "b", "c", "c"]})
    result = hierarchical_risk(table, ["key"], "hid")
    hb = 1 - (1 - 1 / 2) ** 2 * (1 - 1 / 3)
    hc = 1 - (1 - 1 / 3) ** 2
    np.testing.assert_allclose(result.by_household, [1.0, hb, hc])
    np.testing.assert_allclose(result.risk, [1.0, hb, hb, hb, hc, hc])


def test_bad_input():
    with pytest.raises(InputError, match="missing"):
        household_risk([0.1, 0.2], [1, None])
    with pytest.raises(InputError, match="probability"):
        household_risk([0.1, 1.5], [1, 1])
    with pytest.raises(InputError, match="2 individual risks for 3"):
        household_risk([0.1, 0.2], [1, 1, 2])
    with pytest.raises(InputError, match="not in the table"):
        hierarchical_risk(pd.DataFrame({"k": [1]}), ["k"], "hid")

"""The household role (issue 43.5): assigned like weights and strata, released renumbered in the
released order, and a household never straddles a stratum."""

import numpy as np
import pandas as pd
import pytest

from probanon.errors import InputError
from probanon.release import assign_roles, household_codes, make_release, renumbered_households


def test_household_is_a_role_and_cannot_be_a_key():
    roles = assign_roles(["a", "h", "s"], ["a"], household="h", strata=["s"])
    assert roles == {"a": "key", "h": "household", "s": "stratum"}
    assert assign_roles(["a", "h"], ["a"], drop=["h"], household="h")["h"] == "drop"
    with pytest.raises(InputError, match="household column 'h' cannot also be key"):
        assign_roles(["a", "h"], ["a", "h"], household="h")
    with pytest.raises(InputError, match="household column 'x' is not in the table"):
        assign_roles(["a", "h"], ["a"], keep_other=True, household="x")


def test_release_renumbers_households_keeping_members_together():
    rng = np.random.default_rng(3)
    ids = rng.choice(np.array([901, 17, 5550, 42, 7]), size=40)
    frame = pd.DataFrame({"a": np.arange(40), "h": ids})
    release = make_release(frame, assign_roles(frame.columns, ["a"], household="h"), random_state=5)
    out = release.data
    # the office's ids are gone: numbers 1..H in order of first appearance in the released order
    first_seen = list(dict.fromkeys(out["h"].tolist()))
    assert first_seen == list(range(1, len(set(ids)) + 1))
    # members kept together: released records of one original household share one number
    original = frame["h"].to_numpy()[release.link.sort_values("released_row")["original_row"].to_numpy() - 1]
    pairs = pd.DataFrame({"orig": original, "new": out["h"].to_numpy()}).drop_duplicates()
    assert len(pairs) == len(set(ids)) == pairs["new"].nunique()
    assert "renumbered" in release.actions["h"]


def test_missing_household_id_stays_missing_and_is_refused_where_households_are_used():
    assert renumbered_households(pd.Series(["b", None, "a", "b"])).tolist() == [1, pd.NA, 2, 1]
    with pytest.raises(InputError, match="household id 'hid' is missing"):
        household_codes(pd.Series(["b", None, "a"]), name="hid")


def test_a_household_never_straddles_a_stratum():
    ids = pd.Series(["x", "y", "x", "z"])
    np.testing.assert_array_equal(household_codes(ids, strata=[1, 1, 1, 2]), [0, 1, 0, 2])
    with pytest.raises(InputError, match="household 'x' .* members in different strata"):
        household_codes(ids, strata=["north", "north", "south", "south"])

"""Issue 13 point 9: bad input to the public API raises a ProbanonError (a ValueError), never a raw
KeyError, TypeError or IndexError."""

import numpy as np
import pandas as pd
import pytest

from probanon import ProbanonError
from probanon.diversity.distribution import distribution_from_frame
from probanon.metrics import information_loss, interval_disclosure, k_achieved, record_linkage, utility_report
from probanon.microagg import MDAV, PCL, function_from_json
from probanon.release import assign_roles
from probanon.setvalued import anonymize
from probanon.setvalued.data import load_records
from probanon.survey.anonymity import cell_failure, required_anonymity
from probanon.survey.spec import verify
from probanon.swapping import swap

X = np.random.default_rng(0).normal(size=(20, 2))
cases = {
 "fit str": lambda: MDAV(3).fit("abc"),
 "k str": lambda: MDAV("a").fit(X),
 "k None": lambda: MDAV(None).fit(X),
 "fit None": lambda: MDAV(3).fit(None),
 "fit dict": lambda: MDAV(3).fit({"a": 1}),
 "func json missing": lambda: function_from_json('{"probanon_function": 1}'),
 "func json list": lambda: function_from_json('[1,2]'),
 "func assign wrong width": lambda: MDAV(3).fit(X).function_.assign(np.ones((2, 3))),
 "func assign str": lambda: MDAV(3).fit(X).function_.assign("x"),
 "util mismatch": lambda: utility_report(X, X[:5]),
 "util None": lambda: utility_report(X, None),
 "linkage mismatch": lambda: record_linkage(X, X[:, :1]),
 "kach bad col": lambda: k_achieved(pd.DataFrame(X, columns=["a","b"]), ["zz"]),
 "IL mismatch": lambda: information_loss(X, X[:3]),
 "swap method": lambda: swap(X, 3, "nope"),
 "swap conf": lambda: swap(X, 3, "mdav-swap", [7]),
 "swap conf str": lambda: swap(X, 3, "mdav-swap", "a"),
 "verify {}": lambda: verify({}),
 "verify list": lambda: verify([1]),
 "verify None": lambda: verify(None),
 "req str": lambda: required_anonymity("a", 0.5, 0.1),
 "req None": lambda: required_anonymity(5, None, 0.1),
 "cellf": lambda: cell_failure("x", 2, 0.5),
 "km load 123": lambda: load_records(123),
 "km load None": lambda: load_records(None),
 "km anonymize bad": lambda: anonymize([["a","b"],["a"]], "x", 2, 0.9),
 "km anonymize m": lambda: anonymize([["a","b"],["a"]], 2, None, 0.9),
 "div frame": lambda: distribution_from_frame(pd.DataFrame({"a": [1]})),
 "div frame2": lambda: distribution_from_frame("x"),
 "roles": lambda: assign_roles(None, "a"),
 "roles keys int": lambda: assign_roles(["a"], 5),
 "interval": lambda: interval_disclosure(X, X[:2]),
 "PCL init": lambda: PCL(3, init=5).fit(X),
}


@pytest.mark.parametrize("name", list(cases))
def test_bad_input_raises_our_error(name):
    with pytest.raises(ProbanonError):
        cases[name]()

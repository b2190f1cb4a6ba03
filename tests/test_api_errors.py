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


# ------------------------------------------------- issue 39.7: every public function, every estimator

PACKAGES = ["metrics", "diversity", "reproduce", "survey", "microagg", "setvalued", "attacks", "swapping",
            "distributed"]


def _public_functions():
    import importlib
    import inspect

    for package in PACKAGES:
        module = importlib.import_module(f"probanon.{package}")
        for name in module.__all__:
            value = getattr(module, name)
            if inspect.isfunction(value):
                yield f"{package}.{name}", value


@pytest.mark.parametrize("name, func", list(_public_functions()), ids=lambda v: v if isinstance(v, str) else "")
def test_every_public_function_refuses_a_call_that_does_not_fit(name, func):
    import inspect

    required = [p for p in inspect.signature(func).parameters.values()
                if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    if required:
        with pytest.raises(ProbanonError, match="missing a required argument"):
            func()
    with pytest.raises(ProbanonError):  # an unknown option (or None arguments): our error
        func(**{p.name: None for p in required}, no_such_option=1)


def test_frequency_risk_without_keys():
    from probanon.metrics import frequency_risk

    with pytest.raises(ProbanonError, match="keys"):
        frequency_risk(pd.DataFrame({"a": [1, 2]}))


def test_fit_on_a_frame_with_text_refuses_with_the_list():
    frame = pd.DataFrame({"age": [30, 40, 50, 60], "fnlwgt": [1.0, 2.0, 3.0, 4.0], "sex": list("MFMF"),
                          "race": list("abab")})
    with pytest.raises(ProbanonError, match="not numbers: sex, race"):
        MDAV(2).fit(frame)
    MDAV(2).fit(frame[["age", "fnlwgt"]])  # the keys selected: fine


@pytest.mark.parametrize("make", [lambda: MDAV(3), lambda: PCL(3, random_state=0, kicks=10)])
def test_dataframe_in_dataframe_out(make):
    frame = pd.DataFrame(np.random.default_rng(1).normal(size=(30, 2)), columns=["income", "age"],
                         index=pd.RangeIndex(100, 130, name="person"))
    model = make()
    out = model.fit_transform(frame)
    assert isinstance(out, pd.DataFrame) and list(out.columns) == ["income", "age"]
    assert out.index.equals(frame.index) and out.index.name == "person"
    np.testing.assert_array_equal(out.to_numpy(), model.centroids_[model.labels_])
    pd.testing.assert_frame_equal(model.transform(frame), out)
    pd.testing.assert_frame_equal(model.function_.transform(frame), out)
    assert isinstance(model.fit_transform(frame.to_numpy()), np.ndarray)  # array in, array out
    assert isinstance(model.set_output(transform="default").fit_transform(frame), np.ndarray)
    assert isinstance(model.set_output(transform="pandas").fit_transform(frame.to_numpy()), pd.DataFrame)
    with pytest.raises(ProbanonError):
        model.set_output(transform="polars")


def test_dataframe_out_keeps_categorical_keys_as_text():
    frame = pd.DataFrame({"age": [20, 21, 22, 50, 51, 52], "sex": list("MMFFFF")}, index=list("abcdef"))
    out = MDAV(3, nominal=["sex"]).fit_transform(frame)
    assert list(out.index) == list("abcdef") and out["age"].dtype.kind == "f"
    assert set(out["sex"]) <= {"M", "F"}

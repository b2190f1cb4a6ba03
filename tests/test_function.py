"""Tests of the published microaggregation function (probanon.microagg.function).

Expected values come from an independent evaluation of the published rule written here
(Python loops over the JSON-level parameters), from hand computations in the comments,
or from the fitted labels the rule must reproduce; never from the code under test.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from probanon.data import Standardizer
from probanon.errors import InputError, NotFittedError, SpecificationError
from probanon.microagg import MDAV, PCL, VMDAV, IndividualRanking, MicroaggregationFunction, function_from_json
from probanon.microagg.rules import OrderedBalls

from helpers import DATA, FAST
from helpers import continuous_problem as continuous










# ---------------------------------------------------------------- strategies


@st.composite
def small_integers(draw, n_max=60, d_max=4, top=3):
    """Values 0..top: many ties and duplicate rows."""
    n = draw(st.integers(1, n_max))
    d = draw(st.integers(1, d_max))
    X = draw(arrays(np.float64, (n, d), elements=st.integers(0, top).map(float)))
    k = draw(st.integers(1, n))
    return X, k


def identical_twin_groups(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """For each row, the set of groups holding a row identical to it."""
    _, tid = np.unique(X, axis=0, return_inverse=True)
    tid = tid.ravel()
    return [set(labels[tid == tid[i]].tolist()) for i in range(len(X))]


# ---------------------------------------------------------------- independent evaluation


def evaluate_balls(f: MicroaggregationFunction, X) -> np.ndarray:
    """The ordered-balls rule evaluated from its published parameters, in Python:
    z = (x - mean) / scale; first g with (||z - r_g||^2, z) <= (rho_g, b_g)
    lexicographically, distances summed column by column; the last group by default."""
    mean = np.asarray(f.standardizer.mean_, dtype=np.float64)
    scale = np.asarray(f.standardizer.scale_, dtype=np.float64)
    Z = (np.asarray(X, dtype=np.float64) - mean) / scale
    refs = [list(map(float, r)) for r in np.asarray(f.rule.references)]
    rho = [float(v) for v in np.asarray(f.rule.radius2)]
    bnd = [tuple(map(float, b)) for b in np.asarray(f.rule.boundary)]
    out = []
    for z in Z.tolist():
        label = len(refs)
        for g, r in enumerate(refs):
            acc = 0.0
            for zc, rc in zip(z, r):
                t = zc - rc
                acc += t * t
            if (acc, tuple(z)) <= (rho[g], bnd[g]):
                label = g
                break
        out.append(label)
    return np.array(out, dtype=np.int64)


# ---------------------------------------------------------------- 1. reproduces labels_


@FAST
@given(continuous())
def test_classical_function_reproduces_labels(problem):
    X, k = problem
    m = MDAV(k).fit(X)
    np.testing.assert_array_equal(m.function_.assign(X), m.labels_)
    np.testing.assert_array_equal(evaluate_balls(m.function_, X), m.labels_)


@pytest.mark.parametrize("k", [3, 5, 10])
def test_classical_function_reproduces_labels_census(census, k):
    assert np.unique(census, axis=0).shape[0] == len(census)  # no duplicate rows
    m = MDAV(k).fit(census)
    np.testing.assert_array_equal(m.function_.assign(census), m.labels_)


@FAST
@given(small_integers())
def test_keep_duplicates_function_reproduces_labels(problem):
    X, k = problem
    m = MDAV(k, keep_duplicates=True).fit(X)
    np.testing.assert_array_equal(m.function_.assign(X), m.labels_)
    np.testing.assert_array_equal(evaluate_balls(m.function_, X), m.labels_)


@pytest.mark.parametrize("name", ["tarragona", "eia"])
@pytest.mark.parametrize("k", [3, 5, 10])
def test_keep_duplicates_function_reproduces_labels_casc(name, k, request):
    X = request.getfixturevalue(name)
    assert np.unique(X, axis=0).shape[0] < len(X)  # these files do have duplicate rows
    m = MDAV(k, keep_duplicates=True).fit(X)
    np.testing.assert_array_equal(m.function_.assign(X), m.labels_)


def test_classical_split_publishes_no_function(tarragona):
    # issue 39.1: classical MDAV splits tarragona's identical rows; no function of the keys can
    # reproduce that, so none is published, and transform says why
    m = MDAV(3, keep_duplicates=False).fit(tarragona)
    twins = identical_twin_groups(tarragona, m.labels_)
    assert max(len(t) for t in twins) > 1  # the split happened
    assert m.function_ is None and "identical records" in m.unpublished_
    with pytest.raises(NotFittedError, match="keep_duplicates=False"):
        m.transform(tarragona)


@FAST
@given(small_integers())
def test_classical_publishes_only_without_split_duplicates(problem):
    X, k = problem
    m = MDAV(k, keep_duplicates=False).fit(X)
    split = max(len(t) for t in identical_twin_groups(X, m.labels_)) > 1
    assert (m.function_ is None) == split
    if not split:
        np.testing.assert_array_equal(m.function_.assign(X), m.labels_)


# ---------------------------------------------------------------- 2. new records


def test_tie_rule_by_hand():
    # Two balls in raw units (mean 0, scale 1): ball 0 centre (0,0), rho 25, boundary (3,4);
    # ball 1 centre (10,0), rho 100, boundary (20,0); group 2 is the default.
    f = MicroaggregationFunction(
        standardizer=Standardizer(mean_=np.zeros(2), scale_=np.ones(2)),
        centroids=np.array([[0.0, 0.0], [10.0, 0.0], [50.0, 50.0]]),
        sizes=np.array([3, 3, 4]),
        rule=OrderedBalls(
            references=np.array([[0.0, 0.0], [10.0, 0.0]]),
            radius2=np.array([25.0, 100.0]),
            boundary=np.array([[3.0, 4.0], [20.0, 0.0]]),
        ),
    )
    cases = {
        (3, 4): 0,  # the boundary itself
        (3, -4): 0,  # d2 = 25, (3,-4) < (3,4)
        (-5, 0): 0,  # d2 = 25, -5 < 3
        (0, 5): 0,  # d2 = 25, 0 < 3
        (4, 3): 1,  # d2 = 25 but (4,3) > (3,4): out of ball 0; d2 to (10,0) = 45 < 100
        (5, 0): 1,  # d2 = 25, 5 > 3: out; d2 to (10,0) = 25 < 100
        (0, 0): 0,  # also on ball 1's sphere, but ball 0 comes first
        (20, 0): 1,  # ball 1's boundary
        (0, 10): 2,  # d2 = 100 to ball 0; to ball 1 d2 = 200: default
        (10, -10): 1,  # d2 = 100 to (10,0), (10,-10) < (20,0)
        (10, 10): 1,  # d2 = 200 to ball 0; d2 = 100 to ball 1 and 10 < 20: inside ball 1
        (1e6, -1e6): 2,
    }
    X = np.array(list(cases), dtype=float)
    expected = np.array(list(cases.values()))
    np.testing.assert_array_equal(f.assign(X), expected)
    np.testing.assert_array_equal(evaluate_balls(f, X), expected)
    np.testing.assert_array_equal(f.transform(X), f.centroids[expected])


@FAST
@given(continuous(), st.booleans(), st.integers(0, 2**32 - 1))
def test_new_records_follow_the_rule(problem, keep, seed):
    X, k = problem
    f = MDAV(k, keep_duplicates=keep).fit(X).function_
    assume(f is not None)  # classical MDAV that split identical records publishes none
    rng = np.random.default_rng(seed)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    new = np.vstack([
        lo - 0.5 * span + 2 * span * rng.random((40, X.shape[1])),  # around the data
        X[rng.integers(0, len(X), 5)] + 1e-9 * span,  # just next to fitted records
        np.full((1, X.shape[1]), 1e9),  # far from everything
        np.full((1, X.shape[1]), -1e9),
        lo - 1e6 * span,
    ])
    got = f.assign(new)
    np.testing.assert_array_equal(got, evaluate_balls(f, new))
    assert ((got >= 0) & (got < len(f.sizes))).all()


@FAST
@given(small_integers(top=4), st.booleans())
def test_new_integer_records_follow_the_rule(problem, keep):
    # the whole integer grid: many records exactly on a sphere or a boundary tuple
    X, k = problem
    f = MDAV(k, keep_duplicates=keep).fit(X).function_
    assume(f is not None)  # classical MDAV that split identical records publishes none
    d = X.shape[1]
    grid = np.stack(np.meshgrid(*[np.arange(-1.0, 6.0)] * min(d, 3), indexing="ij"), -1).reshape(-1, min(d, 3))
    if d > 3:
        grid = np.hstack([grid, np.full((len(grid), d - 3), 2.0)])
    np.testing.assert_array_equal(f.assign(grid), evaluate_balls(f, grid))


def test_far_record_census(census):
    f = MDAV(5).fit(census).function_
    far = np.vstack([census.max(axis=0) * 1e3, census.min(axis=0) - 1e9, census.mean(axis=0)])
    got = f.assign(far)
    np.testing.assert_array_equal(got, evaluate_balls(f, far))


def test_wrong_width_records():
    f = MDAV(2).fit(np.arange(12.0).reshape(6, 2)).function_
    with pytest.raises(InputError):
        f.assign(np.zeros((3, 3)))
    with pytest.raises(InputError):
        f.assign(np.array([[np.nan, 1.0]]))


# ---------------------------------------------------------------- 3. JSON round trip


def assert_same_function(a: MicroaggregationFunction, b: MicroaggregationFunction, X):
    assert a.kind == b.kind
    np.testing.assert_array_equal(a.assign(X), b.assign(X))
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    np.testing.assert_array_equal(a.standardizer.mean_, b.standardizer.mean_)
    np.testing.assert_array_equal(a.standardizer.scale_, b.standardizer.scale_)
    if a.kind == "intervals":
        for ca, cb in zip(a.centroids, b.centroids):
            np.testing.assert_array_equal(ca, cb)
        for sa, sb in zip(a.sizes, b.sizes):
            np.testing.assert_array_equal(sa, sb)
        for ua, ub in zip(a.rule.upper, b.rule.upper):
            np.testing.assert_array_equal(ua, ub)
    else:
        np.testing.assert_array_equal(a.centroids, b.centroids)
        np.testing.assert_array_equal(a.sizes, b.sizes)
        assert set(vars(a.rule)) == set(vars(b.rule))
        for key in vars(a.rule):
            np.testing.assert_array_equal(getattr(a.rule, key), getattr(b.rule, key))


@FAST
@given(continuous(), st.booleans())
def test_json_round_trip_mdav(problem, keep):
    X, k = problem
    f = MDAV(k, keep_duplicates=keep).fit(X).function_
    assume(f is not None)  # classical MDAV that split identical records publishes none
    if len(f.sizes) == 1:
        return  # a single cell has no ball: see test_json_round_trip_single_group
    g = function_from_json(f.to_json())
    new = X + np.random.default_rng(0).normal(size=X.shape) * X.std(axis=0)
    assert_same_function(f, g, np.vstack([X, new]))


def test_json_round_trip_single_group():
    X = np.arange(10.0).reshape(5, 2)  # n = 5 < 2k = 6: one group, zero balls
    f = MDAV(3).fit(X).function_
    assert len(f.sizes) == 1 and f.rule.references.shape == (0, 2)
    assert_same_function(f, function_from_json(f.to_json()), X)


def test_json_round_trip_file(tmp_path, census):
    frame = pd.read_csv(DATA / "census.csv")
    m = MDAV(5).fit(frame)
    path = tmp_path / "mdav.json"
    text = m.function_.to_json(path=path, indent=2)
    assert json.loads(path.read_text()) == json.loads(text)
    for source in (path, str(path)):
        g = function_from_json(source)
        assert_same_function(m.function_, g, census)
        assert g.columns == list(frame.columns)
        np.testing.assert_array_equal(g.assign(census), m.labels_)
    g = MicroaggregationFunction.from_json(str(path))
    assert_same_function(m.function_, g, census)


def test_json_round_trip_vmdav_and_ranking(tarragona):
    new = tarragona + np.random.default_rng(1).normal(size=tarragona.shape) * tarragona.std(axis=0)
    both = np.vstack([tarragona, new])
    for est in (VMDAV(4), IndividualRanking(4), MDAV(4)):
        f = est.fit(tarragona).function_
        assert_same_function(f, function_from_json(f.to_json()), both)
    # keep_ties=False on data without ties
    X = np.random.default_rng(2).normal(size=(50, 3))
    f = IndividualRanking(4, keep_ties=False).fit(X).function_
    assert_same_function(f, function_from_json(f.to_json()), np.vstack([X, 2 * X]))


def test_ranking_split_ties_publishes_no_function():
    X = np.array([[1.0], [1.0], [1.0], [1.0], [2.0], [3.0]])  # k = 2: groups {1,1} {1,1} {2,3}
    m = IndividualRanking(2, keep_ties=False).fit(X)
    assert m.function_ is None and "keep_ties=False" in m.unpublished_
    f = IndividualRanking(2).fit(X).function_  # ties kept: {1,1,1,1} {2,3}
    assert_same_function(f, function_from_json(f.to_json()), X)
    np.testing.assert_array_equal(f.assign(X)[:, 0], [0, 0, 0, 0, 1, 1])


@FAST
@given(small_integers(top=5))
def test_ranking_function_reproduces_labels(problem):
    X, k = problem
    m = IndividualRanking(k).fit(X)  # keep_ties=True by default
    assert m.labels_.shape == X.shape
    got = m.function_.assign(X)
    assert got.shape == X.shape
    np.testing.assert_array_equal(got, m.labels_)
    g = function_from_json(m.function_.to_json())
    np.testing.assert_array_equal(g.assign(X), m.labels_)
    # ties are never split: equal values in a column share a group
    for j in range(X.shape[1]):
        for v in np.unique(X[:, j]):
            assert np.unique(m.labels_[X[:, j] == v, j]).size == 1


def test_ranking_function_reproduces_labels_casc(eia):
    m = IndividualRanking(5).fit(eia)
    np.testing.assert_array_equal(m.function_.assign(eia), m.labels_)


# ---------------------------------------------------------------- 4. malformed JSON


@pytest.fixture(scope="module")
def good():
    X = np.random.default_rng(5).normal(size=(30, 3))
    return {
        "balls": json.loads(MDAV(4).fit(X).function_.to_json()),
        "power": json.loads(VMDAV(4).fit(X).function_.to_json()),
        "intervals": json.loads(IndividualRanking(4).fit(X).function_.to_json()),
    }


def tamper(d: dict, path: tuple, value=None, delete=False) -> str:
    d = json.loads(json.dumps(d))
    node = d
    for key in path[:-1]:
        node = node[key]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return json.dumps(d)  # allow_nan=True: NaN is written as the literal NaN


def expect_spec_error(text):
    with pytest.raises(SpecificationError) as info:
        function_from_json(text)
    message = str(info.value)
    assert message and "\n" not in message, repr(message)
    assert info.value.__cause__ is None or info.value.__suppress_context__
    return message


def test_not_json(tmp_path):
    expect_spec_error("{ this is not json")
    expect_spec_error('{"probanon_function": 1,')
    expect_spec_error(str(tmp_path / "does-not-exist.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2, 3]")
    expect_spec_error(bad)
    expect_spec_error("[]")


@pytest.mark.parametrize("kind", ["balls", "power", "intervals"])
@pytest.mark.parametrize(
    "path",
    [("probanon_function",), ("kind",), ("standardization",), ("standardization", "mean"),
     ("standardization", "scale"), ("centroids",), ("sizes",), ("rule",)],
)
def test_missing_key(good, kind, path):
    expect_spec_error(tamper(good[kind], path, delete=True))


@pytest.mark.parametrize("path", [("rule", "references"), ("rule", "radius2"), ("rule", "boundary")])
def test_missing_ball_key(good, path):
    expect_spec_error(tamper(good["balls"], path, delete=True))


@pytest.mark.parametrize("path", [("rule", "centers"), ("rule", "offsets")])
def test_missing_power_key(good, path):
    expect_spec_error(tamper(good["power"], path, delete=True))


def test_missing_interval_key(good):
    expect_spec_error(tamper(good["intervals"], ("rule", "upper"), delete=True))


@pytest.mark.parametrize("version", [0, 2, "1", None, 1.5])
def test_wrong_version(good, version):
    expect_spec_error(tamper(good["balls"], ("probanon_function",), version))


@pytest.mark.parametrize("kind", ["balls", "ordered_balls", "", None, 3, "intervalz"])
def test_unknown_kind(good, kind):
    expect_spec_error(tamper(good["balls"], ("kind",), kind))


def test_wrong_shapes(good):
    b = good["balls"]
    d = len(b["standardization"]["mean"])
    expect_spec_error(tamper(b, ("standardization", "scale"), [1.0] * (d + 1)))
    expect_spec_error(tamper(b, ("standardization", "mean"), []))
    expect_spec_error(tamper(b, ("centroids",), [row[:-1] for row in b["centroids"]]))
    expect_spec_error(tamper(b, ("centroids",), b["centroids"][0]))  # 1-D
    expect_spec_error(tamper(b, ("rule", "references"), [row + [0.0] for row in b["rule"]["references"]]))
    expect_spec_error(tamper(b, ("rule", "boundary"), [row[:-1] for row in b["rule"]["boundary"]]))
    expect_spec_error(tamper(b, ("rule", "radius2"), [b["rule"]["radius2"]]))  # 2-D
    expect_spec_error(tamper(b, ("rule", "references"), "abc"))
    expect_spec_error(tamper(b, ("rule", "references"), [[1.0, 2.0], [3.0]]))  # ragged
    expect_spec_error(tamper(b, ("columns",), ["a"]))
    p = good["power"]
    expect_spec_error(tamper(p, ("rule", "offsets"), p["rule"]["offsets"][:-1]))
    expect_spec_error(tamper(p, ("rule", "centers"), p["rule"]["centers"][:-1]))
    i = good["intervals"]
    expect_spec_error(tamper(i, ("rule", "upper"), i["rule"]["upper"][:-1]))
    expect_spec_error(tamper(i, ("centroids", 0), i["centroids"][0][:-1]))
    expect_spec_error(tamper(i, ("rule", "upper", 0), i["rule"]["upper"][0][::-1]))  # not increasing


def test_nan(good):
    b = good["balls"]
    c = [row[:] for row in b["centroids"]]
    c[0][0] = float("nan")
    expect_spec_error(tamper(b, ("centroids",), c))
    r = list(b["rule"]["radius2"])
    r[0] = float("nan")
    expect_spec_error(tamper(b, ("rule", "radius2"), r))
    expect_spec_error(tamper(b, ("standardization", "mean"), [float("nan")] * len(b["standardization"]["mean"])))
    expect_spec_error(tamper(b, ("standardization", "scale"), [float("nan")] * len(b["standardization"]["mean"])))


@pytest.mark.parametrize("bad", [-1.0, 0.0])
def test_non_positive_scale(good, bad):
    s = list(good["balls"]["standardization"]["scale"])
    s[-1] = bad
    expect_spec_error(tamper(good["balls"], ("standardization", "scale"), s))


def test_ball_count_inconsistent_with_sizes(good):
    b = good["balls"]
    expect_spec_error(tamper(b, ("sizes",), b["sizes"][:-1]))  # fewer sizes than cells
    expect_spec_error(tamper(b, ("sizes",), b["sizes"] + [4]))
    # one ball too few (centroids and sizes consistent among themselves)
    t = json.loads(json.dumps(b))
    for key in ("references", "radius2", "boundary"):
        t["rule"][key] = t["rule"][key][:-1]
    expect_spec_error(json.dumps(t))
    t = json.loads(json.dumps(b))
    t["centroids"] = t["centroids"][:-1]
    t["sizes"] = t["sizes"][:-1]
    expect_spec_error(json.dumps(t))
    # one ball per cell (the last group must have none)
    t = json.loads(json.dumps(b))
    for key in ("references", "boundary"):
        t["rule"][key] = t["rule"][key] + [t["rule"][key][-1]]
    t["rule"]["radius2"] = t["rule"]["radius2"] + [1.0]
    expect_spec_error(json.dumps(t))
    expect_spec_error(tamper(b, ("sizes",), "3,3,3"))


@pytest.mark.parametrize("kind", [["ordered-balls"], {"a": 1}])
def test_unhashable_kind(good, kind):
    expect_spec_error(tamper(good["balls"], ("kind",), kind))


@pytest.mark.parametrize("entry", ["a", None, [1, 2]])
def test_non_numeric_sizes(good, entry):
    sizes = list(good["balls"]["sizes"])
    sizes[0] = entry
    expect_spec_error(tamper(good["balls"], ("sizes",), sizes))


@pytest.mark.parametrize("where", ["mean", "scale", "centroids", "references"])
def test_infinity(good, where):
    b = good["balls"]
    d = len(b["standardization"]["mean"])
    if where in ("mean", "scale"):
        text = tamper(b, ("standardization", where), [float("inf")] * d)
    elif where == "centroids":
        text = tamper(b, ("centroids", 0, 0), float("inf"))
    else:
        text = tamper(b, ("rule", "references", 0, 0), float("inf"))
    assert "Infinity" in text
    expect_spec_error(text)


def test_tampered_but_valid_json_still_loads(good):
    # control: the untouched documents load
    for d in good.values():
        function_from_json(json.dumps(d))


# ---------------------------------------------------------------- 5. estimator transform


@FAST
@given(continuous(), st.booleans())
def test_transform_equals_function_transform(problem, keep):
    X, k = problem
    m = MDAV(k, keep_duplicates=keep)
    Y = m.fit_transform(X)
    new = X[::-1] * 1.1 + 0.3
    np.testing.assert_array_equal(m.transform(new), m.function_.transform(new))
    # no duplicate rows: the fitted release is the function applied to the same data
    np.testing.assert_array_equal(Y, m.transform(X))
    np.testing.assert_array_equal(Y, m.centroids_[m.labels_])


@FAST
@given(small_integers())
def test_keep_duplicates_fit_transform_equals_transform(problem):
    X, k = problem
    m = MDAV(k, keep_duplicates=True)
    np.testing.assert_array_equal(m.fit_transform(X), m.transform(X))


def test_transform_dataframe_by_column_name(census):
    frame = pd.read_csv(DATA / "census.csv")
    m = MDAV(3).fit(frame)
    shuffled = frame[frame.columns[::-1]]
    np.testing.assert_array_equal(m.transform(shuffled), m.fit_transform(frame))
    np.testing.assert_array_equal(m.transform(census), m.function_.transform(census))


def test_ranking_and_vmdav_transform(tarragona):
    for est in (IndividualRanking(3), VMDAV(3)):
        est.fit(tarragona)
        np.testing.assert_array_equal(est.transform(tarragona), est.function_.transform(tarragona))
    ir = IndividualRanking(3)
    np.testing.assert_array_equal(ir.fit_transform(tarragona), ir.transform(tarragona))


# ------------------------------------------------------- DataFrames by column name (issue 13.5)


def _frame_and_function(estimator, n=300):
    """A 3-column frame of distinct continuous records, and ``estimator`` fitted on it."""
    rng = np.random.default_rng(13)
    frame = pd.DataFrame(rng.normal(size=(n, 3)) * [1.0, 10.0, 100.0] + [0.0, 50.0, -20.0], columns=["a", "b", "c"])
    return frame, estimator.fit(frame)


ESTIMATORS = [lambda: MDAV(5, keep_duplicates=True), lambda: VMDAV(5), lambda: PCL(5, kicks=0),
              lambda: IndividualRanking(5)]


@pytest.mark.parametrize("make", ESTIMATORS)
def test_function_reads_a_frame_by_column_name(make):
    frame, est = _frame_and_function(make())
    f = est.function_
    assert est.feature_names_in_ == ["a", "b", "c"] and f.columns == ["a", "b", "c"]
    cells = f.assign(frame.to_numpy())  # positional, in the fitted order
    other = frame[["c", "a", "b"]].assign(extra=np.arange(len(frame)) * 1e6, note="x")
    # the same records with shuffled columns and two extra ones get the same cells ...
    np.testing.assert_array_equal(f.assign(other), cells)
    np.testing.assert_array_equal(f.transform(other), f.transform(frame.to_numpy()))
    np.testing.assert_array_equal(est.transform(other), est.transform(frame))
    # ... which positional reading of the shuffled values would not give
    assert not np.array_equal(f.assign(other[["c", "a", "b"]].to_numpy()), cells)
    # a loaded function keeps its names and reads by them too
    np.testing.assert_array_equal(function_from_json(f.to_json()).assign(other), cells)


@pytest.mark.parametrize("make", ESTIMATORS)
def test_a_series_is_one_record(make):
    frame, est = _frame_and_function(make())
    f = est.function_
    cells = f.assign(frame.to_numpy())
    for i in (0, 7, 123):
        record = frame.iloc[i][["b", "c", "a"]]  # index gives the names, in any order
        np.testing.assert_array_equal(f.assign(record), cells[i:i + 1])
        np.testing.assert_array_equal(est.transform(record), f.transform(frame.to_numpy()[i:i + 1]))
    row = pd.Series({"c": 1.0, "z": "text", "a": 0.5, "b": 50.0})  # an extra text field is ignored
    np.testing.assert_array_equal(f.assign(row), f.assign(np.array([[0.5, 50.0, 1.0]])))


def test_a_missing_or_repeated_column_is_named():
    frame, est = _frame_and_function(MDAV(5))
    f = est.function_
    with pytest.raises(InputError, match="lack the function's column 'b'"):
        f.assign(frame[["a", "c"]].assign(d=1.0))
    with pytest.raises(InputError, match="lack the function's column 'c'"):
        est.transform(frame[["a", "b"]])
    with pytest.raises(InputError, match="lack the function's column 'a'"):
        f.assign(pd.Series({"b": 1.0, "c": 2.0}))
    twice = pd.concat([frame, frame[["a"]]], axis=1)
    with pytest.raises(InputError, match="2 copies of the function's column 'a'"):
        f.assign(twice)
    with pytest.raises(InputError, match="not numbers"):
        f.assign(pd.Series({"a": "x", "b": 1.0, "c": 2.0}))


def test_a_function_without_names_reads_frames_by_position():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 3))
    est = MDAV(5, keep_duplicates=True).fit(X)
    assert est.function_.columns is None and not hasattr(est, "feature_names_in_")
    frame = pd.DataFrame(X, columns=["z", "y", "x"])  # names unknown to the function: position
    np.testing.assert_array_equal(est.function_.assign(frame), est.labels_)
    np.testing.assert_array_equal(est.function_.assign(pd.Series(X[9], index=["p", "q", "r"])), est.labels_[9:10])
    with pytest.raises(InputError, match="records have 4 columns, the function expects 3"):
        est.function_.assign(frame.assign(w=1.0))
    # a refit on an array forgets the names of an earlier fit on a frame
    est.fit(frame)
    assert est.function_.columns == ["z", "y", "x"]
    est.fit(X)
    assert est.function_.columns is None and not hasattr(est, "feature_names_in_")

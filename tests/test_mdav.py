"""Tests of classical MDAV (probanon.microagg.mdav).

Every expected value comes from the published table in ../shared/data/README.md, from a
formula, or from an independent computation written here (a brute-force MDAV on Python
lists, group means with numpy), never from the code under test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from probanon.errors import InputError, ParameterError
from probanon.microagg.mdav import MDAV, mdav_partition

from helpers import FAST, continuous_problem


# ---------------------------------------------------------------- data and helpers










def zscore(X: np.ndarray) -> np.ndarray:
    """Population z-scores, written here (constant columns only centred)."""
    mean = X.mean(axis=0)
    sd = X.std(axis=0)
    return (X - mean) / np.where(sd > 0, sd, 1.0)


def group_means_loop(X: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """Mean of each group's rows, one group at a time (independent of the library)."""
    return np.array([X[labels == g].mean(axis=0) for g in range(labels.max() + 1)])


def il_percent(X: np.ndarray, labels: np.ndarray) -> float:
    """IL = 100 * SSE / SST on z-scores (ddof = 0): SSE of the records vs. their group
    means, SST of the records vs. the column means."""
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    means = group_means_loop(Z, labels)
    sse = ((Z - means[labels]) ** 2).sum()
    sst = ((Z - Z.mean(axis=0)) ** 2).sum()
    return 100.0 * sse / sst


def il_of_release(X: np.ndarray, Y: np.ndarray) -> float:
    """Same IL formula, from a released table Y (z-scored with X's mean and sd)."""
    mean, sd = X.mean(axis=0), X.std(axis=0)
    Z, W = (X - mean) / sd, (Y - mean) / sd
    return 100.0 * ((Z - W) ** 2).sum() / ((Z - Z.mean(axis=0)) ** 2).sum()


# ---------------------------------------------------------------- brute-force MDAV


def brute_mdav(Z, k: int, keep_duplicates: bool = False):
    """MDAV on the rows of Z following the module docstring literally, on Python lists.

    O(n^2 d) with a full re-sort per group. Squared distances are summed column by column
    in float64 and the centroid is a running sum (rows added in row order, each group's
    members subtracted in key order), so results are bit-comparable with the library.
    Returns (labels, references, radius2, boundary) like ``mdav_partition``.
    """
    rows = [list(map(float, r)) for r in np.asarray(Z, dtype=np.float64)]
    n, d = len(rows), len(rows[0])
    sums = [0.0] * d
    for r in rows:
        for j in range(d):
            sums[j] += r[j]

    def sqdist(p, q):
        acc = 0.0
        for j in range(d):
            t = p[j] - q[j]
            acc += t * t
        return acc

    alive = list(range(n))  # kept in row order
    labels = [-1] * n
    refs, rad2, bnds = [], [], []

    def farthest(cands, point):
        best, arg = -1.0, -1
        for i in cands:  # row order; strict '>' keeps the first row on ties
            v = sqdist(rows[i], point)
            if v > best:
                best, arg = v, i
        return arg

    def nearest(point):
        keyed = sorted(alive, key=lambda i: (sqdist(rows[i], point), *rows[i], i))
        chosen = keyed[:k]
        if keep_duplicates:
            b = chosen[-1]
            chosen += [i for i in keyed[k:] if rows[i] == rows[b]]
        return chosen, sqdist(rows[chosen[k - 1]], point)

    def close_last():
        for i in alive:
            labels[i] = len(refs)
        refs.append(-1), rad2.append(np.inf), bnds.append(-1)
        alive.clear()

    def take(ref):
        """Group of ref and its nearest; False if it had to absorb the rest."""
        nonlocal alive
        members, radius = nearest(rows[ref])
        if len(alive) - len(members) < k:
            close_last()
            return False
        for i in members:
            labels[i] = len(refs)
            for j in range(d):
                sums[j] -= rows[i][j]
        refs.append(ref), rad2.append(radius), bnds.append(members[k - 1])
        gone = set(members)
        alive = [i for i in alive if i not in gone]
        return True

    while len(alive) >= 2 * k:
        two = len(alive) >= 3 * k
        centroid = [s / len(alive) for s in sums]
        r = farthest(alive, centroid)
        r_group, _ = nearest(rows[r])
        outside = [i for i in alive if i not in set(r_group)]
        s = farthest(outside, rows[r]) if (two and outside) else -1
        if not take(r) or not two:
            break
        if not take(s):
            break
    if alive:
        close_last()
    return np.array(labels), np.array(refs), np.array(rad2), np.array(bnds)


def test_brute_force_on_a_hand_example():
    # 1-D, k = 2: 0 1 2 10 11 12. Centroid 6; farthest 0 (|0-6| = |12-6|, first row wins).
    # Group {0, 1}. s = farthest from 0 outside: 12 -> {12, 11}. Left 2, 10 (n = 2 < 2k).
    lab, ref, r2, bnd = brute_mdav(np.array([[0.0], [1], [2], [10], [11], [12]]), 2)
    assert lab.tolist() == [0, 0, 2, 2, 1, 1]
    assert ref.tolist() == [0, 5, -1] and bnd.tolist() == [1, 4, -1]
    assert r2.tolist() == [1.0, 1.0, np.inf]


# ---------------------------------------------------------------- strategies


@st.composite
def small_problem(draw, kinds=("int", "float"), n_max=60, d_max=4):
    n = draw(st.integers(1, n_max))
    d = draw(st.integers(1, d_max))
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
        elements = st.integers(0, 3).map(float)
    else:
        elements = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    X = draw(arrays(np.float64, (n, d), elements=elements))
    k = draw(st.integers(1, n))
    return X, k


# ---------------------------------------------------------------- 1. published IL


PUBLISHED_IL = {
    "census": {3: 5.69, 5: 9.09, 10: 14.16},
    "tarragona": {3: 16.93, 5: 22.46, 10: 33.19},
    "eia": {3: 0.59, 5: 1.59, 10: 3.27},
}


@pytest.mark.parametrize("name", ["census", "tarragona", "eia"])
@pytest.mark.parametrize("k", [3, 5, 10])
def test_published_information_loss(name, k, request):
    X = request.getfixturevalue(name)
    assert X.shape == {"census": (1080, 13), "tarragona": (834, 13), "eia": (4092, 10)}[name]
    m = MDAV(k, keep_duplicates=False)  # classical MDAV: the published values
    Y = m.fit_transform(X)
    assert round(il_of_release(X, Y), 2) == PUBLISHED_IL[name][k]
    assert round(il_percent(X, m.labels_), 2) == PUBLISHED_IL[name][k]


# ---------------------------------------------------------------- 2. numba == numpy


def assert_same_partition(a, b):
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(a.references, b.references)
    np.testing.assert_array_equal(a.radius2, b.radius2)
    np.testing.assert_array_equal(a.boundary, b.boundary)


def both_engines(Z, k, keep):
    fast = mdav_partition(Z, k, keep, engine="numba")
    ref = mdav_partition(Z, k, keep, engine="numpy")
    assert_same_partition(fast, ref)
    return fast


@FAST
@given(small_problem(), st.booleans())
def test_engines_agree_random(problem, keep):
    X, k = problem
    both_engines(X, k, keep)  # raw values
    both_engines(zscore(X), k, keep)  # standardised


@pytest.mark.parametrize("keep", [False, True])
def test_engines_agree_gaussian_and_ties(keep):
    rng = np.random.default_rng(1)
    both_engines(rng.normal(size=(500, 3)), 4, keep)
    # many ties and duplicates: 3 columns of values 0..2 (27 tuples) for 400 rows
    T = rng.integers(0, 3, size=(400, 3)).astype(float)
    for k in (1, 5, 30):
        both_engines(T, k, keep)
    for k in (2, 7):
        both_engines(zscore(T), k, keep)
    # thousands of exact ties: more candidates than the kernel's per-chunk lists hold
    both_engines(rng.integers(0, 3, size=(5000, 2)).astype(float), 7, keep)
    # large groups (the kernel keeps the k + 1 smallest in a heap and sorts the candidates):
    # more candidates than a chunk list, distance ties broken by coordinates and row
    both_engines(rng.normal(size=(30000, 2)), 4000, keep)
    both_engines(rng.integers(0, 6, size=(6000, 2)).astype(float), 700, keep)


@pytest.mark.parametrize("name", ["census", "tarragona", "eia"])
@pytest.mark.parametrize("k", [3, 5, 10])
def test_engines_agree_casc(name, k, request):
    Z = zscore(request.getfixturevalue(name))
    both_engines(Z, k, keep=False)
    if k == 3:
        both_engines(Z, k, keep=True)


_HUGE = """
import json, sys
import numpy as np
from probanon.errors import ProbanonError
from probanon.microagg.mdav import mdav_partition
Z = np.arange(6.0).reshape(-1, 1) * float(sys.argv[1])
try:
    out = mdav_partition(Z, 2, engine="numba").labels.tolist()
except ProbanonError as exc:
    out = type(exc).__name__
print(json.dumps(out))
"""


def test_engines_agree_on_huge_values():
    # run in a subprocess: the kernel can crash the interpreter on such input
    expected = [0, 0, 2, 2, 1, 1]  # 1-D, k = 2: {0,1} (r = 0), {5,4} (s = 5), rest {2,3}
    for scale in (1e22, 1e30):
        res = subprocess.run(
            [sys.executable, "-c", _HUGE, repr(scale)],
            capture_output=True, text=True, timeout=120,
            cwd=Path(__file__).resolve().parents[1],
            env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
        )
        assert res.returncode == 0, f"crashed ({res.returncode})"
        got = json.loads(res.stdout)
        assert got == expected or got == "ParameterError" or got == "InputError", got


# ---------------------------------------------------------------- 3. brute force


def assert_matches_brute(Z, k, keep):
    part = mdav_partition(Z, k, keep)
    lab, ref, r2, bnd = brute_mdav(Z, k, keep)
    np.testing.assert_array_equal(part.labels, lab)
    np.testing.assert_array_equal(part.references, ref)
    np.testing.assert_array_equal(part.radius2, r2)
    np.testing.assert_array_equal(part.boundary, bnd)


@FAST
@given(continuous_problem())
def test_brute_force_matches_estimator_continuous(problem):
    X, k = problem
    m = MDAV(k).fit(X)
    # Brute force on the estimator's own standardised data: an exact tie in real arithmetic
    # (e.g. the last two records with k = 1 are equidistant from their midpoint) is decided
    # by the last bit, so a z-scoring that differs by one ulp may legitimately flip it.
    lab, *_ = brute_mdav(np.ascontiguousarray(m.standardizer_.transform(X)), k)
    np.testing.assert_array_equal(m.labels_, lab)
    assert_matches_brute(zscore(X), k, keep=False)


@FAST
@given(small_problem(kinds=("int",)), st.booleans())
def test_brute_force_matches_partition_with_ties(problem, keep):
    # Small integers passed unstandardised: the sums are exact, so even the tie rules
    # are compared bit for bit.
    X, k = problem
    assert_matches_brute(X, k, keep)


def test_brute_force_matches_on_larger_data():
    rng = np.random.default_rng(7)
    assert_matches_brute(rng.normal(size=(300, 3)), 3, keep=False)
    T = rng.integers(0, 4, size=(300, 2)).astype(float)
    assert_matches_brute(T, 4, keep=False)
    assert_matches_brute(T, 4, keep=True)


# ---------------------------------------------------------------- 4. properties


def check_every_row_labelled(labels, n):
    assert labels.shape == (n,)
    assert labels.min() == 0
    assert (np.bincount(labels) > 0).all()  # labels are 0..G-1 without gaps


@FAST
@given(small_problem())
def test_classical_sizes(problem):
    X, k = problem
    m = MDAV(k, keep_duplicates=False).fit(X)
    check_every_row_labelled(m.labels_, len(X))
    sizes = np.bincount(m.labels_)
    assert (sizes[:-1] == k).all()
    assert k <= sizes[-1] <= 2 * k - 1
    np.testing.assert_array_equal(m.sizes_, sizes)


@FAST
@given(small_problem(kinds=("int",)))
def test_keep_duplicates_groups(problem):
    X, k = problem
    m = MDAV(k, keep_duplicates=True).fit(X)
    check_every_row_labelled(m.labels_, len(X))
    assert (np.bincount(m.labels_) >= k).all()
    _, tuple_id = np.unique(X, axis=0, return_inverse=True)
    tuple_id = tuple_id.ravel()
    for t in np.unique(tuple_id):
        assert np.unique(m.labels_[tuple_id == t]).size == 1


@FAST
@given(small_problem(), st.booleans())
def test_fit_transform_replaces_by_group_means(problem, keep):
    X, k = problem
    m = MDAV(k, keep_duplicates=keep)
    Y = m.fit_transform(X)
    assert Y.shape == X.shape
    means = group_means_loop(X, m.labels_)
    tol = 1e-12 * max(1.0, np.abs(X).max())
    for g in range(means.shape[0]):
        rows = Y[m.labels_ == g]
        assert (rows == rows[0]).all()  # one vector per group
        np.testing.assert_allclose(rows[0], means[g], rtol=1e-12, atol=tol)
    # centroids_ in original units, and the release is the multiset of centroids
    np.testing.assert_allclose(m.centroids_, means, rtol=1e-12, atol=tol)
    expected = np.repeat(m.centroids_, np.bincount(m.labels_), axis=0)
    np.testing.assert_array_equal(
        Y[np.lexsort(Y.T[::-1])], expected[np.lexsort(expected.T[::-1])]
    )


def test_centroids_in_original_units(census):
    m = MDAV(5).fit(census)
    np.testing.assert_allclose(m.centroids_, group_means_loop(census, m.labels_), rtol=1e-12)
    # column means are preserved by microaggregation (formula: sum of group sums)
    np.testing.assert_allclose(m.fit_transform(census).mean(axis=0), census.mean(axis=0), rtol=1e-12)


# ---------------------------------------------------------------- 5. edge cases and errors


@FAST
@given(continuous_problem(n_max=40))
def test_k_equal_n_and_k_one(problem):
    X, _ = problem
    n = len(X)
    assert (MDAV(n).fit(X).labels_ == 0).all()
    lab = MDAV(1).fit(X).labels_
    assert sorted(lab.tolist()) == list(range(n))


def test_k_one_keep_duplicates_merges_only_copies():
    X = np.array([[0.0, 0], [1, 1], [0, 0], [2, 5]])
    lab = MDAV(1, keep_duplicates=True).fit(X).labels_
    assert lab[0] == lab[2] and len({lab[0], lab[1], lab[3]}) == 3


@pytest.mark.parametrize("k", [0, -1, 11, 2.5, "3", None, True])
def test_bad_k(k):
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ParameterError):
        MDAV(k).fit(X)
    with pytest.raises(ParameterError):
        mdav_partition(X, k)


def test_bad_engine():
    with pytest.raises(ParameterError):
        mdav_partition(np.zeros((4, 1)), 2, engine="fortran")


@pytest.mark.parametrize(
    "X",
    [
        np.array([[0.0, 1.0], [np.nan, 2.0], [3.0, 4.0]]),
        np.array([[0.0, 1.0], [np.inf, 2.0], [3.0, 4.0]]),
        np.array([[0.0, -np.inf], [1.0, 2.0], [3.0, 4.0]]),
        np.empty((0, 3)),
        np.empty((5, 0)),
        [[1.0, "a"], [2.0, "b"]],
        pd.DataFrame({"a": ["x", "y", "z"], "b": ["1", "2", "q"]}),  # no numeric column
        pd.DataFrame({"a": [1.0, np.nan, 3.0]}),
        pd.DataFrame({"a": [], "b": []}, dtype=float),
    ],
    ids=["nan", "inf", "-inf", "no-rows", "no-cols", "text-list", "text-frame", "nan-frame", "empty-frame"],
)
def test_bad_input(X):
    with pytest.raises(InputError):
        MDAV(1).fit(X)


def test_text_column_in_a_frame():
    # a numeric column with stray text
    frame = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "b": ["1", "2", "x", "4"]})
    with pytest.raises(InputError):
        MDAV(2).fit(frame)
    with pytest.raises(InputError):
        mdav_partition(frame, 2)
    # a purely categorical column: every column of a DataFrame is a key, so a text column is
    # refused, naming it (issue 39.7: no silent choice of the numeric columns)
    names = pd.DataFrame({"a": [1.0, 2.0, 3.0, 4.0], "name": ["ann", "bob", "cy", "di"]})
    with pytest.raises(InputError):
        mdav_partition(names, 2)
    with pytest.raises(InputError, match="not numbers: name"):
        MDAV(2).fit(names)
    m = MDAV(2).fit(names[["a"]])
    assert m.feature_names_in_ == ["a"]
    assert m.centroids_.shape[1] == 1


@pytest.mark.parametrize("value", [0.0, 5.0, 123456.0, -3.0])
@pytest.mark.parametrize("keep", [False, True])
def test_constant_column(value, keep):
    rng = np.random.default_rng(3)
    X = rng.integers(0, 4, size=(90, 3)).astype(float)
    Xc = np.insert(X, 1, value, axis=1)
    for k in (1, 3, 7):
        with_const = MDAV(k, keep_duplicates=keep).fit(Xc)
        without = MDAV(k, keep_duplicates=keep).fit(X)
        assert np.isfinite(with_const.standardizer_.scale_).all()
        np.testing.assert_array_equal(with_const.labels_, without.labels_)
        assert (with_const.centroids_[:, 1] == value).all()
    # a table that is all constant still fits: one tuple, classical sizes
    m = MDAV(4, keep_duplicates=False).fit(np.full((10, 2), value))
    assert np.bincount(m.labels_).tolist() == [4, 6]
    assert MDAV(4).fit(np.full((10, 2), value)).sizes_.tolist() == [10]  # identical records: one group


# ---------------------------------------------------------------- 6. memory


def test_memory_is_linear():
    # k = 50 keeps the run short: tracemalloc slows every allocation down
    X = np.random.default_rng(11).normal(size=(20_000, 10))
    MDAV(50).fit(X[:200])  # compile / load the kernels outside the measurement
    tracemalloc.start()
    try:
        m = MDAV(50).fit(X)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 50e6, f"peak {peak / 1e6:.1f} MB"  # an n x n float64 matrix is 3.2 GB
    sizes = np.bincount(m.labels_)
    assert (sizes[:-1] == 50).all() and 50 <= sizes[-1] <= 99

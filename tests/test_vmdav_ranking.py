"""Tests of V-MDAV (probanon.microagg.vmdav) and individual ranking
(probanon.microagg.ranking).

Every expected value is computed by hand (in the comments) or by an independent brute
force written here (full distance matrix, Python lists), never by the code under test.
"""

import math
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from probanon.errors import InputError, ParameterError
from probanon.microagg.ranking import (
    apply_ranking_intervals,
    individual_ranking,
    individual_ranking_partition,
    ranking_intervals,
)
from probanon.microagg.vmdav import vmdav_partition


# ---------------------------------------------------------------- brute forces


def vmdav_brute(Z, k, gamma):
    """Independent V-MDAV: n x n distance matrix, Python lists, ties by lowest row.

    Returns (labels, formed_sizes, leftovers): the sizes of the groups as formed (before
    leftovers join) and the rows that were placed with the leftover rule."""
    Z = np.asarray(Z, dtype=float)
    if Z.ndim == 1:
        Z = Z[:, None]
    n = len(Z)
    D2 = ((Z[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    labels = [-1] * n
    U = list(range(n))
    sizes = []
    while len(U) >= k:
        c = Z[U].mean(axis=0)
        dc = [sum((Z[i, j] - c[j]) ** 2 for j in range(Z.shape[1])) for i in U]
        e = U[max(range(len(U)), key=lambda t: (dc[t], -t))]
        others = sorted((i for i in U if i != e), key=lambda i: (D2[e, i], i))
        G = [e] + others[: k - 1]
        while len(G) < 2 * k - 1:
            outside = [i for i in U if i not in G]
            if not outside:
                break
            din = {i: min(D2[i, j] for j in G) for i in outside}
            u = min(outside, key=lambda i: (din[i], i))
            rest = [i for i in outside if i != u]
            dout = min(math.sqrt(D2[u, i]) for i in rest) if rest else math.inf
            if math.sqrt(din[u]) < gamma * dout:
                G.append(u)
            else:
                break
        for i in G:
            labels[i] = len(sizes)
        sizes.append(len(G))
        U = [i for i in U if i not in G]
    assigned = [i for i in range(n) if labels[i] >= 0]
    final = list(labels)
    for i in U:
        nearest = min(assigned, key=lambda a: (D2[i, a], a))
        final[i] = labels[nearest]
    return np.array(final), sizes, list(U)


def ranking_brute(col, k, keep_ties):
    """Independent individual ranking of one column: list of groups (lists of rows)."""
    rows = sorted(range(len(col)), key=lambda i: (col[i], i))
    n = len(rows)
    groups = []
    s = 0
    while s < n:
        e = s + k
        if keep_ties:
            while e < n and e > 0 and col[rows[e]] == col[rows[e - 1]]:
                e += 1
        if n - e < k:
            e = n
        groups.append(rows[s:e])
        s = e
    labels = np.empty(n, dtype=np.int64)
    for g, members in enumerate(groups):
        labels[members] = g
    return labels, groups


# ---------------------------------------------------------------- V-MDAV


def test_vmdav_hand_example_from_brief():
    # x = 0, .1, .2, .3, 10, 10.1, 10.2 (rows 0..6), k = 3.
    # Step 1: centroid = 30.9 / 7 = 4.414; farthest = 10.2 (5.79 > 4.41) -> e = row 6,
    #   G = {10.2, 10.1, 10} = rows {4, 5, 6}.
    #   Extension candidate u = 0.3 (row 3): d_in = 9.7, d_out = 0.1 (to 0.2).
    # Step 2 (rows 0..3 left): centroid 0.15; 0 and 0.3 tie (0 is even a hair farther in
    #   floating point, and lowest row anyway) -> e = row 0, G = {0, .1, .2}.
    #   Extension: u = 0.3, d_in = 0.1, d_out = +inf (nobody else left).
    x = [0, 0.1, 0.2, 0.3, 10, 10.1, 10.2]
    # gamma = 0: no extension anywhere; 0.3 is a leftover and joins the group of its
    # nearest assigned record 0.2 -> group 1.
    assert vmdav_partition(x, 3, gamma=0).tolist() == [1, 1, 1, 1, 0, 0, 0]
    # gamma = 0.2: step 1 rejects 0.3 (9.7 >= 0.02); step 2 adds 0.3 (0.1 < 0.2 * inf).
    assert vmdav_partition(x, 3, gamma=0.2).tolist() == [1, 1, 1, 1, 0, 0, 0]
    # gamma = 100: step 1 adds 0.3 (9.7 < 100 * 0.1 = 10). Next candidate u = 0.2:
    #   d_in = 0.1 (to 0.3, now in G), d_out = 0.1 (to 0.1) -> 0.1 < 10, added;
    #   |G| = 5 = 2k - 1, stop. Left: 0 and 0.1 (2 < k): both join the group of their
    #   nearest assigned record (0.2, group 0) -> a single group.
    assert vmdav_partition(x, 3, gamma=100).tolist() == [0] * 7
    # gamma = 97: step 1 rejects 0.3 (9.7 < 97 * 0.1 = 9.7 is false): same as gamma = 0.2.
    assert vmdav_partition(x, 3, gamma=97).tolist() == [1, 1, 1, 1, 0, 0, 0]


def test_vmdav_extension_changes_the_partition():
    # x = 0, .1, .2, .5, 10, 10.1, 10.2, 10.3 (rows 0..7), k = 3.
    # Step 1: centroid = 41.4 / 8 = 5.175: |0 - c| = 5.175 > |10.3 - c| = 5.125 -> e = row 0,
    #   G = {0, .1, .2}. Candidate u = 0.5 (row 3): d_in = 0.3, d_out = 9.5 (to 10).
    #   Added iff 0.3 < 9.5 gamma, i.e. gamma > 0.0316.
    x = [0, 0.1, 0.2, 0.5, 10, 10.1, 10.2, 10.3]
    # gamma = 0.2: 0.5 joins (0.3 < 1.9); next u = 10: d_in = 9.5, d_out = 0.1 -> stop.
    #   Step 2: rows 4..7, any farthest gives G of 3 of them, and the 4th has d_out = inf
    #   so it joins: groups {0, .1, .2, .5}, {10, ..., 10.3}.
    expected_ext = [0, 0, 0, 0, 1, 1, 1, 1]
    assert vmdav_partition(x, 3, gamma=0.2).tolist() == expected_ext
    assert vmdav_partition(x, 3, gamma=0.04).tolist() == expected_ext
    # gamma = 0 (or 0.03 < 0.0316): group 0 = {0, .1, .2}. Step 2: rows 3..7, centroid
    #   41.1 / 5 = 8.22, farthest 0.5 -> G = {0.5, 10, 10.1}. With gamma = 0.03 the
    #   candidate 10.2 has d_in = d_out = 0.1: rejected. Leftovers 10.2, 10.3 join the
    #   group of their nearest assigned record 10.1 (group 1).
    expected_no_ext = [0, 0, 0, 1, 1, 1, 1, 1]
    assert vmdav_partition(x, 3, gamma=0).tolist() == expected_no_ext
    assert vmdav_partition(x, 3, gamma=0.03).tolist() == expected_no_ext


def test_vmdav_all_equal_records_ties_by_lowest_row():
    Z = np.zeros((7, 2))
    # Every distance is 0. e = row 0 (first argmax), G = rows 0, 1, 2.
    # gamma = 0: group 1 = rows 3, 4, 5; row 6 is a leftover whose nearest assigned record
    #   is row 0 (all at 0, lowest row) -> group 0.
    assert vmdav_partition(Z, 3, gamma=0).tolist() == [0, 0, 0, 1, 1, 1, 0]
    # gamma = 0.2: group 0 does not extend (d_in = 0 < 0.2 * d_out = 0 is false); group 1
    #   = rows 3, 4, 5, then row 6 has d_out = +inf and 0 < inf: it joins group 1.
    assert vmdav_partition(Z, 3, gamma=0.2).tolist() == [0, 0, 0, 1, 1, 1, 1]


def test_vmdav_k_equals_n_and_k_one():
    Z = np.random.default_rng(1).normal(size=(9, 2))
    assert vmdav_partition(Z, 9).tolist() == [0] * 9
    lab = vmdav_partition(Z, 1, gamma=5.0)  # 2k - 1 = 1: no extension, singletons
    assert sorted(lab.tolist()) == list(range(9))


@pytest.mark.parametrize("k", [0, -1, 11, 2.5, "3"])
def test_vmdav_bad_k(k):
    with pytest.raises(ParameterError):
        vmdav_partition(np.zeros((10, 2)), k)


@pytest.mark.parametrize("gamma", [-0.1, float("nan"), float("inf"), "0.2"])
def test_vmdav_bad_gamma(gamma):
    with pytest.raises(ParameterError):
        vmdav_partition(np.zeros((10, 2)), 2, gamma=gamma)


def test_vmdav_bad_input():
    with pytest.raises(InputError):
        vmdav_partition([[0.0, np.nan], [1.0, 2.0]], 1)


def _check_structure(lab, n, k, gamma):
    sizes = np.bincount(lab)
    assert lab.shape == (n,) and lab.dtype == np.int64
    assert (lab >= 0).all() and (sizes >= k).all()  # all labelled, numbered 0..G-1
    # at most k - 1 records are leftovers, so the total excess over 2k - 1 is < k
    assert np.maximum(sizes - (2 * k - 1), 0).sum() <= k - 1
    if gamma == 0:  # no extension: n // k groups of k, plus n % k leftovers
        assert sizes.size == n // k
        assert (sizes - k).sum() == n % k


@settings(max_examples=150, deadline=None)
@given(
    data=st.data(),
    n=st.integers(1, 30),
    d=st.integers(1, 3),
    gamma=st.sampled_from([0.0, 0.2, 0.5, 1.1, 3.0]),
)
def test_vmdav_matches_brute_force_on_integer_data(data, n, d, gamma):
    # small integers: many exact ties, and all squared distances are exact
    Z = data.draw(arrays(np.float64, (n, d), elements=st.integers(-4, 4).map(float)))
    k = data.draw(st.integers(1, n))
    expected, formed, leftovers = vmdav_brute(Z, k, gamma)
    lab = vmdav_partition(Z, k, gamma)
    assert lab.tolist() == expected.tolist()
    # structure, checked on the brute force's record of the formation
    assert all(k <= s <= 2 * k - 1 for s in formed)
    assert len(leftovers) < k
    if gamma == 0:
        assert all(s == k for s in formed)
    _check_structure(lab, n, k, gamma)


@settings(max_examples=60, deadline=None)
@given(
    data=st.data(),
    n=st.integers(2, 60),
    d=st.integers(1, 4),
    gamma=st.sampled_from([0.0, 0.2, 1.1]),
)
def test_vmdav_structure_on_float_data(data, n, d, gamma):
    Z = data.draw(arrays(np.float64, (n, d), elements=st.floats(-50, 50)))
    k = data.draw(st.integers(1, n))
    _check_structure(vmdav_partition(Z, k, gamma), n, k, gamma)


@pytest.mark.parametrize("gamma", [0.0, 0.2, 1.1])
def test_vmdav_matches_brute_force_random(gamma):
    rng = np.random.default_rng(7)
    # clustered data so that extension really happens for gamma = 1.1
    Z = np.concatenate([rng.normal(size=(1, 2)) * 10 + rng.normal(size=(int(m), 2)) * 0.3
                        for m in rng.integers(2, 9, size=20)])
    for k in (2, 3, 5):
        expected, formed, _ = vmdav_brute(Z, k, gamma)
        assert vmdav_partition(Z, k, gamma).tolist() == expected.tolist()
        if gamma == 1.1:
            assert max(formed) > k  # extension did happen


@pytest.mark.slow
def test_vmdav_large_structure_and_memory():
    Z = np.random.default_rng(0).standard_normal((5000, 10))
    tracemalloc.start()
    try:
        lab = vmdav_partition(Z, 5, gamma=0.2)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    _check_structure(lab, 5000, 5, 0.2)
    assert peak < 20 * 5000 * 10 * 8  # O(n d); an n x n float matrix would be 200 MB


# ---------------------------------------------------------------- individual ranking


def test_ranking_hand_example():
    x = [5, 1, 4, 2, 3, 9, 8]
    # sorted: 1 2 3 | 4 5 8 9 (last group absorbs the remainder) -> means 2 and 6.5
    assert individual_ranking_partition(x, 3).tolist() == [[1], [0], [1], [0], [0], [1], [1]]
    assert individual_ranking(x, 3)[:, 0].tolist() == [6.5, 2, 6.5, 2, 2, 6.5, 6.5]
    upper, means = ranking_intervals(x, 3)[0]
    assert upper.tolist() == [3, 9] and means.tolist() == [2, 6.5]
    new = [[-10], [3], [3.5], [9], [100]]
    assert apply_ranking_intervals(new, [(upper, means)])[:, 0].tolist() == [0, 0, 1, 1, 1]
    assert apply_ranking_intervals(new, [(upper, means)], return_means=True)[:, 0].tolist() == [
        2, 2, 6.5, 6.5, 6.5]


def test_ranking_columns_are_independent():
    X = np.array([[5, 1], [1, 1], [4, 1], [2, 1], [3, 2], [9, 2], [8, 3]], dtype=float)
    lab = individual_ranking_partition(X, 2)
    # column 0 sorted: 1 2 | 3 4 | 5 8 9
    assert lab[:, 0].tolist() == [2, 0, 1, 0, 1, 2, 2]
    # column 1 (stable): rows 0 1 | 2 3 | 4 5 6 -> a tie is split
    assert lab[:, 1].tolist() == [0, 0, 1, 1, 2, 2, 2]
    # keep_ties: rows 0-3 (all 1s: the group of row 0 takes the run), then 4-6 would
    # leave 1 < k after {2, 2}: merged -> rows 4..6
    lab_t = individual_ranking_partition(X, 2, keep_ties=True)
    assert lab_t[:, 1].tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert lab_t[:, 0].tolist() == lab[:, 0].tolist()  # no ties in column 0
    out = individual_ranking(X, 2, keep_ties=True)
    assert out[:, 1].tolist() == [1, 1, 1, 1, 7 / 3, 7 / 3, 7 / 3]


def test_ranking_keep_ties_hand_example():
    x = [3, 1, 2, 2, 2, 5]
    # sorted 1(r1) 2(r2) 2(r3) 2(r4) 3(r0) 5(r5), k = 2:
    # keep_ties=False: {r1, r2} {r3, r4} {r0, r5}
    assert individual_ranking_partition(x, 2)[:, 0].tolist() == [2, 0, 0, 1, 1, 2]
    # keep_ties=True: first group {1, 2} would split the run of 2s -> {1, 2, 2, 2}; {3, 5}
    assert individual_ranking_partition(x, 2, keep_ties=True)[:, 0].tolist() == [1, 0, 0, 0, 0, 1]
    upper, means = ranking_intervals(x, 2)[0]
    assert upper.tolist() == [2, 5] and means.tolist() == [7 / 4, 4]


def test_ranking_bad_parameters():
    with pytest.raises(ParameterError):
        individual_ranking_partition(np.zeros((3, 2)), 4)
    with pytest.raises(ParameterError):
        individual_ranking(np.zeros((3, 2)), 0)
    with pytest.raises(ParameterError):
        ranking_intervals(np.zeros((3, 2)), 1.5)
    with pytest.raises(InputError):
        individual_ranking([[1.0], [np.inf]], 1)
    with pytest.raises(InputError):
        apply_ranking_intervals(np.zeros((2, 3)), ranking_intervals(np.zeros((3, 2)), 1))


@settings(max_examples=200, deadline=None)
@given(
    data=st.data(),
    n=st.integers(1, 40),
    d=st.integers(1, 3),
    keep_ties=st.booleans(),
    small=st.booleans(),
)
def test_ranking_matches_brute_force(data, n, d, keep_ties, small):
    elements = st.integers(0, 4).map(float) if small else st.floats(-1e3, 1e3)
    X = data.draw(arrays(np.float64, (n, d), elements=elements))
    k = data.draw(st.integers(1, n))
    lab = individual_ranking_partition(X, k, keep_ties=keep_ties)
    out = individual_ranking(X, k, keep_ties=keep_ties)
    assert lab.shape == (n, d) and lab.dtype == np.int64
    for j in range(d):
        expected, groups = ranking_brute(X[:, j].tolist(), k, keep_ties)
        assert lab[:, j].tolist() == expected.tolist()
        sizes = np.bincount(lab[:, j])
        assert (sizes >= k).all()
        if not keep_ties:
            assert (sizes <= 2 * k - 1).all()
        else:  # equal values never split
            for v in np.unique(X[:, j]):
                assert np.unique(lab[X[:, j] == v, j]).size == 1
        for members in groups:
            assert np.allclose(out[members, j], np.mean(X[members, j]), rtol=1e-12, atol=1e-12)
        # the column mean is preserved
        scale = max(1.0, np.abs(X[:, j]).max())
        assert abs(out[:, j].mean() - X[:, j].mean()) <= 1e-12 * scale


@settings(max_examples=200, deadline=None)
@given(data=st.data(), n=st.integers(1, 50), d=st.integers(1, 3))
def test_ranking_intervals_reproduce_labels_with_ties(data, n, d):
    X = data.draw(arrays(np.float64, (n, d), elements=st.integers(-3, 3).map(float)))
    k = data.draw(st.integers(1, n))
    lab = individual_ranking_partition(X, k, keep_ties=True)
    out = individual_ranking(X, k, keep_ties=True)
    intervals = ranking_intervals(X, k, keep_ties=True)
    assert len(intervals) == d
    assert apply_ranking_intervals(X, intervals).tolist() == lab.tolist()
    assert np.array_equal(apply_ranking_intervals(X, intervals, return_means=True), out)
    for j, (upper, means) in enumerate(intervals):
        assert np.all(np.diff(upper) > 0)
        # independent rule: first group whose upper bound is >= v, else the last one
        for i in range(n):
            v = X[i, j]
            g = next((t for t, ub in enumerate(upper) if ub >= v), len(upper) - 1)
            assert g == lab[i, j]
            assert means[g] == pytest.approx(np.mean(X[lab[:, j] == g, j]), rel=1e-12)

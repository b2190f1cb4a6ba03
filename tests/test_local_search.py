"""Exact-gain local search (probanon.microagg.local_search): the gain formulas against SSEs
recomputed from scratch, SSE never up, cells >= k, seeded, free cell sizes."""

import numpy as np
import pytest

from probanon.errors import ParameterError
from probanon.microagg import local_search as ls_module
from probanon.microagg.local_search import (CellLists, _dissolve, _improve, _Search, _split, _swap_delta,
                                            iterated_local_search, local_search)
from probanon.microagg.mdav import mdav_partition


def sse(Z, labels):
    return sum(((Z[labels == q] - Z[labels == q].mean(0)) ** 2).sum() for q in np.unique(labels))


def state_sse(s):
    return sse(s.Z, s.labels)


def log():
    return np.empty((1000, 3), np.int64)


@pytest.mark.parametrize("seed", range(4))
def test_gain_formulas_match_recomputed_sse(seed):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(60, 3))
    s = _Search(Z, np.arange(60) % 6, 5, 5)  # six cells of 10 records
    before = state_sse(s)
    i, j = 0, 1  # cells 0 and 1
    delta = _swap_delta(s.Z, i, j, 0, 1, s.counts, s.cent)
    swapped = s.labels.copy()
    swapped[[i, j]] = [1, 0]
    assert delta == pytest.approx(sse(Z, swapped) - before, abs=1e-9)

    gain, new, _ = _split(s.Z, 2, 5, s.labels, s.sums, s.counts, s.head, s.nxt, s.prv, s.cent, s.free, s.top, s.nbr,
                          s.buf, s.proj, 0.0, log(), 0)
    assert new >= 0 and np.bincount(s.labels)[[2, new]].min() >= 5
    assert before - state_sse(s) == pytest.approx(gain, abs=1e-9) and gain > 0

    before = state_sse(s)
    change, _ = _dissolve(s.Z, 3, s.labels, s.sums, s.counts, s.head, s.nxt, s.prv, s.cent, s.free, s.top, s.nbr,
                          s.buf, log(), 0)
    assert (s.labels != 3).all() and s.counts[3] == 0
    assert state_sse(s) - before == pytest.approx(change, abs=1e-9)

    before = state_sse(s)
    gain, _ = _improve(s.Z, np.arange(60), s.nbr, s.labels, s.sums, s.counts, s.head, s.nxt, s.prv, s.cent, 5, 3,
                       0.0, 5, log(), 0, s.clock, s.changed, s.seen_at)
    assert before - state_sse(s) == pytest.approx(gain, abs=1e-9)
    # the incrementally kept sums and centroids are those of the labels
    for q in np.flatnonzero(s.counts):
        np.testing.assert_allclose(s.cent[q], Z[s.labels == q].mean(0), atol=1e-12)


def test_improve_skips_only_records_whose_cells_did_not_change():
    # after the first sweep _improve re-evaluates a record only if its cell or a cell of its
    # list changed; marking every cell as changed forces every evaluation: same moves, bit for
    # bit (short lists on elongated data: leaving out either cell's mark changes 1-3 of these)
    for seed in range(20):
        rng = np.random.default_rng(seed)
        Z = rng.normal(size=(600, 2)) * [5, 1]
        start = rng.permutation(np.arange(600) % 100)  # 100 random cells of 6: many sweeps of moves
        runs = []
        for force in (False, True):
            s = _Search(Z, start, 5, 3)
            changed = np.full_like(s.changed, 2**62) if force else s.changed
            gain, _ = _improve(s.Z, np.arange(600), s.nbr, s.labels, s.sums, s.counts, s.head, s.nxt, s.prv, s.cent,
                               5, 3, s.tol, 100, np.empty((0, 3), np.int64), 0, s.clock, changed, s.seen_at)
            runs.append((s.labels.copy(), gain, s.clock[0]))
        np.testing.assert_array_equal(runs[0][0], runs[1][0])
        assert runs[0][1] == runs[1][1] > 0
        assert runs[0][2] > 300  # moves in several sweeps (one sweep evaluates 600 records)


def test_candidate_lists_are_carried_between_searches_on_the_same_cells(monkeypatch):
    Z = np.random.default_rng(4).normal(size=(500, 3))
    start = mdav_partition(Z, 5).labels
    lists = CellLists()
    first = local_search(Z, start, 5, lists=lists)
    assert lists.nbr is not None and lists.nbr.shape == (100, ls_module.LIST)
    live = lists.nbr[lists.nbr >= 0]
    assert live.max() < 100 and not (lists.nbr == np.arange(100)[:, None]).any()

    def no_tree(*args):
        raise AssertionError("the carried lists should have been used")

    monkeypatch.setattr(ls_module, "_neighbour_lists", no_tree)
    second = iterated_local_search(Z, first, 5, 300, np.random.default_rng(1), lists=lists)
    assert np.bincount(second).min() >= 5 and sse(Z, second) <= sse(Z, first) + 1e-9
    monkeypatch.undo()
    # free sizes that dissolve cells renumber them: the lists are not handed on
    free = iterated_local_search(Z, second, 5, 300, np.random.default_rng(1), free_sizes=True, lists=lists)
    assert free.max() + 1 < 100 and lists.nbr is None and lists.cent is None


def test_a_search_from_carried_lists_refreshes_the_cells_whose_centroid_moved(monkeypatch):
    Z = np.random.default_rng(6).normal(size=(500, 3))
    lists = CellLists()
    first = local_search(Z, mdav_partition(Z, 5).labels, 5, lists=lists)
    means = np.array([Z[first == q].mean(0) for q in range(100)])
    np.testing.assert_allclose(lists.cent, means, rtol=1e-9, atol=1e-12)  # the centroids the lists are for
    refreshed = []
    real = ls_module._Search.refresh
    monkeypatch.setattr(ls_module._Search, "refresh",
                        lambda self, cells: (refreshed.append(set(cells)), real(self, cells)))
    ls_module._Search(Z, first, 5, ls_module.LIST, lists)  # same cells (sums built afresh): nothing to refresh
    moved = first.copy()
    i, j = np.flatnonzero(first == 3)[0], np.flatnonzero(first == 7)[0]
    moved[i], moved[j] = 7, 3  # a swap moves the centroids of cells 3 and 7 only
    ls_module._Search(Z, moved, 5, ls_module.LIST, lists)
    assert refreshed == [set(), {3, 7}]


@pytest.mark.parametrize("free", [False, True])
def test_local_search_never_increases_sse_and_keeps_cells_of_k(free):
    rng = np.random.default_rng(1)
    for _ in range(4):
        Z = rng.normal(size=(150, 3))
        start = mdav_partition(Z, 4).labels
        out = local_search(Z, start, 4, free_sizes=free)
        assert np.bincount(out).min() >= 4 and sse(Z, out) <= sse(Z, start) + 1e-9
        assert set(out) == set(range(out.max() + 1))
        if not free:
            assert out.max() == start.max()


def test_free_sizes_split_every_cell_of_2k_or_more():
    Z = np.random.default_rng(2).normal(size=(120, 2))
    start = np.minimum(np.arange(120) // 5, 10)  # ten cells of 5 and one of 70
    out = local_search(Z, start, 5, free_sizes=True)
    assert np.bincount(out).min() >= 5 and np.bincount(out).max() <= 9
    assert sse(Z, out) < sse(Z, local_search(Z, start, 5))


@pytest.mark.parametrize("free", [False, True])
def test_iterated_local_search_is_seeded_and_never_worse(free):
    Z = np.random.default_rng(5).normal(size=(400, 3))
    start = local_search(Z, mdav_partition(Z, 5).labels, 5)
    a = iterated_local_search(Z, start, 5, 2000, np.random.default_rng(7), free_sizes=free)
    b = iterated_local_search(Z, start, 5, 2000, np.random.default_rng(7), free_sizes=free)
    np.testing.assert_array_equal(a, b)
    assert np.bincount(a).min() >= 5 and set(a) == set(range(a.max() + 1))
    assert sse(Z, a) < sse(Z, start)
    if not free:
        assert a.max() == start.max()


def test_free_sizes_find_clusters_of_more_than_k():
    # eight tight clusters of 4 records far apart, k = 3: fixed sizes (|Q| = 10 cells, MDAV's)
    # must mix clusters; with free sizes the optimum is one cell per cluster, whose SSE is
    # the sum of the clusters' own SSEs
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(8, 2)) * 100
    Z = np.repeat(centres, 4, axis=0) + rng.normal(size=(32, 2)) * 0.1
    clusters = np.repeat(np.arange(8), 4)
    start = local_search(Z, mdav_partition(Z, 3).labels, 3)
    fixed = iterated_local_search(Z, start, 3, 500, np.random.default_rng(0))
    free = iterated_local_search(Z, start, 3, 500, np.random.default_rng(0), free_sizes=True)
    assert fixed.max() + 1 == 10 and sse(Z, fixed) > 100
    assert sse(Z, free) == pytest.approx(sse(Z, clusters), rel=1e-9)


def test_bad_labels():
    Z = np.zeros((10, 2))
    with pytest.raises(ParameterError, match="at least k = 3"):
        local_search(Z, np.r_[np.zeros(8, int), [1, 1]], 3)
    with pytest.raises(ParameterError, match="one per record"):
        iterated_local_search(Z, np.zeros(9, int), 3, 10, np.random.default_rng(0))


def test_a_kicks_descent_tries_the_records_the_kick_moved_last_in_their_order():
    n = 10
    records = np.array([9, 5, 3, 8, 1, 7, 2, 6, 2, 4], np.int64)  # 2 twice: a dissolved cell's record
    # moved: 2, 7 (log order differs from the record order); -1 / -2 rows name no record; the row
    # past nlog names 5, which must stay unmarked
    log = np.array([[2, 0, 1], [-1, 9, 0], [7, 1, 0], [-2, 8, 0], [5, 0, 0]], np.int64)
    mark = np.zeros(n, np.bool_)
    ls_module._kicked_last(records, 9, log, 4, mark, np.empty(9, np.int64))
    # the first m = 9 entries: unmoved ones in their order, then the moved ones in theirs; the
    # 10th entry (a moved record's id past m) stays where it is
    np.testing.assert_array_equal(records, [9, 5, 3, 8, 1, 6, 7, 2, 2, 4])
    assert not mark.any()  # the scratch is clean for the next kick


def test_four_at_a_time_kernels_give_the_bits_of_one_at_a_time_and_the_nearest_candidates():
    # the interleaved kernels must not change a decision: the same bits as the one-pair kernels,
    # and a record's candidates are the T nearest of its cell's list (brute force)
    from probanon.microagg.local_search import _candidates, _sqdist, _sqdist4, _swap_terms, _swap_terms4

    rng = np.random.default_rng(11)
    Z, cent = rng.normal(size=(40, 13)) * 1e3, rng.normal(size=(9, 13))
    g, w = rng.normal(size=13), 0.3
    for i, js, qs in ((0, (1, 2, 3, 4), (1, 2, 3, 4)), (5, (39, 6, 7, 5), (0, 8, 2, 3))):
        assert _swap_terms4(Z, i, *js, g, w) == tuple(_swap_terms(Z, i, j, g, w) for j in js)
        assert _sqdist4(Z, i, cent, *qs) == tuple(_sqdist(Z, i, cent, q) for q in qs)
    counts = np.array([5, 5, 0, 5, 5, 5, 5, 5, 5], float)
    nbr = np.array([[1, 2, 3, 4, 5, 6, 7, -1, -1]] + [[0] * 9] * 8)  # cell 2 empty; padded with -1
    dist, out = np.empty(4), np.empty(4, np.int64)
    for i in range(10):
        _candidates(Z, i, 0, nbr, counts, cent, dist, out)
        d = {q: ((Z[i] - cent[q]) ** 2).sum() for q in (1, 3, 4, 5, 6, 7)}
        assert out.tolist() == sorted(d, key=d.get)[:4]
    # -1 entries before a cell: a split puts its new cell in the last slot of a short list
    nbr[0] = [1, -1, -1, 3, 4, -1, -1, -1, 8]
    for i in range(10):
        _candidates(Z, i, 0, nbr, counts, cent, dist, out)
        d = {q: ((Z[i] - cent[q]) ** 2).sum() for q in (1, 3, 4, 8)}
        assert out.tolist() == sorted(d, key=d.get)


@pytest.mark.parametrize("free", [False, True])
def test_kicks_in_two_halves_give_the_same_result_on_one_thread_and_two(monkeypatch, free):
    # from HALVES_MIN cells the kicks run on two halves of the cells (threads where numba has
    # two): the split depends on the data only, so one thread (SERIAL) gives the same labels;
    # every cell >= k, SSE lower; without free sizes every cell keeps its id and the carried
    # candidate lists stay usable by the next search; each half only gets kicks within itself,
    # so a kick moves no record across the halves of one phase (one phase, widest coordinate)
    from probanon import _threads

    Z = np.random.default_rng(6).normal(size=(1500, 3))
    start = local_search(Z, mdav_partition(Z, 5).labels, 5)
    monkeypatch.setattr(ls_module, "HALVES_MIN", 100)
    assert ls_module.searches(start.max() + 1) == 2
    runs = {}
    for mode in (_threads.PARALLEL, _threads.SERIAL):
        monkeypatch.setattr(_threads, "MODE", mode)
        lists = CellLists()
        local_search(Z, start, 5, lists=lists)
        runs[mode] = (iterated_local_search(Z, start, 5, 3000, np.random.default_rng(4), free_sizes=free,
                                            lists=lists), lists)
    a, lists = runs[_threads.PARALLEL]
    np.testing.assert_array_equal(a, runs[_threads.SERIAL][0])
    assert np.bincount(a).min() >= 5 and sse(Z, a) < sse(Z, start)
    if not free:
        assert a.max() == start.max() and lists.nbr is not None
        np.testing.assert_array_equal(local_search(Z, a, 5, lists=lists), local_search(Z, a, 5))
    monkeypatch.setattr(ls_module, "PHASES", 1)
    cent = np.array([Z[start == q].mean(0) for q in range(start.max() + 1)])
    axis = np.argmax(cent.max(0) - cent.min(0))
    first = np.zeros(len(cent), bool)
    first[np.argsort(cent[:, axis], kind="stable")[: len(cent) // 2]] = True
    one = iterated_local_search(Z, start, 5, 3000, np.random.default_rng(4), free_sizes=free)
    side = first[start]
    for q in np.unique(one):  # every cell holds records of one half only
        assert side[one == q].all() or not side[one == q].any()


class FixedSeeds:
    """A stand-in for the Generator: hands out the given seeds."""

    def __init__(self, seeds):
        self.seeds = seeds

    def integers(self, high, size=None):
        return self.seeds[0] if size is None else np.array(self.seeds[:size])


@pytest.mark.parametrize("free", [False, True])
def test_restarts_keep_the_better_of_independent_searches_on_one_thread_and_two(monkeypatch, free):
    from probanon import _threads

    Z = np.random.default_rng(8).normal(size=(400, 3))
    start = local_search(Z, mdav_partition(Z, 5).labels, 5)
    single = [iterated_local_search(Z, start, 5, 300, FixedSeeds([seed]), free_sizes=free) for seed in (11, 22)]
    costs = [sse(Z, labels) for labels in single]
    assert abs(costs[0] - costs[1]) > 1e-6 * costs[0]  # two different draws
    for mode in (_threads.PARALLEL, _threads.SERIAL):
        monkeypatch.setattr(_threads, "MODE", mode)
        both = iterated_local_search(Z, start, 5, 300, FixedSeeds([11, 22]), free_sizes=free, restarts=2)
        np.testing.assert_array_equal(both, single[int(np.argmin(costs))])


def assert_lists_hold_each_cell_once(nbr):
    for a, row in enumerate(nbr):
        cells = row[row >= 0]
        assert a not in cells and len(set(cells.tolist())) == cells.size, (a, row)


def test_a_split_into_a_dissolved_cells_id_keeps_each_cell_once_in_the_lists():
    # a dissolved cell stays in its neighbours' lists; a split then takes its id from the free
    # stack. The split's lists (the new cell: the split cell then its list; the split cell: the
    # new one added) held that id twice, and a kick's region (a cell and its nearest cells) then
    # held records three times: past the end of its record buffer (memory corruption)
    Z = np.array([[0.0], [0.0], [1.0], [1.0], [10.0], [10.0], [11.0], [11.0]])
    s = _Search(Z, np.array([0, 0, 1, 1, 2, 2, 2, 2]), 2, 4)
    assert_lists_hold_each_cell_once(s.nbr)
    assert 1 in s.nbr[0]
    _dissolve(s.Z, 1, s.labels, s.sums, s.counts, s.head, s.nxt, s.prv, s.cent, s.free, s.top, s.nbr, s.buf, log(), 0)
    assert s.labels.tolist() == [0, 0, 0, 0, 2, 2, 2, 2]  # cell 1's records joined cell 0, id 1 freed
    gain, new, _ = _split(s.Z, 0, 2, s.labels, s.sums, s.counts, s.head, s.nxt, s.prv, s.cent, s.free, s.top, s.nbr,
                          s.buf, s.proj, 0.0, log(), 0)
    assert new == 1 and {tuple(s.labels[:2]), tuple(s.labels[2:4])} == {(0, 0), (1, 1)}  # the 0s from the 1s
    assert gain == pytest.approx(1.0)  # n1 n2 / n ||c1 - c2||^2 = 2 * 2 / 4 * 1
    assert_lists_hold_each_cell_once(s.nbr[:3])
    assert 1 in s.nbr[0] and 0 in s.nbr[1]  # the two halves see each other


_KICKS_ON_GRIDS = """
import json
import numpy as np
from probanon.microagg.local_search import CellLists, iterated_local_search
out = []
for seed in range(80):
    rng = np.random.default_rng(seed)
    n, k, d = int(rng.integers(6, 40)), int(rng.integers(2, 5)), int(rng.integers(1, 3))
    Z = rng.integers(0, 3, (n, d)).astype(float)  # a small grid: many duplicates
    start = np.minimum(np.arange(n) // k, n // k - 1)[rng.permutation(n)]
    lists = CellLists()
    try:
        labels = iterated_local_search(Z, start, k, 20, np.random.default_rng(seed), free_sizes=True, restarts=2,
                                       lists=lists)
    except IndexError as exc:
        out.append([seed, "IndexError"])
        continue
    sizes = np.bincount(labels)
    if labels.shape != (n,) or sizes.min() < k:
        out.append([seed, "cells " + str(sizes.tolist())])
    for a, row in enumerate(lists.nbr if lists.nbr is not None else []):
        cells = row[row >= 0]
        if a in cells or len(set(cells.tolist())) != cells.size:
            out.append([seed, "list"])
            break
print(json.dumps(out))
"""


def test_free_size_kicks_stay_in_bounds_on_small_grids_with_duplicates(boundscheck_cache):
    # bounds-checked kernels (a fresh interpreter): before the fix, 6 of these 80 cases indexed
    # out of bounds (seed 21 the first); compiled normally such writes corrupted the heap
    # ("double free or corruption") in about 20% of PCL fits on small grids with duplicates
    from helpers import run_bounds_checked

    assert run_bounds_checked(_KICKS_ON_GRIDS, boundscheck_cache) == []

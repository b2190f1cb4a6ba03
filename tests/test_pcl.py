"""PCL building blocks (paper 3): exact size-constrained assignment, exact-gain local search,
and the PCL estimator on the sanity values of NOTES.md §3."""

import itertools
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from probanon.errors import ParameterError
from probanon.microagg import MDAV, PCL
from probanon.microagg.local_search import iterated_local_search, local_search
from probanon.microagg.offsets import fill_deficits
from probanon.microagg.pcl import KMEANS_PLUSPLUS_STARTS, kmeans_plusplus
from probanon.microagg.potentials import strict_offsets
from probanon.microagg.transport import transport_assign


def brute_best(Z, C, k):
    """Cheapest assignment of the rows of Z to the centers C with every cell >= k (all Q^n)."""
    n, Q = len(Z), len(C)
    D = ((Z[:, None, :] - C[None, :, :]) ** 2).sum(-1)
    best = math.inf
    for labels in itertools.product(range(Q), repeat=n):
        if min(np.bincount(labels, minlength=Q)) >= k:
            best = min(best, D[np.arange(n), labels].sum())
    return best


def highs_best(Z, C, m, D=None):
    """The full transportation LP (every point-cell pair, dense; costs ``D``, default the
    squared distances) solved by HiGHS: optimal cost."""
    from scipy.optimize import linprog
    from scipy.sparse import csr_matrix, kron, identity

    n, Q = len(Z), len(C)
    D = ((Z[:, None, :] - C[None, :, :]) ** 2).sum(-1) if D is None else D
    A_eq = kron(identity(n), np.ones((1, Q)), format="csr")  # y[i, q] at i * Q + q
    A_ub = -kron(np.ones((1, n)), identity(Q), format="csr")
    res = linprog(D.ravel(), A_ub=csr_matrix(A_ub), b_ub=-np.broadcast_to(m, Q), A_eq=A_eq, b_eq=np.ones(n),
                  bounds=(0, None), method="highs")
    assert res.status == 0
    return res.fun


def sse(Z, labels):
    return sum(((Z[labels == q] - Z[labels == q].mean(0)) ** 2).sum() for q in np.unique(labels))


@pytest.mark.parametrize("seed", range(6))
def test_transport_is_optimal_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(9, 2))
    C = rng.normal(size=(3, 2)) * 0.3
    r = transport_assign(Z, C, 3, candidates=2)  # few candidates: column generation must fix it
    assert np.bincount(r.labels, minlength=3).min() >= 3
    assert r.cost == pytest.approx(brute_best(Z, C, 3), rel=1e-9)
    # the duals are power-diagram offsets: no point prefers another cell (up to ties)
    D = ((Z[:, None, :] - C[None]) ** 2).sum(-1) + r.offsets[None, :]
    assert (D[np.arange(9), r.labels] <= D.min(1) + 1e-9).all()


@pytest.mark.parametrize("seed", range(8))
def test_candidate_restricted_assignment_equals_the_dense_optimum(seed):
    # two candidates per point, then pricing with the potentials (no n x |Q| matrix): the
    # cost must equal HiGHS on the full dense LP, with unequal minimum sizes and slack
    rng = np.random.default_rng(seed)
    n, Q, d = 300, 40, 1 + seed % 4
    Z, C = rng.normal(size=(n, d)), rng.normal(size=(Q, d))
    m = rng.integers(3, 8, Q) if seed % 2 else np.full(Q, n // Q)
    r = transport_assign(Z, C, m, candidates=2)
    assert (np.bincount(r.labels, minlength=Q) >= m).all()
    assert r.cost == pytest.approx(highs_best(Z, C, m), rel=1e-9)
    assert r.columns <= n * Q / 2  # not the dense problem
    D = ((Z[:, None, :] - C[None]) ** 2).sum(-1) + r.offsets[None, :]
    assert (D[np.arange(n), r.labels] <= D.min(1) + 1e-7).all()  # the potentials are duals


@pytest.mark.parametrize("seed", range(6))
def test_assignment_from_a_feasible_start_cancels_its_cycles_to_the_dense_optimum(seed):
    # a start (every cell at its minimum or above) is improved by cancelling its negative
    # exchange cycles instead of a first flow: same optimum as HiGHS on the dense LP, over the
    # start's candidates alone (exact=False) and over all pairs; an infeasible start is ignored
    import probanon.microagg.transport as transport

    rng = np.random.default_rng(seed)
    n, Q, d = 240, 30, 2 + seed % 3
    Z, C = rng.normal(size=(n, d)), rng.normal(size=(Q, d))
    m = rng.integers(3, 7, Q)
    others = np.column_stack([np.arange(n) % Q, rng.integers(0, Q, (n, 3))])
    start = transport_assign(Z, C, m, near=others, exact=False).labels
    pairs = rng.choice(n, (8, 2), replace=False)  # a few records swap cells: sizes kept
    start[pairs[:, 0]], start[pairs[:, 1]] = start[pairs[:, 1]], start[pairs[:, 0]]
    near = np.column_stack([start, others])  # the start's cell is a candidate
    D = ((Z[:, None, :] - C[None]) ** 2).sum(-1)
    allowed = np.zeros((n, Q), bool)
    allowed[np.arange(n)[:, None], near] = True
    calls = []
    flow = transport._min_cost_flow
    try:
        transport._min_cost_flow = lambda *a: calls.append(1) or flow(*a)
        restricted = transport_assign(Z, C, m, near=near, exact=False, labels=start)
        assert not calls  # the cycles were cancelled, no flow was solved
        assert allowed[np.arange(n), restricted.labels].all()
        assert (np.bincount(restricted.labels, minlength=Q) >= m).all()
        assert D[np.arange(n), restricted.labels].sum() == pytest.approx(highs_best(Z, C, m, np.where(allowed, D, 1e6)),
                                                                          rel=1e-9)
        full = transport_assign(Z, C, m, near=near, labels=start)
        assert full.cost == pytest.approx(highs_best(Z, C, m), rel=1e-9)
        power = D + full.offsets[None, :]
        assert (power[np.arange(n), full.labels] <= power.min(1) + 1e-7).all()
        calls.clear()
        short = start.copy()
        short[short == 0] = 1  # cell 0 below its minimum: the start is ignored, a flow solves it
        ignored = transport_assign(Z, C, m, near=np.column_stack([near, np.zeros(n, np.int64)]), labels=short)
        assert calls and ignored.cost == pytest.approx(full.cost, rel=1e-9)
        # a start whose cells are not among the candidates is ignored too, also when the first
        # candidates admit no assignment (they are widened)
        calls.clear()
        narrow = np.zeros((n, 1), np.int64)  # every record's one candidate: cell 0
        widened = transport_assign(Z, C, m, near=narrow, labels=np.arange(n) % Q)
        assert calls and widened.cost == pytest.approx(highs_best(Z, C, m), rel=1e-9)
    finally:
        transport._min_cost_flow = flow
    with pytest.raises(ParameterError, match="labels must be"):
        transport_assign(Z, C, m, near=near, labels=start[:-1])


@pytest.mark.parametrize("seed", range(4))
def test_cancelling_cycles_reaches_the_flow_optimum_over_the_added_pairs(seed):
    # the optimum over 6 candidates per point (half of the points without their nearest cell),
    # then the nearest cell and 2 random ones added for every point: cancelling the
    # negative cycles they close must reach the cost of HiGHS on the dense LP restricted to
    # these pairs (huge costs elsewhere), with sizes >= m and potentials certifying every pair
    from probanon.microagg.candidates import _pair_costs, nearest_cells
    from probanon.microagg.potentials import cancel_cycles, feasible_potentials
    from probanon.microagg.transport import _min_cost_flow

    rng = np.random.default_rng(seed)
    n, Q, d = 400, 50, 2 + seed % 3
    Z, C = rng.normal(size=(n, d)), rng.normal(size=(Q, d))
    m = rng.integers(3, 7, Q) if seed % 2 else np.full(Q, 5)
    seven = nearest_cells(Z, C, np.zeros(Q), 7)[0]
    near = np.where(rng.random(n)[:, None] < 0.5, seven[:, 1:], seven[:, :6])  # half lack their nearest cell
    far = np.column_stack([near, seven[:, :1], rng.integers(0, Q, (n, 2))])
    cost, grown = _pair_costs(Z, C, np.zeros(Q), near), _pair_costs(Z, C, np.zeros(Q), far)
    tol = 1e-10 * cost.max()
    labels = _min_cost_flow(near, cost, m)
    labels, c0, _ = feasible_potentials(Z, C, labels, near, np.zeros(Q + 1), tol / 4, min_sizes=m)
    D = ((Z[:, None, :] - C[None]) ** 2).sum(-1)
    allowed = np.zeros((n, Q), bool)
    allowed[np.arange(n)[:, None], far] = True
    before = D[np.arange(n), labels].sum()
    best = highs_best(Z, C, m, np.where(allowed, D, 1e6))
    assert best < before - 1e-6  # the added pairs do improve: cycles to cancel
    labels, c = cancel_cycles(far, grown, labels, m, c0, tol / 4)
    assert allowed[np.arange(n), labels].all() and (np.bincount(labels, minlength=Q) >= m).all()
    assert D[np.arange(n), labels].sum() == pytest.approx(best, rel=1e-9)
    power = D + c[None, :Q]
    own = power[np.arange(n), labels]
    assert (own[:, None] <= np.where(allowed, power, np.inf) + 1e-7).all()
    surplus = np.bincount(labels, minlength=Q) > m
    assert (np.abs(c[:Q][surplus] - c[Q]) <= 1e-7).all() and (c[:Q] <= c[Q] + 1e-7).all()


def pricing_case(seed, n, Q, d):
    """Records, centres, their dense squared distances, offsets, each record's cheapest cell
    and the pricing tolerance of a transport over them."""
    rng = np.random.default_rng(seed)
    Z, C = rng.normal(size=(n, d)), rng.normal(size=(Q, d))
    D = ((Z[:, None, :] - C[None]) ** 2).sum(-1)
    c = -rng.uniform(0, 0.5, Q)
    return rng, Z, C, D, c, (D + c).argmin(1), 1e-10 * D.max()


def test_grown_candidates_add_each_rows_new_cells_once_packed_to_the_left():
    from probanon.microagg.transport import _grown

    rng = np.random.default_rng(3)
    near = rng.integers(0, 30, (50, 6))
    near[rng.random(near.shape) < 0.3] = -1
    rows = np.array([2, 7, 8, 40])
    new = rng.integers(-1, 30, (4, 9))
    out = _grown(near, rows, new)
    expected = {}
    for r, i in enumerate(rows):  # the distinct cells of the old row, then of the new ones, in order
        expected[i] = list(dict.fromkeys(q for q in [*near[i], *new[r]] if q >= 0))
    assert out.shape == (50, max(6, *(len(v) for v in expected.values())))
    assert _grown(near, rows[:0], new[:0]).tolist() == near.tolist()  # no row gains: unchanged
    for i in range(50):
        if i in expected:
            assert out[i].tolist() == expected[i] + [-1] * (out.shape[1] - len(expected[i]))
        else:
            assert out[i, :6].tolist() == near[i].tolist() and (out[i, 6:] == -1).all()


def test_pricing_against_moved_cells_finds_what_a_full_pricing_finds():
    # after a full pricing, rounds with a few offsets moved (and every offset shifted by a
    # common amount, which changes no comparison) and a few records relabelled are priced
    # incrementally: each record's improving cells must be those of a full pricing, also for
    # the records that had more improving cells than were added (P) in the round before
    from probanon.microagg.transport import _price

    n, Q, P = 6000, 600, 4
    rng, Z, C, D, c, labels, tol = pricing_case(5, n, Q, 4)
    bad = rng.choice(n, 20, replace=False)
    labels[bad] = (D + c)[bad].argmax(1)  # in their worst cell: hundreds of improving cells each

    def gain(c, labels):  # improving pairs at 7/8 tol, from the dense matrix
        power = D + c
        return power < power[np.arange(n), labels][:, None] - 0.875 * tol

    priced = _price(Z, C, c, labels, tol, P, None)[4]  # full pricing: a new state
    np.testing.assert_array_equal(priced.overflow, gain(c, labels).sum(1) > P)
    assert priced.overflow[bad].all() and len(priced.history) == 1
    for step in range(3):  # partial rounds, each on the state the one before left
        c2, labels2 = c + 7.5 * (step + 1), labels.copy()
        moved_cells = rng.choice(np.setdiff1d(np.arange(Q), labels[bad]), 40, replace=False)
        c2[moved_cells] += rng.normal(0, 0.3, 40)
        c2[rng.choice(Q, 100)] += tol / 100  # below the drift threshold: not re-priced
        relabelled = rng.choice(np.setdiff1d(np.arange(n), bad), 30, replace=False)
        labels2[relabelled] = rng.choice(np.setdiff1d(np.arange(Q), labels[bad]), 30)
        before = priced.overflow.copy()
        better, count, _, around, priced = _price(Z, C, c2, labels2, tol, P, priced)
        assert len(priced.history) == step + 2  # partial
        expected = gain(c2, labels2)
        np.testing.assert_array_equal(count, expected.sum(1))  # the bad records' cells did not move: found anyway
        assert 0 < (count > 0).sum() < n and (count[bad] > P).all()
        for i in np.flatnonzero(count > 0)[:50]:
            assert expected[i, better[i][better[i] >= 0]].all()
        np.testing.assert_array_equal(priced.overflow, count > P)  # the marks of this round
        assert (priced.rows[relabelled] == step + 1).all() and (priced.cells[moved_cells] == step + 1).all()
        # the transport adds the pairs found and solves again: here, those records take their best cell
        solved = np.flatnonzero((count > 0) & (count <= P))
        labels2[solved] = (D + c2)[solved].argmin(1)
        c, labels = c2, labels2
    # the marks must matter: without them, the bad records are priced against the moved cells only
    priced.overflow[:] = False
    assert (_price(Z, C, c + 1.0, labels, tol, P, priced)[1][bad] == 0).all() and before[bad].all()


def test_a_partial_pricing_takes_the_cells_that_moved_by_more_than_tol_over_16_since_their_pairs_round(
        monkeypatch):
    # the argument needs, among the targets, every cell whose offset moved by more than tol / 16
    # (beyond the common shift) since the round that last priced its pairs: small moves that
    # add up over rounds count, and cells priced again in a later round are measured from it
    from probanon.microagg import transport
    from probanon.microagg.candidates import improving_cells

    n, Q, P = 3000, 300, 4
    rng, Z, C, D, c, labels, tol = pricing_case(8, n, Q, 3)
    priced = transport._price(Z, C, c, labels, tol, P, None)[4]
    over, under, other = np.split(rng.choice(Q, 60, replace=False), 3)
    seen = []

    def spy(*args, **kwargs):
        seen.append(kwargs.get("targets"))
        if kwargs.get("targets") is None:  # the records priced over all cells: their cells
            whole.update(args[3].tolist())
        return improving_cells(*args, **kwargs)

    monkeypatch.setattr(transport, "improving_cells", spy)
    whole = set()

    def round_(c2, labels2, state):
        seen.clear()
        whole.clear()
        count, state = transport._price(Z, C, c2, labels2, tol, P, state)[1:5:3]
        power = D + c2
        np.testing.assert_array_equal(count, (power < power[np.arange(n), labels2][:, None] - 0.875 * tol).sum(1))
        targets = [t for t in seen if t is not None]
        assert len(targets) == 1  # partial
        return set(targets[0]), state

    c2 = c - 3.0  # the common shift
    c2[over] += 1.1 * tol / 16
    c2[under] += 0.9 * tol / 16
    targets, priced = round_(c2, labels, priced)
    assert targets == set(over) and whole == set(over) & set(labels)  # the moved cells' members over all cells
    c3 = c2 + 1.0
    c3[under] += 0.9 * tol / 16  # 1.8 tol / 16 since the full pricing
    c3[over] += 0.9 * tol / 16  # 0.9 tol / 16 since the last round, which priced them
    c3[other] += 0.9 * tol / 16
    labels3 = labels.copy()
    labels3[rng.choice(n, 10, replace=False)] = rng.integers(0, Q, 10)
    targets, priced = round_(c3, labels3, priced)
    assert targets == set(under) and whole == set(under) & set(labels3) | set(labels3[labels3 != labels])


def test_power_assign_and_improving_cells_follow_the_published_rule():
    from probanon.microagg.candidates import improving_cells, power_assign

    rng = np.random.default_rng(11)
    Z = np.round(rng.normal(size=(3000, 3)), 1)  # ties in distance are frequent
    C = np.round(rng.normal(size=(500, 3)), 1)
    c = np.round(rng.uniform(-0.3, 0.0, 500), 2)
    cost = ((Z[:, None, :] - C[None]) ** 2).sum(-1) + c[None, :]
    rule = cost.argmin(1)  # lowest index on ties, like the published rule
    np.testing.assert_array_equal(power_assign(Z, C, c), rule)
    labels = rng.integers(0, 500, 3000)
    wrong = cost[np.arange(3000), labels] > cost.min(1)
    wrong |= (cost[np.arange(3000), labels] == cost.min(1)) & (rule < labels)
    np.testing.assert_array_equal(improving_cells(Z, C, c, labels)[1] > 0, wrong)
    # pricing (tol > 0): the records with a cell cheaper by more than tol, how many such cells,
    # the P cheapest of them, and for those records the P + 1 cheapest cells; brute force over
    # the dense matrix, also with offsets spread wider than the cells (the filter's h < 0 case)
    for spread in (1.0, 30.0):
        c2 = c * spread
        cost2 = ((Z[:, None, :] - C[None]) ** 2).sum(-1) + c2[None, :]
        own = cost2[np.arange(3000), labels]
        gain = cost2 < own[:, None] - 0.05
        cells, count, around = improving_cells(Z, C, c2, labels, 0.05, 3, near=True)
        np.testing.assert_array_equal(count, gain.sum(1))
        for i in np.flatnonzero(count > 0):
            found = cells[i][cells[i] >= 0]
            assert set(found) <= set(np.flatnonzero(gain[i])) and found.size == min(3, gain[i].sum())
            assert np.sort(cost2[i, found]).tolist() == np.sort(cost2[i, gain[i]])[: found.size].tolist()
            assert cost2[i, around[i]].max() <= np.sort(cost2[i])[3] + 1e-12
        assert (around[count == 0] == -1).all()


def test_pooled_cells_are_the_candidates_of_the_cells_members_by_brute_force():
    from probanon.microagg.candidates import pooled_cells

    rng = np.random.default_rng(12)
    n, Q, L = 2500, 60, 4
    Z = np.round(rng.normal(size=(n, 2)), 1)  # ties in cost: the order within a pool matters
    C = np.round(rng.normal(size=(Q, 2)), 1)
    c = np.round(rng.uniform(-0.3, 0.0, Q), 2)
    labels = rng.integers(0, Q, n)
    near = np.where(rng.random((n, 5)) < 0.8, rng.integers(0, Q, (n, 5)), -1)
    got = pooled_cells(Z, C, c, labels, near, L)
    cost = ((Z[:, None, :] - C[None]) ** 2).sum(-1) + c[None, :]
    for a in range(Q):
        pool = sorted({a} | set(near[labels == a][near[labels == a] >= 0].tolist()))
        for i in np.flatnonzero(labels == a):
            keys = [(-np.inf if q == a else cost[i, q], rank) for rank, q in enumerate(pool)]
            want = [pool[r] for _, r in sorted(keys)[:L]]  # stable: the lower cell id first on ties
            assert got[i, :len(want)].tolist() == want and (got[i, len(want):] == -1).all()


def test_pcl_memory_stays_linear_under_an_address_space_limit(tmp_path):
    # n = 60,000, k = 3: a dense n x |Q| float64 matrix would need 9.6 GB; the fit runs in a
    # subprocess whose address space is limited to 3 GB more than it holds after imports
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import resource, numpy as np
        from probanon.microagg import PCL
        X = np.random.default_rng(0).normal(size=(60_000, 3))
        PCL(3, random_state=0, kicks=0).fit(X[:3000])  # compile the kernels before the limit
        with open("/proc/self/status") as fh:
            vm = [int(line.split()[1]) * 1024 for line in fh if line.startswith("VmSize:")][0]
        resource.setrlimit(resource.RLIMIT_AS, (vm + 3 * 2**30, resource.RLIM_INFINITY))
        p = PCL(3, random_state=0, kicks=0).fit(X)
        print(int(np.bincount(p.labels_).min()), p.records_settled_)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["3", "0"]


def test_local_search_never_increases_sse_and_keeps_sizes():
    rng = np.random.default_rng(1)
    for _ in range(5):
        Z = rng.normal(size=(120, 3))
        start = MDAV(4).fit(Z).labels_
        out = local_search(Z, start, 4)
        assert np.bincount(out).min() >= 4 and len(np.unique(out)) == len(np.unique(start))
        assert sse(Z, out) <= sse(Z, start) + 1e-9


def test_pcl_beats_mdav_and_publishes_its_partition():
    Z = np.random.default_rng(2).normal(size=(300, 3))
    m, p = MDAV(5).fit(Z), PCL(5).fit(Z)
    assert np.bincount(p.labels_).min() >= 5
    assert sse(Z, p.labels_) < sse(Z, m.labels_)
    np.testing.assert_array_equal(p.function_.assign(Z), p.labels_)
    assert p.records_settled_ == 0  # distinct records: PCL's own partition is published
    np.testing.assert_allclose(p.fit_transform(Z), p.centroids_[p.labels_])


def test_locality_groups_records_by_cell_in_spatial_order_and_pcl_maps_labels_back():
    from scipy.spatial import cKDTree

    from probanon.microagg.pcl import _locality

    rng = np.random.default_rng(4)
    Z = rng.normal(size=(600, 3))
    labels = rng.permutation(np.repeat(np.arange(120), 5))
    perm, renumbered = _locality(Z, labels)
    assert sorted(perm.tolist()) == list(range(600))
    assert (np.diff(renumbered) >= 0).all() and renumbered[0] == 0 and renumbered[-1] == 119  # cells in runs
    # the same partition, cells renumbered in the leaf order of a k-d tree over the cell means
    means = np.array([Z[labels == q].mean(0) for q in range(120)])
    leaf = cKDTree(means, leafsize=8).indices
    np.testing.assert_array_equal(labels[perm], leaf[renumbered])
    for q in range(120):  # records of a cell keep their input order
        rows = perm[renumbered == q]
        assert (np.diff(rows) > 0).all() and (labels[rows] == leaf[q]).all()
    # PCL works on the permuted records and returns labels in the input order: the published
    # function assigns each input record its own label, every cell holds >= k records
    X = rng.normal(size=(400, 4))
    p = PCL(4, random_state=0, kicks=50).fit(X)
    np.testing.assert_array_equal(p.function_.assign(X), p.labels_)
    assert p.records_settled_ == 0 and np.bincount(p.labels_).min() >= 4


@pytest.mark.parametrize("d, expected", [(1, 1 - 2 / math.pi), (2, 1 - 1 / math.pi)])
def test_two_cells_of_a_gaussian(d, expected):
    # NOTES.md §3: |Q| = 2 equal cells of a standard Gaussian have D = 1 - 2/pi (d = 1) and
    # 1 - 1/pi (d = 2, rho = 0), D = SSE / (n d)
    n = 4000
    Z = np.random.default_rng(3).normal(size=(n, d))
    p = PCL(n // 2).fit(Z)
    D = sse(Z, p.labels_) / (n * d)
    assert np.bincount(p.labels_).min() >= n // 2
    assert D == pytest.approx(expected, abs=0.02)  # sampling error at n = 4000 is ~0.005


def test_large_cells_use_levenberg_marquardt_offsets():
    # k >= 256: offsets by LM (Appendix A), exact sizes by shortest paths, strict offsets
    Z = np.random.default_rng(4).normal(size=(8192, 2))
    p, m = PCL(1024).fit(Z), MDAV(1024).fit(Z)
    assert (np.bincount(p.labels_) == 1024).all()
    np.testing.assert_array_equal(p.function_.assign(Z), p.labels_)
    assert sse(Z, p.labels_) < 0.95 * sse(Z, m.labels_)  # the paper reports ~16% at |Q| = 16


def test_iterated_local_search_never_increases_sse_keeps_sizes_and_is_seeded():
    rng = np.random.default_rng(5)
    Z = rng.normal(size=(400, 3))
    start = local_search(Z, MDAV(5).fit(Z).labels_, 5)
    a = iterated_local_search(Z, start, 5, 2000, np.random.default_rng(7))
    b = iterated_local_search(Z, start, 5, 2000, np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert np.bincount(a).min() >= 5 and len(np.unique(a)) == len(np.unique(start))
    assert sse(Z, a) < sse(Z, start)  # the kicks escape the local minimum of the moves


FILL_CASES = [(seed, 9, 3, "brute force") for seed in range(5)] + [(seed, 400, 8, "HiGHS") for seed in range(3)]


@pytest.mark.parametrize("seed, n, Q, reference", FILL_CASES)
def test_fill_deficits_reaches_the_optimal_exact_sizes(seed, n, Q, reference):
    # the nearest-centre assignment is optimal for its own sizes; successive shortest paths
    # must end at the optimum with every cell of exactly n/Q: the brute-force one (n = 9,
    # |Q| = 3) or HiGHS's transportation LP (n = 400, |Q| = 8: points move along chains of cells)
    rng = np.random.default_rng(seed)
    Z, C = rng.normal(size=(n, 2)), rng.normal(size=(Q, 2)) * (0.3 if Q == 3 else 0.8)
    D = ((Z[:, None, :] - C[None]) ** 2).sum(-1)
    labels, offsets = fill_deficits(D, D.argmin(1), np.full(Q, n // Q), np.zeros(Q))
    assert (np.bincount(labels, minlength=Q) == n // Q).all()
    best = brute_best(Z, C, n // Q) if reference == "brute force" else highs_best(Z, C, n // Q)
    assert D[np.arange(n), labels].sum() == pytest.approx(best, rel=1e-12 if reference == "brute force" else 1e-9)
    # the returned offsets are potentials of the labels: no point prefers another cell
    cost = D + offsets[None, :]
    assert (cost[np.arange(n), labels] <= cost.min(1) + 1e-12).all()


def test_strict_offsets_cancel_an_improving_exchange_and_reproduce_the_labels():
    rng = np.random.default_rng(8)
    Z = rng.normal(size=(60, 2))
    C = np.array([[-1.0, 0.0], [1.0, 0.0], [0.0, 1.5]])
    r = transport_assign(Z, C, 20)
    D = ((Z[:, None, :] - C[None]) ** 2).sum(-1)
    worse = r.labels.copy()
    i, j = np.flatnonzero(worse == 0)[0], np.flatnonzero(worse == 1)[0]
    worse[i], worse[j] = 1, 0  # a swap that raises the cost: a negative exchange cycle
    assert D[np.arange(60), worse].sum() > r.cost
    labels, offsets = strict_offsets(Z, C, worse, r.offsets)
    np.testing.assert_array_equal(np.bincount(labels, minlength=3), np.bincount(worse, minlength=3))
    assert D[np.arange(60), labels].sum() == pytest.approx(r.cost, rel=1e-12)
    cost = D + offsets[None, :]
    np.testing.assert_array_equal(cost.argmin(1), labels)
    margin = np.sort(cost, 1)[:, 1] - cost[np.arange(60), labels]
    assert margin.min() > 0  # strict: no ties left for rounding to decide


def test_pcl_is_seeded_and_checks_its_parameters():
    Z = np.random.default_rng(9).normal(size=(200, 2))
    np.testing.assert_array_equal(PCL(4, random_state=3).fit(Z).labels_, PCL(4, random_state=3).fit(Z).labels_)
    for bad in (dict(speed=2.0), dict(speed=0.0), dict(kicks=-1), dict(kicks=1.5), dict(init="random")):
        with pytest.raises(ParameterError):
            PCL(4, **bad).fit(Z)


def il(X, labels):
    """IL = 100 SSE/SST on z-scored data (population sd), by its own formula."""
    Z = (X - X.mean(0)) / X.std(0)
    return 100 * sse(Z, labels) / ((Z - Z.mean(0)) ** 2).sum()


# issue 4: PCL at most these IL (and never worse than MDAV) at k = 3, 5, 10
CASC_TARGETS = {"census": (5.45, 8.30, 12.10), "tarragona": (16.50, 21.90, 30.50), "eia": (0.55, 1.20, 2.10)}


@pytest.mark.parametrize("name", sorted(CASC_TARGETS))
def test_casc_information_loss_targets(name, request):
    X = request.getfixturevalue(name)
    duplicated = pd.DataFrame(X).duplicated(keep=False).to_numpy()
    for k, target in zip((3, 5, 10), CASC_TARGETS[name]):
        p = PCL(k, random_state=0).fit(X)
        assert np.bincount(p.labels_).min() >= k
        ours, mdav = il(X, p.labels_), il(X, MDAV(k).fit(X).labels_)
        assert round(ours, 2) <= target and ours <= mdav, (name, k, ours, mdav)
        # the published function reproduces labels_, identical records included (issue 39.1:
        # the diagram is settled on the records where the optimum split them)
        np.testing.assert_array_equal(p.function_.assign(X), p.labels_)
        assert duplicated.any() or p.records_settled_ == 0


def test_principal_bisection_gives_exact_sizes_and_cuts_along_the_long_axis():
    from probanon.microagg.bisection import principal_bisection

    rng = np.random.default_rng(10)
    # 1-D: the cells are the consecutive runs of the sorted values, of the requested sizes
    x = rng.normal(size=50)
    sizes = [7, 7, 7, 7, 7, 15]
    labels = principal_bisection(x[:, None], sizes)
    np.testing.assert_array_equal(np.bincount(labels), sizes)
    runs = labels[np.argsort(x)]
    assert (np.diff(runs) != 0).sum() == len(sizes) - 1  # each cell one interval
    # 2-D, long along x: the first cut is x at the 60% quantile (cells 0-2 against 3-4)
    Z = rng.normal(size=(1000, 2)) * [10.0, 1.0]
    labels = principal_bisection(Z, [200] * 5)
    np.testing.assert_array_equal(np.bincount(labels), [200] * 5)
    left = np.isin(labels, [0, 1, 2])
    assert Z[left, 0].max() < Z[~left, 0].min() or Z[~left, 0].max() < Z[left, 0].min()
    assert left.sum() == 600
    with pytest.raises(ValueError):
        principal_bisection(Z, [500, 400])


def test_pcl_keeps_the_better_of_its_starts():
    Z = np.random.default_rng(11).normal(size=(8192, 2)) @ [[1.0, 0.5], [0.0, 0.8]]
    many = ["mdav", "pca"] + ["k-means++"] * KMEANS_PLUSPLUS_STARTS
    fits = {name: PCL(512, init=init, random_state=3).fit(Z)
            for name, init in (("mdav", "mdav"), ("pca", "pca"), ("auto", "auto"), ("many", many))}
    assert fits["mdav"].start_ == "mdav" and fits["pca"].start_ == "pca"
    S = (Z - Z.mean(0)) / Z.std(0)  # PCL compares its starts on z-scores
    costs = {name: sse(S, f.labels_) for name, f in fits.items()}
    assert costs["auto"] <= min(costs["mdav"], costs["pca"]) * (1 + 1e-12)
    # "auto" for large cells is MDAV, bisection and the k-means++ starts, seeded by random_state
    np.testing.assert_array_equal(fits["many"].labels_, fits["auto"].labels_)
    assert fits["auto"].start_ == fits["many"].start_
    np.testing.assert_array_equal(PCL(512, random_state=3).fit(Z).labels_, fits["auto"].labels_)
    for f in fits.values():
        assert (np.bincount(f.labels_) == 512).all()
        np.testing.assert_array_equal(f.function_.assign(Z), f.labels_)
    # k-means++ alone: exact sizes, named as the start
    kpp = PCL(512, init=["k-means++"] * 3, random_state=3).fit(Z)
    assert kpp.start_ == "k-means++" and (np.bincount(kpp.labels_) == 512).all()
    # small cells start from MDAV alone, and k-means++ is refused there
    assert PCL(5, init="auto").fit(Z[:300]).start_ == "mdav"
    for bad in ("kmeans", [], ["mdav", "x"], 3):
        with pytest.raises(ParameterError):
            PCL(512, init=bad).fit(Z)
    with pytest.raises(ParameterError, match="at least 256"):
        PCL(5, init="k-means++").fit(Z[:300])


def test_kmeans_plusplus_seeding():
    # Q distinct tuples, each repeated: a drawn tuple's copies have D = 0, so Q draws take
    # every tuple once, whatever the seed
    rng = np.random.default_rng(4)
    tuples = rng.normal(size=(7, 3))
    Z = np.repeat(tuples, 50, axis=0)
    for seed in range(5):
        C = kmeans_plusplus(Z, 7, np.random.default_rng(seed))
        assert sorted(map(tuple, C)) == sorted(map(tuple, tuples))
    # two clusters far apart: the second centre lies in the other cluster with probability
    # sum of D^2 there / sum of D^2 (D to the first centre) = 1 - 1e-8 or so: always here
    Z = np.r_[rng.normal(size=(100, 2)), rng.normal(size=(100, 2)) + 1e4]
    for seed in range(20):
        C = kmeans_plusplus(Z, 2, np.random.default_rng(seed))
        assert (C[:, 0] > 5e3).sum() == 1
    np.testing.assert_array_equal(kmeans_plusplus(Z, 2, np.random.default_rng(1)),
                                  kmeans_plusplus(Z, 2, np.random.default_rng(1)))


def test_published_power_rule_with_many_cells_goes_through_the_tree_bit_for_bit():
    from probanon.data import Standardizer
    from probanon.microagg.function import MicroaggregationFunction
    from probanon.microagg.rule_kernels import TREE_MIN_CELLS
    from probanon.microagg.rules import PowerDiagram

    rng = np.random.default_rng(12)
    Q = TREE_MIN_CELLS + 52
    C, c = np.round(rng.normal(size=(Q, 2)), 2), np.round(rng.uniform(-0.05, 0.0, Q), 3)
    Z = np.round(rng.normal(size=(6000, 2)), 2)  # exact ties are frequent on this grid
    std = Standardizer(mean_=np.zeros(2), scale_=np.ones(2))  # identity: Z is already standardised
    f = MicroaggregationFunction(standardizer=std, centroids=C, sizes=np.ones(Q, int),
                                 rule=PowerDiagram(centers=C, offsets=c))
    cost = ((Z[:, None, :] - C[None]) ** 2).sum(-1) + c[None, :]
    np.testing.assert_array_equal(f.assign(Z), cost.argmin(1))


def test_free_sizes_start_from_the_fixed_size_result_and_never_end_above_it(tarragona, monkeypatch):
    # up to FROM_FIXED_MAX cells the free-size kicks start from the partition that free_sizes=False
    # publishes (same seed), so the free-size IL is never higher. On tarragona at k = 10 (seed 0)
    # the last exact assignment lowers the fixed-size SSE after the kicks by 0.2%: when the
    # free-size kicks started from the kicks' result, the free-size IL was the higher one
    from probanon.metrics import information_loss
    from probanon.microagg import pcl as pcl_module

    X, k, seed = tarragona, 10, 0
    fixed = PCL(k, random_state=seed, free_sizes=False).fit(X).labels_
    starts = []
    real = pcl_module.iterated_local_search

    def spy(Z, labels, *args, **kwargs):
        if kwargs.get("free_sizes"):
            starts.append(((Z - pcl_module.group_means(Z, labels, labels.max() + 1)[labels]) ** 2).sum())
        return real(Z, labels, *args, **kwargs)

    monkeypatch.setattr(pcl_module, "iterated_local_search", spy)
    free = PCL(k, random_state=seed).fit(X).labels_

    def il(labels):
        return information_loss(X, pd.DataFrame(X).groupby(labels).transform("mean").to_numpy())

    assert len(starts) == 1 and starts[0] == pytest.approx(il(fixed) / 100 * X.size, rel=1e-9)
    assert il(free) <= il(fixed) * (1 + 1e-12)


def test_pricing_with_a_margin_lists_the_cells_within_it_after_the_improving_ones():
    from probanon.microagg.candidates import improving_cells

    rng = np.random.default_rng(13)
    Z = np.round(rng.normal(size=(2500, 3)), 1)  # ties in cost
    C = np.round(rng.normal(size=(300, 3)), 1)
    c = np.round(rng.uniform(-0.3, 0.0, 300), 2)
    labels = rng.integers(0, 300, 2500)
    cost = ((Z[:, None, :] - C[None]) ** 2).sum(-1) + c[None, :]
    own = cost[np.arange(2500), labels]
    other = np.arange(300)[None, :] != labels[:, None]
    for tol, margin in ((0.05, 0.2), (0.0, 0.3)):
        gain = other & ((cost < own[:, None] - tol) | ((tol == 0) & (cost == own[:, None]) &
                                                         (np.arange(300)[None, :] < labels[:, None])))
        near = other & (gain | (cost < own[:, None] + margin))
        close = np.full(2500, -7, np.int64)
        cells, count = improving_cells(Z, C, c, labels, tol, 3, margin=margin, close=close)
        np.testing.assert_array_equal(count, gain.sum(1))
        np.testing.assert_array_equal(close, near.sum(1))
        for i in np.flatnonzero(close > 0):
            found = cells[i][cells[i] >= 0]
            assert found.size == min(3, near[i].sum()) and near[i, found].all()
            assert np.sort(cost[i, found]).tolist() == np.sort(cost[i, near[i]])[: found.size].tolist()
        assert (cells[close == 0] == -1).all()


@pytest.mark.parametrize("margin", [None, 5e-3])
def test_the_transport_certifies_its_margin_for_every_pair_outside_the_candidates(monkeypatch, margin):
    # few first candidates, so column generation runs several (chained) pricing rounds; the
    # dense matrix at the returned offsets: every pair outside the candidates is above the
    # record's own cost by more than the certified margin (with a wide MARGIN, many pairs are
    # within it and must have been added)
    from probanon.microagg import transport

    if margin is not None:
        monkeypatch.setattr(transport, "MARGIN", margin)
    rng = np.random.default_rng(14)
    n, Q = 3000, 600
    Z, C = rng.normal(size=(n, 3)), rng.normal(size=(Q, 3))
    r = transport_assign(Z, C, 5, candidates=2, pricing=16)
    D = ((Z[:, None, :] - C[None]) ** 2).sum(-1) + r.offsets[None, :]
    slack = D - D[np.arange(n), r.labels][:, None]
    slack[np.arange(n)[:, None], np.where(r.candidates >= 0, r.candidates, r.labels[:, None])] = np.inf
    top = (D - r.offsets[None, :])[np.arange(n)[:, None], np.maximum(r.candidates, 0)].max()
    assert 0 < r.margin <= transport.MARGIN * top  # the largest candidate cost of the first rounds is lower
    assert slack.min() > r.margin
    if margin is not None:  # pairs within the wide margin exist, and were added as candidates
        assert (D - D[np.arange(n), r.labels][:, None] < r.margin).sum() - n > 1000


def test_strict_offsets_on_a_certified_margin_skip_the_scan_and_agree_with_it(monkeypatch):
    # on the transport's margin, the strict offsets need no scan over all cells: the same
    # labels and offsets as with the scan, and the published rule (dense argmin, lowest index
    # on ties) reproduces the labels but for split twins; a margin the offsets' moves exceed
    # gets the scan
    from probanon.microagg import candidates, potentials

    rng = np.random.default_rng(15)
    n, Q = 2000, 400
    Z, C = np.round(rng.normal(size=(n, 3)), 2), rng.normal(size=(Q, 3))
    Z[1::7] = Z[::7][: Z[1::7].shape[0]]  # identical twins, split between cells where the optimum does
    r = transport_assign(Z, C, 5, candidates=3, pricing=8)
    assert r.margin > 0
    scans = []

    def spy(*args, **kwargs):
        scans.append(1)
        return candidates.improving_cells(*args, **kwargs)

    monkeypatch.setattr(potentials, "improving_cells", spy)
    labels, offsets = strict_offsets(Z, C, r.labels, r.offsets, near=r.candidates, margin=r.margin)
    assert not scans
    labels0, offsets0 = strict_offsets(Z, C, r.labels, r.offsets, near=r.candidates)
    assert scans
    np.testing.assert_array_equal(labels, labels0)
    np.testing.assert_array_equal(offsets, offsets0)
    cost = ((Z[:, None, :] - C[None]) ** 2).sum(-1) + offsets[None, :]
    twins = potentials.split_duplicates(Z, labels)
    assert twins.any()
    np.testing.assert_array_equal(cost.argmin(1)[~twins], labels[~twins])
    scans.clear()  # a margin smaller than the offsets' moves (a true claim): the scan runs
    assert strict_offsets(Z, C, r.labels, r.offsets, near=r.candidates, margin=1e-300)[0].tolist() == labels.tolist()
    assert scans


# ---------------------------------------------------------------- degenerate data (issue 39)


def assert_valid_partition(model, X, k):
    """Every record labelled, every cell of at least k records, and the published function
    gives each fitted record its label."""
    labels = np.asarray(model.labels_)
    assert labels.shape == (len(X),) and labels.min() >= 0
    assert np.bincount(labels).min() >= k
    np.testing.assert_array_equal(model.function_.assign(X), labels)


def test_transport_where_every_candidate_costs_zero():
    # identical records at their cells' means: the flow's integer costs were scaled by
    # 2^39 / 1e-300 = inf, 0 * inf = NaN (OR-Tools BAD_COST_RANGE); then, with a pricing
    # tolerance of 1e-10 * 0 = 0 (the published rule's tie-break), every record tied with a
    # lower cell "improved" on its own, round after round ("pricing did not end in 50 rounds")
    tuples = np.array([[0.0, 0.0], [1.0, 0.0]])
    Z, own = np.repeat(tuples, 3, axis=0), np.repeat([0, 1], 3)
    for exact in (False, True):
        r = transport_assign(Z, tuples, 3, near=own[:, None], exact=exact)
        np.testing.assert_array_equal(r.labels, own)  # the only partition of cost 0
        assert r.cost == 0.0
    r = transport_assign(np.zeros((6, 2)), np.zeros((2, 2)), 3)
    assert np.bincount(r.labels).tolist() == [3, 3] and r.cost == 0.0
    np.testing.assert_array_equal(r.offsets, [0.0, 0.0])  # no cell is cheaper than another
    tiny = tuples * 1e-155  # the other cell costs 1e-310 (subnormal): 2^39 / 1e-310 overflowed too
    r = transport_assign(np.repeat(tiny, 3, axis=0), tiny, 3, exact=False)
    np.testing.assert_array_equal(r.labels, own)


def test_identical_records_make_one_cell():
    X = np.full((60, 2), 3.0)
    model = PCL(3, random_state=0, kicks=20).fit(X)
    assert model.sizes_.tolist() == [60]
    np.testing.assert_array_equal(model.fit_transform(X), X)


@pytest.mark.parametrize("block_size", [0, 40])
def test_few_distinct_tuples_give_cells_of_identical_tuples(block_size):
    # four tuples, each with at least k copies: cells of identical tuples (SSE 0, the optimum)
    # exist; the blocked fit failed ("pricing did not end in 50 rounds")
    rng = np.random.default_rng(0)
    X = np.repeat(rng.normal(size=(4, 3)), [100, 30, 20, 14], axis=0)[rng.permutation(164)]
    model = PCL(3, random_state=1, kicks=20, block_size=block_size, n_jobs=1)
    released = model.fit_transform(X)
    assert_valid_partition(model, X, 3)
    np.testing.assert_allclose(released, X, rtol=0, atol=1e-14)


@pytest.mark.parametrize("scale", [1e-200, 1e-300])
def test_magnitudes_the_standardiser_treats_as_constant(scale):
    # sd <= 1e-12: the columns are only centred, and their squared differences (1e-400 and
    # below) underflow to 0: every candidate costs 0 (the fit failed as above)
    X = np.random.default_rng(0).integers(0, 4, (60, 2)) * scale
    model = PCL(3, random_state=0, kicks=20).fit(X)
    np.testing.assert_array_equal(model.standardizer_.scale_, [1.0, 1.0])
    assert_valid_partition(model, X, 3)


def test_a_constant_column_changes_nothing_even_at_a_last_bit_offset():
    # 7e300 in every record: its mean rounds (52 records) and the centred column holds 1.2e285
    # in every record, whose squares overflowed (inf SSE tolerance: no local search)
    rng = np.random.default_rng(1)
    varying = rng.normal(size=(52, 2))
    X = np.column_stack([np.full(52, 7e300), varying])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = PCL(3, random_state=0).fit(X)
    assert model.standardizer_.transform(X)[0, 0] != 0.0  # the offset this test is about
    alone = PCL(3, random_state=0).fit(varying)
    np.testing.assert_array_equal(model.labels_, alone.labels_)
    np.testing.assert_array_equal(model.centroids_[:, 1:], alone.centroids_)
    np.testing.assert_array_equal(model.centroids_[:, 0], 7e300)


_PCL_ON_GRIDS = """
import json
import numpy as np
from probanon.microagg import PCL
cases = [(np.array([[1, 0], [0, 0], [0, 1], [0, 0], [1, 1], [0, 1]], float), 2, 140, 0),
         (np.array([[1, 2], [0, 3], [1, 0], [1, 1], [1, 1], [1, 1], [0, 0], [2, 3], [1, 3], [1, 1], [1, 1], [0, 1],
                    [1, 1], [3, 3], [3, 1], [3, 3], [2, 2], [2, 1], [1, 2], [0, 2], [3, 1], [0, 0], [2, 0], [2, 3],
                    [0, 3], [1, 3], [0, 1], [3, 1], [3, 2]], float), 6, 1, 0)]
for seed in range(60):  # small integer grids: many duplicates; some blocked
    rng = np.random.default_rng(seed)
    n, d = int(rng.integers(3, 80)), int(rng.integers(1, 4))
    k = min(n, int(rng.integers(2, max(3, min(n, 12)))))
    X = rng.integers(0, int(rng.integers(1, 5)), (n, d)).astype(float)
    block = int(rng.integers(2 * k, n // 2 + 1)) if n >= 4 * k and rng.random() < 0.3 else 0
    cases.append((X, k, seed, block))
out = []
for number, (X, k, seed, block) in enumerate(cases):
    try:
        model = PCL(k, random_state=seed, kicks=20, block_size=block, n_jobs=1).fit(X)
    except Exception as exc:
        out.append([number, type(exc).__name__, str(exc)])
        continue
    labels = np.asarray(model.labels_)
    if labels.shape != (len(X),) or np.bincount(labels).min() < k:
        out.append([number, "cells", np.bincount(labels).tolist()])
    elif not np.array_equal(model.function_.assign(X), labels):
        out.append([number, "function"])
print(json.dumps(out))
"""


def test_pcl_stays_in_bounds_on_small_grids_with_duplicates(boundscheck_cache):
    # bounds-checked kernels in a fresh interpreter: the first case (PCL(2, random_state=140))
    # and the second indexed out of bounds in the free-size kicks before the fix, as did 5 of
    # the 60 grids; 3 others failed with "pricing did not end in 50 rounds"
    from helpers import run_bounds_checked

    assert run_bounds_checked(_PCL_ON_GRIDS, boundscheck_cache) == []

"""PCL building blocks (paper 3): exact size-constrained assignment, exact-gain local search,
and the PCL estimator on the sanity values of NOTES.md §3."""

import itertools
import math

import numpy as np
import pytest

from probanon.microagg import MDAV, PCL
from probanon.microagg.local_search import local_search
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
    assert p.function_mismatches_ == 0
    np.testing.assert_allclose(p.fit_transform(Z), p.centroids_[p.labels_])


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
    # k >= 256: offsets by LM (Appendix A), boundary LP, ties settled: exact sizes, exact function
    Z = np.random.default_rng(4).normal(size=(8192, 2))
    p, m = PCL(1024).fit(Z), MDAV(1024).fit(Z)
    assert (np.bincount(p.labels_) == 1024).all()
    np.testing.assert_array_equal(p.function_.assign(Z), p.labels_)
    assert sse(Z, p.labels_) < 0.95 * sse(Z, m.labels_)  # the paper reports ~16% at |Q| = 16

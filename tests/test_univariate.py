"""Optimal univariate microaggregation (Hansen & Mukherjee 2003) against independent exact
references: brute force over every partition (tiny n), a plain O(n^2) dynamic program over
all contiguous partitions with groups >= k, and a memoised recursion on the CASC columns."""

import functools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from probanon.errors import ParameterError
from probanon.microagg.univariate import optimal_univariate

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "casc"
EIA = ["RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES", "INDREVENUE", "INDSALES",
       "OTHREVENUE", "OTHRSALES", "TOTREVENUE", "TOTSALES"]


def group_sse(values):
    values = np.asarray(values, dtype=float)
    return float(((values - values.mean()) ** 2).sum())


def sse(z, labels):
    return sum(group_sse(z[labels == g]) for g in np.unique(labels))


def partitions(items):
    """Every set partition of ``items`` (a list)."""
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in partitions(rest):
        for i in range(len(part)):
            yield part[:i] + [[first] + part[i]] + part[i + 1:]
        yield [[first]] + part


def brute_force(z, k):
    return min(sum(group_sse(z[g]) for g in part) for part in partitions(list(range(len(z))))
               if min(len(g) for g in part) >= k)


def contiguous_dp(z, k):
    """O(n^2): best[e] = min over every start s with e - s >= k of best[s] + SSE(sorted[s:e])
    (no upper bound on the group size)."""
    v = np.sort(z)
    best = [0.0] + [np.inf] * len(v)
    for e in range(k, len(v) + 1):
        for s in range(0, e - k + 1):
            best[e] = min(best[e], best[s] + group_sse(v[s:e]))
    return best[-1]


def recursive_optimum(z, k):
    """Memoised recursion from the left: cost(i) = best cost of sorted values i..n-1, first
    group i..i+s-1 with k <= s <= 2k - 1; infinite when fewer than k values are left."""
    v = np.sort(z).tolist()
    n = len(v)

    @functools.lru_cache(maxsize=None)
    def cost(i):
        if i == n:
            return 0.0
        options = [np.inf]
        for s in range(k, min(2 * k, n - i + 1)):
            seg = v[i:i + s]
            m = sum(seg) / s
            options.append(sum((x - m) ** 2 for x in seg) + cost(i + s))
        return min(options)

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 4 * n + 100))
    try:
        for i in range(n, -1, -1):  # fill from the right: shallow recursion
            cost(i)
        return cost(0)
    finally:
        sys.setrecursionlimit(limit)


def check_labels(z, labels, k):
    assert labels.shape == z.shape
    sizes = np.bincount(labels)
    assert sizes.min() >= k and sizes.max() <= max(2 * k - 1, len(z) if len(z) < 2 * k else 0)
    order = np.argsort(z, kind="stable")
    assert (np.diff(labels[order]) >= 0).all()  # contiguous runs in sorted order, numbered upwards


@pytest.mark.parametrize("seed", range(12))
def test_equals_brute_force_over_all_partitions(seed):
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(4, 9)), int(rng.integers(2, 4))
    z = rng.integers(0, 6, n).astype(float) if seed % 2 else rng.normal(size=n) ** 3
    labels = optimal_univariate(z, k)
    check_labels(z, labels, k)
    assert sse(z, labels) == pytest.approx(brute_force(z, k), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("seed", range(20))
def test_equals_the_quadratic_dynamic_program(seed):
    rng = np.random.default_rng(100 + seed)
    n, k = int(rng.integers(1, 60)), int(rng.integers(1, 8))
    k = min(k, n)
    z = rng.lognormal(size=n) if seed % 3 else rng.integers(0, 4, n).astype(float)
    labels = optimal_univariate(z, k)
    check_labels(z, labels, k)
    assert sse(z, labels) == pytest.approx(contiguous_dp(z, k), rel=1e-10, abs=1e-12)


def casc_columns():
    census = pd.read_csv(DATA / "census.csv")
    eia = pd.read_csv(DATA / "eia.csv")
    return [("census", c, census[c].to_numpy(float)) for c in census.columns] + \
           [("eia", c, eia[c].to_numpy(float)) for c in EIA]


@pytest.mark.parametrize("k", [3, 5, 10])
def test_reaches_the_optimum_on_every_census_and_eia_column(k):
    for name, column, x in casc_columns():
        z = (x - x.mean()) / x.std()
        labels = optimal_univariate(z, k)
        check_labels(z, labels, k)
        assert sse(z, labels) == pytest.approx(recursive_optimum(z, k), rel=1e-9), (name, column)


def test_same_input_same_labels_and_ties():
    z = np.array([1.0, 1.0, 1.0, 1.0, 6.0])  # the optimum splits the ties: {1,1,1} {1,6}
    labels = optimal_univariate(z, 2)
    assert sse(z, labels) == pytest.approx(brute_force(z, 2))
    np.testing.assert_array_equal(labels, [0, 0, 0, 1, 1])  # stable sort: the last 1 joins the 6
    np.testing.assert_array_equal(labels, optimal_univariate(z.copy(), 2))


@pytest.mark.parametrize("z, k", [(np.zeros((3, 2)), 1), ([1.0, np.nan], 1), ([1.0, 2.0], 3), ([1.0], 0)])
def test_bad_input(z, k):
    with pytest.raises(ParameterError):
        optimal_univariate(z, k)

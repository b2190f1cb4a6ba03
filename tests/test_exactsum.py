"""Exactly rounded sums in pieces (probanon.exactsum): equal to math.fsum, whatever the split."""

import math

import numpy as np

from probanon.data import Standardizer
from probanon.exactsum import ExactSum, exact_sums


def _wild(rng, n, c):
    """Values over the whole float64 range, signs mixed, subnormals in column 0."""
    X = rng.normal(size=(n, c)) * 10.0 ** rng.integers(-300, 300, size=(n, c))
    X[:, 0] = 5e-324 * rng.integers(-9, 9, n)
    return X


def test_sums_equal_fsum_in_any_pieces():
    rng = np.random.default_rng(0)
    for _ in range(50):
        n = int(rng.integers(1, 200))
        X = _wild(rng, n, 3)
        want = [math.fsum(X[:, j]) for j in range(3)]
        np.testing.assert_array_equal(exact_sums(X), want)
        cuts = np.sort(rng.integers(0, n + 1, 3))
        pieces = [ExactSum.of(p) for p in np.split(X[rng.permutation(n)], cuts)]
        total = pieces[0]
        for p in pieces[1:]:
            total = total + p
        np.testing.assert_array_equal(total.values(), want)


def test_cancellation_is_exact():
    # 1e308 + 1 - 1e308: 0 in float arithmetic, 1 exactly
    np.testing.assert_array_equal(exact_sums(np.array([1e308, 1.0, -1e308, 2.0**-1074])), [1.0])


def test_products_match_fsum_of_rounded_products():
    rng = np.random.default_rng(1)
    Z = rng.normal(size=(300, 4)) * [1, 1e-8, 1e8, 3]
    rows = np.sort(rng.choice(300, 170, replace=False))
    want = [math.fsum(Z[rows, a] * Z[rows, b]) for a in range(4) for b in range(a, 4)]
    np.testing.assert_array_equal(ExactSum.of_products(Z, rows).values(), want)


def test_standardizer_is_the_fsum_formula():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(500, 3)) * [1e-3, 1.0, 1e6] + [5.0, -2.0, 1e9]
    w = rng.uniform(0.5, 2.0, 500)
    for weights in (None, w):
        ww = np.ones(500) if weights is None else w
        total = math.fsum(ww)
        mean = np.array([math.fsum(ww * X[:, j]) / total for j in range(3)])
        unit = np.abs(X - mean).max(axis=0)
        dev = (X - mean) / unit
        scale = unit * np.sqrt([math.fsum(ww * dev[:, j] ** 2) / total for j in range(3)])
        s = Standardizer.fit(X, weights=weights)
        np.testing.assert_array_equal(s.mean_, mean)
        np.testing.assert_array_equal(s.scale_, scale)


def test_nan_and_infinity_are_refused():
    import pytest

    from probanon.errors import InputError

    for bad in (np.inf, -np.inf, np.nan):
        with pytest.raises(InputError, match="not all finite"):
            exact_sums(np.array([1.0, bad]))
        with pytest.raises(InputError, match="not all finite"):
            ExactSum.of_products(np.array([[1.0, bad]]), np.array([0]))

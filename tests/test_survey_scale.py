"""The per-record survey design's numba kernel against a straightforward reference, and a
design + verify + assign round trip at 20,000 records (issue 16.3)."""

import json
import math

import numpy as np
import pytest

from probanon.data import Standardizer
from probanon.errors import SpecificationError
from probanon.survey.anonymity import cells_log_failure, log_cell_failure
from probanon.survey.design import DesignError, _per_record_partition, design
from probanon.survey.spec import assign, build_spec, digest, verify


def brute_qbar(pis, k):
    """P{0 < K < k} for independent Bernoulli(pi_j), by convolution of the full pmf."""
    pmf = np.array([1.0])
    for p in pis:
        pmf = np.convolve(pmf, [1 - p, p])
    return float(pmf[1:k].sum())


def sqdist(Z, rows, point):
    out = np.zeros(rows.size)
    for j in range(Z.shape[1]):
        t = Z[rows, j] - point[j]
        out += t * t
    return out


def reference_partition(Z, pis, k, risk):
    """The rules of probanon.survey.design written out plainly, O(n^2) per cell."""
    log_pbar = math.log(risk)

    def safe(rows):
        return rows.size >= k and log_cell_failure(k, pis[np.sort(rows)]) <= log_pbar

    def grow(rows, dist):
        start = k
        while True:
            n = next((m for m in range(max(k, start), rows.size + 1)
                      if log_cell_failure(k, pis[rows[:m]]) <= log_pbar), -1)
            if n < 0:
                return -1
            end = n
            while end < rows.size and dist[end] == dist[n - 1] and np.array_equal(Z[rows[end]], Z[rows[n - 1]]):
                end += 1
            if end == n or log_cell_failure(k, pis[rows[:end]]) <= log_pbar:
                return end
            start = end + 1

    n, d = Z.shape
    labels = np.full(n, -1)
    refs, rad2, bnds = [], [], []
    remaining = np.arange(n)
    sums = np.zeros(d)
    for i in range(n):
        sums += Z[i]
    if not safe(remaining):
        raise DesignError("not one safe cell")
    use_r, ref = True, -1
    while True:
        if use_r:
            ref = remaining[np.argmax(sqdist(Z, remaining, sums / remaining.size))]
        dist = sqdist(Z, remaining, Z[ref])
        order = np.lexsort([remaining] + [Z[remaining, j] for j in range(d - 1, -1, -1)] + [dist])
        rows, dist = remaining[order], dist[order]
        size = grow(rows, dist)
        if size < 0 or not safe(rows[size:]):
            break
        labels[rows[:size]] = len(refs)
        refs.append(ref), rad2.append(dist[size - 1]), bnds.append(rows[size - 1])
        for i in rows[:size]:
            sums -= Z[i]
        remaining = np.sort(rows[size:])
        if use_r:
            ref = remaining[np.argmax(sqdist(Z, remaining, Z[ref]))]
        use_r = not use_r
    labels[remaining] = len(refs)
    refs.append(-1), rad2.append(np.inf), bnds.append(-1)
    return labels, np.array(refs), np.array(rad2), np.array(bnds)


def random_case(seed):
    r = np.random.default_rng(seed)
    n, d = int(r.integers(15, 300)), int(r.integers(1, 5))
    X = r.normal(size=(n, d))
    if seed % 3 == 0:
        X = np.round(2 * X)  # copies of tuples and ties of distance
    k = int(r.integers(1, 6))
    risk = float(r.choice([0.2, 0.05, 0.01, 1e-3]))
    pis = r.uniform(r.uniform(0.05, 0.8), 1.0, n)  # low pi: cells far larger than the kernel's first guess
    return np.ascontiguousarray(Standardizer.fit(X).transform(X)), pis, k, risk


@pytest.mark.parametrize("seed", range(40))
def test_kernel_equals_the_reference(seed):
    Z, pis, k, risk = random_case(seed)
    try:
        expected = reference_partition(Z, pis, k, risk)
    except DesignError:
        with pytest.raises(DesignError):
            _per_record_partition(Z, pis, k, risk)
        return
    got = _per_record_partition(Z, pis, k, risk)
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)


def test_kernel_equals_the_reference_with_parallel_passes_and_compactions():
    # 21,000 records: parallel passes (>= 20,000 remaining records), compactions, and the
    # Chernoff bound deciding that the rest is safe
    r = np.random.default_rng(5)
    Z = np.ascontiguousarray(r.normal(size=(21000, 3)))
    pis = r.uniform(0.3, 0.9, Z.shape[0])
    expected = reference_partition(Z, pis, 8, 1e-3)
    got = _per_record_partition(Z, pis, 8, 1e-3)
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)


def test_cells_log_failure_matches_brute_force():
    r = np.random.default_rng(2)
    sizes = r.integers(1, 30, 50)
    pis = r.uniform(0.05, 1.0, sizes.sum())
    got = np.exp(cells_log_failure(4, pis, sizes))
    cells = np.split(pis, np.cumsum(sizes)[:-1])
    np.testing.assert_allclose(got, [brute_qbar(c, 4) for c in cells], rtol=1e-10, atol=1e-300)


@pytest.fixture(scope="module")
def frame20k():
    r = np.random.default_rng(7)
    return r.normal(size=(20000, 4)) * [1.0, 5.0, 0.1, 30.0], r.uniform(0.3, 0.9, 20000)


def test_per_record_round_trip_at_20000(frame20k):
    X, pis = frame20k
    d = design(X, 6, pis, 1e-3)
    assert d.sizes.sum() == 20000 and d.sizes.min() >= 6
    for c in range(0, len(d.sizes), 97):  # every cell is checked below; brute force on a sample
        assert brute_qbar(pis[d.labels == c], 6) == pytest.approx(d.cell_failures[c], rel=1e-9)
    # every cell safe at its real size (the pi_j of its members)
    order = np.argsort(d.labels, kind="stable")
    assert (np.exp(cells_log_failure(6, pis[order], d.sizes)) <= 1e-3).all()
    spec = json.loads(json.dumps(build_spec(d)))
    v = verify(spec, expected_digest=spec["digest"])
    cells, centroids = assign(v, X)
    np.testing.assert_array_equal(cells, d.labels)
    m = d.labels == 3
    np.testing.assert_allclose(centroids[np.flatnonzero(m)[0]], (pis[m, None] * X[m]).sum(0) / pis[m].sum())
    # same input, same partition (the design has no random step)
    np.testing.assert_array_equal(design(X, 6, pis, 1e-3).labels, d.labels)
    # a forger who recomputes the digest: a participation value changed, or one removed
    text = json.dumps(spec)
    low = json.loads(text)
    low["cells"][5]["participation"][0] = 0.05
    low["digest"] = digest(low)
    with pytest.raises(SpecificationError, match="cell 5: declared failure"):
        verify(low)
    short = json.loads(text)
    short["cells"][9]["participation"].pop()
    short["digest"] = digest(short)
    size = int(d.sizes[9])
    with pytest.raises(SpecificationError, match=f"cell 9: {size - 1} participation values for {size} records"):
        verify(short)


def test_constant_round_trip_at_20000(frame20k):
    X, _ = frame20k
    d = design(X, 6, 0.6, 1e-3)
    spec = json.loads(json.dumps(build_spec(d)))
    v = verify(spec)
    np.testing.assert_array_equal(assign(v, X)[0], d.labels)
    sizes = np.asarray(d.sizes)
    for size in np.unique(sizes):
        assert brute_qbar(np.full(size, 0.6), 6) <= 1e-3

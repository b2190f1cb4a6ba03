"""Set-valued core of paper 5: CSR data, supports, uniform l-itemset samplers, sample sizes."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import chisquare

from probanon.errors import InputError, ParameterError, ProbanonError
from probanon.setvalued import (
    enumerate_itemsets,
    estimate_uniqueness,
    from_iterables,
    generalized_support,
    geweke_z,
    identity_index,
    itemset_support,
    load_records,
    part_index,
    read_fimi,
    read_pairs,
    sample_itemsets,
    sample_size,
    sample_size_plan,
    uniqueness_from_supports,
    uniqueness_sample_size,
)
from probanon.setvalued.data import by_decreasing_size, size_limits
from probanon.setvalued.enumeration import enumerate_distinct
from probanon.setvalued.pairs import build_pair_index, itemset_count, no_pair_index


def random_records(seed, n=40, m=9, max_size=5, repeats=True):
    rng = np.random.default_rng(seed)
    recs = [sorted(rng.choice(m, size=rng.integers(1, max_size + 1), replace=False).tolist()) for _ in range(n)]
    if repeats:  # duplicate some records so supports are uneven (1 .. several)
        recs += [recs[i] for i in rng.integers(0, n, size=n // 2)]
    return recs


def one_line(exc_info):
    msg = str(exc_info.value)
    assert msg and "\n" not in msg
    return msg


# ---------------------------------------------------------------- data (item 1)

def test_iterables_build_both_csr_directions():
    recs = [["b", "a", "a"], ["c"], ["a", "c", "d"]]
    d = from_iterables(recs)
    assert list(d.item_labels) == ["a", "b", "c", "d"]
    assert d.record_items.dtype == np.int32 and d.item_records.dtype == np.int32
    assert [d.item_labels[d.record(u)].tolist() for u in range(3)] == [["a", "b"], ["c"], ["a", "c", "d"]]
    assert [d.records_of(i).tolist() for i in range(4)] == [[0, 2], [0], [1, 2], [2]]
    assert d.record_sizes.tolist() == [2, 1, 3] and d.item_counts.tolist() == [2, 1, 2, 1]


def test_fimi_and_pairs_agree(tmp_path):
    recs = random_records(3, repeats=False)
    fimi = tmp_path / "d.dat"
    fimi.write_text("\n".join("  ".join(str(10 * i) for i in r[::-1]) for r in recs))  # no final newline
    d = read_fimi(fimi)
    assert d.item_labels.tolist() == sorted({10 * i for r in recs for i in r})  # numeric order
    pairs = pd.DataFrame([(f"u{u}", 10 * i) for u, r in enumerate(recs) for i in r + r[:1]],
                         columns=["user", "tower"])  # a duplicated pair
    for name, writer in (("p.csv", pairs.to_csv), ("p.parquet", pairs.to_parquet)):
        writer(tmp_path / name, index=False)
        p = load_records(tmp_path / name)
        assert p.record_labels.tolist() == [f"u{u}" for u in range(len(recs))]
        for arr in ("record_indptr", "record_items", "item_indptr", "item_records"):
            np.testing.assert_array_equal(getattr(p, arr), getattr(d, arr))


def test_memory_at_paper_scale_is_well_under_one_gigabyte():
    d = from_iterables(random_records(1))
    # 4 bytes per entry in each direction plus int64 index arrays
    assert d.nbytes == 8 * d.n_entries + 8 * (d.n_records + 1) + 8 * (d.n_items + 1)
    users, entries = 4_427_486, round(4_427_486 * 11.42)
    assert 8 * entries + 8 * (users + 1) + 8 * 1304 < 0.5e9


def test_empty_records_and_bad_files_are_one_line_errors(tmp_path):
    with pytest.raises(InputError) as e:
        from_iterables([["a"], [], ["b"]])
    assert "record 1 is empty" in one_line(e)
    f = tmp_path / "e.dat"
    f.write_text("1 2\n\n3\n")
    with pytest.raises(InputError) as e:
        read_fimi(f)
    assert "line 2" in one_line(e)
    (tmp_path / "empty.dat").write_text("")
    with pytest.raises(InputError) as e:
        read_fimi(tmp_path / "empty.dat")
    one_line(e)
    with pytest.raises(InputError) as e:
        from_iterables([])
    one_line(e)
    pd.DataFrame({"r": [1, 2], "i": ["a", None]}).to_csv(tmp_path / "na.csv", index=False)
    with pytest.raises(InputError) as e:
        read_pairs(tmp_path / "na.csv")
    one_line(e)


# ---------------------------------------------------------------- support (item 2)

def brute_support(recs, parts):
    return sum(all(set(r) & set(p) for p in parts) for r in recs)


@pytest.mark.parametrize("seed", range(4))
def test_generalized_support_matches_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    recs = random_records(seed, n=60, m=12, max_size=6)
    d = from_iterables(recs)
    labels = d.item_labels.tolist()
    partition = rng.integers(0, 6, size=d.n_items)
    index = part_index(d, partition)
    members = [[labels[i] for i in np.flatnonzero(partition == p)] for p in range(index.n_parts)]
    for _ in range(60):
        size = int(rng.integers(1, 4))
        parts = rng.choice(index.n_parts, size=size, replace=False)
        exact = brute_support(recs, [members[p] for p in parts])
        assert generalized_support(index, parts) == exact
        for k in (1, 2, 5):
            assert generalized_support(index, parts, k=k) == min(exact, k)
    batch = np.array([rng.choice(index.n_parts, size=2, replace=False) for _ in range(20)])
    assert generalized_support(index, batch).tolist() == [
        brute_support(recs, [members[p] for p in row]) for row in batch]


def test_plain_itemset_support_and_identity_partition():
    recs = random_records(7, n=80, m=10)
    d = from_iterables(recs)
    ident = identity_index(d)
    same = part_index(d, np.arange(d.n_items))
    np.testing.assert_array_equal(same.records, ident.records)
    X, supp = enumerate_itemsets(d, 2)
    assert supp.tolist() == [brute_support(recs, [[a], [b]]) for a, b in d.item_labels[X].tolist()]
    assert itemset_support(d, X).tolist() == supp.tolist()
    assert itemset_support(d, X, k=2).tolist() == np.minimum(supp, 2).tolist()


def test_merging_parts_never_lowers_support():
    recs = random_records(11, n=50, m=10)
    d = from_iterables(recs)
    fine = np.arange(d.n_items) // 2
    coarse = fine // 2
    fi, co = part_index(d, fine), part_index(d, coarse)
    X, _ = enumerate_itemsets(d, 2)
    for x in X:
        pf, pc = np.unique(fine[x]), np.unique(coarse[x])
        assert generalized_support(co, pc) >= generalized_support(fi, pf)


def test_bad_partitions_and_itemsets():
    d = from_iterables([[1, 2], [2, 3]])
    with pytest.raises(InputError):
        part_index(d, [0, 1])
    idx = part_index(d, [0, 0, 1])
    with pytest.raises(InputError):
        generalized_support(idx, [0, 0])
    with pytest.raises(InputError):
        generalized_support(idx, [2])
    with pytest.raises(ParameterError):
        generalized_support(idx, [0], k=0)


# ---------------------------------------------------------------- sampling (item 3)

@pytest.mark.parametrize("method,l,thin,budget,by_size", [
    ("rejection", 2, 1, None, False), ("rejection", 3, 1, None, False), ("mcmc", 2, 3, None, False),
    ("rejection", 2, 1, 40, False), ("rejection", 3, 1, 40, False), ("rejection", 4, 1, 40, False),
    ("mcmc", 3, 3, 40, False), ("rejection", 3, 1, None, True), ("rejection", 3, 1, 40, True)])
def test_samplers_are_uniform_over_distinct_itemsets(method, l, thin, budget, by_size):
    """budget: with a pair index whose lists hold only the rarer pairs (both counting paths);
    by_size: records renumbered by decreasing size (the walks stop at the size limits)."""
    recs = random_records(5, n=30, m=8, max_size=5)
    d = from_iterables(recs)
    if by_size:
        d = by_decreasing_size(d)
    X, supp = enumerate_itemsets(d, l)
    assert supp.max() >= 4  # the proposal is far from uniform: proportional to the support
    pairs = None if budget is None else build_pair_index(d, budget=budget)
    if pairs is not None:
        assert 0 < len(pairs.records) <= budget and pairs.threshold < pairs.counts.max()
    s = sample_itemsets(d, l, 30 * len(X), method=method, random_state=42, thin=thin, pairs=pairs)
    # supports reported with the sample are exact
    assert s.supports.tolist() == itemset_support(d, s.itemsets).tolist()
    keys = {tuple(x): j for j, x in enumerate(X.tolist())}
    counts = np.bincount([keys[tuple(x)] for x in s.itemsets.tolist()], minlength=len(X))
    assert chisquare(counts).pvalue > 1e-3
    # the uncorrected proposal (weight ∝ support) is rejected by the same test
    expected = supp / supp.sum() * counts.sum()
    assert chisquare(counts, expected).pvalue < 1e-6


def test_records_by_decreasing_size():
    recs = random_records(4, n=50, m=10, max_size=6)
    d = from_iterables(recs)
    s = by_decreasing_size(d)
    sizes = s.record_sizes
    assert (np.diff(sizes) <= 0).all() and sorted(sizes.tolist()) == sorted(d.record_sizes.tolist())
    assert sorted(tuple(s.record(u).tolist()) for u in range(s.n_records)) == \
        sorted(tuple(d.record(u).tolist()) for u in range(d.n_records))
    for i in range(s.n_items):  # item lists: sorted, and exactly the records holding the item
        assert s.records_of(i).tolist() == [u for u in range(s.n_records) if i in s.record(u)]
    limits = size_limits(s)
    assert limits.tolist() == [int((sizes >= j).sum()) for j in range(sizes.max() + 2)]
    assert (size_limits(d) == d.n_records).all()  # unsorted: no limit


def test_pair_index_counts_match_the_item_lists():
    recs = random_records(8, n=200, m=15, max_size=9)
    d = from_iterables(recs)
    pairs = build_pair_index(d, budget=300)
    rng = np.random.default_rng(0)
    args = (d.record_indptr, d.record_items, d.item_indptr, d.item_records)
    for l in (1, 2, 3, 4, 6):
        for _ in range(40):
            x = np.sort(rng.choice(d.n_items, size=l, replace=False)).astype(np.int32)
            exact = brute_support(recs, [[d.item_labels[i]] for i in x])
            for arrays in (pairs.arrays(), no_pair_index()):
                assert itemset_count(*args, arrays, x, 0) == exact
                assert itemset_count(*args, arrays, x, 3) == min(exact, 3)


@pytest.mark.parametrize("l", [1, 2, 3, 4])
def test_enumeration_matches_itertools(l):
    recs = random_records(12, n=120, m=14, max_size=8)
    d = from_iterables(recs)
    counts = {}
    for r in recs:
        for x in itertools.combinations(sorted(set(r)), l):
            counts[x] = counts.get(x, 0) + 1
    keys = sorted(counts)
    got = enumerate_distinct(d, l)
    assert got.n_distinct == len(keys)
    assert [tuple(d.item_labels[row].tolist()) for row in got.itemsets] == keys  # labels 0..m-1 sort alike
    assert got.supports.tolist() == [counts[x] for x in keys]
    rare = enumerate_distinct(d, l, max_support=2)
    assert rare.n_distinct == len(keys)
    assert [tuple(d.item_labels[row].tolist()) for row in rare.itemsets] == [x for x in keys if counts[x] <= 2]


def test_single_items_are_drawn_uniformly_from_the_items_present():
    d = from_iterables([[0, 1]] * 50 + [[2]] + [[3, 4]] * 3)
    s = sample_itemsets(d, 1, 5000, random_state=1)
    counts = np.bincount(s.itemsets[:, 0], minlength=5)
    assert chisquare(counts).pvalue > 1e-3  # item 0 is in 50 records, item 2 in one: same share
    assert s.supports.tolist() == d.item_counts[s.itemsets[:, 0]].tolist()


def test_support_cap_changes_only_the_reported_supports():
    d = from_iterables(random_records(6, n=60, m=9))
    pairs = build_pair_index(d, budget=60)
    for l in (2, 3, 4):
        full = sample_itemsets(d, l, 400, random_state=4, pairs=pairs)
        capped = sample_itemsets(d, l, 400, random_state=4, pairs=pairs, support_cap=2)
        np.testing.assert_array_equal(full.itemsets, capped.itemsets)
        assert capped.supports.tolist() == np.minimum(itemset_support(d, full.itemsets), 2).tolist()


def test_samplers_are_seeded():
    d = from_iterables(random_records(2))
    for method in ("rejection", "mcmc"):
        a = sample_itemsets(d, 2, 500, method=method, random_state=9)
        b = sample_itemsets(d, 2, 500, method=method, random_state=9)
        np.testing.assert_array_equal(a.itemsets, b.itemsets)
    mc = sample_itemsets(d, 2, 500, method="mcmc", random_state=9)
    assert mc.burn_in > 0 and abs(mc.geweke_z) <= 1


def test_geweke_diagnostic():
    rng = np.random.default_rng(0)
    assert abs(geweke_z(rng.normal(size=20000))) < 3
    assert geweke_z(np.linspace(0, 1, 1000)) < -10  # early mean below late mean
    assert geweke_z(np.ones(100)) == 0.0


def test_sampling_errors():
    d = from_iterables([[1, 2], [2, 3, 4]])
    with pytest.raises(ParameterError) as e:
        sample_itemsets(d, 4, 10)
    assert "largest has 3" in one_line(e)
    with pytest.raises(ParameterError):
        sample_itemsets(d, 0, 10)
    with pytest.raises(ParameterError):
        sample_itemsets(d, 2, 10, method="gibbs")


# ---------------------------------------------------------------- sample sizes (items 4, 6)

def test_gamma_matches_the_paper():
    assert sample_size(0.99).gamma == 45_845
    assert sample_size(0.999).gamma == 5_866_617
    assert sample_size(1).gamma is None


def test_gamma_is_the_constrained_minimum():
    from scipy.optimize import minimize_scalar

    for sigma, bound, num in ((0.9, "two-sided", 2.0), (0.95, "one-sided", 1.0)):
        s = sample_size(sigma, bound)
        f = lambda d, num=num, sigma=sigma: math.log(num / d) / (2 * (1 - sigma / (1 - d)) ** 2)
        best = minimize_scalar(f, bounds=(1e-12, 1 - sigma - 1e-12), method="bounded",
                               options={"xatol": 1e-13}).fun
        assert s.gamma == math.ceil(best)
        assert (1 - s.epsilon) * (1 - s.delta) == pytest.approx(sigma)
    assert sample_size(0.99, "one-sided").gamma < sample_size(0.99).gamma


def test_per_level_plan():
    plan = sample_size_plan([1, 1, 1, 1, 0.99, 0.99], 20)
    assert plan.levels.tolist() == [1, 2, 3, 4, 5, 6]
    assert plan.gamma == [None] * 4 + [45_845] * 2 and plan.k.tolist() == [20] * 6
    plan = sample_size_plan(0.999, [10, 20], bound="one-sided")
    assert plan.gamma == [sample_size(0.999, "one-sided").gamma] * 2
    assert sample_size_plan(0.99, 10, m=3).gamma == [45_845] * 3


def test_uniqueness_sample_size_and_estimate():
    assert uniqueness_sample_size(0.01, 0.01) == 26_492
    recs = random_records(8, n=60, m=10)
    d = from_iterables(recs)
    _, supp = enumerate_itemsets(d, 3)
    truth = np.mean(supp == 1)
    est = estimate_uniqueness(d, 3, epsilon=0.02, delta=0.01, random_state=4)
    assert est.n_samples == uniqueness_sample_size(0.02, 0.01)
    assert est.lower <= truth <= est.upper
    assert est.epsilon == pytest.approx(math.sqrt(math.log(200) / (2 * est.n_samples)))
    u = uniqueness_from_supports([1, 1, 2, 5], 2)
    assert (u.n_unique, u.fraction) == (2, 0.5)


@pytest.mark.parametrize("call", [
    lambda: sample_size(0), lambda: sample_size(1.5), lambda: sample_size(-0.1),
    lambda: sample_size(True), lambda: sample_size(0.9, "three-sided"),
    lambda: sample_size_plan(0.99, 10, m=0), lambda: sample_size_plan([0.9, 1.2], 10),
    lambda: sample_size_plan([0.9, 0.9], [10, 10, 10]), lambda: sample_size_plan(0.9, 0),
    lambda: uniqueness_sample_size(0, 0.1), lambda: uniqueness_sample_size(0.1, 1),
])
def test_parameter_errors_are_one_line(call):
    with pytest.raises(ProbanonError) as e:
        call()
    one_line(e)

"""Algorithm 2 (sigma-k^m-anonymity by global recoding), the independent checker and the
``probanon km anonymize / check / uniqueness`` commands (paper 5, issue 7)."""

import itertools
import json

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main
from probanon.errors import InputError, ParameterError
from probanon.setvalued import from_iterables, read_fimi
from probanon.setvalued.cdr import generate_cdr, write_cdr
from probanon.setvalued.check import check_release
from probanon.setvalued.constraints import (
    constraints_from_coordinates,
    constraints_from_hierarchy,
    partition_error,
)
from probanon.setvalued.generalize import anonymize, release_records

# Table I of the paper
TABLE_I = [["LA"], ["LA", "Seattle"], ["New York", "Boston"], ["New York", "Boston"],
           ["LA", "Seattle", "New York"], ["LA", "Seattle", "New York"],
           ["LA", "Seattle", "New York", "Boston"]]
# Figure 1: a two-level hierarchy (the paper's labels West/East are swapped in Example 1)
FIGURE_1 = pd.DataFrame({"child": ["LA", "Seattle", "New York", "Boston", "West", "East"],
                         "parent": ["West", "West", "East", "East", "USA", "USA"]})
CITIES = {"LA": (-118.24, 34.05), "Seattle": (-122.33, 47.61), "New York": (-74.01, 40.71),
          "Boston": (-71.06, 42.36)}  # longitude, latitude


def _supports(records, partition, l):
    """Plain-set supports of every distinct l-itemset of ``records`` generalized by ``partition``."""
    gen = [{partition[i] for i in r} for r in records]
    distinct = {x for r in records for x in itertools.combinations(sorted(r), l)}
    return {x: sum({partition[i] for i in x} <= g for g in gen) for x in distinct}


# ------------------------------------------------------------------------------------- Example 1

def test_checker_on_table_i_identity():
    # Section III: {LA, Boston} and {Seattle, Boston} occur only in record 7; the other four
    # distinct 2-itemsets occur at least twice; every city occurs at least twice.
    ident = {c: i for i, c in enumerate(CITIES)}
    res = check_release(TABLE_I, ident, 2, 2)
    assert res.n_itemsets == (4, 6)
    assert res.n_anonymous == (4, 4)
    assert res.fractions == (1.0, pytest.approx(4 / 6))
    assert not res.satisfies(0.99)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_example_1_boston_merged_with_new_york(seed):
    data = from_iterables(TABLE_I)
    c = constraints_from_hierarchy(FIGURE_1, items=[str(x) for x in data.item_labels], coordinates=CITIES)
    res = anonymize(data, 2, 2, 0.99, c, random_state=seed)
    p = res.mapping()
    assert p["Boston"] == p["New York"]
    assert len({p["LA"], p["Seattle"], p["New York"]}) == 3
    assert res.n_parts == 3
    assert [lv.n_merges for lv in res.levels] == [0, 1]
    chk = check_release(TABLE_I, p, 2, 2)
    assert chk.fractions == (1.0, 1.0)  # "is 2^2-anonym"
    # err of R_1 (Boston, New York merged) by the formula: both at distance |B - NY| / 2 from the
    # centre, weights 3 (Boston) and 5 (New York) occurrences out of 17 (sum of |D_u|)
    d = np.hypot(*(np.subtract(CITIES["Boston"], CITIES["New York"]))) / 2
    assert res.err == pytest.approx((3 + 5) * d / 17)


def test_example_1_deterministic_phase():
    data = from_iterables(TABLE_I)
    c = constraints_from_hierarchy(FIGURE_1, items=[str(x) for x in data.item_labels], coordinates=CITIES)
    res = anonymize(data, 2, 2, 1.0, c, random_state=3)
    assert [lv.method for lv in res.levels] == ["exact", "exact"]
    assert check_release(TABLE_I, res.mapping(), 2, 2).fractions == (1.0, 1.0)
    assert res.mapping()["Boston"] == res.mapping()["New York"]


# ----------------------------------------------------------------------------- three data sets

@pytest.fixture(scope="module")
def cdr_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("cdr")
    cdr = generate_cdr(400, towers=16, size_mean=3.0, size_sd=2.0, size_max=8, random_state=11)
    write_cdr(cdr, d)
    # hierarchy: 16 towers -> 4 districts (by id) -> 2 halves -> city
    rows = [(str(t), f"d{t // 4}") for t in range(16)] + [(f"d{j}", f"h{j // 2}") for j in range(4)]
    rows += [("h0", "city"), ("h1", "city")]
    pd.DataFrame(rows, columns=["child", "parent"]).to_csv(d / "hierarchy.csv", index=False)
    # adjacency: a path 0-1-...-15 plus a few chords
    edges = [(t, t + 1) for t in range(15)] + [(0, 8), (3, 12), (5, 10)]
    pd.DataFrame(edges, columns=["a", "b"]).to_csv(d / "adjacency.csv", index=False)
    return d


@pytest.mark.parametrize("kind,k,m,sigma,extra", [
    ("hierarchy", 8, 3, 0.9, []),
    ("adjacency", 10, 3, 0.95, ["--runs", "2"]),
    ("coordinates", 6, 4, 0.9, ["--exact-upto", "2"]),
])
def test_every_cli_release_passes_the_checker(cdr_dir, tmp_path, capsys, kind, k, m, sigma, extra):
    src = {"hierarchy": "hierarchy.csv", "adjacency": "adjacency.csv", "coordinates": "towers.csv"}[kind]
    out = tmp_path / "release.txt"
    records = cdr_dir / "records.txt"
    argv = ["km", "anonymize", str(records), "-k", str(k), "-m", str(m), "--sigma", str(sigma),
            f"--{kind}", str(cdr_dir / src), "--seed", "4", "-o", str(out), "--quiet", "--keep-order", *extra]
    assert main(argv) == 0
    spec = json.loads((tmp_path / "release.txt.partition.json").read_text())
    assert set(spec) >= {"partition", "err", "parts"}
    assert spec["parts"] == len(set(spec["partition"].values()))
    capsys.readouterr()
    assert main(["km", "check", str(records), str(tmp_path / "release.txt.partition.json"),
                 "-k", str(k), "-m", str(m), "--sigma", str(sigma), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    fr = [lv["fraction"] for lv in report["levels"]]
    assert len(fr) == m and min(fr) >= sigma and report["satisfied"]
    if kind == "coordinates":  # deterministic phase: all 1- and 2-itemsets k-anonymous
        assert fr[0] == 1.0 and fr[1] == 1.0
    # the identity release is not sigma-anonymous here, so the test can fail
    ident = {str(i): i for i in range(16)}
    raw = [line.split() for line in records.read_text().splitlines()]
    assert not check_release(raw, ident, k, m).satisfies(sigma)
    # OUT holds each record with its items replaced by part ids
    released = [sorted(map(int, line.split())) for line in out.read_text().splitlines()]
    assert released == [sorted({spec["partition"][i] for i in r}) for r in raw]


def test_contiguity_and_error_of_coordinates_release(cdr_dir):
    data = read_fimi(cdr_dir / "records.txt")
    c = constraints_from_coordinates(cdr_dir / "towers.csv")
    res = anonymize(data, 6, 3, 0.9, c, random_state=5)
    from probanon.setvalued.constraints import is_contiguous

    for p in range(res.n_parts):
        assert is_contiguous(np.flatnonzero(res.partition == p), c)
    occ = np.zeros(c.n_items)
    occ[[int(x) for x in data.item_labels]] = data.item_counts
    assert res.err == pytest.approx(partition_error(res.partition, occ, c))


# ---------------------------------------------------------------------------------- monotonicity

def test_merges_never_lower_a_support(cdr_dir):
    data = read_fimi(cdr_dir / "records.txt")
    c = constraints_from_coordinates(cdr_dir / "towers.csv")
    res = anonymize(data, 10, 2, 0.95, c, random_state=7)
    assert len(res.merges) >= 3
    records = [line.split() for line in (cdr_dir / "records.txt").read_text().splitlines()]
    labels = [str(x) for x in c.items]
    part = {lab: i for i, lab in enumerate(labels)}
    before = {l: _supports(records, part, l) for l in (1, 2)}
    for new in res.merges:
        rep = part[labels[new[0]]]
        for i in new:
            part[labels[i]] = rep
        after = {l: _supports(records, part, l) for l in (1, 2)}
        for l in (1, 2):
            assert all(after[l][x] >= before[l][x] for x in before[l])
        before = after
    # replaying the merges gives the released partition
    final = {lab: res.mapping()[lab] for lab in labels}
    assert len(set(part.values())) == res.n_parts
    assert all((part[a] == part[b]) == (final[a] == final[b]) for a in labels for b in labels)


# ---------------------------------------------------------------------------------------- seeds

def test_seeds_reproducible(cdr_dir, tmp_path):
    outs = []
    for name in ("a", "b"):
        out = tmp_path / f"{name}.txt"
        assert main(["km", "anonymize", str(cdr_dir / "records.txt"), "-k", "8", "-m", "2", "--sigma", "0.9",
                     "--coordinates", str(cdr_dir / "towers.csv"), "--runs", "2", "--seed", "9",
                     "-o", str(out), "--quiet"]) == 0
        outs.append((out.read_text(), (tmp_path / f"{name}.txt.partition.json").read_text()))
    assert outs[0] == outs[1]
    data = read_fimi(cdr_dir / "records.txt")
    c = constraints_from_coordinates(cdr_dir / "towers.csv")
    r3 = anonymize(data, 8, 2, 0.9, c, runs=3, random_state=1)
    assert r3.err == min(r3.run_errors) and len(r3.run_errors) == 3
    r1 = anonymize(data, 8, 2, 0.9, c, runs=1, random_state=1)
    assert release_records(data, r1) == release_records(data, anonymize(data, 8, 2, 0.9, c, random_state=1))


def test_uniqueness_command(cdr_dir, capsys):
    assert main(["km", "uniqueness", str(cdr_dir / "records.txt"), "-m", "3", "--seed", "2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["levels"]
    assert [r["l"] for r in rows] == [1, 2, 3]
    assert all(r["samples"] == 26492 for r in rows)
    # exact uniqueness by enumeration lies inside the Hoeffding intervals (prob >= .99 each)
    records = [line.split() for line in (cdr_dir / "records.txt").read_text().splitlines()]
    for r in rows:
        counts = {}
        for rec in records:
            for x in itertools.combinations(sorted(rec), r["l"]):
                counts[x] = counts.get(x, 0) + 1
        exact = sum(v == 1 for v in counts.values()) / len(counts)
        assert r["lower"] <= exact <= r["upper"]


# ---------------------------------------------------------------------------------------- errors

@pytest.mark.parametrize("args,message", [
    (["-k", "2", "-m", "0", "--sigma", "0.9"], "expected a positive integer, got 0"),
    (["-k", "2", "-m", "2", "--sigma", "0"], "sigma must be in (0, 1]"),
    (["-k", "2", "-m", "2", "--sigma", "1.5"], "sigma must be in (0, 1]"),
])
def test_cli_errors(tmp_path, capsys, args, message):
    src = tmp_path / "d.txt"
    src.write_text("a b\na b\nb c\n")
    out = tmp_path / "out.txt"
    assert main(["km", "anonymize", str(src), *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == [src]


def test_cli_unknown_item_in_hierarchy(tmp_path, capsys):
    src = tmp_path / "d.txt"
    src.write_text("a b\na b\nb zz\n")
    h = tmp_path / "h.csv"
    h.write_text("child,parent\na,x\nb,x\nx,root\n")
    out = tmp_path / "out.txt"
    assert main(["km", "anonymize", str(src), "-k", "2", "-m", "2", "--sigma", "0.9",
                 "--hierarchy", str(h), "-o", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert "'zz'" in err and len(err.splitlines()) == 1
    assert not out.exists() and not (tmp_path / "out.txt.partition.json").exists()


def test_api_errors():
    data = from_iterables(TABLE_I)
    with pytest.raises(ParameterError, match="m must be"):
        anonymize(data, 2, 0, 0.9)
    with pytest.raises(ParameterError, match="sigma"):
        anonymize(data, 2, 2, 1.2)
    with pytest.raises(ParameterError):
        anonymize(data, 8, 2, 0.9)  # k > n
    with pytest.raises(InputError, match="no part"):
        check_release(TABLE_I, {"LA": 0}, 2, 2)


def test_pass_cache_is_an_exact_set_of_part_tuples():
    from probanon.setvalued.passcache import PassCache, contains, insert

    rng = np.random.default_rng(0)
    cache = PassCache(width=4, capacity=8, max_entries=400)
    seen = set()
    for step in range(600):
        n = int(rng.integers(1, 5))
        parts = np.sort(rng.choice(30, size=n, replace=False)).astype(np.int32)
        key = tuple(parts.tolist())
        assert bool(contains(cache.keys, cache.lens, parts, n)) == (key in seen)
        cache.reserve(1)
        if cache.size == 0:
            seen.clear()  # cleared past max_entries
        added = insert(cache.keys, cache.lens, parts, n)
        assert added == (key not in seen)
        cache.size += added
        seen.add(key)
        assert cache.size == len(seen) and 2 * cache.size <= len(cache.lens)


@pytest.mark.parametrize("runs", [1, 2])
def test_results_for_smaller_m_equal_separate_runs(cdr_dir, runs):
    data = read_fimi(cdr_dir / "records.txt")
    c = constraints_from_coordinates(cdr_dir / "towers.csv")
    both = anonymize(data, 10, 3, 0.95, c, runs=runs, random_state=3, also_m=(2,))
    alone = anonymize(data, 10, 2, 0.95, c, runs=runs, random_state=3)
    early = both.earlier[2]
    assert early.m == 2 and early.err == alone.err and early.seed == alone.seed
    np.testing.assert_array_equal(early.partition, alone.partition)
    assert early.levels == alone.levels and early.run_errors == alone.run_errors
    assert both.n_parts <= early.n_parts  # later levels only merge
    with pytest.raises(ParameterError):
        anonymize(data, 10, 2, 0.95, c, also_m=(2,))


def test_per_level_k_and_sigma(cdr_dir, tmp_path, capsys):
    data = read_fimi(cdr_dir / "records.txt")
    c = constraints_from_coordinates(cdr_dir / "towers.csv")
    res = anonymize(data, [5, 10, 10], 3, [1.0, 0.95, 0.9], c, random_state=2)
    assert [lv.k for lv in res.levels] == [5, 10, 10] and [lv.sigma for lv in res.levels] == [1.0, 0.95, 0.9]
    assert [lv.method for lv in res.levels] == ["exact", "sampled", "sampled"]
    assert res.k == (5, 10, 10) and res.levels[1].gamma > res.levels[2].gamma  # gamma(.95) > gamma(.9)
    records = [line.split() for line in (cdr_dir / "records.txt").read_text().splitlines()]
    for l, k in ((1, 5), (2, 10), (3, 10)):
        assert check_release(records, res.mapping(), k, l).fractions[l - 1] >= res.levels[l - 1].sigma
    # scalars equal to the vectors give the same release
    same = anonymize(data, [10, 10, 10], 3, [0.95, 0.95, 0.95], c, random_state=2)
    scalar = anonymize(data, 10, 3, 0.95, c, random_state=2)
    np.testing.assert_array_equal(same.partition, scalar.partition)
    with pytest.raises(ParameterError):
        anonymize(data, [5, 10], 3, 0.95, c)
    out = tmp_path / "rel.txt"
    assert main(["km", "anonymize", str(cdr_dir / "records.txt"), "-k", "5,10,10", "-m", "3",
                 "--sigma", "1,0.95,0.9", "--coordinates", str(cdr_dir / "towers.csv"), "--seed", "2",
                 "-o", str(out), "--quiet"]) == 0
    spec = json.loads((tmp_path / "rel.txt.partition.json").read_text())
    assert [lv["k"] for lv in spec["levels"]] == [5, 10, 10] and spec["k"] == [5, 10, 10]
    assert main(["km", "anonymize", str(cdr_dir / "records.txt"), "-k", "5,10", "-m", "3",
                 "--sigma", "0.9", "-o", str(tmp_path / "bad.txt"), "--quiet"]) == 2
    assert not (tmp_path / "bad.txt").exists()
    capsys.readouterr()


def test_release_replaces_items_by_their_parts(cdr_dir):
    data = read_fimi(cdr_dir / "records.txt")
    c = constraints_from_coordinates(cdr_dir / "towers.csv")
    res = anonymize(data, 10, 2, 0.95, c, random_state=5)
    part = res.data_partition
    expect = [sorted({int(part[i]) for i in data.record(u)}) for u in range(data.n_records)]
    assert release_records(data, res) == expect
    from probanon.setvalued import release_data

    rel = release_data(data, res)
    for p in range(res.n_parts):
        assert rel.records_of(p).tolist() == [u for u, r in enumerate(expect) if p in r]

"""Attacks on set-valued (k^m) and count ((l, delta)) releases against their claimed bounds.

Expected values come from hand computations on paper 5's Table I, from a brute-force enumeration
with plain Python sets, and from the closed form of the chance that N uniform draws over |S|
values miss one (inclusion-exclusion); never from the code under test. Intervals whose coverage of
an exact value is asserted are at 99.9% (a dozen such checks).
"""

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest

from probanon.attacks import GUARANTEES
from probanon.attacks.linkage import linkage_test
from probanon.attacks.uniqueness import uniqueness_attack
from probanon.cli import main
from probanon.errors import InputError, ParameterError

# paper 5, Table I (New York written NY: FIMI items are separated by spaces)
TABLE_I = [["LA"], ["LA", "Seattle"], ["NY", "Boston"], ["NY", "Boston"], ["LA", "Seattle", "NY"],
           ["LA", "Seattle", "NY"], ["LA", "Seattle", "NY", "Boston"]]
IDENTITY = {"Boston": 0, "LA": 1, "NY": 2, "Seattle": 3}
EXAMPLE_1 = {"Boston": 0, "LA": 1, "NY": 0, "Seattle": 2}  # R_1 of Example 1: Boston merged with New York


def _recode(records, partition):
    return [sorted({partition[i] for i in r}) for r in records]


def _shuffled(released, seed):
    """The release in a random order and link[u] = released position of record u."""
    link = np.random.default_rng(seed).permutation(len(released))
    out = [None] * len(released)
    for u, r in enumerate(released):
        out[link[u]] = r
    return out, link


def _brute(records, partition, m, k):
    """Exact success chances by enumeration (plain sets): (itemset intruder, person intruder,
    share of distinct m-itemsets with >= k holders after recoding)."""
    released = [{partition[i] for i in r} for r in records]

    def holders(x):
        g = {partition[i] for i in x}
        return sum(g <= r for r in released)

    distinct = {frozenset(x) for r in records for x in itertools.combinations(sorted(set(r)), m)}
    supports = {x: holders(x) for x in distinct}
    itemset = sum(1 / s for s in supports.values()) / len(distinct)
    people = [r for r in records if len(set(r)) >= m]
    person = sum(np.mean([1 / supports[frozenset(x)] for x in itertools.combinations(sorted(set(r)), m)])
                 for r in people) / len(people)
    return itemset, person, sum(s >= k for s in supports.values()) / len(distinct)


def _result(report, draw):
    rule = {"itemset": "uniqueness (itemset of B_m)", "person": "uniqueness (a person's items)"}[draw]
    return next(r for r in report.results if r.rule == rule)


def test_table_i_by_hand():
    # identity, 2-itemsets LS 4 holders, NB 3, LN 3, SN 3, LB 1, SB 1:
    # itemset intruder (1/4 + 3/3 + 1 + 1) / 6 = 0.541667; person intruder: records 2..7 average
    # (1/4 + 1/3 + 1/3 + 11/36 + 11/36 + 13/24) / 6 = 0.344907
    # R_1: LS 4, NB -> {W} 5, the four others 3: itemset (1/4 + 1/5 + 4/3) / 6 = 0.297222,
    # person (1/4 + 1/5 + 1/5 + 11/36 + 11/36 + (1/4 + 1/5 + 4/3) / 6) / 6 = 0.259722
    hand = {("identity", "itemset"): 0.541667, ("identity", "person"): 0.344907,
            ("R1", "itemset"): 0.297222, ("R1", "person"): 0.259722}
    for name, partition in (("identity", IDENTITY), ("R1", EXAMPLE_1)):
        for draw in ("itemset", "person"):
            assert _brute(TABLE_I, partition, 2, 2)[draw == "person"] == pytest.approx(hand[name, draw], abs=1e-6)
    # the identity claims 2^2-anonymity with sigma = .99: bound 1 - .99 / 2 = .505, exceeded by the
    # itemset intruder (Definition 1's), not by the person intruder
    report = uniqueness_attack(TABLE_I, _recode(TABLE_I, IDENTITY), IDENTITY, 2, 2, 0.99, runs=3000,
                               confidence=0.999, random_state=1)
    assert report.bound == pytest.approx(0.505)
    for draw in ("itemset", "person"):
        r = _result(report, draw)
        assert r.interval[0] <= hand["identity", draw] <= r.interval[1]
        assert r.trials == 3000 * 6 and r.knows
    assert report.exceeded == ["uniqueness (itemset of B_m)"]
    # R_1 is 2^2-anonymous (sigma = 1): bound 1/2; released in a random order, matched by the link
    released, link = _shuffled(_recode(TABLE_I, EXAMPLE_1), 3)
    report = uniqueness_attack(TABLE_I, released, EXAMPLE_1, 2, 2, 1.0, link=link, runs=3000,
                               confidence=0.999, random_state=2)
    assert report.bound == 0.5 and not report.exceeded
    for draw in ("itemset", "person"):
        r = _result(report, draw)
        assert r.interval[0] <= hand["R1", draw] <= r.interval[1] and r.interval[1] < 0.5


def _zipf_records(n=300, items=40, seed=5):
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, items + 1)
    return [[f"i{x}" for x in sorted(set(rng.choice(items, size=rng.integers(1, 7), p=w / w.sum()).tolist()))]
            for _ in range(n)]


def test_anonymized_release_within_identity_above_brute_force():
    from probanon.setvalued import anonymize, from_iterables

    records = _zipf_records()
    k, sigma, m = 4, 0.9, 2
    result = anonymize(from_iterables(records), k, m, sigma, random_state=0)
    partition = result.mapping()
    itemset, person, fraction = _brute(records, partition, m, k)
    assert fraction >= sigma  # the release satisfies its claim (exactly, not only on the samples)
    bound = 1 - sigma * (1 - 1 / k)
    released, link = _shuffled(_recode(records, partition), 7)
    report = uniqueness_attack(records, released, partition, m, k, sigma, link=link, runs=40,
                               confidence=0.999, random_state=3)
    assert report.bound == pytest.approx(bound) and not report.exceeded
    for draw, exact in (("itemset", itemset), ("person", person)):
        r = _result(report, draw)
        assert r.interval[0] <= exact <= r.interval[1] and r.interval[1] < bound
    # the unprotected release (identity recoding) making the same claim is above the bound
    identity = {i: j for j, i in enumerate(sorted({i for r in records for i in r}))}
    itemset, person, fraction = _brute(records, identity, m, k)
    assert fraction < sigma and itemset > bound
    report = uniqueness_attack(records, _recode(records, identity), identity, m, k, sigma, runs=40,
                               confidence=0.999, random_state=4)
    r = _result(report, "itemset")
    assert r.interval[0] <= itemset <= r.interval[1] and r.lower_exceeds_bound
    assert "uniqueness (itemset of B_m)" in report.exceeded


def test_uniqueness_attack_refuses_bad_inputs():
    released = _recode(TABLE_I, EXAMPLE_1)
    with pytest.raises(InputError, match="released record .* is not original record"):
        uniqueness_attack(TABLE_I, released[::-1], EXAMPLE_1, 2, 2, 1.0)  # wrong order, no link
    with pytest.raises(InputError, match="no part"):
        uniqueness_attack(TABLE_I, released, {"LA": 1}, 2, 2, 1.0)
    with pytest.raises(ParameterError, match="no record has 5 items"):
        uniqueness_attack(TABLE_I, released, EXAMPLE_1, 5, 2, 1.0, levels=5)
    with pytest.raises(ParameterError, match="sigma"):
        uniqueness_attack(TABLE_I, released, EXAMPLE_1, 2, 2, 1.5)
    # knowing more items than the release's m: no bound claimed
    report = uniqueness_attack(TABLE_I, released, EXAMPLE_1, 3, 2, 1.0, levels=2, runs=2, random_state=0)
    assert report.bound is None and not report.exceeded and all(r.bound is None for r in report.results)


def _write_fimi(path, records):
    path.write_text("".join(" ".join(r) + "\n" for r in records))
    return str(path)


def test_cli_km(tmp_path, capsys):
    original = _write_fimi(tmp_path / "table1.txt", TABLE_I)
    out, link = tmp_path / "rel.txt", tmp_path / "link.csv"
    assert main(["km", "anonymize", original, "-k", "2", "-m", "2", "--sigma", "1", "--exact-upto", "2", "--seed",
                 "0", "-o", str(out), "--link", str(link), "--quiet"]) == 0
    capsys.readouterr()
    argv = ["attack", original, str(out), "--mechanism", "km", "--link", str(link), "--runs", "500", "--seed", "1"]
    assert main([*argv, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mechanism"] == "km" and report["bound"] == 0.5 and report["exceeded"] == []
    assert [r["trials"] for r in report["results"]] == [3000, 3000] and all(r["knows"] for r in report["results"])
    assert main(argv + ["--quiet"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Guarantee (km):") and "within the bound" in text and "1 - sigma (1 - 1/k)" in text
    # the unprotected release claiming sigma = .99: exit 1
    spec = {"partition": IDENTITY, "m": 2, "k": 2, "sigma": 0.99}
    ident = _write_fimi(tmp_path / "identity.txt", [[str(p) for p in r] for r in _recode(TABLE_I, IDENTITY)])
    (tmp_path / "identity.txt.partition.json").write_text(json.dumps(spec))
    assert main(["attack", original, ident, "--mechanism", "km", "--by-position", "--runs", "3000", "--seed", "2",
                 "--quiet"]) == 1
    assert "ABOVE the claimed bound: uniqueness (itemset of B_m)" in capsys.readouterr().out
    # bad input: one line, exit 2
    for extra, message in ((["--by-position"], "is not original record"),  # the release is shuffled
                           (["--link", str(link), "--keys", "a"], "--keys does not apply"),
                           (["--link", str(link), "--plan", str(link)], "--plan applies to --mechanism l-delta only")):
        assert main(["attack", original, str(out), "--mechanism", "km", *extra, "--quiet"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


# (l, delta): one class, |S| = 4 uniform values, l = 4: a release of N records is 4-diverse iff
# all 4 values occur, with probability surj(N, 4) / 4^N (inclusion-exclusion); two releases linked
# by the per-class minimum are iff both are.
def _all_four(N):
    return sum((-1) ** i * math.comb(4, i) * (4 - i) ** N for i in range(5)) / 4**N


@pytest.fixture(scope="module")
def four_values():
    from probanon.diversity import distribution_from_array, plan_diversity

    dist = distribution_from_array(np.full((1, 4), 0.25), sensitive_values=["a", "b", "c", "d"])
    plan = plan_diversity(dist, 4, 0.3, t=2)
    # N = ceil(ln(m l / delta) / ln(1 / (1 - p))), p = p_4 = 1/4, m = 1 (Algorithm 1)
    assert plan.n_samples == math.ceil(math.log(4 / 0.3) / math.log(4 / 3)) == 10
    return dist, plan


def _short_releases(count, N, seed):
    rng = np.random.default_rng(seed)
    tables = []
    for _ in range(count):
        c = rng.multinomial(N, [0.25] * 4)
        tables.append(pd.DataFrame({"class": 0, "sensitive": list("abcd"), "count": c})[c > 0])
    return tables


def test_l_delta_linkage_against_theorems_4_4_and_4_5(four_values):
    dist, plan = four_values
    one, two = 1 - _all_four(10), 1 - _all_four(10) ** 2  # 0.219406, 0.390674
    report = linkage_test(plan, dist, runs=4000, confidence=0.999, random_state=0)
    assert report.bound == pytest.approx(0.6) and not report.exceeded
    single, linked = report.results
    assert single.trials == 8000 and linked.trials == 4000
    assert single.bound == 0.3 and linked.bound == pytest.approx(0.6)
    assert single.interval[0] <= one <= single.interval[1] < 0.3
    assert linked.interval[0] <= two <= linked.interval[1] < 0.6
    # releases of 5 records (fewer than the plan's N): 1 - 240/1024 and 1 - (240/1024)^2 fail
    report = linkage_test(plan, None, _short_releases(300, 5, 1), confidence=0.999, random_state=0)
    single, linked = report.results
    assert single.trials == 300 and linked.trials == 150
    assert single.interval[0] <= 1 - _all_four(5) <= single.interval[1]
    assert linked.interval[0] <= 1 - _all_four(5) ** 2 <= linked.interval[1]
    assert report.exceeded == ["one release (given)", "2 linked releases (given)"]
    assert "fewer than N = 10 records" in single.note
    with pytest.raises(InputError, match="class 3 is not one of the plan's 1"):
        linkage_test(plan, None, [pd.DataFrame({"class": [3], "sensitive": ["a"], "count": [2]})])
    with pytest.raises(InputError, match="sensitive value 'e'"):
        linkage_test(plan, None, [pd.DataFrame({"class": [0], "sensitive": ["e"], "count": [2]})])


def test_cli_l_delta(tmp_path, capsys, four_values):
    dist, _ = four_values
    dist_path, plan_path = tmp_path / "dist.csv", tmp_path / "plan.json"
    dist.to_frame().to_csv(dist_path, index=False)
    assert main(["diversity", "plan", "--distribution", str(dist_path), "-l", "4", "--delta", "0.3", "--datasets",
                 "2", "-o", str(plan_path), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["attack", str(dist_path), "--mechanism", "l-delta", "--plan", str(plan_path), "--seed", "1",
                 "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["trials"] for r in report["results"]] == [4000, 2000] and report["exceeded"] == []
    releases = []
    for j, table in enumerate(_short_releases(60, 5, 2)):
        releases.append(str(tmp_path / f"r{j}.csv"))
        table.to_csv(releases[-1], index=False)
    assert main(["attack", str(dist_path), *releases, "--mechanism", "l-delta", "--plan", str(plan_path),
                 "--runs", "500", "--seed", "1"]) == 1
    assert "ABOVE the claimed bound: one release (given), 2 linked releases (given)" in capsys.readouterr().out
    assert main(["attack", str(dist_path), "--mechanism", "l-delta"]) == 2
    assert "needs --plan" in capsys.readouterr().err


def test_guarantees_state_the_bounds():
    assert "1 - sigma (1 - 1/k)" in GUARANTEES["km"].bounded and "uniform" in GUARANTEES["km"].claim
    assert "t delta" in GUARANTEES["l-delta"].bounded and "Theorem 4.5" in GUARANTEES["l-delta"].claim

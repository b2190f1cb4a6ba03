"""Checks of released tables (k, distinct / entropy / recursive l, t-closeness), the linkage
attack, its worst case (Proposition 3.1) and the Monte Carlo of Theorems 4.4-4.5 (paper 4).

Expected numbers are computed by hand in the comments, taken from the papers (Li et al. 2007's
salary example, Table 2 of l-delta-diversity.txt), or from independent formulas
(inclusion-exclusion, brute force)."""

import argparse
import json
import math
import sys
from math import comb

import numpy as np
import pandas as pd
import pytest

from probanon.diversity.attack import (
    brute_force_linked_l,
    linkage_attack,
    linkage_monte_carlo,
    worst_case_linked_l,
    worst_case_releases,
    worst_case_supports,
)
from probanon.diversity.checks import (
    diversity_report,
    emd_per_class,
    recursive_l_per_class,
    sensitive_counts,
)
from probanon.cli.diversity_checks import add_check_commands
from probanon.errors import InputError, ParameterError, ProbanonError


# ---------------------------------------------------------------- checks on tiny tables

def _hospital():
    # class A = (1, 30): flu, flu, cold; class B = (2, 40): flu, cold, cancer, cancer
    return pd.DataFrame({
        "zip": [1, 1, 1, 2, 2, 2, 2],
        "age": [30, 30, 30, 40, 40, 40, 40],
        "disease": ["flu", "flu", "cold", "flu", "cold", "cancer", "cancer"],
        "name": list("abcdefg"),
    })


def test_k_distinct_entropy_and_t_by_hand():
    r = diversity_report(_hospital(), qi=["zip", "age"], sensitive="disease")
    assert (r.records, r.classes, r.empty_classes, r.sensitive_values) == (7, 2, 0, 3)
    assert r.k == 3 and r.l_distinct == 2
    # H_A = -(2/3 ln 2/3 + 1/3 ln 1/3) = ln 3 - (2/3) ln 2; H_B = (3/2) ln 2
    h_a, h_b = math.log(3) - 2 / 3 * math.log(2), 1.5 * math.log(2)
    np.testing.assert_allclose(r.per_class["entropy"].to_numpy(), [h_a, h_b], rtol=1e-14)
    assert r.entropy_min == pytest.approx(h_a, rel=1e-14)
    assert r.l_entropy == pytest.approx(3 / 2 ** (2 / 3), rel=1e-14)  # exp(H_A)
    # whole table: flu 3/7, cold 2/7, cancer 2/7; A: 2/3, 1/3, 0 -> 1/2 (5+1+6)/21 = 2/7;
    # B: 1/4, 1/4, 1/2 -> 1/2 (5+1+6)/28 = 3/14 (equal distance: text values)
    assert r.distance == "equal"
    np.testing.assert_allclose(r.per_class["emd"].to_numpy(), [2 / 7, 3 / 14], rtol=1e-14)
    assert r.t_closeness == pytest.approx(2 / 7, rel=1e-14)
    assert r.c is None and r.l_recursive is None and r.l is None
    d = r.to_dict()
    assert {"k", "l_distinct", "l_entropy", "t_closeness", "classes", "records"} <= set(d)
    json.dumps(d, allow_nan=False)


def test_recursive_cl_by_hand():
    # r_A = (2, 1), r_B = (2, 1, 1); class holds (c, l) iff r_1 < c (r_l + ... + r_m)
    t = _hospital()
    # c = 2: A: l=2 -> 2 < 2*1 no -> 1; B: l=2 -> 2 < 4 yes, l=3 -> 2 < 2 no -> 2
    r = diversity_report(t, ["zip", "age"], "disease", c=2, l=2)
    assert r.per_class["l_recursive"].tolist() == [1, 2]
    assert r.l_recursive == 1 and r.recursive_holds is False
    assert r.distinct_holds is True
    assert r.entropy_holds is False  # H_A = 0.6365 < ln 2
    # c = 2.5: A: 2 < 2.5 -> 2; B: l=3 -> 2 < 2.5 -> 3
    r = diversity_report(t, ["zip", "age"], "disease", c=2.5, l=2)
    assert r.per_class["l_recursive"].tolist() == [2, 3] and r.recursive_holds is True
    # c = 2/3: A: l=1 -> 2 < (2/3) 3 = 2 fails -> 0
    assert diversity_report(t, ["zip", "age"], "disease", c=2 / 3).l_recursive == 0


def test_recursive_c_is_compared_exactly():
    # r = (3, 3, 3, 3, 1), c = 0.3: l = 2 needs 3 < 0.3 * 10 = 3 exactly, false (in floating
    # point 0.3 * 10 = 3.0000000000000004 would accept it)
    counts = sensitive_counts(pd.DataFrame({"q": 0, "s": list("aaabbbcccddde")}), "q", "s")
    assert recursive_l_per_class(counts, 0.3).tolist() == [1]
    assert recursive_l_per_class(counts, 0.31).tolist() == [2]  # 3 < 3.1


def test_entropy_of_a_uniform_class_reaches_l():
    t = pd.DataFrame({"q": [0] * 6 + [1] * 3, "s": list("abcabcxyz")})
    r = diversity_report(t, "q", "s", l=3)
    assert r.l_entropy == pytest.approx(3.0, rel=1e-14)
    assert r.entropy_holds is True and r.distinct_holds is True
    assert diversity_report(t, "q", "s", l=4).entropy_holds is False


def test_t_closeness_ordered_distance_li_et_al_salary_example():
    # Li, Li and Venkatasubramanian (2007), Sec. 4: salaries 3k..11k, one each; classes
    # {3k, 4k, 5k} -> EMD 0.375 and {6k, 8k, 11k} -> EMD 0.167 with the ordered distance.
    # Third class {7k, 9k, 10k}: cumulative differences -1,-2,-3,-4,-2,-3,-1,1,0 (/9) -> 17/72.
    t = pd.DataFrame({"zip": [1, 1, 1, 2, 2, 2, 3, 3, 3],
                      "salary": [3, 4, 5, 6, 8, 11, 7, 9, 10]})
    r = diversity_report(t, "zip", "salary")
    assert r.distance == "ordered"
    np.testing.assert_allclose(r.per_class["emd"].to_numpy(), [3 / 8, 1 / 6, 17 / 72], rtol=1e-13)
    assert r.t_closeness == pytest.approx(0.375, rel=1e-13)
    # equal distance on the same classes: 1/2 (3 (2/9) + 6 (1/9)) = 2/3 for every class
    np.testing.assert_allclose(emd_per_class(sensitive_counts(t, "zip", "salary"), "equal"), [2 / 3] * 3, rtol=1e-13)


def test_count_table_gives_the_same_report_as_microdata():
    micro = _hospital()
    counts = pd.DataFrame({"class": ["A", "A", "B", "B", "B", "C"],
                           "sensitive": ["flu", "cold", "flu", "cold", "cancer", "flu"],
                           "count": [2, 1, 1, 1, 2, 0]})  # class C published empty
    a = diversity_report(micro, ["zip", "age"], "disease", c=2.5, l=2).to_dict()
    b = diversity_report(counts, c=2.5, l=2)
    assert b.empty_classes == 1 and b.classes == 2
    bd = b.to_dict()
    assert bd.pop("empty_classes") == 1 and a.pop("empty_classes") == 0
    nested = {key: a.pop(key) for key in ("requirements", "failed")}  # lists: not for approx
    assert {key: bd.pop(key) for key in nested} == nested
    assert bd == pytest.approx(a)
    # microdata with a multiplicity column
    weighted = pd.DataFrame({"zip": [1, 1, 2, 2, 2], "disease": ["flu", "cold", "flu", "cold", "cancer"],
                             "n": [2, 1, 1, 1, 2]})
    w = diversity_report(weighted, "zip", "disease", count="n", c=2.5, l=2).to_dict()
    assert {key: w.pop(key) for key in nested} == nested
    assert w.pop("empty_classes") == 0 and w == pytest.approx(a)


def test_missing_qi_values_form_their_own_class():
    t = pd.DataFrame({"q": [1.0, np.nan, 1.0, np.nan], "s": ["a", "b", "b", "b"]})
    r = diversity_report(t, "q", "s")
    assert (r.classes, r.k, r.l_distinct) == (2, 2, 1)


@pytest.mark.parametrize("call, error", [
    (lambda t: diversity_report(t, "zip", "nope"), InputError),
    (lambda t: diversity_report(t, "nope", "disease"), InputError),
    (lambda t: diversity_report(t, ["zip", "disease"], "disease"), InputError),
    (lambda t: diversity_report(t, "zip", None), InputError),
    (lambda t: diversity_report(t), InputError),  # not a count table
    (lambda t: diversity_report(t.iloc[:0], "zip", "disease"), InputError),
    (lambda t: diversity_report(t.assign(disease=[None, *t.disease[1:]]), "zip", "disease"), InputError),
    (lambda t: diversity_report(t.assign(n=[1, 2, -1, 1, 1, 1, 1]), "zip", "disease", count="n"), InputError),
    (lambda t: diversity_report(t.assign(n=[1, 2, 0.5, 1, 1, 1, 1]), "zip", "disease", count="n"), InputError),
    (lambda t: diversity_report(t.assign(n="x"), "zip", "disease", count="n"), InputError),
    (lambda t: diversity_report(t.assign(n=0), "zip", "disease", count="n"), InputError),
    (lambda t: diversity_report(t, "zip", "disease", c=0), ParameterError),
    (lambda t: diversity_report(t, "zip", "disease", c=float("nan")), ParameterError),
    (lambda t: diversity_report(t, "zip", "disease", c=True), ParameterError),
    (lambda t: diversity_report(t, "zip", "disease", l=0), ParameterError),
    (lambda t: diversity_report(t, "zip", "disease", distance="hamming"), ParameterError),
    (lambda t: diversity_report(t.values, "zip", "disease"), InputError),
])
def test_check_errors_are_one_line(call, error):
    with pytest.raises(error) as info:
        call(_hospital())
    assert "\n" not in str(info.value) and str(info.value)


# ---------------------------------------------------------------- linkage attack, worst case

def test_worst_case_formula_equals_brute_force_and_is_attained():
    """Proposition 3.1 / NOTES.md Sec. 4 for every L <= 9, l <= L + 1 and t <= L + 2: the
    formula, an exhaustive search over all t-tuples of supports, and the attack on the
    construction agree; each constructed release is l-diverse."""
    for L in range(1, 10):
        for l in range(1, L + 2):
            for t in range(1, L + 3):
                expected = max(1, L + 1 - t * (L - l + 1))
                assert worst_case_linked_l(L, l, t) == expected
                assert brute_force_linked_l(L, l, t) == expected, (L, l, t)
                releases = worst_case_releases(L, l, t)
                assert all(diversity_report(r).l_distinct == l for r in releases)
                result = linkage_attack(releases, [0] * t)
                assert result.l_linked == expected and result.l_releases == (l,) * t
                assert 0 in dict(result.surviving)  # the target's own value survives
                assert result.worst_case_l == expected


def test_worst_case_examples_of_the_paper():
    # Corollary 3.3 (t = 2, L even): l_[2] = 1 for l <= L/2 + 1, else 2l - L - 1
    for L in (2, 4, 6, 8):
        for l in range(1, L + 2):
            assert worst_case_linked_l(L, l, 2) == (1 if l <= L / 2 + 1 else 2 * l - L - 1)
    # issue 6's attack table, |S| = 50: l = 40 linked twice -> 50 - 2*10 = 30
    assert worst_case_linked_l(49, 40, 2) == 30 and worst_case_linked_l(49, 40, 5) == 1
    supports = worst_case_supports(49, 40, 3)
    assert [len(s) for s in supports] == [40] * 3 and len(frozenset.intersection(*supports)) == 20


def test_linkage_attack_table_2_of_the_paper():
    # Table 2: both releases are 2-diverse, the class (Female, 560010) links to cervical cancer
    d1 = pd.DataFrame({"class": ["M:560011-12", "M:560011-12", "F:560010", "F:560010"],
                       "sensitive": ["Heart disease", "Lung infection", "Osteoporosis", "Cervical cancer"],
                       "count": 1})
    d2 = pd.DataFrame({"class": ["F:560008", "F:560008", "F:560010", "F:560010"],
                       "sensitive": ["Irritable bowel syndrome", "Lung infection", "Cervical cancer",
                                     "Amoebic dysentery"], "count": 1})
    assert diversity_report(d1).l_distinct == 2 and diversity_report(d2).l_distinct == 2
    r = linkage_attack([d1, d2], ["F:560010", "F:560010"])
    assert r.surviving == (("Cervical cancer", 1),) and r.l_linked == 1 and r.l_releases == (2, 2)
    # the same through the target's QI value and each release's class_of
    maps = [{("F", 560010): "F:560010", ("M", 560011): "M:560011-12"},
            pd.Series({("F", 560010): "F:560010", ("F", 560008): "F:560008"})]
    assert linkage_attack([d1, d2], ("F", 560010), class_of=maps) == r


def test_linkage_counts_are_per_class_minima():
    r1 = pd.DataFrame({"class": [0, 0, 0, 1], "sensitive": ["a", "b", "c", "a"], "count": [5, 2, 1, 3]})
    r2 = pd.DataFrame({"class": [7, 7, 7], "sensitive": ["a", "b", "d"], "count": [1, 4, 2]})
    class_of = [np.array([0, 0, 1]), np.array([7, 7, 7])]  # QI position -> class
    r = linkage_attack([r1, r2], 0, class_of=class_of)
    assert r.target_classes == (0, 7) and r.surviving == (("a", 1), ("b", 2)) and r.l_linked == 2
    # L + 1 = |{a, b, c, d}| = 4, l = 3: worst case max(1, 4 - 2 (4 - 3)) = 2
    assert r.worst_case_l == 2
    json.dumps(r.to_dict())


@pytest.mark.parametrize("call, error", [
    (lambda r: linkage_attack([r, r], [0]), InputError),
    (lambda r: linkage_attack([r, r], [0, 9]), InputError),
    (lambda r: linkage_attack([r, r], [0, 2]), InputError),  # class 2 holds no record
    (lambda r: linkage_attack([], []), InputError),
    (lambda r: linkage_attack([r, r.drop(columns="count")], [0, 0]), InputError),
    (lambda r: linkage_attack([r], 5, class_of={0: 0}), InputError),
    (lambda r: worst_case_linked_l(3, 5, 2), ParameterError),
    (lambda r: worst_case_linked_l(3, 2, 0), ParameterError),
    (lambda r: brute_force_linked_l(0, 1, 2), ParameterError),
])
def test_attack_errors_are_one_line(call, error):
    release = pd.DataFrame({"class": [0, 0, 1, 2], "sensitive": ["a", "b", "a", "a"], "count": [1, 1, 2, 0]})
    with pytest.raises(error) as info:
        call(release)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- Monte Carlo (Theorems 4.4, 4.5)

def _uniform_instance(seed=0):
    """|Q| = 20 QI values, |S| = 4, four classes of five QI values (interleaved labels) with
    P(qbar, s) = 1/16 for every class and s, the mass spread unevenly over the QI values."""
    rng = np.random.default_rng(seed)
    class_of = np.array([f"c{q % 4}" for q in range(20)])
    pmf = np.zeros((20, 4))
    for c in range(4):
        rows = np.flatnonzero(class_of == f"c{c}")
        pmf[rows] = rng.dirichlet(np.ones(5), size=4).T / 16
    return pmf, class_of


def _miss_probability(cells: int, n: int) -> float:
    """P(some of `cells` equiprobable cells is empty after n draws), inclusion-exclusion."""
    return sum((-1) ** (i + 1) * comb(cells, i) * (1 - i / cells) ** n for i in range(1, cells + 1))


def test_monte_carlo_failure_rates_within_delta_and_t_delta():
    pmf, class_of = _uniform_instance()
    l, delta, t = 4, 0.1, 3
    # NOTES.md Sec. 4: p in (0, p_l], p_l = l-th largest P_S = 1/4; classes admissible at
    # p = 1/16; m = min(|Q|, 1/(l p), sum_{i>=l} p_i / p) = min(20, 4, (1/4)/(1/16)) = 4
    p = 1 / 16
    m = min(20, 1 / (l * p), 0.25 / p)
    n = math.ceil(math.log(m * l / delta) / math.log(1 / (1 - p)))
    assert n == 79
    mc = linkage_monte_carlo(pmf, class_of, n, l, t=t, runs=2000, delta=delta, random_state=6)
    assert mc.classes == 4 and mc.release_trials == 6000 and mc.linked_trials == 2000
    # Theorem 4.4 / 4.5: not significantly above delta and t delta
    assert mc.release_interval[0] <= delta and mc.release_exceeds is False
    assert mc.linked_interval[0] <= t * delta and mc.linked_exceeds is False
    # the exact rates (l = |S|: a release fails iff one of its 16 cells is empty, up to the
    # ~1e-10 chance of a whole empty class; linked fails iff one of t releases fails) lie in
    # the 99% intervals
    q = _miss_probability(16, n)
    assert 0.09 < q < delta
    assert mc.release_interval[0] <= q <= mc.release_interval[1]
    q_linked = 1 - (1 - q) ** t
    assert mc.linked_interval[0] <= q_linked <= mc.linked_interval[1]
    assert mc == linkage_monte_carlo(pmf, class_of, n, l, t=t, runs=2000, delta=delta, random_state=6)
    json.dumps(mc.to_dict(), allow_nan=False)


def test_monte_carlo_flags_too_few_samples():
    pmf, class_of = _uniform_instance()
    # N = 40 instead of 79: exact release failure ~ 0.7 > delta = 0.1
    mc = linkage_monte_carlo(pmf, class_of, 40, 4, t=2, runs=300, delta=0.1, random_state=1)
    q = _miss_probability(16, 40)
    assert mc.release_exceeds is True and mc.linked_exceeds is True
    assert mc.release_interval[0] <= q <= mc.release_interval[1]


def test_monte_carlo_linkage_below_l_of_the_releases():
    # l = 2 < |S| = 4: a release passes with any 2 values per class, linking can drop below 2;
    # one class, S uniform, N = 3: exact release failure = P(all equal) = 4 (1/4)^3 = 1/16
    pmf = np.full((1, 4), 0.25)
    mc = linkage_monte_carlo(pmf, [0], 3, 2, t=2, runs=4000, random_state=3)
    assert mc.release_interval[0] <= 1 / 16 <= mc.release_interval[1]
    assert mc.linked_rate > 1 - (15 / 16) ** 2  # linkage fails more often than either release


@pytest.mark.parametrize("kwargs, error", [
    (dict(pmf=[[0.5, -0.1], [0.3, 0.3]]), InputError),
    (dict(pmf=[[0.5, 0.1], [0.3, 0.3]]), InputError),
    (dict(pmf=[[0.5, np.nan], [0.3, 0.2]]), InputError),
    (dict(pmf=[["a", "b"]]), InputError),
    (dict(class_of=[0, 1, 2]), InputError),
    (dict(l=3), ParameterError),
    (dict(l=0), ParameterError),
    (dict(delta=1.0), ParameterError),
    (dict(delta=0), ParameterError),
    (dict(t=0), ParameterError),
    (dict(n_samples=0), ParameterError),
    (dict(confidence=1.5), ParameterError),
])
def test_monte_carlo_errors_are_one_line(kwargs, error):
    args = dict(pmf=[[0.25, 0.25], [0.25, 0.25]], class_of=[0, 0], n_samples=10, l=2, t=2, runs=10)
    args.update(kwargs)
    with pytest.raises(error) as info:
        linkage_monte_carlo(**args)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- command line

def _run(argv, capsys):
    """``probanon diversity <argv>`` through a parser holding only these commands; errors as
    probanon's main reports them (one line on stderr, status 2)."""
    parser = argparse.ArgumentParser(prog="probanon diversity")
    add_check_commands(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    try:
        code = args.func(args)
    except ProbanonError as exc:
        print(f"probanon: error: {exc}", file=sys.stderr)
        code = 2
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_check_json(tmp_path, capsys):
    path = tmp_path / "released.csv"
    _hospital().to_csv(path, index=False)
    code, out, err = _run(["check", str(path), "--qi", "zip,age", "--sensitive", "disease",
                           "--c", "2.5", "-l", "2", "--json"], capsys)
    assert code == 0 and err == ""
    d = json.loads(out)
    assert {"l_distinct", "k", "l_entropy", "t_closeness", "classes", "records", "l_recursive"} <= set(d)
    assert (d["k"], d["l_distinct"], d["l_recursive"], d["classes"], d["records"]) == (3, 2, 2, 2, 7)
    assert d["t_closeness"] == pytest.approx(2 / 7) and d["l_entropy"] == pytest.approx(3 / 2 ** (2 / 3))
    # a count table, and the text summary
    counts = tmp_path / "counts.csv"
    pd.DataFrame({"class": [0, 0, 1, 1, 1], "sensitive": ["flu", "cold", "flu", "cold", "cancer"],
                  "count": [2, 1, 1, 1, 2]}).to_csv(counts, index=False)
    code, out, _ = _run(["check", str(counts), "--json"], capsys)
    assert code == 0 and json.loads(out)["l_distinct"] == 2 and json.loads(out)["k"] == 3
    code, out, _ = _run(["check", str(counts), "-l", "2"], capsys)
    assert code == 0 and "k-anonymity:        3" in out and "distinct l-diversity >= 2: holds" in out


def test_cli_attack_by_class_and_by_plan(tmp_path, capsys):
    paths = []
    for j, r in enumerate(worst_case_releases(9, 6, 2)):
        paths.append(tmp_path / f"r{j}.csv")
        r.to_csv(paths[-1], index=False)
    code, out, _ = _run(["attack", *map(str, paths), "--target", "0", "--json"], capsys)
    d = json.loads(out)
    assert code == 0 and d["l_linked"] == 2 and d["l_releases"] == [6, 6] and d["worst_case_l"] == 2
    assert [s["sensitive"] for s in d["surviving"]] == [0, 9]
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"class_of": {"30|F": 0, "31|F": 0}}))
    code, out2, _ = _run(["attack", *map(str, paths), "--qi-value", "31|F", "--plan", str(plan), "--json"], capsys)
    assert code == 0 and json.loads(out2) == json.loads(out)
    code, out, _ = _run(["attack", *map(str, paths), "--target", "0,0"], capsys)
    assert code == 0 and "l = 2" in out


@pytest.mark.parametrize("argv", [
    ["check", "{released}", "--qi", "zip"],
    ["check", "{released}", "--qi", "zip", "--sensitive", "nope"],
    ["check", "{released}"],
    ["check", "{missing}", "--qi", "zip", "--sensitive", "disease"],
    ["check", "{released}", "--qi", "zip", "--sensitive", "disease", "--c", "-1"],
    ["attack", "{counts}", "{counts}", "--target", "0,1,2"],
    ["attack", "{counts}", "--target", "5"],
    ["attack", "{released}", "--target", "0"],
    ["attack", "{counts}", "--qi-value", "x", "--plan", "{bad_plan}"],
    ["attack", "{counts}", "--qi-value", "x", "--plan", "{plan}"],
    ["attack", "{counts}"],
])
def test_cli_errors_are_one_line_with_status_2(tmp_path, capsys, argv):
    files = {"released": tmp_path / "released.csv", "counts": tmp_path / "counts.csv",
             "missing": tmp_path / "none.csv", "bad_plan": tmp_path / "bad.json", "plan": tmp_path / "plan.json"}
    _hospital().to_csv(files["released"], index=False)
    pd.DataFrame({"class": [0, 0], "sensitive": ["a", "b"], "count": [1, 1]}).to_csv(files["counts"], index=False)
    files["bad_plan"].write_text("{not json")
    files["plan"].write_text(json.dumps({"class_of": {"y": 0}}))
    code, out, err = _run([a.format(**files) for a in argv], capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("probanon: error: ")

"""`probanon reproduce diversity`: paper 4 ((l, delta)-diversity), ours beside NOTES.md Sec. 4.

The check values of NOTES.md Sec. 4 are typed here again; N, the worst-case formula and the
Clopper-Pearson intervals are recomputed from their formulas, independently of the module.
"""

import contextlib
import io
import json
import math

import pytest
from scipy import stats

from probanon import cli
from probanon.reproduce.diversity import reproduce_diversity

PNG = b"\x89PNG\r\n\x1a\n"
Q, S, RHO = 3000, 50, 0.95
P1 = (1 - RHO) / (1 - RHO ** S)  # normalised (NOTES.md: p1 = .054168)

# NOTES.md Sec. 4, N before ceil: (marginal, p or beta, delta, l) -> value; uniform values hold for every l
NOTES = {("uniform", 2e-4, 0.01, None): 65605.3, ("uniform", 2e-4, 0.001, None): 77117.0,
         ("uniform", 2e-4, 0.1, None): 54093.5, ("uniform", 4e-4, 0.01, None): 31066.8,
         ("geometric", 0.01, 0.01, 10): 36865.1, ("geometric", 0.01, 0.01, 30): 111228.6}


def marginal(name):
    return [1 / S] * S if name == "uniform" else [P1 * RHO ** i for i in range(S)]


def n_before_ceil(name, l, delta, p):
    """Algorithm 1: N = ln(m l / delta) / ln(1/(1-p)), m = min(|Q|, 1/(l p), sum_{i>=l} p_i / p)."""
    ps = sorted(marginal(name), reverse=True)
    m = min(Q, 1 / (l * p), math.fsum(ps[l - 1:]) / p)
    return math.log(m * l / delta) / -math.log1p(-p)


def clopper_pearson(k, n, level=0.99):
    a = (1 - level) / 2
    low = 0.0 if k == 0 else stats.beta.ppf(a, k, n - k + 1)
    high = 1.0 if k == n else stats.beta.ppf(1 - a, k + 1, n - k)
    return low, high


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("diversity")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        result = reproduce_diversity(output_dir=out_dir, quick=True)
    assert buf.getvalue() == ""  # the library stays quiet
    return dict(result=result, text=result["text"], dir=out_dir)


def test_files_are_written(run):
    d = run["dir"]
    for name in ("diversity_fig1", "diversity_fig2", "diversity_pareto"):
        assert (d / f"{name}.png").read_bytes().startswith(PNG)
    page = (d / "diversity.html").read_text()
    assert page.count("data:image/png;base64,") == 3
    assert "NOTES.md Sec. 4" in page and "Attack table" in page
    assert (d / "diversity.txt").read_text() == run["text"]
    assert json.loads((d / "diversity.json").read_text()) == {k: v for k, v in run["result"].items() if k != "text"}
    assert sorted(p.name for p in d.iterdir()) == run["result"]["files"]  # no temporary leftovers
    assert "QUICK MODE" in run["text"] and "== Summary ==" in run["text"]


def test_n_values_equal_notes(run):
    rows = [r for r in run["result"]["n_values"] if r["notes"] is not None]
    seen = set()
    for r in rows:
        key = ((r["marginal"], r["p"], r["delta"], None) if r["marginal"] == "uniform"
               else (r["marginal"], r["beta"], r["delta"], r["l"]))
        key = next(k for k in NOTES if k[0] == key[0] and math.isclose(k[1], key[1]) and k[2] == key[2]
                   and k[3] == key[3])
        seen.add(key)
        assert abs(r["n_exact"] - NOTES[key]) <= 0.1, (key, r["n_exact"])
        assert r["match"] and float(r["notes"]) == NOTES[key]
        assert r["n_exact"] == pytest.approx(n_before_ceil(r["marginal"], r["l"], r["delta"], r["p"]), rel=1e-12)
        assert r["n_samples"] == math.ceil(n_before_ceil(r["marginal"], r["l"], r["delta"], r["p"]))
    assert seen == set(NOTES)
    assert {r["l"] for r in rows if r["marginal"] == "uniform"} == {10, 30}  # the paper's l; N does not depend on it
    assert run["result"]["p1"] == pytest.approx(0.054168, abs=5e-7)


def test_class_counts(run):
    """|Q| = 3000 uniform: beta = .02 gives 50 classes (NOTES.md), beta = .01 gives 100
    (Corollary 4.8: floor(p_l / p) = floor(1 / beta)), for both partition algorithms."""
    rows = run["result"]["n_values"]
    for r in rows:
        expected = {0.01: 100, 0.02: 50}[round(r["beta"], 6)]
        assert r["classes_greedy"] == r["classes_independent"] == r["classes_corollary"] == expected
    assert any(r["marginal"] == "uniform" and r["classes_notes"] == 50 for r in rows)


def test_figure_curves(run):
    figs = run["result"]["figures"]
    assert set(figs) == {"fig1a", "fig1b", "fig2a", "fig2b"}

    def value(key, fixed, x):
        curve = next(c for c in figs[key]["series"] if c["fixed"] == fixed)
        return curve["y"][figs[key]["x"].index(x)]

    # Fig. 1b at p = .01, delta = .001, l = 10: m = min(3000, 10, 41) = 10
    assert value("fig1b", {"delta": 0.001, "l": 10}, 0.01) == pytest.approx(math.log(1e5) / -math.log(0.99))
    # Fig. 2b: p = beta p1 rho^(l - 1)
    for l in (5, 20, 40):
        p = 0.02 * P1 * RHO ** (l - 1)
        assert value("fig2b", {"delta": 0.01, "beta": 0.02}, l) == pytest.approx(n_before_ceil("geometric", l, 0.01, p))
    # Fig. 1a and 2a carry the NOTES.md points at delta = .01
    assert value("fig1a", {"beta": 0.02, "l": 30}, 0.01) == pytest.approx(31066.8, abs=0.05)
    assert value("fig2a", {"beta": 0.01, "l": 30}, 0.01) == pytest.approx(111228.6, abs=0.05)
    marks = [mk for f in figs.values() for c in f["series"] for mk in c["notes"]]
    assert len(marks) == 12 and all(mk["match"] for mk in marks)


def test_attack_table_is_the_worst_case_formula(run):
    a = run["result"]["attack"]
    L = S - 1
    assert a["L"] == L and [r["t"] for r in a["rows"]] == [2, 3, 4, 5, 6, 7]
    for r in a["rows"]:
        t = r["t"]
        assert r["largest_l_revealed"] == max(l for l in range(1, S + 1) if L + 1 - t * (L - l + 1) <= 1)
        for l, cell in r["cells"].items():
            expected = max(1, L + 1 - t * (L - int(l) + 1))
            assert cell["formula"] == cell["attacked"] == expected, (t, l)
            assert cell["releases_l"] == cell["releases_l_max"] == int(l)  # each release is exactly l-diverse
            assert 0 in cell["surviving"]  # the target's own value always survives
    assert a["rows"][0]["cells"]["49"]["attacked"] == 48 and a["rows"][-1]["cells"]["49"]["attacked"] == 43
    b = a["brute_force"]
    assert b["compared"] == 60 and b["agree"] == 60
    for row in b["rows"]:
        assert row["brute_force"] == max(1, b["n_sensitive"] - row["t"] * (b["n_sensitive"] - row["l"]))


def test_monte_carlo_within_t_delta(run):
    m = run["result"]["mechanism"]
    p, delta = 0.01 / S, 0.1
    N = math.ceil(math.log(1 / p / delta) / -math.log1p(-p))  # m l = 1/p
    assert m["same_plan"] and m["classes"] == 100 and m["n_samples"] == N == 54094 and m["l"] == S
    assert m["runs_per_t"] == 100
    for r in m["monte_carlo"]:
        t, k, n = r["t"], r["linked_failures"], r["linked_trials"]
        assert n == 100 and r["release_trials"] == 100 * t and r["linked_rate"] == k / n
        low, high = clopper_pearson(k, n)
        assert r["linked_interval"] == pytest.approx([low, high], abs=1e-9)
        assert r["t_delta"] == pytest.approx(t * delta)
        assert low <= t * delta  # Theorem 4.5 within the 99 % interval
        assert r["release_interval"][0] <= delta  # Theorem 4.4
        # at l = |S| every cell must be filled: the rate is at least 1 - exp(-t 5000 (1 - p)^N)
        bound = -math.expm1(-t * 5000 * (1 - p) ** N)
        assert r["lower_bound"] == pytest.approx(bound, rel=1e-9)
        assert bound <= t * delta and high >= bound
    pooled = m["release_pooled"]
    assert pooled["interval"] == pytest.approx(list(clopper_pearson(pooled["failures"], pooled["trials"])), abs=1e-9)
    assert pooled["interval"][0] <= delta  # Theorem 4.4, all releases pooled


def test_statements_hold(run):
    st = run["result"]["statements"]
    assert len(st) == 11 and all(s["holds"] for s in st), [s for s in st if not s["holds"]]


def test_cli_quick_is_deterministic(run, tmp_path, capsys):
    """The CLI run (default --seed 2016 = the library's default) gives the library run's numbers."""
    out = tmp_path / "report"
    assert cli.main(["reproduce", "diversity", "--quick", "--output-dir", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed == (out / "diversity.txt").read_text()
    assert (out / "diversity_fig1.png").read_bytes().startswith(PNG)
    again = json.loads((out / "diversity.json").read_text())
    for key in ("n_values", "figures", "attack", "mechanism", "pareto"):
        assert again[key] == run["result"][key], key

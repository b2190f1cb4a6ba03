"""`probanon reproduce km`: paper 5 (probabilistic k^m-anonymity), quick mode.

One CLI run (quick) feeds every test. The printed values (gamma = 45,845 and 5,866,617,
26,492 uniqueness samples, Example 1's merge of Boston with New York) come from the paper;
the releases are re-checked here by brute force over the JSON's Example 1 records.
"""

import contextlib
import io
import itertools
import json
import math

import pytest

from probanon import cli

PNG = b"\x89PNG\r\n\x1a\n"
TABLE_I = [{"LA"}, {"LA", "Seattle"}, {"New York", "Boston"}, {"New York", "Boston"},
           {"LA", "Seattle", "New York"}, {"LA", "Seattle", "New York"}, {"LA", "Seattle", "New York", "Boston"}]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("km")
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main(["reproduce", "km", "--quick", "--output-dir", str(out), "--seed", "3"])
    return code, out, buf.getvalue(), json.loads((out / "km.json").read_text())


def test_cli_exits_zero_and_prints(run):
    code, _, text, _ = run
    assert code == 0
    assert "Example 1" in text and "45,845 / 45,845" in text


def test_files_exist(run):
    _, out, _, res = run
    for name in ("km.html", "km.txt", "km.json", "km_parts.png", "km_error.png", "km_uniqueness.png"):
        assert (out / name).is_file(), name
    for name in ("km_parts.png", "km_error.png", "km_uniqueness.png"):
        assert (out / name).read_bytes()[:8] == PNG
    assert sorted(res["files"]) == sorted(p.name for p in out.iterdir() if not p.name.startswith("."))


def test_gamma_values(run):
    rows = {r["sigma"]: r for r in run[3]["gamma"]["rows"]}
    assert rows[0.99]["gamma"] == 45845 and rows[0.999]["gamma"] == 5866617
    # the two-sided Hoeffding size at the reported (eps, delta) is gamma (independent recomputation)
    for r in rows.values():
        assert math.ceil(math.log(2 / r["delta"]) / (2 * r["epsilon"] ** 2) - 1e-6) == r["gamma"]
        assert math.isclose((1 - r["epsilon"]) * (1 - r["delta"]), r["sigma"], rel_tol=1e-12)
    assert run[3]["gamma"]["uniqueness_samples"] == 26492


def test_example1_merges_boston_and_new_york(run):
    ex = run[3]["example1"]
    assert sorted(map(sorted, ex["partition"])) == [["Boston", "New York"], ["LA"], ["Seattle"]]
    assert ex["boston_with_new_york"] is True
    # brute force: every distinct l-itemset (l <= 2) of Table I is 2-anonymous after the merge
    part = {c: i for i, group in enumerate(ex["partition"]) for c in group}
    released = [{part[c] for c in r} for r in TABLE_I]
    for l in (1, 2):
        for x in {frozenset(c) for r in TABLE_I for c in itertools.combinations(sorted(r), l)}:
            g = {part[c] for c in x}
            assert sum(g <= r for r in released) >= 2
    assert [lv["fraction"] for lv in ex["check_before"]["levels"]] == [1.0, 4 / 6]  # {LA,Boston}, {Seattle,Boston}


def test_every_grid_release_passes_the_checker(run):
    rows = run[3]["grid"]["rows"]
    assert rows
    for r in rows:
        assert r["check_fractions"] is not None  # quick mode: small enough to enumerate
        assert len(r["check_fractions"]) == r["m"]
        assert all(f >= r["sigma"] for f in r["check_fractions"]) and r["check_passes"] is True
        assert 1 <= r["n_parts"] <= run[3]["grid"]["blocks"][0]["original"]["n_parts"] and r["err_m"] >= 0


def test_quick_mode_is_quick(run):
    assert run[3]["quick"] is True and run[3]["runtime_seconds"] < 60

"""evaluate and report on releases of categorical keys (issue 43.7): categorical keys alone, k
achieved with a suppressed value matching any value (as the promise of ``suppress`` counts it),
and per key what the release changed, each figure computed by hand here."""

import json
import math

import pandas as pd

from probanon.cli import main

ORIGINAL = pd.DataFrame({"id": range(1, 9),
                         "a": ["x", "x", "x", "y", "y", "y", "z", "z"],
                         "b": ["p", "p", "q", "q", "q", "q", "p", "q"]})


def _released():
    out = ORIGINAL.copy()
    out.loc[6, "a"] = None  # (z, p) suppressed on a: matches (x, p) x2 -> 3 records
    out.loc[7, "a"] = None  # (z, q) suppressed on a: matches (x, q), (y, q) x3 -> 5 records
    out.loc[2, "b"] = None  # (x, q) suppressed on b
    return out


def test_evaluate_categorical_keys_alone(tmp_path, capsys):
    ORIGINAL.to_csv(tmp_path / "o.csv", index=False)
    _released().to_csv(tmp_path / "r.csv", index=False)
    assert main(["evaluate", str(tmp_path / "o.csv"), str(tmp_path / "r.csv"), "--id", "id",
                 "--categorical-keys", "a,b", "-k", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    # records matching each released record when a missing value matches anything, by hand:
    # 0,1 (x,p): 0,1,2,6 -> 4;  2 (x,-): 0,1,2,6,7 -> 5;  3,4,5 (y,q): 3,4,5,7 -> 4;  6 (-,p): 0,1,2,6 -> 4;
    # 7 (-,q): 2,3,4,5,7 -> 5
    assert result["k_achieved"] == 4
    # counted as a category: (x,-), (-,p), (-,q) are classes of one record
    assert result["k_achieved_missing_as_category"] == 1
    a, b = result["categorical_keys"]["a"], result["categorical_keys"]["b"]
    assert (a["changed"], a["suppressed"], b["changed"], b["suppressed"]) == (2, 2, 1, 1)
    # H(a) of x3 y3 z2; H(a | released a): the released missing value hides z, z (one value): 0 bits left
    h_a = -(2 * 3 / 8 * math.log2(3 / 8) + 2 / 8 * math.log2(2 / 8))
    assert math.isclose(a["entropy"], h_a, rel_tol=1e-12) and a["information_loss"] == 0.0
    # b: the released missing value stands for q alone (record 2): nothing lost either
    assert b["information_loss"] == 0.0


def test_evaluate_information_loss_of_a_merged_category(tmp_path, capsys):
    ORIGINAL.to_csv(tmp_path / "o.csv", index=False)
    released = ORIGINAL.copy()
    released["a"] = released["a"].replace({"y": "y|z", "z": "y|z"})  # grouped: y (3) and z (2) merged
    released.to_csv(tmp_path / "r.csv", index=False)
    assert main(["evaluate", str(tmp_path / "o.csv"), str(tmp_path / "r.csv"), "--id", "id",
                 "--categorical-keys", "a", "--json"]) == 0
    a = json.loads(capsys.readouterr().out)["categorical_keys"]["a"]
    h_a = -(2 * 3 / 8 * math.log2(3 / 8) + 2 / 8 * math.log2(2 / 8))
    lost = 5 / 8 * -(3 / 5 * math.log2(3 / 5) + 2 / 5 * math.log2(2 / 5))  # H(a | y|z) weighted by its share
    assert (a["changed"], a["suppressed"], a["categories"], a["categories_released"]) == (5, 0, 3, 2)
    assert math.isclose(a["information_loss"], lost / h_a, rel_tol=1e-12)


def test_suppress_recipe_writes_its_reports(tmp_path):
    rows = [("x", "p")] * 3 + [("y", "q")] * 3 + [("x", "q"), ("y", "p"), ("z", "p")]
    frame = pd.DataFrame(rows, columns=["a", "b"])
    frame.to_csv(tmp_path / "in.csv", index=False)
    (tmp_path / "r.toml").write_text('command = "suppress"\ninput = "in.csv"\noutput = "out/rel.csv"\n'
                                     'report = "out/rep"\n[options]\nk = 3\nkeys = ["a", "b"]\nseed = 2\n'
                                     'link = "out/link.csv"\n')
    (tmp_path / "out").mkdir()
    assert main(["release", str(tmp_path / "r.toml"), "--quiet"]) == 0
    external = (tmp_path / "out" / "rep" / "external" / "index.html").read_text()
    assert "local suppression (fast), k = 3 on all keys together" in external
    assert "counted as matching any value" in external
    internal = (tmp_path / "out" / "rep" / "internal" / "index.html").read_text()
    assert "Utility of the categorical keys" in internal

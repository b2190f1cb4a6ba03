"""probanon release RECIPE.toml (issue 17, point 8): a release from one file, the resolved recipe
beside it, repeatable and audited by the input's digest."""

import hashlib
import shutil
import tomllib

import pandas as pd
import pytest
from helpers import DATA

from probanon.cli import main

RECIPE = '''command = "microaggregate"
input = "census.csv"
output = "out/release.csv"

[options]
method = "pcl"
k = 5
keys = ["AFNLWGT", "AGI", "EMCONTRB"]
confidential = ["FEDTAX"]
drop = ["PTOTVAL"]
keep_other = true
link = "out/link.csv"
function = "out/function.json"
'''


def _setup(tmp_path, text=RECIPE):
    shutil.copy(DATA / "census.csv", tmp_path / "census.csv")
    (tmp_path / "out").mkdir()
    path = tmp_path / "recipe.toml"
    path.write_text(text)
    return path


def test_release_from_a_recipe_and_again_from_its_resolution(tmp_path, capsys):
    recipe = _setup(tmp_path)
    assert main(["release", str(recipe), "--quiet"]) == 0
    out = tmp_path / "out"
    resolved = tomllib.loads((out / "release.csv.recipe.toml").read_text())
    assert resolved["input_sha256"] == hashlib.sha256((tmp_path / "census.csv").read_bytes()).hexdigest()
    options = resolved["options"]
    assert options["k"] == 5 and options["method"] == "pcl" and options["init"] == "auto"  # a default, resolved
    assert isinstance(options["seed"], int)  # drawn, recorded
    first = {p.name: p.read_bytes() for p in out.iterdir()}
    assert set(first) == {"release.csv", "link.csv", "function.json", "release.csv.recipe.toml"}
    # the resolved recipe, run where it was written, repeats the release byte for byte
    again = out / "release.csv.recipe.toml"
    assert resolved["input"] == "../census.csv" and resolved["options"]["link"] == "link.csv"
    assert main(["release", str(again), "--force", "--quiet"]) == 0
    assert {p.name: p.read_bytes() for p in out.iterdir()} == first
    released = pd.read_csv(out / "release.csv")
    assert "PTOTVAL" not in released.columns and released.groupby(["AFNLWGT", "AGI", "EMCONTRB"]).size().min() >= 5
    # ... and refuses a changed input
    frame = pd.read_csv(tmp_path / "census.csv")
    frame.loc[0, "AGI"] += 1
    frame.to_csv(tmp_path / "census.csv", index=False)
    capsys.readouterr()
    assert main(["release", str(again), "--force", "--quiet"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is not the file this recipe was resolved for" in err[0]


@pytest.mark.parametrize("edit, fragment", [
    (lambda t: t.replace('k = 5', 'k = 5\ncolour = "red"'), "unrecognized arguments: --colour red"),
    (lambda t: t.replace('k = 5', 'k = -2'), "argument -k"),
    (lambda t: "title = 'x'\n" + t, "unknown entry 'title'"),
    (lambda t: t.replace('"microaggregate"', '"publish"'), "'command' must be one of"),
    (lambda t: t.replace('"census.csv"', '"nowhere.csv"'), "nowhere.csv"),
    (lambda t: t.replace('keep_other = true', 'keep_other = false'), "columns without a role"),
    (lambda t: t.replace('[options]', '[options'), "not a TOML recipe"),
])
def test_bad_recipes_are_one_line_errors_and_write_nothing(tmp_path, capsys, edit, fragment):
    recipe = _setup(tmp_path, edit(RECIPE))
    assert main(["release", str(recipe), "--quiet"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and fragment in err[0], err
    assert list((tmp_path / "out").iterdir()) == []


def test_swap_recipe(tmp_path):
    recipe = _setup(tmp_path, '''command = "swap"
input = "census.csv"
output = "out/swapped.csv"

[options]
method = "mdav-swap"
k = 5
keys = ["AFNLWGT", "AGI"]
confidential = ["FEDTAX"]
keep_other = true
seed = 11
''')
    assert main(["release", str(recipe)]) == 0
    resolved = tomllib.loads((tmp_path / "out" / "swapped.csv.recipe.toml").read_text())
    assert resolved["command"] == "swap" and resolved["options"]["seed"] == 11


def test_recipe_with_report(tmp_path):
    recipe = _setup(tmp_path, RECIPE.replace('output = "out/release.csv"', 'output = "out/release.csv"\nreport = "out/report"'))
    assert main(["release", str(recipe), "--quiet"]) == 0
    internal = (tmp_path / "out" / "report" / "internal" / "index.html").read_text()
    assert "k achieved on the keys" in internal and "microaggregate --method pcl, k = 5" in internal
    assert (tmp_path / "out" / "report" / "external" / "index.html").exists()
    assert tomllib.loads((tmp_path / "out" / "release.csv.recipe.toml").read_text())["report"] == "report"


def test_recipe_report_needs_no_link_file_and_refuses_missing_values(tmp_path, capsys):
    text = RECIPE.replace('link = "out/link.csv"\n', "").replace('output = "out/release.csv"',
                                                                 'output = "out/release.csv"\nreport = "out/report"')
    assert main(["release", str(_setup(tmp_path, text)), "--quiet"]) == 0  # matched in memory, no link file
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["function.json", "release.csv", "release.csv.recipe.toml",
                                                                  "report"]
    other = tmp_path / "other"
    other.mkdir()
    text = text.replace("[options]", '[options]\nmissing = "pattern"')
    assert main(["release", str(_setup(other, text)), "--quiet"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert "not available yet" in err[-1] and list((other / "out").iterdir()) == []

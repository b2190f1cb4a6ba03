"""``probanon recode`` and ``probanon suppress`` (issue 43, points 1-3 and 7): the release
checked record by record through its link file against values computed here (intervals by a walk,
tail means by hand, hierarchy levels from the file), the -k refusal's count of violations made
here, SPSS value labels read back with pyreadstat, recipes, and the bad-input table of both
commands (exit 2, one line, nothing written)."""

import itertools
import json
import math
import tomllib

import numpy as np
import pandas as pd
import pyreadstat
import pytest
from helpers import SHARED_DATA

from probanon.cli import main

KEYS = "age,sex,race,ms,edu"
EDU = {"Bachelors": ("Higher", "Any"), "Masters": ("Higher", "Any"), "Doctorate": ("Higher", "Any"),
       "Prof-school": ("Higher", "Any"), "Assoc-acdm": ("College", "Any"), "Assoc-voc": ("College", "Any"),
       "Some-college": ("College", "Any"), "HS-grad": ("School", "Any"), "11th": ("School", "Any"),
       "10th": ("School", "Any"), "9th": ("School", "Any"), "12th": ("School", "Any"),
       "7th-8th": ("School", "Any"), "5th-6th": ("School", "Any"), "1st-4th": ("School", "Any"),
       "Preschool": ("School", "Any")}


def _adult(n=300) -> pd.DataFrame:
    f = pd.read_csv(SHARED_DATA / "adult" / "adult.csv", nrows=n, skipinitialspace=True)
    return pd.DataFrame({"age": f["age"], "sex": f["sex"], "race": f["race"], "ms": f["marital-status"],
                         "edu": f["education"], "gain": f["capital-gain"].astype(float),
                         "hours": f["hours-per-week"]})


@pytest.fixture
def files(tmp_path):
    _adult().to_csv(tmp_path / "adult.csv", index=False)
    (tmp_path / "edu.csv").write_text("level0;level1;level2\n" + "".join(f"{v};{a};{b}\n" for v, (a, b) in EDU.items()))
    return tmp_path


def _run(folder, *argv) -> int:
    return main([str(a).replace("{d}", str(folder)) for a in argv])


def _interval(x, breaks):
    for i in range(len(breaks) - 1):
        a, b = breaks[i], breaks[i + 1]
        if a < x <= b or (i == 0 and x == a):
            return ("[" if i == 0 else "(") + f"{a},{b}]"
    raise AssertionError(x)


def _in_original_order(release: pd.DataFrame, link) -> pd.DataFrame:
    link = pd.read_csv(link)
    return release.iloc[link.sort_values("original_row")["released_row"].to_numpy() - 1].reset_index(drop=True)


def test_recode_release_record_by_record(files, capsys):
    argv = ["recode", "{d}/adult.csv", "-o", "{d}/out.csv", "--keys", KEYS, "--confidential", "gain",
            "--keep-other", "--intervals", "age=0:25:45:65:100", "--group", "ms=Married-civ-spouse,Married-AF-spouse:Married",
            "--top-code", "gain=q0.95:mean", "--hierarchy", "edu={d}/edu.csv:1", "--link", "{d}/link.csv", "--seed", "3"]
    assert _run(files, *argv) == 0
    err = capsys.readouterr().err
    original = _adult()
    out = _in_original_order(pd.read_csv(files / "out.csv"), files / "link.csv")
    assert out["age"].tolist() == [_interval(a, [0, 25, 45, 65, 100]) for a in original["age"]]
    married = original["ms"].isin(["Married-civ-spouse", "Married-AF-spouse"])
    assert (out["ms"][married] == "Married").all() and (out["ms"][~married] == original["ms"][~married]).all()
    assert out["edu"].tolist() == [EDU[e][0] for e in original["edu"]]
    gain = original["gain"].to_numpy()
    s = np.sort(gain)  # R type 7 quantile, by hand: s[h] + (h - floor h)(s[h+1] - s[h]), h = 0.95 (n - 1)
    h = 0.95 * (len(s) - 1)
    t = s[int(h)] + (h - int(h)) * (s[int(h) + 1] - s[int(h)])
    tail = gain > t
    assert np.allclose(out["gain"][tail], gain[tail].mean()) and np.array_equal(out["gain"][~tail], gain[~tail])
    assert out[["sex", "race", "hours"]].equals(original[["sex", "race", "hours"]])
    assert "ms" in err and f"{int(married.sum()):,} records changed" in err and "top-coded" in err


def _violations(frame, keys, k):
    """Records whose key tuple (missing as a category) is shared by fewer than k, counted by hand."""
    tuples = [tuple("<NA>" if pd.isna(v) else v for v in row) for row in frame[keys].itertuples(index=False)]
    counts = {t: tuples.count(t) for t in set(tuples)}
    return sum(1 for t in tuples if counts[t] < k), sum(1 for c in counts.values() if c < k)


def test_recode_with_k_refuses_naming_the_violations_and_suggests_suppress(files, capsys):
    base = ["recode", "{d}/adult.csv", "-o", "{d}/out.csv", "--keys", KEYS, "--keep-other", "-k", "3",
            "--intervals", "age=width:10"]
    assert _run(files, *base) == 2
    err = capsys.readouterr().err
    original = _adult()
    recoded = original.assign(age=[(math.ceil(a / 10) - 1) * 10 for a in original["age"]])
    records, combinations = _violations(recoded, KEYS.split(","), 3)
    assert records > 0 and f"{records:,} records in {combinations:,} key combinations" in err
    assert "probanon suppress" in err and len(err.strip().splitlines()) == 1
    assert not (files / "out.csv").exists()
    # coarse enough: written, and k-anonymous by the count made here
    ok = ["recode", "{d}/adult.csv", "-o", "{d}/out.csv", "--keys", "age,sex", "--keep-other", "-k", "3",
          "--intervals", "age=0:30:50:100"]
    assert _run(files, *ok) == 0
    assert _violations(pd.read_csv(files / "out.csv"), ["age", "sex"], 3) == (0, 0)


def test_recode_spss_value_labels_follow(tmp_path, capsys):
    f = _adult(200)
    codes = {"Married-civ-spouse": 1, "Married-AF-spouse": 2, "Never-married": 3, "Divorced": 4, "Separated": 5,
             "Widowed": 6, "Married-spouse-absent": 7}
    frame = pd.DataFrame({"age": f["age"].astype(float), "ms": f["ms"].map(codes).astype(float),
                          "hours": f["hours"].astype(float)})
    pyreadstat.write_sav(frame, str(tmp_path / "in.sav"), variable_value_labels={"ms": {c: t for t, c in codes.items()}})
    argv = ["recode", "{d}/in.sav", "-o", "{d}/out.sav", "--keys", "age,ms", "--keep-other", "--keep-order",
            "--group", "ms=Married-civ-spouse,Married-AF-spouse,Married-spouse-absent:Married",
            "--intervals", "age=0:30:50:100", "--interval-labels", "code"]
    assert _run(tmp_path, *argv) == 0
    back, meta = pyreadstat.read_sav(str(tmp_path / "out.sav"))
    assert back["ms"].tolist() == [1 if c in (1, 2, 7) else c for c in frame["ms"]]
    assert meta.variable_value_labels["ms"] == {1: "Married", 3: "Never-married", 4: "Divorced", 5: "Separated",
                                                6: "Widowed"}
    assert back["age"].tolist() == [1 if a <= 30 else 2 if a <= 50 else 3 for a in frame["age"]]
    assert meta.variable_value_labels["age"] == {1: "[0,30]", 2: "(30,50]", 3: "(50,100]"}


def test_recode_recipe_with_a_hierarchy_and_repeated_groups(files, capsys):
    (files / "out").mkdir()
    (files / "r.toml").write_text(
        'command = "recode"\ninput = "adult.csv"\noutput = "out/rel.csv"\n[options]\n'
        'keys = ["age", "sex", "race", "ms", "edu"]\nkeep_other = true\n'
        'group = ["ms=Married-civ-spouse,Married-AF-spouse:Married", "race=Other,Amer-Indian-Eskimo:Other"]\n'
        'hierarchy = "edu=edu.csv:2"\nintervals = ["age=width:5"]\n')
    assert main(["release", str(files / "r.toml"), "--quiet"]) == 0
    released = pd.read_csv(files / "out" / "rel.csv")
    assert set(released["edu"]) == {"Any"} and "Amer-Indian-Eskimo" not in set(released["race"])
    resolved = tomllib.loads((files / "out" / "rel.csv.recipe.toml").read_text())
    assert resolved["options"]["hierarchy"] == ["edu=../edu.csv:2"]
    first = (files / "out" / "rel.csv").read_bytes()
    assert main(["release", str(files / "out" / "rel.csv.recipe.toml"), "--force", "--quiet"]) == 0
    assert (files / "out" / "rel.csv").read_bytes() == first


# -- the bad-input table of both commands --------------------------------------------------------------

RECODE = ["recode", "{d}/adult.csv", "-o", "{d}/out.csv", "--keys", KEYS, "--keep-other", "--seed", "1"]
SUPPRESS = ["suppress", "{d}/adult.csv", "-o", "{d}/out.csv", "-k", "3", "--keys", KEYS, "--keep-other",
            "--seed", "1", "--quiet"]
#: (id, options added to a valid command line, a fragment of the one-line error)
BAD = [
    ("key-unknown", ["--keys", "age,nope"], "key column 'nope' is not in the table"),
    ("recoded-column-unknown", ["--round", "nope=5"], "column 'nope' is not in the table"),
    ("spec-without-equals", ["--intervals", "age"], "expected COLUMN=SPEC"),
    ("breaks-not-numbers", ["--intervals", "age=0:x:100"], "each break must be a number"),
    ("breaks-decreasing", ["--intervals", "age=50:20:100"], "increasing"),
    ("width-text", ["--intervals", "age=width:five"], "the width must be a number"),
    ("width-zero", ["--intervals", "age=width:0"], "positive"),
    ("quantiles-one", ["--intervals", "age=quantiles:1"], "quantiles must be an integer >= 2"),
    ("quantiles-fraction", ["--intervals", "age=quantiles:2.5"], "whole number"),
    ("value-outside-breaks", ["--intervals", "age=20:40:60"], "lies outside the breaks"),
    ("intervals-of-text", ["--intervals", "sex=0:1"], "is not numeric"),
    ("round-zero", ["--round", "age=0"], "positive"),
    ("group-without-new", ["--group", "ms=Divorced,Widowed"], "COLUMN=OLD1,OLD2,...:NEW"),
    ("group-unknown-value", ["--group", "ms=Divorcd:D"], "'Divorcd' is not a value"),
    ("hierarchy-no-level", ["--hierarchy", "edu={d}/edu.csv"], "COLUMN=FILE.csv:LEVEL"),
    ("hierarchy-no-file", ["--hierarchy", "edu={d}/none.csv:1"], "no hierarchy file"),
    ("hierarchy-lacks-a-value", ["--hierarchy", "edu={d}/short.csv:1"], "is not in level 0"),
    ("hierarchy-level-too-high", ["--hierarchy", "edu={d}/edu.csv:3"], "no level 3"),
    ("top-code-quantile-above-one", ["--top-code", "gain=q1.5"], "the quantile must lie in (0, 1)"),
    ("top-code-replacement-text", ["--top-code", "gain=1000:max"], "the replacement must be a number"),
    ("recode-json-invalid", ["--recode", "{d}/bad.json"], "is not valid JSON"),
    ("recode-json-unknown-kind", ["--recode", "{d}/kind.json"], "'kind' one of"),
    ("recode-a-dropped-column", ["--drop", "hours", "--round", "hours=5"], "is drop"),
]


def _bad_files(folder):
    shorter = {v: EDU[v] for v in list(EDU)[:-3]}
    (folder / "short.csv").write_text("".join(f"{v},{a},{b}\n" for v, (a, b) in shorter.items()))
    (folder / "bad.json").write_text("[{\"kind\": ")
    (folder / "kind.json").write_text(json.dumps([{"kind": "shuffle", "column": "age"}]))


def _check_bad(folder, argv, fragment, capsys):
    _bad_files(folder)
    before = sorted(p.name for p in folder.iterdir())
    assert _run(folder, *argv) == 2
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("probanon: error:") and fragment in lines[0], err
    assert out == "" and sorted(p.name for p in folder.iterdir()) == before


@pytest.mark.parametrize("command", ["recode", "suppress"])
@pytest.mark.parametrize("case, extra, fragment", BAD, ids=[b[0] for b in BAD])
def test_bad_inputs(files, capsys, command, case, extra, fragment):
    argv = list(RECODE if command == "recode" else SUPPRESS)
    if case == "key-unknown":
        argv[argv.index("--keys") + 1] = extra[1]
        extra = []
    _check_bad(files, argv + extra, fragment, capsys)


@pytest.mark.parametrize("command", ["recode", "suppress"])
@pytest.mark.parametrize("k", ["1", "0", "-2"])
def test_k_below_two(files, capsys, command, k):
    argv = list(RECODE if command == "recode" else SUPPRESS)
    if command == "recode":
        argv += ["-k", k, "--intervals", "age=width:5"]
    else:
        argv[argv.index("-k") + 1] = k
    _check_bad(files, argv, "-k must be at least 2", capsys)


SUPPRESS_BAD = [
    ("risk-threshold-without-weights", ["--risk-threshold", "0.1"], "--risk-threshold needs --weights"),
    ("combinations-zero", ["--combinations", "0"], "--combinations must be at least 1"),
    ("importance-mixed", ["--importance", "age,sex=2"], "not both"),
    ("importance-weight-text", ["--importance", "age=high"], "the weight of 'age' must be a number"),
    ("compare-not-an-object", ["--compare", "{d}/list.json"], "expected an object"),
]


@pytest.mark.parametrize("case, extra, fragment", SUPPRESS_BAD, ids=[b[0] for b in SUPPRESS_BAD])
def test_suppress_bad_inputs(files, capsys, case, extra, fragment):
    (files / "list.json").write_text("[1, 2]")
    _check_bad(files, SUPPRESS + extra, fragment, capsys)


def test_recode_needs_a_recoding_and_suppress_an_output(files, capsys):
    _check_bad(files, RECODE, "no recoding given", capsys)
    argv = [a for a in SUPPRESS if a not in ("-o", "{d}/out.csv")]
    _check_bad(files, argv, "give the release's output", capsys)


# -- suppress (needs probanon.categorical.suppression, i43-suppress) -----------------------------------

def _k_anonymous_any(frame, keys, k, m):
    """Brute force: every record matches at least k records (itself included) on every combination
    of m keys, a missing value matching any value."""
    values = frame[keys].to_numpy(dtype=object)
    missing = frame[keys].isna().to_numpy()
    for combo in itertools.combinations(range(len(keys)), m):
        c = list(combo)
        for i in range(len(frame)):
            same = np.all((values[:, c] == values[i, c]) | missing[:, c] | missing[i, c], axis=1)
            if same.sum() < k:
                return False
    return True


def test_suppress_release_is_k_anonymous_over_the_combinations(files, capsys):
    pytest.importorskip("probanon.categorical.suppression")
    argv = SUPPRESS + ["--intervals", "age=width:10", "--combinations", "3", "--link", "{d}/link.csv"]
    assert _run(files, *argv) == 0
    err = capsys.readouterr().err
    released = _in_original_order(pd.read_csv(files / "out.csv"), files / "link.csv")
    keys = KEYS.split(",")
    assert _k_anonymous_any(released, keys, 3, 3)
    original = _adult()
    suppressed = {c: int((released[c].isna() & original[c].notna()).sum()) for c in keys}
    assert f"total {sum(suppressed.values()):,}" in err and "violations after 0" in err
    for c in keys:
        assert f"{c} {suppressed[c]:,}" in err


def test_suppress_compare_prints_the_map_and_writes_nothing(files, capsys):
    pytest.importorskip("probanon.categorical.suppression")
    (files / "candidates.json").write_text(json.dumps({
        "age by 5": [{"kind": "intervals", "column": "age", "width": 5}],
        "age by 10, married": [{"kind": "intervals", "column": "age", "width": 10},
                               {"kind": "group", "column": "ms",
                                "mapping": [["Married-civ-spouse", "Married"], ["Married-AF-spouse", "Married"]]}]}))
    argv = [a for a in SUPPRESS if a not in ("-o", "{d}/out.csv")] + ["--compare", "{d}/candidates.json"]
    before = sorted(p.name for p in files.iterdir())
    assert _run(files, *argv) == 0
    out = capsys.readouterr().out
    assert "suppression alone" in out and "age by 5" in out and "age by 10, married" in out
    assert sorted(p.name for p in files.iterdir()) == before


def test_suppress_category_rule_within_strata(files, capsys):
    pytest.importorskip("probanon.categorical.suppression")
    argv = ["suppress", "{d}/adult.csv", "-o", "{d}/out.csv", "-k", "3", "--keys", "age,race,ms,edu", "--strata",
            "sex", "--keep-other", "--combinations", "2", "--missing", "category", "--intervals", "age=width:10",
            "--seed", "2", "--quiet"]
    assert _run(files, *argv) == 0
    released = pd.read_csv(files / "out.csv")
    for pair in itertools.combinations(["age", "race", "ms", "edu"], 2):  # missing as a category: a groupby
        sizes = released.groupby(["sex", *pair], dropna=False).size()
        assert sizes.min() >= 3, pair


def test_suppress_to_a_risk_threshold_with_weights(files, capsys):
    pytest.importorskip("probanon.categorical.suppression")
    from probanon.metrics.frequency import frequency_risk

    frame = _adult()
    frame["w"] = np.random.default_rng(0).uniform(20, 80, len(frame)).round(1)
    frame.to_csv(files / "weighted.csv", index=False)
    argv = ["suppress", "{d}/weighted.csv", "-o", "{d}/out.csv", "-k", "3", "--keys", KEYS, "--keep-other",
            "--weights", "w", "--risk-threshold", "0.1", "--seed", "1", "--quiet"]
    assert _run(files, *argv) == 0
    released = pd.read_csv(files / "out.csv")
    assert frequency_risk(released, KEYS.split(","), "w").risk.max() < 0.1


# -- the file and option cases every release command refuses (tests/test_cli_bad_inputs.py's table) ----

def _spoiled(folder, how):
    frame, path = _adult(), folder / "adult.csv"
    if how == "empty":
        path.write_text("")
    elif how == "header-only":
        path.write_text(",".join(frame.columns) + "\n")
    elif how == "duplicated-names":
        path.write_text(path.read_text().replace("hours\n", "age\n", 1))
    elif how == "inf":
        frame.astype({"age": float}).assign(age=lambda f: f["age"].where(f.index != 2, np.inf)).to_csv(path, index=False)
    elif how == "text":
        frame.astype({"age": object}).assign(age=lambda f: f["age"].where(f.index != 2, "abc")).to_csv(path, index=False)
    elif how == "missing":
        path.unlink()


FILE_CASES = [("empty", [], "empty"), ("header-only", [], "no records"), ("duplicated-names", [], "twice"),
              ("inf", ["--intervals", "age=width:5"], "infinite"), ("text", ["--intervals", "age=width:5"], "not numeric"),
              ("missing", [], "no such file"), ("exists", [], "--force"), ("equals-input", [], "would overwrite the input"),
              ("missing-folder", [], "does not exist"), ("seed-negative", [], "--seed"), ("seed-too-large", [], "--seed")]


@pytest.mark.parametrize("command", ["recode", "suppress"])
@pytest.mark.parametrize("case, extra, fragment", FILE_CASES, ids=[c[0] for c in FILE_CASES])
def test_file_and_option_cases(files, capsys, command, case, extra, fragment):
    argv = list(RECODE if command == "recode" else SUPPRESS) + extra
    if command == "recode" and not extra:
        argv += ["--round", "hours=5"]
    _spoiled(files, case)
    out = argv.index("-o") + 1
    if case == "exists":
        (files / "out.csv").write_text("an earlier release\n")
    elif case == "equals-input":
        argv[out] = "{d}/adult.csv"
        argv.append("--force")
    elif case == "missing-folder":
        argv[out] = "{d}/nowhere/out.csv"
    elif case.startswith("seed"):
        argv[argv.index("--seed") + 1] = "-1" if case == "seed-negative" else str(2 ** 64)
    _check_bad(files, argv, fragment, capsys)


def test_suppress_refuses_a_release_that_breaks_its_promise(files, capsys, monkeypatch):
    """A suppression that left one value in place (simulated: put back after the method ran) is
    caught by the promise on what is about to be written."""
    suppression = pytest.importorskip("probanon.categorical.suppression")
    real = suppression.local_suppression

    def leaky(data, keys, k, **options):
        result = real(data, keys, k, **options)
        row, col = np.argwhere(result.suppressed.to_numpy())[0]
        result.data.iloc[row, result.data.columns.get_loc(keys[col])] = data.iloc[row][keys[col]]
        return result

    monkeypatch.setattr(suppression, "local_suppression", leaky)
    _check_bad(files, SUPPRESS + ["--intervals", "age=width:10"], "promises 3-anonymity", capsys)


def test_suppress_recipe_repeats_byte_for_byte(files, capsys):
    pytest.importorskip("probanon.categorical.suppression")
    (files / "out").mkdir()
    (files / "s.toml").write_text(
        'command = "suppress"\ninput = "adult.csv"\noutput = "out/rel.csv"\n[options]\nk = 3\n'
        'keys = ["age", "sex", "race", "ms", "edu"]\nkeep_other = true\ncombinations = 3\n'
        'importance = ["sex", "race", "age", "ms", "edu"]\nintervals = ["age=width:10"]\nlink = "out/link.csv"\n')
    assert main(["release", str(files / "s.toml"), "--quiet"]) == 0
    first = {p.name: p.read_bytes() for p in (files / "out").iterdir()}
    assert main(["release", str(files / "out" / "rel.csv.recipe.toml"), "--force", "--quiet"]) == 0
    assert {p.name: p.read_bytes() for p in (files / "out").iterdir()} == first
    released = _in_original_order(pd.read_csv(files / "out" / "rel.csv"), files / "out" / "link.csv")
    assert _k_anonymous_any(released, KEYS.split(","), 3, 3)

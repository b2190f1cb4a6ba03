"""Issue 42, point 3: an audit without blind spots. Every released column is audited whatever its
type (probanon.attacks.dependencies, probanon.attacks.audit): functional and near-functional
dependencies of text, nominal and binned numeric columns (single columns and pairs) in both
directions, monotone relations of any shape (Spearman), and the columns that cannot be audited
said with their reason.

Every count here is recomputed in the test with pandas (crosstabs, group sizes), the entropy ratio
and the pinned share of a small table by hand, Spearman's rho with scipy.stats.spearmanr and the
adjusted R^2 with numpy."""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from helpers import SHARED_DATA, adjusted_r2
from scipy.stats import spearmanr

from probanon.attacks.audit import audit, verdict
from probanon.attacks.dependencies import BINS, MAX_LEVELS, encode
from probanon.cli import main
from probanon.errors import InputError, ParameterError, ProbanonWarning

ADULT = SHARED_DATA / "adult" / "adult.csv"
ADULT_KEYS = ["age", "education-num", "hours-per-week", "sex", "race", "marital-status"]
ADULT_NOMINAL = ["sex", "race", "marital-status"]


@pytest.fixture(scope="module")
def adult(shared_data):
    return pd.read_csv(ADULT)


def run_cli(argv, capsys):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def slog(v):
    return np.sign(v) * np.log1p(np.abs(v))


# ------------------------------------------------------------------------- the Adult case (issue)

def test_adult_education_determines_education_num(adult):
    """The issue's release: education confidential beside the keys. Each education value holds one
    education-num (recounted here), so education determines it on every row, and the reverse."""
    n = len(adult)
    assert n == 48_842
    table = pd.crosstab(adult["education"], adult["education-num"])
    assert ((table > 0).sum(axis=1) == 1).all() and ((table > 0).sum(axis=0) == 1).all()  # one to one
    assert int(table.max(axis=1).sum()) == n and int(table.sum(axis=1).min()) >= 10  # every class pins
    result = audit(adult, ADULT_KEYS, ["education"], nominal=ADULT_NOMINAL)
    assert not result.passed
    first = result.findings[0]
    assert (first.kind, first.column, first.determining) == ("dependency", "education-num", ("education",))
    assert first.direction == "key determined by confidential columns"
    assert (first.rows, first.n, first.share) == (n, n, 1.0) and first.entropy_ratio == pytest.approx(0.0, abs=1e-12)
    assert "education determines education-num on 48,842/48,842 rows" in first.text
    assert f"{int(adult['education-num'].value_counts().max()):,}" in first.text  # the guess without education
    reverse = [f for f in result.findings if f.column == "education"]
    assert [(f.kind, f.determining, f.rows) for f in reverse] == [("dependency", ("education-num",), n)]
    assert result.found().startswith("education determines education-num on 48,842/48,842 rows")
    assert result.not_audited == ()
    doc = result.to_dict()
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc and doc["findings"][0]["rows"] == n


def test_adult_release_is_refused_naming_the_dependency(adult, tmp_path, capsys):
    """microaggregate refuses before any work, nothing written; --accept-risk is the way past;
    `probanon audit` exits 1 and its JSON carries the finding."""
    out, link = tmp_path / "out.csv", tmp_path / "link.csv"
    others = [c for c in adult.columns if c not in ADULT_KEYS + ["education"]]
    argv = ["microaggregate", ADULT, "-o", out, "-k", 5, "--keys", "age,education-num,hours-per-week", "--nominal",
            ",".join(ADULT_NOMINAL), "--confidential", "education", "--drop", ",".join(others), "--seed", 1, "--quiet",
            "--link", link]
    code, stdout, err = run_cli(argv, capsys)
    lines = err.strip().splitlines()
    assert code == 2 and stdout == "" and list(tmp_path.iterdir()) == []
    assert len(lines) == 1 and lines[0].startswith("probanon: error: the pre-release audit found that education "
                                                   "determines education-num on 48,842/48,842 rows")
    assert "--accept-risk" in lines[0]
    keys = ",".join(ADULT_KEYS)
    code, stdout, _ = run_cli(["audit", ADULT, "--keys", keys, "--confidential", "education", "--json"], capsys)
    doc = json.loads(stdout)
    assert code == 1 and doc["passed"] is False and doc["not_audited"] == []
    assert {(f["kind"], f["column"], f["rows"], f["n"]) for f in doc["findings"]} == {
        ("dependency", "education-num", 48_842, 48_842), ("dependency", "education", 48_842, 48_842)}
    code, stdout, _ = run_cli(["audit", ADULT, "--keys", keys, "--confidential", "education"], capsys)
    assert code == 1 and "education determines education-num on 48,842/48,842 rows" in stdout


# ------------------------------------------------------------------- relationship largely determines sex

def _value_rules(x: pd.Series, y: pd.Series) -> dict:
    """{x value: (y value, rows holding it, rows of x)} where >= 99% of >= 10 rows hold one y (the
    rules here hold on thousands of rows: far from chance)."""
    table = pd.crosstab(x, y)
    share = table.max(axis=1) / table.sum(axis=1)
    ruled = table[(share >= 0.99) & (table.sum(axis=1) >= 10)]
    return {v: (ruled.loc[v].idxmax(), int(ruled.loc[v].max()), int(ruled.loc[v].sum())) for v in ruled.index}


def test_relationship_largely_determines_sex(adult, tmp_path, capsys):
    rules = _value_rules(adult["relationship"], adult["sex"])
    assert set(rules) == {"Husband", "Wife"} and rules["Husband"][0] == "Male" and rules["Wife"][0] == "Female"
    pinned = sum(rows for _, rows, _ in rules.values())
    n = len(adult)
    assert 0.25 * n <= pinned < 0.95 * n
    majority = int(pd.crosstab(adult["relationship"], adult["sex"]).max(axis=1).sum())
    assert majority < 0.95 * n  # not "determines": largely
    result = audit(adult, ["age", "sex"], ["relationship"])
    found = [f for f in result.findings if f.column == "sex"]
    assert len(found) == 1
    f = found[0]
    assert (f.kind, f.determining, f.rows, f.n) == ("partial dependency", ("relationship",), pinned, n)
    assert f"relationship largely determines sex: its values pin it on {pinned:,}/{n:,} rows" in f.text
    husband = rules["Husband"]
    assert f"'Husband' -> 'Male' ({husband[1]:,}/{husband[2]:,})" in f.text
    assert "masking sex by a group's mode or mean leaves it readable from the released relationship" in f.text
    # a release replacing sex by a group's mode counts the records given back on what it writes
    # (probanon.attacks.audit.contradictions, tests/test_contradictions.py): listed, not refused here
    deferred = audit(adult, ["age", "sex"], ["relationship"], masked_by_level=["sex"])
    assert [g.column for g in deferred.deferred] == ["sex"] and "sex" not in [g.column for g in deferred.findings]
    path = tmp_path / "adult.csv"
    adult[["age", "sex", "relationship"]].to_csv(path, index=False)
    code, stdout, _ = run_cli(["audit", path, "--keys", "age,sex", "--confidential", "relationship"], capsys)
    assert code == 1 and "relationship largely determines sex" in stdout


# --------------------------------------------------------------------- a monotone non-linear relation

def test_a_monotone_relation_is_found_by_ranks_not_by_the_linear_search():
    """y = exp(3x) with 0.1% multiplicative noise: no linear fit (identity or signed log1p scale, in
    either direction) reaches R^2 = 0.99, Spearman's rho^2 does."""
    rng = np.random.default_rng(7)
    n = 2000
    x = rng.uniform(-3.0, 3.0, n)
    frame = pd.DataFrame({"x": x, "y": np.exp(3.0 * x) * (1.0 + 0.001 * rng.normal(size=n)),
                          "other": rng.normal(size=n)})
    A, y = frame[["x"]].to_numpy(), frame["y"].to_numpy()
    linear = max(adjusted_r2(A, y), adjusted_r2(slog(A), slog(y)), adjusted_r2(y[:, None], x),
                 adjusted_r2(slog(y[:, None]), slog(x)))
    rho = spearmanr(frame["x"], frame["y"])[0]
    assert linear < 0.99 <= rho ** 2
    result = audit(frame, ["x"], ["y", "other"])
    kinds = {f.kind for f in result.findings}
    assert "regression" not in kinds and "relation" not in kinds
    monotone = [f for f in result.findings if f.kind == "monotone"]
    assert len(monotone) == 1
    f = monotone[0]
    assert (f.column, f.determining, f.n) == ("x", ("y",), n) and f.share == pytest.approx(rho ** 2, abs=1e-12)
    assert f"Spearman rho = {rho:.4f}" in f.text and "increasing" in f.text
    # a threshold above rho^2 finds no monotone pair
    assert not [g for g in audit(frame, ["x"], ["y"], r2_threshold=min(1.0, rho ** 2 + 1e-4)).findings
                if g.kind == "monotone"]


# ----------------------------------------------------------------- pinned share and entropy by hand

def small_table() -> pd.DataFrame:
    """x = a: 20 rows (y = u on 19, v on 1); b: 12 rows (all v); c: 8 rows (all w: fewer than the 10
    rows a class needs to pin anything)."""
    x = ["a"] * 20 + ["b"] * 12 + ["c"] * 8
    y = ["u"] * 19 + ["v"] + ["v"] * 12 + ["w"] * 8
    return pd.DataFrame({"x": x, "y": y})


def test_pinned_share_and_conditional_entropy_by_hand():
    frame = small_table()
    n = 40
    pinned = 19 + 12  # majority of y in a and b; c is too small to count
    baseline = 19  # y = u alone
    h_y_given_x = 19 * math.log(20 / 19) + 1 * math.log(20 / 1) + 12 * math.log(1) + 8 * math.log(1)
    h_y = 19 * math.log(40 / 19) + 13 * math.log(40 / 13) + 8 * math.log(40 / 8)
    ratio = h_y_given_x / h_y
    # at min_share 0.75: 31/40 = 0.775 pinned, and 9 errors <= half of the 21 of guessing u: determines
    result = audit(frame, ["y"], ["x"], min_share=0.75, pairs=False)
    f = next(f for f in result.findings if f.column == "y")
    assert (f.kind, f.rows, f.n, f.determining) == ("dependency", pinned, n, ("x",))
    assert f.entropy_ratio == pytest.approx(ratio, rel=1e-12)
    assert f"x determines y on 31/40 rows (the most common value of y alone: {baseline}," in f.text
    # at the default 0.95 only the value rule b -> v holds (12/12 rows; a is 19/20 < 99%): 12/40 >= 25%
    result = audit(frame, ["y"], ["x"], pairs=False)
    f = next(f for f in result.findings if f.column == "y")
    assert (f.kind, f.rows, f.share) == ("partial dependency", 12, 12 / 40)
    assert "'b' -> 'v' (12/12)" in f.text and f.entropy_ratio == pytest.approx(ratio, rel=1e-12)
    assert "y" not in [g.column for g in audit(frame, ["y"], ["x"], pairs=False, partial_share=0.31).findings]
    # the other way, y = u pins x = a on its 19 rows (19/40 >= 25%); v (12 of 13 in b) and w (8 rows) do not
    g = next(g for g in result.findings if g.column == "x")
    assert (g.kind, g.rows, g.determining) == ("partial dependency", 19, ("y",)) and "'u' -> 'a' (19/19)" in g.text


def test_a_pair_of_columns_determines_a_key():
    """k = (a + b) mod 3 over letters: neither a nor b alone tells k (a third of the rows each way),
    the pair does on every row."""
    rng = np.random.default_rng(1)
    a, b = rng.integers(0, 3, 900), rng.integers(0, 3, 900)
    frame = pd.DataFrame({"k": np.array(list("pqr"))[(a + b) % 3], "a": np.array(list("ABC"))[a],
                          "b": np.array(list("XYZ"))[b], "noise": rng.normal(size=900)})
    for column in ("a", "b"):
        assert pd.crosstab(frame[column], frame["k"]).max(axis=1).sum() < 0.5 * 900
    result = audit(frame, ["k", "noise"], ["a", "b"])
    found = [f for f in result.findings if f.column == "k"]
    assert [(f.kind, set(f.determining), f.rows) for f in found] == [("dependency", {"a", "b"}, 900)]
    assert "a and b together determine k on 900/900 rows" in found[0].text


def test_missing_values_of_the_determined_column_do_not_hide_a_dependency():
    """band = a band of key f on every row that has it; 30 of 600 bands missing. Counted over the rows
    with a band, f's deciles pin it on... every one of them: the missing ones neither confirm nor
    contradict it (counted against it, 570/600 = 95% would sit on the threshold's edge)."""
    rng = np.random.default_rng(5)
    f = rng.integers(0, 10, 600)
    band = np.array(["low", "mid", "high"], dtype=object)[np.minimum(f // 4, 2)]
    band[rng.choice(600, 30, replace=False)] = None
    frame = pd.DataFrame({"f": f, "band": band})
    found = [x for x in audit(frame, ["f"], ["band"], pairs=False).findings if x.column == "band"]
    assert [(x.kind, x.rows, x.n) for x in found] == [("dependency", 570, 570)]
    assert "f determines band on 570/570 rows" in found[0].text


# ---------------------------------------------------------------------------- columns of every type

def test_binned_numeric_columns_say_how():
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"few": rng.integers(0, MAX_LEVELS, 500), "many": rng.normal(size=500)})
    few, many = encode(frame["few"]), encode(frame["many"])
    assert few.how == "its values" and few.levels == frame["few"].nunique()
    assert many.how == f"binned at its deciles ({BINS} bins)" and many.levels == BINS
    edges = np.quantile(frame["many"], np.arange(1, BINS) / BINS)
    assert (np.bincount(many.codes) == np.bincount(np.searchsorted(edges, frame["many"], side="right"))).all()


def test_a_date_in_text_is_audited_as_a_date():
    """A birth date (ISO text) determines the age key's bin: found, nothing left unaudited."""
    rng = np.random.default_rng(5)
    age = rng.integers(18, 90, 3000)
    birth = pd.Timestamp("2020-01-01") - pd.to_timedelta(age * 365 + rng.integers(0, 365, 3000), unit="D")
    frame = pd.DataFrame({"age": age, "born": birth.strftime("%Y-%m-%d"), "x": rng.normal(size=3000)})
    result = audit(frame, ["age", "x"], ["born"])
    assert result.not_audited == ()
    found = [f for f in result.findings if f.column == "age" and f.determining == ("born",)]
    assert found and found[0].kind in ("dependency", "partial dependency")
    assert "born (binned at its (dates, as days) deciles" in found[0].text


def test_a_column_that_cannot_be_audited_is_said(tmp_path, capsys):
    """Free text with one value per record: no class of it can pin anything. The audit lists it
    with the reason; a release is warned; `probanon audit` prints it."""
    rng = np.random.default_rng(2)
    n = 300
    frame = pd.DataFrame({"x": rng.normal(size=n), "c": rng.normal(size=n),
                          "note": [f"called on day {i}, said {rng.integers(10**6)}" for i in range(n)],
                          "empty": [np.nan] * n})
    result = audit(frame, ["x"], ["c", "note", "empty"])
    assert result.passed
    reasons = dict(result.not_audited)
    assert set(reasons) == {"note", "empty"}
    assert f"{n:,} distinct values in {n:,} records" in reasons["note"] and reasons["empty"] == "no value"
    assert "note not audited" in result.summary()
    assert {d["column"] for d in result.to_dict()["not_audited"]} == {"note", "empty"}
    with pytest.warns(ProbanonWarning, match="could not read every released column: note not audited"):
        verdict(result)
    path = tmp_path / "f.csv"
    frame.to_csv(path, index=False)
    code, stdout, _ = run_cli(["audit", path, "--keys", "x", "--confidential", "c,note,empty"], capsys)
    assert code == 0 and "not audited: note:" in stdout and "not audited: empty: no value" in stdout


def test_nominal_codes_take_no_part_in_linear_relations():
    """A numeric code of categories (--nominal): its values are classes, never numbers."""
    rng = np.random.default_rng(4)
    code = rng.integers(1, 6, 1000)
    frame = pd.DataFrame({"code": code, "amount": code * 100.0})
    numeric = audit(frame, ["code"], ["amount"])
    assert {"regression", "monotone"} & {f.kind for f in numeric.findings}
    nominal = audit(frame, ["code"], ["amount"], nominal=["code"])
    assert {f.kind for f in nominal.findings} <= {"dependency", "partial dependency"}
    assert any(f.kind == "dependency" and f.column == "code" for f in nominal.findings)


def test_clean_files_pass():
    """Independent columns of every type: nothing found, every column audited."""
    rng = np.random.default_rng(9)
    n = 3000
    frame = pd.DataFrame({"k1": rng.normal(size=n), "k2": rng.choice(list("abcd"), n), "k3": rng.integers(0, 5, n),
                          "c1": rng.lognormal(size=n), "c2": rng.choice(["yes", "no"], n),
                          "c3": rng.integers(0, 10**6, n)})
    result = audit(frame, ["k1", "k2", "k3"], ["c1", "c2", "c3"])
    assert result.passed and result.not_audited == () and result.deferred == ()
    assert result.summary().startswith("audit: no key is determined by the released columns")


@pytest.mark.parametrize("option", [{"min_share": 0.0}, {"partial_share": 1.5}, {"min_gain": -1}])
def test_bad_thresholds(option):
    with pytest.raises(ParameterError):
        audit(small_table(), ["y"], ["x"], **option)


def test_unknown_nominal_column_is_an_error():
    with pytest.raises(InputError, match="NOPE"):
        audit(small_table(), ["y"], ["x"], nominal=["NOPE"])


def test_cli_bad_share(tmp_path, capsys):
    path = tmp_path / "t.csv"
    small_table().to_csv(path, index=False)
    code, stdout, err = run_cli(["audit", path, "--keys", "y", "--confidential", "x", "--min-share", "1.5"], capsys)
    assert code == 2 and stdout == "" and len(err.strip().splitlines()) == 1


def test_nothing_is_said_when_every_column_is_audited():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        verdict(audit(small_table(), ["y"], ["x"], partial_share=1.0))


def test_census_finds_ptotval_only_and_passes_without_it(shared_data):
    """The census (13 numeric columns, each binned at its deciles for the dependency search):
    PTOTVAL = PEARNVAL + POTHVAL is still the one finding while PTOTVAL is a key; with it
    confidential nothing is found (the largest Spearman rho^2 between a key and a confidential
    column, FEDTAX-TAXINC, is below 0.99: recomputed here)."""
    census = pd.read_csv(shared_data / "casc" / "census.csv")
    keys = ["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "STATETAX"]
    confidential = [c for c in census.columns if c not in keys]
    with_ptotval = audit(census, keys + ["PTOTVAL"], [c for c in confidential if c != "PTOTVAL"])
    assert [(f.kind, f.column) for f in with_ptotval.findings] == [("relation", "PTOTVAL")]
    rho2 = max(spearmanr(census[k], census[c])[0] ** 2 for k in keys for c in confidential)
    assert 0.9 < rho2 < 0.99
    clean = audit(census, keys, confidential)
    assert clean.passed and clean.not_audited == () and clean.deferred == ()


def test_a_release_says_the_columns_it_could_not_audit(tmp_path, capsys, shared_data):
    """A free-text column released per record: the release goes out (nothing found), and a warning
    after the summary of what was written names the column and why; an input error stays one line."""
    census = pd.read_csv(shared_data / "casc" / "census.csv").iloc[:200]
    census["note"] = [f"interviewed on visit {i}" for i in range(len(census))]
    path, out = tmp_path / "in.csv", tmp_path / "out.csv"
    census.to_csv(path, index=False)
    argv = ["microaggregate", path, "-o", out, "--keys", "AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX", "--confidential",
            "TAXINC,note", "--drop", "PTOTVAL,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL", "--seed", 1, "--quiet"]
    code, _, err = run_cli(argv + ["-k", 5], capsys)
    assert code == 0, err
    lines = err.strip().splitlines()
    said = [i for i, line in enumerate(lines) if line.startswith(
        "probanon: warning: the pre-release audit could not read every released column: note not audited: 200 distinct "
        "values in 200 records")]
    assert len(said) == 1 and said[0] > next(i for i, line in enumerate(lines) if line.startswith("wrote "))
    out.unlink()
    code, _, err = run_cli(argv + ["-k", 201], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and not out.exists()

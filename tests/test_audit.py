"""Issue 14 (honest guarantees): the relation search and the pre-release audit
(probanon.attacks.relations, probanon.attacks.audit), and the audit gate of the release commands.

Relations are checked against the columns themselves (pandas), regressions against an adjusted R^2
computed here with numpy."""

import json

import numpy as np
import pandas as pd
import pytest
from helpers import DATA, adjusted_r2

from probanon.attacks.audit import audit
from probanon.attacks.relations import relations_in
from probanon.cli import main
from probanon.errors import InputError, ParameterError

CENSUS = DATA / "census.csv"
KEYS = ["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX"]
CONF = ["TAXINC", "POTHVAL", "INTVAL", "PEARNVAL", "FICA", "WSALVAL", "ERNVAL"]
KEYS_WITHOUT = [c for c in KEYS if c != "PTOTVAL"]


@pytest.fixture(scope="module")
def census_frame(shared_data):
    return pd.read_csv(CENSUS)


def as_zero_sum(relation) -> frozenset:
    """The relation as sum(coef * column) = 0 (keys positive, confidential negated)."""
    return frozenset(list(relation.key_terms) + [(name, -coef) for name, coef in relation.confidential_terms])


def same_relation(relation, zero_sum: dict) -> bool:
    """Equal to ``sum(zero_sum[c] * c) = 0`` up to a global sign, whatever the order of the terms."""
    mine = as_zero_sum(relation)
    return mine in (frozenset(zero_sum.items()), frozenset((c, -v) for c, v in zero_sum.items()))


def run_cli(argv, capsys):
    code = main([str(a) for a in argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# ---------------------------------------------------------------------------------- the census

PTOTVAL_RELATION = {"PTOTVAL": 1, "PEARNVAL": -1, "POTHVAL": -1}


def test_relation_search_finds_ptotval_on_census(census_frame):
    n = len(census_frame)
    holds = int((census_frame["PTOTVAL"] == census_frame["PEARNVAL"] + census_frame["POTHVAL"]).sum())
    assert holds == n == 1080
    X, C = census_frame[KEYS].to_numpy(dtype=float), census_frame[CONF].to_numpy(dtype=float)
    found = relations_in(X, C, KEYS, CONF)
    assert found and same_relation(found[0].relation, PTOTVAL_RELATION)  # the strongest first
    first = found[0]
    assert dict(first.relation.key_terms) == {"PTOTVAL": 1}
    assert dict(first.relation.confidential_terms) == {"PEARNVAL": 1, "POTHVAL": 1}
    assert (first.holds, first.n) == (holds, n)
    # every PTOTVAL distinct and the relation exact on every row: each record is singled out
    assert census_frame["PTOTVAL"].nunique() == n and first.singles_out == n
    assert "on 1,080/1,080 rows" in str(first)


def test_audit_names_ptotval_on_census(census_frame):
    result = audit(census_frame, KEYS, CONF)
    assert not result.passed
    relations = [f for f in result.findings if f.kind == "relation"]
    assert [f.column for f in relations] == ["PTOTVAL"]
    f = relations[0]
    assert f.direction == "key determined by confidential columns" and f.share == 1.0
    assert "1,080/1,080" in f.text and all(c in f.text for c in ("PTOTVAL", "PEARNVAL", "POTHVAL"))
    assert "PTOTVAL" in result.summary()
    doc = result.to_dict()
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc and doc["passed"] is False
    # PTOTVAL confidential (or left out): nothing left to find
    assert audit(census_frame, KEYS_WITHOUT, CONF + ["PTOTVAL"]).passed
    assert audit(census_frame, KEYS_WITHOUT, CONF).passed


# ------------------------------------------------------------------------------ built relations

def built(n=500, seed=0) -> pd.DataFrame:
    """x1 = c1 - c2 (a key determined by confidential columns) and c3 = x2 + x3 (a confidential
    column determined by keys), integers well apart so that every record is singled out."""
    rng = np.random.default_rng(seed)
    c1, c2, x2, x3 = (rng.integers(0, 10**6, n).astype(float) for _ in range(4))
    return pd.DataFrame({"x1": c1 - c2, "x2": x2, "x3": x3, "c1": c1, "c2": c2, "c3": x2 + x3})


def test_relations_both_directions_with_signs():
    frame = built()
    X, C = frame[["x1", "x2", "x3"]].to_numpy(), frame[["c1", "c2", "c3"]].to_numpy()
    found = relations_in(X, C, ["x1", "x2", "x3"], ["c1", "c2", "c3"])
    want = [{"x1": 1, "c1": -1, "c2": 1}, {"x2": 1, "x3": 1, "c3": -1}]
    for zero_sum in want:  # checked on the data itself first
        assert (sum(v * frame[c] for c, v in zero_sum.items()) == 0).all()
        assert sum(same_relation(f.relation, zero_sum) for f in found) == 1, [str(f) for f in found]
    result = audit(frame, ["x1", "x2", "x3"], ["c1", "c2", "c3"])
    by_column = {f.column: f for f in result.findings if f.kind == "relation"}
    assert by_column["x1"].direction == "key determined by confidential columns"
    assert by_column["c3"].direction == "confidential column determined by keys"
    assert all(f.share == 1.0 and "500/500" in f.text for f in by_column.values())


def test_near_exact_relation_share_and_threshold():
    """A relation broken on 4% of the rows is still a relation (min_share 0.95, on 96%); the
    broken rows are not counted."""
    frame = built(seed=1)
    rng = np.random.default_rng(2)
    broken = rng.choice(len(frame), 20, replace=False)
    frame.loc[broken, "x1"] += 7.0
    holds = int((frame["x1"] == frame["c1"] - frame["c2"]).sum())
    assert holds == 480
    found = relations_in(frame[["x1", "x2"]].to_numpy(), frame[["c1", "c2"]].to_numpy(), ["x1", "x2"],
                         ["c1", "c2"])
    f = next(f for f in found if same_relation(f.relation, {"x1": 1, "c1": -1, "c2": 1}))
    assert (f.holds, f.n) == (holds, 500) and f.singles_out == holds
    assert relations_in(frame[["x1", "x2"]].to_numpy(), frame[["c1", "c2"]].to_numpy(), ["x1", "x2"],
                        ["c1", "c2"], min_share=0.97) == []


def test_regressions_flagged_at_the_threshold():
    """Flagged: exactly the columns whose adjusted R^2 on the other side (identity or signed log1p
    scale, the larger) reaches the threshold, in the right direction."""
    rng = np.random.default_rng(3)
    n = 800
    frame = pd.DataFrame(rng.normal(size=(n, 4)), columns=["x1", "x2", "c1", "c2"])
    frame["x3"] = 2.5 * frame["c1"] - 0.7 * frame["c2"] + rng.normal(scale=0.01, size=n)  # R^2 ~ 1
    frame["c3"] = frame["x1"] + frame["x2"] + rng.normal(scale=0.6, size=n)  # R^2 ~ 0.85
    keys, conf = ["x1", "x2", "x3"], ["c1", "c2", "c3"]

    def slog(v):
        return np.sign(v) * np.log1p(np.abs(v))

    def best_r2(column, others):
        A, y = frame[others].to_numpy(), frame[column].to_numpy()
        return max(adjusted_r2(A, y), adjusted_r2(slog(A), slog(y)))

    r2 = {c: best_r2(c, conf) for c in keys} | {c: best_r2(c, keys) for c in conf}
    assert r2["x3"] > 0.99 and 0.8 < r2["c3"] < 0.9 and max(r2[c] for c in ("x1", "x2", "c2")) < 0.8
    direction = {c: "key determined by confidential columns" for c in keys} | {
        c: "confidential column determined by keys" for c in conf}
    for threshold in (0.99, r2["c3"] - 0.01, r2["c3"] + 0.01, 0.5):
        result = audit(frame, keys, conf, r2_threshold=threshold)
        assert all(f.kind == "regression" for f in result.findings)
        assert {f.column for f in result.findings} == {c for c, v in r2.items() if v >= threshold}, threshold
        for f in result.findings:
            assert f.direction == direction[f.column] and f.share == pytest.approx(r2[f.column], abs=1e-9)


def test_independent_columns_pass():
    rng = np.random.default_rng(4)
    frame = pd.DataFrame(np.column_stack([rng.lognormal(3.0, 1.0, size=(2000, 3)),
                                          rng.integers(0, 1000, size=(2000, 3))]),
                         columns=["x1", "x2", "x3", "c1", "c2", "c3"])
    result = audit(frame, ["x1", "x2", "x3"], ["c1", "c2", "c3"])
    assert result.passed and result.findings == ()


@pytest.mark.parametrize("r2", [0.0, 1.5, -0.1])
def test_bad_threshold(census_frame, r2):
    with pytest.raises(ParameterError):
        audit(census_frame, KEYS, CONF, r2_threshold=r2)


def test_audit_unknown_column_is_an_error(census_frame):
    with pytest.raises(InputError, match="NOPE"):
        audit(census_frame, ["NOPE"], CONF)


def test_package_exports_audit_function():
    from probanon.attacks import audit as exported

    assert exported.__wrapped__ is audit  # behind the public edge's signature check (issue 39.7)


# --------------------------------------------------------------------------------- the CLI gate

def swap_argv(out, keys=KEYS, conf=CONF, *extra):
    return ["swap", CENSUS, "-o", out, "-k", 5, "--method", "mdav-swap", "--keys", ",".join(keys),
            "--confidential", ",".join(conf), "--seed", 1, *extra]


def micro_argv(out, keys=KEYS, conf=CONF, *extra):
    return ["microaggregate", CENSUS, "-o", out, "-k", 5, "--keys", ",".join(keys), "--confidential",
            ",".join(conf), "--seed", 1, "--quiet", *extra]


@pytest.mark.parametrize("argv", [swap_argv, micro_argv], ids=["swap", "microaggregate"])
def test_release_refused_while_ptotval_is_a_key(tmp_path, capsys, argv):
    out, link = tmp_path / "out.csv", tmp_path / "link.csv"
    code, stdout, err = run_cli(argv(out, KEYS, CONF, "--link", link), capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("probanon: error:") and "PTOTVAL" in lines[0]
    assert "--accept-risk" in lines[0]
    assert list(tmp_path.iterdir()) == [] and stdout == ""

    code, _, err = run_cli(argv(out, KEYS, CONF, "--accept-risk"), capsys)
    assert code == 0, err
    assert out.is_file() and len(pd.read_csv(out)) == 1080
    assert "warning" in err and "PTOTVAL" in err
    out.unlink()


@pytest.mark.parametrize("argv", [swap_argv, micro_argv], ids=["swap", "microaggregate"])
def test_release_runs_once_ptotval_is_confidential_or_dropped(tmp_path, capsys, census_frame, argv):
    out = tmp_path / "confidential.csv"
    code, _, err = run_cli(argv(out, KEYS_WITHOUT, CONF + ["PTOTVAL"]), capsys)
    assert code == 0, err
    assert "warning" not in err
    released = pd.read_csv(out)
    assert sorted(released["PTOTVAL"]) == sorted(census_frame["PTOTVAL"])  # kept, per record
    out = tmp_path / "dropped.csv"
    code, _, err = run_cli(argv(out, KEYS_WITHOUT, CONF, "--drop", "PTOTVAL"), capsys)
    assert code == 0, err
    assert "PTOTVAL" not in pd.read_csv(out).columns


def test_cli_audit_exit_codes(capsys):
    code, stdout, _ = run_cli(["audit", CENSUS, "--keys", ",".join(KEYS), "--confidential", ",".join(CONF)], capsys)
    assert code == 1 and "PTOTVAL" in stdout and "1,080/1,080" in stdout
    code, stdout, _ = run_cli(["audit", CENSUS, "--keys", ",".join(KEYS), "--confidential", ",".join(CONF),
                               "--json"], capsys)
    doc = json.loads(stdout)
    assert code == 1 and doc["passed"] is False and "PTOTVAL" in [f["column"] for f in doc["findings"]]
    code, stdout, _ = run_cli(["audit", CENSUS, "--keys", ",".join(KEYS_WITHOUT), "--confidential",
                               ",".join(CONF + ["PTOTVAL"]), "--json"], capsys)
    doc = json.loads(stdout)
    assert code == 0 and doc["passed"] is True and doc["findings"] == []


@pytest.mark.parametrize("argv", [
    ["--keys", "NOPE", "--confidential", ",".join(CONF)],
    ["--keys", ",".join(KEYS), "--confidential", ""],
    ["--keys", ",".join(KEYS), "--confidential", ",".join(CONF), "--r2", "0"],
])
def test_cli_audit_bad_input(capsys, argv):
    code, stdout, err = run_cli(["audit", CENSUS, *argv], capsys)
    lines = err.strip().splitlines()
    assert code == 2 and stdout == ""
    assert len(lines) == 1 and lines[0].startswith("probanon: error:")

"""``probanon risk FILE`` (issue 39, point 10): the risk profile of one file, as sdcMicro's
``print(sdc, "risk")`` / ``print(sdc, "kAnon")``, against an independent computation (pandas group
counts, the Benedetti-Franconi formulas written out here, R's mad) and against ``evaluate FILE FILE
--by-position``."""

import json
import math
import statistics

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main


def _people(n=60, seed=4) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(30, 36, n), "sex": rng.choice(["F", "M"], n),
                         "region": rng.choice(["north", "south", "east"], n, p=[0.6, 0.3, 0.1]),
                         "w": rng.uniform(2, 40, n).round(1), "income": rng.normal(3e4, 5e3, n).round(0)})


def _benedetti_franconi(f: int, F: float) -> float:
    """sdcMicro's indivRisk approximation, p = f / F (F > f here: every weight is >= 2)."""
    p = f / F
    if f == 1:
        return p / (1 - p) * math.log(1 / p)
    if f == 2:
        return p / (1 - p) - (p / (1 - p)) ** 2 * math.log(1 / p)
    return p / (f - (1 - p))


def _expected(frame, keys, weights=None):
    """f_k, F_k and the individual risk of every record from pandas group counts and sums."""
    groups = frame.groupby(keys)
    fk = groups[keys[0]].transform("size").to_numpy()
    if weights is None:
        return fk, fk.astype(float), 1.0 / fk  # the file is the population: r = 1/f_k
    Fk = groups[weights].transform("sum").to_numpy()
    return fk, Fk, np.array([_benedetti_franconi(int(f), float(F)) for f, F in zip(fk, Fk)])


def _r_main_level(risk) -> float:
    """max(0.1, median + 2 mad), R's mad = 1.4826 median |r - median| (sdcMicro, printFunctions.R)."""
    median = statistics.median(risk)
    return max(0.1, median + 2 * 1.4826 * statistics.median(abs(r - median) for r in risk))


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("weights", [None, "w"])
def test_risk_profile_matches_an_independent_computation(tmp_path, capsys, weights):
    frame = _people()
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    extra = ["--weights", weights] if weights else []
    code, out, err = _run(capsys, ["risk", str(path), "--keys", "age", "--categorical-keys", "sex,region",
                                   *extra, "--json", "-o", str(tmp_path / "risk.csv")])
    assert code == 0 and err == "", err
    result = json.loads(out)
    fk, Fk, r = _expected(frame, ["age", "sex", "region"], weights)
    assert result["records"] == 60 and result["weighted"] == (weights is not None)
    assert result["sample_uniques"] == int((fk == 1).sum()) > 0
    assert result["violations"] == {str(k): int((fk < k).sum()) for k in (2, 3, 5)}
    assert result["expected_reidentifications"] == pytest.approx(r.sum(), rel=1e-12)
    assert result["global_risk"] == pytest.approx(r.mean(), rel=1e-12)
    summary = result["individual_risk"]
    assert [summary[q] for q in ("min", "q25", "median", "q75", "max")] == pytest.approx(
        list(np.quantile(r, [0, 0.25, 0.5, 0.75, 1])), rel=1e-12)
    level = _r_main_level(list(r))
    assert result["main_risk_level"] == pytest.approx(level, rel=1e-12)
    assert result["records_above_level"] == int((r > level).sum())
    written = pd.read_csv(tmp_path / "risk.csv")
    assert list(written.columns) == ["record", "age", "sex", "region", "fk", "Fk", "risk", "above_level"]
    np.testing.assert_array_equal(written["record"], np.arange(1, 61))
    np.testing.assert_array_equal(written["fk"], fk)
    np.testing.assert_allclose(written["Fk"], Fk, rtol=1e-12)
    np.testing.assert_allclose(written["risk"], r, rtol=1e-12)
    np.testing.assert_array_equal(written["above_level"], r > level)


def test_the_summary_reads_like_sdcmicro(tmp_path, capsys):
    """Sample uniques, the 2/3/5-anonymity violations with their shares, the individual and global
    risk and the records above the main risk level, in words; JSON only with --json."""
    frame = pd.DataFrame({"zip": [1] * 6 + [2] * 3 + [3, 4], "sex": list("FFFFFF") + list("MMM") + list("FM")})
    path = tmp_path / "f.csv"
    frame.to_csv(path, index=False)
    code, out, _ = _run(capsys, ["risk", str(path), "--keys", "zip", "--categorical-keys", "sex"])
    assert code == 0 and not out.lstrip().startswith("{")
    lines = out.splitlines()
    # f_k: six records of 6, three of 3, two uniques; r = 1/f_k; median 1/6, mad 0: level max(0.1, 1/6),
    # above it the records of risk 1/3 and 1
    expected = {"records": "11", "sample uniques": "2 (18.182 %)", "records violating": "2-anonymity: 2 (18.182 %)",
                "expected re-identifications": "4.00 (36.36 % of the records: the global risk)",
                "records above the risk level": "5 (45.455 %)"}
    for label, text in expected.items():
        assert any(line.startswith(f"{label}:") and line.split(":", 1)[1].strip().startswith(text)
                   for line in lines), (label, out)
    assert "3-anonymity: 2 (18.182 %)" in out and "5-anonymity: 5 (45.455 %)" in out
    assert "risk > 0.1667 = max(0.1, median + 2 MAD)" in " ".join(out.split())
    code, out, _ = _run(capsys, ["risk", str(path), "--keys", "zip", "--categorical-keys", "sex", "--threshold", "0.5"])
    assert code == 0 and "records above the risk level: 2 (18.182 %)" in out and "(risk > 0.5, --threshold)" in out


def test_risk_agrees_with_evaluate_by_position(tmp_path, capsys):
    frame = _people(80, seed=9)
    path = tmp_path / "people.csv"
    frame.to_csv(path, index=False)
    keys = ["--keys", "age,income", "--categorical-keys", "sex,region", "--weights", "w"]
    code, out, _ = _run(capsys, ["evaluate", str(path), str(path), *keys, "--by-position", "--json"])
    assert code == 0
    by_evaluate = json.loads(out)["frequency_risk"]["original"]
    code, out, _ = _run(capsys, ["risk", str(path), *keys, "--json"])
    assert code == 0
    by_risk = json.loads(out)
    for name in ("records", "sample_uniques", "violations", "expected_reidentifications", "global_risk",
                 "max_individual_risk"):
        assert by_risk[name] == by_evaluate[name], name


def test_missing_key_values(tmp_path, capsys):
    """A missing numeric key is refused (one line naming the file line) unless --missing pattern;
    then, like a missing category, it matches any value (sdcMicro's freqCalc)."""
    path = tmp_path / "m.csv"
    path.write_text("age,sex\n30,F\n,F\n31,F\n30,\n32,M\n")
    code, out, err = _run(capsys, ["risk", str(path), "--keys", "age", "--categorical-keys", "sex"])
    assert code == 2 and out == "" and len(err.splitlines()) == 1
    assert "line 3" in err and "--missing pattern" in err
    code, out, _ = _run(capsys, ["risk", str(path), "--keys", "age", "--categorical-keys", "sex", "--missing",
                                 "pattern", "--json"])
    assert code == 0
    # f_k by hand: (30,F) ~ (,F) ~ (30,): 3; (,F) ~ every F and (30,): 4; (31,F) ~ (,F): 2; (30,) ~ (30,F), (,F): 3;
    # (32,M) alone: 1
    result = json.loads(out)
    assert result["sample_uniques"] == 1 and result["violations"] == {"2": 1, "3": 2, "5": 5}
    assert result["expected_reidentifications"] == pytest.approx(1 / 3 + 1 / 4 + 1 / 2 + 1 / 3 + 1)
    code, out, _ = _run(capsys, ["risk", str(path), "--keys", "age", "--categorical-keys", "sex", "--missing",
                                 "pattern"])
    assert "2 (40.000 %) with a missing key value" in out


@pytest.mark.parametrize("argv, fragment", [
    (["--threshold", "0"], "--threshold"), (["--threshold", "1.5"], "--threshold"),
    ([], "--keys or --categorical-keys"), (["--keys", "nope"], "no column 'nope'"),
    (["--keys", "sex"], "sex"), (["--keys", "age", "--weights", "sex"], "weight column"),
    (["--keys", "age", "--categorical-keys", "age"], "named by both"),
    (["--categorical-keys", "risk", "-o", "OUT"], "name of a column of the risk file")])
def test_bad_arguments_are_one_line(tmp_path, capsys, argv, fragment):
    frame = _people(10).rename(columns={"income": "risk"})
    path = tmp_path / "p.csv"
    frame.to_csv(path, index=False)
    argv = [str(tmp_path / "out.csv") if a == "OUT" else a for a in argv]
    code, out, err = _run(capsys, ["risk", str(path), *argv])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and fragment in err, err
    assert not (tmp_path / "out.csv").exists()

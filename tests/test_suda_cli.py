"""``risk``/``evaluate``/``report`` with --suda2, --household and --combinations (issue 43.5):
the figures against computations written here (pandas group counts, the formulas of SUDA's
DIS-SUDA and of the household risk, sdcMicro's guideline SUDA scores)."""

import json
import statistics
from itertools import combinations

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main

from test_suda import GUIDELINE as SDC_GUIDELINE, GUIDELINE_SCORES as SCORES

# sdcMicro's guideline example (test_suda2.R) with households
GUIDELINE = SDC_GUIDELINE.assign(hid=[1, 1, 2, 2, 2, 3, 4, 4, 5, 5])
KEYS = ["Residence", "Gender", "Education", "Labor"]


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _sizes(frame, keys):
    return frame.groupby(keys)[keys[0]].transform("size").to_numpy()


def test_risk_json_and_per_record_file(tmp_path, capsys):
    path = tmp_path / "g.csv"
    GUIDELINE.to_csv(path, index=False)
    code, out, err = _run(capsys, ["risk", str(path), "--categorical-keys", ",".join(KEYS), "--suda2", "--household",
                                   "hid", "--combinations", "2", "-k", "2", "--json", "-o", str(tmp_path / "r.csv")])
    assert code == 0, err
    result = json.loads(out)
    written = pd.read_csv(tmp_path / "r.csv")
    assert written["suda_score"].tolist() == SCORES
    suda = result["suda2"]
    assert suda["records_with_msu"] == 4 and suda["max_score"] == 12
    # DIS-SUDA by its formula: U uniques and P records in pairs on all keys, f = 0.01, Q = 1 + (8 - 4)/20
    f = _sizes(GUIDELINE, KEYS)
    U, P = int((f == 1).sum()), int((f == 2).sum())
    dis = U * 0.01 / (U * 0.01 + P * 0.99)
    assert (suda["uniques"], suda["pair_records"]) == (U, P) and suda["dis"] == pytest.approx(dis)
    q = 1.2
    adjust = sum(s ** -q for s in SCORES if s)
    expected = [1 / (1 + (U / dis - U) / (s ** q * adjust)) if s else 0.0 for s in SCORES]
    np.testing.assert_allclose(written["dis_score"], expected)
    assert suda["records_dis_above_high"] == sum(d > 0.7 for d in expected)
    # household risk: no weights, r = 1/f_k; 1 - prod(1 - r) within each household
    r = 1.0 / f
    by_household = pd.Series(1 - r).groupby(GUIDELINE["hid"]).prod().rsub(1)
    np.testing.assert_allclose(written["household_risk"], by_household[GUIDELINE["hid"]].to_numpy())
    household = result["household_risk"]
    assert household["households"] == 5
    assert household["expected_reidentifications"] == pytest.approx(by_household[GUIDELINE["hid"]].sum())
    assert household["expected_households"] == pytest.approx(by_household.sum())
    # records below k = 2 on every combination of at most 2 keys, by pandas group counts
    below = {c: _sizes(GUIDELINE, list(c)) < 2 for size in (1, 2) for c in combinations(KEYS, size)}
    table = {tuple(row["keys"]): row["records_below_k"] for row in result["k_violations"]["combinations"]}
    assert table == {c: int(b.sum()) for c, b in below.items()}
    assert result["k_violations"]["violating_records"] == int(np.any(list(below.values()), axis=0).sum())
    # records above sdcMicro's main level: max(0.1, median + 2 mad)
    median = statistics.median(r)
    level = max(0.1, median + 2 * 1.4826 * statistics.median(abs(x - median) for x in r))
    assert result["records_above_main_level"] == int((r > level).sum())


def test_risk_summary_names_every_measure(tmp_path, capsys):
    path = tmp_path / "g.csv"
    GUIDELINE.to_csv(path, index=False)
    code, out, _ = _run(capsys, ["risk", str(path), "--categorical-keys", ",".join(KEYS), "--suda2",
                                 "--suda-max-size", "2", "--household", "hid", "--combinations", "3"])
    assert code == 0
    text = " ".join(out.split())
    assert "SUDA2: 4 records with a minimal sample unique (MSUs of at most 2 keys" in text
    assert "household risk: 5 households" in text and "k per key combination:" in text
    assert "DIS-SUDA scores (as sdcMicro's print.suda2): == 0 6" in text


def test_evaluate_reports_both_sides(tmp_path, capsys):
    original, released = tmp_path / "o.csv", tmp_path / "r.csv"
    frame = GUIDELINE.assign(x=np.arange(10.0), note=list("abcdefghij"))
    frame.to_csv(original, index=False)
    # released: education coarsened, households renumbered (not checked as released unchanged)
    frame.assign(Education=frame["Education"].str.split().str[0], hid=frame["hid"] + 10).to_csv(released, index=False)
    argv = ["evaluate", str(original), str(released), "--keys", "x", "--categorical-keys", ",".join(KEYS),
            "--by-position", "--suda2", "--combinations", "2", "--household", "hid"]
    code, out, err = _run(capsys, argv + ["--json"])
    assert code == 0, err
    result = json.loads(out)
    assert set(result["suda2"]) == set(result["household_risk"]) == {"original", "released"}
    assert result["k_violations"]["original"]["k"] == 3  # no -k: sdcMicro's kAnon default
    # x is unique per record: every record has an MSU; those of size 1 are the values unique in their column
    assert result["suda2"]["original"]["records_with_msu"] == 10
    singles = sum(int((_sizes(frame, [c]) == 1).sum()) for c in ["x"] + KEYS)
    assert result["suda2"]["original"]["msu_sizes"][0] == {"size": 1, "msus": singles, "records": 10}
    code, out, _ = _run(capsys, argv)
    assert code == 0
    assert "records above the main risk level" in out and "risk measures of the original:" in out
    assert "risk measures of the release:" in out and "household risk:" in out


def test_report_has_the_tables(tmp_path, capsys):
    original = tmp_path / "o.csv"
    frame = GUIDELINE.assign(x=np.arange(10.0), note=list("abcdefghij"))
    frame.to_csv(original, index=False)
    code, _, err = _run(capsys, ["report", str(original), str(original), "--keys", "x", "--categorical-keys",
                                 ",".join(KEYS), "--by-position", "--suda2", "--household", "hid", "--combinations",
                                 "2", "-o", str(tmp_path / "rep")])
    assert code == 0, err
    html = (tmp_path / "rep" / "internal" / "index.html").read_text()
    for heading in ("SUDA2", "Household risk", "k-anonymity per key combination",
                    "records above the main risk level"):
        assert heading in html


@pytest.mark.parametrize("extra,message", [(["--household", "nope"], "no column 'nope'"),
                                           (["--household", "Gender"], "also a key"),
                                           (["--suda-max-size", "2"], "add --suda2"),
                                           (["--dis-fraction", "1.5"], "fraction"),
                                           (["--suda2", "--suda-max-size", "9"], "max_size")])
def test_bad_input_one_line_exit_2(tmp_path, capsys, extra, message):
    path = tmp_path / "g.csv"
    GUIDELINE.to_csv(path, index=False)
    code, out, err = _run(capsys, ["risk", str(path), "--categorical-keys", ",".join(KEYS), *extra])
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err, err


def test_missing_household_id_refused(tmp_path, capsys):
    path = tmp_path / "g.csv"
    GUIDELINE.assign(hid=GUIDELINE["hid"].where(GUIDELINE.index != 3)).to_csv(path, index=False)
    code, out, err = _run(capsys, ["risk", str(path), "--categorical-keys", ",".join(KEYS), "--household", "hid"])
    assert code == 2 and out == "" and "missing" in err

"""Readable output (issue 39, point 11): ``survey plan``, ``survey simulate``, ``diversity plan``,
``km check`` and ``km uniqueness`` print a summary in words (JSON only with ``--json``), a
simulation explains every prediction that misses its interval, and ``km anonymize`` says what its
err is (checked against the NCP computed here from the written partition)."""

import json
import math
import re
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from helpers import DATA

from probanon.cli import main


def _run(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _not_json(text: str) -> None:
    with pytest.raises(ValueError):
        json.loads(text)


def _flat(text: str) -> str:
    """The text with its line wrapping undone."""
    return " ".join(text.split())


def test_survey_plan_reads_in_words(capsys):
    argv = ["survey", "plan", "-k", "20", "--participation", "0.5", "--risk", "0.1", "--records", "1000"]
    code, out, _ = _run(capsys, argv)
    assert code == 0
    _not_json(out)
    text = _flat(out)
    # paper 1, Table II (k = 20, pi = 0.5, pbar = 0.1): n_min = 48, qbar = .09671, u = 17.85, rbar = .03597
    for fragment in ("effective anonymity n_min: 48 records per cell", "cell failure qbar: 0.09671: probability",
                     "mean unprotected u: 17.85 respondents", "record failure rbar: 0.03597",
                     "given participation rbar': 0.07193",  # rbar / pi
                     "1,000 records: 19 cells of 48 and one of 88", "table failure tbar:"):
        assert fragment in text, (fragment, out)
    code, out, _ = _run(capsys, argv + ["--json"])
    assert code == 0 and json.loads(out)["n_min"] == 48


@pytest.fixture(scope="module")
def census_spec(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spec")
    spec = folder / "spec.json"
    assert main(["survey", "design", str(DATA / "census.csv"), "-k", "5", "--participation", "0.6", "--risk",
                 "0.001", "--columns", "AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX", "-o", str(spec), "--quiet"]) == 0
    return spec


SIMULATED = {"cell_failure": "cell failure qbar", "mean_unprotected": "mean unprotected u",
             "record_failure": "record failure rbar", "record_failure_participant": "given participation rbar'",
             "table_failure": "table failure tbar"}


def test_survey_simulate_explains_a_disagreement(census_spec, capsys):
    """With few failing cells (200 runs) the normal interval of u rests on 8 failing cells that all
    held 4 respondents: [4, 4], and the prediction 3.82 lies outside. The summary says so in words
    instead of a bare ``"mean_unprotected_agrees": false``."""
    argv = ["survey", "simulate", str(census_spec), str(DATA / "census.csv"), "--runs", "200", "--seed", "1",
            "--quiet"]
    code, out, _ = _run(capsys, argv + ["--json"])
    result = json.loads(out)
    missed = [name for field, name in SIMULATED.items() if result[f"{field}_agrees"] is False]
    assert code == 0 and missed, "this seed must give a disagreement, or the test shows nothing"
    code, out, _ = _run(capsys, argv)
    assert code == 0
    _not_json(out)
    text = _flat(out)
    for field, name in SIMULATED.items():  # a table row per indicator: observed, interval, predicted, agrees
        verdict = {True: "yes", False: "NO", None: "-"}[result[f"{field}_agrees"]]
        assert re.search(rf"^  {re.escape(name)} +\S+ +(\[.*\]|-) +\S+ +{verdict}$", out, re.M), (name, out)
    for name in missed:
        assert f"{name} does not agree: Algorithm A predicts" in text
    if result["failing_cells"] < 30 and "mean unprotected u" in missed:
        assert f"rests on {result['failing_cells']} failing cells" in text and "more --runs" in text
    assert f"result: {len(missed)} of 5 predictions outside their interval" in text


def test_diversity_plan_reads_in_words(tmp_path, capsys):
    q, s = np.divmod(np.arange(50), 5)
    path = tmp_path / "dist.csv"
    pd.DataFrame({"q": q, "sensitive": s, "probability": np.full(50, 1 / 50)}).to_csv(path, index=False)
    argv = ["diversity", "plan", "--distribution", str(path), "-l", "2", "--delta", "0.01", "--datasets", "3",
            "--front", "--quiet"]
    code, out, _ = _run(capsys, argv + ["--json"])
    plan = json.loads(out)
    code, out, _ = _run(capsys, argv)
    assert code == 0
    _not_json(out)
    text = _flat(out)
    assert f"classes: {plan['classes']} equivalence classes" in text
    assert f"samples N: {plan['n_samples']:,} records per release" in text
    assert "with probability >= 0.99 (delta = 0.01" in text and "3 releases linked" in text
    assert "plan: not written (-o PLAN.json" in text
    front = out[out.index("Pareto front"):].splitlines()[2:]
    assert [tuple(line.split()[::2]) for line in front] == [(f"{r['classes']:,}", f"{r['n_samples']:,}")
                                                             for r in plan["front"]]


TABLE_I = ["LA", "LA Seattle", "NewYork Boston", "NewYork Boston", "LA Seattle NewYork", "LA Seattle NewYork",
           "LA Seattle NewYork Boston"]


def test_km_check_and_uniqueness_read_in_words(tmp_path, capsys):
    """Paper 5's Table I with every city alone: 4 of its 6 distinct 2-itemsets are 2-anonymous."""
    data, spec = tmp_path / "t.txt", tmp_path / "p.json"
    data.write_text("\n".join(TABLE_I) + "\n")
    spec.write_text(json.dumps({"partition": {"LA": 0, "Seattle": 1, "NewYork": 2, "Boston": 3}, "k": 2, "m": 2,
                                "sigma": 0.9}))
    code, out, err = _run(capsys, ["km", "check", str(data), str(spec), "--quiet"])
    assert code == 1 and err == ""
    _not_json(out)
    assert re.search(r"^  1 +2 +4 +4 +1 +0\.9 +holds$", out, re.M), out
    assert re.search(r"^  2 +2 +6 +4 +0\.666667 +0\.9 +FAILS$", out, re.M), out
    assert "result: sigma-k^m-anonymity FAILS at l = 2" in out
    code, out, _ = _run(capsys, ["km", "uniqueness", str(data), "-m", "5", "--seed", "1", "--quiet",
                                 "--epsilon", "0.2", "--delta", "0.1"])
    assert code == 0
    _not_json(out)
    # Hoeffding: n = ceil(ln(2 / .1) / (2 .2^2)) = 38 samples, half-width sqrt(ln(2 / .1) / (2 n)); no city is
    # held by one record only (l = 1), the one 4-itemset is (l = 4); the largest record has 4 items
    n = math.ceil(math.log(20) / 0.08)
    eps = math.sqrt(math.log(20) / (2 * n))
    assert re.search(rf"^  1 +{n} +0 +0\.0000 +\[0\.0000, {eps:.4f}\]$", out, re.M), out
    assert re.search(rf"^  4 +{n} +{n} +1\.0000 +\[{1 - eps:.4f}, 1\.0000\]$", out, re.M), out
    assert "no record has more than 4 items: l = 5..5 have no itemset" in out
    assert "90 % interval" in out
    code, out, _ = _run(capsys, ["km", "uniqueness", str(data), "-m", "2", "--seed", "1", "--quiet", "--json"])
    assert [level["l"] for level in json.loads(out)["levels"]] == [1, 2]


def test_km_anonymize_says_what_err_is(tmp_path, capsys):
    """Without coordinates err is the NCP: the mean, over item occurrences, of the share of the other
    items merged with the item (recomputed here from the written partition)."""
    records = ["a b", "a b c", "b c", "a c", "a b c d", "c d", "a d", "b d", "e a", "e f", "f b"] * 2
    data, out_path = tmp_path / "r.txt", tmp_path / "rel.txt"
    data.write_text("\n".join(records) + "\n")
    code, _, err = _run(capsys, ["km", "anonymize", str(data), "-k", "3", "-m", "2", "--sigma", "0.9", "-o",
                                 str(out_path), "--seed", "2", "--quiet"])
    assert code == 0
    partition = json.loads((tmp_path / "rel.txt.partition.json").read_text())["partition"]
    size = Counter(partition.values())
    occurrences = Counter(item for r in records for item in set(r.split()))
    n = len(partition)
    ncp = sum(occ * (size[partition[i]] - 1) / (n - 1) for i, occ in occurrences.items()) / sum(occurrences.values())
    assert 0 < ncp < 1, "some items must be merged, or the test shows nothing"
    assert f"{n} items generalised into {len(size)} parts" in err
    assert (f"err {ncp:.6g}: an item occurrence is merged on average with {100 * ncp:.3g} % of the other items"
            in _flat(err)), err
    coordinates = tmp_path / "xy.csv"
    coordinates.write_text("item,x,y\na,0,0\nb,0,1000\nc,1000,0\nd,1000,1000\ne,500,500\nf,0,500\n")
    code, _, err = _run(capsys, ["km", "anonymize", str(data), "-k", "3", "-m", "2", "--sigma", "0.9", "-o",
                                 str(out_path), "--seed", "2", "--quiet", "--force", "--coordinates", str(coordinates)])
    assert code == 0 and f"from the centre of its part (in the units of {coordinates}" in _flat(err), err

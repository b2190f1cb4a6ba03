"""Soft findings (issue 41.5): the library issues a ProbanonWarning where it finds one and prints
nothing; the command line prints each once, as the line it printed before. Every expected line
below is written out by hand from the data of the test."""

import types
import warnings

import numpy as np
import pandas as pd
import pytest

from probanon.attacks.audit import AuditFinding, AuditResult, verdict
from probanon.cli import findings, main
from probanon.errors import AdjustmentWarning, InputError, ProbanonNote, ProbanonWarning
from probanon.microagg import MDAV
from probanon.survey.questionnaire import MAX_QUESTIONS, check_length
from probanon.swapping import swap

MERGED = "stratum B (2 records < k = 3) merged into stratum A"  # 10 records of A, 2 of B, k = 3


def _strata_frame() -> pd.DataFrame:
    rng = np.random.default_rng(4)
    return pd.DataFrame({"x": rng.integers(0, 100, 12).astype(float), "y": rng.integers(0, 100, 12).astype(float),
                         "region": ["A"] * 10 + ["B"] * 2})


def _messages(caught) -> list:
    return [str(w.message) for w in caught]


def test_merged_strata_are_an_adjustment_the_fit_issues():
    frame = _strata_frame()
    with pytest.warns(AdjustmentWarning) as caught:
        model = MDAV(3, merge_small_strata=True).fit(frame[["x", "y"]], strata=frame["region"])
    assert _messages(caught) == [MERGED] and model.strata_merged_ == [MERGED]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no stratum merged: no warning at all
        MDAV(2, merge_small_strata=True).fit(frame[["x", "y"]], strata=frame["region"])


def test_swapping_issues_its_merged_strata_too():
    frame = _strata_frame()
    with pytest.warns(AdjustmentWarning) as caught:
        result = swap(frame[["x", "y"]].to_numpy(), 3, "mdav-swap", [1], random_state=0, strata=frame["region"],
                      merge_small_strata=True)
    assert _messages(caught) == [MERGED] and list(result.strata_merged) == [MERGED]


def test_missing_values_merged_and_suppressed_are_adjustments():
    # a: 0, 1, 2, 21 observed with b; 1.5 and 20 lack b. The 2 records lacking b (fewer than k = 3)
    # join the 4 that lack nothing, on key a alone; MDAV then takes the 3 nearest the record
    # farthest from the mean 45.5 / 6 (21: 21, 20, 2), and the other 3 (0, 1, 1.5): each group
    # holds a record lacking b, so b is released missing for all 6, 4 of them observed.
    frame = pd.DataFrame({"a": [0.0, 1.0, 2.0, 21.0, 1.5, 20.0], "b": [5.0, 6.0, 7.0, 8.0, np.nan, np.nan]})
    with pytest.warns(AdjustmentWarning) as caught:
        released = MDAV(3, missing="pattern").set_output(transform="default").fit_transform(frame)
    assert _messages(caught) == ["2 records missing b merged with 4 records missing no key",
                                 "missing key values: 2 kept missing, 4 more suppressed so that every group agrees "
                                 "on each released value"]
    assert int((np.isnan(released) & frame.notna().to_numpy()).sum()) == 4  # counted on the release itself


def test_an_accepted_audit_risk_is_a_warning_else_an_error():
    found = AuditFinding("relation", "PTOTVAL", "key determined by confidential columns",
                         "PTOTVAL = PEARNVAL + POTHVAL", 1.0)
    result = AuditResult(["PTOTVAL"], ["PEARNVAL", "POTHVAL"], 10, (found,), 0.99)
    with pytest.warns(ProbanonWarning) as caught:
        verdict(result, accept_risk=True, where="part-1.parquet")
    assert _messages(caught) == ["--accept-risk: publishing although in part-1.parquet PTOTVAL = PEARNVAL + POTHVAL"]
    with pytest.raises(InputError, match="found in part-1.parquet that PTOTVAL = PEARNVAL [+] POTHVAL: whoever"):
        verdict(result, where="part-1.parquet")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        verdict(AuditResult(["a"], ["b"], 10, (), 0.99))  # nothing found: nothing said


def _chain(questions: int) -> list:
    """A tree of ``questions`` nodes in a chain: each question's left answer is a cell, the
    last question's right one too (depths 1, 2, ..., questions, questions)."""
    nodes = []
    for q in range(questions):
        nodes.append({"left": len(nodes) + 1, "right": len(nodes) + 2})
        nodes.append({"cell": q})
    nodes.append({"cell": questions})
    return nodes


def test_a_long_questionnaire_is_a_warning_of_the_library():
    long = types.SimpleNamespace(kind="decision-tree", rule=types.SimpleNamespace(nodes=_chain(MAX_QUESTIONS + 1)))
    spec = {"cells": [{"size": 50}] * (MAX_QUESTIONS + 2), "guarantee": {"records": 2100}}
    assert MAX_QUESTIONS == 40  # the numbers of the line below
    with pytest.warns(ProbanonWarning) as caught:
        check_length(spec, long)
    assert _messages(caught) == [
        "the tree asks 41 questions (42 cells of 50 or more records; a respondent answers 1 to 41 of them): more "
        "than 40 make a long printed questionnaire. To shorten it: fewer keys (--columns), coarser keys (recode "
        "them, e.g. age in ten-year bands), or larger cells: a larger -k or a lower --risk (at most 40 questions "
        "need cells of about 2,100 / 41 = 52 records)"]
    short = types.SimpleNamespace(kind="decision-tree", rule=types.SimpleNamespace(nodes=_chain(MAX_QUESTIONS)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_length(spec, short)


def test_the_command_line_prints_each_finding_as_it_is_issued(capsys):
    with findings.shown():
        warnings.warn("a risk", ProbanonWarning)
        warnings.warn("a risk", ProbanonWarning)  # every time, not once per place
        warnings.warn("to know", ProbanonNote)
        warnings.warn("stratum B merged", AdjustmentWarning)
        with pytest.warns(RuntimeWarning):  # another warning goes where it went
            warnings.warn("not ours", RuntimeWarning)
    assert capsys.readouterr().err.splitlines() == ["probanon: warning: a risk", "probanon: warning: a risk",
                                                    "probanon: note: to know", "probanon: stratum B merged"]


def test_held_findings_wait_for_the_command(capsys):
    with findings.shown():
        with findings.held() as kept:
            warnings.warn("stratum B merged", AdjustmentWarning)
        assert capsys.readouterr().err == ""
        findings.show(kept)
    assert capsys.readouterr().err == "probanon: stratum B merged\n"


def test_microaggregate_says_a_merged_stratum_once_after_its_progress(tmp_path, capsys):
    source, out = tmp_path / "in.csv", tmp_path / "out.csv"
    _strata_frame().to_csv(source, index=False)
    assert main(["microaggregate", str(source), "-o", str(out), "-k", "3", "--keys", "x,y", "--strata", "region",
                 "--merge-small-strata", "--seed", "1"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines.count(f"probanon: {MERGED}") == 1
    done = next(i for i, line in enumerate(lines) if line.startswith("mdav: done in "))
    assert lines.index(f"probanon: {MERGED}") > done  # held during the fit, said with the summary


def test_swap_says_a_merged_stratum_once(tmp_path, capsys):
    source, out = tmp_path / "in.csv", tmp_path / "out.csv"
    _strata_frame().to_csv(source, index=False)
    assert main(["swap", str(source), "-o", str(out), "-k", "3", "--method", "mdav-swap", "--keys", "x",
                 "--confidential", "y", "--strata", "region", "--merge-small-strata", "--seed", "1"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert lines.count(f"probanon: {MERGED}") == 1 and lines[0] == f"probanon: {MERGED}"


def test_an_accepted_audit_risk_is_said_once_before_the_work(tmp_path, capsys):
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"x": rng.permutation(60) * 7.0, "y": rng.permutation(60) * 3.0})
    frame["z"] = frame["x"] + frame["y"]  # the confidential column gives the keys back
    source, out = tmp_path / "in.csv", tmp_path / "out.csv"
    frame.to_csv(source, index=False)
    argv = ["microaggregate", str(source), "-o", str(out), "-k", "3", "--keys", "x,y", "--confidential", "z",
            "--seed", "1"]
    assert main(argv) == 2 and "--accept-risk publishes anyway" in capsys.readouterr().err
    assert main(argv + ["--accept-risk"]) == 0
    lines = capsys.readouterr().err.splitlines()
    said = [line for line in lines if line.startswith("probanon: warning: --accept-risk: publishing although ")]
    assert len(said) == 1 and lines[0] == said[0]  # the audit runs before the fit


def test_a_recipe_of_another_version_is_a_warning_said_once(tmp_path, capsys):
    from probanon import __version__

    _strata_frame().to_csv(tmp_path / "in.csv", index=False)
    recipe = tmp_path / "recipe.toml"
    recipe.write_text('probanon_version = "0.0.1"\ncommand = "microaggregate"\ninput = "in.csv"\n'
                      'output = "out.csv"\n\n[options]\nk = 3\nkeys = ["x", "y"]\ndrop = ["region"]\n')
    assert main(["release", str(recipe), "--quiet"]) == 0
    lines = capsys.readouterr().err.splitlines()
    said = (f"probanon: warning: {recipe} was resolved by probanon 0.0.1, this is {__version__}: the release may "
            "differ from the one it made")
    assert lines.count(said) == 1 and lines[0] == said

"""One figure, one wording, whichever command prints it (issue 39, point 15): the information loss a
release prints is the one ``evaluate`` and ``report`` print for the same keys (checked against an
independent computation), and ``--drop`` says "removed"."""

import re

import numpy as np
import pandas as pd
import pytest
from helpers import DATA, SHARED_DATA

from probanon.cli import main

CENSUS_KEYS = "AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX"


def _weighted_il(X, Y, w) -> float:
    """100 SSE/SST on z-scores with the original's weighted mean and (population) sd, every record
    counted w_i times: written here from the formula, not with probanon's Standardizer."""
    w = np.asarray(w, dtype=float)
    mu = (w[:, None] * X).sum(0) / w.sum()
    sd = np.sqrt((w[:, None] * (X - mu) ** 2).sum(0) / w.sum())
    zx, zy = (X - mu) / sd, (Y - mu) / sd
    return 100 * float(w @ ((zx - zy) ** 2).sum(1)) / float(w @ (zx**2).sum(1))


def _printed(pattern: str, text: str) -> str:
    found = re.findall(pattern, text)
    assert found, (pattern, text)
    return found[0]


NUMBER = r"(\d+(?:\.\d+)?(?:e-\d+)? %)"


@pytest.mark.parametrize("case", ["census", "adult-weights-categorical"])
def test_release_evaluate_and_report_print_the_same_information_loss(case, tmp_path, capsys):
    if case == "census":
        source, numeric, categorical, weights = DATA / "census.csv", CENSUS_KEYS.split(","), [], None
        release_options, extra = ["--keep-other"], []
    else:
        columns = ["age", "hours-per-week", "education-num", "sex", "race", "fnlwgt"]
        frame = pd.read_csv(SHARED_DATA / "adult" / "adult.csv", nrows=600, skipinitialspace=True)[columns]
        source = tmp_path / "adult.csv"
        frame.to_csv(source, index=False)
        numeric, categorical, weights = ["age", "hours-per-week", "education-num"], ["sex", "race"], "fnlwgt"
        release_options, extra = ["--nominal", "sex,race", "--weights", "fnlwgt"], ["--categorical-keys", "sex,race",
                                                                                    "--weights", "fnlwgt"]
    released, link = tmp_path / "released.csv", tmp_path / "link.csv"
    assert main(["microaggregate", str(source), "-o", str(released), "-k", "5", "--keys", ",".join(numeric),
                 *release_options, "--link", str(link), "--quiet", "--seed", "3"]) == 0
    by_release = _printed(r"information loss(?: of the numeric keys)? = " + NUMBER, capsys.readouterr().err)
    matched = ["--keys", ",".join(numeric), *extra, "--link", str(link)]
    assert main(["evaluate", str(source), str(released), *matched]) == 0
    by_evaluate = _printed(r"information loss:\s+" + NUMBER, capsys.readouterr().out)
    assert main(["report", str(source), str(released), *matched, "-k", "5", "-o", str(tmp_path / "report")]) == 0
    internal, external = ((tmp_path / "report" / side / "index.html").read_text() for side in ("internal", "external"))
    by_report = {_printed(r"Information loss " + NUMBER, page) for page in (internal, external)}

    original = pd.read_csv(source)
    rows = pd.read_csv(link).sort_values("original_row")["released_row"].to_numpy() - 1
    aligned = pd.read_csv(released).iloc[rows]
    X, Y = original[numeric].to_numpy(float), aligned[numeric].to_numpy(float)
    w = np.ones(len(X)) if weights is None else original[weights].to_numpy(float)
    expected = f"{_weighted_il(X, Y, w):.2f} %"
    assert by_release == by_evaluate == expected and by_report == {expected}, (by_release, by_evaluate, by_report)


def test_a_dropped_column_is_reported_removed_whatever_it_was(tmp_path, capsys):
    """A column given to --drop need not be a direct identifier (here a weight column the office
    does not publish): the summary says what happened, "removed", and nothing it cannot know."""
    frame = pd.DataFrame({"age": np.arange(20) % 7 + 20.0, "w": np.linspace(1, 3, 20), "x": np.arange(20.0)})
    source, out = tmp_path / "in.csv", tmp_path / "out.csv"
    frame.to_csv(source, index=False)
    assert main(["microaggregate", str(source), "-o", str(out), "-k", "4", "--keys", "age", "--drop", "w",
                 "--confidential", "x", "--accept-risk", "--quiet"]) == 0
    err = capsys.readouterr().err
    assert re.search(r"^  w +removed \(--drop\)$", err, re.M), err
    assert "direct identifier" not in err
    assert list(pd.read_csv(out).columns) == ["age", "x"]

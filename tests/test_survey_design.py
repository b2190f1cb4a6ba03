"""Survey design, the published specification and the survey CLI (paper 1)."""

import json

import numpy as np
import pandas as pd
import pytest

from helpers import brute_qbar, qbar

from probanon.cli import main
from probanon.errors import ParameterError, SpecificationError
from probanon.survey.design import design, safe_cell_size
from probanon.survey.spec import assign, build_spec, digest, verify


@pytest.fixture(scope="module")
def census_frame(shared_data):
    return pd.read_csv(shared_data / "casc" / "census.csv")


@pytest.fixture(scope="module")
def constant_design(census_frame):
    return design(census_frame, 5, 0.6, 0.001)


@pytest.fixture(scope="module")
def per_record(census_frame):
    pis = np.random.default_rng(3).uniform(0.3, 0.9, len(census_frame))
    return pis, design(census_frame, 5, pis, 0.01)


def test_constant_design_cells_are_safe_and_reproduced(census_frame, constant_design):
    d = constant_design
    assert d.sizes.sum() == len(census_frame)
    for size in np.unique(d.sizes):
        assert qbar(int(size), 5, 0.6) <= 0.001
    # every census record is assigned, by the published function, to the cell it was designed in
    np.testing.assert_array_equal(d.function.assign(census_frame), d.labels)
    published = json.loads(json.dumps(build_spec(d)))  # what a respondent downloads
    cells, centroids = assign(published, census_frame)
    np.testing.assert_array_equal(cells, d.labels)
    np.testing.assert_allclose(centroids, np.asarray(d.function.centroids)[d.labels])
    # centroids are the (here equal-weight) means of their cells
    X = census_frame.to_numpy(float)
    np.testing.assert_allclose(d.function.centroids[7], X[d.labels == 7].mean(axis=0))


def test_per_record_design(census_frame, per_record):
    pis, d = per_record
    np.testing.assert_array_equal(d.function.assign(census_frame), d.labels)
    for c in range(len(d.sizes)):
        members = pis[d.labels == c]
        assert members.size >= 5
        assert brute_qbar(members, 5) <= 0.01
        np.testing.assert_allclose(d.cell_failures[c], brute_qbar(members, 5), rtol=1e-9)
    # pi-weighted centroids
    X = census_frame.to_numpy(float)
    m = d.labels == 0
    np.testing.assert_allclose(d.function.centroids[0], (pis[m, None] * X[m]).sum(0) / pis[m].sum())


def test_distortion_with_certain_participation_is_sse_over_sst(census_frame):
    d = design(census_frame, 5, 1.0, 0.01)  # pi = 1: n_min = k, plain MDAV
    X = census_frame.to_numpy(float)
    Z = (X - X.mean(0)) / X.std(0)
    sse = sum(((Z[d.labels == c] - Z[d.labels == c].mean(0)) ** 2).sum() for c in range(len(d.sizes)))
    assert d.distortion == pytest.approx(sse / (Z**2).sum(), rel=1e-9)
    assert round(100 * d.distortion, 2) == 9.09  # the published MDAV value on census, k = 5


def test_non_monotone_failure_is_respected():
    # pi = 0.01, k = 2, pbar = 0.05: n_min = 2, but cells of 3..~300 records fail (qbar(10) ~ 0.091)
    assert qbar(2, 2, 0.01) <= 0.05 and qbar(10, 2, 0.01) > 0.05
    size = safe_cell_size(2, 0.01, 0.05, 2000)
    assert all(qbar(s, 2, 0.01) <= 0.05 for s in range(size, 2001))
    assert qbar(size - 1, 2, 0.01) > 0.05
    X = np.random.default_rng(0).normal(size=(2000, 2))
    d = design(X, 2, 0.01, 0.05)
    assert all(qbar(int(s), 2, 0.01) <= 0.05 for s in d.sizes)


def test_spec_verify_and_tampering(constant_design):
    spec = build_spec(constant_design)
    text = json.dumps(spec)
    assert verify(json.loads(text)).function.assign(np.zeros((1, 13))).shape == (1,)
    assert spec["digest"].startswith("sha256:") and len(spec["digest"]) == 7 + 64

    def tampered(change, redigest=False):
        s = json.loads(text)
        change(s)
        if redigest:
            s["digest"] = digest(s)
        with pytest.raises(SpecificationError) as e:
            verify(s)
        return str(e.value)

    def size(s):
        s["cells"][3]["size"] += 1

    def centroid(s):
        s["function"]["centroids"][2][0] += 1.0

    def dig(s):
        s["digest"] = "sha256:" + "0" * 64

    for change in (size, centroid, dig):
        assert "digest mismatch" in tampered(change)
    # a forger who recomputes the digest is still caught by the consistency checks
    assert "sizes" in tampered(size, redigest=True)
    assert "failure" in tampered(lambda s: s["cells"][0].__setitem__("failure", 1e-9), redigest=True)
    assert "n_min" in tampered(lambda s: s["guarantee"].__setitem__("n_min", 3), redigest=True)
    with pytest.raises(SpecificationError, match="not valid JSON"):
        verify("{oops")


def test_bad_arguments():
    X = np.random.default_rng(0).normal(size=(100, 2))
    for pi in (0.0, 1.5, -1):
        with pytest.raises(ParameterError):
            design(X, 3, pi, 0.01)
    for risk in (0.0, 1.0, 2.0):
        with pytest.raises(ParameterError):
            design(X, 3, 0.5, risk)
    with pytest.raises(ParameterError):
        design(X, 0, 0.5, 0.01)


def test_cli_plan(capsys):
    assert main(["survey", "plan", "-k", "20", "--participation", "0.5", "--risk", "0.1", "--records", "1000",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_min"] == 48  # Table II
    assert round(out["cell_failure"], 5) == 0.09671
    assert round(out["mean_unprotected"], 2) == 17.85
    assert round(out["record_failure"], 5) == 0.03597
    assert out["record_failure_participant"] == pytest.approx(out["record_failure"] / 0.5)
    # table of 1000 records: 20 cells of 48 and one of 1000 - 20 * 48 = 40 + 48 = 88
    expected = 1 - (1 - qbar(48, 20, 0.5)) ** 19 * (1 - qbar(88, 20, 0.5))
    assert out["table_failure"] == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize("argv, fragment", [
    (["-k", "0", "--participation", "0.5", "--risk", "0.1"], "expected a positive integer, got 0"),
    (["-k", "3", "--participation", "0", "--risk", "0.1"], "participation must be a probability in (0, 1]"),
    (["-k", "3", "--participation", "1.2", "--risk", "0.1"], "participation must be a probability in (0, 1]"),
    (["-k", "3", "--participation", "0.5", "--risk", "0"], "must be in (0, 1)"),
    (["-k", "3", "--participation", "0.5", "--risk", "1"], "must be in (0, 1)"),
])
def test_cli_plan_bad_arguments(capsys, argv, fragment):
    try:
        code = main(["survey", "plan", *argv])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and fragment in err


def test_cli_design_verify_assign_simulate(tmp_path, capsys, census_frame):
    pop = tmp_path / "pop.csv"
    frame = census_frame.copy()
    frame["pi"] = np.random.default_rng(1).uniform(0.4, 0.9, len(frame))
    frame.to_csv(pop, index=False)
    spec = tmp_path / "spec.json"
    qi = "AFNLWGT,AGI,EMCONTRB,FEDTAX"
    assert main(["survey", "design", str(pop), "-k", "4", "--participation", "0.7", "--risk", "0.01",
                 "--columns", qi, "-o", str(spec)]) == 0
    assert main(["survey", "verify", str(spec)]) == 0
    responses = tmp_path / "responses.csv"
    frame.head(50).to_csv(responses, index=False)
    out = tmp_path / "out.csv"
    # AGI is predicted by the passed-through columns (adjusted R^2 > 0.99): the audit would stop the release
    assert main(["survey", "assign", str(spec), str(responses), "-o", str(out), "--keep-other", "--keep-order"]) == 2
    assert "AGI is predicted" in capsys.readouterr().err and not out.exists()
    assert main(["survey", "assign", str(spec), str(responses), "-o", str(out), "--keep-other", "--keep-order",
                 "--accept-risk"]) == 0
    rel = pd.read_csv(out)
    assert list(rel.columns) == list(frame.columns) + ["cell"]
    pd.testing.assert_series_equal(rel["pi"], frame.head(50)["pi"])
    s = json.loads(spec.read_text())
    cents = np.array(s["function"]["centroids"])
    np.testing.assert_allclose(rel[qi.split(",")].to_numpy(), cents[rel["cell"]])
    capsys.readouterr()
    assert main(["survey", "simulate", str(spec), str(pop), "--runs", "200", "--seed", "5"]) == 0
    first = capsys.readouterr().out
    assert main(["survey", "simulate", str(spec), str(pop), "--runs", "200", "--seed", "5"]) == 0
    assert capsys.readouterr().out == first  # same seed, same output
    # per-record participation from a column
    spec2 = tmp_path / "spec2.json"
    assert main(["survey", "design", str(pop), "-k", "4", "--participation-column", "pi", "--risk", "0.01",
                 "--columns", qi, "-o", str(spec2)]) == 0
    assert main(["survey", "verify", str(spec2)]) == 0
    assert json.loads(spec2.read_text())["guarantee"]["participation"] == {"model": "per-record", "column": "pi"}
    # tampering: one altered centroid is refused with a one-line message
    s["function"]["centroids"][0][0] += 1
    spec.write_text(json.dumps(s))
    capsys.readouterr()
    assert main(["survey", "verify", str(spec)]) == 2
    err = capsys.readouterr().err.strip()
    assert "digest mismatch" in err and len(err.splitlines()) == 1


def test_unreachable_risk_is_an_error(capsys):
    # pi = 1e-10, k = 2: qbar stays ~ 0.09 for every cell up to 10^7 records
    assert main(["survey", "plan", "-k", "2", "--participation", "1e-10", "--risk", "1e-12"]) == 2
    err = capsys.readouterr().err.strip()
    assert "no cell of up to" in err and len(err.splitlines()) == 1


def test_verify_refuses_malformed_values_with_a_valid_digest(constant_design):
    text = json.dumps(build_spec(constant_design))
    for change, fragment in [
        (lambda s: s["cells"][0].__setitem__("size", [1]), "must be an integer"),
        (lambda s: s["cells"][0].__setitem__("failure", "abc"), "must be a number"),
        (lambda s: s["guarantee"].__setitem__("k", 10**11), "k must be between"),
        (lambda s: s["guarantee"].__setitem__("risk", "0.1"), "malformed value"),
    ]:
        s = json.loads(text)
        change(s)
        s["digest"] = digest(s)
        with pytest.raises(SpecificationError, match=fragment):
            verify(s)

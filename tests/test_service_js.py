"""The respondent's JavaScript (probanon/service/static/survey.js) in headless Chromium agrees
with the Python reference: the published function's rule, Algorithm A (paper 1) and the
specification checks."""

import hashlib
import json
import math

import numpy as np
import pytest
from service_support import script_driver, static_server

from probanon.data import synthetic_survey
from probanon.errors import SpecificationError
from probanon.microagg import MDAV, PCL, function_from_json
from probanon.survey.anonymity import cell_failure, log_cell_failure, n_min
from probanon.survey.design import design
from probanon.survey.spec import (
    GuaranteeError,
    build_spec,
    canonical_bytes,
    digest,
    verify,
)


@pytest.fixture(scope="module")
def static_url():
    yield from static_server()


@pytest.fixture(scope="module")
def driver(static_url):
    yield from script_driver(static_url, "survey.js", "ProbanonSurvey")


def js_assign(driver, function_dict, points):
    """survey.js assignCell on every row of ``points`` (original units), in one call."""
    return np.array(driver.execute_script(
        "const f = arguments[0]; return arguments[1].map((x) => ProbanonSurvey.assignCell(f, x));",
        function_dict, np.asarray(points, dtype=np.float64).tolist()))


# ----------------------------------------------------------------------------- the rule


def _exact_unit_columns(rng, n, d):
    """Integer columns with mean exactly 0 and population sd exactly 1 (counts of -2, -1, 0, 1,
    2 in proportions 1/16, 1/4, 3/8, 1/4, 1/16: E x^2 = 8/16 + 2/4 = 1): z = x, so every
    squared distance is an integer and exact ties abound."""
    base = np.repeat([-2.0, -1.0, 0.0, 1.0, 2.0], np.array([1, 4, 6, 4, 1]) * (n // 16))
    return np.column_stack([rng.permutation(base) for _ in range(d)])


def _ties(function, points):
    """(point, ball) pairs at exactly the radius with a tuple other than the boundary's, and
    points equal to a boundary tuple (standardised units)."""
    f = function
    Z = f.standardizer.transform(points)
    refs, rad2, bounds = f.rule.references, f.rule.radius2, f.rule.boundary
    d2 = ((Z[:, None, :] - refs[None, :, :]) ** 2).sum(axis=2)
    on_sphere = d2 == rad2[None, :]
    same = (Z[:, None, :] == bounds[None, :, :]).all(axis=2)
    return int((on_sphere & ~same).sum()), int(same.any(axis=1).sum())


def test_ordered_balls_rule_matches_python_on_ties(driver):
    rng = np.random.default_rng(15)
    X = _exact_unit_columns(rng, 1600, 3)
    function = MDAV(k=5).fit(X).function_
    np.testing.assert_array_equal(function.standardizer.mean_, 0.0)
    np.testing.assert_array_equal(function.standardizer.scale_, 1.0)
    grid = np.stack(np.meshgrid(*[np.arange(-3.0, 3.5, 0.5)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    points = np.vstack([X, function.rule.boundary, grid])
    points = np.vstack([points, rng.normal(0, 1.5, (10_000 - len(points), 3))])
    spread_ties, boundaries = _ties(function, points)
    # the tie rule is exercised, both ways below (identical records share a group since issue 39.1:
    # fewer ties spread over groups than classical MDAV's 1,000+)
    assert spread_ties > 300 and boundaries > 1000
    expected = function.assign(points)
    got = js_assign(driver, json.loads(function.to_json()), points)
    np.testing.assert_array_equal(got, expected)


def test_ordered_balls_rule_matches_python_in_original_units(driver):
    """Rounded survey data (many duplicates, standardisation in floating point)."""
    frame = synthetic_survey(1500, random_state=4)[["age", "household", "hours"]]
    X = frame.to_numpy(float)
    function = MDAV(k=7).fit(frame).function_
    rng = np.random.default_rng(5)
    boundary = function.standardizer.inverse_transform(function.rule.boundary)
    jitter = X[rng.integers(0, len(X), 4000)] + rng.integers(-1, 2, (4000, 3))
    points = np.vstack([X, boundary, jitter])
    points = np.vstack([points, X.mean(0) + X.std(0) * rng.normal(0, 1.2, (10_000 - len(points), 3))])
    assert _ties(function, X)[1] > 100  # fitted records on their ball's boundary tuple
    expected = function.assign(points)
    got = js_assign(driver, json.loads(function.to_json()), points)
    np.testing.assert_array_equal(got, expected)
    # a record is read by name from an object, and a record with a missing value is refused
    record = dict(zip(function.columns, X[0].tolist()))
    assert driver.execute_script("return ProbanonSurvey.assignCell(arguments[0], arguments[1])",
                                 json.loads(function.to_json()), record) == expected[0]
    error = driver.execute_script("try { ProbanonSurvey.assignCell(arguments[0], {age: 40}); return null; }"
                                  " catch (e) { return e.message; }", json.loads(function.to_json()))
    assert "household" in error and "not a finite number" in error


def test_power_diagram_rule_matches_python(driver):
    rng = np.random.default_rng(6)
    X = np.round(rng.normal(0, 1, (400, 2)) * [10, 3] + [50, 7])
    function = PCL(k=8, random_state=0).fit(X).function_
    assert function.kind == "power-diagram" and np.ptp(function.rule.offsets) > 0
    points = np.vstack([X, X + rng.integers(-2, 3, X.shape), np.asarray(function.centroids)])
    points = np.vstack([points, X.mean(0) + X.std(0) * rng.normal(0, 1.5, (10_000 - len(points), 2))])
    got = js_assign(driver, json.loads(function.to_json()), points)
    np.testing.assert_array_equal(got, function.assign(points))


def test_power_diagram_exact_ties_go_to_the_lowest_cell(driver):
    # integer centres and offsets, identity standardisation: every power distance is an integer
    centers = [[0, 0], [4, 0], [0, 4], [4, 4], [2, 2]]
    offsets = [0.0, 0.0, 0.0, 0.0, 3.0]
    hand = {"probanon_function": 1, "kind": "power-diagram", "columns": ["a", "b"],
            "standardization": {"mean": [0.0, 0.0], "scale": [1.0, 1.0]},
            "centroids": centers, "sizes": [2] * 5, "rule": {"centers": centers, "offsets": offsets},
            "tie_rule": "", "meta": {}}
    function = function_from_json(json.dumps(hand))
    points = np.stack(np.meshgrid(np.arange(-2.0, 6.25, 0.25), np.arange(-2.0, 6.25, 0.25)), -1).reshape(-1, 2)
    power = ((points[:, None, :] - np.array(centers)[None]) ** 2).sum(2) + np.array(offsets)
    tied = (power == power.min(1, keepdims=True)).sum(1) > 1
    assert tied.sum() > 50
    expected = function.assign(points)
    np.testing.assert_array_equal(expected[tied], np.argmax(power == power.min(1, keepdims=True), axis=1)[tied])
    got = js_assign(driver, hand, points)
    np.testing.assert_array_equal(got, expected)
    assert got[(points == [2, 0]).all(1)][0] == 0  # equidistant from centres 0 and 1, equal offsets
    error = driver.execute_script("try { ProbanonSurvey.assignCell(arguments[0], [1, 1]); return null; }"
                                  " catch (e) { return e.message; }", dict(hand, kind="intervals"))
    assert "intervals" in error


# ----------------------------------------------------------------------------- Algorithm A


def test_cell_failure_matches_python(driver):
    grid = [(n, k, pi) for n in (1, 2, 5, 10, 25, 48, 100, 280, 1000, 3000)
            for k in (1, 2, 5, 10, 20, 50) for pi in (0.001, 0.01, 0.1, 0.5, 0.75, 0.9, 0.999, 1.0)]
    rng = np.random.default_rng(7)
    per_record = [(k, rng.uniform(lo, hi, n).tolist()) for n, k, lo, hi in
                  [(1, 1, 0.1, 0.9), (7, 3, 0.2, 0.9), (40, 5, 0.05, 0.95), (300, 10, 0.5, 1.0),
                   (600, 2, 0.85, 0.99), (250, 20, 0.01, 0.2)]]
    got = driver.execute_script("""
        const S = ProbanonSurvey;
        return [arguments[0].map(([n, k, pi]) => S.cellFailure(k, pi, n)),
                arguments[1].map(([k, pis]) => S.cellFailure(k, pis))];""", grid, per_record)
    expected = [cell_failure(n, k, pi) for n, k, pi in grid] + [cell_failure(len(p), k, p) for k, p in per_record]
    tiny = 0
    for js, py in zip(got[0] + got[1], expected):
        log_js = -math.inf if js["logFailure"] is None else js["logFailure"]
        if py.log_cell_failure == -math.inf:
            assert log_js == -math.inf and js["failure"] == 0
            continue
        assert log_js == pytest.approx(py.log_cell_failure, rel=1e-12, abs=1e-12)
        if py.cell_failure > 1e-300:
            assert js["failure"] == pytest.approx(py.cell_failure, rel=1e-12)
        tiny += py.cell_failure < 1e-250
    assert tiny > 20
    for k, p in per_record:  # the spec check's per-record form
        log_js = driver.execute_script("return ProbanonSurvey.cellFailure(arguments[0], arguments[1]).logFailure", k, p)
        expected_log = log_cell_failure(k, p)
        if expected_log == -math.inf:  # k = 1: no cell fails (-Infinity arrives as null)
            assert k == 1 and log_js is None
        else:
            assert log_js == pytest.approx(expected_log, rel=1e-12)
    # Table II of paper 1: k = 20, pi = .5, n = 48 -> 0.09671
    assert round(got[0][grid.index((48, 20, 0.5))]["failure"], 5) == 0.09671


def test_n_min_matches_python(driver):
    grid = [(k, pi, risk) for k in (1, 2, 5, 10, 20) for pi in (0.05, 0.3, 0.75, 0.99, 1.0)
            for risk in (0.1, 1e-4, 1e-12, 1e-100)]
    got = driver.execute_script("return arguments[0].map(([k, pi, r]) => ProbanonSurvey.nMin(k, pi, r))", grid)
    assert got == [n_min(k, pi, risk) for k, pi, risk in grid]
    # Table III of paper 1: k = 10, pi = .75, pbar = 1e-4 -> n_min = 25
    assert driver.execute_script("return ProbanonSurvey.nMin(10, 0.75, 1e-4)") == 25


# ----------------------------------------------------------------------------- the specification


def js_verify(driver, canonical: bytes, expected: str) -> dict:
    return driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        ProbanonSurvey.verifySpec(arguments[0], arguments[1]).then(
            (r) => done({ok: r.ok, problems: r.problems, digest: r.digest}), (e) => done({error: String(e)}));""",
                                       canonical.decode("utf-8"), expected)


def resign(spec: dict) -> dict:
    spec = json.loads(json.dumps(spec))
    spec["digest"] = digest(spec)
    return spec


@pytest.fixture(scope="module")
def population():
    return synthetic_survey(400, random_state=11)[["age", "income", "household", "hours"]]


@pytest.fixture(scope="module")
def constant_spec(population):
    return json.loads(json.dumps(build_spec(design(population, 5, 0.6, 0.001))))


def test_verify_accepts_a_real_spec(driver, constant_spec):
    verify(constant_spec, expected_digest=constant_spec["digest"])
    r = js_verify(driver, canonical_bytes(constant_spec), constant_spec["digest"])
    assert r == {"ok": True, "problems": [], "digest": constant_spec["digest"]}
    # the hex alone, upper case, is the same digest
    assert js_verify(driver, canonical_bytes(constant_spec), constant_spec["digest"][7:].upper())["ok"]


def test_verify_accepts_a_per_record_spec(driver, population):
    pis = np.random.default_rng(12).uniform(0.3, 0.9, len(population))
    spec = json.loads(json.dumps(build_spec(design(population, 4, pis, 0.01))))
    assert spec["guarantee"]["participation"]["model"] == "per-record"
    verify(spec)
    r = js_verify(driver, canonical_bytes(spec), spec["digest"])
    assert r == {"ok": True, "problems": [], "digest": spec["digest"]}
    bad = json.loads(json.dumps(spec))
    bad["cells"][1]["participation"][0] = min(1.0, bad["cells"][1]["participation"][0] * 1.5)
    bad = resign(bad)
    with pytest.raises(SpecificationError, match="cell 1: declared failure"):
        verify(bad)
    r = js_verify(driver, canonical_bytes(bad), bad["digest"])
    assert not r["ok"] and r["problems"][0].startswith("cell 1: declared failure")


def test_verify_refuses_a_digest_mismatch(driver, constant_spec):
    other = "sha256:" + "0" * 64
    r = js_verify(driver, canonical_bytes(constant_spec), other)
    assert not r["ok"] and r["digest"] == constant_spec["digest"]
    message = (f"its digest {constant_spec['digest']} differs from the expected {other}: "
               "this is not the specification that was published")
    assert r["problems"] == [message]
    altered = canonical_bytes(constant_spec).replace(b'"risk":0.001', b'"risk":0.002')
    assert altered != canonical_bytes(constant_spec)
    assert not js_verify(driver, altered, constant_spec["digest"])["ok"]
    r = js_verify(driver, canonical_bytes(constant_spec), "md5:abc")
    assert not r["ok"]
    assert r["problems"] == ["a digest is 'sha256:' followed by 64 hexadecimal digits, got \"md5:abc\""]


def test_verify_refuses_an_altered_cell_failure(driver, constant_spec):
    bad = json.loads(json.dumps(constant_spec))
    bad["cells"][2]["failure"] *= 1.0 + 1e-7
    bad = resign(bad)
    with pytest.raises(SpecificationError, match="cell 2: declared failure"):
        verify(bad)
    r = js_verify(driver, canonical_bytes(bad), bad["digest"])
    assert not r["ok"] and len(r["problems"]) == 1 and r["problems"][0].startswith("cell 2: declared failure")
    # a change within the tolerance (rel 1e-9) is accepted by both
    close = json.loads(json.dumps(constant_spec))
    close["cells"][2]["failure"] *= 1.0 + 1e-11
    close = resign(close)
    verify(close)
    assert js_verify(driver, canonical_bytes(close), close["digest"])["ok"]


def test_verify_refuses_a_risk_below_a_cell_failure(driver, constant_spec):
    g = constant_spec["guarantee"]
    worst = max(c["failure"] for c in constant_spec["cells"])
    bad = json.loads(json.dumps(constant_spec))
    bad["guarantee"]["risk"] = worst * 0.9
    bad["guarantee"]["n_min"] = n_min(g["k"], g["participation"]["pi"], worst * 0.9)  # self-consistent
    bad = resign(bad)
    with pytest.raises(GuaranteeError):  # only the guarantee check catches it
        verify(bad, expected_digest=bad["digest"])
    r = js_verify(driver, canonical_bytes(bad), bad["digest"])
    assert not r["ok"] and len(r["problems"]) == 1
    cell = max(range(len(bad["cells"])), key=lambda i: bad["cells"][i]["failure"])
    size = bad["cells"][cell]["size"]
    assert r["problems"][0].startswith(f"the guarantee does not hold: cell {cell} of {size} records fails with probability ")


def test_verify_refuses_malformed_specs(driver, constant_spec):
    cases = {
        "cells": lambda s: s["cells"].pop(),
        "n_min": lambda s: s["guarantee"].__setitem__("n_min", s["guarantee"]["n_min"] + 1),
        "records": lambda s: s["guarantee"].__setitem__("records", s["guarantee"]["records"] + 1),
        "kind": lambda s: s["function"].__setitem__("kind", "intervals"),
        "scale": lambda s: s["function"]["standardization"]["scale"].__setitem__(0, 0.0),
    }
    for name, alter in cases.items():
        bad = json.loads(json.dumps(constant_spec))
        alter(bad)
        bad = resign(bad)
        with pytest.raises(SpecificationError):
            verify(bad)
        r = js_verify(driver, canonical_bytes(bad), bad["digest"])
        assert not r["ok"] and len(r["problems"]) == 1, (name, r)
    with_digest = json.dumps(constant_spec, sort_keys=True, separators=(",", ":")).encode()
    r = js_verify(driver, with_digest, "sha256:" + hashlib.sha256(with_digest).hexdigest())
    assert not r["ok"] and "digest" in r["problems"][0]
    r = js_verify(driver, b"not json", "sha256:" + hashlib.sha256(b"not json").hexdigest())
    assert not r["ok"] and "JSON" in r["problems"][0]


# ----------------------------------------------------------------------------- the survey document (issue 40.4)


def test_the_document_checks_agree_with_python(driver):
    """survey.js readDocument / documentContradictions / sameAsKey against document.py and
    answers.py: the same digest, the same contradictions found, the same names taken for a key."""
    from probanon.service import document as documents
    from probanon.service.answers import same_as_key

    doc = documents.build(title="Household survey", spec_digest="sha256:" + "a" * 64,
                          answers=[{"name": "happy", "type": "integer", "min": 0, "max": 10, "categories": None,
                                    "required": True, "label": "How happy?"}],
                          questions={"AGI": {"label": "Income", "unit": "USD"}}, opens="2027-01-01T00:00:00Z",
                          closes="2027-03-31T23:59:59Z", release={"small_cells": "suppress", "interim": []},
                          frame=10, open_survey=False)
    data = documents.canonical(doc)
    digest_ = documents.digest_of(data)
    read = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        ProbanonSurvey.readDocument(new TextEncoder().encode(arguments[0])).then(done, (e) => done(String(e)));""",
                                       data.decode())
    assert read["digest"] == digest_ and read["problems"] == [] and read["document"] == doc
    bad = driver.execute_async_script("""
        const done = arguments[arguments.length - 1];
        ProbanonSurvey.readDocument(new TextEncoder().encode(arguments[0])).then(done, (e) => done(String(e)));""",
                                      json.dumps({**doc, "frame": "10"}))
    assert bad["document"] is None and "'frame'" in bad["problems"][0]
    description = {"digest": digest_, "status": "open", **{k: doc[k] for k in documents.AGREED + ("closes",)}}
    variants = [description, {**description, "title": "Other"}, {**description, "digest": "sha256:" + "b" * 64},
                {**description, "answers": [{**doc["answers"][0], "label": "Your income, exactly"}]},
                {**description, "closes": "2027-03-01T00:00:00Z"},
                {**description, "closes": "2027-03-01T00:00:00Z", "status": "closed"},  # closed early: agrees
                {**description, "closes": "2028-01-01T00:00:00Z", "status": "closed"},
                {**description, "frame": 11}, {**description, "open": True},
                {**{k: v for k, v in description.items() if k != "questions"}}]
    found = driver.execute_script(
        "return arguments[0].map((d) => ProbanonSurvey.documentContradictions(d, arguments[1], arguments[2]));",
        variants, doc, digest_)
    expected = [documents.contradictions(d, doc, digest_) for d in variants]
    assert found == expected and [len(f) for f in found] == [0, 1, 1, 1, 1, 0, 1, 1, 1, 1]
    keys = ["AGI", "A.G.I", "a g i", "age", "x1"]
    names = ["agi", "a_g_i", "Agi_", "AGE", "ag", "agi2", "x_1", "X1", "happy"]
    js = driver.execute_script("return arguments[0].map((n) => ProbanonSurvey.sameAsKey(n, arguments[1]));", names, keys)
    assert js == [same_as_key(n, keys) for n in names] == ["AGI", "AGI", "AGI", "age", None, None, "x1", "x1", None]


def test_canonical_answers_are_pythons(driver):
    """survey.js canonicalAnswers (what the page hashes to check a receipt, audit of issue 40,
    finding 8) is Python's json.dumps(json.loads(JSON.stringify(answers)), sort_keys=True): numbers
    as repr writes the float Python reads (1e-05, 1e+16, 0.0001, 5e-324), integers as their digits,
    text with ensure_ascii's escapes; 2,000 random doubles besides."""
    import random
    import struct

    rng = random.Random(8)
    values = [0.0, -0.0, 1e-5, 1e-4, 1.5e-5, 1e16, 1e15, 9999999999999998.0, 1e21, 1e22, 0.1, 1 / 3, 5e-324,
              -2.5e-300, 1.7976931348623157e308, 12.5, 3, -4, 2 ** 53, "h\u00e9llo\u2028\"\\\n\x7f\x01 \U0001F600", ""]
    while len(values) < 2000:
        x = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        if math.isfinite(x):
            values.append(x)
        values.append(rng.uniform(0, 1) * 10 ** rng.randint(-12, 25))
    got = driver.execute_script("""
        return arguments[0].map((v) => {
          const text = JSON.stringify({b: v, a: 1});
          return [text, ProbanonSurvey.canonicalAnswers(JSON.parse(text))];
        });""", values)
    for text, canonical in got:
        assert canonical == json.dumps(json.loads(text), sort_keys=True), text

"""Untrusted respondents (issue 18.1) and participation models (issue 18.3) on the respondent side.

survey.js applies a "decision-tree" function as Python's ``function.assign`` does (numeric keys,
records exactly at a threshold, a nominal key) and refuses a malformed tree with Python's message;
it verifies a specification whose participation model is "logistic". The respondent page asks the
tree's questions one at a time; a respondent driven only by the question text and her record's
values reaches Python's cell, and the browser sends nothing but digest, cell, answers and key."""

import json
import re

import numpy as np
import pandas as pd
import pytest
from scipy import special
from service_support import population
from test_service_browser import (  # noqa: F401 (browser, page: fixtures)
    ANSWER_LABELS,
    KEYS,
    TIMEOUT,
    browser,
    network,
    open_survey,
    page,
    posted,
    publish,
    review_and_send,
    stored,
    type_in,
)
from test_service_js import driver, js_assign, js_verify, resign, static_url  # noqa: F401 (fixtures)

from probanon.data import synthetic_survey
from probanon.errors import SpecificationError
from probanon.microagg import function_from_json
from probanon.survey.design import design
from probanon.survey.participation import LogisticParticipation
from probanon.survey.spec import build_spec, canonical_bytes, verify

By = pytest.importorskip("selenium.webdriver.common.by").By
Keys = pytest.importorskip("selenium.webdriver.common.keys").Keys
WebDriverWait = pytest.importorskip("selenium.webdriver.support.ui").WebDriverWait

AREAS = ["north", "south", "east", "west, coast", "centre"]  # a nominal key (one category holds a comma)


def tree_spec(frame, **options) -> dict:
    spec = build_spec(design(frame, 5, 0.6, 1e-3, method="tree", **options))
    assert spec["function"]["kind"] == "decision-tree"
    return json.loads(json.dumps(spec))


def with_area(frame, seed):
    """The frame with a nominal key "area" that says something about income (a split on it pays)."""
    rng = np.random.default_rng(seed)
    by_income = np.asarray(AREAS)[np.argsort(np.argsort(frame["income"].to_numpy())) * len(AREAS) // len(frame)]
    return frame.assign(area=np.where(rng.random(len(frame)) < 0.7, by_income, rng.choice(AREAS, len(frame))))


def splits(spec) -> list[dict]:
    return [node for node in spec["function"]["rule"]["nodes"] if "cell" not in node]


def at_thresholds(spec, frame, rng) -> pd.DataFrame:
    """Population records moved onto the thresholds: one per numeric split node, its key set to
    exactly the threshold (not under it: the answer is no)."""
    columns = spec["function"]["columns"]
    rows = frame.iloc[rng.integers(0, len(frame), len(splits(spec)))].copy().reset_index(drop=True)
    for r, node in enumerate(splits(spec)):
        if "threshold" in node:
            rows.loc[r, columns[node["column"]]] = node["threshold"]
    return rows


# ----------------------------------------------------------------------------- survey.js


@pytest.fixture(scope="module")
def numeric():
    """(population, tree specification) on four numeric keys."""
    frame = synthetic_survey(600, random_state=21)[["age", "income", "household", "hours"]].astype(float)
    return frame, tree_spec(frame)


@pytest.fixture(scope="module")
def nominal():
    """(population, tree specification) with a nominal key."""
    frame = with_area(synthetic_survey(500, random_state=22)[["age", "income"]].astype(float), 23)
    return frame, tree_spec(frame, nominal=["area"])


def test_tree_rule_matches_python(driver, numeric):
    frame, spec = numeric
    assert len(splits(spec)) >= 10 and {node["column"] for node in splits(spec)} >= {0, 1}
    rng = np.random.default_rng(24)
    edges = at_thresholds(spec, frame, rng)
    jitter = frame.iloc[rng.integers(0, len(frame), 300)].to_numpy() + rng.integers(-2, 3, (300, 4))
    points = np.vstack([frame.to_numpy(), edges.to_numpy(), jitter])
    function = function_from_json(json.dumps(spec["function"]))
    expected = function.assign(points)
    assert len(set(expected[:len(frame)])) == len(spec["cells"])  # every cell is reached
    np.testing.assert_array_equal(js_assign(driver, spec["function"], points), expected)
    # at a threshold the answer is no: the record does not go where a value just under it goes
    below = edges.copy()
    for r, node in enumerate(splits(spec)):
        below.loc[r, spec["function"]["columns"][node["column"]]] = np.nextafter(node["threshold"], -np.inf)
    assert (function.assign(below.to_numpy()) != function.assign(edges.to_numpy())).any()
    assert js_verify(driver, canonical_bytes(spec), spec["digest"]) == {"ok": True, "problems": [],
                                                                        "digest": spec["digest"]}


def test_tree_rule_with_a_nominal_key_matches_python(driver, nominal):
    frame, spec = nominal
    assert any("categories" in node for node in splits(spec)) and spec["function"]["encoding"]["nominal"]
    rng = np.random.default_rng(25)
    points = pd.concat([frame, at_thresholds(spec, frame, rng)], ignore_index=True)
    expected = function_from_json(json.dumps(spec["function"])).assign(points)
    got = driver.execute_script("const f = arguments[0]; return arguments[1].map((x) => ProbanonSurvey.assignCell(f, x));",
                                spec["function"], points.to_dict("records"))
    np.testing.assert_array_equal(got, expected)
    assert js_verify(driver, canonical_bytes(spec), spec["digest"])["ok"]
    error = driver.execute_script("try { ProbanonSurvey.assignCell(arguments[0], arguments[1]); return null; }"
                                  " catch (e) { return e.message; }", spec["function"],
                                  dict(points.iloc[0].to_dict(), area="atlantis"))
    assert error == "value of area is not one of its categories: atlantis"


def _malformed(spec):
    """{case: change} of a tree specification's nodes, each refused by rules.py DecisionTree.from_dict."""
    nodes = spec["function"]["rule"]["nodes"]
    split = 1 if "cell" not in nodes[1] else 0  # a split node below the root
    leaves = [i for i, node in enumerate(nodes) if "cell" in node]
    numeric = next(i for i, node in enumerate(nodes) if "threshold" in node)
    cases = {
        "child not higher": lambda n: n[split].__setitem__("left", split),
        "child out of range": lambda n: n[split].__setitem__("right", len(n)),
        "two parents": lambda n: n[split].__setitem__("left", n[split]["right"]),
        "cell twice": lambda n: n[leaves[1]].__setitem__("cell", n[leaves[0]]["cell"]),
        "cell past the last": lambda n: n[leaves[0]].__setitem__("cell", len(leaves)),
        "leaf with more": lambda n: n[leaves[0]].__setitem__("threshold", 1.0),
        "threshold as text": lambda n: n[numeric].__setitem__("threshold", str(n[numeric]["threshold"])),
        "no such key": lambda n: n[numeric].__setitem__("column", 99),
        "no nodes": lambda n: n.clear(),
    }
    categorical = [i for i, node in enumerate(nodes) if "categories" in node]
    if categorical:
        i = categorical[0]
        cases["unknown category"] = lambda n: n[i]["categories"].append("atlantis")
        cases["category twice"] = lambda n: n[i]["categories"].append(n[i]["categories"][0])
        cases["threshold on a category"] = lambda n: n[i].__setitem__("threshold", 1.0)
    return cases


def refusals(driver, spec, change) -> tuple[str, list]:
    """(Python's message, survey.js's problems) for the specification altered by ``change``."""
    bad = json.loads(json.dumps(spec))
    change(bad)
    bad = resign(bad)
    with pytest.raises(SpecificationError) as caught:
        verify(bad)
    r = js_verify(driver, canonical_bytes(bad), bad["digest"])
    assert r["ok"] is (r["problems"] == [])
    return str(caught.value), r["problems"]


@pytest.mark.parametrize("which", ["numeric", "nominal"])
def test_malformed_trees_are_refused_with_pythons_message(driver, which, request):
    _, spec = request.getfixturevalue(which)
    cases = _malformed(spec)
    assert len(cases) == (12 if which == "nominal" else 9)
    for name, change in cases.items():
        message, problems = refusals(driver, spec, lambda s: change(s["function"]["rule"]["nodes"]))
        assert message.startswith("function: ") and problems == [message], name


@pytest.fixture(scope="module")
def logistic():
    """A specification whose pi_j come from a logistic model fitted on a previous wave, with a
    lower confidence bound (so that its covariance is published)."""
    frame = synthetic_survey(400, random_state=11)[["age", "income", "household", "hours"]]
    rng = np.random.default_rng(1)
    wave = frame.assign(responded=(rng.random(len(frame)) < special.expit(
        0.3 + 0.03 * (frame["age"] - 50) + 0.2 * frame["household"])).astype(int))
    model = LogisticParticipation(["age", "household"], confidence=0.9).fit(wave)
    spec = json.loads(json.dumps(build_spec(design(frame, 4, model, 0.01, columns=["age", "income", "hours"]))))
    assert spec["guarantee"]["participation"]["model"] == "logistic"
    assert spec["guarantee"]["participation"]["lower_bound"]["covariance"]
    return spec


def test_a_logistic_model_verifies(driver, logistic):
    verify(logistic)
    assert js_verify(driver, canonical_bytes(logistic), logistic["digest"]) == {
        "ok": True, "problems": [], "digest": logistic["digest"]}

    def covariance(m, f):
        m["lower_bound"]["covariance"] = f(np.array(m["lower_bound"]["covariance"])).tolist()

    same_message = {  # both refuse with the same words
        "asymmetric": lambda m: covariance(m, lambda c: c + np.triu(np.full_like(c, 1e-3), 1)),
        "not semi-definite": lambda m: covariance(m, lambda c: c - 2 * np.linalg.eigvalsh(c).min() * np.eye(len(c))
                                                  - np.abs(c).max() * np.eye(len(c))),
        "negative optimism": lambda m: m.__setitem__("optimism", -0.5),
        "confidence": lambda m: m["lower_bound"].__setitem__("confidence", 0.4),
        "wave records": lambda m: m.__setitem__("wave_records", 0),
    }
    other_quotes = {  # Python quotes a name as 'x', survey.js as "x"
        "covariates twice": (lambda m: m.__setitem__("covariates", ["age", "age"]),
                             "specification: participation covariates must be distinct column names, got "),
        "missing intercept": (lambda m: m.pop("intercept"), "specification: missing participation "),
        "coefficient as text": (lambda m: m["coefficients"].__setitem__(0, "0.03"),
                                "specification: participation coefficient must be a finite number, got "),
        "too few coefficients": (lambda m: m["coefficients"].pop(),
                                 "specification: 2 participation covariates need as many coefficients, got "),
        "covariance shape": (lambda m: m["lower_bound"]["covariance"].pop(),
                             "specification: participation covariance must be 3 x 3 numbers"),
    }
    cases = {**{n: (f, None) for n, f in same_message.items()}, **other_quotes}
    for name, (change, start) in cases.items():
        message, problems = refusals(driver, logistic, lambda s: change(s["guarantee"]["participation"]))
        assert problems == [message] if start is None else (message.startswith(start) and len(problems) == 1
                                                            and problems[0].startswith(start)), name
    # the cells' pi_j are checked by Algorithm A, as for per-record participation
    message, problems = refusals(driver, logistic, lambda s: s["cells"][3]["participation"].__setitem__(
        0, min(1.0, s["cells"][3]["participation"][0] * 1.5)))
    assert message.startswith("cell 3: declared failure") and problems == [message]


# ----------------------------------------------------------------------------- the respondent page

QUESTIONS = {"age": {"label": "Your age", "unit": "years"}, "income": {"label": "Monthly income", "unit": "EUR"},
             "area": {"label": "Area"}, "dose": {"label": "daily dose", "unit": "g"}}
SUBJECTS = {"age": "your age", "income": "your monthly income", "area": "your area",  # as the page words them
            "dose": "your daily dose"}
NUMERIC_QUESTION = re.compile(r"Is (?P<subject>your [a-z ]+) under (?P<t>-?[0-9.]+) (?P<unit>\S+)\?")
CATEGORY_QUESTION = re.compile(r"Is (?P<subject>your [a-z ]+) one of: (?P<categories>.+)\?")


def shortest(x: float) -> str:
    """The shortest decimal text that reads back as x, without exponent."""
    return np.format_float_positional(x, trim="-")


def question(driver) -> str:
    return driver.find_element(By.ID, "tree-question").text


def shown(driver, element_id) -> bool:
    return driver.find_element(By.ID, element_id).is_displayed()


def answer(driver, record: dict, thresholds: dict, asked=None) -> int:
    """Answer the page's questions from the record's values, reading only the question text, by
    clicking Yes or No; the cell the page shows at the end (the questions appended to ``asked``)."""
    for _ in range(100):
        text = question(driver)
        if text.startswith("Your cell: "):
            return int(text[len("Your cell: "):])
        if asked is not None:
            asked.append(text)
        assert not shown(driver, "review")  # no review before the cell is found
        numeric, categorical = NUMERIC_QUESTION.fullmatch(text), CATEGORY_QUESTION.fullmatch(text)
        assert numeric or categorical, text
        column = {v: k for k, v in SUBJECTS.items()}[(numeric or categorical)["subject"]]
        if numeric:
            t = numeric["t"]
            assert numeric["unit"] == QUESTIONS[column]["unit"]
            assert t == shortest(float(t)) and float(t) in thresholds[column], text  # exactly a threshold
            yes = record[column] < float(t)
        else:
            yes = record[column] in re.findall("\u201c(.*?)\u201d", categorical["categories"])
        driver.find_element(By.ID, "tree-yes" if yes else "tree-no").click()
        assert question(driver) != text
    raise AssertionError("more than 100 questions")


def tree_survey(collector, frame, **options):
    spec = tree_spec(frame, **options)
    columns = spec["function"]["columns"]
    thresholds = {c: set() for c in columns}
    for node in splits(spec):
        if "threshold" in node:
            thresholds[columns[node["column"]]].add(node["threshold"])
    survey = publish(collector, json.dumps(spec), questions={c: QUESTIONS[c] for c in columns})
    return spec, thresholds, survey


def test_respondents_answer_the_trees_questions(collector, page):
    base, _, database_url = collector
    frame = population(300, seed=3)  # and a key with tiny thresholds
    frame["dose"] = np.round(np.random.default_rng(5).uniform(0, 4e-7, len(frame)), 12)
    spec, thresholds, survey = tree_survey(collector, frame)
    assert any(t < 1e-6 for t in thresholds["dose"])  # String(t) writes them with an exponent: 2.6e-7
    function = function_from_json(json.dumps(spec["function"]))
    rng = np.random.default_rng(26)
    records = pd.concat([frame.iloc[rng.choice(len(frame), 12, replace=False)], at_thresholds(spec, frame, rng)],
                        ignore_index=True)
    cells = function.assign(records)
    network(page)  # empties the log
    asked = []
    for r, (record, cell) in enumerate(zip(records.to_dict("records"), cells)):
        open_survey(page, base, survey["id"])
        assert shown(page, "tree") and not page.find_elements(By.CSS_SELECTOR, "#qi-fields input")
        assert not shown(page, "answer-fields") and not shown(page, "tree-back")
        if r == 0:  # a wrong answer, then back one question
            first = question(page)
            page.find_element(By.ID, "tree-yes").send_keys(Keys.ENTER)  # by keyboard
            assert question(page) != first and shown(page, "tree-back")
            assert page.find_element(By.ID, "tree-answers").text == first + " Yes"
            page.find_element(By.ID, "tree-back").click()
            assert question(page) == first and page.find_element(By.ID, "tree-answers").text == ""
        assert answer(page, record, thresholds, asked) == cell
        assert page.find_element(By.ID, "tree-question").get_attribute("aria-live") == "polite"
        if r >= 3:
            continue
        answers = {"happy": r, "region": "north"}  # the first three respondents send their answers
        for name, value in answers.items():
            type_in(page, ANSWER_LABELS[name], str(value))
        shown_payload, result = review_and_send(page)
        assert result == "Thank you: your answers were stored."
        [raw] = posted(page)
        body = json.loads(raw)
        assert raw == shown_payload and set(body) == KEYS
        assert body["cell"] == int(cell) and body["answers"] == answers and body["digest"] == survey["digest"]
    assert {NUMERIC_QUESTION.fullmatch(text)["subject"] for text in asked} == {SUBJECTS[c] for c in ("age", "income", "dose")}
    requests, _ = network(page)
    sid = survey["id"]
    assert {e["request"]["url"][len(base):].split("?")[0] for e in requests} <= {
        f"/respond/{sid}", "/static/respond.css", "/static/survey.js", "/static/blindrsa.js", "/static/respond.js",
        "/static/favicon.svg",
        f"/api/surveys/{sid}", f"/api/surveys/{sid}/document", f"/api/surveys/{sid}/spec/canonical",
        f"/api/surveys/{sid}/submissions"}
    assert sorted(c for c, _ in stored(database_url, sid).values()) == sorted(int(c) for c in cells[:3])


def test_questions_on_a_nominal_key(collector, page):
    base, _, _ = collector
    frame = with_area(population(300, seed=4), 27)
    spec, thresholds, survey = tree_survey(collector, frame, nominal=["area"])
    assert any("categories" in node for node in splits(spec))
    records = frame.iloc[np.random.default_rng(28).choice(len(frame), 10, replace=False)]
    cells = function_from_json(json.dumps(spec["function"])).assign(records)
    asked = []
    for record, cell in zip(records.to_dict("records"), cells):
        open_survey(page, base, survey["id"])
        assert answer(page, record, thresholds, asked) == cell
        assert shown(page, "answer-fields") and shown(page, "review")
    assert any(CATEGORY_QUESTION.fullmatch(text) for text in asked)


def test_a_logistic_survey_verifies_on_the_page(collector, page, logistic):
    base, _, _ = collector
    survey = publish(collector, json.dumps(logistic), questions={})
    open_survey(page, base, survey["id"])
    WebDriverWait(page, TIMEOUT).until(lambda d: shown(d, "survey-form"))
    assert page.find_element(By.ID, "verified").text.startswith("Verified on this device")
    assert not shown(page, "error")

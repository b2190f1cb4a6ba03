"""Survey designs beyond paper 1's (issue 18): PCL cells and the untrusted-mode tree of questions,
its function kind "decision-tree" and its printable questionnaire."""

import json
import math
import re
from fractions import Fraction
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from helpers import brute_qbar, qbar

from probanon.cli import main
from probanon.errors import InputError, ParameterError, SpecificationError
from probanon.microagg.function import function_from_json
from probanon.survey.design import design, safe_cell_size
from probanon.survey.questionnaire import questionnaire_html
from probanon.survey.spec import assign, build_spec, verify
from probanon.survey.tree import round_threshold

K, PI, RISK = 5, 0.6, 1e-3


@pytest.fixture(scope="module")
def census_frame(shared_data):
    return pd.read_csv(shared_data / "casc" / "census.csv")


@pytest.fixture(scope="module")
def census_pis(census_frame):
    return np.random.default_rng(11).uniform(0.3, 0.9, len(census_frame))


@pytest.fixture(scope="module")
def designs(census_frame, census_pis):
    """Every mode at constant pi and per-record pi_j on the census."""
    return {(method, model): design(census_frame, K, PI if model == "constant" else census_pis, RISK, method=method,
                                    random_state=1)
            for method in ("mdav", "pcl", "tree") for model in ("constant", "per-record")}


def mixed_frame(n=600, seed=5):
    """Two numeric keys, a nominal and an ordinal one; the region shifts the income."""
    rng = np.random.default_rng(seed)
    region = rng.choice(["North", "South", "East", "West, coast"], n)
    education = rng.choice(["primary", "secondary", "tertiary"], n, p=[0.3, 0.5, 0.2])
    age = rng.integers(18, 90, n)
    income = rng.gamma(2.0, 15000, n) + (region == "North") * 20000
    return pd.DataFrame({"age": age, "income": income.round(2), "region": region, "education": education})


MIXED = {"nominal": ["region"], "ordinal": {"education": ["primary", "secondary", "tertiary"]}}


def independent_failures(d, pis):
    """Every cell's failure from its members, independently of the design code."""
    out = []
    for c in range(int(d.labels.max()) + 1):
        members = pis[d.labels == c]
        out.append(qbar(members.size, d.k, members[0]) if np.ptp(members) == 0 else brute_qbar(members, d.k))
    return np.array(out)


@pytest.mark.parametrize("method", ["mdav", "pcl", "tree"])
@pytest.mark.parametrize("model", ["constant", "per-record"])
def test_every_cell_of_every_mode_is_safe_and_reproduced(designs, census_frame, census_pis, method, model):
    d = designs[method, model]
    pis = np.full(len(census_frame), PI) if model == "constant" else census_pis
    failures = independent_failures(d, pis)
    assert failures.max() <= RISK
    np.testing.assert_allclose(failures, d.cell_failures, rtol=1e-9, atol=1e-300)
    assert np.array_equal(np.bincount(d.labels), d.sizes)
    if model == "constant":  # every cell at least n_cell records
        assert d.sizes.min() >= safe_cell_size(K, PI, RISK, len(census_frame))
    # the published function, through its JSON, puts every population record in its designed cell
    spec = build_spec(d)
    cells, centroids = assign(verify(json.loads(json.dumps(spec))), census_frame)
    assert np.array_equal(cells, d.labels)
    means = np.array([np.average(census_frame.to_numpy(float)[d.labels == c], axis=0, weights=pis[d.labels == c])
                      for c in range(len(d.sizes))])
    np.testing.assert_allclose(centroids, means[d.labels], rtol=1e-9)
    assert spec["function"]["kind"] == {"mdav": "ordered-balls", "pcl": "power-diagram", "tree": "decision-tree"}[method]


def test_price_of_trust_on_the_census(designs):
    """PCL cells distort less than MDAV's (the issue asks for at least 10% on the census), the tree
    of questions more: the price of trusting no software."""
    for model in ("constant", "per-record"):
        mdav, pcl, tree = (designs[m, model].distortion for m in ("mdav", "pcl", "tree"))
        assert pcl <= 0.9 * mdav
        assert tree > mdav


@pytest.mark.parametrize("model", ["constant", "per-record"])
def test_pcl_design_keeps_identical_records_together(model):
    """A published function cannot split identical records (PCL's optimum may): the design's cells
    are the function's, every one safe."""
    rng = np.random.default_rng(8)
    frame = pd.DataFrame({"age": rng.integers(18, 60, 800), "region": rng.integers(0, 4, 800),
                          "income": rng.integers(1, 6, 800) * 1000})
    assert frame.duplicated().sum() > 200
    pis = np.full(len(frame), PI) if model == "constant" else rng.uniform(0.3, 0.9, len(frame))
    d = design(frame, K, PI if model == "constant" else pis, RISK, method="pcl", random_state=0)
    assert np.array_equal(d.function.assign(frame), d.labels)
    assert independent_failures(d, pis).max() <= RISK
    keys = frame.astype(str).agg("|".join, axis=1)
    assert (pd.Series(d.labels).groupby(keys.to_numpy()).nunique() == 1).all()
    same = pd.DataFrame({"a": [1.0] * 40, "b": [2.0] * 40})  # every record identical: one cell
    assert design(same, K, PI, RISK, method="pcl").sizes.tolist() == [40]


def test_pcl_design_is_seeded(census_frame):
    a, b = (build_spec(design(census_frame.iloc[:300], K, PI, RISK, method="pcl", random_state=7)) for _ in range(2))
    assert a == b


def test_tree_questions_are_single_key_round_cuts(designs, census_frame):
    d = designs["tree", "constant"]
    nodes = d.function.rule.nodes
    X = census_frame.to_numpy(float)
    for node in nodes:
        if "cell" in node:
            continue
        values = np.unique(X[:, node["column"]])
        below = values[values < node["threshold"]]
        # a threshold is no longer (in decimal digits) than needed to separate its node's values
        assert below.size and below.size < values.size
    # the population follows the questions: recomputed here from the tree's JSON by hand
    tree = build_spec(d)["function"]["rule"]["nodes"]

    def follow(x):
        i = 0
        while "cell" not in tree[i]:
            i = tree[i]["left"] if x[tree[i]["column"]] < tree[i]["threshold"] else tree[i]["right"]
        return tree[i]["cell"]

    assert [follow(x) for x in X] == d.labels.tolist()


@pytest.mark.parametrize("a, b, expected", [(34, 35, 35), (34.2, 34.9, 34.9), (99, 101, 100), (0.1, 0.3, 0.3),
                                            (-5.5, -5.1, -5.1), (1234, 1301, 1300), (0.0009, 0.0014, 0.001)])
def test_round_threshold(a, b, expected):
    assert round_threshold(a, b) == expected


def fewest_digits_threshold(a, b):
    """Independent check of round_threshold, in exact rational arithmetic on the numbers as they
    are written (shortest decimal form): for each power of ten from above down, the largest
    multiple of it that is <= b; the first one above a."""
    a, b = Fraction(repr(float(a))), Fraction(repr(float(b)))
    e = math.floor(math.log10(max(abs(a), abs(b)))) + 1
    while True:
        q = Fraction(10) ** e
        t = math.floor(b / q) * q
        if a < t <= b:
            return t
        e -= 1


def test_round_threshold_is_the_roundest_number_between():
    rng = np.random.default_rng(0)
    cases = [(x / 1000, y / 1000) for x, y in rng.integers(-10**5, 10**5, (400, 2)) if x < y]
    cases += [(2.006, 2.01), (8.116, 8.12), (1e-323, 2e-323)]
    for a in rng.normal(0, 10.0 ** rng.integers(-6, 8, 200)):
        cases += [(a, np.nextafter(a, np.inf)), (a, a + abs(a) * 1e-9 + 1e-300), (a, a + 1.0)]
    for a, b in cases:
        t = round_threshold(float(a), float(b))
        assert a < t <= b
        assert t == float(fewest_digits_threshold(a, b))


def test_tree_with_categorical_keys():
    frame = mixed_frame()
    d = design(frame, K, PI, RISK, method="tree", **MIXED)
    assert list(d.function.columns) == ["age", "income", "region", "education"]
    failures = independent_failures(d, np.full(len(frame), PI))
    assert failures.max() <= RISK
    spec = build_spec(d)
    v = verify(json.loads(json.dumps(spec)))
    assert np.array_equal(v.function.assign(frame), d.labels)
    # released categories are each cell's mode (region) and lower median level (education)
    released = np.asarray(d.function.centroids, dtype=object)
    for c in range(len(d.sizes)):
        members = frame[d.labels == c]
        counts = members["region"].value_counts()
        assert counts[released[c, 2]] == counts.max()
        levels = ["primary", "secondary", "tertiary"]
        ranks = sorted(levels.index(e) for e in members["education"])
        assert released[c, 3] == levels[ranks[(len(ranks) - 1) // 2]]
    assert d.function.encoding.ordinal["education"] == ["primary", "secondary", "tertiary"]
    levels = {"low": "primary", "mid": "secondary", "high": "tertiary"}  # an order that is not alphabetical
    renamed = frame.assign(education=frame["education"].map({v: k for k, v in levels.items()}))
    other = design(renamed, K, PI, RISK, method="tree", nominal=["region"], ordinal={"education": ["low", "mid", "high"]})
    assert other.function.encoding.ordinal["education"] == ["low", "mid", "high"]
    assert np.array_equal(other.labels, d.labels)  # the same questions, the levels renamed
    used = {frame.columns[n["column"]] for n in spec["function"]["rule"]["nodes"] if "categories" in n}
    assert "region" in used  # the region separates incomes: it is asked about
    with pytest.raises(InputError, match="'Mars'"):
        v.function.assign(frame.assign(region="Mars").iloc[:3])
    # 'probanon survey respond' computes the cell from typed values (text) the same way
    from probanon.service.client import cell_of

    for i in range(0, len(frame), 7):
        assert cell_of(v, {c: str(frame.iloc[i][c]) for c in frame.columns}) == d.labels[i]
    with pytest.raises(InputError, match="one of 'East', 'North', 'South', 'West, coast', got 'Mars'"):
        cell_of(v, {"age": 30, "income": 1000, "region": "Mars", "education": "primary"})


class _Questionnaire(HTMLParser):
    """What a person reads on the printed page: each question's text, its categories and where
    yes and no lead."""

    def __init__(self):
        super().__init__()
        self.questions, self.current, self.tag, self.text = {}, None, [], ""

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "li" and (attrs.get("id") or "").startswith("q"):
            self.current = {"number": int(attrs["id"][1:]), "categories": [], "answers": []}
            self.questions[self.current["number"]] = self.current
        self.tag.append(tag)
        if tag not in ("strong", "a"):
            self.text = ""

    def handle_data(self, data):
        self.text += data

    def handle_endtag(self, tag):
        self.tag.pop()
        text = " ".join(self.text.split())
        if self.current is not None and tag == "p" and text.startswith("Is your"):
            self.current["question"] = text
        elif self.current is not None and tag == "li" and "ul" in self.tag and text:
            self.current["categories"].append(text)
        elif self.current is not None and tag == "p" and text.startswith(("Yes:", "No:")):
            self.current["answers"].append(text)
        if tag not in ("strong", "a"):
            self.text = ""


def read_questionnaire(page):
    parser = _Questionnaire()
    parser.feed(page)
    return parser.questions


def answers_yes(q, record, labels) -> bool:
    """How a respondent with ``record`` (column -> value; ``labels``: label -> column) answers
    question ``q``: "Is your L under t?", "Is your L A?", "Is your L A or B?", "Is your L one of A,
    B or C?", "Is your L one of the following?" (listed), "Is your L X or lower?" (an ordinal key:
    its levels listed, or numbers)."""
    label = max((lab for lab in labels if q["question"].startswith(f"Is your {lab} ")), key=len)
    value = record[labels[label]]
    rest = q["question"][len(f"Is your {label} "):].removesuffix("?")
    if rest.startswith("under "):
        return float(value) < float(rest.removeprefix("under "))
    if q["categories"]:
        assert rest == "one of the following" or rest.endswith(" or lower"), rest
        return str(value) in q["categories"]
    if rest.endswith(" or lower"):
        return float(value) <= float(rest.removesuffix(" or lower"))
    words = re.split(r", | or ", rest.removeprefix("one of "))
    return str(value) in words


def follow_questionnaire(questions, record, labels):
    """The cell a respondent with ``record`` (column -> value; ``labels``: label -> column) writes down."""
    q = questions[1]
    for _ in range(len(questions) + 1):
        yes = answers_yes(q, record, labels)
        answer = q["answers"][0 if yes else 1]
        found = re.fullmatch(r"(?:Yes|No): (?:go to question (\d+)|write down cell number (\d+))\.", answer)
        if found.group(2) is not None:
            return int(found.group(2))
        q = questions[int(found.group(1))]
    raise AssertionError("the questions loop")


def test_printed_questionnaire_leads_to_the_designed_cell(designs, census_frame, tmp_path):
    d = designs["tree", "per-record"]
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(build_spec(d)))
    page_file = tmp_path / "form.html"
    assert main(["survey", "questionnaire", str(spec), "-o", str(page_file), "--label", "AFNLWGT=final weight"]) == 0
    page = page_file.read_text()
    assert "<script" not in page and "http" not in page.replace('href="#', "")  # self-contained
    assert verify(str(spec)).digest in page
    labels = {c: c for c in census_frame.columns} | {"final weight": "AFNLWGT"}
    rows = np.random.default_rng(2).choice(len(census_frame), 1000, replace=False)
    questions = read_questionnaire(page)
    assert len(questions) == len(d.sizes) - 1
    for i in rows:
        assert follow_questionnaire(questions, census_frame.iloc[i], labels) == d.labels[i]


def test_printed_questionnaire_with_categories():
    frame = mixed_frame(800, seed=9)
    d = design(frame, K, PI, RISK, method="tree", **MIXED)
    page = questionnaire_html(verify(build_spec(d)))
    assert "Is your region" in page and "Is your education" in page  # question forms: test_question_texts
    labels = {c: c for c in frame.columns}
    questions = read_questionnaire(page)
    for i in range(len(frame)):
        assert follow_questionnaire(questions, frame.iloc[i], labels) == d.labels[i]


def test_tree_rule_is_validated(designs):
    good = build_spec(designs["tree", "constant"])["function"]
    function_from_json(json.dumps(good))

    def broken(change):
        f = json.loads(json.dumps(good))
        change(f["rule"]["nodes"])
        return json.dumps(f)

    first_split = next(i for i, n in enumerate(good["rule"]["nodes"]) if i > 0 and "cell" not in n)
    for change, message in [
        (lambda nodes: nodes[0].update(left=0), "must be an integer in"),
        (lambda nodes: nodes[0].update(right=nodes[0]["left"]), "one tree"),
        (lambda nodes: next(n for n in nodes if "cell" in n).update(cell=10**6), "cells 0.."),
        (lambda nodes: nodes[0].update(threshold="35"), "finite 'threshold'"),
        (lambda nodes: nodes[0].update(column=99), "key 'column'"),
        (lambda nodes: nodes[first_split].update(categories=["a"]), "finite 'threshold'"),
        (lambda nodes: nodes.append({"cell": 0}), "one tree|cells 0.."),
    ]:
        with pytest.raises(SpecificationError, match=message):
            function_from_json(broken(change))


def test_categorical_tree_rule_is_validated():
    d = design(mixed_frame(), K, PI, RISK, method="tree", **MIXED)
    good = build_spec(d)["function"]
    split = next(i for i, n in enumerate(good["rule"]["nodes"]) if "categories" in n)
    for value in (["Mars"], [], ["North", "North"], "North"):
        f = json.loads(json.dumps(good))
        f["rule"]["nodes"][split]["categories"] = value
        with pytest.raises(SpecificationError, match="categorical key"):
            function_from_json(json.dumps(f))


def test_bad_arguments(census_frame, tmp_path, capsys):
    with pytest.raises(ParameterError, match="method must be one of"):
        design(census_frame, K, PI, RISK, method="kmeans")
    with pytest.raises(ParameterError, match="tree design"):
        design(mixed_frame(), K, PI, RISK, method="mdav", nominal=["region"])
    with pytest.raises(InputError, match="categorical key 'zone' is not a column"):
        design(mixed_frame(), K, PI, RISK, method="tree", nominal=["zone"])
    with pytest.raises(InputError, match="'education' is not numeric"):
        design(mixed_frame(), K, PI, RISK, method="tree", columns=["age", "education"], nominal=["region"])
    mdav_spec = tmp_path / "mdav.json"
    mdav_spec.write_text(json.dumps(build_spec(design(census_frame, K, PI, RISK))))
    out = tmp_path / "form.html"
    capsys.readouterr()
    assert main(["survey", "questionnaire", str(mdav_spec), "-o", str(out)]) != 0
    err = capsys.readouterr().err.strip()
    assert "only a tree design" in err and len(err.splitlines()) == 1 and not out.exists()
    tree_spec = tmp_path / "tree.json"
    tree_spec.write_text(json.dumps(build_spec(design(census_frame.iloc[:200], K, PI, RISK, method="tree"))))
    for argv, fragment in [(["--label", "HEIGHT=height"], "not a key"), (["--label", "AFNLWGT"], "NAME=TEXT")]:
        assert main(["survey", "questionnaire", str(tree_spec), "-o", str(out), *argv]) != 0
        assert fragment in capsys.readouterr().err and not out.exists()


def test_cli_design_methods(census_frame, tmp_path, capsys):
    pop = tmp_path / "pop.csv"
    census_frame.iloc[:400].to_csv(pop, index=False)
    for method in ("pcl", "tree"):
        spec = tmp_path / f"{method}.json"
        assert main(["survey", "design", str(pop), "-k", "4", "--participation", "0.7", "--risk", "0.01",
                     "--method", method, "--seed", "3", "-o", str(spec), "--quiet"]) == 0
        assert main(["survey", "verify", str(spec)]) == 0
        assert json.loads(spec.read_text())["function"]["meta"]["method"].startswith("survey design")
    mixed = tmp_path / "mixed.csv"
    mixed_frame().to_csv(mixed, index=False)
    spec = tmp_path / "mixed.json"
    assert main(["survey", "design", str(mixed), "-k", "4", "--participation", "0.7", "--risk", "0.01",
                 "--method", "tree", "--nominal", "region", "--ordinal", "education", "-o", str(spec), "--quiet"]) == 0
    assert main(["survey", "verify", str(spec)]) == 0
    # the respondents' side with categorical keys: assign (read by name) and the Monte Carlo check
    frame = mixed_frame().assign(satisfaction=lambda f: np.arange(len(f)) % 11)
    frame.to_csv(mixed, index=False)
    out = tmp_path / "assigned.csv"
    assert main(["survey", "assign", str(spec), str(mixed), "-o", str(out), "--confidential", "satisfaction",
                 "--keep-order"]) == 0
    assigned = pd.read_csv(out)
    v = verify(str(spec))
    assert assigned["cell"].tolist() == v.function.assign(frame).tolist()
    released = np.asarray(v.function.centroids, dtype=object)[assigned["cell"]]
    assert assigned["region"].tolist() == released[:, 2].tolist()
    capsys.readouterr()
    assert main(["survey", "simulate", str(spec), str(mixed), "--runs", "50", "--seed", "1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cells"] == len(v.function.sizes)
    assert main(["survey", "design", str(mixed), "-k", "4", "--participation", "0.7", "--risk", "0.01",
                 "--nominal", "region", "-o", str(tmp_path / "x.json"), "--quiet"]) != 0
    assert "tree design" in capsys.readouterr().err


@pytest.mark.parametrize("trial", range(12))
def test_tree_root_question_is_the_best_safe_cut(trial):
    """The root question against an exhaustive search over every cut of every numeric key whose
    two sides are safe (sizes >= n_cell, or Algorithm A on each side's pi_j, by convolution)."""
    rng = np.random.default_rng(100 + trial)
    n, k, risk = 60, 3, 0.1
    frame = pd.DataFrame({"a": rng.integers(0, 8, n).astype(float), "b": rng.normal(size=n).round(1),
                          "c": rng.gamma(2.0, 3.0, n).round()})
    per_record = trial % 2 == 1
    pis = rng.uniform(0.3, 0.9, n) if per_record else np.full(n, 0.7)
    d = design(frame, k, pis if per_record else 0.7, risk, method="tree")
    Z = d.function.standardizer.transform(frame.to_numpy(float))
    n_cell = safe_cell_size(k, 0.7, risk, n)

    def safe(mask):
        if not per_record:
            return mask.sum() >= n_cell
        return mask.sum() >= k and brute_qbar(pis[mask], k) <= risk

    def sse(mask):
        z, w = Z[mask], pis[mask]
        return float((w * ((z - w @ z / w.sum()) ** 2).sum(axis=1)).sum())

    costs = [sse(L) + sse(~L) for col in frame.columns for t in np.unique(frame[col])[1:]
             for L in [(frame[col] < t).to_numpy()] if safe(L) and safe(~L)]
    root = d.function.rule.nodes[0]
    if not costs:
        assert "cell" in root
        return
    L = (frame[frame.columns[root["column"]]] < root["threshold"]).to_numpy()
    assert sse(L) + sse(~L) <= min(costs) * (1 + 1e-9)

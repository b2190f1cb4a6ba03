"""Issue 39, point 14: a tree design's questionnaire warns when it is too long to print and says
how to shorten it; its questions read as a person asks them, with the population's labels; and
'diversity release' names its classes and says why its counts are not the plan's N."""

import json

import numpy as np
import pandas as pd
import pyreadstat
import pytest

from probanon.cli import main
from probanon.errors import SpecificationError
from probanon.survey.questionnaire import MAX_QUESTIONS, question
from probanon.survey.spec import digest, verify

PI, RISK, K = 0.7, 0.05, 5


def _population(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "hours": rng.integers(10, 60, n),
                         "sex": rng.choice([1.0, 2.0], n), "race": rng.choice([1.0, 2.0, 3.0], n)})


def _design(tmp_path, population, name, *extra):
    spec = tmp_path / f"{name}.json"
    assert main(["survey", "design", str(population), "-k", str(K), "--participation", str(PI), "--risk", str(RISK),
                 "--method", "tree", "-o", str(spec), "--quiet", *extra]) == 0
    return spec


def _questions(spec) -> int:
    """Questions of a tree specification, counted from its JSON: its nodes that are no cell."""
    return sum("cell" not in node for node in json.loads(spec.read_text())["function"]["rule"]["nodes"])


def test_a_long_questionnaire_is_warned_with_how_to_shorten_it(tmp_path, capsys):
    big, small = tmp_path / "big.csv", tmp_path / "small.csv"
    _population(3000).to_csv(big, index=False)
    _population(150).to_csv(small, index=False)
    columns = ["--columns", "age,hours"]
    long_spec = _design(tmp_path, big, "long", *columns)
    design_err = capsys.readouterr().err
    short_spec = _design(tmp_path, small, "short", *columns)
    assert "warning" not in capsys.readouterr().err
    asked = _questions(long_spec)
    assert asked > MAX_QUESTIONS >= _questions(short_spec)
    assert f"warning: the tree asks {asked:,} questions" in design_err
    page = tmp_path / "q.html"
    assert main(["survey", "questionnaire", str(long_spec), "-o", str(page)]) == 0
    err = capsys.readouterr().err
    assert f"warning: the tree asks {asked:,} questions" in err
    for remedy in ("fewer keys (--columns)", "coarser keys", "a larger -k", "a lower --risk",
                   f"cells of about 3,000 / {MAX_QUESTIONS + 1} = {-(-3000 // (MAX_QUESTIONS + 1))} records"):
        assert remedy in err, remedy
    assert main(["survey", "questionnaire", str(short_spec), "-o", str(page), "--force"]) == 0
    assert "warning" not in capsys.readouterr().err


def test_question_texts():
    assert question("Age", {"threshold": 35.0}) == ("Is your age under 35?", [])
    assert question("sex", {"categories": ["Female"]}) == ("Is your sex Female?", [])
    assert question("Your race", {"categories": ["Black", "Other"]}) == ("Is your race Black or Other?", [])
    assert question("race", {"categories": ["Black", "Other", "White"]}) == \
        ("Is your race one of Black, Other or White?", [])
    many = [f"c{i}" for i in range(8)]
    assert question("region", {"categories": many}) == ("Is your region one of the following?", many)
    comma = ["North", "West, coast"]
    assert question("region", {"categories": comma}) == ("Is your region one of the following?", comma)
    levels = ["primary", "secondary"]
    assert question("education", {"categories": levels}, ordinal=True) == \
        ("Is your education secondary or lower?", levels)
    assert question("BMI", {"categories": [1, 2, 3]}, ordinal=True) == ("Is your BMI 3 or lower?", [])
    assert question("sex", {"categories": [2]}, shown={1: "Male", 2: "Female"}.get) == ("Is your sex Female?", [])


def test_questions_use_the_labels_of_an_spss_population(tmp_path, capsys):
    frame = _population(400, seed=3)
    path = tmp_path / "people.sav"
    pyreadstat.write_sav(frame, str(path), column_labels={"age": "Age in years", "sex": "Sex", "race": "Race"},
                         variable_value_labels={"sex": {1: "Male", 2: "Female"},
                                                "race": {1: "White", 2: "Black", 3: "Other"}})
    spec = _design(tmp_path, path, "coded", "--nominal", "sex,race")
    document = json.loads(spec.read_text())
    assert document["labels"] == {"columns": {"age": "Age in years", "sex": "Sex", "race": "Race"},
                                  "values": {"sex": [[1, "Male"], [2, "Female"]],
                                             "race": [[1, "White"], [2, "Black"], [3, "Other"]]}}
    page_file = tmp_path / "q.html"
    assert main(["survey", "questionnaire", str(spec), "-o", str(page_file), "--label", "hours=weekly hours"]) == 0
    page = page_file.read_text()
    asked = [line for line in page.splitlines() if 'class="question"' in line]
    assert any("Is your age in years under" in q for q in asked) and any("weekly hours under" in q for q in asked)
    coded = [q for q in asked if "Is your sex" in q or "Is your race" in q]
    assert coded and all(any(name in q for name in ("Male", "Female", "White", "Black", "Other")) for q in coded)
    assert not any(f"{code}?" in q or f"{code} or" in q for q in coded for code in "123")  # no bare codes
    # the labels are part of what the digest covers and are checked
    document["labels"]["values"]["sex"] = [[1, 2]]
    document["digest"] = digest(document)
    with pytest.raises(SpecificationError, match="malformed 'labels'"):
        verify(document)


def test_diversity_release_names_its_classes_and_explains_its_counts(tmp_path, capsys):
    from probanon.diversity import plan_diversity
    from probanon.diversity.distribution import distribution_from_frame
    from probanon.diversity.release import save_plan

    rng = np.random.default_rng(4)
    sample = pd.DataFrame({"sex": rng.choice(["F", "M"], 3000), "band": rng.choice(["a", "b", "c"], 3000),
                           "job": rng.choice(list("pqrstu"), 3000)})
    pmf = sample.groupby(["sex", "band", "job"]).size().rename("probability").reset_index()
    pmf = pmf.rename(columns={"job": "sensitive"}).assign(probability=lambda f: f["probability"] / len(sample))
    plan = plan_diversity(distribution_from_frame(pmf), 3, 0.05, beta=0.5)
    assert plan.n_samples < len(sample)
    plan_path, out = tmp_path / "plan.json", tmp_path / "counts.csv"
    save_plan(plan, plan_path)
    sample.to_csv(tmp_path / "sample.csv", index=False)
    assert main(["diversity", "release", str(plan_path), str(tmp_path / "sample.csv"), "--sensitive", "job",
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    released = pd.read_csv(out)
    class_of = json.loads(plan_path.read_text())["class_of"]
    for c, values in released.groupby("class")["class_values"]:
        assert set(values) == {"; ".join(k for k, v in class_of.items() if v == c)}
    # the counts are those of the sample's records per (class, job), computed here
    key = (sample["sex"] + "|" + sample["band"]).map(class_of)
    expected = pd.crosstab(key, sample["job"]).stack()
    got = released.set_index(["class", "sensitive"])["count"]
    assert got.sort_index().to_dict() == expected[expected > 0].sort_index().to_dict()
    bound = plan.m * plan.l * (1 - plan.p) ** len(sample)  # Theorem 4.4 at n records
    assert f"the counts are of all {len(sample):,} records of the sample, more than the plan's N = " \
           f"{plan.n_samples:,}" in err and f"{bound:.3g}" in err

"""A survey of the untrusted mode (issue 18: a tree of questions, a categorical key) through the
collector: published, answered from the command-line client, closed and released with each
response's cell values, the category included."""

import io
import json

import numpy as np
import pandas as pd
from service_support import ANSWERS, call, fresh_database, survey_body

from probanon.service.client import respond
from probanon.service.server import init_admin, running
from probanon.survey.design import design
from probanon.survey.spec import build_spec


def frame(n=400, seed=4):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n).astype(float),
                         "area": rng.choice(["east", "west", "north"], n),
                         "income": np.round(rng.normal(3000, 800, n), 2)})


def test_tree_survey_with_a_category_is_collected_and_released(tmp_path):
    population = frame()
    d = design(population, 3, 0.8, 0.05, method="tree", nominal=["area"])
    spec = build_spec(d)
    url, drop = fresh_database("sqlite", tmp_path)
    try:
        admin = init_admin(url)
        with running(url) as base:
            body = survey_body(json.dumps(spec), questions={"age": {"label": "Your age", "unit": "years"},
                                                          "area": {"label": "Area", "unit": None},
                                                          "income": {"label": "Monthly income", "unit": "EUR"}})
            status, made = call(base, "POST", "/api/admin/surveys", body, token=admin)
            assert status == 201, made
            same = np.flatnonzero(d.labels == d.labels[0])[:3]  # three in one cell, one alone in another
            rows = [*same, int(np.flatnonzero(d.labels != d.labels[0])[0])]
            for i in rows:  # typed values, as on the command line; only the cell leaves the client
                values = {c: str(population.iloc[i][c]) for c in population.columns}
                r = respond(base, made["id"], values, {"happy": 7, "region": "north"})
                assert r.stored and r.sent["cell"] == d.labels[i]
            assert call(base, "POST", f"/api/admin/surveys/{made['id']}/close", {}, token=admin)[0] == 200
            status, analyst = call(base, "POST", "/api/admin/analysts", {"note": "tests"}, token=admin)
            status, payload = call(base, "GET", f"/api/surveys/{made['id']}/release?format=csv",
                                   token=analyst["token"])
            assert status == 200, payload
    finally:
        drop()
    released = pd.read_csv(io.BytesIO(payload), keep_default_na=False)
    centroids = np.asarray(spec["function"]["centroids"], dtype=object)
    # cells with fewer than k responses are suppressed (the default): what remains is each cell's values
    assert sorted(released["cell"]) == [d.labels[0]] * 3
    for _, row in released.iterrows():
        assert row["area"] == centroids[row["cell"], 1] and row["area"] in {"east", "west", "north"}
        assert row["age"] == centroids[row["cell"], 0]
    assert set(released.columns) == {"cell", "age", "area", "income", *(f["name"] for f in ANSWERS)}
    assert (released["happy"] == 7).all() and (released["region"] == "north").all()

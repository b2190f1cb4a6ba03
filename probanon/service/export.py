"""The release of a survey: each response as its cell's centroid (original units) and its answers,
in a random order, with a report on participation and on the guarantee.

Paper 1's guarantee is probabilistic: a cell of n records fails when 0 < K < k of them respond,
with the probability Algorithm A computed at design time (the spec's ``failure``). What actually
happened is known at release time, so the release rule makes it certain: a cell that ended with
0 < K < k responses is flagged and, by default (``small_cells: suppress``), left out, so every
released cell holds >= k responses whatever the participation was. Before the survey closes a
release is refused unless every non-empty cell already holds >= k (a minimum-batch gate): a cell
below k may still grow, and publishing it now would disclose it.
"""

from __future__ import annotations

import io
import json
import math

import numpy as np
import pandas as pd
import sqlalchemy as sa

from ..attacks.scope import GUARANTEES
from . import db
from .surveys import Refused, Survey

FORMATS = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet", "json": "application/json"}


def responses(conn, survey: Survey) -> pd.DataFrame:
    t = db.submissions.c
    rows = conn.execute(sa.select(t.cell, t.answers).where(t.survey_id == survey.id)).all()
    return pd.DataFrame({"cell": np.array([r.cell for r in rows], dtype=np.int64),
                         "answers": [r.answers for r in rows]})


def report(survey: Survey, responses: pd.DataFrame) -> dict:
    """Participation per cell, predicted against observed failures, the achieved k."""
    spec, k = survey.spec, survey.k
    g = spec["guarantee"]
    counts = np.bincount(responses["cell"].to_numpy(), minlength=survey.n_cells)
    sizes = np.array([c["size"] for c in spec["cells"]])
    predicted = np.array([c["failure"] for c in spec["cells"]], dtype=np.float64)
    failed = (counts > 0) & (counts < k)
    released = ~failed if survey.description["release"]["small_cells"] == "suppress" else np.ones_like(failed)
    shown = released & (counts > 0)
    model = dict(g["participation"])
    if model["model"] != "constant":  # per-record or a fitted model: the cells list their pi_j
        model["mean_pi"] = float(np.mean([p for c in spec["cells"] for p in c["participation"]]))
    expected_pi = model.get("pi", model.get("mean_pi"))
    cells = [{"cell": c, "size": int(sizes[c]), "responses": int(counts[c]),
              "participation": float(counts[c] / sizes[c]), "predicted_failure": float(predicted[c]),
              "failed": bool(failed[c]), "released": bool(released[c] and counts[c] > 0),
              "more_responses_than_records": bool(counts[c] > sizes[c])} for c in range(survey.n_cells)]
    return {
        "survey": survey.id, "title": survey.title, "digest": survey.digest, "status": survey.status(),
        "k": k, "risk": g["risk"], "participation_model": model, "records": int(g["records"]),
        "responses": int(counts.sum()),
        "participation": {"expected": expected_pi, "observed": float(counts.sum() / g["records"])},
        "failures": {
            "predicted_failing_cells": float(predicted.sum()),
            "predicted_table_failure": float(-math.expm1(np.log1p(-np.minimum(predicted, 1.0)).sum())),
            "observed_failing_cells": int(failed.sum()),
        },
        "small_cells": survey.description["release"]["small_cells"],
        "released_records": int(counts[shown].sum()),
        "suppressed_records": int(counts[failed & ~released].sum()),
        "suppressed_cells": int((failed & ~released).sum()),
        "flagged_cells": [c for c in range(survey.n_cells) if failed[c]],
        "achieved_k": int(counts[shown].min()) if shown.any() else None,
        "guarantee": GUARANTEES["survey"].to_dict(),
        "cells": cells,
    }


def gate(survey: Survey, rep: dict) -> None:
    """Refuse a release before the close while any non-empty cell holds fewer than k responses."""
    n = rep["failures"]["observed_failing_cells"]
    if rep["status"] != "closed" and n:
        raise Refused(409, f"minimum batch not reached: {n} non-empty cell(s) hold fewer than k = {survey.k} "
                           "responses; before the survey closes every released cell must hold >= k")


def release(conn, survey: Survey) -> tuple[pd.DataFrame, dict]:
    """The released records in a random order (fresh entropy) and the report."""
    frame = responses(conn, survey)
    rep = report(survey, frame)
    gate(survey, rep)
    keep = np.array([rep["cells"][c]["released"] for c in frame["cell"]], dtype=bool)
    frame = frame[keep]
    order = np.random.default_rng().permutation(len(frame))
    frame = frame.iloc[order]
    cells = frame["cell"].to_numpy()
    data = {"cell": cells}  # cell, below_k: surveys.RELEASE_COLUMNS (no answer may take these names)
    centroids = survey.centroids[cells] if len(cells) else np.empty((0, len(survey.columns)))
    for j, col in enumerate(survey.columns):
        data[col] = centroids[:, j]
    answers = [json.loads(a) for a in frame["answers"]]
    for f in survey.answers:
        values = [a.get(f.name) for a in answers]
        data[f.name] = pd.array(values, dtype={"integer": "Int64", "number": "Float64", "category": "string"}[f.type])
    if rep["small_cells"] == "flag":
        data["below_k"] = np.isin(cells, rep["flagged_cells"])
    return pd.DataFrame(data), rep


def encode(frame: pd.DataFrame, rep: dict, fmt: str) -> bytes:
    if fmt == "csv":
        return frame.to_csv(index=False).encode("utf-8")
    if fmt == "parquet":
        buffer = io.BytesIO()
        frame.to_parquet(buffer, index=False)
        return buffer.getvalue()
    columns = [[None if pd.isna(v) else v.item() if isinstance(v, np.generic) else v for v in frame[c]]
               for c in frame.columns]  # exact floats (repr), NA as null
    records = [dict(zip(frame.columns, row)) for row in zip(*columns)]
    return json.dumps({"report": rep, "columns": list(frame.columns), "records": records},
                      allow_nan=False).encode("utf-8")

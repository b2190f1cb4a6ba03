"""The release of a survey: each response as its cell's centroid (original units) and its answers,
in a random order, with a report on participation and on the guarantee.

Paper 1's guarantee is probabilistic: a cell of n records fails when 0 < K < k of them respond,
with the probability Algorithm A computed at design time (the spec's ``failure``). What actually
happened is known at release time, so the release rule makes it certain: a cell that ended with
0 < K < k responses is flagged and, by default (``small_cells: suppress``), left out, so every
released cell holds >= k responses whatever the participation was.

Differencing (issue 40.2): two releases around one submission differ by exactly that submission.
So nothing record-level or per cell leaves the collector before the close, except the interim
releases the publication declared (their times are part of the survey), each refused unless every
cell changed by 0 or by >= k responses since the release before it (the first: every non-empty
cell holds >= k). Every release is computed once, stored (:data:`.db.releases`: its counts, report
and records in each format, in one random order) and served byte for byte whenever asked again;
the final release, made at the first request after the close, also leaves out the cells that
changed by 1..k-1 responses since the last interim one (its report lists them, ``held_back`` and
not released, counted with the suppressed, no part of the achieved k). A refused interim release
is answered with one fixed text (:data:`INTERIM_REFUSED`: no count, no cell) and is in the audit
log, as each download is.
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
from .receipts import chain
from .surveys import Refused, Survey, iso

FORMATS = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet", "json": "application/json"}


def responses(conn, survey: Survey) -> pd.DataFrame:
    t = db.submissions.c
    rows = conn.execute(sa.select(t.cell, t.answers).where(t.survey_id == survey.id)).all()
    return pd.DataFrame({"cell": np.array([r.cell for r in rows], dtype=np.int64),
                         "answers": [r.answers for r in rows]})


#: family-wise level of the stuffing check: a cell whose count is this improbable under the design's
#: participation model (Bonferroni over the cells) is flagged (issue 40.1)
STUFFING_ALPHA = 1e-3


def upper_tail(count: int, pis) -> float:
    """P[X >= count] for X the number of respondents among records with participation
    probabilities ``pis`` (a Poisson-binomial; binomial when they are equal): the exact
    distribution by the recursion P_j(x) = P_{j-1}(x) (1 - pi_j) + P_{j-1}(x - 1) pi_j."""
    pis = np.asarray(pis, dtype=np.float64)
    if count <= 0:
        return 1.0
    if count > pis.size:
        return 0.0
    if np.all(pis == pis[0]):
        from scipy.stats import binom

        return float(binom.sf(count - 1, pis.size, pis[0]))
    dist = np.zeros(pis.size + 1)
    dist[0] = 1.0
    for j, p in enumerate(pis, start=1):
        dist[1:j + 1] = dist[1:j + 1] * (1.0 - p) + dist[:j] * p
        dist[0] *= 1.0 - p
    return float(min(1.0, dist[count:].sum()))


def implausible(survey: Survey, counts: np.ndarray) -> tuple[np.ndarray, list]:
    """(mask of cells whose count the design makes impossible or improbable, their upper-tail
    probabilities): more responses than the frame's records in the cell is impossible; a count whose
    probability P[X >= count] under the design's participation model is below STUFFING_ALPHA / cells
    is improbable (ballot stuffing: more rows than people would send)."""
    spec = survey.spec
    model = spec["guarantee"]["participation"]
    tails = []
    for c, cell in enumerate(spec["cells"]):
        pis = cell["participation"] if model["model"] != "constant" else [model["pi"]] * int(cell["size"])
        tails.append(upper_tail(int(counts[c]), pis))
    tails = np.array(tails)
    return tails < STUFFING_ALPHA / max(len(tails), 1), tails.tolist()


def report(survey: Survey, responses: pd.DataFrame, held: np.ndarray | None = None) -> dict:
    """Participation per cell, predicted against observed failures, the cells the design makes
    implausible (ballot stuffing), the achieved k; ``held``: the cells the final release holds
    back (changed by 1..k-1 since the last interim release): not released, counted with the
    suppressed, and no part of the achieved k."""
    spec, k = survey.spec, survey.k
    g = spec["guarantee"]
    counts = np.bincount(responses["cell"].to_numpy(), minlength=survey.n_cells)
    sizes = np.array([c["size"] for c in spec["cells"]])
    predicted = np.array([c["failure"] for c in spec["cells"]], dtype=np.float64)
    small = (counts > 0) & (counts < k)
    stuffed, tails = implausible(survey, counts)
    failed = small | stuffed
    held = np.zeros(survey.n_cells, dtype=bool) if held is None else held & (counts > 0)
    released = ~failed if survey.description["release"]["small_cells"] == "suppress" else np.ones_like(failed)
    released = released & ~held
    shown = released & (counts > 0)
    model = dict(g["participation"])
    if model["model"] != "constant":  # per-record or a fitted model: the cells list their pi_j
        model["mean_pi"] = float(np.mean([p for c in spec["cells"] for p in c["participation"]]))
    expected_pi = model.get("pi", model.get("mean_pi"))
    cells = [{"cell": c, "size": int(sizes[c]), "responses": int(counts[c]),
              "participation": float(counts[c] / sizes[c]), "predicted_failure": float(predicted[c]),
              "failed": bool(small[c]), "released": bool(released[c] and counts[c] > 0),
              "more_responses_than_records": bool(counts[c] > sizes[c]),
              "upper_tail": tails[c], "implausible": bool(stuffed[c]), "held_back": bool(held[c])}
             for c in range(survey.n_cells)]
    return {
        "survey": survey.id, "title": survey.title, "digest": survey.digest, "status": survey.status(),
        "k": k, "risk": g["risk"], "participation_model": model, "records": int(g["records"]),
        "responses": int(counts.sum()),
        "participation": {"expected": expected_pi, "observed": float(counts.sum() / g["records"])},
        "failures": {
            "predicted_failing_cells": float(predicted.sum()),
            "predicted_table_failure": float(-math.expm1(np.log1p(-np.minimum(predicted, 1.0)).sum())),
            "observed_failing_cells": int(small.sum()),
        },
        "stuffing_check": {"alpha": STUFFING_ALPHA, "per_cell": STUFFING_ALPHA / max(survey.n_cells, 1),
                           "implausible_cells": [c for c in range(survey.n_cells) if stuffed[c]]},
        "small_cells": survey.description["release"]["small_cells"],
        "released_records": int(counts[shown].sum()),
        "suppressed_records": int(counts[(failed | held) & ~released].sum()),
        "suppressed_cells": int(((failed | held) & ~released).sum()),
        "flagged_cells": [c for c in range(survey.n_cells) if failed[c]],
        "achieved_k": int(counts[shown].min()) if shown.any() else None,
        "guarantee": GUARANTEES["survey"].to_dict(),
        "cells": cells,
    }


def access(conn, survey: Survey) -> dict:
    """How submissions were admitted: invitations (declared frame, issued, used) or open to
    anyone, with the note that an open survey is not protected against ballot stuffing."""
    from .surveys import OPEN_NOTE, invitations_issued

    if not survey.requires_token:
        return {"invitations": False, "frame": survey.frame, "note": OPEN_NOTE}
    kept = conn.execute(sa.select(db.invitation_counts).where(db.invitation_counts.c.survey_id == survey.id)).first()
    if kept is not None:  # the close rewrite dropped the codes and redemptions and kept their counts
        return {"invitations": True, "frame": survey.frame, "issued": int(kept.issued), "used": int(kept.used)}
    t = db.tokens.c
    unused = conn.execute(sa.select(sa.func.count()).select_from(db.tokens).where(
        t.survey_id == survey.id, t.role == "respondent")).scalar_one()
    issued = invitations_issued(conn, survey.id)
    return {"invitations": True, "frame": survey.frame, "issued": issued, "used": max(0, int(issued - unused))}


#: the answer to a refused interim release: the same text whatever the counts (how many cells, which
#: ones, by how much would make each attempt a per-cell oracle); each attempt is in the audit log
INTERIM_REFUSED = ("interim release refused: a cell changed by fewer than k responses since the last release "
                   "(each cell must change by 0 or by at least k); try again later")


def changed_below_k(counts: np.ndarray, before: np.ndarray | None, k: int) -> np.ndarray:
    """Cells whose responses changed by 1..k-1 since the release before (``before``: its counts,
    None for the first release, then every cell counts from 0)."""
    change = counts - (np.zeros_like(counts) if before is None else before)
    return (change > 0) & (change < k)


def _stored(conn, survey: Survey) -> list:
    t = db.releases.c
    return conn.execute(sa.select(db.releases).where(t.survey_id == survey.id).order_by(t.seq)).all()


def published(conn, survey: Survey, at=None):
    """The release to serve now (a row of :data:`.db.releases`), computing and storing it if it
    is due (module docstring), or :class:`Refused` 409 saying when one will be."""
    at = at or db.now()
    stored = _stored(conn, survey)
    if stored and stored[-1].final:
        return stored[-1]
    closed = survey.status(at) == "closed"
    due = sum(t <= at for t in survey.interim)  # interim releases the schedule allows by now
    if not closed and len(stored) >= due:
        if stored:  # this slot's interim release: served again as it was
            return stored[-1]
        upcoming = [iso(t) for t in survey.interim if t > at]
        raise Refused(409, "no release before the survey closes" + (
            f": the next interim release is due at {upcoming[0]}" if upcoming else
            " (the publication declared no interim release)"))
    before = np.asarray(json.loads(stored[-1].counts), dtype=np.int64) if stored else None
    frame = responses(conn, survey)
    counts = np.bincount(frame["cell"].to_numpy(), minlength=survey.n_cells)
    if not closed:
        bad = changed_below_k(counts, before, survey.k)
        if bad.any():
            raise Refused(409, INTERIM_REFUSED)
    records, rep = _records(survey, frame, counts, before if closed else None)
    rep["release"] = {"seq": len(stored), "final": closed, "at": iso(at), "interim_declared": len(survey.interim)}
    rep["access"] = access(conn, survey)
    rep["chain"] = chain(conn, survey.id)  # issue 40.10: every stored row, in key-hash order
    row = dict(survey_id=survey.id, seq=len(stored), final=closed, at=at, counts=json.dumps(counts.tolist()),
               report=json.dumps(rep, allow_nan=False).encode("utf-8"),
               **{fmt: encode(records, rep, fmt) for fmt in FORMATS})
    try:
        with conn.begin_nested():
            conn.execute(db.releases.insert().values(**row))
    except sa.exc.IntegrityError:  # another request stored this release first: that one is served
        pass
    return _stored(conn, survey)[len(stored)]


def _records(survey: Survey, frame: pd.DataFrame, counts: np.ndarray, before) -> tuple[pd.DataFrame, dict]:
    """The released records in a random order (fresh entropy, drawn once: the release is stored)
    and the report; ``before``: the counts of the last interim release, whose cells that changed
    by 1..k-1 since are left out of the final release."""
    differenced = None if before is None else changed_below_k(counts, before, survey.k) & (before > 0)
    rep = report(survey, frame, differenced)
    if differenced is not None:
        rep["changed_since_interim"] = [int(c) for c in np.flatnonzero(differenced)]
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

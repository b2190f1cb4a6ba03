"""The collector's HTTP API (issue 15) against a real server on 127.0.0.1, on SQLite and on
PostgreSQL (PROBANON_TEST_POSTGRES): bad input refused with the right 4xx and the database left
unchanged, idempotency and the survey window, roles and tokens, what is stored, immutability,
releases (small cells, formats, random order, report, audit), OpenAPI and security headers.

Every expected number is computed here from what the test sent and from the specification JSON,
never read back from the service.
"""

import base64
import collections
import concurrent.futures
import copy
import datetime as dt
import hashlib
import http.client
import io
import itertools
import json
import math
import re
import urllib.error
import urllib.parse
import urllib.request
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import sqlalchemy as sa
from service_support import (
    ANSWERS,
    BACKENDS,
    call,
    design_spec,
    fresh_database,
    new_key,
    population,
    redeem,
    survey_body,
)

from probanon.service import db, export, security
from probanon.service.server import init_admin, running
from probanon.survey.anonymity import effective_anonymity

# ---------------------------------------------------------------- helpers

FIELDS = ANSWERS + [{"name": "children", "type": "integer", "required": False}]  # an integer without bounds
VALID = {"happy": 5, "region": "north"}  # the required answers
INJECTION = "'; DROP TABLE submissions; --"
DROP = object()  # a field value meaning "leave the field out"
STORED, REPLAYED = (201, {"status": "stored"}), (200, {"status": "already stored"})
_seeds = itertools.count(1000)  # every survey of a database needs its own specification


class Raw(str):
    """A JSON literal written as is into a request body (NaN, 1.0, huge numbers)."""


def encode(body) -> bytes:
    """The JSON of ``body`` with every :class:`Raw` value written verbatim and :data:`DROP` fields left out."""
    literals = {}

    def walk(value):
        if isinstance(value, Raw):
            literals[f"@raw{len(literals)}@"] = str(value)
            return f"@raw{len(literals) - 1}@"
        if isinstance(value, dict):
            return {k: walk(v) for k, v in value.items() if v is not DROP}
        return value

    text = json.dumps(walk(body))
    for placeholder, literal in literals.items():
        text = text.replace(json.dumps(placeholder), literal)
    return text.encode()


def canonical(spec: dict) -> bytes:
    """The canonical bytes of a specification, as the contract defines them."""
    body = {k: v for k, v in spec.items() if k != "digest"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def digest_of(spec: dict) -> str:
    return "sha256:" + hashlib.sha256(canonical(spec)).hexdigest()


def make_spec(n: int = 40) -> SimpleNamespace:
    """A specification no survey has used (k = 3): its population, design, dict and text."""
    frame = population(n, seed=next(_seeds))
    design, text = design_spec(frame, k=3)
    return SimpleNamespace(frame=frame, design=design, spec=json.loads(text), text=text)


def publish(base, admin, text=None, **changes) -> SimpleNamespace:
    """Publish a survey (answer fields :data:`FIELDS`) from a fresh specification or ``text``."""
    made = make_spec() if text is None else SimpleNamespace(frame=None, design=None, spec=json.loads(text), text=text)
    status, body = call(base, "POST", "/api/admin/surveys", survey_body(made.text, **{"answers": FIELDS, **changes}),
                        token=admin)
    assert status == 201, body
    spec = made.spec
    status, document = call(base, "GET", f"/api/surveys/{body['id']}/document")
    assert status == 200 and body["digest"] == "sha256:" + hashlib.sha256(json.dumps(document, sort_keys=True, separators=(
        ",", ":")).encode()).hexdigest() and document["specification"]["digest"] == digest_of(spec)
    return SimpleNamespace(id=body["id"], digest=body["digest"], spec=spec, text=made.text, frame=made.frame,
                           design=made.design, n_cells=len(spec["cells"]), sizes=[c["size"] for c in spec["cells"]],
                           centroids=spec["function"]["centroids"], columns=spec["function"]["columns"])


def submission(s, cell=0, answers=None, **fields) -> dict:
    """A valid submission to survey ``s`` with ``answers`` merged into :data:`VALID` (a non-dict
    replaces them) and top-level ``fields`` changed; :data:`DROP` removes a field."""
    merged = {**VALID, **(answers or {})} if isinstance(answers, (dict, type(None))) else answers
    if isinstance(merged, dict):
        merged = {k: v for k, v in merged.items() if v is not DROP}
    body = {"digest": s.digest, "cell": cell, "answers": merged, "idempotency_key": new_key(), **fields}
    return {k: v for k, v in body.items() if v is not DROP}


def submit(base, s, body):
    """(status, answer): a stored submission's receipt (issue 40.10, tests/test_service_close.py) is
    checked for its shape and left out."""
    status, reply = call(base, "POST", f"/api/surveys/{s.id}/submissions", raw=encode(body))
    if status in (200, 201) and isinstance(reply, dict):
        receipt = reply.pop("receipt")
        assert set(receipt) == {"survey", "cell", "answers_sha256", "key_sha256", "row_digest", "signature"}
    return status, reply


def respond(base, s, cell, answers) -> dict:
    """Store one response (201) and return it as the record the release must contain."""
    body = {"digest": s.digest, "cell": cell, "answers": answers, "idempotency_key": new_key()}
    assert submit(base, s, body) == STORED
    record = {"cell": cell, **{col: float(v) for col, v in zip(s.columns, s.centroids[cell])}}
    record.update({f["name"]: answers.get(f["name"]) for f in FIELDS})
    return record


def analyst_token(base, admin) -> str:
    status, body = call(base, "POST", "/api/admin/analysts", {"note": "tests"}, token=admin)
    assert status == 200, body
    return body["token"]


def invitations(base, admin, s, count: int) -> list:
    status, body = call(base, "POST", f"/api/admin/surveys/{s.id}/tokens", {"count": count}, token=admin)
    assert status == 200, body
    return body["tokens"]


def dump(engine) -> dict:
    """Every row of every table (whatever tables exist), as sorted text."""
    out = {}
    with engine.connect() as conn:
        for table in sorted(sa.inspect(conn).get_table_names()):
            rows = conn.execute(sa.text(f'SELECT * FROM "{table}"')).all()
            out[table] = sorted(repr(tuple(bytes(v).decode("utf-8", "replace") if isinstance(v, (bytes, memoryview))
                                           else v for v in row)) for row in rows)
    return out


def count(engine, table: str) -> int:
    with engine.connect() as conn:
        return conn.execute(sa.select(sa.func.count()).select_from(db.metadata.tables[table])).scalar_one()


def fetch(base, method, path, data=None, headers=None):
    """(status, lower-cased headers, body bytes) of one request."""
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def post_chunked(base, path, data: bytes, chunk: int = 1024):
    """POST ``data`` with Transfer-Encoding: chunked (no Content-Length): (status, JSON body)."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        conn.request("POST", path, body=(data[i:i + chunk] for i in range(0, len(data), chunk)),
                     headers={"Content-Type": "application/json"}, encode_chunked=True)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def send(base, req: dict):
    if "chunked" in req:
        return post_chunked(base, req["path"], req["chunked"])
    return call(base, req.get("method", "POST"), req["path"], body=req.get("body"), raw=req.get("raw"),
                token=req.get("token"), content_type=req.get("content_type", "application/json"))


def assert_error(status, body, expected: int):
    assert status == expected, body
    assert isinstance(body, dict) and set(body) == {"detail"}, body
    assert isinstance(body["detail"], str) and body["detail"] and "\n" not in body["detail"]


KINDS = {"cell": int, "age": float, "income": float, "happy": int, "spending": float, "region": str,
         "children": int, "below_k": bool}


def released(base, token, survey_id, fmt):
    """(status, records as plain dicts, or the error body) of a release in ``fmt``."""
    status, payload = call(base, "GET", f"/api/surveys/{survey_id}/release?format={fmt}", token=token)
    if status != 200:
        return status, payload
    if fmt == "json":
        frame = pd.DataFrame(payload["records"])
    elif fmt == "csv":
        frame = pd.read_csv(io.BytesIO(payload), keep_default_na=False, na_values=[""], dtype={"region": str})
    else:
        frame = pd.read_parquet(io.BytesIO(payload))
    records = [{col: None if pd.isna(v) else KINDS[col](v) for col, v in row.items()}
               for row in frame.astype(object).to_dict(orient="records")]
    return status, records


def multiset(records, digits: int | None = None) -> collections.Counter:
    """The records as a multiset; ``digits``: floats compared to that many significant digits."""
    def value(v):
        return float(f"{v:.{digits}g}") if digits and isinstance(v, float) else v
    return collections.Counter(tuple(sorted((k, value(v)) for k, v in r.items())) for r in records)


def audit(base, admin) -> list:
    status, body = call(base, "GET", "/api/admin/audit", token=admin)
    assert status == 200, body
    return body


# ---------------------------------------------------------------- fixtures

@pytest.fixture(scope="module", params=BACKENDS)
def shared(request, tmp_path_factory):
    """One collector shared by the tests that compare the whole database before and after their
    request (so they cannot disturb each other), instead of a server each: surveys A (no tokens),
    B and C (invitation tokens), an analyst token and an engine on the database."""
    url, drop = fresh_database(request.param, tmp_path_factory.mktemp("shared"))
    engine = None
    try:
        admin = init_admin(url)
        with running(url) as base:
            engine = db.connect(url)
            ctx = SimpleNamespace(base=base, admin=admin, url=url, engine=engine)
            ctx.A = publish(base, admin)
            ctx.B = publish(base, admin, requires_token=True)
            ctx.C = publish(base, admin, requires_token=True)
            ctx.analyst = analyst_token(base, admin)
            yield ctx
    finally:
        if engine is not None:
            engine.dispose()
        drop()


@pytest.fixture
def engine(collector):
    engine = db.connect(collector[2])
    yield engine
    engine.dispose()


# ---------------------------------------------------------------- 1. bad input

def to(survey="A", token=None, **fields):
    """A submission to survey A (or B, C) with ``fields`` changed; a callable value gets the survey."""
    def build(ctx):
        s = getattr(ctx, survey)
        changes = {k: v(s) if callable(v) else v for k, v in fields.items()}
        body = submission(s, **changes)
        if token is not None:
            body["token"] = token(ctx)
        return {"path": f"/api/surveys/{s.id}/submissions", "raw": encode(body)}
    return build


def to_a(**request):
    """A request to survey A's submissions; a callable value gets the context."""
    return lambda ctx: {"path": f"/api/surveys/{ctx.A.id}/submissions",
                        **{k: v(ctx) if callable(v) else v for k, v in request.items()}}


def valid(ctx) -> bytes:
    return encode(submission(ctx.A))


def padded(ctx) -> bytes:
    """A valid submission made larger than 16 KiB by blanks: only its size is wrong."""
    return valid(ctx)[:-1] + b" " * (16 * 1024) + b"}"


def fresh_token(survey):
    """A blind token of the survey, redeemed from a new invitation code and not spent."""
    def make(ctx):
        s = getattr(ctx, survey)
        return redeem(ctx.base, s.id, invitations(ctx.base, ctx.admin, s, 1)[0])
    return make


def _b64(size: int) -> str:
    return base64.urlsafe_b64encode(np.random.default_rng().bytes(size)).rstrip(b"=").decode()


def used_token(ctx):
    token = fresh_token("B")(ctx)
    assert submit(ctx.base, ctx.B, {**submission(ctx.B), "token": token}) == STORED
    return token


def creation(tamper=None, spec_text=None, **changes):
    """A request to publish a survey from a fresh specification (``tamper``: spec dict -> text)."""
    def build(ctx):
        made = make_spec()
        text = made.text
        if spec_text is not None:
            text = spec_text(ctx)
        elif tamper is not None:
            text = tamper(copy.deepcopy(made.spec))
        body = survey_body(text, **{"answers": FIELDS, **changes})
        return {"path": "/api/admin/surveys", "body": body, "token": ctx.admin}
    return build


def altered(edit, redigest: bool):
    """A tamper: ``edit`` the specification, then keep its digest or recompute it."""
    def tamper(spec):
        edit(spec)
        if redigest:
            spec["digest"] = digest_of(spec)
        return json.dumps(spec, indent=1)
    return tamper


def _cell_sizes(spec):
    """One record moved from cell 1 to cell 0 in the declared cells (the total stays right)."""
    spec["cells"][0]["size"] += 1
    spec["cells"][1]["size"] -= 1


def _function_sizes(spec):
    spec["function"]["sizes"][0] += 1
    spec["function"]["sizes"][1] -= 1


def _centroid(spec):
    spec["function"]["centroids"][0][0] += 1.0


def _kind(spec):
    spec["function"]["kind"] = "intervals"


def _lower_risk(spec):
    """A risk below the worst cell's failure, with n_min recomputed: well-formed, guarantee fails."""
    g = spec["guarantee"]
    g["risk"] = max(c["failure"] for c in spec["cells"]) / 2
    g["n_min"] = effective_anonymity(g["k"], g["participation"]["pi"], g["risk"]).n


def twice_titled(ctx) -> bytes:
    """A valid request to publish a survey, with a second "title" (JSON parsers keep either one)."""
    return json.dumps(creation()(ctx)["body"])[:-1].encode() + b', "title": "Another title"}'


def admin_post(path, body):
    return lambda ctx: {"path": path.format(A=ctx.A.id, B=ctx.B.id), "body": body, "token": ctx.admin}


def analyst_get(path):
    return lambda ctx: {"method": "GET", "path": path.format(A=ctx.A.id), "token": ctx.analyst}


def case(name, status, build, says=None, hidden=None):
    """A bad request: ``build(ctx)`` makes it; the expected status, a phrase the detail ``says``,
    and what was sent that the detail must not echo (``hidden``)."""
    return pytest.param(build, status, says, hidden, id=name)


BAD_INPUT = [
    # -- transport: body syntax, size, content type
    case("malformed-json", 400, to_a(raw=b'{"digest": "sha256:')),
    case("duplicate-key", 400, to_a(raw=lambda ctx: valid(ctx)[:-1] + b', "cell": 1}'), says="twice"),
    case("duplicate-answer-key", 400, to_a(raw=lambda ctx: valid(ctx).replace(b'"happy": 5', b'"happy": 5, "happy": 6'))),
    case("not-an-object", 422, to_a(raw=b"[1, 2]")),
    case("nan", 400, to(answers={"spending": Raw("NaN")})),
    case("infinity", 400, to(answers={"spending": Raw("-Infinity")})),
    case("oversized", 413, to_a(raw=padded)),
    case("oversized-chunked", 413, to_a(chunked=padded)),
    case("content-type-text", 415, to_a(raw=valid, content_type="text/plain")),
    case("content-type-form", 415, to_a(raw=valid, content_type="application/x-www-form-urlencoded")),
    # -- the cell
    case("cell-string", 422, to(cell="3")),
    case("cell-true", 422, to(cell=True)),
    case("cell-float", 422, to(cell=Raw("1.0"))),
    case("cell-null", 422, to(cell=None)),
    case("cell-negative", 422, to(cell=-1)),
    case("cell-n-cells", 422, to(cell=lambda s: s.n_cells)),
    case("cell-missing", 422, to(cell=DROP)),
    # -- the answers
    case("integer-as-string", 422, to(answers={"happy": "5"})),
    case("integer-as-fraction", 422, to(answers={"happy": 5.5})),
    case("integer-as-float", 422, to(answers={"happy": Raw("5.0")})),
    case("integer-true", 422, to(answers={"happy": True})),
    case("number-true", 422, to(answers={"spending": True})),
    case("number-as-string", 422, to(answers={"spending": "12"})),
    case("number-overflows-to-infinity", 422, to(answers={"spending": Raw("1e400")})),
    case("number-integer-beyond-float", 422, to(answers={"spending": Raw("1" + "0" * 400)})),
    case("integer-beyond-64-bits", 422, to(answers={"children": Raw(str(2**63))})),
    case("integer-beyond-2-to-53", 422, to(answers={"children": Raw(str(2**53))})),  # not exact in JavaScript
    case("above-max", 422, to(answers={"happy": 11})),
    case("below-min", 422, to(answers={"spending": -0.01})),
    case("category-not-listed", 422, to(answers={"region": "east"}), hidden="east"),
    case("category-not-a-string", 422, to(answers={"region": 1})),
    case("category-sql-injection", 422, to(answers={"region": INJECTION}), hidden="DROP"),
    case("required-answer-missing", 422, to(answers={"region": DROP})),
    case("required-answer-null", 422, to(answers={"happy": None})),
    case("answers-not-an-object", 422, to(answers=[5, "north"])),
    case("unknown-answer", 422, to(answers={"mood": 3})),
    case("quasi-identifier-in-answers", 422, to(answers={"age": 41}), says="quasi-identifier", hidden="41"),
    case("quasi-identifier-income", 422, to(answers={"income": 3000.5}), says="quasi-identifier", hidden="3000"),
    # -- the other fields
    case("unknown-field", 422, to(comment="hello")),
    case("quasi-identifier-top-level", 422, to(age=41), says="quasi-identifier", hidden="41"),
    case("digest-wrong", 422, to(digest="sha256:" + "0" * 64)),
    case("digest-upper-case", 422, to(digest=lambda s: s.digest.upper())),
    case("digest-of-another-survey", 422, lambda ctx: to(digest=ctx.B.digest)(ctx)),
    case("digest-missing", 422, to(digest=DROP)),
    case("key-missing", 422, to(idempotency_key=DROP)),
    case("key-too-short", 422, to(idempotency_key="a" * 21)),
    case("key-too-long", 422, to(idempotency_key="a" * 65)),
    case("key-sql-injection", 422, to(idempotency_key="x' OR '1'='1'; DROP TABLE submissions; --"), hidden="DROP"),
    case("unknown-survey", 404, lambda ctx: {"path": "/api/surveys/999999/submissions", "raw": valid(ctx)}),
    # -- invitation tokens
    case("token-missing", 403, to("B")),
    case("token-forged", 403, to("B", token=lambda ctx: {"nonce": _b64(32), "signature": _b64(256)})),
    case("token-reused", 403, to("B", token=used_token)),
    case("token-of-another-survey", 403, to("B", token=fresh_token("C"))),
    # a token that is not {"nonce", "signature"} of base64url: a malformed request (audit finding 11)
    case("token-a-code-string", 422, to("B", token=lambda ctx: new_key())),
    case("token-admin-as-invitation", 422, to("B", token=lambda ctx: ctx.admin)),
    case("token-analyst-as-invitation", 422, to("B", token=lambda ctx: ctx.analyst)),
    case("token-nonce-too-short", 422, to("B", token=lambda ctx: {"nonce": _b64(31), "signature": _b64(256)})),
    case("token-to-survey-without-tokens", 422, to("A", token=fresh_token("B"))),
    # -- publishing a survey
    case("spec-cell-size-same-digest", 422, creation(altered(_cell_sizes, redigest=False))),
    case("spec-cell-size-new-digest", 422, creation(altered(_cell_sizes, redigest=True))),
    case("spec-function-same-digest", 422, creation(altered(_centroid, redigest=False))),
    case("spec-function-sizes-new-digest", 422, creation(altered(_function_sizes, redigest=True))),
    case("spec-function-kind-new-digest", 422, creation(altered(_kind, redigest=True))),
    case("spec-guarantee-fails", 422, creation(altered(_lower_risk, redigest=True)), says="guarantee"),
    case("spec-not-json", 422, creation(spec_text=lambda ctx: "{not json")),
    case("spec-duplicate-key", 422, creation(lambda spec: '{"digest": ' + json.dumps(spec["digest"]) + ", "
                                             + json.dumps(spec)[1:]), says="twice"),
    case("spec-published-already", 409, creation(spec_text=lambda ctx: ctx.A.text)),
    case("spec-published-already-reformatted", 409, creation(spec_text=lambda ctx: json.dumps(ctx.A.spec))),
    case("closes-equals-opens", 422, creation(opens="2030-01-01T00:00:00Z", closes="2030-01-01T00:00:00Z")),
    case("closes-before-opens", 422, creation(opens="2030-01-02T00:00:00Z", closes="2030-01-01T00:00:00Z")),
    case("opens-without-zone", 422, creation(opens="2030-01-01T00:00:00")),
    case("answer-named-like-quasi-identifier", 422, creation(answers=FIELDS + [{"name": "age", "type": "integer"}]),
         says="quasi-identifier"),
    case("answer-named-cell", 422, creation(answers=FIELDS + [{"name": "cell", "type": "integer"}])),
    case("answer-named-Cell", 422, creation(answers=FIELDS + [{"name": "Cell", "type": "integer"}]), says="release"),
    case("answer-named-below_k", 422, creation(answers=FIELDS + [{"name": "below_k", "type": "integer"}],
                                               release={"small_cells": "flag"}), says="release"),
    case("answer-named-below_k-suppress", 422, creation(answers=FIELDS + [{"name": "below_k", "type": "integer"}])),
    case("answer-named-like-quasi-identifier-upper", 422,
         creation(answers=FIELDS + [{"name": "AGE", "type": "integer"}]), says="quasi-identifier"),
    case("answers-differ-only-in-case", 422, creation(answers=FIELDS + [{"name": "Happy", "type": "integer"}])),
    case("answer-bound-beyond-float", 422, creation(answers=[{"name": "x", "type": "number", "max": 10**400}])),
    case("answer-free-text", 422, creation(answers=[{"name": "x", "type": "text"}])),
    case("release-unknown-rule", 422, creation(release={"small_cells": "publish"})),
    case("release-unknown-key", 422, creation(release={"small_cells": "suppress", "min_k": 1})),
    case("creation-unknown-field", 422, creation(owner="me")),
    case("creation-malformed-json", 400, lambda ctx: {"path": "/api/admin/surveys", "raw": b'{"title": ',
                                                      "token": ctx.admin}),
    case("creation-duplicate-key", 400, lambda ctx: {**creation()(ctx), "body": None, "raw": twice_titled(ctx)}),
    case("creation-content-type", 415, lambda ctx: {**creation()(ctx), "content_type": "text/plain"}),
    # -- other administrator and analyst requests
    case("tokens-count-zero", 422, admin_post("/api/admin/surveys/{B}/tokens", {"count": 0})),
    case("tokens-count-string", 422, admin_post("/api/admin/surveys/{B}/tokens", {"count": "3"})),
    case("tokens-count-true", 422, admin_post("/api/admin/surveys/{B}/tokens", {"count": True})),
    case("tokens-for-survey-without-tokens", 409, admin_post("/api/admin/surveys/{A}/tokens", {"count": 2})),
    case("tokens-unknown-survey", 404, admin_post("/api/admin/surveys/999999/tokens", {"count": 2})),
    case("close-unknown-survey", 404, admin_post("/api/admin/surveys/999999/close", {})),
    case("close-note-not-text", 422, admin_post("/api/admin/surveys/{A}/close", {"note": 5})),
    case("analyst-unknown-field", 422, admin_post("/api/admin/analysts", {"role": "admin"})),
    case("analyst-unknown-survey", 404, admin_post("/api/admin/analysts", {"survey": 999999})),
    case("analyst-survey-string", 422, admin_post("/api/admin/analysts", {"survey": "1"})),
    case("analyst-survey-true", 422, admin_post("/api/admin/analysts", {"survey": True})),
    case("analyst-survey-zero", 422, admin_post("/api/admin/analysts", {"survey": 0})),
    case("analyst-survey-beyond-64-bits", 422, admin_post("/api/admin/analysts", {"survey": 2**64})),
    # -- survey ids in the path: 1..2^31 - 1 (the INTEGER column), never sent to SQL beyond
    case("id-beyond-64-bits", 422, lambda ctx: {"path": f"/api/surveys/{2**64}/submissions", "raw": valid(ctx)}),
    case("id-2-to-63", 422, lambda ctx: {"method": "GET", "path": f"/api/surveys/{2**63}"}),
    case("id-2-to-31", 422, lambda ctx: {"method": "GET", "path": f"/api/surveys/{2**31}/spec"}),
    case("id-huge", 422, lambda ctx: {"method": "GET", "path": f"/api/surveys/{10**40}/spec/canonical"}),
    case("id-zero", 422, lambda ctx: {"method": "GET", "path": "/api/surveys/0"}),
    case("id-negative", 422, lambda ctx: {"method": "GET", "path": "/api/surveys/-1"}),
    case("id-largest", 404, lambda ctx: {"method": "GET", "path": f"/api/surveys/{2**31 - 1}"}),
    case("id-huge-respond-page", 422, lambda ctx: {"method": "GET", "path": f"/respond/{2**64}"}),
    case("id-huge-tokens", 422, admin_post(f"/api/admin/surveys/{2**63}/tokens", {"count": 1})),
    case("id-huge-close", 422, admin_post(f"/api/admin/surveys/{2**63}/close", {})),
    case("id-huge-release", 422, analyst_get(f"/api/surveys/{2**63}/release?format=csv")),
    case("id-huge-report", 422, analyst_get(f"/api/surveys/{2**63}/release/report")),
    case("release-unknown-format", 422, analyst_get("/api/surveys/{A}/release?format=xml")),
    case("release-unknown-survey", 404, analyst_get("/api/surveys/999999/release?format=csv")),
]


@pytest.mark.parametrize("build, status, says, hidden", BAD_INPUT)
def test_bad_input_is_refused_and_changes_nothing(shared, build, status, says, hidden):
    """``says``: a phrase the one-line detail contains; ``hidden``: what was sent and must not be echoed."""
    req = build(shared)  # may prepare (issue or use a token) before the state is taken
    before = dump(shared.engine)
    got, body = send(shared.base, req)
    assert_error(got, body, status)
    if says:
        assert says in body["detail"]
    if hidden:
        assert hidden not in body["detail"]
    assert dump(shared.engine) == before


def test_the_valid_request_behind_the_bad_cases_is_stored(shared):
    """The control: the submission every bad case alters is itself accepted (one more row)."""
    before = count(shared.engine, "submissions")
    assert submit(shared.base, shared.A, submission(shared.A, answers={"children": 2**53 - 1})) == STORED  # the largest exact integer
    token = redeem(shared.base, shared.B.id, invitations(shared.base, shared.admin, shared.B, 1)[0])
    assert submit(shared.base, shared.B, {**submission(shared.B), "token": token}) == STORED
    assert count(shared.engine, "submissions") == before + 2


@pytest.mark.parametrize("method, path", [
    ("POST", "/api/admin/surveys"), ("POST", "/api/admin/surveys/{A}/tokens"), ("POST", "/api/admin/surveys/{A}/close"),
    ("POST", "/api/admin/analysts"), ("GET", "/api/surveys/{A}/release?format=xml")])
def test_no_token_is_refused_before_the_request_is_examined(shared, method, path):
    """Without a token the answer is 401 whatever the body (none here) or the parameters."""
    before = dump(shared.engine)
    status, body = call(shared.base, method, path.format(A=shared.A.id))
    assert_error(status, body, 401)
    assert dump(shared.engine) == before


@pytest.mark.parametrize("statement, message", [
    ("UPDATE surveys SET spec_text = :b", "immutable"),
    ("UPDATE surveys SET spec_canonical = :b", "immutable"),
    ("UPDATE surveys SET digest = 'sha256:0'", "immutable"),
    ("UPDATE surveys SET description = '{}'", "immutable"),
    ("DELETE FROM surveys", "immutable"),
    ("UPDATE audit SET note = 'rewritten'", "append-only"),
    ("DELETE FROM audit", "append-only"),
])
def test_published_surveys_and_the_audit_log_cannot_be_changed_in_the_database(shared, statement, message):
    before = dump(shared.engine)
    assert before["surveys"] and before["audit"]
    params = {"b": b"{}"} if ":b" in statement else {}
    with pytest.raises(sa.exc.DBAPIError, match=message), shared.engine.begin() as conn:
        conn.execute(sa.text(statement), params)
    assert dump(shared.engine) == before


def test_a_closed_survey_cannot_be_reopened_in_the_database(collector, engine):
    base, admin, _ = collector
    s = publish(base, admin)
    with engine.begin() as conn:  # closing is allowed once, reopening never
        conn.execute(sa.text("UPDATE surveys SET closed_at = :t WHERE id = :i"), {"t": dt.datetime(2030, 1, 1), "i": s.id})
    with pytest.raises(sa.exc.DBAPIError, match="stays closed"), engine.begin() as conn:
        conn.execute(sa.text("UPDATE surveys SET closed_at = NULL WHERE id = :i"), {"i": s.id})


# ---------------------------------------------------------------- 2. idempotency and the window

def test_the_same_idempotency_key_stores_one_row(collector, engine):
    base, admin, _ = collector
    s = publish(base, admin)
    body = submission(s, cell=1, answers={"spending": 12.5})
    assert submit(base, s, body) == STORED
    assert submit(base, s, body) == REPLAYED
    reordered = {**body, "answers": dict(reversed(list(body["answers"].items())))}
    assert submit(base, s, reordered) == REPLAYED
    assert count(engine, "submissions") == 1
    before = dump(engine)
    for other in ({**body, "cell": 2}, {**body, "answers": {**body["answers"], "happy": 6}},
                  {**body, "answers": {k: v for k, v in body["answers"].items() if k != "spending"}}):
        assert_error(*submit(base, s, other), 409)
    assert dump(engine) == before


def test_a_retry_with_the_same_invitation_is_already_stored(collector, engine):
    """A respondent whose answer was stored but who did not hear it retries: 200, not 403."""
    base, admin, _ = collector
    s = publish(base, admin, requires_token=True)
    token = redeem(base, s.id, invitations(base, admin, s, 1)[0])
    body = {**submission(s), "token": token}
    assert submit(base, s, body) == STORED
    assert submit(base, s, body) == REPLAYED
    assert count(engine, "submissions") == 1
    assert_error(*submit(base, s, {**submission(s), "token": token}), 403)  # the token is spent
    assert count(engine, "submissions") == 1


def test_concurrent_retries_store_one_row_and_an_invitation_serves_once(collector, engine):
    """Requests sent at the same time (so they may share one commit batch): the same key stores one
    row; one invitation under eight different keys stores one row."""
    base, admin, _ = collector
    s = publish(base, admin, requires_token=True)
    token, other = (redeem(base, s.id, code) for code in invitations(base, admin, s, 2))
    same = {**submission(s), "token": token}
    different = [{**submission(s, cell=1), "token": other} for _ in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        retries = list(pool.map(lambda body: submit(base, s, body), [same] * 8))
        reuses = list(pool.map(lambda body: submit(base, s, body), different))
    assert sorted(status for status, _ in retries) == [200] * 7 + [201]
    assert sorted(status for status, _ in reuses) == [201] + [403] * 7
    with engine.connect() as conn:
        assert sorted(conn.execute(sa.select(db.submissions.c.cell)).scalars()) == [0, 1]


def test_a_scheduled_survey_refuses_submissions(collector, engine):
    base, admin, _ = collector
    s = publish(base, admin, opens="2098-01-01T00:00:00Z", closes="2099-01-01T00:00:00Z")
    status, info = call(base, "GET", f"/api/surveys/{s.id}")
    assert (status, info["status"], info["opens"]) == (200, "scheduled", "2098-01-01T00:00:00Z")
    assert s.id not in [x["id"] for x in call(base, "GET", "/api/surveys")[1]]
    before = dump(engine)
    assert_error(*submit(base, s, submission(s)), 409)
    assert dump(engine) == before


def test_a_survey_past_its_close_refuses_submissions(collector, engine):
    base, admin, _ = collector
    s = publish(base, admin, opens="2020-01-01T00:00:00Z", closes="2021-01-01T00:00:00Z")
    assert call(base, "GET", f"/api/surveys/{s.id}")[1]["status"] == "closed"
    before = dump(engine)
    assert_error(*submit(base, s, submission(s)), 409)
    assert dump(engine) == before


def test_a_survey_closed_early_refuses_submissions(collector, engine):
    base, admin, _ = collector
    s = publish(base, admin)
    stored = submission(s)
    assert submit(base, s, stored) == STORED
    assert s.id in [x["id"] for x in call(base, "GET", "/api/surveys")[1]]
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {"note": "enough"}, token=admin) == \
        (200, {"status": "closed"})
    assert call(base, "GET", f"/api/surveys/{s.id}")[1]["status"] == "closed"
    assert s.id not in [x["id"] for x in call(base, "GET", "/api/surveys")[1]]
    assert [(e["role"], e["survey_id"], e["note"]) for e in audit(base, admin) if e["action"] == "survey closed"] == \
        [("admin", s.id, "enough")]
    before = dump(engine)
    assert_error(*submit(base, s, submission(s)), 409)
    assert_error(*submit(base, s, stored), 409)
    assert dump(engine) == before


# ---------------------------------------------------------------- 3. roles and tokens

def test_each_endpoint_takes_only_its_role(collector, engine):
    base, admin, _ = collector
    s = publish(base, admin, requires_token=True)
    analyst = analyst_token(base, admin)
    respondent = invitations(base, admin, s, 1)[0]
    spare = make_spec().text
    admin_requests = [("POST", "/api/admin/surveys", survey_body(spare, answers=FIELDS)),
                      ("POST", f"/api/admin/surveys/{s.id}/tokens", {"count": 1}),
                      ("POST", f"/api/admin/surveys/{s.id}/close", {}),
                      ("POST", "/api/admin/analysts", {}),
                      ("GET", "/api/admin/audit", None)]
    analyst_requests = [("GET", f"/api/surveys/{s.id}/release{query}", None)
                        for query in ("?format=csv", "?format=json", "?format=parquet", "/report")]
    refusals = [(None, 401), ("x" + new_key(), 401), (respondent, 401)]  # an invitation is no admin/analyst token
    before = dump(engine)
    for requests, wrong in ((admin_requests, analyst), (analyst_requests, admin)):
        for method, path, body in requests:
            for token, status in refusals + [(wrong, 403)]:
                assert_error(*call(base, method, path, body, token=token), status)
    for header in ("Basic " + base64.b64encode(b"admin:admin").decode(), "Bearer", admin, "Token " + admin):
        status, _, reply = fetch(base, "GET", "/api/admin/audit", headers={"Authorization": header})
        assert status == 401, reply
    assert dump(engine) == before
    # the right roles are accepted (so the refusals above were about the role): the analyst is told
    # that nothing is released before the close (issue 40.2)
    assert call(base, "GET", "/api/admin/audit", token=admin)[0] == 200
    assert_error(*call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst), 409)


def test_tokens_are_random_and_stored_only_as_hashes(collector, engine):
    base, admin, _ = collector
    s = publish(base, admin, text=make_spec(60).text, requires_token=True)  # a frame of 60 people
    analysts = [analyst_token(base, admin) for _ in range(3)]
    respondents = invitations(base, admin, s, 50)
    tokens = [admin] + analysts + respondents
    assert len(set(tokens)) == len(tokens)
    for token in tokens:
        assert re.fullmatch(r"[A-Za-z0-9_-]{22,}", token)
        assert len(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))) * 8 >= 128
    key = new_key()
    assert submit(base, s, {**submission(s, idempotency_key=key), "token": redeem(base, s.id, respondents[0])}) == STORED
    with engine.connect() as conn:
        hashes = [r.hash for r in conn.execute(sa.select(db.tokens.c.hash))]
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in hashes)
    unused = [t for t in tokens if t != respondents[0]]  # the used invitation is deleted
    assert sorted(hashes) == sorted(hashlib.sha256(t.encode()).hexdigest() for t in unused)
    text = json.dumps(dump(engine))
    for secret in tokens + [key]:
        assert secret not in text


def test_init_admin_again_revokes_the_old_admin_token(collector, capsys):
    from probanon.cli import main

    base, admin, database = collector
    assert call(base, "GET", "/api/admin/audit", token=admin)[0] == 200
    assert main(["serve", "--database", database, "--init-admin"]) == 0
    new = capsys.readouterr().out.splitlines()[0].strip()
    assert new != admin and re.fullmatch(r"[A-Za-z0-9_-]{22,}", new)
    assert_error(*call(base, "GET", "/api/admin/audit", token=admin), 401)
    assert_error(*call(base, "POST", "/api/admin/analysts", {}, token=admin), 401)
    assert [e["action"] for e in audit(base, new)].count("admin token issued") == 2


# ---------------------------------------------------------------- 4. nothing linkable stored

def test_a_submission_stores_only_survey_key_hash_cell_answers_and_day(collector, engine):
    base, admin, _ = collector
    s = publish(base, admin, requires_token=True)
    code = invitations(base, admin, s, 1)[0]
    token = redeem(base, s.id, code)  # the code is redeemed (deleted) in its own transaction, before
    with engine.connect() as conn:
        columns = sa.inspect(conn).get_columns("submissions")
    assert [c["name"] for c in columns] == ["survey_id", "key_hash", "cell", "answers", "day"]
    day_type = next(c["type"] for c in columns if c["name"] == "day")
    assert isinstance(day_type, sa.Date) and not isinstance(day_type, sa.DateTime)
    key = new_key()
    before = dump(engine)
    today = dt.datetime.now(dt.UTC).date()
    assert submit(base, s, {**submission(s, cell=2, idempotency_key=key), "token": token}) == STORED
    after_day = dt.datetime.now(dt.UTC).date()
    after = dump(engine)
    # what changed: one submission row and its token's spent nonce (nothing else, no time anywhere)
    assert {t for t in after if after[t] != before[t]} == {"submissions", "spent_tokens"}
    assert len(after["submissions"]) == len(before["submissions"]) + 1
    nonce = base64.urlsafe_b64decode(token["nonce"] + "=" * (-len(token["nonce"]) % 4))
    assert after["spent_tokens"] == [repr((s.id, hashlib.sha256(nonce).hexdigest()))]
    with engine.connect() as conn:
        (row,) = conn.execute(sa.text("SELECT * FROM submissions")).mappings().all()
        raw_day = conn.execute(sa.text("SELECT day FROM submissions")).scalar_one()
        left = conn.execute(sa.select(db.tokens.c.hash).where(
            db.tokens.c.hash == hashlib.sha256(code.encode()).hexdigest())).first()
    assert set(row) == {"survey_id", "key_hash", "cell", "answers", "day"}
    assert (row["survey_id"], row["cell"], json.loads(row["answers"])) == (s.id, 2, VALID)
    assert row["key_hash"] == hashlib.sha256(key.encode()).hexdigest()
    if engine.dialect.name == "sqlite":
        assert re.fullmatch(r"\d{4}-\d\d-\d\d", raw_day)
        raw_day = dt.date.fromisoformat(raw_day)
    assert type(raw_day) is dt.date and raw_day in (today, after_day)
    assert left is None  # a used invitation leaves no row to match with the submission
    text = json.dumps(after)
    assert key not in text and code not in text and token["nonce"] not in text and token["signature"] not in text
    assert len(audit(base, admin)) == len(before["audit"])  # a submission is not logged


# ---------------------------------------------------------------- 5. immutability

def test_the_spec_is_served_byte_for_byte_and_its_canonical_form_hashes_to_the_digest(collector, engine):
    base, admin, _ = collector
    spec = make_spec().spec
    text = json.dumps(spec, indent=4) + "\n"
    s = publish(base, admin, text=text)
    status, headers, served = fetch(base, "GET", f"/api/surveys/{s.id}/spec")
    assert (status, served) == (200, text.encode("utf-8"))
    assert headers["content-type"].startswith("application/json")
    status, _, served = fetch(base, "GET", f"/api/surveys/{s.id}/spec/canonical")
    assert (status, served) == (200, canonical(spec))
    assert "sha256:" + hashlib.sha256(served).hexdigest() == spec["digest"]
    status, _, document = fetch(base, "GET", f"/api/surveys/{s.id}/document")  # the survey document names it
    assert status == 200 and json.loads(document)["specification"] == {"digest": spec["digest"]}
    assert "sha256:" + hashlib.sha256(document).hexdigest() == s.digest == call(base, "GET", f"/api/surveys/{s.id}")[1]["digest"]
    before = dump(engine)
    for again in (text, json.dumps(spec), json.dumps(spec, indent=2, sort_keys=True)):
        status, body = call(base, "POST", "/api/admin/surveys", survey_body(again, answers=FIELDS, title="Again"),
                            token=admin)
        assert_error(status, body, 409)
    assert dump(engine) == before


# ---------------------------------------------------------------- 5b. the survey document (issue 40.4)

def test_the_letter_digest_is_the_survey_documents_and_covers_everything_asked(collector):
    """The digest printed on the letters (the description's, the submissions') is the SHA-256 of
    one document served byte for byte: the title, the specification's digest, the answers with
    their labels, the questions, the window, the release rule with its interim times, the frame,
    open or by invitation, the survey's blind-token issuer key and receipt key (so a collector
    cannot hand each respondent a key of her own) and the page's file hashes."""
    from probanon.service.document import STATIC

    base, admin, _ = collector
    made = make_spec(80)  # a frame of 77 people at most (audit finding 4)
    interim = ["2030-01-01T00:00:00Z"]
    s = publish(base, admin, text=made.text, frame=77, requires_token=True,
                release={"small_cells": "flag", "interim": interim})
    status, headers, data = fetch(base, "GET", f"/api/surveys/{s.id}/document")
    assert status == 200 and headers["content-type"].startswith("application/json")
    assert fetch(base, "GET", f"/api/surveys/{s.id}/document")[2] == data  # byte for byte, every time
    assert "sha256:" + hashlib.sha256(data).hexdigest() == s.digest
    document = json.loads(data)
    assert data == json.dumps(document, sort_keys=True, separators=(",", ":")).encode("ascii")  # canonical
    page = {p.name: "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest() for p in STATIC.iterdir() if p.is_file()}
    assert {"respond.html", "respond.js", "survey.js"} <= set(page)
    expected_answers = [{"name": f["name"], "type": f["type"], "min": f.get("min"), "max": f.get("max"),
                         "categories": f.get("categories"), "required": f.get("required", True),
                         "label": f.get("label", f["name"])} for f in FIELDS]
    assert document == {
        "probanon_survey_document": 1, "title": "Household survey",
        "specification": {"digest": digest_of(made.spec)}, "answers": expected_answers,
        "questions": {"age": {"label": "Your age", "unit": "years"}, "income": {"label": "Monthly income", "unit": "EUR"}},
        "opens": "2020-01-01T00:00:00Z", "closes": "2099-01-01T00:00:00Z",
        "release": {"small_cells": "flag", "interim": interim}, "frame": 77, "open": False,
        "issuer": document["issuer"], "receipt_key": document["receipt_key"], "page": page}
    issuer = document["issuer"]  # the blind-token key (issue 40.3), an RSA-2048 SubjectPublicKeyInfo
    der = base64.urlsafe_b64decode(issuer["public_key"] + "=" * (-len(issuer["public_key"]) % 4))
    assert set(issuer) == {"algorithm", "public_key", "key_id"}
    assert issuer["algorithm"] == "RSABSSA-SHA384-PSS-Deterministic" and issuer["key_id"] == hashlib.sha256(der).hexdigest()
    assert len(der) == 294  # the DER of a 2048-bit RSA SubjectPublicKeyInfo with e = 65537
    receipt_key = document["receipt_key"]  # Ed25519, raw 32 bytes, base64url without padding
    assert len(base64.urlsafe_b64decode(receipt_key + "=")) == 32
    info = call(base, "GET", f"/api/surveys/{s.id}")[1]
    assert info["digest"] == s.digest and all(info[k] == document[k] for k in (
        "title", "answers", "questions", "opens", "closes", "release", "frame", "issuer", "receipt_key"))
    assert submit(base, s, submission(s, digest=digest_of(made.spec)))[0] == 422  # the specification's is not it


def test_any_change_of_the_survey_document_changes_the_digest():
    """Whatever a collector changes in what the respondent is asked (a label, a category, a bound,
    the window, an interim release, the frame, open or not, a key, a page file) gives another digest."""
    from probanon.service import document as documents

    base = dict(title="Household survey", spec_digest="sha256:" + "a" * 64,
                answers=[{"name": "happy", "type": "integer", "min": 0, "max": 10, "categories": None,
                          "required": True, "label": "How happy are you?"},
                         {"name": "region", "type": "category", "min": None, "max": None,
                          "categories": ["north", "south"], "required": True, "label": "Region"}],
                questions={"AGI": {"label": "Adjusted gross income", "unit": "USD"}},
                opens="2027-01-01T00:00:00Z", closes="2027-03-31T23:59:59Z",
                release={"small_cells": "suppress", "interim": []}, frame=5000, open_survey=False,
                issuer=None, receipt_key=None, page={"respond.js": "sha256:" + "b" * 64})

    def digest(**changes):
        return documents.digest_of(documents.canonical(documents.build(**copy.deepcopy({**base, **changes}))))

    def edited(key, edit):
        value = copy.deepcopy(base[key])
        edit(value)
        return {key: value}

    reference = digest()
    assert digest() == reference  # deterministic
    changes = [dict(title="Household survey 2"), dict(spec_digest="sha256:" + "c" * 64),
               edited("answers", lambda a: a[0].update(label="Your adjusted gross income, exactly")),
               edited("answers", lambda a: a[0].update(name="agi")), edited("answers", lambda a: a[0].update(max=11)),
               edited("answers", lambda a: a[0].update(required=False)),
               edited("answers", lambda a: a[1]["categories"].append("west")),
               edited("answers", lambda a: a.pop()),
               edited("questions", lambda q: q["AGI"].update(unit="EUR")),
               dict(opens="2026-12-31T00:00:00Z"), dict(closes="2027-04-01T00:00:00Z"),
               dict(release={"small_cells": "flag", "interim": []}),
               dict(release={"small_cells": "suppress", "interim": ["2027-02-01T00:00:00Z"]}),
               dict(frame=5001), dict(open_survey=True),
               dict(issuer={"algorithm": "RSABSSA-SHA384-PSS-Deterministic", "public_key": "AA", "key_id": "00"}),
               dict(receipt_key="AA"), dict(page={"respond.js": "sha256:" + "d" * 64}),
               dict(page={"respond.js": "sha256:" + "b" * 64, "extra.js": "sha256:" + "e" * 64})]
    digests = [digest(**c) for c in changes]
    assert reference not in digests and len(set(digests)) == len(changes)


@pytest.mark.parametrize("key, name", [("AGI", "agi"), ("AGI", "a_g_i"), ("AGI", "Agi_"), ("A.G.I", "agi"),
                                       ("a g i", "AGI"), ("A-G-I", "a_G_i")])
def test_an_answer_named_like_a_key_up_to_case_blanks_or_punctuation_is_refused(collector, engine, key, name):
    """The substituted-answers attack: a survey asking "your adjusted gross income, exactly" as the
    answer `agi` beside the key `AGI` would have the respondent send her exact quasi-identifier. It
    is refused at publication (422, one line), and nothing is stored."""
    base, admin, _ = collector
    frame = population(40, seed=next(_seeds)).rename(columns={"income": key})
    _, text = design_spec(frame, k=3)
    before = dump(engine)
    answers = FIELDS + [{"name": name, "type": "number", "label": "Your adjusted gross income, exactly"}]
    status, body = call(base, "POST", "/api/admin/surveys", survey_body(text, answers=answers, questions={}),
                        token=admin)
    assert_error(status, body, 422)
    assert f"answer {name!r}" in body["detail"] and f"quasi-identifier {key!r}" in body["detail"]
    assert dump(engine) == before
    # a name that only resembles a key is an ordinary answer
    answers[-1] = {"name": "agi_band", "type": "category", "categories": ["low", "high"]}
    assert call(base, "POST", "/api/admin/surveys", survey_body(text, answers=answers, questions={}),
                token=admin)[0] == 201


# ---------------------------------------------------------------- 6. releases

def answers_for(i: int) -> dict:
    """Distinct answers for response i, some optional fields left out; the spending needs all 17
    significant digits of a double to be written exactly."""
    a = {"happy": i % 11, "region": ("north", "south")[i % 2]}
    if i % 4:
        a["spending"] = (0.1 + 0.2) * (i + 1) + 1000 / 7
    if i % 3 == 0:
        a["children"] = i // 3
    return a


def fill(base, s, counts: dict, start: int = 0) -> list:
    """Submit counts[cell] responses to each cell; the expected released records."""
    records, i = [], start
    for cell, n in counts.items():
        for _ in range(n):
            records.append(respond(base, s, cell, answers_for(i)))
            i += 1
    return records


COLUMNS = ["cell", "age", "income"] + [f["name"] for f in FIELDS]
SIGNIFICANT = 10  # digits compared where exactness is not the point (see test_released_values_are_exact)


def test_release_suppresses_small_cells_and_reports_participation(collector):
    base, admin, _ = collector
    s = publish(base, admin)
    analyst = analyst_token(base, admin)
    k = s.spec["guarantee"]["k"]
    assert k == 3 and s.n_cells >= 5
    for cell, centroid in enumerate(s.centroids):  # original units: the means of the population's cells
        assert np.allclose(centroid, s.frame[s.design.labels == cell].mean().to_numpy(), rtol=1e-12)
    counts = dict.fromkeys(range(s.n_cells), 0)
    releases = 0

    # nothing is released before the close (issue 40.2), small cells or not
    counts.update({0: 3, 2: 5, 3: 1, 4: 2})
    big = fill(base, s, {0: 3, 2: 5})
    small = fill(base, s, {3: 1, 4: 2}, start=len(big))
    for fmt in ("csv", "parquet", "json"):
        assert_error(*released(base, analyst, s.id, fmt), 409)
    assert_error(*call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst), 409)
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200

    for fmt in ("csv", "parquet", "json"):
        status, records = released(base, analyst, s.id, fmt)
        assert status == 200, records
        releases += 1
        assert list(records[0]) == COLUMNS, fmt
        assert multiset(records, SIGNIFICANT) == multiset(big, SIGNIFICANT), fmt  # small cells left out
        assert not {r["cell"] for r in small} & {r["cell"] for r in records}

    status, payload = call(base, "GET", f"/api/surveys/{s.id}/release?format=json", token=analyst)
    releases += 1
    status, report = call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst)
    assert status == 200
    small_cells = [c for c in range(s.n_cells) if 0 < counts[c] < k]
    assert small_cells == [3, 4]
    for rep in (payload["report"], report):
        assert rep["k"] == k and rep["status"] == "closed"
        assert rep["achieved_k"] == min(n for n in counts.values() if n >= k) == 3
        assert rep["flagged_cells"] == small_cells
        assert rep["failures"]["observed_failing_cells"] == len(small_cells)
        assert math.isclose(rep["failures"]["predicted_failing_cells"],
                            math.fsum(c["failure"] for c in s.spec["cells"]), rel_tol=1e-12)
        assert rep["suppressed_records"] == sum(counts[c] for c in small_cells) == len(small)
        assert rep["released_records"] == len(big)
        assert [(c["cell"], c["size"], c["responses"], c["participation"], c["failed"], c["released"])
                for c in rep["cells"]] == \
            [(c, s.sizes[c], counts[c], counts[c] / s.sizes[c], 0 < counts[c] < k, counts[c] >= k)
             for c in range(s.n_cells)]
        assert [c["predicted_failure"] for c in rep["cells"]] == [c["failure"] for c in s.spec["cells"]]

    entries = [e for e in audit(base, admin) if e["survey_id"] == s.id and e["action"].startswith("release")]
    assert all(e["role"] == "analyst" for e in entries)
    assert [e["action"] for e in entries].count("release") == releases
    assert [e["action"] for e in entries].count("release report") == 1


def test_released_values_are_exact_in_every_format(collector):
    """The centroids are the specification's and the answers those sent, to the last bit, in CSV,
    Parquet and JSON alike."""
    base, admin, _ = collector
    s = publish(base, admin)
    analyst = analyst_token(base, admin)
    sent = fill(base, s, {0: 3, 1: 4})
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200
    for fmt in ("csv", "parquet", "json"):
        status, records = released(base, analyst, s.id, fmt)
        assert status == 200, records
        assert multiset(records) == multiset(sent), fmt


def test_release_flags_small_cells_when_asked(collector):
    base, admin, _ = collector
    s = publish(base, admin, release={"small_cells": "flag"})
    analyst = analyst_token(base, admin)
    assert call(base, "GET", f"/api/surveys/{s.id}")[1]["release"] == {"small_cells": "flag", "interim": []}
    counts = {0: 1, 1: 2, 2: 3, 4: 5}
    records = fill(base, s, counts)
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200
    expected = [{**r, "below_k": counts[r["cell"]] < 3} for r in records]
    for fmt in ("csv", "parquet", "json"):
        status, got = released(base, analyst, s.id, fmt)
        assert status == 200, got
        assert list(got[0]) == COLUMNS + ["below_k"], fmt
        assert multiset(got, SIGNIFICANT) == multiset(expected, SIGNIFICANT), fmt
    report = call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst)[1]
    assert report["flagged_cells"] == [0, 1]
    assert report["achieved_k"] == min(counts.values())
    assert report["suppressed_records"] == 0 and report["released_records"] == sum(counts.values())


def _iso(t: dt.datetime) -> str:
    return t.replace(microsecond=0).isoformat() + "Z"


def test_differencing_two_releases_around_one_submission_is_refused(collector):
    """Issue 40.2, the attack: release, one target submits, release again, compare. Before the
    close nothing is released (no interim declared); after it, one release is stored and served
    byte for byte, whatever arrives or is asked; every download is in the audit log."""
    base, admin, _ = collector
    s = publish(base, admin)
    analyst = analyst_token(base, admin)
    fill(base, s, {0: 3, 1: 3})
    first = released(base, analyst, s.id, "json")
    assert first[0] == 409 and "no release before the survey closes" in first[1]["detail"]
    respond(base, s, 0, answers_for(99))  # the target
    assert released(base, analyst, s.id, "json")[0] == 409  # nothing to compare
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200
    bodies = [fetch(base, "GET", f"/api/surveys/{s.id}/release?format=csv",
                    headers={"Authorization": f"Bearer {analyst}"})[2] for _ in range(3)]
    assert len(set(bodies)) == 1 and bodies[0].count(b"\n") == 1 + 7
    report = call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst)[1]
    assert report["release"]["final"] and report["release"]["seq"] == 0 and report["released_records"] == 7
    downloads = [e for e in audit(base, admin) if e["survey_id"] == s.id and e["action"] == "release"]
    assert len(downloads) == 3 and all("release 0 (final)" in e["note"] for e in downloads)


def test_interim_releases_change_each_cell_by_zero_or_k(collector):
    """Declared interim releases (their times are part of the survey): one per declared time that
    has passed, each refused unless every cell changed by 0 or by >= k responses since the one
    before, served again as it was; the final release leaves out the cells that changed by
    1..k-1 since the last interim one."""
    base, admin, _ = collector
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    for interim, says in ((["2019-06-01T00:00:00Z"], "between"),
                          (["2030-01-01T00:00:00Z", "2029-01-01T00:00:00Z"], "increase"),
                          (["soon"], "ISO 8601"), ([_iso(now)] * 13, "at most 12")):
        status, body = call(base, "POST", "/api/admin/surveys",
                            survey_body(make_spec().text, answers=FIELDS, release={"interim": interim}), token=admin)
        assert status == 422 and says in body["detail"], (interim, body)
    times = [now - dt.timedelta(hours=2), now - dt.timedelta(hours=1), now + dt.timedelta(days=30)]
    s = publish(base, admin, release={"interim": [_iso(t) for t in times]})
    analyst = analyst_token(base, admin)
    k = s.spec["guarantee"]["k"]
    fill(base, s, {0: k, 1: 1})
    # the first interim release: cell 1 went from 0 to 1 < k responses
    status, body = released(base, analyst, s.id, "json")
    assert status == 409 and "changed by fewer than k" in body["detail"]
    fill(base, s, {1: k - 1}, start=10)
    status, first = released(base, analyst, s.id, "json")
    assert status == 200 and len(first) == 2 * k
    # the second declared time has passed too: cell 0 changed by 1 < k since the first -> refused
    fill(base, s, {0: 1}, start=20)
    status, body = released(base, analyst, s.id, "json")
    assert status == 409 and "changed by fewer than k" in body["detail"]
    fill(base, s, {0: k - 1}, start=30)
    status, second = released(base, analyst, s.id, "json")
    assert status == 200 and len(second) == 3 * k
    # both declared times used: the second is served again as it was, whatever arrives
    fill(base, s, {2: k}, start=40)
    assert released(base, analyst, s.id, "json") == (200, second)
    report = call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst)[1]
    assert report["release"]["seq"] == 1 and not report["release"]["final"] and report["release"]["interim_declared"] == 3
    # the final release: cell 2 changed by k (released), cell 1 by 1 < k since the last interim (left out)
    fill(base, s, {1: 1}, start=50)
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200
    status, final = released(base, analyst, s.id, "json")
    report = call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst)[1]
    assert status == 200 and report["release"]["final"] and report["changed_since_interim"] == [1]
    assert collections.Counter(r["cell"] for r in final) == {0: 2 * k, 2: k}


def test_the_final_report_says_the_cells_held_back_since_the_interim_release_are_not_released(collector):
    """Audit finding 9: a cell that changed by 1..k-1 since the last interim release is left out of
    the final release, and its report says so: not released, counted with the suppressed, and
    the achieved k is that of the records written."""
    base, admin, _ = collector
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    s = publish(base, admin, release={"interim": [_iso(now - dt.timedelta(hours=1))]})
    analyst = analyst_token(base, admin)
    k = s.spec["guarantee"]["k"]
    fill(base, s, {0: k, 1: 2 * k})
    assert released(base, analyst, s.id, "csv")[0] == 200  # the interim release
    fill(base, s, {0: 1}, start=40)  # cell 0: k + 1, changed by 1 < k since
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200
    status, final = released(base, analyst, s.id, "json")
    report = call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst)[1]
    assert status == 200 and report["release"]["final"] and report["changed_since_interim"] == [0]
    assert collections.Counter(r["cell"] for r in final) == {1: 2 * k}
    cell = report["cells"][0]
    assert cell["responses"] == k + 1 and not cell["released"] and cell["held_back"]
    assert report["cells"][1]["released"] and not report["cells"][1]["held_back"]
    assert report["released_records"] == len(final) == 2 * k
    assert report["suppressed_records"] == k + 1 and report["suppressed_cells"] == 1
    assert report["achieved_k"] == 2 * k


def test_a_refused_interim_release_says_nothing_of_the_counts_and_is_audited(collector):
    """Audit finding 3: the refusal of an interim release is the same text however many cells
    changed by 1..k-1 (a count in it would be a per-cell oracle for an analyst polling it), and
    every refused attempt, of the records or of the report, is in the audit log."""
    base, admin, _ = collector
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    s = publish(base, admin, release={"interim": [_iso(now - dt.timedelta(hours=1))]})
    analyst = analyst_token(base, admin)
    fill(base, s, {0: 1})
    one = released(base, analyst, s.id, "csv")
    fill(base, s, {1: 1}, start=10)
    two = released(base, analyst, s.id, "json")
    report = call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst)
    assert one[0] == two[0] == report[0] == 409
    assert one[1] == two[1] == report[1] and one[1]["detail"] == export.INTERIM_REFUSED
    refused = [e for e in audit(base, admin) if e["survey_id"] == s.id and e["action"] == "release refused"]
    assert len(refused) == 3 and all(e["role"] == "analyst" and e["actor"] == security.token_id(analyst)
                                     for e in refused)
    assert [e["note"].split(":")[0] for e in refused] == ["csv", "json", "report"]


def test_release_order_is_random_and_stored(collector):
    """The release is drawn once in a random order and then served byte for byte (issue 40.2);
    two surveys with the same responses get independent orders."""
    base, admin, _ = collector
    analyst = analyst_token(base, admin)
    orders = []
    for _ in range(2):
        s = publish(base, admin)
        sent = fill(base, s, dict(enumerate(s.sizes)))
        assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200
        bodies = {fmt: [fetch(base, "GET", f"/api/surveys/{s.id}/release?format={fmt}",
                              headers={"Authorization": f"Bearer {analyst}"})[2] for _ in range(3)]
                  for fmt in ("csv", "parquet", "json")}
        for fmt, got in bodies.items():
            assert got[0] == got[1] == got[2], fmt  # stored: the same bytes every time
        records = json.loads(bodies["json"][0])["records"]
        assert len(records) == sum(s.sizes) == 40
        key = [tuple(sorted((k, str(v)) for k, v in r.items())) for r in records]
        sent_key = [tuple(sorted((k, str(v)) for k, v in r.items())) for r in sent]
        assert collections.Counter(key) == collections.Counter(sent_key) and key != sent_key  # permuted
        orders.append([sent_key.index(r) for r in key])
    assert orders[0] != orders[1]


def test_categories_with_sql_are_stored_and_released_verbatim(collector, engine):
    base, admin, _ = collector
    odd = [INJECTION, 'Robert"); DROP TABLE surveys;--', "O'Brien, \"Bob\"\nline two", "NULL", "naïve ✓"]
    fields = [{"name": "happy", "type": "integer", "min": 0, "max": 10},
              {"name": "region", "type": "category", "categories": odd}]
    status, body = call(base, "POST", "/api/admin/surveys",
                        survey_body(make_spec().text, answers=fields, title=INJECTION), token=admin)
    assert status == 201, body
    info = call(base, "GET", f"/api/surveys/{body['id']}")[1]
    assert info["title"] == INJECTION and info["answers"][1]["categories"] == odd
    s = SimpleNamespace(id=body["id"], digest=body["digest"])
    sent = [(cell, category) for cell in (0, 1) for category in odd]  # as many as the design makes plausible
    for i, (cell, category) in enumerate(sent):
        assert submit(base, s, submission(s, cell=cell, answers={"happy": i % 11, "region": category})) == STORED
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200
    analyst = analyst_token(base, admin)
    for fmt in ("csv", "parquet", "json"):
        status, records = released(base, analyst, s.id, fmt)
        assert status == 200, records
        assert collections.Counter((r["cell"], r["happy"], r["region"]) for r in records) == \
            collections.Counter((cell, i % 11, category) for i, (cell, category) in enumerate(sent)), fmt
    assert count(engine, "submissions") == len(sent) and count(engine, "surveys") == 1
    assert set(sa.inspect(engine).get_table_names()) >= {"surveys", "submissions", "tokens", "audit"}


# ---------------------------------------------------------------- 7. OpenAPI and headers

def test_openapi_describes_the_submission_and_no_docs_page_is_served(shared):
    status, api = call(shared.base, "GET", "/openapi.json")
    assert status == 200
    post = api["paths"]["/api/surveys/{survey_id}/submissions"]["post"]
    schema = post["requestBody"]["content"]["application/json"]["schema"]
    assert set(schema["properties"]) == {"digest", "cell", "answers", "idempotency_key", "token"}
    assert set(schema["required"]) == {"digest", "cell", "answers", "idempotency_key"}
    assert schema["additionalProperties"] is False
    for path in ("/docs", "/redoc", "/docs/oauth2-redirect"):
        assert fetch(shared.base, "GET", path)[0] == 404
    status, _, page = fetch(shared.base, "GET", f"/respond/{shared.A.id}")
    assert status == 200
    links = re.findall(rb"""(?:src|href)\s*=\s*["']([^"']*)""", page)
    assert links and all(link.startswith(b"/static/") for link in links)
    assert b"http://" not in page and b"https://" not in page


@pytest.mark.parametrize("path", ["/api/surveys/{A}", "/api/surveys/{A}/spec", "/api/surveys/999999",
                                  "/respond/{A}", "/static/respond.js", "/openapi.json"])
def test_security_headers(shared, path):
    status, headers, _ = fetch(shared.base, "GET", path.format(A=shared.A.id))
    assert status in (200, 404)
    assert "default-src 'self'" in headers["content-security-policy"]
    assert "no-store" in headers["cache-control"]
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "no-referrer"


# ---------------------------------------------------------------- token ids, revocation, the actor of each action

CLOSED = {"closes": "2021-01-01T00:00:00Z"}  # a survey closed from the start: its (empty) release is due


def test_an_analyst_token_is_revoked_by_its_id_and_the_audit_log_names_the_actor(collector):
    base, admin, _ = collector
    s = publish(base, admin, **CLOSED)
    status, issued = call(base, "POST", "/api/admin/analysts", {"note": "release team"}, admin)
    assert status == 200 and issued["id"] == hashlib.sha256(issued["token"].encode()).hexdigest()[:12]
    assert call(base, "GET", f"/api/surveys/{s.id}/release/report", token=issued["token"])[0] == 200
    assert call(base, "POST", "/api/admin/tokens/0123456789ab/revoke", {}, admin)[0] == 404
    assert call(base, "POST", "/api/admin/tokens/XYZ/revoke", {}, admin)[0] == 422
    assert call(base, "POST", f"/api/admin/tokens/{issued['id']}/revoke", {}, issued["token"])[0] == 403
    assert call(base, "POST", f"/api/admin/tokens/{issued['id']}/revoke", {"note": "left"}, admin)[0] == 200
    assert call(base, "GET", f"/api/surveys/{s.id}/release/report", token=issued["token"])[0] == 401
    log = audit(base, admin)
    admin_id = hashlib.sha256(admin.encode()).hexdigest()[:12]
    by_action = {e["action"]: e for e in log}
    assert by_action["survey published"]["actor"] == admin_id
    assert by_action["release report"]["actor"] == issued["id"] and by_action["release report"]["role"] == "analyst"
    assert by_action["analyst token revoked"]["actor"] == admin_id
    assert issued["id"] in by_action["analyst token revoked"]["note"]


def test_the_writer_finds_stored_keys_through_the_primary_key(collector, engine):
    """The writer's stored-keys query (once per committed batch) must use an index, not scan the table."""
    from probanon.service.submissions import Submission, _write

    s = publish(*collector[:2])
    seen = []

    def capture(_conn, _cursor, statement, parameters, _context, _many):
        if statement.lstrip().upper().startswith("SELECT") and "FROM submissions" in statement:
            seen.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", capture)
    try:
        with engine.connect() as conn:
            transaction = conn.begin()
            assert _write(conn, [Submission(s.id, "a" * 64, 0, "{}", None)]) == ["stored"]
            transaction.rollback()
    finally:
        sa.event.remove(engine, "before_cursor_execute", capture)
    (statement, parameters), = seen
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            plan = " ".join(str(r[-1]) for r in conn.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters))
            assert "SCAN submissions" not in plan and "PRIMARY KEY" in plan.upper(), plan
        else:
            conn.exec_driver_sql("SET enable_seqscan = off")  # a tiny table: can an index serve the query?
            plan = " ".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + statement, parameters))
            assert "Index" in plan, plan


# ---------------------------------------------------------------- issue 40: tokens, ids, errors, hosts, scopes, triggers

def test_an_invitation_used_or_not_is_an_unknown_token_to_admin_and_analyst_endpoints(collector, engine):
    """No oracle: an unused invitation, a used one and a random string get the same answer from
    every admin and analyst endpoint, and asking does not spend the unused one."""
    base, admin, _ = collector
    s = publish(base, admin, requires_token=True)
    unused, used = invitations(base, admin, s, 2)
    assert submit(base, s, {**submission(s), "token": redeem(base, s.id, used)}) == STORED
    requests = [("GET", "/api/admin/audit", None), ("POST", "/api/admin/analysts", {}),
                ("POST", f"/api/admin/surveys/{s.id}/tokens", {"count": 1}),
                ("POST", f"/api/admin/surveys/{s.id}/close", {}),
                ("GET", f"/api/surveys/{s.id}/release?format=csv", None),
                ("GET", f"/api/surveys/{s.id}/release/report", None)]
    before = dump(engine)
    for method, path, body in requests:
        answers = [call(base, method, path, body, token=token) for token in (unused, used, new_key())]
        assert answers[0] == answers[1] == answers[2], (path, answers)
        assert_error(*answers[0], 401)
    assert dump(engine) == before
    assert submit(base, s, {**submission(s), "token": redeem(base, s.id, unused)}) == STORED  # still unused until now


def test_an_analyst_token_for_one_survey_reads_that_survey_only(collector, monkeypatch, capsys):
    from probanon.cli import main

    base, admin, _ = collector
    one, two = publish(base, admin, **CLOSED), publish(base, admin, **CLOSED)
    status, issued = call(base, "POST", "/api/admin/analysts", {"survey": one.id, "note": "team one"}, token=admin)
    assert status == 200 and issued["survey"] == one.id
    scoped, unscoped = issued["token"], analyst_token(base, admin)
    reads = ["/release?format=csv", "/release?format=json", "/release?format=parquet", "/release/report"]
    for path in reads:
        assert call(base, "GET", f"/api/surveys/{one.id}{path}", token=scoped)[0] == 200
        assert_error(*call(base, "GET", f"/api/surveys/{two.id}{path}", token=scoped), 403)
        for s in (one, two):  # a token of every survey, as before
            assert call(base, "GET", f"/api/surveys/{s.id}{path}", token=unscoped)[0] == 200
    assert_error(*call(base, "GET", "/api/admin/audit", token=scoped), 403)
    entry, = [e for e in audit(base, admin) if e["action"] == "analyst token issued" and e["survey_id"] is not None]
    assert entry["survey_id"] == one.id and issued["id"] in entry["note"] and "team one" in entry["note"]
    # the office's command: collector analyst --survey ID
    monkeypatch.setenv("PROBANON_TOKEN", admin)
    assert main(["collector", "analyst", base, "--survey", str(two.id), "--note", "team two"]) == 0
    captured = capsys.readouterr()
    token = captured.out.strip()
    assert f"survey {two.id} only" in captured.err
    assert call(base, "GET", f"/api/surveys/{two.id}/release/report", token=token)[0] == 200
    assert_error(*call(base, "GET", f"/api/surveys/{one.id}/release/report", token=token), 403)
    assert main(["collector", "analyst", base, "--survey", "999999"]) == 2
    assert "HTTP 404" in capsys.readouterr().err


def test_stored_submissions_cannot_be_changed_or_deleted_in_the_database(collector, engine):
    base, admin, _ = collector
    s = publish(base, admin)
    assert submit(base, s, submission(s, cell=1)) == STORED
    before = dump(engine)
    for statement in ("UPDATE submissions SET cell = 0", "UPDATE submissions SET answers = '{}'",
                      "UPDATE submissions SET day = day", "DELETE FROM submissions",
                      f"DELETE FROM submissions WHERE survey_id = {s.id}"):
        with pytest.raises(sa.exc.DBAPIError, match="never changed or deleted"), engine.begin() as conn:
            conn.execute(sa.text(statement))
    assert dump(engine) == before
    assert submit(base, s, submission(s, cell=2)) == STORED  # inserting is what the table is for
    if engine.dialect.name == "postgresql":  # TRUNCATE bypasses row triggers: refused by statement triggers
        for table, message in (("submissions", "never changed"), ("audit", "append-only"),
                               ("surveys CASCADE", "immutable")):
            with pytest.raises(sa.exc.DBAPIError, match=message), engine.begin() as conn:
                conn.execute(sa.text(f"TRUNCATE {table}"))
        assert count(engine, "submissions") == 2


def test_two_init_admin_runs_at_once_leave_one_valid_admin_token(database, monkeypatch):
    """Both runs start before either commits (a barrier holds them): one prints the admin token,
    the other fails and changes nothing; on its own again, a run replaces the token as before."""
    import threading

    from probanon.errors import ParameterError
    from probanon.service import security

    first = init_admin(database)
    real, barrier = security.reset_admin, threading.Barrier(2, timeout=60)

    def racing(*args, **kwargs):
        barrier.wait()
        return real(*args, **kwargs)

    monkeypatch.setattr(security, "reset_admin", racing)
    results = [None, None]

    def run(i):
        try:
            results[i] = init_admin(database)
        except ParameterError as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    tokens = [r for r in results if isinstance(r, str)]
    failures = [r for r in results if isinstance(r, ParameterError)]
    assert len(tokens) == 1 and len(failures) == 1, results
    assert "another --init-admin" in str(failures[0]) and "\n" not in str(failures[0])
    engine = db.connect(database)
    try:
        with engine.connect() as conn:
            valid = conn.execute(sa.select(db.tokens.c.hash).where(db.tokens.c.role == "admin",
                                                                   db.tokens.c.revoked.is_(False))).scalars().all()
        assert valid == [hashlib.sha256(tokens[0].encode()).hexdigest()]
        monkeypatch.setattr(security, "reset_admin", real)
        again = init_admin(database)
        with running(database) as base:
            assert call(base, "GET", "/api/admin/audit", token=again)[0] == 200
            for old in (first, tokens[0]):
                assert_error(*call(base, "GET", "/api/admin/audit", token=old), 401)
            issued = [e for e in audit(base, again) if e["action"] == "admin token issued"]
        assert len(issued) == 3  # the first, the race's winner, the last: the loser logged nothing
    finally:
        engine.dispose()


def raw_request(base, method, path, headers: list, body: bytes = b"", version: str = "HTTP/1.1"):
    """(status, lower-cased headers, body) of a request written by hand (any Host header, or none)."""
    import socket

    url = urllib.parse.urlsplit(base)
    head = f"{method} {path} {version}\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers)
    head += f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    with socket.create_connection((url.hostname, url.port), timeout=30) as sock:
        sock.sendall(head.encode("latin-1") + body)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, payload = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(":", 1) for line in lines[1:])
    return int(lines[0].split()[1]), {k.strip().lower(): v.strip() for k, v in fields.items()}, payload


def assert_json_error_with_headers(status, headers, payload, expected):
    assert status == expected, payload
    assert headers["content-type"].startswith("application/json"), headers
    assert_error(status, json.loads(payload), expected)
    assert "default-src 'self'" in headers["content-security-policy"]
    assert "no-store" in headers["cache-control"]
    assert headers["x-content-type-options"] == "nosniff" and headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("host, expected", [
    ("{netloc}", 200), ("localhost:{port}", 200), ("LOCALHOST", 200), ("[::1]:{port}", 200), ("127.0.0.1", 200),
    ("attacker.example", 400), ("attacker.example:{port}", 400), ("127.0.0.1.attacker.example", 400),
    ("localhost.", 200), ("", 400), ("a b", 400), (None, 400)])
def test_a_request_for_an_unknown_host_is_refused(shared, host, expected):
    """DNS rebinding: a page of attacker.example whose name now points at the collector sends
    Host: attacker.example; only the collector's own names are answered (default: loopback)."""
    url = urllib.parse.urlsplit(shared.base)
    headers = [] if host is None else [("Host", host.format(netloc=url.netloc, port=url.port))]
    before = dump(shared.engine)
    for method, path, body, token in (("GET", f"/api/surveys/{shared.A.id}", b"", None),
                                      ("GET", "/api/admin/audit", b"", shared.admin),
                                      ("POST", f"/api/surveys/{shared.A.id}/submissions", encode(submission(shared.A)),
                                       None)):
        extra = [("Content-Type", "application/json")] + ([("Authorization", f"Bearer {token}")] if token else [])
        version = "HTTP/1.0" if host is None else "HTTP/1.1"  # HTTP/1.1 requires a Host header
        got = raw_request(shared.base, method, path, headers + extra, body, version)
        if expected == 400:
            assert_json_error_with_headers(*got, 400)
            assert "Host" in json.loads(got[2])["detail"]
        else:
            assert got[0] in (200, 201), got
    if expected == 400:
        assert dump(shared.engine) == before
    twice = raw_request(shared.base, "GET", "/api/surveys", [("Host", url.netloc), ("Host", "attacker.example")])
    assert twice[0] == 400


def test_allowed_hosts_default_to_the_listening_address():
    from probanon.errors import ParameterError
    from probanon.service.app import allowed_hosts, host_name

    assert allowed_hosts() == ["127.0.0.1", "localhost", "::1"]
    assert allowed_hosts("192.0.2.7") == ["192.0.2.7"]
    assert allowed_hosts("0.0.0.0", ["Survey.Example.org"]) == ["0.0.0.0", "127.0.0.1", "localhost", "::1",
                                                                 "survey.example.org"]
    assert allowed_hosts("::1") == ["::1", "127.0.0.1", "localhost"]
    assert [host_name(h) for h in ("[::1]:80", "a.example.:8080", "[::1", "a:b", "x/y", "")] == \
        ["::1", "a.example", None, None, None, None]
    with pytest.raises(ParameterError, match="allowed-host"):
        allowed_hosts("127.0.0.1", ["bad host"])


def _serve(database, log, *options):
    """``probanon serve`` in a subprocess on a free port of 127.0.0.1: (process, base URL)."""
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "probanon.cli", "serve", "--database", database, "--port", str(port),
                             *options], stdout=log, stderr=subprocess.STDOUT)
    base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(base + "/api/surveys", timeout=2).close()
            return proc, base
        except OSError:
            time.sleep(0.1)
    proc.kill()
    proc.wait(10)
    raise AssertionError(f"the collector did not start (exit status {proc.returncode})")


def _stop(proc):
    import subprocess

    proc.terminate()
    try:
        proc.wait(15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def test_serve_answers_the_allowed_hosts_given(tmp_path):
    import subprocess
    import sys

    database = str(tmp_path / "collector.db")
    with open(tmp_path / "serve.log", "w") as log:
        proc, base = _serve(database, log, "--allowed-host", "survey.example.org", "--allowed-host", "Alt.Example")
    try:
        for host, expected in (("survey.example.org", 200), ("alt.example:443", 200), ("127.0.0.1", 200),
                               ("localhost", 200), ("attacker.example", 400)):
            assert raw_request(base, "GET", "/api/surveys", [("Host", host)])[0] == expected, host
    finally:
        _stop(proc)
    assert "survey.example.org, alt.example" in (tmp_path / "serve.log").read_text()
    bad = subprocess.run([sys.executable, "-m", "probanon.cli", "serve", "--database", database,
                          "--allowed-host", "bad host/"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("probanon: error: --allowed-host")
    assert len(bad.stderr.strip().splitlines()) == 1


def test_every_error_is_json_with_the_headers_and_a_fault_is_one_log_line(database, tmp_path):
    """A server in a subprocess, its output in a file: ids beyond the INTEGER column are 422 and log
    nothing; a fault (the database broken behind the collector's back) is a JSON 500 with the
    security headers and ONE line in the log per request (no traceback, nothing of the request)."""
    admin = init_admin(database)
    log_path = tmp_path / "serve.log"
    with open(log_path, "w") as log:
        proc, base = _serve(database, log)
    try:
        def lines():
            return log_path.read_text(errors="replace").splitlines()

        started = len(lines())
        for method, path, expected in (("GET", f"/api/surveys/{2**64}", 422), ("GET", f"/api/surveys/{2**63}/spec", 422),
                                       ("GET", "/api/surveys/0", 422), ("GET", "/no/such/page", 404),
                                       ("DELETE", "/api/surveys", 405), ("GET", "/static/nothing.js", 404),
                                       ("POST", "/api/admin/surveys", 401)):
            assert_json_error_with_headers(*fetch(base, method, path, b"" if method == "POST" else None), expected)
        assert len(lines()) == started  # a refused request is not logged
        engine = db.connect(database)
        try:
            with engine.begin() as conn:
                conn.execute(sa.text("DROP TABLE audit"))
        finally:
            engine.dispose()
        for i in range(3):
            assert_json_error_with_headers(*fetch(base, "GET", "/api/admin/audit",
                                                  headers={"Authorization": f"Bearer {admin}"}), 500)
            assert len(lines()) == started + i + 1
        faults = lines()[started:]
        assert all("unhandled" in line and "GET /api/admin/audit" in line and "answered 500" in line for line in faults)
        text = "\n".join(faults)
        assert "Traceback" not in text and admin not in text and "audit" in text
    finally:
        _stop(proc)


# ---------------------------------------------------------------- issue 40.1: ballot stuffing

def test_invitations_are_the_default_and_an_open_survey_says_it_is_not_protected(collector):
    base, admin, _ = collector
    text = make_spec().text
    body = survey_body(text, answers=FIELDS)
    del body["open"]  # nothing said: invitations
    status, made = call(base, "POST", "/api/admin/surveys", body, token=admin)
    assert status == 201
    info = call(base, "GET", f"/api/surveys/{made['id']}")[1]
    assert info["requires_token"] and not info["open"] and "note" not in info
    s = SimpleNamespace(id=made["id"], digest=made["digest"])
    assert_error(*submit(base, s, submission(s)), 403)  # no invitation, nothing stored
    # without invitations only when said so
    status, refused = call(base, "POST", "/api/admin/surveys",
                           survey_body(make_spec().text, answers=FIELDS, requires_token=False), token=admin)
    assert status == 422 and '"open": true' in refused["detail"]
    s = publish(base, admin, open=True)
    info = call(base, "GET", f"/api/surveys/{s.id}")[1]
    assert info["open"] and "not protected against ballot stuffing" in info["note"]
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200
    report = call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst_token(base, admin))[1]
    assert not report["access"]["invitations"] and "ballot stuffing" in report["access"]["note"]


def test_invitations_never_exceed_the_frame_and_the_report_counts_them(collector):
    base, admin, _ = collector
    s = publish(base, admin, requires_token=True, frame=5)
    assert call(base, "GET", f"/api/surveys/{s.id}")[1]["frame"] == 5
    tokens = invitations(base, admin, s, 3)
    status, body = call(base, "POST", f"/api/admin/surveys/{s.id}/tokens", {"count": 3}, token=admin)
    assert status == 409 and "frame" in body["detail"] and "2 more at the most" in body["detail"]
    tokens += invitations(base, admin, s, 2)
    assert_error(*call(base, "POST", f"/api/admin/surveys/{s.id}/tokens", {"count": 1}, token=admin), 409)
    for i, token in enumerate(tokens[:4]):  # four of five invitations used, in one cell
        assert submit(base, s, submission(s, cell=0, token=redeem(base, s.id, token), answers=answers_for(i))) == STORED
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200
    report = call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst_token(base, admin))[1]
    assert report["access"] == {"invitations": True, "frame": 5, "issued": 5, "used": 4}
    for frame in (0, -1, True, "5", 1.5):
        status, body = call(base, "POST", "/api/admin/surveys",
                            survey_body(make_spec().text, answers=FIELDS, requires_token=True, frame=frame), token=admin)
        assert status == 422, frame
    # audit finding 4: the frame is at most the design's population (the specification's records)
    made = make_spec()
    records = made.spec["guarantee"]["records"]
    for frame in (records + 1, 10**9):
        status, body = call(base, "POST", "/api/admin/surveys",
                            survey_body(made.text, answers=FIELDS, requires_token=True, frame=frame), token=admin)
        assert_error(status, body, 422)
        assert f"({records} records)" in body["detail"], body
    s = publish(base, admin, text=made.text, requires_token=True, frame=records)
    assert call(base, "GET", f"/api/surveys/{s.id}")[1]["frame"] == records


def test_a_stuffed_cell_is_flagged_and_suppressed(collector):
    """More responses than the frame's records in a cell is impossible; a count whose probability
    under the design's participation model is below 1e-3 / cells is improbable: both are left out
    like a cell below k (the tails recomputed here with scipy's binomial)."""
    from scipy.stats import binom

    base, admin, _ = collector
    s = publish(base, admin)
    analyst = analyst_token(base, admin)
    pi, k = s.spec["guarantee"]["participation"]["pi"], s.spec["guarantee"]["k"]
    counts = {0: s.sizes[0] + 1, 1: s.sizes[1], 2: k}
    fill(base, s, counts)
    assert call(base, "POST", f"/api/admin/surveys/{s.id}/close", {}, token=admin)[0] == 200
    report = call(base, "GET", f"/api/surveys/{s.id}/release/report", token=analyst)[1]
    level = 1e-3 / s.n_cells
    tails = {c: binom.sf(n - 1, s.sizes[c], pi) for c, n in counts.items()}
    assert tails[0] == 0.0  # impossible: more than the cell's records
    for c, n in counts.items():
        assert report["cells"][c]["upper_tail"] == pytest.approx(tails[c], rel=1e-9, abs=1e-300)
        assert report["cells"][c]["implausible"] == (tails[c] < level)
    stuffed = sorted(c for c in counts if tails[c] < level)
    assert 0 in stuffed and report["stuffing_check"]["implausible_cells"] == stuffed
    records = released(base, analyst, s.id, "json")[1]
    assert not {r["cell"] for r in records} & set(stuffed)
    assert report["suppressed_records"] == sum(counts[c] for c in stuffed)


def test_poisson_binomial_upper_tail_against_enumeration():
    from itertools import product

    from probanon.service.export import upper_tail

    pis = [0.1, 0.5, 0.9, 0.3, 0.7]
    for count in range(0, 7):
        exact = sum(math.prod(p if x else 1 - p for p, x in zip(pis, xs))
                    for xs in product((0, 1), repeat=len(pis)) if sum(xs) >= count)
        assert upper_tail(count, pis) == pytest.approx(exact, rel=1e-12, abs=1e-15)

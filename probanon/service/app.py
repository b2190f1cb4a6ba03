"""The collector's HTTP API (FastAPI): see :mod:`probanon.service` for the endpoints.

Every error is a 4xx with ``{"detail": "<one line>"}`` that never echoes what was sent; nothing of a
request is logged. Responses carry a strict Content-Security-Policy (no external resource, no
inline script), ``no-referrer`` and ``no-store``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path

import sqlalchemy as sa
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from . import db, export, security, submissions, surveys
from .surveys import Refused

STATIC = Path(__file__).with_name("static")
MAX_SUBMISSION_BYTES = 16 * 1024
MAX_ADMIN_BYTES = 64 * 1024 * 1024  # a per-record specification of 10^6 records is about 20 MB
MAX_TOKENS_PER_REQUEST = 100_000
BODY_SECONDS = 10  # a body that takes longer is refused (slow clients hold no request open for ever)
WRITE_SECONDS = 30  # a submission not committed by then is answered 503 (retry with the same key)
HEADERS = [
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """Pure ASGI middleware adding :data:`HEADERS` to every response."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_headers(message):
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def read_json(request: Request, limit: int):
    """The JSON body, refusing a wrong content type (415), a body over ``limit`` bytes (413) and
    malformed JSON (400) before anything is parsed further."""
    if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
        raise Refused(415, "send JSON with Content-Type: application/json")
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise Refused(413, f"the body exceeds {limit} bytes")
    async def receive() -> list:
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise Refused(413, f"the body exceeds {limit} bytes")
            chunks.append(chunk)
        return chunks

    try:
        chunks = await asyncio.wait_for(receive(), BODY_SECONDS)
    except TimeoutError:
        raise Refused(408, f"the body did not arrive within {BODY_SECONDS} s") from None
    except ClientDisconnect:  # gone before its body came: an answer nobody reads, not a traceback in the log
        raise Refused(400, "the connection closed before the body arrived") from None
    try:
        return json.loads(b"".join(chunks), parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise Refused(400, "the body is not valid JSON") from None


def _no_constant(name):
    raise ValueError(f"{name} is not JSON")


def _body_schema(properties: dict, required: list) -> dict:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "properties": properties, "required": required, "additionalProperties": False}}}}}


SUBMISSION_SCHEMA = _body_schema({
    "digest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
    "cell": {"type": "integer", "minimum": 0},
    "answers": {"type": "object"},
    "idempotency_key": {"type": "string", "pattern": "^[A-Za-z0-9_-]{22,64}$"},
    "token": {"type": "string"},
}, ["digest", "cell", "answers", "idempotency_key"])

CREATION_SCHEMA = _body_schema({
    "title": {"type": "string"}, "spec": {"type": "string", "description": "the exact text of the specification"},
    "answers": {"type": "array", "items": {"type": "object"}},
    "opens": {"type": "string", "format": "date-time"}, "closes": {"type": "string", "format": "date-time"},
    "requires_token": {"type": "boolean"},
    "release": {"type": "object", "properties": {"small_cells": {"enum": list(surveys.SMALL_CELLS)}}},
    "questions": {"type": "object"},
}, ["title", "spec", "answers", "opens", "closes"])


def create_app(database_url: str) -> FastAPI:
    """The collector on ``database_url`` (a SQLite path or a database URL)."""
    engine = db.connect(database_url)
    cache: dict[int, surveys.Survey] = {}
    state = {}

    async def lifespan(app):
        state["writer"] = submissions.Writer(engine)
        try:
            yield
        finally:
            state.pop("writer").close()
            engine.dispose()

    app = FastAPI(title="probanon collector", version="1", docs_url=None, redoc_url=None, lifespan=lifespan,
                  description="Collects p-probabilistic k-anonymous survey responses (paper 1): respondents send "
                              "their cell and their answers, never their quasi-identifiers.")
    app.add_middleware(SecurityHeaders)

    @app.exception_handler(Refused)  # Unauthorised included
    async def refused(_request, exc):
        return JSONResponse({"detail": str(exc)}, status_code=exc.status)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request, exc):
        where = ".".join(str(p) for p in exc.errors()[0].get("loc", ())) if exc.errors() else "request"
        return JSONResponse({"detail": f"invalid {where}"}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request, exc):
        return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code)

    def survey(conn, survey_id: int) -> surveys.Survey:
        if survey_id not in cache:
            cache[survey_id] = surveys.load(conn, survey_id)
        return cache[survey_id]

    def cached(survey_id: int) -> surveys.Survey:
        with engine.connect() as conn:
            return survey(conn, survey_id)

    @contextlib.contextmanager
    def authorised(request: Request, role: str):
        """(connection in a transaction, the token's id), after checking the bearer token for ``role``;
        committed when the block ends without an error."""
        token = security.bearer(request.headers.get("authorization"))
        with engine.begin() as conn:
            yield conn, security.check(conn, token, role)

    async def require(request: Request, role: str) -> str:
        """Refuse a request without a valid ``role`` token before its body is read; the token's id."""
        def check():
            with authorised(request, role) as (_, actor):
                return actor

        return await run_in_threadpool(check)

    async def noted_action(request: Request, work):
        """An admin action whose body is ``{"note"}``: ``work(conn, actor, note)`` in one transaction."""
        await require(request, "admin")
        note = _note(await read_json(request, MAX_SUBMISSION_BYTES))

        def do():
            with authorised(request, "admin") as (conn, actor):
                return work(conn, actor, note)

        return await run_in_threadpool(do)

    # ---------------------------------------------------------------- public
    @app.get("/api/surveys", summary="The open surveys")
    def open_surveys():
        with engine.connect() as conn:
            ids = conn.execute(sa.select(db.surveys.c.id).order_by(db.surveys.c.id)).scalars().all()
        return [{k: v for k, v in s.public().items() if k in ("id", "title", "digest", "opens", "closes",
                                                               "requires_token", "status")}
                for s in map(cached, ids) if s.status() == "open"]

    @app.get("/api/surveys/{survey_id}", summary="A survey's public description")
    def describe(survey_id: int):
        return cached(survey_id).public()

    @app.get("/api/surveys/{survey_id}/spec", summary="The specification, byte for byte as published")
    def spec(survey_id: int):
        with engine.connect() as conn:
            row = conn.execute(db.surveys.select().with_only_columns(db.surveys.c.spec_text)
                               .where(db.surveys.c.id == survey_id)).first()
        if row is None:
            raise Refused(404, f"no survey {survey_id}")
        return Response(bytes(row.spec_text), media_type="application/json")

    @app.get("/api/surveys/{survey_id}/spec/canonical",
             summary="The canonical bytes of the specification: their SHA-256 is the digest")
    def canonical(survey_id: int):
        return Response(cached(survey_id).spec_canonical, media_type="application/json")

    @app.post("/api/surveys/{survey_id}/submissions", status_code=201, openapi_extra=SUBMISSION_SCHEMA,
              summary="Submit a cell and the answers", responses={200: {"description": "already stored"}})
    async def submit(survey_id: int, request: Request):
        s = cache.get(survey_id) or await run_in_threadpool(cached, survey_id)
        status = s.status()
        if status != "open":
            raise Refused(409, f"the survey is {status}")
        body = await read_json(request, MAX_SUBMISSION_BYTES)
        try:
            result = await asyncio.wait_for(state["writer"].submit(submissions.parse(s, body)), WRITE_SECONDS)
        except TimeoutError:  # the row may still be committed: the same idempotency key tells
            raise Refused(503, "the database did not answer in time; send the same submission again") from None
        return JSONResponse({"status": result}, status_code=201 if result == submissions.STORED else 200)

    @app.get("/respond/{survey_id}", include_in_schema=False)
    def respond_page(survey_id: int):
        return FileResponse(STATIC / "respond.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static")

    # ---------------------------------------------------------------- admin
    @app.post("/api/admin/surveys", status_code=201, openapi_extra=CREATION_SCHEMA, summary="Publish a survey")
    async def create(request: Request):
        actor = await require(request, "admin")
        row = await run_in_threadpool(surveys.parse_creation, await read_json(request, MAX_ADMIN_BYTES))

        def store():
            try:
                with engine.begin() as conn:
                    survey_id = conn.execute(db.surveys.insert().values(**row)).inserted_primary_key[0]
                    db.log_action(conn, "admin", "survey published", survey_id, f"{row['title']} {row['digest']}",
                                  actor)
            except sa.exc.IntegrityError:  # the digest is unique
                raise Refused(409, "a survey with this specification exists: a new survey needs a new "
                                   "specification") from None
            return survey_id

        survey_id = await run_in_threadpool(store)
        return {"id": survey_id, "digest": row["digest"]}

    @app.post("/api/admin/surveys/{survey_id}/tokens", summary="Issue single-use respondent invitations")
    async def invitations(survey_id: int, request: Request):
        await require(request, "admin")
        body = await read_json(request, MAX_SUBMISSION_BYTES)
        count = body.get("count") if isinstance(body, dict) and set(body) <= {"count"} else None
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_TOKENS_PER_REQUEST:
            raise Refused(422, f"send {{\"count\": n}} with 1 <= n <= {MAX_TOKENS_PER_REQUEST}")

        def issue():
            with authorised(request, "admin") as (conn, actor):
                if not survey(conn, survey_id).requires_token:
                    raise Refused(409, "this survey takes no invitation tokens")
                tokens = [security.issue(conn, "respondent", survey_id) for _ in range(count)]
                db.log_action(conn, "admin", "invitations issued", survey_id, f"{count} tokens", actor)
            return {"tokens": tokens}

        return await run_in_threadpool(issue)

    @app.post("/api/admin/surveys/{survey_id}/close", summary="Close a survey now")
    async def close(survey_id: int, request: Request):
        def work(conn, actor, note):
            if survey(conn, survey_id).closed_at is None:
                conn.execute(db.surveys.update().where(db.surveys.c.id == survey_id).values(closed_at=db.now()))
                db.log_action(conn, "admin", "survey closed", survey_id, note, actor)
            return {"status": "closed"}

        try:
            return await noted_action(request, work)
        finally:
            cache.pop(survey_id, None)

    @app.post("/api/admin/analysts", summary="Issue an analyst token")
    async def analyst(request: Request):
        def work(conn, actor, note):
            token = security.issue(conn, "analyst")
            ident = security.token_id(token)
            db.log_action(conn, "admin", "analyst token issued", None, f"id {ident}" + (f": {note}" if note else ""),
                          actor)
            return {"token": token, "id": ident}

        return await noted_action(request, work)

    @app.post("/api/admin/tokens/{token_id}/revoke", summary="Revoke an admin or analyst token by its id")
    async def revoke(token_id: str, request: Request):
        def work(conn, actor, note):
            role = security.revoke(conn, token_id)
            db.log_action(conn, "admin", f"{role} token revoked", None, f"id {token_id}" + (f": {note}" if note else ""),
                          actor)
            return {"status": "revoked"}

        return await noted_action(request, work)

    @app.get("/api/admin/audit", summary="The audit log (append-only)")
    def audit_log(request: Request):
        with authorised(request, "admin") as (conn, _):
            rows = conn.execute(db.audit.select().order_by(db.audit.c.id)).all()
        return [{"at": surveys.iso(r.at), "role": r.role, "actor": r.actor, "action": r.action,
                 "survey_id": r.survey_id, "note": r.note} for r in rows]

    # ---------------------------------------------------------------- analyst
    @app.get("/api/surveys/{survey_id}/release", summary="The release (analyst)",
             responses={200: {"content": {t: {} for t in export.FORMATS.values()}}})
    def release(survey_id: int, request: Request, format: str = "csv"):  # noqa: A002 - the query parameter
        with authorised(request, "analyst") as (conn, actor):
            if format not in export.FORMATS:
                raise Refused(422, f"format is one of {', '.join(export.FORMATS)}")
            frame, rep = export.release(conn, surveys.load(conn, survey_id))
            db.log_action(conn, "analyst", "release", survey_id, f"{format}, {len(frame)} records", actor)
        return Response(export.encode(frame, rep, format), media_type=export.FORMATS[format],
                        headers={"content-disposition": f'attachment; filename="survey-{survey_id}.{format}"'})

    @app.get("/api/surveys/{survey_id}/release/report", summary="Participation and guarantee of the release (analyst)")
    def release_report(survey_id: int, request: Request):
        with authorised(request, "analyst") as (conn, actor):
            s = surveys.load(conn, survey_id)
            rep = export.report(s, export.responses(conn, s))
            db.log_action(conn, "analyst", "release report", survey_id, None, actor)
        return rep

    return app


def _note(body) -> str | None:
    if not isinstance(body, dict) or set(body) - {"note"} or not isinstance(body.get("note", ""), (str, type(None))):
        raise Refused(422, "send {\"note\": \"...\"} (optional)")
    note = body.get("note")
    if note is not None and len(note) > 1000:
        raise Refused(422, "the note is longer than 1000 characters")
    return note

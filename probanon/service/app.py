"""The collector's HTTP API (FastAPI): see :mod:`probanon.service` for the endpoints.

Every error is JSON, ``{"detail": "<one line>"}``, that never echoes what was sent: a 4xx for a
refused request, and a 500 for a fault of the collector itself (an unhandled exception), which puts
ONE line in the server's error log (the exception's type and where it was raised: nothing of the
request, no traceback). Every response, errors included, carries a strict Content-Security-Policy
(no external resource, no inline script), ``no-referrer`` and ``no-store``. A request whose
``Host`` header names no allowed host is refused (400) before anything else: a page of another
site that rebinds its name to the collector's address (DNS rebinding) gets nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import re
from pathlib import Path
from typing import Annotated

import sqlalchemy as sa
from fastapi import FastAPI, Path as PathParameter, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from ..errors import ParameterError
from . import closing, db, export, receipts, security, submissions, surveys, tokens
from .surveys import DuplicateKey, Refused, unique_keys

STATIC = Path(__file__).with_name("static")
MAX_SUBMISSION_BYTES = 16 * 1024
MAX_ADMIN_BYTES = 64 * 1024 * 1024  # a per-record specification of 10^6 records is about 20 MB
MAX_TOKENS_PER_REQUEST = 100_000
MAX_ID = 2**31 - 1  # the id columns are INTEGER: 32 bits on PostgreSQL; a larger id is refused (422), not sent to SQL
SurveyId = Annotated[int, PathParameter(ge=1, le=MAX_ID, description=f"a survey id, 1..{MAX_ID}")]
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")
HOST = re.compile(r"[a-z0-9_.:-]{1,253}")  # a DNS name, an IPv4 or an IPv6 address (lower case)
LOG = logging.getLogger("uvicorn.error")  # the server's error log (uvicorn's): faults only, one line each
BODY_SECONDS = 10  # a body that takes longer is refused (slow clients hold no request open for ever)
WRITE_SECONDS = 30  # a submission not committed by then is answered 503 (retry with the same key)
HEADERS = [
    (b"content-security-policy", b"default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-content-type-options", b"nosniff"),
    (b"cache-control", b"no-store"),
]


class SecurityHeaders:
    """Pure ASGI middleware, the outermost of the app's: adds :data:`HEADERS` to every response, and
    answers any exception nothing else handled with a JSON 500 (headers included) and one line in
    the error log, instead of a plain-text 500 and a traceback per request."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def send_with_headers(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message["headers"] = list(message.get("headers", [])) + HEADERS
            await send(message)

        try:
            await self.app(scope, receive, send_with_headers)
        except Exception as exc:  # noqa: BLE001 - every fault answered alike
            LOG.error(fault_line(scope, exc))
            if not started:
                await JSONResponse({"detail": "internal error of the collector (logged); try again later"},
                                   status_code=500)(scope, receive, send_with_headers)


def fault_line(scope, exc: BaseException) -> str:
    """One line on a fault: the exception's type, the innermost frame of probanon's code (else the
    innermost of all) and the route's template; never the request's values or the exception's
    message (which may quote them)."""
    frames, tb = [], exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame.f_code.co_filename.replace("\\", "/") + f":{tb.tb_lineno}")
        tb = tb.tb_next
    ours = [f for f in frames if "/probanon/" in f]
    where = (ours or frames or ["?"])[-1]
    where = where[where.rindex("/probanon/") + 1:] if "/probanon/" in where else where.rsplit("/", 1)[-1]
    route = getattr(scope.get("route"), "path", None) or "(no route)"
    return f"probanon collector: unhandled {type(exc).__name__} at {where} in {scope.get('method', '?')} {route}; answered 500"


def host_name(value: str | None) -> str | None:
    """The host of a ``Host`` header or of an allowed-host entry (lower case, no port, no brackets,
    no final dot), or None when it is malformed."""
    if value is None:
        return None
    value = value.strip().lower()
    if value.startswith("["):  # [IPv6] or [IPv6]:port
        end = value.find("]")
        rest = value[end + 1:] if end > 0 else None
        if rest is None or (rest and not (rest[0] == ":" and rest[1:].isdigit())):
            return None
        value = value[1:end]
    elif value.count(":") == 1:  # name:port
        value, _, port = value.partition(":")
        if not port.isdigit():
            return None
    value = value.rstrip(".")
    return value if HOST.fullmatch(value) else None


class AllowedHosts:
    """Pure ASGI middleware refusing (400, JSON) a request whose ``Host`` header is missing, repeated
    or names a host outside ``hosts`` (DNS rebinding: an attacker's name pointing at the collector)."""

    def __init__(self, app, hosts, detail: str = "unknown Host header: this collector answers only for its allowed "
                                                "hosts (probanon serve --allowed-host)"):
        self.app = app
        self.hosts = frozenset(hosts)
        self.detail = detail

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http":
            given = [value for key, value in scope.get("headers", ()) if key == b"host"]
            name = host_name(given[0].decode("latin-1")) if len(given) == 1 else None
            if name not in self.hosts:
                response = JSONResponse({"detail": self.detail}, status_code=400)
                return await response(scope, receive, send)
        return await self.app(scope, receive, send)


def allowed_hosts(listen: str = "127.0.0.1", extra=()) -> list[str]:
    """The hosts a collector listening on ``listen`` answers for: that address, the loopback names
    when it listens on loopback or on every address, and ``extra`` (``--allowed-host``)."""
    names = [listen]
    if listen in LOOPBACK_HOSTS or listen in ("0.0.0.0", "::", "") or listen.startswith("127."):
        names += LOOPBACK_HOSTS
    return host_names([*names, *extra])


def host_names(names) -> list[str]:
    """``names`` as :func:`host_name` reads them, without repeats; ParameterError on a malformed one."""
    out = []
    for name in names:
        parsed = host_name(name) if isinstance(name, str) else None
        if parsed is None:
            raise ParameterError(f"--allowed-host: {name!r} is not a host name or address")
        if parsed not in out:
            out.append(parsed)
    return out


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
        return json.loads(b"".join(chunks), parse_constant=_no_constant, object_pairs_hook=unique_keys)
    except DuplicateKey:
        raise Refused(400, "the body is not valid JSON here: an object names a key twice") from None
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
    "token": {"type": "object", "description": "a blind token (surveys with invitations): RFC 9474 signature by "
                                               "the survey's issuer over the RFC 9578 token input of the nonce",
              "properties": {"nonce": {"type": "string", "description": "base64url, 32 bytes"},
                             "signature": {"type": "string", "description": "base64url, 256 bytes"}},
              "required": ["nonce", "signature"], "additionalProperties": False},
}, ["digest", "cell", "answers", "idempotency_key"])

ISSUANCE_SCHEMA = _body_schema({
    "code": {"type": "string", "description": "the invitation code printed in the letter"},
    "blinded_msg": {"type": "string", "description": "base64url of the 256-byte blinded token input (RFC 9474 Blind)"},
}, ["code", "blinded_msg"])

CREATION_SCHEMA = _body_schema({
    "title": {"type": "string"}, "spec": {"type": "string", "description": "the exact text of the specification"},
    "answers": {"type": "array", "items": {"type": "object"}},
    "opens": {"type": "string", "format": "date-time"}, "closes": {"type": "string", "format": "date-time"},
    "requires_token": {"type": "boolean"},
    "open": {"type": "boolean"},
    "frame": {"type": "integer", "minimum": 1},
    "release": {"type": "object", "properties": {"small_cells": {"enum": list(surveys.SMALL_CELLS)},
                                                 "interim": {"type": "array", "items": {"type": "string"},
                                                             "maxItems": surveys.MAX_INTERIM}}},
    "questions": {"type": "object"},
}, ["title", "spec", "answers", "opens", "closes"])


def create_app(database_url: str, hosts=None) -> FastAPI:
    """The collector on ``database_url`` (a SQLite path or a database URL), answering requests whose
    ``Host`` is one of ``hosts`` (default: the loopback names, see :func:`allowed_hosts`)."""
    hosts = host_names(LOOPBACK_HOSTS if hosts is None else hosts)
    if not hosts:
        raise ParameterError("the collector needs at least one allowed host")
    engine = closing.GatedEngine(db.connect(database_url))  # held while the storage is rewritten at a close
    cache: dict[int, surveys.Survey] = {}
    signing_keys: dict[int, object] = {}  # survey id -> its issuer's private key (read from issuer_keys once)
    state = {}

    async def lifespan(app):
        state["writer"] = submissions.Writer(engine)
        state["timer"] = closing.Timer(engine)  # surveys whose closing time passed: storage rewritten
        try:
            yield
        finally:
            state.pop("timer").stop()
            state.pop("writer").close()
            engine.dispose()

    app = FastAPI(title="probanon collector", version="1", docs_url=None, redoc_url=None, lifespan=lifespan,
                  description="Collects p-probabilistic k-anonymous survey responses (paper 1): respondents send "
                              "their cell and their answers, never their quasi-identifiers.")
    app.add_middleware(AllowedHosts, hosts=hosts)
    app.add_middleware(SecurityHeaders)  # added last: the outermost, so every answer gets the headers

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
    def authorised(request: Request, role: str, survey_id: int | None = None):
        """(connection in a transaction, the token's id), after checking the bearer token for ``role``
        (on ``survey_id``); committed when the block ends without an error."""
        token = security.bearer(request.headers.get("authorization"))
        with engine.begin() as conn:
            yield conn, security.check(conn, token, role, survey_id)

    async def require(request: Request, role: str) -> str:
        """Refuse a request without a valid ``role`` token before its body is read; the token's id."""
        def check():
            with authorised(request, role) as (_, actor):
                return actor

        return await run_in_threadpool(check)

    async def noted_action(request: Request, work, also: tuple = ()):
        """An admin action whose body is ``{"note"}`` (and the keys ``also``): ``work(conn, actor,
        note)``, or ``work(conn, actor, note, body)`` with ``also``, in one transaction."""
        await require(request, "admin")
        body = await read_json(request, MAX_SUBMISSION_BYTES)
        note = _note(body, also)

        def do():
            with authorised(request, "admin") as (conn, actor):
                return work(conn, actor, note, body) if also else work(conn, actor, note)

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
    def describe(survey_id: SurveyId):
        return cached(survey_id).public()

    @app.get("/api/surveys/{survey_id}/spec", summary="The specification, byte for byte as published")
    def spec(survey_id: SurveyId):
        with engine.connect() as conn:
            row = conn.execute(db.surveys.select().with_only_columns(db.surveys.c.spec_text)
                               .where(db.surveys.c.id == survey_id)).first()
        if row is None:
            raise Refused(404, f"no survey {survey_id}")
        return Response(bytes(row.spec_text), media_type="application/json")

    @app.get("/api/surveys/{survey_id}/spec/canonical",
             summary="The canonical bytes of the specification: their SHA-256 is the survey document's specification digest")
    def canonical(survey_id: SurveyId):
        return Response(cached(survey_id).spec_canonical, media_type="application/json")

    @app.get("/api/surveys/{survey_id}/document",
             summary="The survey document, byte for byte: its SHA-256 is the survey's digest (the letters')")
    def document(survey_id: SurveyId):
        data = cached(survey_id).document
        if data is None:
            raise Refused(404, f"survey {survey_id} was published before survey documents: it has none")
        return Response(data, media_type="application/json")

    @app.post("/api/surveys/{survey_id}/submissions", status_code=201, openapi_extra=SUBMISSION_SCHEMA,
              summary="Submit a cell and the answers", responses={200: {"description": "already stored"}})
    async def submit(survey_id: SurveyId, request: Request):
        s = cache.get(survey_id) or await run_in_threadpool(cached, survey_id)
        status = s.status()
        if status != "open":
            raise Refused(409, f"the survey is {status}")
        body = await read_json(request, MAX_SUBMISSION_BYTES)
        try:
            result = await asyncio.wait_for(state["writer"].submit(submissions.parse(s, body)), WRITE_SECONDS)
        except TimeoutError:  # the row may still be committed: the same idempotency key tells
            raise Refused(503, "the database did not answer in time; send the same submission again") from None
        answer = submissions.answer(result)
        return JSONResponse(answer, status_code=201 if answer["status"] == submissions.STORED else 200)

    @app.post("/api/surveys/{survey_id}/issuance", openapi_extra=ISSUANCE_SCHEMA,
              summary="Redeem an invitation code for a blind signature (RFC 9474)")
    async def issuance(survey_id: SurveyId, request: Request):
        s = cache.get(survey_id) or await run_in_threadpool(cached, survey_id)
        if not s.requires_token:
            raise Refused(409, "this survey takes no invitations: it has no token issuer")
        if not s.description.get("issuer"):  # published before blind tokens (issue 40.3)
            raise Refused(409, "this survey was published without a token issuer: publish it again")
        status = s.status()
        if status != "open":
            raise Refused(409, f"the survey is {status}")
        body = await read_json(request, MAX_SUBMISSION_BYTES)
        if not isinstance(body, dict) or set(body) != {"code", "blinded_msg"}:
            raise Refused(422, 'send {"code": "<invitation code>", "blinded_msg": "<base64url, 256 bytes>"}')
        code = body["code"]
        if not isinstance(code, str) or not 0 < len(code.strip()) <= security.MAX_TOKEN_LENGTH:
            raise Refused(422, f"'code' is the invitation code: 1..{security.MAX_TOKEN_LENGTH} characters")
        try:
            blinded = tokens.unb64url(body["blinded_msg"], tokens.MODULUS_BYTES, "'blinded_msg'")
        except tokens.TokenError as exc:
            raise Refused(422, str(exc)) from None

        def signing_key():
            if survey_id not in signing_keys:
                with engine.connect() as conn:
                    der = conn.execute(sa.select(db.issuer_keys.c.private_key)
                                       .where(db.issuer_keys.c.survey_id == survey_id)).scalar_one()
                signing_keys[survey_id] = tokens.load_private(der)
            return signing_keys[survey_id]

        key = signing_keys.get(survey_id) or await run_in_threadpool(signing_key)
        if tokens.os2ip(blinded) >= key.public_key().public_numbers().n:
            raise Refused(422, "'blinded_msg' is not below the survey key's modulus")
        code, blinded_hash = code.strip(), hashlib.sha256(blinded).hexdigest()

        def lookup():
            with engine.connect() as conn:
                return security.lookup_code(conn, code, survey_id, blinded_hash)

        found = await run_in_threadpool(lookup)
        if found is None:
            raise Refused(403, submissions.UNKNOWN_CODE)
        if isinstance(found, bytes):  # redeemed for this blinded message: the stored answer, not signed again
            return {"blind_sig": tokens.b64url(found)}
        # an unused code: signed, then redeemed with its signature in one commit (a code redeemed
        # meanwhile by another request: refused, or that request's stored signature)
        signature = await run_in_threadpool(tokens.blind_sign, key, blinded)
        try:
            answer = await asyncio.wait_for(state["writer"].submit(
                submissions.Redemption(survey_id, code, blinded_hash, signature)), WRITE_SECONDS)
        except TimeoutError:
            raise Refused(503, "the database did not answer in time; send the same request again") from None
        return {"blind_sig": tokens.b64url(answer)}

    @app.get("/respond/{survey_id}", include_in_schema=False)
    def respond_page(survey_id: SurveyId):
        return FileResponse(STATIC / "respond.html", media_type="text/html")

    app.mount("/static", StaticFiles(directory=STATIC, check_dir=False), name="static")

    # ---------------------------------------------------------------- admin
    @app.post("/api/admin/surveys", status_code=201, openapi_extra=CREATION_SCHEMA, summary="Publish a survey")
    async def create(request: Request):
        actor = await require(request, "admin")
        made = {}

        def keys(requires_token: bool):
            """The survey's keys, made once its request is valid; their public forms go into its
            document (the letter's digest covers them): a survey with invitations gets its
            blind-signing key (issue 40.3), every survey its receipt key (issue 40.10). The private
            keys stay in issuer_keys and receipt_keys."""
            made["issuer"] = tokens.new_private_key() if requires_token else None
            made["receipt"], receipt_public = receipts.new_key()
            return (None if made["issuer"] is None else tokens.public_form(made["issuer"])), receipt_public

        row = await run_in_threadpool(surveys.parse_creation, await read_json(request, MAX_ADMIN_BYTES), keys)
        key, private = made["issuer"], made["receipt"]

        def store():
            try:
                with engine.begin() as conn:
                    if conn.execute(sa.select(db.surveys.c.id).where(
                            db.surveys.c.spec_canonical == row["spec_canonical"]).limit(1)).first() is not None:
                        raise sa.exc.IntegrityError("a specification is published once", None, None)
                    survey_id = conn.execute(db.surveys.insert().values(**row)).inserted_primary_key[0]
                    if key is not None:
                        conn.execute(db.issuer_keys.insert().values(survey_id=survey_id,
                                                                    private_key=tokens.private_der(key),
                                                                    public_key=tokens.spki(key)))
                    conn.execute(db.receipt_keys.insert().values(survey_id=survey_id, private=private))
                    db.log_action(conn, "admin", "survey published", survey_id, f"{row['title']} {row['digest']}",
                                  actor)
            except sa.exc.IntegrityError:  # the digest is unique, and so is the specification
                raise Refused(409, "a survey with this specification exists: a new survey needs a new "
                                   "specification") from None
            return survey_id

        survey_id = await run_in_threadpool(store)
        return {"id": survey_id, "digest": row["digest"]}

    @app.post("/api/admin/surveys/{survey_id}/tokens", summary="Issue single-use respondent invitations")
    async def invitations(survey_id: SurveyId, request: Request):
        await require(request, "admin")
        body = await read_json(request, MAX_SUBMISSION_BYTES)
        count = body.get("count") if isinstance(body, dict) and set(body) <= {"count"} else None
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_TOKENS_PER_REQUEST:
            raise Refused(422, f"send {{\"count\": n}} with 1 <= n <= {MAX_TOKENS_PER_REQUEST}")

        def issue():
            with authorised(request, "admin") as (conn, actor):
                target = survey(conn, survey_id)
                if not target.requires_token:
                    raise Refused(409, "this survey takes no invitation tokens")
                surveys.reserve_invitations(conn, target, count)
                tokens = [security.issue(conn, "respondent", survey_id) for _ in range(count)]
                db.log_action(conn, "admin", "invitations issued", survey_id, f"{count} tokens", actor)
            return {"tokens": tokens}

        return await run_in_threadpool(issue)

    @app.post("/api/admin/surveys/{survey_id}/close", summary="Close a survey now")
    async def close(survey_id: SurveyId, request: Request):
        def work(conn, actor, note):
            if survey(conn, survey_id).closed_at is None:
                conn.execute(db.surveys.update().where(db.surveys.c.id == survey_id).values(closed_at=db.now()))
                db.log_action(conn, "admin", "survey closed", survey_id, note, actor)
            return {"status": "closed"}

        try:
            answer = await noted_action(request, work)
        finally:
            cache.pop(survey_id, None)
        try:  # the storage leaves the order of arrival now (the server's timer tries again if this fails)
            await run_in_threadpool(closing.close_pending, engine)
        except Exception as exc:  # noqa: BLE001
            LOG.error("close rewrite failed: %s (tried again by the timer)", type(exc).__name__)
        return answer

    @app.post("/api/admin/analysts", summary="Issue an analyst token (of every survey, or of one: {\"survey\": ID})")
    async def analyst(request: Request):
        def work(conn, actor, note, body):
            scope = body.get("survey")
            if scope is not None:
                if isinstance(scope, bool) or not isinstance(scope, int) or not 1 <= scope <= MAX_ID:
                    raise Refused(422, f"'survey' is a survey id, 1..{MAX_ID}")
                survey(conn, scope)  # 404 for an unknown survey
            token = security.issue(conn, "analyst", scope)
            ident = security.token_id(token)
            db.log_action(conn, "admin", "analyst token issued", scope, f"id {ident}" + (f": {note}" if note else ""),
                          actor)
            return {"token": token, "id": ident, "survey": scope}

        return await noted_action(request, work, also=("survey",))

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
    def published(conn, survey_id: int, actor: str, what: str):
        """The release to serve (:func:`.export.published`); a refused one is in the audit log, in
        its own transaction (the request's is rolled back with the refusal)."""
        try:
            return export.published(conn, surveys.load(conn, survey_id))
        except Refused as exc:
            if exc.status == 409:
                with engine.begin() as log:
                    db.log_action(log, "analyst", "release refused", survey_id, f"{what}: {exc}", actor)
            raise

    @app.get("/api/surveys/{survey_id}/release", summary="The release (analyst)",
             responses={200: {"content": {t: {} for t in export.FORMATS.values()}}})
    def release(survey_id: SurveyId, request: Request, format: str = "csv"):  # noqa: A002 - the query parameter
        if format not in export.FORMATS:
            with authorised(request, "analyst", survey_id):
                raise Refused(422, f"format is one of {', '.join(export.FORMATS)}")
        with authorised(request, "analyst", survey_id) as (conn, actor):
            stored = published(conn, survey_id, actor, format)
            records = json.loads(stored.report)["released_records"]
            db.log_action(conn, "analyst", "release", survey_id,
                          f"{format}, release {stored.seq}{' (final)' if stored.final else ' (interim)'}, "
                          f"{records} records", actor)
        return Response(getattr(stored, format), media_type=export.FORMATS[format],
                        headers={"content-disposition": f'attachment; filename="survey-{survey_id}.{format}"'})

    @app.get("/api/surveys/{survey_id}/release/report", summary="Participation and guarantee of the release (analyst)")
    def release_report(survey_id: SurveyId, request: Request):
        with authorised(request, "analyst", survey_id) as (conn, actor):
            stored = published(conn, survey_id, actor, "report")
            db.log_action(conn, "analyst", "release report", survey_id, f"release {stored.seq}", actor)
        return Response(stored.report, media_type="application/json")

    return app


def _note(body, also: tuple = ()) -> str | None:
    if not isinstance(body, dict) or set(body) - {"note", *also} or not isinstance(body.get("note", ""), (str, type(None))):
        raise Refused(422, "send {" + ", ".join(f'\"{k}\": ...' for k in ("note", *also)) + "} (each optional)")
    note = body.get("note")
    if note is not None and len(note) > 1000:
        raise Refused(422, "the note is longer than 1000 characters")
    return note

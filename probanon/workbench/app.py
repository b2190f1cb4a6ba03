"""The workbench's HTTP API (FastAPI) and its page: every step of the page is a documented call
(``/api/openapi.json``), so an office can drive the same steps headlessly.

Every request needs the session's access token (as Jupyter's): the page's address carries it
(``/?token=...``), which sets a same-site, HTTP-only cookie for the page and its files; API calls
send it as ``Authorization: Bearer TOKEN`` (the page embeds it; a cookie alone does not reach the
API, so another site cannot make the browser call it). The ``Host`` header must name the address
listened on (DNS rebinding). Errors are the command line's one-line messages as
``{"detail": ..., "field": ...}`` with 400 (bad input), 404, 409 (another tab changed the session),
413 (upload too large) or 415. Uploads are streamed to the session's folder up to a size limit and
opened by the command line's reader.
"""

from __future__ import annotations

import hmac
import re
from pathlib import Path

from fastapi import FastAPI, Request
from starlette.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, Response

from ..errors import InputError, ProbanonError
from ..formats import table_format
from ..service.app import AllowedHosts
from .methods import field_of
from .session import Conflict, Workbench

STATIC = Path(__file__).with_name("static")
COOKIE = "probanon_workbench"
#: files of the page (nothing else is served from the static folder)
FILES = {"workbench.js": "text/javascript", "workbench.css": "text/css", "favicon.svg": "image/svg+xml"}
#: the page's Content-Security-Policy: its own files only, no inline script, no external resource
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
       "form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
MAX_JSON = 1 << 20


class _Unsupported(ProbanonError):
    """A body that is not JSON (415)."""


class _TooLarge(Exception):
    """An upload over the limit (413)."""


def _error(exc: Exception) -> JSONResponse:
    return JSONResponse({"detail": str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
                         "field": field_of(exc)}, status_code=409 if isinstance(exc, Conflict) else 400)


def _text(data: dict, name: str, field: str, asked: str) -> str:
    """The text ``data[name]``, stripped; a one-line error naming ``field`` when it is not a text or empty."""
    value = data.get(name)
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{field}: give {asked}")
    return value.strip()


def _job(job) -> dict:
    return job.to_dict()


def create_app(bench: Workbench, token: str, hosts, max_upload: int) -> FastAPI:
    """The app of workbench ``bench``, answering requests with ``token`` for ``hosts``;
    ``max_upload``: the largest upload in bytes."""
    app = FastAPI(title="probanon workbench", version="1", docs_url=None, redoc_url=None,
                  openapi_url="/api/openapi.json",
                  description="The office's workbench: open a file, set roles, measure risk, apply treatments, "
                              "compare, export. Every call needs 'Authorization: Bearer TOKEN'.")
    expected = token.encode()

    def authorised(request: Request, api: bool) -> bool:
        given = request.headers.get("authorization", "")
        bearer = given[7:].strip() if given.lower().startswith("bearer ") else ""
        if bearer and hmac.compare_digest(bearer.encode(), expected):
            return True
        if api:
            return False
        for candidate in (request.query_params.get("token", ""), request.cookies.get(COOKIE, "")):
            if candidate and hmac.compare_digest(candidate.encode(), expected):
                return True
        return False

    @app.middleware("http")
    async def guard(request: Request, call_next):
        api = request.url.path.startswith("/api/")
        if not authorised(request, api):
            return JSONResponse({"detail": "the workbench's access token is missing or wrong: open the address "
                                           "'probanon workbench' printed"}, status_code=403)
        response = await call_next(request)  # a refusal is answered by the handlers below
        response.headers["Content-Security-Policy"] = CSP
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["Cache-Control"] = "no-store"
        return response

    async def body(request: Request) -> dict:
        if not request.headers.get("content-type", "").startswith("application/json"):
            raise _Unsupported()
        raw = b""
        async for chunk in request.stream():  # never more than MAX_JSON bytes held
            raw += chunk
            if len(raw) > MAX_JSON:
                raise InputError("the request is too large")
        import json

        try:
            data = json.loads(raw or b"{}")
        except ValueError:
            raise InputError("the request is not JSON") from None
        if not isinstance(data, dict):
            raise InputError("the request must be a JSON object")
        return data

    from fastapi.exceptions import RequestValidationError

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        first = (exc.errors() or [{}])[0]
        where = ".".join(str(p) for p in first.get("loc", ())[1:]) or "request"
        return JSONResponse({"detail": f"{where}: {first.get('msg', 'invalid')}", "field": where}, status_code=400)

    @app.exception_handler(ProbanonError)
    async def refused(request: Request, exc: ProbanonError):
        return _error(exc)

    @app.exception_handler(_Unsupported)
    async def unsupported(request: Request, exc):
        return JSONResponse({"detail": "send JSON (Content-Type: application/json)", "field": None}, status_code=415)

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index(request: Request):
        page = (STATIC / "index.html").read_text(encoding="utf-8").replace("{{TOKEN}}", token)
        response = HTMLResponse(page)
        response.set_cookie(COOKIE, token, httponly=True, samesite="strict", secure=request.url.scheme == "https")
        return response

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str):
        if name not in FILES:
            return JSONResponse({"detail": "no such file"}, status_code=404)
        return Response((STATIC / name).read_bytes(), media_type=FILES[name])

    @app.get("/api/session", summary="The session: file, preparation, roles, strategies, history, step log")
    def session():
        return bench.describe()

    @app.post("/api/open", summary="Open a file by path ({path, sep?, encoding?, version})")
    async def open_file(request: Request):
        data = await body(request)
        path = _text(data, "path", "path", "the path of a file (CSV, .csv.gz, Parquet, SPSS .sav, Stata .dta)")
        try:
            job = bench.open(path, data.get("sep") or None, data.get("encoding") or None,
                             version=data.get("version"))
        except Conflict:
            raise
        except InputError as exc:
            raise InputError(f"path: {exc}") from None
        return _job(job)

    @app.post("/api/upload", summary="Upload a file (raw body; ?name=FILE.csv&version=V); opened as by path")
    async def upload(request: Request, name: str, version: int | None = None):
        clean = Path(name).name
        if not clean or clean != name or not re.fullmatch(r"[\w .()+-]{1,200}", clean):
            raise InputError("file: a plain file name, e.g. census.csv")
        try:
            table_format(clean)
        except InputError as exc:
            raise InputError(f"file: {exc}") from None
        folder = bench.folder / "uploads" / str(len(list((bench.folder / "uploads").glob("*"))) + 1
                                                if (bench.folder / "uploads").exists() else 1)
        folder.mkdir(parents=True, exist_ok=True)
        target, size = folder / clean, 0
        try:
            with open(target, "wb") as fh:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > max_upload:
                        raise _TooLarge()
                    fh.write(chunk)
            if size == 0:
                raise InputError("file: the upload is empty")
            return _job(bench.open(target, uploaded=True, version=version))
        except _TooLarge:
            target.unlink(missing_ok=True)
            return JSONResponse({"detail": f"file: larger than the workbench's upload limit ({max_upload:,} bytes; "
                                           "open it by path, or start with --max-upload-mb)", "field": "file"},
                                status_code=413)
        except Conflict:
            target.unlink(missing_ok=True)
            raise
        except InputError as exc:
            target.unlink(missing_ok=True)
            text = str(exc).replace(str(target), clean)
            raise InputError(text if text.startswith("file:") else f"file: {text}") from None

    def job_or_404(job_id: int, found):
        if found is None:
            return JSONResponse({"detail": f"no job {job_id}", "field": None}, status_code=404)
        return _job(found)

    @app.get("/api/jobs/{job_id}", summary="A background job: status, progress, result or error")
    def job(job_id: int):
        return job_or_404(job_id, bench.jobs.get(job_id))

    @app.post("/api/jobs/{job_id}/cancel", summary="Cancel a background job")
    def cancel(job_id: int):
        return job_or_404(job_id, bench.jobs.cancel(job_id))

    @app.get("/api/table", summary="A page of the prepared table (rows offset..offset+limit, optionally sorted)")
    def rows(offset: int = 0, limit: int = 50, sort: str | None = None, descending: bool = False):
        return bench.page(offset, limit, sort, descending)

    @app.get("/api/columns", summary="Column summaries (null while the file is read) and role suggestions")
    def columns():
        return {"summaries": bench.summaries(), "suggestions": bench.suggestions()}

    @app.post("/api/prepare", summary="Add a recoding step ({step: {kind, column, ...}, version})")
    async def prepare(request: Request):
        data = await body(request)
        step = data.get("step")
        if not isinstance(step, dict):
            raise InputError("step: a recoding step {kind, column, ...}")
        await run_in_threadpool(bench.add_step, step, data.get("version"))  # the server stays responsive
        return bench.describe()

    @app.post("/api/roles", summary="Set the roles of the columns ({roles: {column: role}, version})")
    async def roles(request: Request):
        data = await body(request)
        if not isinstance(data.get("roles"), dict):
            raise InputError("roles: an object {column: role}")
        await run_in_threadpool(bench.set_roles, data["roles"], data.get("version"))
        return bench.describe()

    @app.get("/api/audit", summary="The pre-release audit of the current roles")
    def audit():
        return bench.audit()

    @app.post("/api/risk", summary="Measure the risk of the prepared table under the roles ({k, combinations})")
    async def risk(request: Request):
        data = await body(request)
        from .methods import method_params

        checked = method_params("suppress", {"k": data.get("k", 3), "combinations": data.get("combinations")})
        if bench.jobs.running("risk"):  # one measurement at a time (it cannot be stopped half-way)
            raise InputError("risk: a measurement is running; wait for it")
        await run_in_threadpool(bench.prepared)
        return _job(bench.jobs.start("risk", lambda job: bench.risk(job, checked["k"], checked.get("combinations")),
                                     where=field_of))

    @app.post("/api/apply", summary="Apply a treatment ({method, params, version}): a background job")
    async def apply(request: Request):
        data = await body(request)
        params = data.get("params") or {}
        if not isinstance(params, dict):
            raise InputError("params: an object")
        return _job(await run_in_threadpool(bench.apply, str(data.get("method")), params, data.get("version")))

    @app.post("/api/undo", summary="Undo the last change ({version})")
    async def undo(request: Request):
        bench.undo((await body(request)).get("version"))
        return bench.describe()

    @app.post("/api/redo", summary="Redo the change undone last ({version})")
    async def redo(request: Request):
        bench.redo((await body(request)).get("version"))
        return bench.describe()

    @app.get("/api/compare.png", summary="The risk-utility map of the strategies (?ids=1,2; default all) against "
                                         "the required k (?k=K; default the smallest k of the strategies)")
    def compare(ids: str | None = None, k: int | None = None):
        try:
            numbers = None if not ids else {int(i) for i in ids.split(",")}
        except ValueError:
            raise InputError("ids: strategy numbers separated by commas") from None
        return Response(bench.compare_png(numbers, k), media_type="image/png")

    @app.get("/api/recipe", summary="The recipe of a strategy (?strategy=N; default the last one), TOML")
    def recipe(strategy: int | None = None):
        return Response(bench.recipe_text(strategy), media_type="text/plain; charset=utf-8")

    @app.post("/api/export", summary="Export a strategy ({strategy, folder, name, force, version}): a job")
    async def export(request: Request):
        data = await body(request)
        folder = _text(data, "folder", "folder", "the folder to write into (an absolute path)")
        name = _text(data, "name", "name", "the release's file name (its ending says the format)")
        try:
            number = int(data.get("strategy"))
        except (TypeError, ValueError):
            raise InputError("strategy: choose a strategy to export") from None
        return _job(bench.export(number, folder, name, bool(data.get("force")), data.get("version")))

    @app.post("/api/recipe/open", summary="Continue from a recipe ({path, version}): a job applying it again")
    async def open_recipe(request: Request):
        data = await body(request)
        path = _text(data, "path", "recipe", "the path of a recipe (.toml)")
        try:
            return _job(await run_in_threadpool(bench.open_recipe, path, data.get("version")))
        except Conflict:
            raise
        except InputError as exc:
            raise InputError(f"recipe: {exc}") from None

    return AllowedHosts(app, hosts, "unknown Host header: the workbench answers only for the address it listens on")


__all__ = ["create_app"]

"""Shared pieces of the collector tests: databases (a fresh SQLite file; a fresh PostgreSQL database
when PROBANON_TEST_POSTGRES is set), a published survey, and a small HTTP client (standard library)."""

from __future__ import annotations

import json
import os
import secrets
import urllib.error
import urllib.request

import numpy as np
import pandas as pd
import pytest

POSTGRES = os.environ.get("PROBANON_TEST_POSTGRES")  # e.g. postgresql://probanon:probanon@127.0.0.1/probanon
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.skipif(
    not POSTGRES, reason="PROBANON_TEST_POSTGRES not set (.ci/run sets it)"))]


def fresh_database(backend: str, tmp_path):
    """A database URL with nothing in it, and a function that removes it afterwards."""
    if backend == "sqlite":
        return str(tmp_path / "collector.db"), lambda: None
    from probanon.service.db import scratch_postgres

    return scratch_postgres(POSTGRES, "probanon_t_")


def population(n: int = 300, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n).astype(float),
                         "income": np.round(rng.normal(3000, 800, n), 2)})


def design_spec(frame: pd.DataFrame, k: int = 3, participation=0.8, risk: float = 0.05):
    """(design, spec text) for a population."""
    from probanon.survey.design import design
    from probanon.survey.spec import build_spec

    d = design(frame, k, participation, risk)
    return d, json.dumps(build_spec(d), indent=1)


ANSWERS = [{"name": "happy", "type": "integer", "min": 0, "max": 10, "label": "How happy are you (0-10)?"},
           {"name": "spending", "type": "number", "min": 0, "max": None, "required": False},
           {"name": "region", "type": "category", "categories": ["north", "south"]}]


def survey_body(spec_text: str, **changes) -> dict:
    body = {"title": "Household survey", "spec": spec_text, "answers": ANSWERS,
            "opens": "2020-01-01T00:00:00Z", "closes": "2099-01-01T00:00:00Z",
            "questions": {"age": {"label": "Your age", "unit": "years"}, "income": {"label": "Monthly income",
                                                                                 "unit": "EUR"}}}
    body.update(changes)
    if "requires_token" not in changes and "open" not in changes:  # most tests: anyone may respond
        body["open"] = True
    return body


def new_key() -> str:
    return secrets.token_urlsafe(24)


def call(base: str, method: str, path: str, body=None, token: str | None = None, raw: bytes | None = None,
         content_type: str = "application/json", timeout: float = 30.0):
    """(status, parsed JSON body or bytes) of one request."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    headers = {"Content-Type": content_type} if data is not None else {}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, payload, ctype = resp.status, resp.read(), resp.headers.get("content-type", "")
    except urllib.error.HTTPError as err:
        status, payload, ctype = err.code, err.read(), err.headers.get("content-type", "")
    return status, (json.loads(payload) if ctype.startswith("application/json") else payload)


def redeem(base: str, survey_id: int, code: str) -> dict:
    """A blind token for survey ``survey_id`` (issue 40.3): blind a fresh token input, redeem the
    invitation ``code`` for its signature (``POST .../issuance``), unblind; the submission's
    ``"token"`` ({"nonce", "signature"})."""
    from probanon.service import tokens

    status, info = call(base, "GET", f"/api/surveys/{survey_id}")
    assert status == 200, info
    key = tokens.load_public_form(info["issuer"])
    state, nonce = tokens.mint(key, info["digest"])
    status, body = call(base, "POST", f"/api/surveys/{survey_id}/issuance",
                        {"code": code, "blinded_msg": tokens.b64url(state.blinded_msg)})
    assert status == 200, body
    signature = tokens.finalize(key, state, tokens.unb64url(body["blind_sig"], tokens.MODULUS_BYTES))
    return {"nonce": tokens.b64url(nonce), "signature": tokens.b64url(signature)}


def chromium(logging_prefs: dict | None = None):
    """Headless Chromium (/usr/bin/chromium) driven by Selenium in a throwaway profile, for a fixture
    (``yield from chromium(...)``): yields the driver, quits it afterwards.
    The test is skipped when the browser or its driver is missing, and fails instead when CI is set.
    ``logging_prefs`` is Chrome's ``goog:loggingPrefs`` (e.g. {"browser": "ALL", "performance": "ALL"})."""
    import shutil
    import tempfile

    browser, driver_path = "/usr/bin/chromium", "/usr/bin/chromedriver"
    if not (os.path.exists(browser) and os.path.exists(driver_path)):
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {browser} or {driver_path} is missing", pytrace=False)
        pytest.skip(f"browser tests need {browser} and {driver_path}")
    webdriver = pytest.importorskip("selenium.webdriver")
    service = pytest.importorskip("selenium.webdriver.chrome.service")
    profile = tempfile.mkdtemp(prefix="probanon-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    if logging_prefs:
        options.set_capability("goog:loggingPrefs", logging_prefs)
    try:
        drv = webdriver.Chrome(service=service.Service(executable_path=driver_path), options=options)
        try:
            yield drv
        finally:
            drv.quit()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


STATIC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "probanon", "service", "static")


def static_server():
    """The respondent page's static folder served on 127.0.0.1 (a secure context: crypto.subtle
    works), for a fixture (``yield from static_server()``): yields its URL, stops afterwards."""
    import functools
    import http.server
    import threading

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=STATIC))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def script_driver(static_url: str, script: str, name: str):
    """Headless Chromium on ``static_url`` with ``/script`` loaded, for a fixture (``yield from``):
    yields the driver once ``globalThis[name]`` is an object, in a secure context."""
    for drv in chromium():
        drv.set_script_timeout(120)
        drv.get(static_url + "/")
        loaded = drv.execute_async_script(f"""
            const done = arguments[arguments.length - 1];
            const s = document.createElement("script");
            s.src = "/{script}";
            s.onload = () => done(typeof globalThis.{name});
            s.onerror = () => done("load error");
            document.head.appendChild(s);""")
        assert loaded == "object", loaded
        assert drv.execute_script("return window.isSecureContext") is True
        yield drv


class RewritingProxy:
    """A proxy on 127.0.0.1 in front of the collector at ``base`` that answers GET (and POST)
    requests with the collector's bytes as ``edit(path, bytes) -> bytes`` rewrites them (a collector
    that describes one survey and serves another, serves a changed page, or answers a submission
    with a forged receipt); ``url`` is its address, ``close()`` stops it."""

    def __init__(self, base: str, edit):
        import http.server
        import threading

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self.forward(None)

            def do_POST(self):
                self.forward(self.rfile.read(int(self.headers.get("content-length") or 0)))

            def forward(self, body):
                request = urllib.request.Request(base + self.path, data=body, method=self.command, headers={
                    "Content-Type": self.headers.get("content-type") or "application/json"} if body is not None else {})
                try:
                    with urllib.request.urlopen(request, timeout=30) as resp:
                        status, data, ctype = resp.status, resp.read(), resp.headers.get("content-type", "")
                except urllib.error.HTTPError as err:
                    status, data, ctype = err.code, err.read(), err.headers.get("content-type", "")
                data = edit(self.path.split("?")[0], data)
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)

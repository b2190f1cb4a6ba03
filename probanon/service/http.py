"""JSON over HTTP with the standard library: the one way the respondent and office clients talk to
the collector."""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.parse
import urllib.request

from ..errors import ParameterError, ProbanonError

ATTEMPTS = 3  # tries of one request when the connection fails or the collector answers 5xx
BACKOFF = 0.5  # seconds before the second try, doubled before each further one


class ServiceError(ProbanonError):
    """The collector refused a request (``status``: the HTTP status, 4xx, or the 5xx of the last try)
    or could not be reached (``status`` None); ``detail`` is its one-line reason."""

    def __init__(self, message: str, status: int | None = None, detail: str | None = None):
        self.status = status
        self.detail = detail
        super().__init__(message)


def _base(url) -> str:
    if not isinstance(url, str) or urllib.parse.urlsplit(url.strip()).scheme not in ("http", "https") \
            or not urllib.parse.urlsplit(url.strip()).netloc:
        raise ParameterError(f"the collector's address is an http:// or https:// URL, got {url!r}")
    return url.strip().rstrip("/")


def _detail(payload: bytes) -> str:
    try:
        detail = json.loads(payload).get("detail")
    except (ValueError, AttributeError):
        detail = None
    text = detail if isinstance(detail, str) else payload[:200].decode("utf-8", "replace")
    return " ".join(text.split()) or "(no reason given)"


def call(url: str, method: str, path: str, body=None, token: str | None = None, timeout: float = 30,
         attempts: int = ATTEMPTS, raw: bool = False):
    """(status, body) of one request to the collector at ``url``: the body parsed when it is JSON
    (unless ``raw``), else bytes. Tried up to ``attempts`` times (``BACKOFF`` seconds, doubling,
    between tries) while the connection fails or the collector answers 5xx; a 4xx, or the last
    failure, is a :class:`ServiceError`. Retrying is safe for reads and for submissions (their
    idempotency key)."""
    base = _base(url)
    if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
        raise ParameterError(f"attempts must be a positive integer, got {attempts!r}")
    data = None if body is None else json.dumps(body, allow_nan=False).encode("utf-8")
    headers = {"Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    where = f"{method} {path}"
    for attempt in range(attempts):
        if attempt:
            time.sleep(BACKOFF * 2 ** (attempt - 1))
        req = urllib.request.Request(base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                payload = resp.read()
                return resp.status, payload if raw else _parsed(payload, resp.headers.get("content-type", ""))
        except urllib.error.HTTPError as err:
            status, detail = err.code, _detail(err.read())
            if status < 500:
                raise ServiceError(f"the collector refused {where} (HTTP {status}): {detail}", status, detail) from None
            failure = ServiceError(f"the collector failed on {where} (HTTP {status}, {attempts} tries): {detail}",
                                   status, detail)
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            reason = getattr(exc, "reason", None) or exc
            failure = ServiceError(f"cannot reach the collector at {base} ({reason}; {attempts} tries)")
    raise failure


def _parsed(payload: bytes, content_type: str):
    if content_type.split(";")[0].strip() == "application/json":
        try:
            return json.loads(payload)
        except ValueError:
            raise ServiceError("the collector sent malformed JSON") from None
    return payload

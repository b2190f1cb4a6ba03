"""JSON over HTTP with the standard library, for the respondent and office clients."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.parse
import urllib.request

from ..errors import ProbanonError


class ServiceError(ProbanonError):
    """The collector refused a request (``status`` 4xx, its one-line ``detail``) or could not be
    reached (``status`` None)."""

    def __init__(self, status: int | None, detail: str):
        self.status, self.detail = status, detail
        super().__init__(f"the collector answered {status}: {detail}" if status else detail)


def base_url(url: str) -> str:
    """``url`` without a trailing slash, if it is an http(s) URL."""
    parts = urllib.parse.urlsplit(url.strip() if isinstance(url, str) else "")
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ServiceError(None, f"not an http(s) URL: {url!r}")
    return url.strip().rstrip("/")


def request(url: str, method: str, path: str, body=None, token: str | None = None, raw: bool = False,
            timeout: float = 30.0, status_out: list | None = None):
    """The parsed JSON answer (or the bytes with ``raw``) of one request; :class:`ServiceError` on
    a 4xx/5xx answer or when the collector cannot be reached. ``status_out`` receives the status."""
    data = None if body is None else json.dumps(body, allow_nan=False).encode("utf-8")
    headers = {"Accept": "application/json"}
    if data is not None:
        headers["Content-Type"] = "application/json"
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    req = urllib.request.Request(base_url(url) + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, payload = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        payload = err.read()
        try:
            detail = json.loads(payload)["detail"]
        except (ValueError, KeyError, TypeError):
            detail = payload[:200].decode("utf-8", "replace") or err.reason
        raise ServiceError(err.code, str(detail)) from None
    except (urllib.error.URLError, socket.timeout, ConnectionError) as exc:
        reason = getattr(exc, "reason", exc)
        raise ServiceError(None, f"cannot reach the collector at {url} ({reason})") from None
    if status_out is not None:
        status_out.append(status)
    if raw:
        return payload
    try:
        return json.loads(payload)
    except ValueError:
        raise ServiceError(status, "the collector's answer is not JSON") from None

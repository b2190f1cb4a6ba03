"""Slow and idle clients cannot hold the collector's connections (``probanon serve``'s limits).

uvicorn's HTTP/1.1 protocol times out a connection only while it idles between two requests: a
connection that never sends a byte, or sends its request headers a byte at a time (slowloris), is
held for ever, and a few hundred of them exhaust the process's file descriptors (the collector then
cannot accept anyone, nor open its database). Request headers are parsed before any ASGI application
sees the request, so no middleware can help: :func:`protocol` returns uvicorn's httptools protocol
with these limits added where the bytes arrive.

- **Header timeout**: a request's line and headers must be complete within ``header_timeout``
  seconds of the connection opening or of the previous response, however slowly they trickle in;
  otherwise the connection is answered 408 (closed silently when no request had begun).
- **Idle timeout**: a connection on which nothing arrives for ``idle_timeout`` seconds while no
  request is in progress is closed: between keep-alive requests (uvicorn's ``timeout_keep_alive``)
  and, added here, from the moment it opens.
- **Header size**: at most :data:`HEADER_BYTES` of request line and headers (431 beyond).
- **Connection cap**: at most ``max_connections`` open connections. A new one beyond the cap takes
  the place of the connection that has waited longest for its request (idle, or headers half-sent);
  when every connection has a request in progress, the new one is answered 503 at once and closed.
  The default cap keeps the descriptors the process needs for its database and files
  (:func:`connection_cap`).

A request body has its own bound, in the application (:data:`probanon.service.app.BODY_SECONDS`).
Nothing here is logged: a refused connection leaves no trace of its address.
"""

from __future__ import annotations

import collections
import json
import math

from ..errors import ParameterError

HEADER_SECONDS = 10.0  # default --header-timeout
IDLE_SECONDS = 5.0  # default --idle-timeout (uvicorn's keep-alive timeout)
MAX_CONNECTIONS = 1000  # the default cap when the descriptor limit allows more
HEADER_BYTES = 32 * 1024  # request line and headers of one request (nginx: large_client_header_buffers 4 8k)
RESERVED_DESCRIPTORS = 64  # the database pool (a SQLite connection holds 3), the listening socket, logs, Python
RETRY_SECONDS = 5  # Retry-After of the 503 beyond the cap


def descriptor_limit() -> int | None:
    """The process's soft limit on open file descriptors (``ulimit -n``); None when unlimited or unknown."""
    try:
        import resource
    except ImportError:  # not on POSIX
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def connection_cap(requested: int | None = None, limit: int | None = None) -> int:
    """The connection cap for ``--max-connections requested`` under the descriptor limit ``limit``
    (default: this process's). By default half of what the limit leaves after
    :data:`RESERVED_DESCRIPTORS` (a connection may hold a second descriptor, a static file being sent),
    at most :data:`MAX_CONNECTIONS`; a requested cap the limit cannot hold is a ParameterError."""
    limit = descriptor_limit() if limit is None else limit
    room = None if limit is None else limit - RESERVED_DESCRIPTORS
    if room is not None and room < 2:
        raise ParameterError(f"the file descriptor limit (ulimit -n) is {limit}: the collector needs more than "
                             f"{RESERVED_DESCRIPTORS + 1}; raise it")
    if requested is None:
        return MAX_CONNECTIONS if room is None else min(MAX_CONNECTIONS, room // 2)
    if isinstance(requested, bool) or not isinstance(requested, int) or requested < 1:
        raise ParameterError(f"--max-connections: expected a positive integer, got {requested!r}")
    if room is not None and requested > room:
        raise ParameterError(f"--max-connections {requested}: the file descriptor limit (ulimit -n) is {limit}, "
                             f"which holds at most {room} connections beside the database; raise the limit "
                             f"or lower --max-connections")
    return requested


def check_seconds(name: str, value) -> float:
    """A timeout in seconds: finite and > 0 (ParameterError otherwise)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ParameterError(f"{name}: expected a positive number of seconds, got {value!r}")
    return float(value)


def _response(status: int, reason: str, detail: str, *headers: str) -> bytes:
    """A complete HTTP/1.1 response that closes the connection, with a one-line JSON detail."""
    body = json.dumps({"detail": detail}).encode()
    head = [f"HTTP/1.1 {status} {reason}", "content-type: application/json", f"content-length: {len(body)}",
            "connection: close", "cache-control: no-store", "x-content-type-options: nosniff", *headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def protocol(header_timeout: float = HEADER_SECONDS, max_connections: int | None = None):
    """uvicorn's httptools protocol class with the header timeout, the header size limit and the
    connection cap (see the module); one class per server (it holds that server's waiting
    connections). The idle timeout is uvicorn's ``timeout_keep_alive``, given to its Config."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    header_timeout = check_seconds("--header-timeout", header_timeout)
    cap = connection_cap(max_connections)
    busy = _response(503, "Service Unavailable", f"the collector is at its limit of {cap} connections, each "
                     f"with a request in progress; retry in a few seconds", f"retry-after: {RETRY_SECONDS}")
    late = _response(408, "Request Timeout", f"the request headers did not arrive within {header_timeout:g} s")
    large_detail = f"the request line and headers exceed {HEADER_BYTES} bytes"
    large = _response(431, "Request Header Fields Too Large", large_detail)

    async def too_large(scope, receive, send):  # the same answer to a request parsed whole
        body = json.dumps({"detail": large_detail}).encode()
        await send({"type": "http.response.start", "status": 431, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"), (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff")]})
        await send({"type": "http.response.body", "body": body})

    waiting: collections.OrderedDict = collections.OrderedDict()  # connections awaiting a request, oldest first

    class LimitedHttpToolsProtocol(HttpToolsProtocol):
        """One connection (see :mod:`probanon.service.limits`)."""

        max_connections = cap

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.refused = False  # answered 503 on arrival: never served
            self.in_headers = False  # a request's first bytes came, its headers are not complete
            self.header_bytes = 0  # of the request line and headers parsed so far
            self.header_chunks = 0  # of the chunks received while they were incomplete
            self.header_deadline = None

        # the cap
        def connection_made(self, transport) -> None:
            if len(self.connections) >= cap and not _evict_one(self.connections):
                self.refused, self.transport = True, transport
                transport.write(busy)
                transport.close()
                return
            super().connection_made(transport)
            # idle from the start: uvicorn arms its keep-alive timeout only after a response
            self.timeout_keep_alive_task = self.loop.call_later(self.timeout_keep_alive,
                                                                self.timeout_keep_alive_handler)
            self._await_request()

        def connection_lost(self, exc) -> None:
            self._request_arrived()
            super().connection_lost(exc)

        # the header timeout: armed while a request is awaited, whatever arrives meanwhile
        def _await_request(self) -> None:
            self._request_arrived()
            self.header_deadline = self.loop.call_later(header_timeout, self._too_late)
            waiting[self] = None

        def _request_arrived(self) -> None:
            if self.header_deadline is not None:
                self.header_deadline.cancel()
                self.header_deadline = None
            waiting.pop(self, None)

        def _too_late(self) -> None:
            self.header_deadline = None
            waiting.pop(self, None)
            if not self.transport.is_closing():
                if self.in_headers:
                    self.transport.write(late)
                self.transport.close()

        # the header size: a request line and headers parsed whole go to a 431 answer instead of the
        # application; one that keeps coming without an end is cut off where it arrives
        def data_received(self, data: bytes) -> None:
            if self.refused or self.transport.is_closing():
                return
            super().data_received(data)
            if self.in_headers and not self.transport.is_closing():
                self.header_chunks += len(data)
                if self.header_chunks > HEADER_BYTES:
                    self._request_arrived()
                    self.transport.write(large)
                    self.transport.close()

        def on_message_begin(self) -> None:
            super().on_message_begin()
            self.in_headers, self.header_bytes, self.header_chunks = True, 0, 0

        def on_url(self, url: bytes) -> None:
            super().on_url(url)
            self.header_bytes += len(url)

        def on_header(self, name: bytes, value: bytes) -> None:
            super().on_header(name, value)
            self.header_bytes += len(name) + len(value) + 4

        def on_headers_complete(self) -> None:
            self.in_headers = False
            self._request_arrived()
            if self.header_bytes <= HEADER_BYTES:
                return super().on_headers_complete()
            app, self.app = self.app, too_large  # answered like uvicorn's own 503: a cycle with another app
            try:
                super().on_headers_complete()
            finally:
                self.app = app

        def on_response_complete(self) -> None:
            super().on_response_complete()
            # uvicorn armed its keep-alive timeout: no pipelined request is queued, the next is awaited
            if self.timeout_keep_alive_task is not None and not self.transport.is_closing():
                self._await_request()

        def _unsupported_upgrade_warning(self) -> None:
            pass  # no WebSocket here; an upgrade request is served as plain HTTP, without a log line

    def _evict_one(connections) -> bool:
        """Close connections that wait for their request, longest waiting first, until the cap has
        room; False if it has none (every connection has a request in progress)."""
        while waiting and len(connections) >= cap:
            victim, _ = waiting.popitem(last=False)
            victim._request_arrived()
            connections.discard(victim)  # its place is taken now; its descriptor is freed on close
            victim.transport.close()
        return len(connections) < cap

    return LimitedHttpToolsProtocol

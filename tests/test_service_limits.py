"""Slow and idle clients cannot take the collector down (issue 40, point 8).

``probanon serve`` runs in a subprocess whose file descriptor limit is lowered to 256, as on the
collector that 300 idle or half-sent requests took down. Against it: 300 connections that send
nothing, half a request, or a request trickling in a byte at a time; they are all closed within the
header timeout while ordinary requests are answered; beyond the connection cap, with every
connection busy, a new one is answered 503 rather than left hanging or reset. Everything is on
127.0.0.1, bounded in count and time."""

from __future__ import annotations

import json
import os
import resource
import selectors
import socket
import subprocess
import time

import pytest
import sqlalchemy as sa
from service_support import call, design_spec, population, survey_body

from probanon.errors import ParameterError
from probanon.service import limits

DESCRIPTORS = 256  # the collector's limit (RLIMIT_NOFILE, soft and hard)
CAP = (DESCRIPTORS - 64) // 2  # the default --max-connections under it: (limit - reserved) / 2
ATTACKERS = 300
HEADER_TIMEOUT, IDLE_TIMEOUT = 1.5, 1.0  # short, for the test (defaults 10 and 5)
MARGIN = 4.0  # seconds allowed beyond a timeout on a shared, busy machine
START_SECONDS = 30.0


def _lower_descriptor_limit():  # in the child, before it starts
    resource.setrlimit(resource.RLIMIT_NOFILE, (DESCRIPTORS, DESCRIPTORS))


@pytest.fixture(scope="module")
def limited(tmp_path_factory):
    """(process, base URL, admin token, database) of ``probanon serve`` limited to 256 descriptors,
    with a 1.5 s header timeout and a 1 s idle timeout (the connection cap left to its default)."""
    from probanon.service.server import init_admin, spawn

    folder = tmp_path_factory.mktemp("limits")
    database, log_path = str(folder / "collector.db"), folder / "serve.log"
    admin = init_admin(database)
    with open(log_path, "ab") as log:
        try:
            proc, base = spawn(database, log, START_SECONDS, preexec_fn=_lower_descriptor_limit,
                               options=["--header-timeout", str(HEADER_TIMEOUT), "--idle-timeout", str(IDLE_TIMEOUT)])
        except RuntimeError as exc:
            pytest.fail(f"{exc}: {log_path.read_text(errors='replace')[-2000:]}")
    try:
        yield proc, base, admin, database, log_path
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def _address(base: str):
    host, port = base.rsplit("//", 1)[1].rsplit(":", 1)
    return host, int(port)


def _connect(base: str, first: bytes = b"") -> socket.socket:
    s = socket.create_connection(_address(base), timeout=5)
    if first:
        s.sendall(first)
    s.setblocking(False)
    return s


def _read_until_closed(sockets: dict, deadline: float, trickle=()) -> dict:
    """Read every socket of ``sockets`` ({socket: label}) until the server closes it (EOF or reset)
    or ``deadline``, sending one more header byte on each of ``trickle`` every 0.25 s meanwhile;
    returns {socket: bytes received} for the closed ones."""
    received, closed = {s: b"" for s in sockets}, {}
    sel = selectors.DefaultSelector()
    for s in sockets:
        sel.register(s, selectors.EVENT_READ)
    next_byte = time.monotonic()
    try:
        while len(closed) < len(sockets) and time.monotonic() < deadline:
            if time.monotonic() >= next_byte:
                for s in trickle:
                    if s not in closed:
                        try:
                            s.send(b"a")
                        except OSError:  # closed by the server: its read below says so
                            pass
                next_byte = time.monotonic() + 0.25
            for key, _ in sel.select(timeout=0.05):
                s = key.fileobj
                try:
                    chunk = s.recv(65536)
                except BlockingIOError:
                    continue
                except OSError:  # reset
                    chunk = b""
                if chunk:
                    received[s] += chunk
                else:
                    closed[s] = received[s]
                    sel.unregister(s)
    finally:
        sel.close()
    return closed


def _status(response: bytes):
    return int(response.split(b" ", 2)[1]) if response.startswith(b"HTTP/1.1 ") else None


def _detail(response: bytes) -> str:
    return json.loads(response.split(b"\r\n\r\n", 1)[1])["detail"]


def test_idle_and_half_sent_connections_are_closed_and_others_served(limited):
    proc, base, *_ = limited
    half = b"POST /api/surveys/1/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl"
    kinds, sockets, started = {}, {}, time.monotonic()
    try:
        for i in range(ATTACKERS):
            kind = ("idle", "half", "trickle")[i % 3]
            s = _connect(base, b"" if kind == "idle" else half + (b"\r\nX-Slow: " if kind == "trickle" else b""))
            sockets[s], kinds[s] = kind, kind
            if i in (ATTACKERS // 2, ATTACKERS - 1):  # while the attack holds: the collector still answers
                assert call(base, "GET", "/api/surveys", timeout=10) == (200, [])
        trickle = [s for s, kind in kinds.items() if kind == "trickle"]
        closed = _read_until_closed(sockets, time.monotonic() + HEADER_TIMEOUT + MARGIN, trickle)
        elapsed = time.monotonic() - started
        still_open = [kinds[s] for s in sockets if s not in closed]
        assert not still_open, (f"{len(still_open)} of {ATTACKERS} slow connections still open after {elapsed:.1f} s "
                                f"(header timeout {HEADER_TIMEOUT} s): {sorted(set(still_open))}")
        # a request that had begun is told why (408); a connection that sent nothing is closed silently;
        # the oldest are closed silently too, when newer connections take their places beyond the cap
        answers = [(kinds[s], _status(data)) for s, data in closed.items() if data]
        assert answers and {status for _, status in answers} == {408}
        assert {kind for kind, _ in answers} == {"half", "trickle"}
        late = next(data for data in closed.values() if data)
        assert _detail(late) == f"the request headers did not arrive within {HEADER_TIMEOUT:g} s"
        assert proc.poll() is None
        assert call(base, "GET", "/api/surveys", timeout=10) == (200, [])
    finally:
        for s in sockets:
            s.close()


def test_beyond_the_connection_cap_a_new_connection_is_answered_503(limited):
    proc, base, admin, database, log_path = limited
    _, text = design_spec(population(40, seed=8), k=3)
    status, survey = call(base, "POST", "/api/admin/surveys", survey_body(text), token=admin)
    assert status == 201, survey
    # CAP submissions whose headers came whole and whose bodies do not come: requests in progress
    head = (f"POST /api/surveys/{survey['id']}/submissions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Content-Type: application/json\r\nContent-Length: 300\r\nExpect: 100-continue\r\n\r\n").encode()
    busy = []
    try:
        for _ in range(CAP):
            s = socket.create_connection(_address(base), timeout=10)
            busy.append(s)
            s.sendall(head)
            # "100 Continue" once the collector reads the body: the request is in progress, its place taken
            assert s.recv(100).startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
            s.sendall(b"{")
        extra = _connect(base)
        closed = _read_until_closed({extra: "extra"}, time.monotonic() + 5)
        assert extra in closed, "the connection beyond the cap was left open"
        response = closed[extra]
        assert _status(response) == 503 and b"\r\nretry-after: 5\r\n" in response
        assert _detail(response) == (f"the collector is at its limit of {CAP} connections, each with a request in "
                                     f"progress; retry in a few seconds")
        status, body = call(base, "GET", "/api/surveys", timeout=10)  # an ordinary client sees the same
        assert status == 503 and "limit" in body["detail"]
        extra.close()
        assert proc.poll() is None
    finally:
        for s in busy:
            s.close()
    deadline = time.monotonic() + 10  # their places free again once the server sees them gone
    while call(base, "GET", "/api/surveys", timeout=10)[0] != 200:
        assert time.monotonic() < deadline, "the collector did not recover after the busy connections closed"
        time.sleep(0.1)
    engine = sa.create_engine("sqlite:///" + database)
    try:
        with engine.connect() as conn:  # half a body stores nothing
            assert conn.exec_driver_sql("SELECT count(*) FROM submissions").scalar_one() == 0
    finally:
        engine.dispose()
    assert "Traceback" not in log_path.read_text(errors="replace")


def test_the_default_cap_leaves_descriptors_for_the_database():
    # (limit - RESERVED_DESCRIPTORS) / 2, at most MAX_CONNECTIONS (see probanon.service.limits)
    assert limits.connection_cap(None, 256) == (256 - 64) // 2 == 96
    assert limits.connection_cap(None, 1024) == 480
    assert limits.connection_cap(None, 1 << 20) == limits.MAX_CONNECTIONS == 1000
    assert limits.connection_cap(150, 256) == 150
    with pytest.raises(ParameterError, match=r"--max-connections 193: the file descriptor limit \(ulimit -n\) is 256"):
        limits.connection_cap(193, 256)
    with pytest.raises(ParameterError, match="the file descriptor limit"):
        limits.connection_cap(None, 65)


def test_serve_refuses_impossible_limits_before_touching_the_database(tmp_path, capsys):
    from probanon.cli import main

    database = tmp_path / "collector.db"
    soft = limits.descriptor_limit()
    if soft is not None:
        assert main(["serve", "--database", str(database), "--max-connections", str(soft)]) == 2
        assert "--max-connections" in capsys.readouterr().err
    for option, value in (("--header-timeout", "0"), ("--idle-timeout", "nan"), ("--max-connections", "0")):
        assert main(["serve", "--database", str(database), option, value]) == 2
        assert option in capsys.readouterr().err
    assert not os.path.exists(database)


def test_request_headers_are_limited_in_size():
    from probanon.service.server import running

    def exchange(base, data, pieces=1):
        s = socket.create_connection(_address(base), timeout=10)
        try:
            step = -(-len(data) // pieces)
            try:
                for i in range(0, len(data), step):
                    s.sendall(data[i:i + step])
                    time.sleep(0.01 if pieces > 1 else 0)
            except OSError:  # cut off while sending: the answer is already there
                pass
            out = b""
            while chunk := s.recv(65536):
                out += chunk
            return out
        except ConnectionResetError:
            return out
        finally:
            s.close()

    import tempfile

    with tempfile.TemporaryDirectory() as folder, running(os.path.join(folder, "c.db")) as base:
        big = b"".join(b"X-%d: %s\r\n" % (i, b"b" * 1000) for i in range(40))  # 40 KB of headers
        request = b"GET /api/surveys HTTP/1.1\r\nHost: 127.0.0.1\r\n%s\r\n"
        for pieces in (1, 40):  # arriving at once, and trickling in
            response = exchange(base, request % big, pieces)
            assert _status(response) == 431, response[:200]
            assert _detail(response) == f"the request line and headers exceed {limits.HEADER_BYTES} bytes"
        small = b"".join(b"X-%d: %s\r\n" % (i, b"b" * 1000) for i in range(30)) + b"Connection: close\r\n"
        assert _status(exchange(base, request % small)) == 200

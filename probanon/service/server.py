"""Running the collector: ``probanon serve`` (uvicorn) and a server in a thread for the demo and tests.

Nothing about a request is logged: uvicorn's access log is off, and the error log only reports the
server's own start, stop and faults.
"""

from __future__ import annotations

import contextlib
import gc
import socket
import subprocess
import sys
import threading
import time

from ..errors import ParameterError
from . import limits

LOG_LEVEL = "warning"


def _config(app, header_timeout: float = limits.HEADER_SECONDS, idle_timeout: float = limits.IDLE_SECONDS,
            max_connections: int | None = None, **kwargs):
    """uvicorn's configuration: no access log, and the connection limits of :mod:`.limits` (no
    WebSocket: nothing here speaks it, and an upgraded connection would leave the limits)."""
    import uvicorn

    return uvicorn.Config(app, access_log=False, log_level=LOG_LEVEL, server_header=False, proxy_headers=False,
                          http=limits.protocol(header_timeout, max_connections), ws="none",
                          timeout_keep_alive=limits.check_seconds("--idle-timeout", idle_timeout), **kwargs)


def init_admin(database: str) -> str:
    """A new admin token (every earlier one revoked), for ``probanon serve --init-admin``."""
    from . import db, security

    engine = db.connect(database)
    try:
        with engine.connect() as conn:
            seen = security.admin_generation(conn)
        with engine.begin() as conn:
            return security.reset_admin(conn, seen)
    except security.Refused as exc:  # another run at the same time won
        raise ParameterError(f"--init-admin: {exc}") from None
    finally:
        engine.dispose()


def serve(database: str, host: str = "127.0.0.1", port: int = 8000, allowed_hosts=(),
          header_timeout: float = limits.HEADER_SECONDS, idle_timeout: float = limits.IDLE_SECONDS,
          max_connections: int | None = None, announce=None) -> None:
    """Serve the collector until interrupted, answering requests whose ``Host`` is the address it
    listens on (and the loopback names when that is a loopback or wildcard address) or one of
    ``allowed_hosts`` (``--allowed-host``: the name clients use, e.g. behind a reverse proxy), with
    the connection limits of :mod:`.limits`. ``announce``: called with each line that says where
    it listens and for which hosts, once it listens (the command prints them)."""
    import uvicorn

    from . import app as service_app

    config = _config(None, header_timeout, idle_timeout, max_connections)  # bad limits refused before anything
    hosts = service_app.allowed_hosts(host, allowed_hosts)
    app = service_app.create_app(database, hosts)
    gc.collect()
    gc.freeze()  # the imported modules' objects out of the collector's way: no 100 ms pauses under load
    try:
        sock = socket.create_server((host, port))
    except OSError as exc:
        raise ParameterError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    for line in (f"probanon collector on http://{host}:{sock.getsockname()[1]} (respondent page /respond/ID, "
                 f"API description /openapi.json); stop with Ctrl-C",
                 f"answering for the hosts {', '.join(hosts)} (others get 400; add names with --allowed-host)"):
        if announce is not None:
            announce(line)
    config.app = app
    uvicorn.Server(config).run(sockets=[sock])


def spawn(database: str, log, timeout: float = 60.0, options=(), preexec_fn=None):
    """``probanon serve`` in a subprocess on 127.0.0.1 and a free port, once it answers:
    (process, base URL); its output goes to the file ``log``. RuntimeError if it does not start.
    ``options``: further ``probanon serve`` arguments; ``preexec_fn``: run in the child before it starts
    (e.g. to lower its resource limits)."""
    from .http import ServiceError, call

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "probanon.cli", "serve", "--database", database,
                             "--host", "127.0.0.1", "--port", str(port), *options], stdout=log,
                            stderr=subprocess.STDOUT, preexec_fn=preexec_fn)
    base, deadline = f"http://127.0.0.1:{port}", time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            call(base, "GET", "/api/surveys", timeout=2, attempts=1)
            return proc, base
        except ServiceError:
            time.sleep(0.05)
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    raise RuntimeError(f"the collector did not answer within {timeout} s (exit status {proc.returncode})")


@contextlib.contextmanager
def in_thread(app, host: str = "127.0.0.1", timeout: float = 30.0, name: str = "probanon-server"):
    """The ASGI ``app`` served in a thread on a free port of ``host`` (with :func:`_config`'s limits);
    yields its base URL (``http://host:port``) once it listens, and stops it on exit."""
    import uvicorn

    sock = socket.create_server((host, 0))
    server = uvicorn.Server(_config(app))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name=name, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not start")
        time.sleep(0.01)
    try:
        yield f"http://{host}:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()


@contextlib.contextmanager
def running(database: str, host: str = "127.0.0.1", timeout: float = 30.0, extra_hosts=()):
    """The collector on ``database`` in a thread, listening on a free port of ``host`` (and answering
    for ``extra_hosts`` too, as ``serve --allowed-host``); yields its base URL (``http://host:port``) and stops
    it on exit."""
    from .app import allowed_hosts, create_app

    with in_thread(create_app(database, allowed_hosts(host, extra_hosts)), host, timeout, "the collector") as base:
        yield base

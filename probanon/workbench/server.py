"""Running the workbench: ``probanon workbench`` (uvicorn on 127.0.0.1, a free port, a random token in
the address, as Jupyter) and a workbench in a thread for the tests.

Nothing leaves the machine unless the office names another address, and then only over TLS
(``--certfile``/``--keyfile``) or behind the reverse proxy of docs/workbench.md (``--behind-proxy``,
which terminates TLS); otherwise it refuses. Nothing about a request is logged.
"""

from __future__ import annotations

import contextlib
import ipaddress
import secrets
import socket
import tempfile
import threading
import time
from pathlib import Path

from ..errors import ParameterError
from ..service.app import allowed_hosts
from ..service.server import _config
from . import MAX_UPLOAD_MB



def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_exposure(host: str, certfile=None, keyfile=None, behind_proxy: bool = False) -> None:
    """Refuse an address other than loopback without TLS or the documented proxy."""
    if (certfile is None) != (keyfile is None):
        raise ParameterError("--certfile and --keyfile go together")
    if not is_loopback(host) and certfile is None and not behind_proxy:
        raise ParameterError(f"--host {host}: the workbench shows the office's microdata; listening beyond this "
                             "machine needs TLS (--certfile, --keyfile) or the reverse proxy of docs/workbench.md "
                             "(--behind-proxy)")
    for name, path in (("--certfile", certfile), ("--keyfile", keyfile)):
        if path is not None and not Path(path).is_file():
            raise ParameterError(f"{name}: {path}: no such file")


def new_token() -> str:
    return secrets.token_urlsafe(32)


def make(folder=None, seed=None, token=None, host="127.0.0.1", max_upload_mb=MAX_UPLOAD_MB, extra_hosts=()):
    """(workbench, ASGI app, token): a session in ``folder`` (default a private temporary folder)."""
    from .app import create_app
    from .session import Workbench

    folder = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="probanon-workbench-"))
    bench = Workbench(folder, seed)
    token = token or new_token()
    return bench, create_app(bench, token, allowed_hosts(host, extra_hosts), int(max_upload_mb * (1 << 20))), token


def serve(host: str = "127.0.0.1", port: int = 0, file=None, demo: bool = False, folder=None, seed=None,
          max_upload_mb: float = MAX_UPLOAD_MB, certfile=None, keyfile=None, behind_proxy: bool = False,
          extra_hosts=(), announce=None, opened=None) -> None:
    """Serve the workbench until interrupted; ``file`` opened at start (``demo``: the built-in
    census); ``announce(line)``: told the address (with its token) once it listens; ``opened(url)``:
    called then too (the command opens a browser)."""
    import uvicorn

    check_exposure(host, certfile, keyfile, behind_proxy)
    if max_upload_mb <= 0:
        raise ParameterError("--max-upload-mb must be positive")
    bench, app, token = make(folder, seed, host=host, max_upload_mb=max_upload_mb, extra_hosts=extra_hosts)
    if demo:
        from ..datasets import path as dataset_path

        file = dataset_path("census")
    if file is not None:
        bench.open(file)
    try:
        sock = socket.create_server((host, port))
    except OSError as exc:
        raise ParameterError(f"cannot listen on {host}:{port} ({exc.strerror or exc})") from None
    scheme = "https" if certfile else "http"
    shown = f"[{host}]" if ":" in host else host
    url = f"{scheme}://{shown}:{sock.getsockname()[1]}/?token={token}"
    config = _config(app, ssl_certfile=certfile, ssl_keyfile=keyfile)
    server = uvicorn.Server(config)

    def when_started():
        while not server.started and not server.should_exit:
            time.sleep(0.02)
        if server.started:
            if announce is not None:
                announce(f"probanon workbench on {url}")
                announce("the address holds the access token: keep it to yourself; stop with Ctrl-C")
            if opened is not None:
                opened(url)

    threading.Thread(target=when_started, daemon=True).start()
    server.run(sockets=[sock])


@contextlib.contextmanager
def running(folder=None, seed=None, timeout: float = 30.0, max_upload_mb: float = MAX_UPLOAD_MB):
    """A workbench in a thread on 127.0.0.1 and a free port: yields (base URL, token, workbench)
    and stops it (its jobs cancelled) on exit."""
    from ..service.server import in_thread

    bench, app, token = make(folder, seed, max_upload_mb=max_upload_mb)
    try:
        with in_thread(app, "127.0.0.1", timeout, "the workbench") as base:
            yield base, token, bench
    finally:
        for job in bench.jobs.running():
            bench.jobs.cancel(job.id)


__all__ = ["check_exposure", "make", "running", "serve"]

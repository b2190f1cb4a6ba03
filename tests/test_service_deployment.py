"""The deployment guide's nginx configuration (docs/collector-deployment.md), run as written in front
of a collector: TLS, the redirect from HTTP, the size and rate limits, forwarding that carries no
client address, and no log line naming a client. Only the listening addresses, the upstream's port
and the certificate's paths are changed (to 127.0.0.1, free ports and a throwaway certificate).
Needs nginx and openssl (skipped without them; a failure when CI is set)."""

from __future__ import annotations

import http.client
import http.server
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest
from service_support import design_spec, new_key, population, survey_body

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "collector-deployment.md"
HOST = "survey.example.org"
START_SECONDS = 15


def _site() -> str:
    """The guide's site configuration: its nginx block that defines the upstream."""
    blocks = re.findall(r"```nginx\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.S)
    sites = [b for b in blocks if "upstream probanon_collector" in b]
    assert len(sites) == 1, "the guide has one site configuration"
    return sites[0]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _replace(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, f"the guide's configuration no longer has {old!r} once"
    return text.replace(old, new)


@pytest.fixture(scope="module")
def tools():
    found = {name: shutil.which(name) or (f"/usr/sbin/{name}" if os.path.exists(f"/usr/sbin/{name}") else None)
             for name in ("nginx", "openssl")}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but {', '.join(missing)} is missing", pytrace=False)
        pytest.skip(f"the deployment guide's test needs {' and '.join(missing)}")
    return found


@pytest.fixture(scope="module")
def certificate(tools, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "fullchain.pem", folder / "privkey.pem"
    subprocess.run([tools["openssl"], "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", f"/CN={HOST}", "-addext", f"subjectAltName=DNS:{HOST}",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    return cert, key


class Nginx:
    """nginx with the guide's site in front of 127.0.0.1:``upstream``, in its own folder."""

    def __init__(self, binary: str, folder: Path, certificate, upstream: int):
        self.folder, self.https, self.http = folder, _free_port(), _free_port()
        folder.mkdir(exist_ok=True)
        self.context = ssl.create_default_context(cafile=str(certificate[0]))
        self.context.check_hostname = False  # the certificate names survey.example.org; we dial 127.0.0.1
        site = _site()
        site = _replace(site, "    listen 80 default_server;", f"    listen 127.0.0.1:{self.http} default_server;")
        site = _replace(site, "    listen [::]:80 default_server;\n", "")
        site = _replace(site, "    listen 443 ssl http2 default_server;",
                        f"    listen 127.0.0.1:{self.https} ssl http2 default_server;")
        site = _replace(site, "    listen [::]:443 ssl http2 default_server;\n", "")
        site = _replace(site, "server 127.0.0.1:8000;", f"server 127.0.0.1:{upstream};")
        site = _replace(site, f"/etc/letsencrypt/live/{HOST}/fullchain.pem", str(certificate[0]))
        site = _replace(site, f"/etc/letsencrypt/live/{HOST}/privkey.pem", str(certificate[1]))
        temp = "\n".join(f"    {kind}_temp_path {folder / kind};" for kind in ("client_body", "proxy", "fastcgi",
                                                                                 "uwsgi", "scgi"))
        # the main context and http block as the guide sets them in nginx.conf
        conf = (f"error_log {folder / 'error.log'} alert;\npid {folder / 'nginx.pid'};\ndaemon off;\n"
                f"worker_processes 1;\n{'user root;' if os.geteuid() == 0 else ''}\n"
                f"events {{ worker_connections 256; }}\n"
                f"http {{\n    access_log off;\n    server_tokens off;\n{temp}\n{site}\n}}\n")
        (folder / "nginx.conf").write_text(conf)
        command = [binary, "-p", str(folder), "-c", str(folder / "nginx.conf"), "-e", str(folder / "early.log")]
        check = subprocess.run(command + ["-t"], capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stderr
        self.proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.https), timeout=1).close()
                break
            except OSError:
                assert self.proc.poll() is None, self.proc.stderr.read().decode(errors="replace")
                assert time.monotonic() < deadline, "nginx did not listen"
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def request(self, method: str, path: str, body=None, headers=None, conn=None):
        """(status, headers, body) through the proxy over TLS, Host: survey.example.org."""
        own = conn is None
        conn = conn or http.client.HTTPSConnection("127.0.0.1", self.https, timeout=10, context=self.context)
        try:
            data = None if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
            sent = {"Host": HOST, **({"Content-Type": "application/json"} if data is not None else {}), **(headers or {})}
            conn.request(method, path, body=data, headers=sent)
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            if own:
                conn.close()


@pytest.fixture(scope="module")
def proxied(tools, certificate, tmp_path_factory):
    """(nginx in front of a collector, admin token)."""
    from probanon.service.server import init_admin, running

    folder = tmp_path_factory.mktemp("deployment")
    database = str(folder / "collector.db")
    admin = init_admin(database)
    with running(database, extra_hosts=[HOST]) as base:  # the guide's --allowed-host
        proxy = Nginx(tools["nginx"], folder / "nginx", certificate, int(base.rsplit(":", 1)[1]))
        try:
            yield proxy, admin
        finally:
            proxy.stop()


def test_the_guide_s_proxy_serves_the_collector_over_tls_within_its_limits(proxied):
    proxy, admin = proxied
    status, headers, body = proxy.request("GET", "/api/surveys")
    assert (status, json.loads(body)) == (200, [])
    assert headers["strict-transport-security"] == "max-age=63072000"
    assert headers["server"] == "nginx" and "content-security-policy" in headers  # no version; the collector's own
    with socket.create_connection(("127.0.0.1", proxy.http), timeout=10) as s:  # plain HTTP: redirected
        s.sendall(f"GET /respond/1 HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
        head = s.makefile("rb").read().split(b"\r\n\r\n")[0].decode()
    assert head.startswith("HTTP/1.1 301") and f"\r\nLocation: https://{HOST}/respond/1" in head

    _, text = design_spec(population(40, seed=11), k=3)  # publishing: the administrators' location
    status, _, body = proxy.request("POST", "/api/admin/surveys", survey_body(text),
                                    headers={"Authorization": f"Bearer {admin}"})
    assert status == 201, body
    survey = json.loads(body)
    path = f"/api/surveys/{survey['id']}/submissions"
    submission = {"digest": survey["digest"], "cell": 0, "answers": {"happy": 7, "region": "north"},
                  "idempotency_key": new_key()}
    status, _, body = proxy.request("POST", path, submission)
    assert status == 201 and json.loads(body)["status"] == "stored" and "receipt" in json.loads(body)

    too_big = dict(submission, answers={"happy": 7, "region": "north", "pad": "x" * 20_000})
    assert proxy.request("POST", path, too_big)[0] == 413  # refused by nginx: client_max_body_size 16k

    conn = http.client.HTTPSConnection("127.0.0.1", proxy.https, timeout=10, context=proxy.context)
    try:  # the same submission again and again: 2 per second and a burst of 10, then 429
        statuses = [proxy.request("POST", path, submission, conn=conn)[0] for _ in range(30)]
    finally:
        conn.close()
    assert statuses[:5] == [200] * 5 and 429 in statuses and set(statuses) == {200, 429}

    logs = sorted(p.name for p in proxy.folder.iterdir() if p.suffix == ".log" or "access" in p.name)
    assert all(name in ("early.log", "error.log") for name in logs), logs  # no access log
    for name in logs:  # and no line naming a client, though nginx refused requests above
        text = (proxy.folder / name).read_text(errors="replace")
        assert "client:" not in text and "127.0.0.1" not in text, text[-500:]


class _Echo(http.server.BaseHTTPRequestHandler):
    """Answers every request with the headers it received (as a JSON object)."""

    def do_GET(self):  # noqa: N802 - the standard library's name
        body = json.dumps({k.lower(): v for k, v in self.headers.items()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_the_guide_s_proxy_forwards_no_client_address(tools, certificate, tmp_path):
    echo = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=echo.serve_forever, daemon=True)
    thread.start()
    proxy = Nginx(tools["nginx"], tmp_path / "nginx", certificate, echo.server_address[1])
    try:
        status, _, body = proxy.request("GET", "/api/surveys", headers={
            "X-Forwarded-For": "198.51.100.7", "X-Real-IP": "198.51.100.7", "Forwarded": "for=198.51.100.7"})
        assert status == 200
        received = json.loads(body)
        assert received["host"] == HOST
        assert not {"x-forwarded-for", "x-real-ip", "forwarded"} & set(received), received
        assert "198.51.100.7" not in body.decode() and "127.0.0.1" not in json.dumps(received)
    finally:
        proxy.stop()
        echo.shutdown()
        echo.server_close()
        thread.join(10)


def test_the_guide_s_sqlite_backup_copies_every_commit_while_the_collector_serves(tmp_path):
    """The guide's ``VACUUM INTO`` program, run as written on the database of a serving collector."""
    import sys

    import sqlalchemy as sa
    from service_support import call

    from probanon.service.server import init_admin, running

    program = re.search(r"-c \\\n\s+'(import sqlite3[^']*)'", GUIDE.read_text(encoding="utf-8")).group(1)
    database, copy = str(tmp_path / "collector.db"), str(tmp_path / "backup.db")
    admin = init_admin(database)
    with running(database) as base:
        _, text = design_spec(population(40, seed=12), k=3)
        status, survey = call(base, "POST", "/api/admin/surveys", survey_body(text), token=admin)
        assert status == 201, survey
        keys = [new_key() for _ in range(5)]
        for key in keys:
            body = {"digest": survey["digest"], "cell": 0, "answers": {"happy": 3, "region": "south"},
                    "idempotency_key": key}
            assert call(base, "POST", f"/api/surveys/{survey['id']}/submissions", body)[0] == 201
        assert os.path.getsize(database + "-wal") > 0  # the last commits are still in the WAL
        subprocess.run([sys.executable, "-c", program, database, copy], check=True, timeout=60)
    assert not os.path.exists(copy + "-wal")
    engine = sa.create_engine("sqlite:///" + copy)
    try:
        with engine.connect() as conn:
            assert conn.exec_driver_sql("PRAGMA integrity_check").scalar_one() == "ok"
            assert conn.exec_driver_sql("SELECT count(*) FROM submissions").scalar_one() == len(keys)
            assert conn.exec_driver_sql("SELECT digest FROM surveys").scalar_one() == survey["digest"]
    finally:
        engine.dispose()

"""Durability of the collector: a 201 means the row is committed. The server (``probanon serve``, a
separate process) is killed with SIGKILL while clients submit, at a moment when some rows are
committed but not yet answered; after a restart on the same database the clients resend, with the
same idempotency keys, everything that was not acknowledged (the committed ones must come back as
200 "already stored"). Every acknowledged submission must then be stored exactly once, with the
content sent, and nothing else."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import random
import signal
import subprocess
import threading
import time

import pytest
import sqlalchemy as sa
from service_support import call, design_spec, new_key, population, survey_body

CLIENTS = 32              # concurrent requests: batches of many rows
ROUNDS = 2                # kill-restart cycles
ACKS_BEFORE_KILL = 100    # acknowledged submissions in a round before the server may be killed
ROUND_SECONDS = 8.0       # bound on a round
PER_CLIENT = 400          # bound on one client's submissions in a round
START_SECONDS = 20.0


class Server:
    """``probanon serve`` in a subprocess on 127.0.0.1 and a free port."""

    def __init__(self, database: str, log_path):
        from probanon.service.server import spawn

        self.log_path = log_path
        with open(log_path, "ab") as log:
            try:
                self.proc, self.base = spawn(database, log, START_SECONDS)
            except RuntimeError as exc:
                pytest.fail(f"{exc}: {self._log()}")

    def _log(self) -> str:
        with open(self.log_path, errors="replace") as f:
            return f.read()[-2000:]

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


def _body(rng: random.Random, digest: str, n_cells: int, key: str) -> dict:
    """A valid submission for :data:`service_support.ANSWERS`."""
    return {"digest": digest, "cell": rng.randrange(n_cells), "idempotency_key": key,
            "answers": {"happy": rng.randrange(11), "spending": round(rng.uniform(0, 5000), 2),
                        "region": rng.choice(["north", "south"])}}


def _stored(conn, survey_id: int) -> int:
    t = sa.table("submissions", sa.column("survey_id"))
    n = conn.execute(sa.select(sa.func.count()).select_from(t).where(t.c.survey_id == survey_id)).scalar_one()
    conn.rollback()  # the next count sees later commits
    return n


def _settled(acked: dict) -> int:
    """The number of acknowledgements once none has arrived for 0.05 s (at most 2 s)."""
    n, deadline = len(acked), time.monotonic() + 2
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if len(acked) == n:
            break
        n = len(acked)
    return n


async def _round(server, database, survey_id, bodies, acked, target, errors) -> dict:
    """CLIENTS concurrent clients send new submissions until the server dies; returns the submissions
    left without an answer, by key. Once ``target`` submissions are acknowledged, whenever the
    database holds more rows than acknowledgements the server is frozen (SIGSTOP); if, once the
    answers it had already sent have arrived, some rows are still unacknowledged (committed, never
    answered: what a client must resend), it is killed (SIGKILL), else thawed (SIGCONT). After
    ROUND_SECONDS it is killed anyway. An acknowledgement counted before its row can be read is an
    error (a 201 before the commit)."""
    import aiohttp

    from probanon.service.db import normalise_url

    unanswered, proc = {}, server.proc

    def kill():
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)

    def freeze_and_kill():
        deadline = time.monotonic() + ROUND_SECONDS
        engine = sa.create_engine(normalise_url(database))
        try:
            with engine.connect() as conn:
                while time.monotonic() < deadline and proc.returncode is None:
                    acks = len(acked)  # each committed before this count starts, if 201 means committed
                    rows = _stored(conn, survey_id)
                    if rows < acks:
                        errors.append(f"{acks - rows} submissions acknowledged before their commit")
                        break
                    if acks < target or rows == acks:
                        continue
                    proc.send_signal(signal.SIGSTOP)  # rows committed, not all answered yet: freeze ...
                    if _stored(conn, survey_id) > _settled(acked):
                        break  # ... and kill if some answers were not sent before the freeze
                    proc.send_signal(signal.SIGCONT)
        finally:
            kill()
            engine.dispose()

    async def client():
        for _ in range(PER_CLIENT):
            if proc.returncode is not None:
                return
            body = next(bodies)
            try:
                async with session.post(f"{server.base}/api/surveys/{survey_id}/submissions", json=body) as resp:
                    status, payload = resp.status, await resp.text()
            except (TimeoutError, aiohttp.ClientError):
                unanswered[body["idempotency_key"]] = body
                return
            if status != 201:
                errors.append(f"new key answered {status} {payload}")
                return
            acked[body["idempotency_key"]] = body

    killer = threading.Thread(target=freeze_and_kill)
    killer.start()
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CLIENTS),
                                         timeout=aiohttp.ClientTimeout(total=10)) as session:
            await asyncio.gather(*(client() for _ in range(CLIENTS)))
    finally:
        killer.join(ROUND_SECONDS + 30)
        kill()
    return unanswered


def test_killed_server_loses_no_acknowledged_submission(database, tmp_path):
    from probanon.service.db import normalise_url
    from probanon.service.server import init_admin

    admin = init_admin(database)
    _, spec = design_spec(population())
    server = Server(database, tmp_path / "server.log")
    try:
        status, created = call(server.base, "POST", "/api/admin/surveys", survey_body(spec), token=admin)
        assert status == 201, created
        survey_id, digest = created["id"], created["digest"]
        n_cells = call(server.base, "GET", f"/api/surveys/{survey_id}")[1]["cells"]
        path = f"/api/surveys/{survey_id}/submissions"

        rng = random.Random(0)
        bodies = (_body(rng, digest, n_cells, new_key()) for _ in itertools.count())
        acked, errors = {}, []
        replayed = 0  # stored before the kill but never acknowledged: answered 200 after the restart
        for round_ in range(ROUNDS):
            before = len(acked)
            unanswered = asyncio.run(_round(server, database, survey_id, bodies, acked, before + ACKS_BEFORE_KILL,
                                            errors))
            assert not errors, errors[:3]
            assert len(acked) > before, "no submission was acknowledged before the kill"

            server = Server(database, tmp_path / "server.log")
            for key, body in unanswered.items():
                status, payload = call(server.base, "POST", path, body)
                assert status in (200, 201), (status, payload)
                replayed += status == 200
                acked[key] = body
            # an acknowledged submission sent again is recognised, not stored twice
            for key in random.Random(round_).sample(sorted(acked), 5):
                status, reply = call(server.base, "POST", path, acked[key])
                assert (status, reply["status"]) == (200, "already stored")

        assert replayed, "no kill fell between a commit and its answers"
        engine = sa.create_engine(normalise_url(database))
        try:
            with engine.connect() as conn:
                t = sa.table("submissions", sa.column("survey_id"), sa.column("key_hash"), sa.column("cell"),
                             sa.column("answers"))
                rows = conn.execute(sa.select(t.c.key_hash, t.c.cell, t.c.answers)
                                    .where(t.c.survey_id == survey_id)).all()
                total = conn.execute(sa.select(sa.func.count()).select_from(t)).scalar_one()
        finally:
            engine.dispose()
        stored = {}
        for key_hash, cell, answers in rows:
            assert key_hash not in stored, f"key hash {key_hash} stored twice"
            stored[key_hash] = (cell, json.loads(answers))
        expected = {hashlib.sha256(key.encode()).hexdigest(): (body["cell"], body["answers"])
                    for key, body in acked.items()}
        assert stored.keys() == expected.keys()
        assert stored == expected
        assert total == len(rows) == len(acked)
    finally:
        server.stop()

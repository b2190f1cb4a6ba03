"""Issue 40.6 and 40.10 (rest): the close rewrite leaves no arrival order in any stored file, the
collector keeps answering through it; receipts verify and forged ones do not; the release report's
hash chain counts the respondent's row and changes when a row is deleted or inserted."""

from __future__ import annotations

import datetime as dt
import json
import os
import sqlite3
import threading
import time

import pytest
import sqlalchemy as sa
from scipy.stats import spearmanr
from service_support import BACKENDS, POSTGRES, call, design_spec, fresh_database, new_key, population, survey_body

from probanon.service import client, closing, db, receipts
from probanon.service.http import ServiceError
from probanon.service.server import init_admin, running

N = 300
#: |Spearman rho| of a random permutation of N = 300 exceeds this with probability ~ 2e-5
#: (rho ~ N(0, 1/(N-1)) under independence: 0.25 * sqrt(299) = 4.3 standard deviations)
BOUND = 0.25
ANSWERS = {"happy": 5, "region": "north"}


@pytest.fixture(params=BACKENDS)
def collector(request, tmp_path):
    url, drop = fresh_database(request.param, tmp_path)
    try:
        admin = init_admin(url)
        with running(url) as base:
            yield base, admin, url, request.param, tmp_path
    finally:
        drop()


def _publish(base, admin, seed=0, **changes):
    frame = population(200, seed=seed)
    _, text = design_spec(frame)
    status, made = call(base, "POST", "/api/admin/surveys", survey_body(text, **changes), token=admin)
    assert status == 201, made
    spec = json.loads(text)
    return made["id"], made["digest"], len(spec["cells"]), frame


def _send(base, sid, digest, n_cells, n, start=0) -> list[str]:
    """n submissions one after another: their key hashes in the order of arrival."""
    arrived = []
    for i in range(start, start + n):
        key = new_key()
        body = {"digest": digest, "cell": i % n_cells, "answers": {"happy": i % 11, "region": "north"},
                "idempotency_key": key}
        status, reply = call(base, "POST", f"/api/surveys/{sid}/submissions", body)
        assert status == 201, reply
        arrived.append(receipts.sha256_hex(key))
    return arrived


def _rho(arrived: list[str], position: dict) -> float:
    keys = [k for k in arrived if k in position]
    return float(spearmanr(range(len(keys)), [position[k] for k in keys]).statistic)


def _file_orders(url: str, arrived: list[str]) -> dict:
    """Per stored file (main, -wal, -shm, anything else beside it), the byte offset of each row's
    key hash (the storage order a reader of the file sees: page, then cell)."""
    directory, name = os.path.split(os.path.abspath(url))
    out = {}
    for entry in sorted(os.listdir(directory)):
        if entry.startswith(name):
            data = open(os.path.join(directory, entry), "rb").read()
            out[entry] = {k: data.find(k.encode()) for k in arrived if data.find(k.encode()) >= 0}
    return out


def _physical(url: str, backend: str, sid: int, arrived: list[str]) -> dict:
    """{stored file: {key hash: position}}: SQLite's files, or PostgreSQL's heap (ctid order)."""
    if backend == "sqlite":
        return _file_orders(url, arrived)
    engine = sa.create_engine(db.normalise_url(url))
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("SELECT key_hash, ctid::text FROM submissions WHERE survey_id = %(s)s",
                                        {"s": sid}).all()
    finally:
        engine.dispose()
    block_offset = {k: [int(x) for x in ctid.strip("()").split(",")] for k, ctid in rows}
    return {"heap": {k: block * 65536 + offset for k, (block, offset) in block_offset.items()}}


def _audit(base, admin) -> list:
    status, log = call(base, "GET", "/api/admin/audit", token=admin)
    assert status == 200
    return log


def test_close_rewrite_leaves_no_arrival_order_in_any_file(collector):
    base, admin, url, backend, tmp_path = collector
    sid, digest, n_cells, _ = _publish(base, admin)
    arrived = _send(base, sid, digest, n_cells, N)
    before = _physical(url, backend, sid, arrived)
    correlated = [name for name, pos in before.items() if len(pos) > 30 and _rho(arrived, pos) > 0.5]
    assert correlated, "before the close, storage keeps the order of arrival (the attack)"
    old = {}
    if backend == "sqlite":  # the old files' inodes, kept alive by the test to see what the close leaves in them
        old = {s: os.open(url + s, os.O_RDONLY) for s in ("", "-wal") if os.path.exists(url + s)}
    try:
        assert call(base, "POST", f"/api/admin/surveys/{sid}/close", {"note": "done"}, token=admin) == \
            (200, {"status": "closed"})
        after = _physical(url, backend, sid, arrived)
        assert sum(len(pos) for pos in after.values()) >= N
        for name, pos in after.items():
            if len(pos) > 30:
                rho = _rho(arrived, pos)
                assert abs(rho) < BOUND, f"{name}: rank correlation {rho:.3f} between arrival and storage"
        if backend == "sqlite":
            assert set(after) <= {"collector.db", "collector.db-wal", "collector.db-shm"}
            assert len(after["collector.db"]) == N
            for suffix, fd in old.items():  # the working files were overwritten before they were unlinked
                size = os.fstat(fd).st_size
                assert size == 0 or os.pread(fd, size, 0) == bytes(size), f"collector.db{suffix} not overwritten"
    finally:
        for fd in old.values():
            os.close(fd)
    log = _audit(base, admin)
    assert [e["action"] for e in log if e["survey_id"] == sid][-2:] == ["survey closed", closing.ACTION]
    # the release and the audit log keep working on the new storage; every row is there once
    status, report = call(base, "GET", f"/api/surveys/{sid}/release/report", token=admin_analyst(base, admin))
    assert status == 200 and report["responses"] == N and report["chain"]["rows"] == N
    assert _audit(base, admin)[-1]["action"] == "release report"
    # the append-only triggers hold on the new storage
    engine = db.connect(url)
    try:
        with pytest.raises(sa.exc.DatabaseError), engine.begin() as conn:
            conn.execute(db.submissions.delete().where(db.submissions.c.survey_id == sid))
        with engine.connect() as conn:
            assert conn.execute(sa.select(sa.func.count()).select_from(db.submissions)).scalar_one() == N
    finally:
        engine.dispose()


def admin_analyst(base, admin) -> str:
    status, made = call(base, "POST", "/api/admin/analysts", {}, token=admin)
    assert status == 200, made
    return made["token"]


def test_closing_time_passing_rewrites_too(collector, monkeypatch):
    base, admin, url, backend, _ = collector
    monkeypatch.setattr(closing, "CHECK_SECONDS", 0.2)
    closes = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=6)).replace(microsecond=0)
    sid, digest, n_cells, _ = _publish(base, admin, closes=closes.isoformat().replace("+00:00", "Z"))
    # the server in the fixture started its timer with the old period: a new server on the same database
    with running(url) as second:
        arrived = _send(second, sid, digest, n_cells, 100)
        deadline = time.monotonic() + 30
        while not any(e["action"] == closing.ACTION and e["survey_id"] == sid for e in _audit(second, admin)):
            assert time.monotonic() < deadline, "the closing time passed and the storage was not rewritten"
            time.sleep(0.2)
        for name, pos in _physical(url, backend, sid, arrived).items():
            if len(pos) > 30:
                rho = _rho(arrived, pos)
                assert abs(rho) < 0.45, f"{name}: rank correlation {rho:.3f}"  # n = 100: 4.5 sd
    # the first server, whose pooled connections opened the old file, reads the new one
    assert any(e["action"] == closing.ACTION and e["survey_id"] == sid for e in _audit(base, admin))


def test_collector_keeps_answering_during_the_rewrite(collector):
    base, admin, url, backend, _ = collector
    closing_id, digest, n_cells, _ = _publish(base, admin, seed=0)
    _send(base, closing_id, digest, n_cells, N)
    other, other_digest, other_cells, _ = _publish(base, admin, seed=1)
    acked, statuses, stop = {}, [], threading.Event()

    def post():
        deadline = time.monotonic() + 60
        for i in range(2000):
            if (stop.is_set() and i > 20) or time.monotonic() > deadline:
                return
            body = {"digest": other_digest, "cell": i % other_cells, "answers": ANSWERS, "idempotency_key": new_key()}
            status, reply = call(base, "POST", f"/api/surveys/{other}/submissions", body)
            statuses.append(status)
            if status == 201:
                acked[body["idempotency_key"]] = body

    posters = [threading.Thread(target=post) for _ in range(3)]
    for t in posters:
        t.start()
    time.sleep(0.3)
    try:
        assert call(base, "POST", f"/api/admin/surveys/{closing_id}/close", {}, token=admin)[0] == 200
    finally:
        stop.set()
        for t in posters:
            t.join()
    assert set(statuses) <= {201, 503} and statuses.count(201) > 20
    assert any(e["action"] == closing.ACTION for e in _audit(base, admin))
    # every acknowledged row is in the storage now in use: none went to the destroyed file
    for key, body in acked.items():
        assert call(base, "POST", f"/api/surveys/{other}/submissions", body)[1]["status"] == "already stored"
    engine = db.connect(url)
    try:
        with engine.connect() as conn:
            stored = conn.execute(sa.select(sa.func.count()).select_from(db.submissions)
                                  .where(db.submissions.c.survey_id == other)).scalar_one()
    finally:
        engine.dispose()
    assert stored == len(acked)


# ---------------------------------------------------------------- 40.10: receipts and the chain

def test_receipt_verifies_and_a_forged_one_does_not(collector):
    base, admin, url, backend, _ = collector
    sid, digest, _, frame = _publish(base, admin)
    info = client.survey(base, sid)
    assert len(receipts.unb64url(info["receipt_key"])) == 32
    values = {"age": float(frame.age[5]), "income": float(frame.income[5])}
    r = client.respond(base, sid, values, {"happy": "7", "region": "south"})
    assert r.status == 201 and r.receipt == r.reply["receipt"]
    answers = json.dumps(r.sent["answers"], sort_keys=True)
    key = r.sent["idempotency_key"]
    receipts.verify(info["receipt_key"], sid, key, r.cell, answers, r.receipt)
    again = client.submit(base, sid, r.sent)  # a retried submission gets the same receipt (Ed25519 is deterministic)
    assert again == (200, {"status": "already stored", "receipt": r.receipt})
    forged = [dict(r.receipt, cell=r.cell + 1), dict(r.receipt, answers_sha256=receipts.sha256_hex("{}")),
              dict(r.receipt, signature=receipts.b64url(bytes(64))), None]
    for bad in forged:
        with pytest.raises(receipts.BadReceipt):
            receipts.verify(info["receipt_key"], sid, key, bad["cell"] if bad else r.cell, answers, bad)
    other_key = receipts.new_key()[1]  # another survey's key: its signature does not pass for this one's
    with pytest.raises(receipts.BadReceipt):
        receipts.verify(other_key, sid, key, r.cell, answers, r.receipt)
    with pytest.raises(receipts.BadReceipt):  # not her answers
        receipts.verify(info["receipt_key"], sid, key, r.cell, json.dumps({"happy": 8, "region": "south"},
                                                                          sort_keys=True), r.receipt)
    # the client refuses an answer whose receipt does not verify
    with pytest.raises(ServiceError, match="receipt is not valid"):
        client.checked_receipt(info, sid, r.sent, {"status": "stored", "receipt": forged[0]})


def test_release_chain_counts_the_row_and_detects_deletion_and_insertion(collector):
    base, admin, url, backend, _ = collector
    sid, digest, n_cells, frame = _publish(base, admin)
    _send(base, sid, digest, n_cells, 40)
    mine = client.respond(base, sid, {"age": float(frame.age[9]), "income": float(frame.income[9])},
                          {"happy": 2, "region": "north"})
    assert call(base, "POST", f"/api/admin/surveys/{sid}/close", {}, token=admin)[0] == 200
    status, report = call(base, "GET", f"/api/surveys/{sid}/release/report", token=admin_analyst(base, admin))
    assert status == 200
    chain = report["chain"]
    assert chain["rows"] == 41 == len(chain["row_digests"])
    assert mine.receipt["row_digest"] in chain["row_digests"]  # her row is counted
    assert receipts.chain_of(sid, chain["row_digests"]) == chain["head"]
    engine = db.connect(url)
    try:
        with engine.connect() as conn:
            t = db.submissions.c
            keys = conn.execute(sa.select(t.key_hash).where(t.survey_id == sid).order_by(t.key_hash)).scalars().all()
            assert receipts.chain(conn, sid) == chain  # the report's chain is that of the stored rows
        assert keys == sorted(keys) and [receipts.sha256_hex(k) for k in []] == []
        # the database's owner drops the trigger and deletes a row: the head changes
        with engine.begin() as conn:
            conn.exec_driver_sql("DROP TRIGGER submissions_append_only_d" if backend == "sqlite" else
                                 "DROP TRIGGER submissions_append_only ON submissions")
            victim = conn.execute(sa.select(t.key_hash, t.cell, t.answers).where(
                t.survey_id == sid, t.key_hash == mine.receipt["key_sha256"])).one()
            conn.execute(db.submissions.delete().where(t.survey_id == sid, t.key_hash == victim.key_hash))
        with engine.connect() as conn:
            deleted = receipts.chain(conn, sid)
        assert deleted["head"] != chain["head"] and mine.receipt["row_digest"] not in deleted["row_digests"]
        # ... or inserts one: the head changes too
        with engine.begin() as conn:
            conn.execute(db.submissions.insert().values(survey_id=sid, key_hash=receipts.sha256_hex(new_key()), cell=0,
                                                        answers=json.dumps(ANSWERS, sort_keys=True),
                                                        day=dt.date.today()))
            conn.execute(db.submissions.insert().values(survey_id=sid, key_hash=victim.key_hash, cell=victim.cell,
                                                        answers=victim.answers, day=dt.date.today()))
        with engine.connect() as conn:
            inserted = receipts.chain(conn, sid)
        assert inserted["rows"] == 42 and inserted["head"] != chain["head"]
        assert set(chain["row_digests"]) < set(inserted["row_digests"])
    finally:
        engine.dispose()


def test_cli_prints_the_verified_receipt(collector, capsys):
    from probanon.cli import main

    base, admin, url, backend, _ = collector
    sid, digest, _, frame = _publish(base, admin)
    args = ["survey", "respond", base, "--survey", str(sid), "--values", "age=45, income=3100.25",
            "--answers", "happy=3,region=south", "--digest", digest]
    assert main(args) == 0
    lines = [line for line in capsys.readouterr().out.strip().splitlines() if not line.startswith("document: ")]
    assert lines[1] == 'collector: HTTP 201 {"status": "stored"}'
    assert lines[2].startswith("receipt (verified; keep it): ")
    receipt = json.loads(lines[2].split(": ", 1)[1])
    sent = json.loads(lines[0][len("sent: "):])
    receipts.verify(client.survey(base, sid)["receipt_key"], sid, sent["idempotency_key"], sent["cell"],
                    json.dumps(sent["answers"], sort_keys=True), receipt)


def test_sqlite_files_hold_the_arrival_order_before_the_close(tmp_path):
    """The premise of 40.6 on SQLite, without a server: the WAL holds one commit after another."""
    path = tmp_path / "x.db"
    engine = db.connect(str(path))
    try:
        with engine.begin() as conn:
            conn.execute(db.surveys.insert().values(id=1, title="t", spec_text=b"{}", spec_canonical=b"{}",
                                                    digest="sha256:" + "0" * 64, description="{}",
                                                    requires_token=False, opens_at=dt.datetime(2020, 1, 1),
                                                    closes_at=dt.datetime(2099, 1, 1)))
        arrived = []
        for i in range(100):
            h = receipts.sha256_hex(new_key())
            with engine.begin() as conn:
                conn.execute(db.submissions.insert().values(survey_id=1, key_hash=h, cell=0, answers="{}",
                                                            day=dt.date.today()))
            arrived.append(h)
        wal = _file_orders(str(path), arrived)["x.db-wal"]
        assert _rho(arrived, wal) > 0.9
        closing.rewrite(engine)
        for name, pos in _file_orders(str(path), arrived).items():
            if len(pos) > 30:
                assert abs(_rho(arrived, pos)) < 0.45, name
        assert sqlite3.connect(path).execute("SELECT count(*) FROM submissions").fetchone() == (100,)
    finally:
        engine.dispose()


def test_respondent_checks_her_row_in_the_report(collector, tmp_path, capsys):
    from probanon.cli import main

    base, admin, url, backend, _ = collector
    sid, digest, n_cells, frame = _publish(base, admin)
    _send(base, sid, digest, n_cells, 10)
    mine = client.respond(base, sid, {"age": float(frame.age[3]), "income": float(frame.income[3])},
                          {"happy": 4, "region": "south"})
    assert call(base, "POST", f"/api/admin/surveys/{sid}/close", {}, token=admin)[0] == 200
    report = call(base, "GET", f"/api/surveys/{sid}/release/report", token=admin_analyst(base, admin))[1]
    key = client.survey(base, sid)["receipt_key"]
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "receipt.json").write_text(json.dumps(mine.receipt))
    args = ["survey", "receipt", "--report", str(tmp_path / "report.json"), "--receipt", str(tmp_path / "receipt.json")]
    assert main(args + [f"--key={key}"]) == 0  # "=": a base64url key may begin with "-"
    assert capsys.readouterr().out.startswith(f"counted: your row (digest {mine.receipt['row_digest']}) is row ")
    # a report without her row (deleted, the chain recomputed) does not count it
    dropped = [d for d in report["chain"]["row_digests"] if d != mine.receipt["row_digest"]]
    altered = dict(report, chain=dict(report["chain"], rows=len(dropped), row_digests=dropped,
                                      head=receipts.chain_of(sid, dropped)))
    (tmp_path / "altered.json").write_text(json.dumps(altered))
    assert main(["survey", "receipt", "--report", str(tmp_path / "altered.json"), "--receipt",
                 str(tmp_path / "receipt.json")]) == 2
    assert "does not count this row" in capsys.readouterr().err
    # a report whose list was edited without its head
    edited = dict(report, chain=dict(report["chain"], rows=len(dropped), row_digests=dropped))
    with pytest.raises(ValueError, match="altered"):
        receipts.counted(edited, mine.receipt)
    # a forged receipt (another cell) is refused with the key
    forged = dict(mine.receipt, cell=(mine.receipt["cell"] + 1) % n_cells)
    forged["row_digest"] = receipts.sha256_hex(receipts.canonical_row(sid, forged["key_sha256"], forged["cell"],
                                                                      forged["answers_sha256"]))
    with pytest.raises(ValueError, match="signature"):
        receipts.counted(report, forged, key)


def test_the_gate_holds_requests_during_a_rewrite_then_answers_503(tmp_path, monkeypatch):
    from probanon.service.surveys import Refused

    monkeypatch.setattr(closing, "WAIT_SECONDS", 0.3)
    gated = closing.GatedEngine(db.connect(str(tmp_path / "g.db")))
    try:
        with gated.exclusive():
            t0 = time.monotonic()
            with pytest.raises(Refused) as refused, gated.begin():
                pass
            assert refused.value.status == 503 and time.monotonic() - t0 >= 0.3
        entered = threading.Event()

        def inside():
            with gated.connect() as conn:  # a request in progress: the rewrite waits for it
                entered.set()
                time.sleep(0.5)
                with gated.begin():  # the same thread passes again (no deadlock)
                    conn.exec_driver_sql("SELECT 1")

        worker = threading.Thread(target=inside)
        worker.start()
        entered.wait(5)
        t0 = time.monotonic()
        with gated.exclusive(timeout=5):
            assert time.monotonic() - t0 >= 0.3  # waited for the request to end
        worker.join()
        with pytest.raises(TimeoutError):  # a request that does not end: the rewrite is tried later
            with gated.connect(), gated.exclusive(timeout=0.2):
                pass
        with gated.begin() as conn:  # and the gate is open again
            assert conn.exec_driver_sql("SELECT 1").scalar_one() == 1
    finally:
        gated.dispose()


def test_a_crashed_rewrite_leaves_no_copy(tmp_path):
    path = tmp_path / "c.db"
    engine = db.connect(str(path))
    try:
        (tmp_path / "c.db.rewrite-0badc0de").write_bytes(b"a copy of every row" * 100)
        (tmp_path / "c.db.rewrite-0badc0de-journal").write_bytes(b"its journal")
        assert sorted(closing.sweep(engine)) == ["c.db.rewrite-0badc0de", "c.db.rewrite-0badc0de-journal"]
        assert not [f for f in os.listdir(tmp_path) if ".rewrite-" in f]
    finally:
        engine.dispose()


# ---------------------------------------------------------------- audit findings 2, 12

@pytest.fixture
def postgres_collector(tmp_path, monkeypatch):
    if not POSTGRES:
        pytest.skip("PROBANON_TEST_POSTGRES not set (.ci/run sets it)")
    monkeypatch.setattr(closing, "CHECK_SECONDS", 0.5)
    monkeypatch.setattr(closing, "LOCK_SECONDS", 1, raising=False)
    url, drop = fresh_database("postgres", tmp_path)
    try:
        admin = init_admin(url)
        with running(url) as base:
            yield base, admin, url
    finally:
        drop()


def _rewritten(base, admin, sid) -> bool:
    return any(e["action"] == closing.ACTION and e["survey_id"] == sid for e in _audit(base, admin))


def test_a_reader_holding_a_lock_does_not_stall_the_collector_and_the_rewrite_is_retried(postgres_collector):
    """A session with an open transaction that read the submissions (pg_dump, a report query) holds
    a lock the rewrite needs: the rewrite gives up after LOCK_SECONDS (the collector answers
    meanwhile), is not logged, and is done at a later tick once the reader is gone."""
    import psycopg

    base, admin, url = postgres_collector
    sid, digest, n_cells, _ = _publish(base, admin)
    _send(base, sid, digest, n_cells, 30)
    reader = psycopg.connect(url)
    try:
        reader.execute("SELECT count(*) FROM submissions").fetchone()  # its transaction stays open
        t0 = time.monotonic()
        assert call(base, "POST", f"/api/admin/surveys/{sid}/close", {}, token=admin, timeout=60)[0] == 200
        assert time.monotonic() - t0 < 10, "the close waited for the reader's transaction"
        t0 = time.monotonic()
        assert call(base, "GET", f"/api/surveys/{sid}", timeout=60)[0] == 200
        assert time.monotonic() - t0 < 5
        assert not _rewritten(base, admin, sid), "logged as rewritten though the rewrite did not happen"
    finally:
        reader.close()
    deadline = time.monotonic() + 30
    while not _rewritten(base, admin, sid):
        assert time.monotonic() < deadline, "the rewrite was not tried again once the reader was gone"
        time.sleep(0.3)


def test_a_failed_vacuum_full_is_not_logged_and_is_tried_again(postgres_collector, monkeypatch):
    base, admin, url = postgres_collector
    sid, digest, n_cells, _ = _publish(base, admin)
    _send(base, sid, digest, n_cells, 10)
    vacuum = closing._vacuum_full
    failures = []

    def failing(engine):
        failures.append(1)
        raise sa.exc.OperationalError("VACUUM FULL", None, Exception("canceling statement due to lock timeout"))

    monkeypatch.setattr(closing, "_vacuum_full", failing)
    assert call(base, "POST", f"/api/admin/surveys/{sid}/close", {}, token=admin)[0] == 200
    assert failures and not _rewritten(base, admin, sid)
    engine = db.connect(url)
    try:
        with engine.connect() as conn:
            assert closing.pending(conn) == [sid]
    finally:
        engine.dispose()
    monkeypatch.setattr(closing, "_vacuum_full", vacuum)
    deadline = time.monotonic() + 30
    while not _rewritten(base, admin, sid):
        assert time.monotonic() < deadline, "a failed VACUUM FULL was never tried again"
        time.sleep(0.3)


CRASH = """
import os, sys
import sqlalchemy as sa
from probanon.service import closing, db
path, witness, point = sys.argv[1:4]
engine = db.connect(path)
with engine.begin() as conn:  # rows still in the WAL when the rewrite starts
    conn.execute(db.submissions.insert(), [{"survey_id": 1, "key_hash": k, "cell": 0, "answers": "{}",
                                            "day": db.now().date()} for k in sys.argv[4:]])
os.link(path + "-wal", witness + "-wal")  # the test's own names for the old files' blocks
os.link(path, witness + "-main")
if point == "replace":  # killed after SQLite's last close unlinked the -wal, before the swap
    os.replace = lambda *a: os._exit(9)
else:  # killed after the swap, before the old files are overwritten
    closing._overwrite = lambda *a: os._exit(9)
closing.rewrite(engine)
"""


@pytest.mark.parametrize("point", ["replace", "overwrite"])
def test_a_rewrite_killed_midway_leaves_no_old_block_unwritten(tmp_path, point):
    """Audit finding 12: a process killed between SQLite's last close (which checkpoints and unlinks
    the -wal) or the swap (which unlinks the old main file) and the overwrite of the old files
    leaves them under a second name, which the next start overwrites (their blocks are never
    freed unwritten); the database is whole either way."""
    import subprocess
    import sys

    path = str(tmp_path / "c.db")
    admin = init_admin(path)
    with running(path) as base:
        sid, digest, n_cells, _ = _publish(base, admin)
        arrived = _send(base, sid, digest, n_cells, 20)
    late = [receipts.sha256_hex(new_key()) for _ in range(20)]
    (tmp_path / "w").mkdir()
    witness = str(tmp_path / "w" / "old")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", CRASH, path, witness, point, *late], env=env, timeout=120,
                          capture_output=True, text=True)
    assert done.returncode == 9, done.stderr
    wal = open(witness + "-wal", "rb").read()
    assert any(k.encode() in wal for k in late), "the witness does not see the rows in the old WAL"
    engine = db.connect(path)  # the next start
    try:
        closing.sweep(engine)
        wal = open(witness + "-wal", "rb").read()
        assert not any(k.encode() in wal for k in late + arrived), "the old -wal's blocks were left unwritten"
        main = open(witness + "-main", "rb").read()
        if point == "overwrite":  # swapped: the old main file is no longer the database
            assert not any(k.encode() in main for k in late + arrived), "the old main file was left unwritten"
        assert not [f for f in os.listdir(tmp_path) if ".rewrite-" in f]
        with engine.connect() as conn:
            keys = set(conn.execute(sa.select(db.submissions.c.key_hash)).scalars())
        assert keys == set(arrived) | set(late)
    finally:
        engine.dispose()


def test_the_close_drops_unused_codes_and_redemptions_and_keeps_their_counts(collector):
    """Audit finding 13: with a list of who got which letter, the unused codes' hashes name who did
    not take part and each redemption that a letter was used: the close rewrite deletes them (from
    every stored file, on SQLite) and keeps the counts the release report states."""
    from service_support import redeem

    base, admin, url, backend, _ = collector
    sid, digest, n_cells, _ = _publish(base, admin, requires_token=True)
    status, issued = call(base, "POST", f"/api/admin/surveys/{sid}/tokens", {"count": 5}, token=admin)
    assert status == 200
    codes = issued["tokens"]
    for i, code in enumerate(codes[:3]):
        body = {"digest": digest, "cell": i % n_cells, "answers": ANSWERS, "idempotency_key": new_key(),
                "token": redeem(base, sid, code)}
        assert call(base, "POST", f"/api/surveys/{sid}/submissions", body)[0] == 201
    hashes = [receipts.sha256_hex(code) for code in codes]
    engine = db.connect(url)
    try:
        def stored():
            with engine.connect() as conn:
                return (set(conn.execute(sa.select(db.tokens.c.hash).where(db.tokens.c.survey_id == sid)).scalars()),
                        set(conn.execute(sa.select(db.redemptions.c.code_hash)).scalars()))

        assert stored() == (set(hashes[3:]), set(hashes[:3]))  # before the close: both kept
        assert call(base, "POST", f"/api/admin/surveys/{sid}/close", {}, token=admin)[0] == 200
        assert _rewritten(base, admin, sid)
        assert stored() == (set(), set())
        if backend == "sqlite":
            for name, found in _file_orders(url, hashes).items():
                assert not found, f"{name} still holds a code's hash"
    finally:
        engine.dispose()
    report = call(base, "GET", f"/api/surveys/{sid}/release/report", token=admin_analyst(base, admin))[1]
    assert report["access"] == {"invitations": True, "frame": report["access"]["frame"], "issued": 5, "used": 3}

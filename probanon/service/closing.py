"""The close rewrite (issue 40.6): at a survey's close the stored data leave the order of arrival.

Storage keeps the order in which rows arrived: SQLite's WAL holds one commit after another, and
even after a checkpoint the main file's B-tree pages were allocated as rows came in; PostgreSQL's
heap keeps insertion order (``ctid``). With any proxy log, that order ties addresses to rows.

So when a survey closes (an administrator's close: at once; the closing time passing: the server's
timer notices it within :data:`CHECK_SECONDS`, and at its start), the collector rewrites the
database with every table of :data:`.db.ORDER_REVEALING` in a random order, checks that every
survey's hash chain (:mod:`.receipts`) is unchanged, and destroys the working files. It also
deletes, for each survey closed since the last rewrite, its unused invitation codes' hashes and
its redemptions (:data:`.db.DROPPED_AT_CLOSE`: with a list of who got which letter they would say
who took part), after recording its invitations issued and used in ``invitation_counts`` (the
release report's access section reads them there):

SQLite
    With every request held at the gate (:class:`GatedEngine`: a request waits, up to
    :data:`WAIT_SECONDS`, then gets 503; none touches the old file after the copy), ``VACUUM INTO``
    a new file; in that file (nobody else's yet) each order-revealing table is emptied and filled
    again from its rows in a random order (its triggers dropped and re-created around it), then
    ``VACUUM`` stores every table in key order (submissions: the random key hash); the new file is
    fsynced and renamed over the database; the old main file, its ``-wal`` and ``-shm`` are
    overwritten with zeros, fsynced and unlinked (through descriptors opened before SQLite's last
    close; no ``wal_checkpoint(TRUNCATE)``, which would free the WAL's blocks without overwriting
    them: ``VACUUM INTO`` reads the WAL's commits anyway). Each old file has a second name
    (``<db>.rewrite-XXXX-old-wal``...) from before SQLite's last close until it is overwritten, so
    a process killed in between (SQLite's close has unlinked the ``-wal``, the swap has unlinked
    the main file) leaves them to :func:`sweep` at the next start instead of freeing their blocks
    unwritten. The engine's connections are closed; new ones
    open the new file (:func:`.db._same_file` makes any engine on the path follow).
PostgreSQL
    In one transaction that locks each order-revealing table exclusively: its rows copied to a
    temporary table in a random order, its user triggers disabled, the table emptied with
    ``TRUNCATE`` (a new file: no deleted tuple keeps its arrival-ordered ``xmin``, even for a
    session holding an older snapshot) and filled again from the copy, the triggers enabled again,
    the chains checked; then ``VACUUM FULL`` (the tables whose rows the close deletes). The triggers are disabled only inside
    that transaction, which no other session can see or write through. Each lock is waited for
    :data:`LOCK_SECONDS` at most (``lock_timeout``; ``VACUUM FULL`` also has a statement timeout):
    a session of someone else holding one (a reader's open transaction, ``pg_dump``) makes the
    rewrite fail instead of holding every request at the gate, and the server's timer tries it
    again (waiting longer after each failure, up to :data:`MAX_BACKOFF_SECONDS`). "storage
    rewritten" is logged only once every ``VACUUM FULL`` succeeded: until then the survey is
    still pending and the whole rewrite is done again.

What this cannot destroy (docs/collector-deployment.md): copies made before the close (backups,
filesystem snapshots, PostgreSQL's WAL segments and archives, which the database server keeps),
and blocks a copy-on-write or journaling filesystem or an SSD keeps after an overwrite.
Each rewrite is in the audit log ("storage rewritten").
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import threading

import sqlalchemy as sa

from . import db
from .receipts import chain
from .surveys import Refused

LOG = logging.getLogger("uvicorn.error")
WAIT_SECONDS = 30  # a request waits this long for a rewrite to end, then gets 503
DRAIN_SECONDS = 30  # a rewrite waits this long for the requests in progress, then is tried later
CHECK_SECONDS = 10  # the server's timer: how often it looks for surveys whose closing time passed
LOCK_SECONDS = 2  # PostgreSQL: a rewrite waits this long for a table's lock, then is tried again at the next tick
VACUUM_SECONDS = 600  # PostgreSQL: the statement timeout of each VACUUM FULL
MAX_BACKOFF_SECONDS = 300  # the timer's wait after failed rewrites doubles up to this
ACTION = "storage rewritten"


class GatedEngine:
    """The engine as the server uses it: ``begin()`` and ``connect()`` pass a gate that
    :meth:`exclusive` closes while the storage is rewritten (a thread already inside passes again);
    everything else is the engine's."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine
        self._cond = threading.Condition()
        self._inside = 0
        self._shut = False
        self._local = threading.local()

    def __getattr__(self, name):
        return getattr(self.engine, name)

    @contextlib.contextmanager
    def _pass(self):
        depth = getattr(self._local, "depth", 0)
        if depth == 0:
            with self._cond:
                if not self._cond.wait_for(lambda: not self._shut, timeout=WAIT_SECONDS):
                    raise Refused(503, "the collector is rewriting its storage; try again in a moment")
                self._inside += 1
        self._local.depth = depth + 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._cond:
                    self._inside -= 1
                    self._cond.notify_all()

    @contextlib.contextmanager
    def begin(self):
        with self._pass(), self.engine.begin() as conn:
            yield conn

    @contextlib.contextmanager
    def connect(self):
        with self._pass(), self.engine.connect() as conn:
            yield conn

    @contextlib.contextmanager
    def exclusive(self, timeout: float = DRAIN_SECONDS):
        """Hold every other request at the gate until the block ends (the caller must not be inside);
        TimeoutError if the requests in progress do not end within ``timeout`` (nothing held then)."""
        with self._cond:
            if not self._cond.wait_for(lambda: not self._shut, timeout=timeout):
                raise TimeoutError("another rewrite is running")
            self._shut = True
            if not self._cond.wait_for(lambda: self._inside == 0, timeout=timeout):
                self._shut = False
                self._cond.notify_all()
                raise TimeoutError("requests in progress did not end")
        try:
            yield self.engine
        finally:
            with self._cond:
                self._shut = False
                self._cond.notify_all()


# ---------------------------------------------------------------- when

def pending(conn) -> list[int]:
    """Surveys closed by now (early or at their closing time) whose storage was not rewritten since."""
    s, a = db.surveys.c, db.audit.c
    done = sa.select(a.survey_id).where(a.action == ACTION, a.survey_id.is_not(None))
    return list(conn.execute(sa.select(s.id).where(
        sa.or_(s.closed_at.is_not(None), s.closes_at <= db.now()), s.id.not_in(done)).order_by(s.id)).scalars())


def close_pending(gated: GatedEngine, actor: str | None = None) -> list[int]:
    """Rewrite the storage if a survey closed since the last rewrite; the surveys it was for."""
    with gated.connect() as conn:
        if not pending(conn):
            return []
    with gated.exclusive() as engine:
        return rewrite(engine, actor, only_if_pending=True)


def _log(conn, due: list[int], actor: str | None) -> None:
    for survey_id in due:
        db.log_action(conn, "collector", ACTION, survey_id,
                      "every order-revealing table stored again in a random order; working files destroyed", actor)


class Timer:
    """The server's thread that rewrites the storage when a survey's closing time has passed."""

    def __init__(self, gated: GatedEngine, every: float | None = None):
        self.gated, self.every, self.stop_event = gated, every or CHECK_SECONDS, threading.Event()
        self.thread = threading.Thread(target=self._run, name="probanon-close", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            sweep(self.gated.engine)
        except OSError as exc:
            LOG.error("could not destroy a rewrite's leftover file: %s", type(exc).__name__)
        wait = self.every
        while True:
            try:
                close_pending(self.gated)
                wait = self.every
            except Exception as exc:  # noqa: BLE001 - one line, tried again later (a lock held elsewhere, say)
                LOG.error("close rewrite failed: %s (tried again in %s s)", type(exc).__name__, wait)
                if self.stop_event.wait(wait):
                    return
                wait = min(2 * wait, max(self.every, MAX_BACKOFF_SECONDS))
                continue
            if self.stop_event.wait(self.every):
                return

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join()


# ---------------------------------------------------------------- how

def _drop_invitations(execute, due: list[int]) -> None:
    """For each survey of ``due``: its invitations issued and codes redeemed recorded in
    ``invitation_counts`` (once), then its unused codes' hashes and its redemptions deleted (audit
    finding 13: with a list of who got which letter, the unused codes name who did not take part,
    and each redemption row that a letter was used). ``execute(sql, params)``: the connection's
    (SQLAlchemy's or sqlite3's, both with named parameters)."""
    for sid in due:
        p = {"s": sid}
        issued = execute("SELECT COALESCE(SUM(count), 0) FROM invitation_batches WHERE survey_id = :s", p)
        unused = execute("SELECT COUNT(*) FROM tokens WHERE role = 'respondent' AND survey_id = :s", p)
        known = execute("SELECT COUNT(*) FROM invitation_counts WHERE survey_id = :s", p)
        if not known:
            execute("INSERT INTO invitation_counts (survey_id, issued, used) VALUES (:s, :i, :u)",
                    {**p, "i": issued, "u": max(0, issued - unused)})
        execute("DELETE FROM tokens WHERE role = 'respondent' AND survey_id = :s", p)
        execute("DELETE FROM redemptions WHERE survey_id = :s", p)


def heads(conn) -> dict:
    """Every survey's chain head (to check that a rewrite changed no row)."""
    return {sid: chain(conn, sid)["head"] for sid in conn.execute(sa.select(db.surveys.c.id)).scalars()}


def rewrite(engine: sa.Engine, actor: str | None = None, only_if_pending: bool = False) -> list[int]:
    """Store every order-revealing table again in a random order and destroy the working files
    (module docstring); nothing else in this process may use the database meanwhile. The surveys
    closed since the last rewrite are logged ("storage rewritten") and returned; with
    ``only_if_pending``, nothing is done when there are none (another server did it)."""
    if engine.dialect.name == "sqlite":
        with engine.connect() as conn:
            due = pending(conn)
        if due or not only_if_pending:
            _rewrite_sqlite(engine, due)
            with engine.begin() as conn:
                _log(conn, due, actor)
        return due
    return _rewrite_postgres(engine, actor, only_if_pending)


def _rewrite_postgres(engine: sa.Engine, actor: str | None, only_if_pending: bool) -> list[int]:
    with engine.begin() as conn:
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7215)")  # db.connect's schema lock: no deadlock with
        due = pending(conn)  # it, and collectors sharing the database rewrite one after the other
        if not due and only_if_pending:
            return []
        # a session holding any lock on a table (a reader's open transaction, pg_dump) makes LOCK TABLE
        # fail after LOCK_SECONDS instead of holding the gate, and so every request, until it ends
        conn.exec_driver_sql(f"SET LOCAL lock_timeout = {int(LOCK_SECONDS * 1000)}")
        _drop_invitations(lambda sql, p: conn.execute(sa.text(sql), p).scalar() if sql.startswith("SELECT")
                          else conn.execute(sa.text(sql), p), due)
        before = heads(conn)
        for table in db.ORDER_REVEALING:
            conn.exec_driver_sql(f"LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")
            conn.exec_driver_sql(f"CREATE TEMP TABLE probanon_shuffle ON COMMIT DROP AS "
                                 f"SELECT * FROM {table} ORDER BY random()")
            conn.exec_driver_sql(f"ALTER TABLE {table} DISABLE TRIGGER USER")
            # TRUNCATE, not DELETE: a new heap file holds only the shuffled rows. Deleted tuples would
            # stay (with their arrival-ordered xmin) while any session's snapshot can see them, and
            # VACUUM FULL keeps those (tests/test_service_unlinkable.py, a snapshot held during the close)
            conn.exec_driver_sql(f"TRUNCATE {table}")
            conn.exec_driver_sql(f"INSERT INTO {table} SELECT * FROM probanon_shuffle")
            conn.exec_driver_sql(f"ALTER TABLE {table} ENABLE TRIGGER USER")
            conn.exec_driver_sql("DROP TABLE probanon_shuffle")
        if heads(conn) != before:
            raise RuntimeError("the rewrite changed the stored rows")  # rolled back
    _vacuum_full(engine)  # the heap leaves the order of arrival only now: logged after it, retried if it fails
    with engine.begin() as conn:
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7215)")
        due = [sid for sid in pending(conn) if sid in due]  # another collector may have logged them meanwhile
        _log(conn, due, actor)
    return due


def _vacuum_full(engine: sa.Engine) -> None:
    """``VACUUM FULL`` of each order-revealing table (a new heap file, in the shuffled order), with
    a lock timeout (a reader's open transaction: it fails, and the next tick tries again) and a
    statement timeout."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.exec_driver_sql(f"SET lock_timeout = {int(LOCK_SECONDS * 1000)}")
        conn.exec_driver_sql(f"SET statement_timeout = {int(VACUUM_SECONDS * 1000)}")
        try:
            for table in dict.fromkeys((*db.ORDER_REVEALING, *db.DROPPED_AT_CLOSE)):  # dead tuples too
                conn.exec_driver_sql(f"VACUUM FULL {table}")
        finally:
            conn.exec_driver_sql("RESET lock_timeout")
            conn.exec_driver_sql("RESET statement_timeout")


def _sqlite_connect(path: str):
    import sqlite3

    conn = sqlite3.connect(path, isolation_level=None, timeout=10)
    conn.execute("PRAGMA busy_timeout=10000")
    conn.execute("PRAGMA secure_delete=ON")
    return conn


def _heads_sqlite(conn) -> dict:
    from .receipts import chain_of, row_digest

    rows: dict = {}
    for sid, key_hash, cell, answers in conn.execute("SELECT survey_id, key_hash, cell, answers FROM submissions"):
        rows.setdefault(sid, []).append((key_hash, row_digest(sid, key_hash, cell, answers)))
    return {sid: chain_of(sid, [d for _, d in sorted(r)]) for sid, r in rows.items()}


def _fsync(path: str, directory: bool = False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _rewrite_sqlite(engine: sa.Engine, due: list[int] = ()) -> None:
    path = os.path.abspath(engine.url.database)
    directory = os.path.dirname(path)
    fresh = f"{path}.rewrite-{secrets.token_hex(4)}"
    old, links = {}, []  # the old files' descriptors and their second names (docstring)
    source = _sqlite_connect(path)
    try:
        before = _heads_sqlite(source)
        source.execute("VACUUM INTO ?", (fresh,))
        target = _sqlite_connect(fresh)
        try:
            target.execute("PRAGMA journal_mode=DELETE")
            target.execute("PRAGMA temp_store=MEMORY")
            target.execute("BEGIN IMMEDIATE")
            _drop_invitations(lambda sql, p: target.execute(sql, p).fetchone()[0] if sql.startswith("SELECT")
                              else target.execute(sql, p), list(due))
            target.execute("COMMIT")
            for table in db.ORDER_REVEALING:
                triggers = target.execute("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?",
                                          (table,)).fetchall()
                target.execute("BEGIN IMMEDIATE")
                target.execute(f"CREATE TEMP TABLE probanon_shuffle AS SELECT * FROM {table} ORDER BY random()")
                for name, _ in triggers:
                    target.execute(f'DROP TRIGGER "{name}"')
                target.execute(f"DELETE FROM {table}")
                target.execute(f"INSERT INTO {table} SELECT * FROM temp.probanon_shuffle")
                for _, sql in triggers:
                    target.execute(sql)
                target.execute("DROP TABLE temp.probanon_shuffle")
                target.execute("COMMIT")
            target.execute("VACUUM")  # every table in key order, no free page left
            if _heads_sqlite(target) != before:
                raise RuntimeError("the rewrite changed the stored rows")
            target.execute("PRAGMA journal_mode=WAL")
        finally:
            target.close()
        _fsync(fresh)
        engine.dispose()  # the server's connections to the old file are closed
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                old[suffix] = os.open(path + suffix, os.O_RDWR)
                # a second name for each old file until it is overwritten: if the process dies before
                # (between SQLite's unlink of the -wal and the overwrite, say), sweep() finds it
                links.append(f"{fresh}-old{suffix or '-main'}")
                os.link(path + suffix, links[-1])
        _fsync(directory, directory=True)
    except BaseException:
        source.close()
        for name in [fresh, *links]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
        for fd in old.values():
            os.close(fd)
        raise
    try:
        source.close()  # the last connection: SQLite may checkpoint and unlink the -wal and -shm
        for suffix in ("-wal", "-shm"):  # never beside the new file (another process's, say)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path + suffix)
        os.replace(fresh, path)
        _fsync(directory, directory=True)
    finally:
        live = _live(path)  # the old files are overwritten once no name of the database points at them
        for fd in old.values():
            try:
                if (os.fstat(fd).st_dev, os.fstat(fd).st_ino) not in live:
                    _overwrite(fd)
            finally:
                os.close(fd)
        for name in links:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(name)
        _fsync(directory, directory=True)


def _live(path: str) -> set:
    """(device, inode) of the database's files now: its main file, -wal and -shm."""
    out = set()
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            st = os.stat(path + suffix)
            out.add((st.st_dev, st.st_ino))
    return out


def sweep(engine: sa.Engine) -> list[str]:
    """At the server's start, what a crash left of a SQLite rewrite: its new file (a full copy of
    the data, not yet swapped in) and the second names of the old files (``-old-main``,
    ``-old-wal``, ``-old-shm``) are overwritten and unlinked, unless a name is still one of the
    database's own files (the rewrite died before the swap: then only the second name goes, and
    the rewrite is done again, the survey still pending). The names removed."""
    if engine.dialect.name != "sqlite" or not engine.url.database:
        return []
    path = os.path.abspath(engine.url.database)
    directory, name = os.path.split(path)
    live = _live(path)
    removed = []
    for entry in os.listdir(directory):
        if entry.startswith(name + ".rewrite-"):
            fd = os.open(os.path.join(directory, entry), os.O_RDWR)
            try:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) not in live:
                    _overwrite(fd)
            finally:
                os.close(fd)
            os.unlink(os.path.join(directory, entry))
            removed.append(entry)
    _fsync(directory, directory=True)
    return removed


def _overwrite(fd: int, chunk: int = 1 << 20) -> None:
    """Zeros over the whole file behind ``fd``, on disk."""
    size = os.fstat(fd).st_size
    zeros = bytes(min(chunk, max(size, 1)))
    done = 0
    while done < size:
        done += os.pwrite(fd, zeros[:min(chunk, size - done)], done)
    os.fsync(fd)

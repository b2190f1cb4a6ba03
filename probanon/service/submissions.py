"""Submissions: the strict check of one respondent's request, and the group-commit writer.

A submission is ``{"digest", "cell", "answers", "idempotency_key"}`` (+ ``"token"`` when the survey
takes invitations) and nothing else. What is stored: the survey, the SHA-256 of the idempotency
key, the cell, the answers and the day. The token only marks its invitation used, in the same
transaction, without any link to the row.

:class:`Writer` is one thread that owns the writes: requests queue their rows, the thread commits
every row waiting in ONE transaction (SQLite: one fsync of the WAL for the whole batch) and only
then answers each request. A client is told 201 only when its row is on disk, with its receipt
(:mod:`.receipts`: the survey's Ed25519 signature of the row; 200 "already stored" carries it too).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import queue
import re
import threading
from dataclasses import dataclass

import sqlalchemy as sa

from . import db, receipts
from .answers import SchemaError, check_answers, undeclared
from .security import MAX_TOKEN_LENGTH, consume_invitation
from .surveys import Refused, Survey

KEYS = {"digest", "cell", "answers", "idempotency_key", "token"}
IDEMPOTENCY = re.compile(r"[A-Za-z0-9_-]{22,64}")
MAX_BATCH = 512


@dataclass(frozen=True)
class Submission:
    survey_id: int
    key_hash: str
    cell: int
    answers: str  # canonical JSON
    token: str | None


def parse(survey: Survey, body) -> Submission:
    """The submission if every field is declared and valid, else :class:`Refused` (422/403)."""
    if not isinstance(body, dict):
        raise Refused(422, "the submission must be a JSON object")
    for name in body:
        if name not in KEYS:
            raise Refused(422, undeclared(name, survey.columns, "submission"))
    for name in ("digest", "cell", "answers", "idempotency_key"):
        if name not in body:
            raise Refused(422, f"missing field {name!r}")
    if body["digest"] != survey.digest:
        raise Refused(422, "digest mismatch: the cell was computed with another specification "
                           f"(this survey's is {survey.digest})")
    cell = body["cell"]
    if isinstance(cell, bool) or not isinstance(cell, int) or not 0 <= cell < survey.n_cells:
        raise Refused(422, f"'cell' must be an integer in 0..{survey.n_cells - 1}")
    key = body["idempotency_key"]
    if not isinstance(key, str) or not IDEMPOTENCY.fullmatch(key):
        raise Refused(422, "'idempotency_key' must be 22..64 characters of A-Z a-z 0-9 _ -")
    token = body.get("token")
    if survey.requires_token:
        if not isinstance(token, str) or not 0 < len(token) <= MAX_TOKEN_LENGTH:
            raise Refused(403, "this survey takes one invitation token per respondent: 'token' is missing or malformed")
    elif token is not None:
        raise Refused(422, "this survey takes no invitation token")
    try:
        answers = check_answers(survey.answers, body["answers"], survey.columns)
    except SchemaError as exc:
        raise Refused(422, str(exc)) from None
    return Submission(survey.id, hashlib.sha256(key.encode()).hexdigest(), cell,
                      json.dumps(answers, sort_keys=True, allow_nan=False), token)


STORED, REPLAYED = "stored", "already stored"
_INSERT = db.submissions.insert()


def _write(conn, batch: list[Submission]) -> list:
    """Store a batch inside one transaction: per submission its status, or the :class:`Refused`
    to answer. Keys already stored are read in one query and the new rows inserted in one
    statement; a refused submission writes nothing (its token update matched no row)."""
    t = db.submissions.c
    closed = _closed(conn, {s.survey_id for s in batch})
    stored = {(r.survey_id, r.key_hash): (r.cell, r.answers) for r in conn.execute(  # through the primary key
        sa.select(t.survey_id, t.key_hash, t.cell, t.answers).where(
            t.survey_id.in_({s.survey_id for s in batch}), t.key_hash.in_({s.key_hash for s in batch})))}
    day, rows, results = db.now().date(), [], []
    for s in batch:
        old = stored.get((s.survey_id, s.key_hash))
        if s.survey_id in closed:
            results.append(Refused(409, "the survey is closed"))
        elif old is not None:
            results.append(REPLAYED if old == (s.cell, s.answers) else
                           Refused(409, "this idempotency key was used for another submission"))
        elif s.token is not None and not consume_invitation(conn, s.token, s.survey_id):
            results.append(Refused(403, "unknown, revoked or already used invitation token"))
        else:
            stored[(s.survey_id, s.key_hash)] = (s.cell, s.answers)
            rows.append({"survey_id": s.survey_id, "key_hash": s.key_hash, "cell": s.cell, "answers": s.answers,
                         "day": day})
            results.append(STORED)
    if rows:
        conn.execute(_INSERT, rows)
    return results


def _closed(conn, survey_ids) -> set:
    """The surveys closed by now (early, or at their closing time) among ``survey_ids``."""
    c = db.surveys.c
    return {r.id for r in conn.execute(sa.select(c.id).where(
        c.id.in_(survey_ids), sa.or_(c.closed_at.is_not(None), c.closes_at <= db.now())))}


def _settle(pairs) -> None:
    """Answer each waiting request (in its event loop)."""
    for future, result in pairs:
        if future.cancelled():  # the client went away
            continue
        if isinstance(result, BaseException):
            future.set_exception(result)
        else:
            future.set_result(result)


class Writer:
    """The thread that commits submissions in batches; :meth:`submit` (called in the event loop)
    returns an asyncio future of the status, settled once the batch is committed."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine
        self.queue: queue.Queue = queue.Queue()
        self.keys: dict = {}  # survey id -> its receipt key (None: published before receipts)
        self.thread = threading.Thread(target=self._run, name="probanon-writer", daemon=True)
        self.thread.start()

    def submit(self, s: Submission) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.queue.put((s, future, loop))
        return future

    def close(self) -> None:
        self.queue.put(None)
        self.thread.join()

    def _run(self) -> None:
        while True:
            item = self.queue.get()
            if item is None:
                return
            batch = [item]
            while len(batch) < MAX_BATCH:
                try:
                    item = self.queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._commit(batch)
                    return
                batch.append(item)
            self._commit(batch)

    def _commit(self, batch) -> None:
        """One transaction for the batch; if it fails as a whole (another process wrote the same
        key, the database is gone), each submission again in its own transaction."""
        submissions = [s for s, _, _ in batch]
        try:
            results = self._transaction(submissions)
        except Refused as exc:  # the gate of a storage rewrite (closing.GatedEngine): 503 for all
            results = [exc] * len(submissions)
        except Exception:  # noqa: BLE001 - retried one by one, where each error is reported
            results = []
            for s in submissions:
                try:
                    results.extend(self._transaction([s]))
                except Exception:  # noqa: BLE001
                    results.append(Refused(503, "the database is unavailable; try again"))
        by_loop: dict = {}
        for (_, future, loop), result in zip(batch, results):
            by_loop.setdefault(loop, []).append((future, result))
        for loop, pairs in by_loop.items():
            try:
                loop.call_soon_threadsafe(_settle, pairs)
            except RuntimeError:  # the server stopped: nobody waits any more
                pass

    def _transaction(self, submissions: list[Submission]) -> list:
        with self.engine.begin() as conn:
            return [self._answer(conn, s, r) for s, r in zip(submissions, _write(conn, submissions))]

    def _answer(self, conn, s: Submission, result):
        """(status, the survey's receipt key or None, the submission) of a stored submission: see
        :func:`answer`."""
        if isinstance(result, Refused):
            return result
        if s.survey_id not in self.keys:
            self.keys[s.survey_id] = receipts.private_key(conn, s.survey_id)
        return result, self.keys[s.survey_id], s


def answer(result) -> dict:
    """The body of the answer to a stored submission, its status and receipt, from what the writer
    settled its future with; signed by the request (in the event loop, while the writer commits the
    next batch), not in the writer's transaction."""
    status, key, s = result
    return {"status": status, "receipt": None if key is None else
            receipts.receipt(key, s.survey_id, s.key_hash, s.cell, s.answers)}

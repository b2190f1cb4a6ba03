"""Submissions: the strict check of one respondent's request, and the group-commit writer.

A submission is ``{"digest", "cell", "answers", "idempotency_key"}`` (+ ``"token"`` when the survey
takes invitations) and nothing else. What is stored: the survey, the SHA-256 of the idempotency
key, the cell, the answers and the day. The token only marks its invitation used, in the same
transaction, without any link to the row.

:class:`Writer` is one thread that owns the writes: requests queue their rows, the thread commits
every row waiting in ONE transaction (SQLite: one fsync of the WAL for the whole batch) and only
then answers each request. A client is told 201 only when its row is on disk.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import json
import queue
import re
import threading
from dataclasses import dataclass

import sqlalchemy as sa

from . import db
from .answers import NAME, SchemaError, check_answers
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
            if name in survey.columns:
                raise Refused(422, f"{name!r} is a quasi-identifier: send only the cell, never its value")
            raise Refused(422, "unknown field" + (f" {name!r}" if NAME.fullmatch(name) else ""))
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


def _write_one(conn, s: Submission, closed: set) -> str:
    """Store one submission inside the batch transaction: its status, or :class:`Refused`."""
    if s.survey_id in closed:
        raise Refused(409, "the survey is closed")
    t = db.submissions.c
    old = conn.execute(sa.select(t.cell, t.answers).where(t.survey_id == s.survey_id, t.key_hash == s.key_hash)).first()
    if old is not None:
        if old.cell == s.cell and old.answers == s.answers:
            return REPLAYED
        raise Refused(409, "this idempotency key was used for another submission")
    if s.token is not None and not consume_invitation(conn, s.token, s.survey_id):
        raise Refused(403, "unknown, revoked or already used invitation token")
    conn.execute(db.submissions.insert().values(survey_id=s.survey_id, key_hash=s.key_hash, cell=s.cell,
                                                answers=s.answers, day=db.now().date()))
    return STORED


def _closed(conn, survey_ids) -> set:
    c = db.surveys.c
    return {r.id for r in conn.execute(sa.select(c.id).where(c.id.in_(survey_ids), c.closed_at.is_not(None)))}


class Writer:
    """The thread that commits submissions in batches; :meth:`submit` returns a future of the status."""

    def __init__(self, engine: sa.Engine):
        self.engine = engine
        self.queue: queue.Queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="probanon-writer", daemon=True)
        self.thread.start()

    def submit(self, s: Submission) -> concurrent.futures.Future:
        future = concurrent.futures.Future()
        self.queue.put((s, future))
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
        key, the database is gone), each row again in its own transaction."""
        try:
            results = self._transaction(batch)
        except Exception:  # noqa: BLE001 - retried row by row, where each error is reported
            results = []
            for item in batch:
                try:
                    results.extend(self._transaction([item]))
                except Exception as exc:  # noqa: BLE001
                    results.append(exc if isinstance(exc, Refused) else Refused(503, "the database is unavailable; try again"))
        for (_, future), result in zip(batch, results):
            if isinstance(result, Exception):
                future.set_exception(result)
            else:
                future.set_result(result)

    def _transaction(self, batch) -> list:
        results = []
        with self.engine.begin() as conn:
            closed = _closed(conn, {s.survey_id for s, _ in batch})
            for s, _ in batch:
                try:  # a refused row has written nothing (the token update matched no row)
                    results.append(_write_one(conn, s, closed))
                except Refused as exc:
                    results.append(exc)
        return results

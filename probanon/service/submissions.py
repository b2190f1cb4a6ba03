"""Submissions: the strict check of one respondent's request, and the group-commit writer.

A submission is ``{"digest", "cell", "answers", "idempotency_key"}`` (+ ``"token"`` when the survey
takes invitations) and nothing else. What is stored: the survey, the SHA-256 of the idempotency
key, the cell, the answers and the day. The token is a blind token (issue 40.3,
:mod:`probanon.service.tokens`): ``{"nonce", "signature"}``, an RSA-PSS signature by the survey's
key over the token input of that nonce, which the collector signed blindly when the respondent
redeemed her invitation code and so cannot tie to the code. Its signature is checked here; the
SHA-256 of its nonce is stored in ``spent_tokens`` in the transaction that stores the row, so
each token is spent once, and nothing about the invitation is written with the submission.

:class:`Writer` is one thread that owns the writes: requests queue their rows, the thread commits
every row waiting in ONE transaction (SQLite: one fsync of the WAL for the whole batch) and only
then answers each request. A client is told 201 only when its row is on disk, with its receipt
(:mod:`.receipts`: the survey's Ed25519 signature of the row; 200 "already stored" carries it too).
Invitation codes
redeemed at issuance (:class:`Redemption`) go through the same thread, so they wait for no lock.
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
from .security import redeem_code
from .surveys import Refused, Survey
from .tokens import MalformedToken, TokenError, check_token, load_public_form

KEYS = {"digest", "cell", "answers", "idempotency_key", "token"}
IDEMPOTENCY = re.compile(r"[A-Za-z0-9_-]{22,64}")
MAX_BATCH = 512


@dataclass(frozen=True)
class Redemption:
    """An invitation code to redeem for the blinded message whose SHA-256 is ``blinded_hash``
    (issue 40.3): written by the :class:`Writer` like a submission, in its own batch's transaction
    (never the transaction of the row the token will later store)."""

    survey_id: int
    code: str
    blinded_hash: str
    blind_sig: bytes  # signed before the code is redeemed (only for a code that was unused then)


UNKNOWN_CODE = "unknown invitation code, or one already redeemed"


@dataclass(frozen=True)
class Submission:
    survey_id: int
    key_hash: str
    cell: int
    answers: str  # canonical JSON
    nonce_hash: str | None  # SHA-256 of the blind token's nonce (a survey with invitations)


def parse(survey: Survey, body) -> Submission:
    """The submission if every field is declared and valid, else :class:`Refused`: 422 for a
    malformed request (a token's shape or encoding included), 403 for a missing token or one
    whose signature does not verify."""
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
    token, nonce_hash = body.get("token"), None
    if survey.requires_token:
        if token is None:
            raise Refused(403, "this survey takes one token per respondent (redeem your invitation code at "
                               "/api/surveys/ID/issuance): 'token' is missing")
        try:
            nonce = check_token(issuer_key(survey), survey.digest, token)
        except MalformedToken as exc:  # a malformed request; a token that does not verify: 403
            raise Refused(422, f"malformed token: {exc}") from None
        except TokenError as exc:
            raise Refused(403, f"invalid token: {exc}") from None
        nonce_hash = hashlib.sha256(nonce).hexdigest()
    elif token is not None:
        raise Refused(422, "this survey takes no invitation token")
    try:
        answers = check_answers(survey.answers, body["answers"], survey.columns)
    except SchemaError as exc:
        raise Refused(422, str(exc)) from None
    return Submission(survey.id, hashlib.sha256(key.encode()).hexdigest(), cell,
                      json.dumps(answers, sort_keys=True, allow_nan=False), nonce_hash)


_ISSUERS: dict = {}  # key id -> the public key (parsed once)


def issuer_key(survey: Survey):
    """The public key of the survey's issuer (its description's ``"issuer"``)."""
    form = survey.description.get("issuer")
    if not isinstance(form, dict):
        raise Refused(409, "this survey has no token issuer")
    key_id = form.get("key_id")
    if key_id not in _ISSUERS:
        try:
            _ISSUERS[key_id] = load_public_form(form)
        except TokenError as exc:  # the collector's own description: a fault
            raise RuntimeError(f"survey {survey.id}'s issuer is malformed ({exc})") from None
    return _ISSUERS[key_id]


STORED, REPLAYED = "stored", "already stored"
_INSERT = db.submissions.insert()
_SPEND = db.spent_tokens.insert()


def _write(conn, items: list) -> list:
    """Store a batch of submissions and redemptions inside one transaction: per item its status,
    or the :class:`Refused` to answer."""
    closed = _closed(conn, {s.survey_id for s in items})
    results: list = [None] * len(items)
    for i, r in enumerate(items):
        if isinstance(r, Redemption):
            results[i] = Refused(409, "the survey is closed") if r.survey_id in closed else \
                redeem_code(conn, r.code, r.survey_id, r.blinded_hash, r.blind_sig) or Refused(403, UNKNOWN_CODE)
    batch = [s for s in items if isinstance(s, Submission)]
    if batch:
        for i, result in zip([i for i, s in enumerate(items) if isinstance(s, Submission)],
                             _store(conn, batch, closed)):
            results[i] = result
    return results


def _store(conn, batch: list[Submission], closed: set) -> list:
    """The submissions of a batch: per submission its status, or the :class:`Refused`
    to answer. Keys already stored and tokens already spent are read in one query each, the new
    rows and spent nonces inserted in one statement each; a refused submission writes nothing."""
    t = db.submissions.c
    stored = {(r.survey_id, r.key_hash): (r.cell, r.answers) for r in conn.execute(  # through the primary key
        sa.select(t.survey_id, t.key_hash, t.cell, t.answers).where(
            t.survey_id.in_({s.survey_id for s in batch}), t.key_hash.in_({s.key_hash for s in batch})))}
    nonces = {s.nonce_hash for s in batch if s.nonce_hash is not None}
    n = db.spent_tokens.c
    spent = {(r.survey_id, r.nonce_hash) for r in conn.execute(sa.select(n.survey_id, n.nonce_hash).where(
        n.survey_id.in_({s.survey_id for s in batch}), n.nonce_hash.in_(nonces)))} if nonces else set()
    day, rows, results, spending = db.now().date(), [], [], []
    for s in batch:
        old = stored.get((s.survey_id, s.key_hash))
        if s.survey_id in closed:
            results.append(Refused(409, "the survey is closed"))
        elif old is not None:
            results.append(REPLAYED if old == (s.cell, s.answers) else
                           Refused(409, "this idempotency key was used for another submission"))
        elif s.nonce_hash is not None and (s.survey_id, s.nonce_hash) in spent:
            results.append(Refused(403, "this token was already spent (one submission per invitation)"))
        else:
            if s.nonce_hash is not None:
                spent.add((s.survey_id, s.nonce_hash))
                spending.append({"survey_id": s.survey_id, "nonce_hash": s.nonce_hash})
            stored[(s.survey_id, s.key_hash)] = (s.cell, s.answers)
            rows.append({"survey_id": s.survey_id, "key_hash": s.key_hash, "cell": s.cell, "answers": s.answers,
                         "day": day})
            results.append(STORED)
    if rows:
        conn.execute(_INSERT, rows)
    if spending:
        conn.execute(_SPEND, spending)
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

    def submit(self, s: Submission | Redemption) -> asyncio.Future:
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

    def _transaction(self, submissions: list) -> list:
        with self.engine.begin() as conn:
            return [self._answer(conn, s, r) for s, r in zip(submissions, _write(conn, submissions))]

    def _answer(self, conn, s: Submission, result):
        """(status, the survey's receipt key or None, the submission) of a stored submission: see
        :func:`answer`; the blind signature of a redemption."""
        if isinstance(result, Refused) or isinstance(s, Redemption):
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

"""Tokens and roles.

A token is 32 random bytes from the operating system (256 bits, ``secrets.token_urlsafe``); the
database keeps only its SHA-256 (a slow hash adds nothing against a 256-bit secret). A presented
token is hashed, looked up by its hash and the stored hash compared with ``hmac.compare_digest``.

Roles are separate: an ``admin`` token publishes surveys, issues invitations and analyst tokens and
reads the audit log; an ``analyst`` token reads releases (of every survey, or of the one survey it
was issued for); a ``respondent`` token is one invitation code to one survey, redeemed once for a
blind signature (:mod:`probanon.service.tokens`). No token serves two roles, and a respondent
token is never looked up as an admin or analyst token.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

import sqlalchemy as sa

from . import db
from .surveys import Refused

ROLES = ("admin", "analyst", "respondent")
STAFF = ("admin", "analyst")  # the roles :func:`check` accepts; respondents only submit
TOKEN_BYTES = 32
MAX_TOKEN_LENGTH = 128
ID_LENGTH = 12  # a token's id: the first hex digits of its hash (in the audit log, for revocation)


class Unauthorised(Refused):
    """No token, an unknown or revoked token, or a token of another role (HTTP 401/403)."""


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def issue(conn, role: str, survey_id: int | None = None) -> str:
    """A new token of ``role`` (stored hashed); the only time it exists in plain."""
    assert role in ROLES
    token = new_token()
    conn.execute(db.tokens.insert().values(hash=token_hash(token), role=role, survey_id=survey_id, revoked=False))
    return token


def token_id(token: str) -> str:
    return token_hash(token)[:ID_LENGTH]


def bearer(header: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header (401 without one)."""
    if not header:
        raise Unauthorised(401, "this needs a token: Authorization: Bearer <token>")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_LENGTH:
        raise Unauthorised(401, "malformed Authorization header: expected 'Bearer <token>'")
    return token


def check(conn, token: str, role: str, survey_id: int | None = None) -> str:
    """Accept ``token`` for ``role`` (admin or analyst) on ``survey_id`` (an analyst token issued for
    one survey serves that survey only), or raise :class:`Unauthorised`; returns the token's id.

    Only admin and analyst tokens are looked up: a respondent's invitation, used or not, is an
    unknown token here (401 alike, nothing spent), so these endpoints tell nobody whether an
    invitation exists."""
    assert role in STAFF
    wanted = token_hash(token)
    t = db.tokens.c
    row = conn.execute(sa.select(t.hash, t.role, t.revoked, t.survey_id)
                       .where(t.hash == wanted, t.role.in_(STAFF))).first()
    if row is None or not hmac.compare_digest(row.hash, wanted) or row.revoked:
        raise Unauthorised(401, "unknown or revoked token")
    if row.role != role:
        raise Unauthorised(403, f"this needs an {role} token")
    if row.survey_id is not None and row.survey_id != survey_id:
        raise Unauthorised(403, f"this {role} token serves survey {row.survey_id} only")
    return wanted[:ID_LENGTH]


FRESH = "fresh"  # :func:`lookup_code`: an invitation code not redeemed yet


def lookup_code(conn, code: str, survey_id: int, blinded_hash: str):
    """Before signing (issue 40.3): :data:`FRESH` when ``code`` is an unused invitation of
    ``survey_id``; the blind signature stored when it was redeemed for the same blinded message (a
    lost answer asked again: answered with it, not signed again); None when it is unknown, of
    another survey, revoked, or redeemed for another blinded message (one answer for all)."""
    wanted = token_hash(code)
    t, r = db.tokens.c, db.redemptions.c
    if conn.execute(sa.select(t.hash).where(t.hash == wanted, t.role == "respondent", t.survey_id == survey_id,
                                            t.revoked.is_(False))).first() is not None:
        return FRESH
    row = conn.execute(sa.select(r.blinded_hash, r.blind_sig).where(r.survey_id == survey_id,
                                                                    r.code_hash == wanted)).first()
    if row is not None and hmac.compare_digest(row.blinded_hash, blinded_hash):
        return bytes(row.blind_sig)
    return None


def redeem_code(conn, code: str, survey_id: int, blinded_hash: str, blind_sig: bytes) -> bytes | None:
    """Redeem the invitation code of ``survey_id`` for the blinded message whose SHA-256 is
    ``blinded_hash`` and its blind signature ``blind_sig`` (inside the caller's transaction; issue
    40.3). The first time, the code is deleted and (its hash, ``blinded_hash``, ``blind_sig``)
    recorded; the same code with the same blinded message again gets the signature stored then;
    None when the code is unknown, of another survey, revoked, or redeemed for another blinded
    message (one answer for all: it tells nothing more). The signature to answer, or None."""
    wanted = token_hash(code)
    t = db.tokens.c
    done = conn.execute(db.tokens.delete().where(t.hash == wanted, t.role == "respondent",
                                                 t.survey_id == survey_id, t.revoked.is_(False)))
    if done.rowcount == 1:
        conn.execute(db.redemptions.insert().values(survey_id=survey_id, code_hash=wanted, blinded_hash=blinded_hash,
                                                    blind_sig=blind_sig))
        return blind_sig
    found = lookup_code(conn, code, survey_id, blinded_hash)
    return found if isinstance(found, bytes) else None


def revoke(conn, ident: str) -> str:
    """Revoke the admin or analyst token whose id is ``ident``; returns its role."""
    if not isinstance(ident, str) or len(ident) != ID_LENGTH or any(c not in "0123456789abcdef" for c in ident):
        raise Refused(422, f"a token id is {ID_LENGTH} lower-case hexadecimal digits")
    t = db.tokens.c
    rows = conn.execute(sa.select(t.hash, t.role).where(t.hash.startswith(ident), t.role != "respondent",
                                                        t.revoked.is_(False))).all()
    if len(rows) != 1:
        raise Refused(404, f"no active admin or analyst token with id {ident}")
    conn.execute(db.tokens.update().where(t.hash == rows[0].hash).values(revoked=True))
    return rows[0].role


ADMIN_ISSUED = "admin token issued"  # the audit action of reset_admin: its count is the admin generation


def admin_generation(conn) -> int:
    """How many admin tokens were ever issued (the audit log is append-only: it only grows)."""
    return conn.execute(sa.select(sa.func.count()).select_from(db.audit)
                        .where(db.audit.c.action == ADMIN_ISSUED)).scalar_one()


def reset_admin(conn, seen: int | None = None) -> str:
    """Revoke every admin token and issue a new one (``probanon serve --init-admin``), in the
    caller's transaction. ``seen``: the :func:`admin_generation` read when the run began; if another
    run issued an admin token since (two runs at once), this one is refused (409) and changes
    nothing, so exactly one of them prints a valid token."""
    if conn.dialect.name == "postgresql":  # runs at once take turns here (SQLite: the UPDATE's write lock)
        conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7216)")
    conn.execute(db.tokens.update().where(db.tokens.c.role == "admin").values(revoked=True))
    if seen is not None and admin_generation(conn) != seen:
        raise Refused(409, "another --init-admin issued an admin token while this one ran: that token is the "
                           "valid one (run --init-admin again to replace it)")
    token = issue(conn, "admin")
    db.log_action(conn, "admin", ADMIN_ISSUED, note="every earlier admin token revoked", actor=token_id(token))
    return token

"""Tokens and roles.

A token is 32 random bytes from the operating system (256 bits, ``secrets.token_urlsafe``); the
database keeps only its SHA-256 (a slow hash adds nothing against a 256-bit secret). A presented
token is hashed, looked up by its hash and the stored hash compared with ``hmac.compare_digest``.

Roles are separate: an ``admin`` token publishes surveys, issues invitations and analyst tokens and
reads the audit log; an ``analyst`` token reads releases; a ``respondent`` token is one invitation
to one survey, used once. No token serves two roles.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

import sqlalchemy as sa

from . import db
from .surveys import Refused

ROLES = ("admin", "analyst", "respondent")
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


def check(conn, token: str, role: str) -> str:
    """Accept ``token`` for ``role`` (admin or analyst), or raise :class:`Unauthorised`; returns the
    token's id."""
    wanted = token_hash(token)
    row = conn.execute(sa.select(db.tokens.c.hash, db.tokens.c.role, db.tokens.c.revoked)
                       .where(db.tokens.c.hash == wanted)).first()
    if row is None or not hmac.compare_digest(row.hash, wanted) or row.revoked:
        raise Unauthorised(401, "unknown or revoked token")
    if row.role != role:
        raise Unauthorised(403, f"this needs an {role} token")
    return wanted[:ID_LENGTH]


def consume_invitation(conn, token: str, survey_id: int) -> bool:
    """Delete the respondent token of ``survey_id`` (inside the caller's transaction): used once,
    it leaves no row behind; False when it is unknown, of another survey, revoked or already used."""
    t = db.tokens.c
    done = conn.execute(db.tokens.delete().where(t.hash == token_hash(token), t.role == "respondent",
                                                 t.survey_id == survey_id, t.revoked.is_(False)))
    return done.rowcount == 1


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


def reset_admin(conn) -> str:
    """Revoke every admin token and issue a new one (``probanon serve --init-admin``)."""
    conn.execute(db.tokens.update().where(db.tokens.c.role == "admin").values(revoked=True))
    token = issue(conn, "admin")
    db.log_action(conn, "admin", "admin token issued", note="every earlier admin token revoked",
                  actor=token_id(token))
    return token

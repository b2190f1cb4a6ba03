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

ROLES = ("admin", "analyst", "respondent")
TOKEN_BYTES = 32
MAX_TOKEN_LENGTH = 128


class Unauthorised(Exception):
    """No token, an unknown or revoked token, or a token of another role (HTTP 401/403)."""

    def __init__(self, status: int, detail: str):
        self.status = status
        super().__init__(detail)


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def issue(conn, role: str, survey_id: int | None = None) -> str:
    """A new token of ``role`` (stored hashed); the only time it exists in plain."""
    assert role in ROLES
    token = new_token()
    conn.execute(db.tokens.insert().values(hash=token_hash(token), role=role, survey_id=survey_id,
                                           used=False, revoked=False))
    return token


def bearer(header: str | None) -> str:
    """The token of an ``Authorization: Bearer <token>`` header (401 without one)."""
    if not header:
        raise Unauthorised(401, "this needs a token: Authorization: Bearer <token>")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token or len(token) > MAX_TOKEN_LENGTH:
        raise Unauthorised(401, "malformed Authorization header: expected 'Bearer <token>'")
    return token


def check(conn, token: str, role: str) -> None:
    """Accept ``token`` for ``role`` (admin or analyst), or raise :class:`Unauthorised`."""
    wanted = token_hash(token)
    row = conn.execute(sa.select(db.tokens.c.hash, db.tokens.c.role, db.tokens.c.revoked)
                       .where(db.tokens.c.hash == wanted)).first()
    if row is None or not hmac.compare_digest(row.hash, wanted) or row.revoked:
        raise Unauthorised(401, "unknown or revoked token")
    if row.role != role:
        raise Unauthorised(403, f"this needs an {role} token")


def consume_invitation(conn, token: str, survey_id: int) -> bool:
    """Mark the respondent token of ``survey_id`` as used (inside the caller's transaction);
    False when it is unknown, of another survey, revoked or already used."""
    wanted = token_hash(token)
    t = db.tokens.c
    done = conn.execute(db.tokens.update()
                        .where(t.hash == wanted, t.role == "respondent", t.survey_id == survey_id,
                               t.used.is_(False), t.revoked.is_(False))
                        .values(used=True))
    return done.rowcount == 1


def reset_admin(conn) -> str:
    """Revoke every admin token and issue a new one (``probanon serve --init-admin``)."""
    conn.execute(db.tokens.update().where(db.tokens.c.role == "admin").values(revoked=True))
    token = issue(conn, "admin")
    db.log_action(conn, "admin", "admin token issued", note="every earlier admin token revoked")
    return token

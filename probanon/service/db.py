"""The collector's database: eleven tables in SQLAlchemy 2 Core, SQLite (default) or PostgreSQL.

``surveys``      one row per published survey; the specification bytes, their canonical form,
                 the digest and the answer schema never change (a trigger refuses it: only
                 ``closed_at`` may be set, once, by an administrator closing the survey early).
``tokens``       SHA-256 of every token (admin, analyst, respondent invitation code); never the
                 token. An invitation code is deleted when it is redeemed for a blind signature;
                 the codes left unused are deleted by the close rewrite (:mod:`.closing`: with a
                 list of who got which letter, they would name who did not take part).
``issuer_keys``  each survey's RSA blind-signing key (issue 40.3; the private key never leaves it).
``redemptions``  (survey, SHA-256 of a redeemed code, SHA-256 of the blinded message it was signed
                 for, the blind signature answered): a lost answer asked again is answered with the
                 stored signature, never signed again (no CPU lever for a replaying invitee); the
                 blinded message and its blind signature are unlinkable to the token they become
                 (RFC 9474 blindness: the signature is the blinded message's RSA root, as blind as it).
                 Deleted by the close rewrite (the counts kept in ``invitation_counts``).
``spent_tokens`` (survey, SHA-256 of a token's nonce): each token is spent once; written in the
                 transaction that stores its submission. Nothing in it derives from the code. A
                 trigger refuses UPDATE and DELETE (a nonce freed again would admit its token twice).
``submissions``  (survey, SHA-256 of the idempotency key, cell, answers as JSON, day). No client
                 address, no user agent, no time of day, no token. On SQLite the table has no
                 rowid: keyed by the random key hash (its pages still fill in the order of arrival
                 until the close rewrite, :mod:`.closing`). A stored submission is never changed or
                 deleted (a trigger refuses UPDATE and DELETE).
``invitation_batches``  the number of invitations each request issued (issue 40.1: never more in
                 all than the frame declared at publication); nothing that names a token.
``invitation_counts``  (survey, invitations issued, codes redeemed), written by the close rewrite
                 (:mod:`.closing`) when it drops the survey's unused codes and its redemptions:
                 the release report's access section reads them from here after the close.
``releases``     each release as computed once (issue 40.2): a declared interim release or the final
                 one, the responses per cell it counted, its report and its records in each format
                 in one random order, served byte for byte; a trigger refuses UPDATE and DELETE.
``receipt_keys`` each survey's Ed25519 receipt key (issue 40.10: :mod:`.receipts`), made at publication.
``audit``        append-only log of administrative actions, each with the acting token's id
                 (the first 12 hex digits of its hash); a trigger refuses UPDATE and DELETE.

On PostgreSQL a statement trigger also refuses TRUNCATE of these five tables (row triggers do not
see it). The triggers bind whoever writes through SQL, the collector included; the database's owner
can still drop them, as they can drop the tables: what they add is that no bug of the collector and
no SQL injection can rewrite the record, and that rewriting it takes a deliberate act of the owner.

A submission's transaction writes its row and its token's spent nonce; an invitation code is
redeemed in an earlier, separate transaction, and nothing it writes can be computed from the token
(RFC 9474 blindness). Whoever reads the database files or the server's transaction metadata
(PostgreSQL's transaction ids, SQLite's WAL before a checkpoint) sees only the order and time of
the two: when one respondent's redemption and submission are consecutive commits, that order still
pairs them (the close-time rewrite destroys the working files).

Storage keeps the order of arrival while a survey is open (SQLite's WAL and page allocation,
PostgreSQL's heap): at the close, :mod:`.closing` stores the tables of :data:`ORDER_REVEALING` again
in a random order and destroys the working files.

SQLite runs in WAL mode with ``synchronous=FULL``: a commit is on disk when it returns.
"""

from __future__ import annotations

import datetime as dt

import sqlalchemy as sa
from sqlalchemy import event

from ..errors import ParameterError

metadata = sa.MetaData()

surveys = sa.Table(
    "surveys", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("title", sa.String(200), nullable=False),
    sa.Column("spec_text", sa.LargeBinary, nullable=False),       # as uploaded, served byte for byte
    sa.Column("spec_canonical", sa.LargeBinary, nullable=False),  # SHA-256 of these bytes: the specification's digest
    sa.Column("digest", sa.String(71), nullable=False, unique=True),  # the survey document's (the letters')
    sa.Column("description", sa.Text, nullable=False),            # the survey document, canonical JSON (ASCII)
    sa.Column("requires_token", sa.Boolean, nullable=False),
    sa.Column("opens_at", sa.DateTime, nullable=False),           # UTC
    sa.Column("closes_at", sa.DateTime, nullable=False),
    sa.Column("closed_at", sa.DateTime, nullable=True),           # closed early by an administrator
)

tokens = sa.Table(
    "tokens", metadata,
    sa.Column("hash", sa.String(64), primary_key=True),
    sa.Column("role", sa.String(16), nullable=False),  # admin | analyst | respondent
    sa.Column("survey_id", sa.Integer, sa.ForeignKey("surveys.id"), nullable=True),
    sa.Column("revoked", sa.Boolean, nullable=False, default=False),
)

submissions = sa.Table(
    "submissions", metadata,
    sa.Column("survey_id", sa.Integer, sa.ForeignKey("surveys.id"), primary_key=True),
    sa.Column("key_hash", sa.String(64), primary_key=True),
    sa.Column("cell", sa.Integer, nullable=False),
    sa.Column("answers", sa.Text, nullable=False),
    sa.Column("day", sa.Date, nullable=False),
    sqlite_with_rowid=False,
)

issuer_keys = sa.Table(
    "issuer_keys", metadata,                                       # issue 40.3: one blind-signing key per survey
    sa.Column("survey_id", sa.Integer, sa.ForeignKey("surveys.id"), primary_key=True),
    sa.Column("private_key", sa.LargeBinary, nullable=False),      # PKCS #8 DER; never served
    sa.Column("public_key", sa.LargeBinary, nullable=False),       # SubjectPublicKeyInfo DER (served in the description)
)

redemptions = sa.Table(
    "redemptions", metadata,                                       # invitation codes redeemed at issuance
    sa.Column("survey_id", sa.Integer, sa.ForeignKey("surveys.id"), primary_key=True),
    sa.Column("code_hash", sa.String(64), primary_key=True),       # SHA-256 of the code
    sa.Column("blinded_hash", sa.String(64), nullable=False),      # SHA-256 of the blinded message it was signed for
    sa.Column("blind_sig", sa.LargeBinary, nullable=False),        # the blind signature answered (a retry gets it)
    sqlite_with_rowid=False,
)

spent_tokens = sa.Table(
    "spent_tokens", metadata,                                      # SHA-256 of each spent token nonce
    sa.Column("survey_id", sa.Integer, sa.ForeignKey("surveys.id"), primary_key=True),
    sa.Column("nonce_hash", sa.String(64), primary_key=True),
    sqlite_with_rowid=False,
)

invitation_batches = sa.Table(
    "invitation_batches", metadata,                                # how many invitations each request issued
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("survey_id", sa.Integer, sa.ForeignKey("surveys.id"), nullable=False),
    sa.Column("count", sa.Integer, nullable=False),
)

releases = sa.Table(
    "releases", metadata,
    sa.Column("survey_id", sa.Integer, sa.ForeignKey("surveys.id"), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True),                 # 0, 1, ...: declared interims, then the final
    sa.Column("final", sa.Boolean, nullable=False),
    sa.Column("at", sa.DateTime, nullable=False),
    sa.Column("counts", sa.Text, nullable=False),                   # JSON: responses per cell at that moment
    sa.Column("report", sa.LargeBinary, nullable=False),            # JSON, served byte for byte
    sa.Column("csv", sa.LargeBinary, nullable=False),               # the records, one encoding each, in one order
    sa.Column("parquet", sa.LargeBinary, nullable=False),
    sa.Column("json", sa.LargeBinary, nullable=False),
)

audit = sa.Table(
    "audit", metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("at", sa.DateTime, nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("actor", sa.String(12), nullable=True),  # the acting token's id
    sa.Column("action", sa.String(64), nullable=False),
    sa.Column("survey_id", sa.Integer, nullable=True),
    sa.Column("note", sa.Text, nullable=True),
)

invitation_counts = sa.Table(
    "invitation_counts", metadata,                                 # written by the close rewrite (.closing)
    sa.Column("survey_id", sa.Integer, sa.ForeignKey("surveys.id"), primary_key=True),
    sa.Column("issued", sa.Integer, nullable=False),                # invitations issued
    sa.Column("used", sa.Integer, nullable=False),                  # codes redeemed
)

receipt_keys = sa.Table(
    "receipt_keys", metadata,                                      # issue 40.10: each survey's Ed25519 key
    sa.Column("survey_id", sa.Integer, sa.ForeignKey("surveys.id"), primary_key=True),
    sa.Column("private", sa.LargeBinary, nullable=False),           # raw 32 bytes; the public key is in the description
)

#: tables whose storage order could tell the order in which respondents arrived: the close rewrite
#: (:mod:`.closing`) stores their rows again in a random order (one more name here for a table added
#: later that grows with the submissions)
ORDER_REVEALING = ("submissions", "redemptions", "spent_tokens")

#: tables from which the close rewrite deletes a closed survey's rows (its unused invitation codes,
#: its redemptions), after recording their counts in ``invitation_counts``
DROPPED_AT_CLOSE = ("tokens", "redemptions")

_STORED = "a stored submission is never changed or deleted"
_RELEASED = "a release is computed once and never changed"
_SPENT = "a spent token stays spent"
_IMMUTABLE = "title, spec_text, spec_canonical, digest, description, requires_token, opens_at, closes_at"

_SQLITE_TRIGGERS = [
    "CREATE TRIGGER IF NOT EXISTS audit_append_only_u BEFORE UPDATE ON audit "
    "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END",
    "CREATE TRIGGER IF NOT EXISTS audit_append_only_d BEFORE DELETE ON audit "
    "BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END",
    f"CREATE TRIGGER IF NOT EXISTS surveys_immutable BEFORE UPDATE OF {_IMMUTABLE}, id ON surveys "
    "BEGIN SELECT RAISE(ABORT, 'a published survey is immutable'); END",
    "CREATE TRIGGER IF NOT EXISTS surveys_no_delete BEFORE DELETE ON surveys "
    "BEGIN SELECT RAISE(ABORT, 'a published survey is immutable'); END",
    "CREATE TRIGGER IF NOT EXISTS surveys_stay_closed BEFORE UPDATE OF closed_at ON surveys "
    "WHEN OLD.closed_at IS NOT NULL BEGIN SELECT RAISE(ABORT, 'a closed survey stays closed'); END",
    f"CREATE TRIGGER IF NOT EXISTS submissions_append_only_u BEFORE UPDATE ON submissions "
    f"BEGIN SELECT RAISE(ABORT, '{_STORED}'); END",
    f"CREATE TRIGGER IF NOT EXISTS submissions_append_only_d BEFORE DELETE ON submissions "
    f"BEGIN SELECT RAISE(ABORT, '{_STORED}'); END",
    f"CREATE TRIGGER IF NOT EXISTS releases_append_only_u BEFORE UPDATE ON releases "
    f"BEGIN SELECT RAISE(ABORT, '{_RELEASED}'); END",
    f"CREATE TRIGGER IF NOT EXISTS releases_append_only_d BEFORE DELETE ON releases "
    f"BEGIN SELECT RAISE(ABORT, '{_RELEASED}'); END",
    f"CREATE TRIGGER IF NOT EXISTS spent_tokens_append_only_u BEFORE UPDATE ON spent_tokens "
    f"BEGIN SELECT RAISE(ABORT, '{_SPENT}'); END",
    f"CREATE TRIGGER IF NOT EXISTS spent_tokens_append_only_d BEFORE DELETE ON spent_tokens "
    f"BEGIN SELECT RAISE(ABORT, '{_SPENT}'); END",
]

_POSTGRES_TRIGGERS = [
    """CREATE OR REPLACE FUNCTION probanon_refuse() RETURNS trigger AS $$
       BEGIN RAISE EXCEPTION USING MESSAGE = TG_ARGV[0]; END; $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS audit_append_only ON audit",
    "CREATE TRIGGER audit_append_only BEFORE UPDATE OR DELETE ON audit "
    "FOR EACH ROW EXECUTE FUNCTION probanon_refuse('the audit log is append-only')",
    "DROP TRIGGER IF EXISTS surveys_immutable ON surveys",
    f"CREATE TRIGGER surveys_immutable BEFORE UPDATE OF {_IMMUTABLE}, id OR DELETE ON surveys "
    "FOR EACH ROW EXECUTE FUNCTION probanon_refuse('a published survey is immutable')",
    "DROP TRIGGER IF EXISTS surveys_stay_closed ON surveys",
    "CREATE TRIGGER surveys_stay_closed BEFORE UPDATE OF closed_at ON surveys FOR EACH ROW "
    "WHEN (OLD.closed_at IS NOT NULL) EXECUTE FUNCTION probanon_refuse('a closed survey stays closed')",
    "DROP TRIGGER IF EXISTS submissions_append_only ON submissions",
    "CREATE TRIGGER submissions_append_only BEFORE UPDATE OR DELETE ON submissions "
    f"FOR EACH ROW EXECUTE FUNCTION probanon_refuse('{_STORED}')",
    "DROP TRIGGER IF EXISTS releases_append_only ON releases",
    "CREATE TRIGGER releases_append_only BEFORE UPDATE OR DELETE ON releases "
    f"FOR EACH ROW EXECUTE FUNCTION probanon_refuse('{_RELEASED}')",
    "DROP TRIGGER IF EXISTS spent_tokens_append_only ON spent_tokens",
    "CREATE TRIGGER spent_tokens_append_only BEFORE UPDATE OR DELETE ON spent_tokens "
    f"FOR EACH ROW EXECUTE FUNCTION probanon_refuse('{_SPENT}')",
    *(statement for table, message in (("audit", "the audit log is append-only"),
                                       ("surveys", "a published survey is immutable"),
                                       ("submissions", _STORED), ("releases", _RELEASED),
                                       ("spent_tokens", _SPENT))
      for statement in (f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}",
                        f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                        f"FOR EACH STATEMENT EXECUTE FUNCTION probanon_refuse('{message}')")),
]


def _sqlite_pragmas(dbapi_connection, _record) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=FULL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=10000")
    cursor.execute("PRAGMA secure_delete=ON")  # a used invitation's bytes are overwritten
    cursor.close()


def normalise_url(url: str) -> str:
    """A database URL for SQLAlchemy: a plain path is a SQLite file; ``postgresql://`` uses psycopg 3."""
    if not isinstance(url, str) or not url.strip():
        raise ParameterError("--database: give a SQLite file path or a database URL")
    url = url.strip()
    if "://" not in url:
        return "sqlite:///" + url
    if url.startswith("postgresql://") or url.startswith("postgres://"):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


def _same_file(engine: sa.Engine) -> None:
    """A pooled SQLite connection is used again only while the path still names the file it opened:
    after the close rewrite (:mod:`.closing`) swapped in a new file, it is discarded and a new one
    opened on the new file (by this engine or any other engine on the same path)."""
    import os

    path = engine.url.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return

    def inode():
        try:
            st = os.stat(path)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    @event.listens_for(engine, "connect")
    def opened(_dbapi_connection, record):
        record.info["probanon_file"] = inode()

    @event.listens_for(engine, "checkout")
    def checkout(_dbapi_connection, record, _proxy):
        if record.info.get("probanon_file") != inode():
            raise sa.exc.DisconnectionError("the database file was replaced")


def connect(url: str) -> sa.Engine:
    """An engine on ``url`` with the schema created (idempotent) and the triggers in place."""
    url = normalise_url(url)
    try:
        engine = sa.create_engine(url, pool_pre_ping=True, hide_parameters=True)  # no values in error logs
    except (sa.exc.ArgumentError, ImportError, sa.exc.NoSuchModuleError) as exc:
        raise ParameterError(f"--database: cannot use {url.split('://', 1)[0]!r} ({str(exc).splitlines()[0]})") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
        _same_file(engine)
    elif engine.dialect.name != "postgresql":
        raise ParameterError(f"--database: SQLite or PostgreSQL, not {engine.dialect.name}")
    try:
        with engine.begin() as conn:
            if engine.dialect.name == "postgresql":  # servers starting together create the schema in turn
                conn.exec_driver_sql("SELECT pg_advisory_xact_lock(7215)")
            metadata.create_all(conn)
            for ddl in _SQLITE_TRIGGERS if engine.dialect.name == "sqlite" else _POSTGRES_TRIGGERS:
                conn.exec_driver_sql(ddl)
    except sa.exc.OperationalError as exc:
        raise ParameterError(f"--database: cannot open the database ({str(exc.orig).splitlines()[0]})") from None
    return engine


def scratch_postgres(url: str, prefix: str = "probanon_scratch_"):
    """(URL of a new empty database beside ``url``'s, a function that drops it): for trials, tests and
    benchmarks; the role of ``url`` needs CREATEDB."""
    import uuid

    import psycopg

    base = url.replace("postgresql+psycopg://", "postgresql://")
    name = prefix + uuid.uuid4().hex[:12]
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")

    def drop():
        import time

        for attempt in range(20):  # FORCE may meet a backend of another role (an autovacuum worker, a
            try:                   # superuser's session): it is gone a moment later
                with psycopg.connect(base, autocommit=True) as conn:
                    conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
                return
            except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ObjectInUse):
                if attempt == 19:
                    raise
                time.sleep(0.5)

    return base.rsplit("/", 1)[0] + "/" + name, drop


def now() -> dt.datetime:
    """The current UTC time, naive (as stored)."""
    return dt.datetime.now(dt.timezone.utc).replace(tzinfo=None, microsecond=0)


def log_action(conn, role: str, action: str, survey_id: int | None = None, note: str | None = None,
               actor: str | None = None) -> None:
    """Append one entry to the audit log (inside the caller's transaction)."""
    conn.execute(audit.insert().values(at=now(), role=role, actor=actor, action=action, survey_id=survey_id,
                                       note=note))

"""Publishing a survey: an immutable task made of a verified specification, the schema of the
answers, an open/close window and a release rule.

The specification must pass :func:`probanon.survey.spec.verify` (digest intact, every cell's
failure recomputed by Algorithm A <= the stated risk) and use a function the respondent page can
apply (ordered balls or a power diagram). Its bytes are stored as uploaded and served byte for
byte; so is its canonical form, whose SHA-256 is the specification's digest. Everything the
respondent is asked (that digest, the answer schema, the title, the window, the release rule, the
frame, open or by invitation, the page's files) makes the survey document
(:mod:`probanon.service.document`), stored in the ``description`` column as its canonical bytes;
the document's SHA-256 is THE digest of the survey. A specification is published once.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import sqlalchemy as sa

from ..errors import SpecificationError
from ..survey.spec import GuaranteeError, canonical_bytes, verify
from . import db, document as documents
from .answers import Field, SchemaError, parse_field, parse_questions, parse_schema

KINDS = ("ordered-balls", "power-diagram", "decision-tree")  # what the respondent page applies
SMALL_CELLS = ("suppress", "flag")
RELEASE_COLUMNS = ("cell", "below_k")  # written by the release (export.release) beside the keys and the answers
CREATE_KEYS = {"title", "spec", "answers", "opens", "closes", "requires_token", "open", "frame", "release", "questions"}


class Refused(Exception):
    """A request the service refuses: HTTP ``status`` and a one-line ``detail``."""

    def __init__(self, status: int, detail: str):
        self.status = status
        super().__init__(detail)


class DuplicateKey(ValueError):
    """A JSON object names a key twice (parsers disagree on which value counts: refused)."""


def unique_keys(pairs: list) -> dict:
    """``object_pairs_hook`` of :func:`json.loads`: the object, or :class:`DuplicateKey`."""
    out = dict(pairs)
    if len(out) != len(pairs):
        raise DuplicateKey("an object names a key twice")
    return out


def _time(value, what: str) -> dt.datetime:
    """An ISO 8601 time with its zone, as naive UTC."""
    try:
        t = dt.datetime.fromisoformat(value) if isinstance(value, str) and len(value) <= 40 else None
    except ValueError:
        t = None
    if t is None or t.tzinfo is None:
        raise Refused(422, f"{what!r} must be an ISO 8601 time with its zone, e.g. 2027-01-31T23:59:59Z")
    return t.astimezone(dt.timezone.utc).replace(tzinfo=None)


def iso(t: dt.datetime | None) -> str | None:
    return None if t is None else t.replace(microsecond=0).isoformat() + "Z"


def parse_creation(body, keys=None) -> dict:
    """The row of a new survey from the administrator's request, or :class:`Refused`. The row's
    ``description`` is the survey document's canonical text and its ``digest`` the document's.
    ``keys(requires_token) -> (issuer, receipt_key)``: makes the survey's keys once the request is
    valid and returns their public forms, written into the document (the blind-token issuer of a
    survey with invitations or None, :mod:`.tokens`; the receipt key, :mod:`.receipts`)."""
    if not isinstance(body, dict):
        raise Refused(422, "the request must be a JSON object")
    unknown = set(body) - CREATE_KEYS
    if unknown:
        raise Refused(422, f"unknown field {sorted(unknown)[0]!r}")
    for key in ("title", "spec", "answers", "opens", "closes"):
        if key not in body:
            raise Refused(422, f"missing field {key!r}")
    title = body["title"]
    if not isinstance(title, str) or not 1 <= len(title.strip()) <= 200:
        raise Refused(422, "'title' must be a non-empty string of at most 200 characters")
    text = body["spec"]
    if not isinstance(text, str):
        raise Refused(422, "'spec' must be the text of the specification file")
    try:
        spec = json.loads(text, object_pairs_hook=unique_keys)
        if not isinstance(spec, dict):
            raise SpecificationError("the specification is not a JSON object")
        verified = verify(spec)
    except GuaranteeError as exc:
        raise Refused(422, f"the specification fails verification: {exc}") from None
    except (SpecificationError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise Refused(422, f"the specification cannot be checked: {str(exc).splitlines()[0]}") from None
    function = verified.function
    if function.kind not in KINDS:
        raise Refused(422, f"the respondent page applies {' or '.join(KINDS)} functions, not {function.kind!r}")
    if not function.columns:
        raise Refused(422, "the specification's function must name its quasi-identifier columns")
    columns = list(function.columns)
    try:
        answers = parse_schema(body["answers"], columns, RELEASE_COLUMNS)
        questions = parse_questions(body.get("questions"), columns)
    except SchemaError as exc:
        raise Refused(422, str(exc)) from None
    opens, closes = (_time(body[k], k).replace(microsecond=0) for k in ("opens", "closes"))  # as the document says
    if closes <= opens:
        raise Refused(422, "'closes' must come after 'opens'")
    requires_token, frame = access(body, int(spec["guarantee"]["records"]))
    release = parse_release(body.get("release", {}), opens, closes)
    issuer, receipt_key = (None, None) if keys is None else keys(requires_token)
    document = documents.build(title=title.strip(), spec_digest=verified.digest, answers=[f.to_dict() for f in answers],
                               questions=questions, opens=iso(opens), closes=iso(closes), release=release,
                               frame=frame, open_survey=not requires_token, issuer=issuer, receipt_key=receipt_key)
    data = documents.canonical(document)
    return dict(title=title.strip(), spec_text=text.encode("utf-8"), spec_canonical=canonical_bytes(spec),
                digest=documents.digest_of(data), description=data.decode("ascii"),
                requires_token=requires_token, opens_at=opens, closes_at=closes, closed_at=None)


OPEN_NOTE = ("this survey is open to anyone, without invitations: it is not protected against ballot stuffing "
             "(whoever knows a person's keys can fill her cell with answers of their own)")


def access(body: dict, records: int) -> tuple[bool, int]:
    """(whether submissions need an invitation, the frame size) of a new survey (issue 40.1).
    Invitations are the default; a survey without them is published with ``"open": true``
    (``requires_token: false`` alone is refused). ``frame``: the number of people the office
    may invite, at most (default and upper bound: the design's population, the specification's
    ``records``: the design is about those people); invitations never exceed it."""
    is_open = body.get("open", False)
    requires = body.get("requires_token", not is_open)
    if not isinstance(is_open, bool) or not isinstance(requires, bool):
        raise Refused(422, "'open' and 'requires_token' must be true or false")
    if requires == is_open:
        raise Refused(422, "a survey without invitations must be published with \"open\": true (it is then not "
                           "protected against ballot stuffing); an open survey takes no invitations")
    frame = body.get("frame", records)
    if isinstance(frame, bool) or not isinstance(frame, int) or not 1 <= frame <= records:
        raise Refused(422, f"'frame' is the number of people the office may invite: an integer from 1 to the "
                           f"design's population ({records} records)")
    return requires, frame


#: interim releases a survey may declare at the most
MAX_INTERIM = 12


def parse_release(release, opens: dt.datetime, closes: dt.datetime) -> dict:
    """The release rule of a new survey: ``small_cells`` (a cell ending with 0 < K < k
    responses: "suppress", the default, or "flag") and ``interim``, the times of the releases
    allowed before the close (issue 40.2: none by default), increasing, inside the window; or
    :class:`Refused`."""
    shape = ("'release' is {\"small_cells\": \"suppress\" | \"flag\", \"interim\": [times of the releases "
             "allowed before the close]}")
    if not isinstance(release, dict) or set(release) - {"small_cells", "interim"}:
        raise Refused(422, shape)
    small = release.get("small_cells", "suppress")
    interim = release.get("interim", [])
    if small not in SMALL_CELLS or not isinstance(interim, list):
        raise Refused(422, shape)
    if len(interim) > MAX_INTERIM:
        raise Refused(422, f"at most {MAX_INTERIM} interim releases")
    times = [_time(t, "interim") for t in interim]
    if any(b <= a for a, b in zip(times, times[1:])) or any(not opens < t < closes for t in times):
        raise Refused(422, "the interim release times must increase and lie between 'opens' and 'closes'")
    return {"small_cells": small, "interim": [iso(t) for t in times]}


@dataclass
class Survey:
    """A published survey as read from the database (specification parsed on first use)."""

    id: int
    title: str
    digest: str
    spec_canonical: bytes
    description: dict
    requires_token: bool
    opens_at: dt.datetime
    closes_at: dt.datetime
    closed_at: dt.datetime | None
    document: bytes | None = None  # the survey document, byte for byte (None: published before issue 40.4)

    @classmethod
    def from_row(cls, row) -> "Survey":
        description = json.loads(row.description)
        document = row.description.encode("ascii") if documents.KEY in description else None
        return cls(id=row.id, title=row.title, digest=row.digest, spec_canonical=bytes(row.spec_canonical),
                   description=description, requires_token=row.requires_token,
                   opens_at=row.opens_at, closes_at=row.closes_at, closed_at=row.closed_at, document=document)

    @cached_property
    def spec(self) -> dict:
        return json.loads(self.spec_canonical)

    @cached_property
    def answers(self) -> tuple[Field, ...]:
        return tuple(parse_field(f) for f in self.description["answers"])

    @property
    def k(self) -> int:
        return int(self.spec["guarantee"]["k"])

    @property
    def n_cells(self) -> int:
        return len(self.spec["cells"])

    @property
    def columns(self) -> list[str]:
        return list(self.spec["function"]["columns"])

    @cached_property
    def centroids(self) -> np.ndarray:
        function = self.spec["function"]  # categorical keys (a tree design's): released as categories
        return np.asarray(function["centroids"], dtype=object if "encoding" in function else np.float64)

    @property
    def frame(self) -> int:
        """The frame declared at publication (surveys published before issue 40.1: the design's
        population)."""
        return int(self.description.get("frame", self.spec["guarantee"]["records"]))

    @property
    def interim(self) -> list[dt.datetime]:
        """The declared times of the interim releases (UTC, naive)."""
        return [_time(t, "interim") for t in self.description["release"].get("interim", [])]

    def status(self, at: dt.datetime | None = None) -> str:
        at = at or db.now()
        if self.closed_at is not None or at >= self.closes_at:
            return "closed"
        return "open" if at >= self.opens_at else "scheduled"

    def public(self) -> dict:
        """What anybody may read about the survey."""
        return {"id": self.id, "title": self.title, "digest": self.digest, "opens": iso(self.opens_at),
                "closes": iso(self.closes_at if self.closed_at is None else min(self.closes_at, self.closed_at)),
                "status": self.status(), "requires_token": self.requires_token, "open": not self.requires_token,
                **({"note": OPEN_NOTE} if not self.requires_token else {}), "k": self.k,
                "cells": self.n_cells,
                **{k: self.description[k] for k in ("questions", "answers", "release", "frame", "issuer", "receipt_key")
                   if k in self.description}}


_COLUMNS = [db.surveys.c[name] for name in ("id", "title", "digest", "spec_canonical", "description",
                                            "requires_token", "opens_at", "closes_at", "closed_at")]


def load(conn, survey_id: int) -> Survey:
    row = conn.execute(sa.select(*_COLUMNS).where(db.surveys.c.id == survey_id)).first()
    if row is None:
        raise Refused(404, f"no survey {survey_id}")
    return Survey.from_row(row)


def invitations_issued(conn, survey_id: int) -> int:
    """Invitations issued for the survey so far."""
    t = db.invitation_batches.c
    return int(conn.execute(sa.select(sa.func.coalesce(sa.func.sum(t.count), 0)).where(t.survey_id == survey_id))
               .scalar_one())


def reserve_invitations(conn, survey: Survey, count: int) -> None:
    """Record a batch of ``count`` invitations, or :class:`Refused` 409 when the survey's frame
    would be exceeded (inside the caller's transaction; concurrent requests are serialised: a row
    lock on the survey on PostgreSQL, the write lock taken by the insert on SQLite)."""
    if conn.dialect.name == "postgresql":
        conn.execute(sa.select(db.surveys.c.id).where(db.surveys.c.id == survey.id).with_for_update())
    conn.execute(db.invitation_batches.insert().values(survey_id=survey.id, count=count))
    issued = invitations_issued(conn, survey.id)
    if issued > survey.frame:
        raise Refused(409, f"the frame declared at publication is {survey.frame} people: {issued - count} "
                           f"invitations issued, {max(survey.frame - issued + count, 0)} more at the most")

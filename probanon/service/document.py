"""The survey document (issue 40.4): everything a respondent is asked, in one canonical JSON
document whose SHA-256 is THE digest of the survey (the one printed in the invitation letters, the
``digest`` of the survey's description and of every submission).

The document is made once, at publication, and served byte for byte
(``GET /api/surveys/ID/document``). It holds::

    probanon_survey_document  1 (the version of this layout)
    title                     the survey's title
    specification             {"digest": the specification's own digest}: the SHA-256 of its
                              canonical bytes (served at /api/surveys/ID/spec/canonical), so the
                              function and the guarantee are committed to through it
    answers                   the answer schema: name, type, bounds, categories, required, label
    questions                 the labels and units of the quasi-identifiers
    opens, closes             the window (ISO 8601, UTC, to the second)
    release                   {"small_cells", "interim": [times of the interim releases]}
    frame                     how many people may be invited, at most
    open                      true: no invitations (not protected against ballot stuffing)
    issuer                    the blind-token issuer's public form, or null
    receipt_key               the public key that signs respondents' receipts, or null
    page                      {file name: "sha256:HEX"} of every file of the respondent page
                              (probanon/service/static/, served at /static/NAME; respond.html
                              also at /respond/ID), as the collector's package held them at
                              publication

Its canonical bytes are ``json.dumps(document, sort_keys=True, separators=(",", ":"),
ensure_ascii=True, allow_nan=False)``: ASCII, so the bytes are the same wherever they are stored.
The page and ``probanon survey respond`` hash the bytes served, compare the digest with the
letter's, and check that the survey's description says nothing else than the document. This
module is standard library only (the respondent's client imports it).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ..errors import SpecificationError

VERSION = 1
KEY = "probanon_survey_document"
STATIC = Path(__file__).with_name("static")
#: the fields of the description (GET /api/surveys/ID) that must say what the document says
AGREED = ("title", "answers", "questions", "opens", "release", "frame", "open", "issuer", "receipt_key")


def page_files(directory: Path = STATIC) -> dict[str, str]:
    """``{file name: "sha256:HEX"}`` of every file of the respondent page (sorted by name)."""
    return {p.name: "sha256:" + hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(directory.iterdir()) if p.is_file() and not p.name.startswith(".")}


def build(*, title: str, spec_digest: str, answers: list, questions: dict, opens: str, closes: str,
          release: dict, frame: int, open_survey: bool, issuer: dict | None = None,
          receipt_key: dict | str | None = None, page: dict | None = None) -> dict:
    """The document of a survey being published (``opens``/``closes``: ISO 8601 text; ``issuer``
    and ``receipt_key``: the public forms of the survey's keys, when it has them; ``page``: the
    page's file hashes, default :func:`page_files`)."""
    return {KEY: VERSION, "title": title, "specification": {"digest": spec_digest}, "answers": answers,
            "questions": questions, "opens": opens, "closes": closes, "release": release, "frame": frame,
            "open": bool(open_survey), "issuer": issuer, "receipt_key": receipt_key,
            "page": page_files() if page is None else dict(page)}


def canonical(document: dict) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii")


def digest_of(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


class DocumentError(SpecificationError):
    """A document that is not the one expected, or a description that contradicts it (one line)."""


def read(data: bytes, expected_digest: str) -> dict:
    """The document from the bytes served, if their SHA-256 is ``expected_digest`` (``sha256:HEX``,
    lower case) and they are a document of this version; else :class:`DocumentError`."""
    actual = digest_of(data)
    if actual != expected_digest:
        raise DocumentError(f"the survey document's digest is {actual}, not {expected_digest}: this is not the "
                            "survey of your letter")
    try:
        document = json.loads(data.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        raise DocumentError("the survey document is not JSON text") from None
    if not isinstance(document, dict) or document.get(KEY) != VERSION:
        raise DocumentError("not a probanon survey document of version 1")
    for key, kind in (("title", str), ("specification", dict), ("answers", list), ("questions", dict),
                      ("opens", str), ("closes", str), ("release", dict), ("frame", int), ("open", bool),
                      ("page", dict)):
        if not isinstance(document.get(key), kind):
            raise DocumentError(f"the survey document's {key!r} is missing or malformed")
    if not isinstance(document["specification"].get("digest"), str):
        raise DocumentError("the survey document names no specification digest")
    return document


def contradictions(description: dict, document: dict, digest: str) -> list[str]:
    """What the survey's description (``GET /api/surveys/ID``) says otherwise than its document
    (whose digest is ``digest``); empty when they agree. A survey closed early lists an earlier
    ``closes`` than its document's, never a later one."""
    found = []
    if description.get("digest") != digest:
        found.append(f"the survey is listed with digest {description.get('digest')}, its document has {digest}")
    for key in AGREED:
        if description.get(key) != document.get(key):
            found.append(f"the survey's description gives another {key!r} than its document")
    closes = description.get("closes")
    if not isinstance(closes, str) or not (closes == document["closes"] or
                                           (description.get("status") == "closed" and closes < document["closes"])):
        found.append("the survey's description gives another 'closes' than its document")
    return found


def release_text(release: dict) -> str:
    interim = release.get("interim") or []
    when = ("nothing is released before the close" if not interim else
            f"{len(interim)} interim release(s) before the close, at {', '.join(interim)}")
    small = "left out" if release.get("small_cells", "suppress") == "suppress" else "released flagged"
    return f"{when}; a cell with fewer than k responses is {small}"


def summary(document: dict, spec: dict | None = None, digest: str | None = None) -> list[str]:
    """What the document says, one line per item (``survey respond`` prints it), its ``digest``
    first (default: that of its canonical bytes), to compare with the letter's."""
    lines = [f"digest: {digest or digest_of(canonical(document))}",
             f"survey: {document['title']}",
             f"window: {document['opens']} to {document['closes']}",
             f"release: {release_text(document['release'])}",
             f"frame: at most {document['frame']} people invited; " +
             ("OPEN to anyone, without invitations (not protected against ballot stuffing)" if document["open"]
              else "one single-use invitation per respondent"),
             f"specification: {document['specification']['digest']}"]
    if spec is not None:
        g = spec.get("guarantee", {})
        lines[-1] += f" ({len(spec.get('cells', []))} cells, k = {g.get('k')}, risk {g.get('risk')})"
    for column, q in document["questions"].items():
        unit = f" ({q['unit']})" if q.get("unit") else ""
        lines.append(f"kept on this machine: {q.get('label') or column}{unit} [{column}]")
    for a in document["answers"]:
        kind = ("one of " + ", ".join(a.get("categories") or []) if a.get("type") == "category" else
                f"{a.get('type')} in [{a.get('min')}, {a.get('max')}]")
        lines.append(f"asked and sent: {a.get('label') or a.get('name')} [{a.get('name')}: {kind}"
                     f"{'' if a.get('required', True) else ', optional'}]")
    lines.append("page files: " + ", ".join(f"{name} {h[7:19]}" for name, h in sorted(document["page"].items())))
    return lines

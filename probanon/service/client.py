"""The respondent's client (paper 1, Sec. III: locally trusted anonymisation), standard library only.

:func:`respond` does on the respondent's machine what the respondent page does in the browser:

1. reads the survey (``GET /api/surveys/ID``: its digest and answer schema), its document
   (``GET /api/surveys/ID/document``, :mod:`probanon.service.document`: everything the respondent
   is asked) and the published specification (``GET /api/surveys/ID/spec``, the bytes as published);
2. checks that the document's SHA-256 is the digest the respondent received through a second
   channel (their invitation letter), or else (an open survey only: a survey with invitations is
   refused without it, :func:`letter_needed`) the listed one, and that the description says
   nothing else than the document (title, answers, questions, window, release rule, frame, open or
   by invitation); verifies the specification (:func:`probanon.survey.spec.verify`: digest, every
   cell's failure recomputed by Algorithm A) against the specification digest inside the document;
   the survey is then answered as the document says;
3. assigns the cell from the respondent's quasi-identifiers (:func:`probanon.survey.spec.assign`);
4. for a survey with invitations, turns the invitation code into a blind token (issue 40.3,
   :func:`blind_token`): draws a nonce, blinds the token input with the survey's published issuer
   key, redeems the code for the blind signature (``POST /api/surveys/ID/issuance``), unblinds it
   and checks it; the collector never sees the token it signed, so it cannot tie the submission
   to the code;
5. posts ``{digest, cell, answers, idempotency_key[, token]}``: never a quasi-identifier value.
6. verifies the receipt in the answer (:func:`checked_receipt`: the survey's Ed25519 signature of
   exactly what was sent; see :mod:`probanon.service.receipts`), which the respondent keeps.

A request that fails on the way (no connection, a timeout, a 5xx) is sent again: the issuance with
the same blinded message (the collector answers it again for the same code), the submission with
the same idempotency key and token, so the collector stores it once; a 4xx is a
:class:`ServiceError` with the collector's one-line reason. The blind token needs the
``cryptography`` package (the ``service`` extra).
"""

from __future__ import annotations

import math
import re
import secrets
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError, ParameterError, ProbanonNote, SpecificationError
from ..survey.spec import assign, load_spec, parse_digest, verify
from . import document as documents
from .answers import SchemaError, check_answers, parse_field, same_as_key
from .http import ATTEMPTS, ServiceError, call
_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True)
class Response:
    """What :func:`respond` sent and what the collector answered."""

    sent: dict  # the body posted (with the blind token, for a survey with invitations)
    status: int  # 201 stored, 200 already stored (the same key and content were stored before)
    reply: dict  # the collector's answer, {"status": "stored" | "already stored"}
    cell: int
    digest: str
    note: str | None = None  # an open survey: not protected against ballot stuffing (issue 40.1)
    document: dict | None = None  # the verified survey document: what was asked (issue 40.4)
    receipt: dict | None = None  # verified (issue 40.10); None when the survey has no receipt key

    @property
    def stored(self) -> bool:
        return self.reply.get("status") in ("stored", "already stored")


def _survey_id(survey_id) -> int:
    if isinstance(survey_id, bool) or not isinstance(survey_id, (int, np.integer)) or survey_id < 1:
        raise ParameterError(f"a survey id is a positive integer, got {survey_id!r}")
    return int(survey_id)


def survey(url: str, survey_id: int, timeout: float = 30) -> dict:
    """The survey's public description (``GET /api/surveys/ID``)."""
    _, info = call(url, "GET", f"/api/surveys/{_survey_id(survey_id)}", timeout=timeout)
    if not isinstance(info, dict) or not isinstance(info.get("digest"), str) or not isinstance(info.get("answers"), list):
        raise ServiceError(f"the collector's description of survey {survey_id} is malformed")
    return info


def verified_document(url: str, survey_id: int, info: dict, expected_digest=None, timeout: float = 30) -> dict:
    """The survey document as served, if its SHA-256 is ``expected_digest`` (the letter's; default
    the listed digest, which proves less) and the description ``info`` agrees with it; else
    :class:`SpecificationError` (one line)."""
    expected = info["digest"] if expected_digest is None else parse_digest(expected_digest)
    _, raw = call(url, "GET", f"/api/surveys/{_survey_id(survey_id)}/document", timeout=timeout, raw=True)
    document = documents.read(raw, expected)
    problems = documents.contradictions(info, document, expected)
    if problems:
        raise SpecificationError(f"survey {survey_id}: {problems[0]}: the collector describes another survey than "
                                 "the one your letter's digest names")
    return document


def verified_spec(url: str, survey_id: int, info: dict, expected_digest=None, timeout: float = 30,
                  document: dict | None = None):
    """The survey's specification as published, verified against the specification digest of its
    verified document (see the module docstring)."""
    if document is None:
        document = verified_document(url, survey_id, info, expected_digest, timeout)
    expected = document["specification"]["digest"]
    _, raw = call(url, "GET", f"/api/surveys/{_survey_id(survey_id)}/spec", timeout=timeout, raw=True)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise SpecificationError("the published specification is not UTF-8 text") from None
    if not text.lstrip().startswith("{"):  # load_spec would read anything else as a file name
        raise SpecificationError("the published specification is not a JSON object")
    return verify(load_spec(text), expected_digest=expected)


def cell_of(verified, values: dict) -> int:
    """The respondent's cell from their quasi-identifiers, by column name (every column of the
    function, nothing else)."""
    columns = list(verified.function.columns or [])
    if not columns:
        raise SpecificationError("the specification's function does not name its quasi-identifiers")
    if not isinstance(values, dict):
        raise InputError("the quasi-identifier values are a mapping of column name to number")
    missing = [c for c in columns if c not in values]
    extra = [c for c in values if c not in columns]
    if missing or extra:
        what = f"no value for {missing[0]!r}" if missing else f"{extra[0]!r} is not a quasi-identifier of this survey"
        raise InputError(f"{what} (the survey asks for {', '.join(columns)})")
    encoding = verified.function.encoding  # categorical keys (a tree design's): one of their levels
    levels = {} if encoding is None else {c: encoding.levels(c) for c in encoding.categorical()}
    row = []
    for c in columns:
        v = values[c]
        if c in levels:
            found = [] if isinstance(v, bool) else [level for level in levels[c] if level == v or str(level) == str(v).strip()]
            if not found:
                raise InputError(f"the value of {c!r} must be one of {', '.join(map(repr, levels[c]))}, got {v!r}")
            row.append(found[0])
            continue
        try:
            x = float(v.strip()) if isinstance(v, str) else (math.nan if isinstance(v, bool) else float(v))
        except (TypeError, ValueError):
            x = math.nan
        if not math.isfinite(x):
            raise InputError(f"the value of {c!r} must be a finite number")
        row.append(x)
    record = pd.DataFrame([row], columns=columns) if levels else np.array([row])
    cells, _ = assign(verified, record)
    return int(cells[0])


def typed_answers(info: dict, answers: dict, columns) -> dict:
    """The answers checked against the survey's schema (text given for a field is read as its
    type: integer, number or category), or :class:`InputError` before anything is sent."""
    if not isinstance(answers, dict):
        raise InputError("the answers are a mapping of field name to value")
    try:
        schema = tuple(parse_field(f) for f in info["answers"])
    except SchemaError as exc:
        raise ServiceError(f"the collector's answer schema is malformed ({exc})") from None
    fields = {f.name: f for f in schema}
    asked = [name for name in fields if same_as_key(name, columns) is not None]
    if asked:  # the specification's quasi-identifiers never leave this machine, whatever the collector asks
        raise ServiceError(f"the collector asks for the quasi-identifier {asked[0]!r} as an answer: not sent")
    typed = {}
    for name, value in answers.items():
        f = fields.get(name)
        if f is not None and isinstance(value, str) and f.type != "category":
            text = value.strip()
            try:
                if f.type == "integer" and not _INTEGER.fullmatch(text):
                    raise ValueError
                value = int(text) if f.type == "integer" else float(text)
            except ValueError:
                raise InputError(f"answer {name!r} must be {'an integer' if f.type == 'integer' else 'a number'}") from None
        typed[name] = value
    try:
        return check_answers(schema, typed, quasi_identifiers=set(columns))
    except SchemaError as exc:
        raise InputError(str(exc)) from None


def submit(url: str, survey_id: int, body: dict, timeout: float = 30, attempts: int = ATTEMPTS):
    """(status, reply) of posting a submission body; sending the same body again (its idempotency
    key) is answered 200 "already stored" and stores nothing more."""
    status, reply = call(url, "POST", f"/api/surveys/{_survey_id(survey_id)}/submissions", body=body,
                         timeout=timeout, attempts=attempts)
    if not isinstance(reply, dict):
        raise ServiceError("the collector's answer to the submission is malformed")
    return status, reply


def respond(url: str, survey_id: int, values, answers: dict, token=None, expected_digest=None,
            timeout: float = 30, show=None) -> Response:
    """Answer survey ``survey_id`` at ``url``: verify its specification, compute the cell from the
    quasi-identifier ``values`` locally and send only the cell and the ``answers`` (see the module
    docstring). ``expected_digest``: the digest of the invitation (``sha256:HEX``); ``token``: the
    invitation code of a survey that requires one (redeemed for a blind token, never sent with
    the answers).

    ``values`` may be a function ``(columns, questions) -> values`` and ``token`` a function
    ``() -> code`` (prompts, say): they are called once the specification is verified, the code's
    only when the survey takes invitations, which also need ``expected_digest`` (refused without
    it before anything is sent). ``show(document, specification, digest)`` is called with the
    verified survey document and its digest before anything is asked or sent (``survey respond``
    prints :func:`probanon.service.document.summary`); without ``expected_digest`` (an open
    survey), a :class:`~probanon.errors.ProbanonNote` then says that the document is only the one
    the collector lists."""
    survey_id = _survey_id(survey_id)
    if expected_digest is not None:
        expected_digest = parse_digest(expected_digest)  # a malformed one is refused before any request
    info = survey(url, survey_id, timeout)
    if info.get("requires_token") and token is None:
        raise ParameterError(f"survey {survey_id} takes one invitation code per respondent: give yours")
    if token is not None and not info.get("requires_token") and not callable(token):
        raise ParameterError(f"survey {survey_id} takes no invitation code")
    if token is not None and not callable(token):
        token = _token_text(token)
    document = verified_document(url, survey_id, info, expected_digest, timeout)
    if expected_digest is None and not document["open"]:  # the listed digest proves nothing (issue 40 audit, 5)
        raise ParameterError(letter_needed(survey_id))
    v = verified_spec(url, survey_id, info, timeout=timeout, document=document)
    info = {**info, **{k: document[k] for k in documents.AGREED}}  # answered as the document says
    if show is not None:
        show(document, v.spec, expected_digest or info["digest"])
    if expected_digest is None:
        warnings.warn(f"not checked against a letter: the survey document is the one the collector lists "
                      f"({info['digest']}); if you have a letter, compare its digest or give it with --digest",
                      ProbanonNote, stacklevel=2)
    if callable(values):
        values = values(list(v.function.columns or []), info.get("questions") or {})
    cell = cell_of(v, values)
    typed = typed_answers(info, answers, v.function.columns)
    if callable(token):
        token = _token_text(token()) if info.get("requires_token") else None
    digest = expected_digest or info["digest"]  # the document's, as checked by verified_document
    body = {"digest": digest, "cell": cell, "answers": typed, "idempotency_key": secrets.token_urlsafe(32)}
    if token is not None:
        body["token"] = blind_token(url, survey_id, info, token, timeout)
    status, reply = submit(url, survey_id, body, timeout)
    receipt = checked_receipt(info, survey_id, body, reply)
    return Response(sent=body, status=status, reply=reply, cell=cell, digest=digest, note=info.get("note"),
                    document=document, receipt=receipt)


def letter_needed(survey_id: int) -> str:
    """Why a survey with invitations is not answered without the letter's digest: the collector
    could serve this one respondent a document of its own (another token key: a tag), whose digest
    it would list as well; the letter, which carries the code, carries the digest too."""
    return (f"survey {survey_id} takes invitations: give the digest printed in your letter (--digest); without it "
            "nothing shows that the collector serves you the survey it published for everybody")


def checked_receipt(info: dict, survey_id: int, body: dict, reply: dict) -> dict | None:
    """The receipt of the collector's answer ``reply`` to the submission ``body`` once verified
    against the survey's "receipt_key" (its Ed25519 signature of the row: survey, cell, SHA-256 of
    the canonical answers and of the idempotency key), or :class:`ServiceError`; None when the
    survey has no receipt key (published before receipts)."""
    import json

    key = info.get("receipt_key")
    if key is None:
        return None
    try:
        from .receipts import BadReceipt, verify
        import cryptography  # noqa: F401
    except ImportError:
        raise ServiceError("the answer was stored, but its receipt cannot be verified without the cryptography "
                           "package (pip install 'probanon[service]'): keep the collector's answer") from None
    answers = json.dumps(body["answers"], sort_keys=True, allow_nan=False)  # as the collector stores them
    try:
        return verify(key, survey_id, body["idempotency_key"], body["cell"], answers, reply.get("receipt"))
    except BadReceipt as exc:
        raise ServiceError(f"the answer was stored but its receipt is not valid ({exc}): keep the collector's "
                           f"answer and tell the survey office") from None


def _token_text(token) -> str:
    if not isinstance(token, str) or not token.strip():
        raise ParameterError("the invitation code is empty")
    return token.strip()


def blind_token(url: str, survey_id: int, info: dict, code: str, timeout: float = 30) -> dict:
    """The submission's ``"token"`` ({"nonce", "signature"}, base64url) for the invitation ``code``
    (RFC 9474 blind signature over the RFC 9578 token input; see the module docstring): the code is
    redeemed here, once; the collector signs without seeing the token."""
    try:
        from . import tokens
    except ImportError:  # cryptography is missing
        raise ParameterError("answering a survey with invitations needs the cryptography package: "
                             "pip install 'probanon[service]'") from None
    try:
        key = tokens.load_public_form(info.get("issuer"))
    except tokens.TokenError as exc:
        raise ServiceError(f"the collector's token issuer for survey {survey_id} is malformed ({exc})") from None
    state, nonce = tokens.mint(key, info["digest"])
    _, reply = call(url, "POST", f"/api/surveys/{_survey_id(survey_id)}/issuance", timeout=timeout,
                    body={"code": code, "blinded_msg": tokens.b64url(state.blinded_msg)})
    try:
        blind_sig = tokens.unb64url(reply.get("blind_sig") if isinstance(reply, dict) else None,
                                    tokens.MODULUS_BYTES, "the blind signature")
        signature = tokens.finalize(key, state, blind_sig)
    except tokens.TokenError as exc:
        raise ServiceError(f"the collector's blind signature is not valid ({exc})") from None
    return {"nonce": tokens.b64url(nonce), "signature": tokens.b64url(signature)}


def parse_pairs(text: str, what: str = "values", lines: bool = False) -> dict:
    """``"a=1,b=2"`` as ``{"a": "1", "b": "2"}`` (text: :func:`respond` reads each as its type);
    ``lines``: one pair per line instead (blank lines and lines starting with # are skipped);
    :class:`ParameterError` on a malformed or repeated pair."""
    if not isinstance(text, str) or not text.strip():
        raise ParameterError(f"--{what}: give name=value pairs " + ("one per line" if lines else "separated by commas"))
    pairs = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")] if lines \
        else text.split(",")
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise ParameterError(f"--{what}: {pair.strip()!r} is not name=value")
        if name in out:
            raise ParameterError(f"--{what}: {name!r} is given twice")
        out[name] = value
    return out

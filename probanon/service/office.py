"""The office's side of the collector, over HTTP (standard library only): publish a survey, issue
invitations and analyst tokens, close, release, read the audit log (``probanon collector ...``).

Tokens are read from the environment (``PROBANON_TOKEN``) or a file (``--token-file``), never from
the command line, where process lists and shell histories would keep them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import secrets
from pathlib import Path

from ..errors import ParameterError
from .http import call

FORMATS = ("csv", "parquet", "json")  # by the output file's extension
# publishing and issuing tokens are not retried: a lost answer would publish or issue twice


def read_token(token_file: str | None) -> str:
    """The admin or analyst token: the first line of ``token_file``, else ``$PROBANON_TOKEN``."""
    if token_file is not None:
        try:
            token = next(iter(Path(token_file).read_text().splitlines()), "").strip()
        except OSError as exc:
            raise ParameterError(f"--token-file: cannot read {token_file} ({exc.strerror or exc})") from None
    else:
        token = os.environ.get("PROBANON_TOKEN", "").strip()
    if not token:
        raise ParameterError("give the token in the environment (PROBANON_TOKEN) or with --token-file")
    return token


def publish(url: str, token: str, spec_text: str, answers: list, opens: str, closes: str, title: str,
            questions: dict | None = None, open_survey: bool = False, small_cells: str = "suppress",
            interim: list | None = None, frame: int | None = None) -> dict:
    """Publish a specification (its text, sent byte for byte) with the schema of the answers;
    ``interim``: the times of the releases allowed before the close (none by default);
    ``open_survey``: no invitations (not protected against ballot stuffing); ``frame``: how many
    people may be invited (default: the design's population); returns ``{"id", "digest"}``."""
    body = {"title": title, "spec": spec_text, "answers": answers, "opens": opens, "closes": closes,
            "open": open_survey, "release": {"small_cells": small_cells, "interim": list(interim or [])}}
    if frame is not None:
        body["frame"] = frame
    if questions is not None:
        body["questions"] = questions
    return call(url, "POST", "/api/admin/surveys", body, token=token, attempts=1)[1]


def invite(url: str, token: str, survey_id: int, count: int) -> list[str]:
    return call(url, "POST", f"/api/admin/surveys/{survey_id}/tokens", {"count": count}, token=token, attempts=1)[1]["tokens"]


def letterhead(url: str, survey_id: int, expected_digest: str | None = None, other_version: bool = False) -> dict:
    """``{"survey", "title", "digest"}`` of the letters, from the survey document, checked: its
    SHA-256 must be the listed digest (and ``expected_digest``, the one ``collector publish``
    printed, when given), and its page files those of the probanon package installed here (unless
    ``other_version``: the collector deliberately runs another version); else
    :class:`ParameterError` (before any invitation is issued)."""
    from .. import __version__
    from ..survey.spec import parse_digest
    from .document import page_files

    _, info = call(url, "GET", f"/api/surveys/{survey_id}")
    _, data = call(url, "GET", f"/api/surveys/{survey_id}/document", raw=True)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    if digest != info.get("digest") or (expected_digest is not None and digest != parse_digest(expected_digest)):
        raise ParameterError(f"survey {survey_id}: its document's digest is {digest}, the collector lists "
                             f"{info.get('digest')}" + ("" if expected_digest is None else f" and you published "
                                                        f"{parse_digest(expected_digest)}") + ": no letters written")
    document = json.loads(data)
    listed, local = document.get("page") or {}, page_files()
    other = sorted(name for name in set(listed) | set(local) if listed.get(name) != local.get(name))
    if other and not other_version:
        raise ParameterError(f"survey {survey_id}: its document lists other page files than this machine's probanon "
                             f"{__version__} ({len(other)}, {other[0]} first): the collector runs another version of "
                             "the respondent page; no letters written (--accept-other-version if it does so "
                             "deliberately)")
    return {"survey": survey_id, "title": document["title"], "digest": digest}


def letters(url: str, head: dict, codes: list[str]) -> list[dict]:
    """One complete letter per invitation code, ``{"survey", "title", "code", "digest", "address"}``
    (``head``: :func:`letterhead`; ``address``: the respondent page with ``?digest=``), in a random
    order (``secrets.SystemRandom``): never the order the collector issued the codes in (issue 40.5)."""
    address = f"{url.rstrip('/')}/respond/{head['survey']}?digest={head['digest']}"
    out = [{"survey": head["survey"], "title": head["title"], "code": code, "digest": head["digest"],
            "address": address} for code in codes]
    secrets.SystemRandom().shuffle(out)
    return out


def letters_text(url: str, letters: list[dict]) -> str:
    """The letters as text to print and mail, each starting with a line of ``=`` that numbers it;
    each letter's ``Invitation code:``, ``Digest:`` and ``Address:`` lines hold one value each."""
    n = len(letters)
    parts = [f"probanon invitation letters: {n}, in a random order (not the order the collector issued the codes "
             "in); print each on its own page, keep no record of which letter went to whom\n"]
    for i, letter in enumerate(letters, 1):
        parts.append(
            f"{'=' * 60} letter {i} of {n}\n"
            f"Survey: {letter['title']}\n"
            f"Invitation code: {letter['code']}\n"
            f"Digest: {letter['digest']}\n"
            f"Address: {letter['address']}\n"
            "\n"
            "Open the address in your browser: the page checks on your device that the survey is the one this "
            "digest names\n(everything it asks and promises) and asks for your invitation code. If it says the "
            "survey is not the one\nof your letter, do not answer. Or, from a command line, with the code in a "
            "file CODE.txt:\n"
            f"  probanon survey respond {url.rstrip('/')} --survey {letter['survey']} --digest {letter['digest']} "
            "--token-file CODE.txt\n")
    return "\n".join(parts)


def letters_csv(letters: list[dict]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["survey", "title", "code", "digest", "address"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(letters)
    return out.getvalue()


def analyst(url: str, token: str, note: str | None = None, survey_id: int | None = None) -> dict:
    """A new analyst token, of every survey or of ``survey_id`` only: ``{"token", "id", "survey"}``
    (the id names it in the audit log and revokes it)."""
    body = {"note": note} if survey_id is None else {"note": note, "survey": survey_id}
    return call(url, "POST", "/api/admin/analysts", body, token=token, attempts=1)[1]


def revoke(url: str, token: str, token_id: str, note: str | None = None) -> None:
    call(url, "POST", f"/api/admin/tokens/{token_id}/revoke", {"note": note}, token=token)


def close(url: str, token: str, survey_id: int, note: str | None = None) -> None:
    call(url, "POST", f"/api/admin/surveys/{survey_id}/close", {"note": note}, token=token)


def release(url: str, token: str, survey_id: int) -> dict:
    """``{"report", "columns", "records"}``: the records and their report, read together."""
    return call(url, "GET", f"/api/surveys/{survey_id}/release?format=json", token=token)[1]


def audit_log(url: str, token: str) -> list[dict]:
    return call(url, "GET", "/api/admin/audit", token=token)[1]

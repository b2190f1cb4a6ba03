"""The office's side of the collector, over HTTP (standard library only): publish a survey, issue
invitations and analyst tokens, close, release, read the audit log (``probanon collector ...``).

Tokens are read from the environment (``PROBANON_TOKEN``) or a file (``--token-file``), never from
the command line, where process lists and shell histories would keep them.
"""

from __future__ import annotations

import os
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

"""What the respondent page runs, checked by a third party (issue 40.5; ``probanon survey
check-page``), standard library only.

The survey document lists the SHA-256 of every file of the page (``page``: the files of
``probanon/service/static/`` as the collector's package held them at publication). This module
downloads, from the collector, the page (``/respond/ID``), every file it loads (the ``src`` and
``href`` of its elements) and every file the document lists (``/static/NAME``), and compares each
with the document, whose own digest is checked first (against the letter's digest, or the listed
one). A file that differs, is missing, or is loaded by the page without being listed is a finding.
"""

from __future__ import annotations

import hashlib
import html.parser
import urllib.parse
from dataclasses import dataclass

from .client import survey as describe, verified_document
from .http import ServiceError, call


@dataclass(frozen=True)
class Finding:
    path: str  # as fetched, e.g. /static/respond.js
    name: str | None  # the document's name for it, None when the document does not list it
    expected: str | None  # the document's sha256:HEX
    actual: str | None  # the served bytes' sha256:HEX, None when it could not be fetched

    @property
    def ok(self) -> bool:
        return self.expected is not None and self.expected == self.actual

    def line(self) -> str:
        if self.ok:
            return f"ok        {self.path}  {self.actual}"
        if self.expected is None:
            return f"UNLISTED  {self.path}  {self.actual or '(not served)'}: the page loads it, the survey document " \
                   "does not list it"
        if self.actual is None:
            return f"MISSING   {self.path}: the survey document lists {self.name} ({self.expected}), the collector " \
                   "does not serve it"
        return f"DIFFERS   {self.path}  {self.actual}: the survey document lists {self.expected}"


class _Resources(html.parser.HTMLParser):
    """The ``src`` and ``href`` attributes of a page's elements (links to other pages included:
    anything the page may load)."""

    def __init__(self):
        super().__init__()
        self.found: list[str] = []

    def handle_starttag(self, tag, attrs):
        for key, value in attrs:
            if key in ("src", "href") and value:
                self.found.append(value)


def loaded(page: bytes, page_path: str) -> list[str]:
    """The paths on the collector that ``page`` (served at ``page_path``) loads; an address on
    another host is returned whole (the page's policy forbids loading it; the check reports it)."""
    parser = _Resources()
    parser.feed(page.decode("utf-8", "replace"))
    out = []
    for ref in parser.found:
        parts = urllib.parse.urlsplit(urllib.parse.urljoin("http://collector" + page_path, ref))
        path = parts.path if parts.netloc == "collector" and parts.scheme == "http" else ref
        if path not in out:
            out.append(path)
    return out


def _fetch(url: str, path: str, timeout: float) -> str | None:
    try:
        _, data = call(url, "GET", path, timeout=timeout, raw=True)
    except ServiceError:
        return None
    return "sha256:" + hashlib.sha256(data).hexdigest()


def check_page(url: str, survey_id: int, expected_digest=None, timeout: float = 30) -> list[Finding]:
    """One :class:`Finding` per file of the survey's page (see the module docstring); the survey
    document itself is verified first (:class:`probanon.errors.SpecificationError` otherwise)."""
    document = verified_document(url, survey_id, describe(url, survey_id, timeout), expected_digest, timeout)
    listed = document["page"]
    page_path = f"/respond/{survey_id}"
    findings: dict[str, Finding] = {}
    _, page = call(url, "GET", page_path, timeout=timeout, raw=True)
    findings[page_path] = Finding(page_path, "respond.html", listed.get("respond.html"),
                                  "sha256:" + hashlib.sha256(page).hexdigest())
    for path in loaded(page, page_path) + [f"/static/{name}" for name in sorted(listed)]:
        if path in findings:
            continue
        name = path[len("/static/"):] if path.startswith("/static/") and "/" not in path[len("/static/"):] else None
        expected = listed.get(name) if name is not None else None
        actual = _fetch(url, path, timeout) if path.startswith("/") else None
        findings[path] = Finding(path, name if expected is not None else None, expected, actual)
    return list(findings.values())

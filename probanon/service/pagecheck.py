"""What the respondent page runs, checked by a third party (issue 40.5; ``probanon survey
check-page``), standard library only.

The survey document lists the SHA-256 of every file of the page (``page``: the files of
``probanon/service/static/`` as the collector's package held them at publication). This module
downloads, from the collector, the page (``/respond/ID``), every file it loads (the ``src`` and
``href`` of its elements) and every file the document lists (``/static/NAME``), and compares each
with the document, whose own digest is checked first (against the letter's digest, or the listed
one). A file that differs, is missing, or is loaded by the page without being listed is a finding.

The document's hashes are the collector's own statement, made at publication. They are also
compared with the page files of the probanon package installed on the checking machine
(:func:`local_differences`, :func:`probanon.service.document.page_files`): a file whose listed
hash is not the local package's (or that only one side has) is a finding of its own, an
:class:`OtherVersion`: the collector runs another page than this version of probanon ships, which
the checker must then read for herself (``survey check-page --accept-other-version`` accepts it
deliberately; ``collector invite`` makes the same comparison before writing letters).
"""

from __future__ import annotations

import hashlib
import html.parser
import urllib.parse
from dataclasses import dataclass

from .. import __version__
from .client import survey as describe, verified_document
from .document import page_files
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


@dataclass(frozen=True)
class OtherVersion:
    """A page file whose hash in the survey document is not that of the probanon package installed
    here (``listed`` or ``local`` None: only the other side has the file)."""

    name: str
    listed: str | None  # the document's sha256:HEX
    local: str | None  # this machine's package's sha256:HEX

    ok = False

    def line(self) -> str:
        here = f"this machine's probanon {__version__}"
        if self.listed is None:
            return f"OTHER     {self.name}: {here} has it ({self.local}), the survey document does not list it"
        if self.local is None:
            return f"OTHER     {self.name}: the survey document lists it ({self.listed}), {here} has no such file"
        return f"OTHER     {self.name}  {self.listed}: the survey document lists it, {here} has {self.local}"


def local_differences(listed: dict, local: dict | None = None) -> list[OtherVersion]:
    """The page files whose hash in ``listed`` (a survey document's ``page``) is not the one in
    ``local`` (default: this machine's package, :func:`probanon.service.document.page_files`)."""
    local = page_files() if local is None else local
    return [OtherVersion(name, listed.get(name), local.get(name)) for name in sorted(set(listed) | set(local))
            if listed.get(name) != local.get(name)]


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


def check_page(url: str, survey_id: int, expected_digest=None, timeout: float = 30,
               local: dict | None = None) -> list:
    """One :class:`Finding` per file of the survey's page, then one :class:`OtherVersion` per file
    whose listed hash is not the local package's (``local``: default
    :func:`probanon.service.document.page_files`; see the module docstring); the survey document
    itself is verified first (:class:`probanon.errors.SpecificationError` otherwise)."""
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
    return list(findings.values()) + local_differences(listed, local)

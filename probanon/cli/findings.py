"""The library's soft findings on stderr (issue 41.5): the library issues a
:class:`probanon.errors.ProbanonWarning` where it finds one and prints nothing; the command line
prints each as one line, ``probanon: warning: MESSAGE`` (``probanon: note: MESSAGE`` for a
:class:`~probanon.errors.ProbanonNote`, ``probanon: MESSAGE`` for an
:class:`~probanon.errors.AdjustmentWarning`: what a method changed to keep its guarantee).
:func:`shown`, around every command (:func:`probanon.cli.main.main`), prints each finding when it
is issued, every time; a command whose summary places its findings after other lines keeps them
(:func:`held`) and prints them there (:func:`show`). Other warnings go where they went."""

from __future__ import annotations

import contextlib
import warnings

from ..errors import AdjustmentWarning, ProbanonNote, ProbanonWarning
from .progress import say

#: how a finding's line starts, by category (the first that applies)
PREFIXES = ((AdjustmentWarning, "probanon: "), (ProbanonNote, "probanon: note: "),
            (ProbanonWarning, "probanon: warning: "))


def line(finding: Warning) -> str:
    """The line that says ``finding`` (a :class:`ProbanonWarning`) on stderr."""
    prefix = next(text for category, text in PREFIXES if isinstance(finding, category))
    return f"{prefix}{finding}"


def show(findings) -> None:
    """Print ``findings`` (as :func:`held` keeps them), one line each, above any open bar."""
    for finding in findings:
        say(line(finding))


@contextlib.contextmanager
def _routed(found):
    """Inside: every :class:`ProbanonWarning` issued (each time, not once per place) goes to
    ``found(warning)``; the other warnings to where they went before."""
    before = warnings.showwarning

    def route(message, category, *where):
        if issubclass(category, ProbanonWarning):
            found(message)
        else:
            before(message, category, *where)

    with warnings.catch_warnings():
        warnings.simplefilter("always", ProbanonWarning)
        warnings.showwarning = route
        yield


@contextlib.contextmanager
def shown():
    """Inside: each :class:`ProbanonWarning` printed on stderr when it is issued (:func:`line`)."""
    with _routed(lambda finding: say(line(finding))):
        yield


@contextlib.contextmanager
def held():
    """Inside: the :class:`ProbanonWarning` issued are kept, in the list this yields, for the
    command to :func:`show` where its summary places them (nothing when the work fails)."""
    kept = []
    with _routed(kept.append):
        yield kept

"""The one progress form of probanon (issue 41, point 5).

A library function that takes long takes ``progress=None``: a callback that it calls as

    progress(stage: str, done: int, total: int | None)

``stage`` a short label of the work under way ("MDAV", "batches", "levels", "runs"), ``done`` of
``total`` units of it done so far (``total`` None when it is not known ahead). A new label starts
a new stage; consecutive stages may count one job on (a reproduction's steps, its part the
stage), else each counts from 0. No call comes before the inputs are checked, so that an input
refused by the checks gives a single error; where the slow part (or a numba compilation) would
otherwise be silent, a first call with ``done`` 0 comes before it, so that a caller can show a
first message. A function called again reports again from 0. Without a callback (None, or
:func:`quiet`) the work says nothing.

The library never prints: showing progress (a tqdm bar, one line per stage in a log file) is the
command line's (:mod:`probanon.cli.progress`), and so is announcing numba's first compilation.
Soft findings go through :class:`probanon.errors.ProbanonWarning`, not through this callback.
"""

from __future__ import annotations


def quiet(stage: str, done: int, total: int | None) -> None:
    """The progress callback that says nothing (the library's one stand-in for ``progress=None``)."""


class Steps:
    """Counts the steps of one job of ``total`` steps for ``progress`` (None: :func:`quiet`):
    :meth:`update` after each step reports ``progress(stage, done, total)``, :meth:`begin` names
    the part of the job that starts (the count goes on). Nothing is reported before the first
    step. For code that counts as it goes, such as the reproductions of the papers."""

    def __init__(self, progress, total: int, stage: str = "steps"):
        self.progress = quiet if progress is None else progress
        self.total, self.stage, self.done = int(total), stage, 0

    def update(self, n: int = 1) -> None:
        self.done += n
        self.progress(self.stage, self.done, self.total)

    def begin(self, stage: str) -> None:
        """The job's next part, ``stage``, starts (reported at once when a step was made)."""
        self.stage = stage
        if self.done:
            self.progress(stage, self.done, self.total)

"""Progress display of the command line: a note, then a tqdm bar, both on stderr.

Library functions take ``progress=None``: a callback ``progress(n)`` that they call with the
amount of work done since the last call, first with ``progress(0)`` once their inputs are
checked and the slow part (numba's first compilation included) begins. Work in named stages
(the microaggregation fits) calls ``progress(stage, done, total)`` instead: a new ``stage``
restarts the bar under that name. :class:`Progress` is
such a callback that shows nothing before that first call, so an input refused by the checks
still prints a single error line, and shows the note before any compilation, so nothing sits
silent.
"""

from __future__ import annotations

import sys
from typing import Self


class Progress:
    """``progress(n)`` callback: on the first call print ``note`` (if any) and open a tqdm bar
    (``bar``: tqdm options such as ``desc``, ``total``, ``unit``); nothing at all when
    ``quiet``. Use it as a context manager so the bar is closed."""

    def __init__(self, note: str | None, quiet: bool = False, **bar):
        self.note, self.quiet, self.options = note, quiet, bar
        self.bar = None

    def __call__(self, n: int | str = 1, done: int | None = None, total: int | None = None) -> None:
        if self.quiet:
            return
        if self.bar is None:
            from tqdm import tqdm

            if self.note:
                print(self.note, file=sys.stderr, flush=True)
            self.bar = tqdm(file=sys.stderr, **self.options)
            self.stage = None
        if isinstance(n, str):  # progress(stage, done, total)
            if n != self.stage:
                self.stage = n
                self.bar.set_description(f"{self.options.get('desc') or 'progress'}: {n}", refresh=False)
                self.bar.reset(total=total)
            self.bar.n = done
            self.bar.refresh()
        else:
            self.bar.update(n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

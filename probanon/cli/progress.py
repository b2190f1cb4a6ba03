"""Progress display of the command line: a note, then a tqdm bar, both on stderr.

The library reports progress in one form, ``progress(stage, done, total)`` (:mod:`probanon.progress`).
A :class:`Progress` is such a callback: a new ``stage`` restarts the bar under that name (the
microaggregation fits, ``apply``, the simulations). Where a command showed a counting bar before
the library had one form (records, levels, runs, steps), :func:`counting` adapts the library's
calls to it, so the command shows what it showed; the command line's own loops count on the bar
directly (``bar(n)``, :meth:`Progress.iterate`). :class:`Progress` shows nothing before its first
call, so an input refused by the checks still prints a single error line.

When stderr is not a terminal (a log file, a pipe, CI), a bar's carriage-return redraws would
pile up in the file: the bar then degrades to one line per stage (``desc ...`` or ``desc: stage
...``) and a closing ``desc: done ...`` line (issue 39, point 11).

Numba compiles a kernel the first time it runs and caches it (:mod:`probanon._cache`); the
command line calls :func:`announce_compilation`, so that the first compilation of a process
prints :data:`COMPILING` before it starts, above any bar, and nothing when every kernel comes
from the cache. The library stays quiet.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Self

#: set to "json", the progress is one JSON line per update on stderr instead of a bar (the workbench)
MACHINE_VARIABLE = "PROBANON_PROGRESS"
MACHINE_SECONDS = 0.25

COMPILING = ("probanon: compiling the numerical kernels (first run only, up to a minute or two; later runs "
             "load them from the cache) ...")


def is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


def say(text: str) -> None:
    """One line on stderr, above any open bar (which tqdm redraws below it)."""
    from tqdm import tqdm

    tqdm.write(text, file=sys.stderr)
    sys.stderr.flush()


class Progress:
    """The display of ``progress(stage, done, total)`` (or of ``progress(n)``, n more units of a
    counting bar): on the first call print ``note`` (if any) and open a tqdm bar (``bar``: tqdm
    options such as ``desc``, ``total``, ``unit``), or, when stderr is not a terminal, one line
    per stage; nothing at all when ``quiet``. Use it as a context manager so the bar is closed."""

    def __init__(self, note: str | None, quiet: bool = False, **bar):
        self.note, self.quiet, self.options = note, quiet, bar
        self.bar = None
        self.started = None  # time of the first call
        self.lines = False  # one line per stage instead of a bar
        self.machine, self.last_line = False, 0.0  # JSON lines for the workbench (MACHINE_VARIABLE)
        self.stage, self.n = None, 0

    @property
    def desc(self) -> str:
        return self.options.get("desc") or "progress"

    def _open(self, staged: bool) -> None:
        if self.note:
            say(self.note)
        self.started = time.monotonic()
        self.machine = os.environ.get(MACHINE_VARIABLE) == "json"
        self.lines = not is_terminal(sys.stderr) and not self.machine
        if self.machine:
            return
        if self.lines:
            if not staged:
                say(f"{self.desc} ...")
        else:
            from tqdm import tqdm

            self.bar = tqdm(file=sys.stderr, **self.options)

    def __call__(self, n: int | str = 1, done: int | None = None, total: int | None = None) -> None:
        if self.quiet:
            return
        staged = isinstance(n, str)
        if self.started is None:
            self._open(staged)
        if self.machine:
            self._machine_line(n, done, total)
            return
        if staged:  # progress(stage, done, total)
            if n != self.stage:
                self.stage = n
                if self.lines:
                    say(f"{self.desc}: {n} ...")
                else:
                    self.bar.set_description(f"{self.desc}: {n}", refresh=False)
                    self.bar.reset(total=total)
            self.n = done
            if self.bar is not None:
                self.bar.n = done
                self.bar.refresh()
        else:
            self.n += n
            if self.bar is not None:
                self.bar.update(n)

    def _machine_line(self, n, done, total) -> None:
        """``{"progress": [stage, done, total]}`` on stderr, at a new stage, at its end and at most
        every :data:`MACHINE_SECONDS` between (the workbench reads them: its progress bar)."""
        if isinstance(n, str):
            new, self.stage, self.n = n != self.stage, n, done
        else:
            new, self.n, total = False, self.n + n, self.options.get("total")
            n = self.desc
        now = time.monotonic()
        if new or now - self.last_line >= MACHINE_SECONDS or (total is not None and self.n == total):
            self.last_line = now
            print(json.dumps({"progress": [str(n), int(self.n or 0), total]}), file=sys.stderr, flush=True)

    def set_description(self, desc: str) -> None:
        """Rename the bar (a new stage of a counting bar: a line of its own when not a terminal)."""
        if self.quiet:
            return
        self.options["desc"] = desc
        if self.started is None:
            return
        if self.lines:
            say(f"{desc} ...")
        elif self.bar is not None:
            self.bar.set_description(desc)

    def iterate(self, iterable):
        """The items of ``iterable``, each counted once it has been processed (as ``tqdm(iterable)``)."""
        self(0)
        for item in iterable:
            yield item
            self(1)

    def close(self, failed: bool = False) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        elif self.lines and not failed:
            took = f"{time.monotonic() - self.started:.1f} s"
            if self.stage is None:
                total = self.options.get("total")
                unit = str(self.options.get("unit", "it")).strip()
                say(f"{self.desc}: done, {self.n:,}{f'/{total:,}' if total else ''} {unit} in {took}")
            else:
                say(f"{self.desc}: done in {took}")
        self.lines = False  # closed: a second close prints nothing

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind, *exc) -> None:
        self.close(failed=kind is not None)


class Counting:
    """The library's ``progress(stage, done, total)`` shown on the counting bar ``bar`` as the
    command showed it before the library had one form (issue 41.5): each call moves the bar by
    ``done`` minus the ``done`` of the call before; a call below that starts a new count (the
    library works again: the attack suite run again for each remedy). ``job``: the calls count
    one job whose stages are its parts (a reproduction): the bar takes the job's ``total``, each
    part after the first renames it ``desc (part)``, and it closes when the job is done."""

    def __init__(self, bar: Progress, job: bool = False):
        self.bar, self.job, self.desc = bar, job, bar.desc
        self.done, self.stage = 0, None

    def __call__(self, stage: str, done: int, total: int | None) -> None:
        if self.job:
            self.bar.options.setdefault("total", total)
            if self.stage is not None and stage != self.stage:
                self.bar.set_description(f"{self.desc} ({stage})")
        self.stage = stage
        step, self.done = (done - self.done if done >= self.done else done), done
        self.bar(step)
        if self.job and done == total:
            self.bar.close()


_announcer = None


def announce_compilation() -> None:
    """From now on, the first numba compilation of this process prints :data:`COMPILING` on
    stderr before it starts (numba's ``numba:compile`` event, which fires on a cache miss only).
    The command line calls it; idempotent."""
    global _announcer
    if _announcer is not None:
        return
    from numba.core import event

    class Announcer(event.Listener):
        said = False

        def on_start(self, _event) -> None:
            if not self.said:
                self.said = True
                say(COMPILING)

        def on_end(self, _event) -> None:
            pass

    _announcer = Announcer()
    event.register("numba:compile", _announcer)

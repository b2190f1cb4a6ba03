"""Long work of the workbench in the background: a job runs in a thread, reports its progress in the
library's one form (``progress(stage, done, total)``, :mod:`probanon.progress`) and can be cancelled.

Work in this process (reading a file, column summaries, risk measures) is cancelled at its next
progress call (:class:`Cancelled` raised there); a release runs as the command line in a child
process (:func:`run_command`), whose progress lines it reads and which cancelling kills, so the page
never waits on it and nothing half-written is kept (the command writes all or nothing).
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
import time
import logging
from dataclasses import dataclass, field

from ..errors import ProbanonError

LOG = logging.getLogger("uvicorn.error")  # the server's error log, as the collector's
#: jobs kept (finished ones beyond this are forgotten, oldest first)
KEEP = 50


class Cancelled(ProbanonError):
    """The office cancelled the job."""


@dataclass
class Job:
    """One piece of background work: ``kind`` (what it does), ``status`` "running", "done",
    "failed" or "cancelled", the last progress (``stage``, ``done``, ``total``), ``error`` (a
    one-line message) and ``result`` (JSON-ready) once ended."""

    id: int
    kind: str
    status: str = "running"
    stage: str = ""
    done: int = 0
    total: int | None = None
    error: str | None = None
    where: str | None = None  # the page's field the error concerns
    result: dict | None = None
    started: float = field(default_factory=time.monotonic)
    ended: float | None = None
    cancel: threading.Event = field(default_factory=threading.Event)
    process: subprocess.Popen | None = None

    def progress(self, stage: str, done: int, total: int | None) -> None:
        """The library's progress callback: records the progress, raises :class:`Cancelled` once
        the job is cancelled."""
        if self.cancel.is_set():
            raise Cancelled("cancelled")
        self.stage, self.done, self.total = stage, int(done), None if total is None else int(total)

    def to_dict(self) -> dict:
        return {"id": self.id, "kind": self.kind, "status": self.status, "stage": self.stage, "done": self.done,
                "total": self.total, "error": self.error, "field": self.where, "result": self.result,
                "seconds": round((self.ended or time.monotonic()) - self.started, 3)}


class Jobs:
    """The jobs of a workbench (thread-safe)."""

    def __init__(self):
        self._jobs: dict[int, Job] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, kind: str, work, where=None) -> Job:
        """A new job running ``work(job)`` in a thread; its return value is the job's result. A
        :class:`ProbanonError` ends it "failed" with its one-line message (``where(exc)``: the
        page's field it concerns, or None); :class:`Cancelled` "cancelled"."""
        job = Job(next(self._ids), kind)
        with self._lock:
            self._jobs[job.id] = job
            ended = [j for j in self._jobs.values() if j.status != "running"]
            for old in ended[:max(0, len(self._jobs) - KEEP)]:
                self._jobs.pop(old.id, None)

        def run():
            try:
                job.result = work(job)  # the work says when it is too late to cancel: it ended, it is done
                job.status = "done"
            except Cancelled:
                job.status = "cancelled"
            except ProbanonError as exc:
                job.status, job.error = "failed", str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                job.where = None if where is None else where(exc)
            except Exception as exc:  # a defect: said in one line, the trace in the server's error log
                LOG.exception("probanon workbench: unhandled %s in a %s job", type(exc).__name__, kind)
                job.status, job.error = "failed", f"internal error: {type(exc).__name__}: {exc}"
            finally:
                job.ended = time.monotonic()

        threading.Thread(target=run, name=f"probanon-workbench-{kind}-{job.id}", daemon=True).start()
        return job

    def get(self, job_id: int) -> Job | None:
        with self._lock:
            return self._jobs.get(job_id)

    def running(self, kind: str | None = None) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs.values() if j.status == "running" and kind in (None, j.kind)]

    def cancel(self, job_id: int) -> Job | None:
        job = self.get(job_id)
        if job is not None and job.status == "running":
            job.cancel.set()
            if job.process is not None and job.process.poll() is None:
                job.process.kill()
        return job

    def wait(self, job: Job, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for ``job`` to end; True if it did."""
        deadline = time.monotonic() + timeout
        while job.status == "running" and time.monotonic() < deadline:
            time.sleep(0.01)
        return job.status != "running"


class CommandFailed(ProbanonError):
    """The command line refused or failed: its one-line message."""


def run_command(job: Job, argv: list, cwd) -> str:
    """``probanon ARGV`` in a child process (the command line itself: its checks, messages and
    writer), its progress lines read into ``job``; killed when the job is cancelled. Returns its
    standard error; :class:`CommandFailed` with the command's one-line message on exit 1 or 2."""
    env = {**os.environ, "PROBANON_PROGRESS": "json", "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen([sys.executable, "-m", "probanon.cli", *argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8",
                          errors="replace") as proc:
        job.process = proc
        out: list[str] = []
        reader = threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True)
        reader.start()
        lines = []
        for line in proc.stderr:
            if line.startswith('{"progress"'):
                try:
                    stage, done, total = json.loads(line)["progress"]
                    job.stage, job.done, job.total = stage, done, total
                except (ValueError, TypeError, KeyError):
                    lines.append(line)
            else:
                lines.append(line)
                job.stage = line.strip()[:120] or job.stage
            if job.cancel.is_set() and proc.poll() is None:
                proc.kill()
        proc.wait()
        reader.join(5)
    if job.cancel.is_set() and proc.returncode != 0:  # killed; a command that finished has done its work
        raise Cancelled("cancelled")
    text = "".join(lines)
    if proc.returncode != 0:
        errors = [ln[len("probanon: error: "):] for ln in text.splitlines() if ln.startswith("probanon: error: ")]
        said = errors[-1] if errors else (text.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
        raise CommandFailed(said)
    return text


__all__ = ["Cancelled", "CommandFailed", "Job", "Jobs", "run_command"]

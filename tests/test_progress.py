"""The progress display (issue 39, points 8 and 11): one line per stage when stderr is not a
terminal, tqdm's bar when it is; the first numba compilation of a command announced before it
starts, and nothing when every kernel comes from the cache."""

import os
import subprocess
import sys
from pathlib import Path

import numba
import pytest

from probanon.cli import progress
from probanon.cli.progress import COMPILING, Counting, Progress

ROOT = Path(__file__).resolve().parents[1]


def _lines(err: str) -> list[str]:
    assert "\r" not in err and "\x1b" not in err  # no redraws: a log file reads line by line
    return err.splitlines()


def test_a_counting_bar_is_two_lines_when_stderr_is_not_a_terminal(capsys):
    with Progress("fitting 3 things", desc="fit", total=3, unit="thing") as bar:
        assert capsys.readouterr().err == ""  # nothing before the first call
        for _ in bar.iterate(range(3)):
            pass
    lines = _lines(capsys.readouterr().err)
    assert lines[:2] == ["fitting 3 things", "fit ..."] and len(lines) == 3
    assert lines[2].startswith("fit: done, 3/3 thing in ") and lines[2].endswith(" s")


def test_stages_are_one_line_each(capsys):
    with Progress(None, desc="pcl") as progress:
        for stage, total in (("mdav start", 10), ("local search", 4)):
            for done in range(total + 1):
                progress(stage, done, total)
        progress.set_description("pcl (final)")
    lines = _lines(capsys.readouterr().err)
    assert lines[:3] == ["pcl: mdav start ...", "pcl: local search ...", "pcl (final) ..."]
    assert len(lines) == 4 and lines[3].startswith("pcl (final): done in ")


def test_the_stage_form_on_a_counting_bar_shows_what_increments_showed(capsys):
    """Counting (issue 41.5): a command that showed a counting bar shows it from the library's
    stage-form calls; a second library call on the same bar counts from 0 again."""
    with Progress("note", desc="fit", total=5, unit="user") as bar:
        made, written = Counting(bar), Counting(bar)
        for done in (0, 2, 3):
            made("users", done, 3)
        for done in (0, 1, 2):
            written("records", done, 2)
        assert bar.n == 5
    lines = _lines(capsys.readouterr().err)
    assert lines[:2] == ["note", "fit ..."] and lines[2].startswith("fit: done, 5/5 user in ") and len(lines) == 3
    with Progress(None, desc="runs") as bar:  # the attack, then a remedy running the attack again
        runs = Counting(bar)
        for done in (0, 4, 8, 0, 4):
            runs("intruder runs", done, 8)
        assert bar.n == 12


def test_a_job_takes_its_total_renames_its_parts_and_closes_when_done(capsys):
    with Progress(None, desc="reproduce x", unit="step") as bar:
        job = Counting(bar, job=True)
        job("steps", 1, 3)
        job("second part", 1, 3)
        job("second part", 2, 3)
        job("third part", 3, 3)
        lines = _lines(capsys.readouterr().err)
    assert lines[:3] == ["reproduce x ...", "reproduce x (second part) ...", "reproduce x (third part) ..."]
    assert lines[3].startswith("reproduce x (third part): done, 3/3 step in ") and len(lines) == 4
    assert capsys.readouterr().err == ""  # closed once, when the job was done


def test_quiet_and_failed_stages_print_nothing_more(capsys):
    with Progress("note", quiet=True, desc="x") as bar:
        bar(5)
    assert capsys.readouterr().err == ""
    with pytest.raises(RuntimeError), Progress(None, desc="x") as bar:
        bar(0)
        raise RuntimeError("stop")
    assert _lines(capsys.readouterr().err) == ["x ..."]  # no "done": the error says what happened


def test_a_terminal_gets_the_tqdm_bar(capsys, monkeypatch):
    monkeypatch.setattr(progress, "is_terminal", lambda stream: True)
    with Progress("note", desc="fit", total=2) as bar:
        bar(0)
        bar(2)
    err = capsys.readouterr().err
    assert err.startswith("note\n") and "\r" in err and "fit: 100%" in err and "2/2" in err


@pytest.fixture
def announcing():
    """announce_compilation() for one test: its listener is removed afterwards, so that the
    compilations of later tests print nothing."""
    from numba.core import event

    yield
    if progress._announcer is not None:
        event.unregister("numba:compile", progress._announcer)
        progress._announcer = None


def test_the_first_compilation_is_announced_once(capsys, announcing):
    progress.announce_compilation()
    progress.announce_compilation()  # idempotent: one listener

    @numba.njit  # not cached: compiled here
    def twice(x):
        return 2 * x

    @numba.njit
    def thrice(x):
        return 3 * x

    with Progress(None, desc="work", total=2) as bar:
        bar(0)
        assert twice(2) == 4 and thrice(2) == 6
        bar(2)
    lines = _lines(capsys.readouterr().err)
    assert lines.count(COMPILING) == 1 and lines.index(COMPILING) == 1 and len(lines) == 3


def test_the_command_says_compiling_only_when_it_compiles(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "probanon.cli", "survey", "plan", "-k", "5", "--participation", "0.5",
            "--risk", "0.1"]
    runs = [subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300) for _ in range(2)]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr[-2000:]
    assert runs[0].stderr.splitlines() == [COMPILING]  # before the kernels compile: the only line
    assert runs[1].stderr == "" and runs[1].stdout == runs[0].stdout  # loaded from the cache
    assert list((tmp_path / "cache").rglob("*.nbi"))


def test_the_demo_logs_a_line_per_stage(tmp_path, capsys):
    from probanon.cli import main

    assert main(["demo", "--output-dir", str(tmp_path / "rep"), "--records", "100"]) == 0
    lines = _lines(capsys.readouterr().err)
    assert lines[0] == "methods ..." and lines[1].startswith("methods: done, 4/4 it in ")
    assert "respondents ..." in lines and any(line.startswith("respondents: done, ") for line in lines)

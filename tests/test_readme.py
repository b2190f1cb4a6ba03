"""Every example of the README runs as printed (issue 13, point 12): the shell blocks after
"## Examples" in order, each command within its time limit, then the Python block."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 120  # seconds per command: "under a minute" warm, with room for a cold numba compilation


def _blocks(text: str) -> list[tuple[str, str]]:
    examples = text[text.index("## Examples"):text.index("## Layout")]
    return re.findall(r"```(\w*)\n(.*?)```", examples, re.S)


def _commands(block: str) -> list[str]:
    """Shell commands of a block: backslash continuations joined, a quoted string kept whole."""
    commands, current = [], ""
    for line in block.splitlines():
        current += line + "\n"
        if line.endswith("\\") or current.count('"') % 2:
            continue
        if current.strip():
            commands.append(current.strip())
        current = ""
    return commands


def test_readme_starts_with_the_two_commands():
    text = (ROOT / "README.md").read_text()
    first = re.search(r"```\n(.*?)```", text, re.S).group(1).splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["make demo", "make test"]
    assert ". .venv/bin/activate" in text and ".venv/bin/probanon" in text
    assert "probanon diversity plan" in text and "probanon diversity check" in text


@pytest.mark.slow
def test_readme_examples_run_as_printed(tmp_path):
    (tmp_path / "shared").symlink_to(SHARED_DATA.parent)
    work = tmp_path / "repo"
    work.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    ran = 0
    for lang, block in _blocks((ROOT / "README.md").read_text()):
        commands = [block] if lang == "python" else _commands(block)
        for command in commands:
            argv = [sys.executable, "-c", command] if lang == "python" else ["bash", "-c", command]
            start = time.monotonic()
            run = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=LIMIT)
            took = time.monotonic() - start
            assert run.returncode == 0, f"{command}\n{run.stderr[-2000:]}"
            assert "Traceback" not in run.stderr, command
            assert took < LIMIT, (command, took)
            ran += 1
    assert ran >= 20


@pytest.mark.slow
def test_readme_survey_walkthrough_runs_as_printed(tmp_path):
    """The "Running a survey" block, on a free port instead of 8080: design, serve, publish, invite,
    respond, close, release, audit; the one response lands in a cell below k, so it is suppressed."""
    import json
    import socket

    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Running a survey"):text.index("## Examples")]
    block = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    (tmp_path / "shared").symlink_to(SHARED_DATA.parent)
    work = tmp_path / "repo"
    work.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PROBANON_TOKEN", None)
    proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", block.replace("8080", str(port))], cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=300)
    finally:
        try:  # the server, if the block stopped before its 'kill %1'
            os.killpg(proc.pid, 9)
        except ProcessLookupError:
            pass
    assert proc.returncode == 0, out[-3000:]
    report = json.loads((work / "out" / "release_report.json").read_text())
    assert report["responses"] == 1 and report["released_records"] == 0 and report["suppressed_records"] == 1
    for action in ("survey published", "invitations issued", "analyst token issued", "survey closed", "release"):
        assert f": {action}" in out

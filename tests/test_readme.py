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

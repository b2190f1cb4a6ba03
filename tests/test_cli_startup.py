"""Start-up of the command line (issue 41.7): ``probanon --help`` and ``--version`` need neither
NumPy nor pandas nor any command's module; a command imports its own module only; on a terminal a
first line shows before the heavy imports. (The time itself is measured by ``python -X
importtime``, never here: the machine is shared.)"""

import os
import pty
import subprocess
import sys

import pytest

PROBE = """
import sys
from probanon.cli import main
code = main({argv!r})
heavy = sorted(m for m in ("numpy", "pandas", "scipy", "numba", "sklearn") if m in sys.modules)
commands = sorted(m for m in sys.modules if m.startswith("probanon.cli.") and m not in
                  ("probanon.cli.main", "probanon.cli.parser"))
print("RESULT", code, heavy, commands)
"""


def probe(argv: list) -> tuple:
    out = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True,
                         timeout=120)
    line = [x for x in out.stdout.splitlines() if x.startswith("RESULT")][0]
    _, code, rest = line.split(" ", 2)
    heavy, commands = rest.split("] [")
    return int(code), heavy.strip("[]"), commands.strip("[]")


@pytest.mark.parametrize("argv", [["--help"], ["--version"], [], ["no-such-command"]])
def test_help_and_version_import_nothing_heavy(argv):
    code, heavy, commands = probe(argv)
    assert code == (0 if argv in (["--help"], ["--version"]) else 2)
    assert heavy == "" and commands == ""


def test_a_command_imports_its_own_module_only():
    """Of the command modules (COMMANDS), ``probanon swap`` imports swapping's only (besides the
    command line's shared modules: options, progress, findings)."""
    from probanon.cli.parser import COMMANDS

    code, heavy, commands = probe(["swap", "--help"])
    assert code == 0
    imported = {name.strip("'").rsplit(".", 1)[1] for name in commands.split(", ")}
    assert imported & {command.module for command in COMMANDS.values()} == {"swapping"}
    assert imported - {"swapping"} <= {"options", "progress", "findings"}


def test_a_terminal_sees_a_first_line_before_the_heavy_imports(tmp_path):
    """Under a pseudo-terminal the first bytes on stderr say the command started, before NumPy and
    pandas load; the line is erased (carriage return, erase to end of line) once they have."""
    main, child = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "probanon.cli", "datasets"], stdin=child, stdout=subprocess.PIPE,
                            stderr=child, cwd=tmp_path)
    os.close(child)
    seen = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    proc.communicate(timeout=120)
    os.close(main)
    assert proc.returncode == 0
    assert seen.startswith(b"probanon datasets: starting ...")
    assert b"\r\x1b[K" in seen


def test_no_line_in_a_pipe():
    out = subprocess.run([sys.executable, "-m", "probanon.cli", "datasets"], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "starting" not in out.stderr

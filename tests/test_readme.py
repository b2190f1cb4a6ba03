"""Every example of the README runs as printed (issue 13, point 12): the shell blocks after
"## Examples" in order, each command within its time limit, then the Python block; and they run
from an installed wheel, with only the data it ships (issue 39, point 9).

The wheel is built by pip from a copy of the repository's files (what a clean clone holds) with
../shared beside it, as CI's clone has, and installed into a fresh virtual environment; the
examples then run in a folder with no ../shared, on the PATH of that environment only. Offline:
the wheel is built with this environment's setuptools when it is recent enough (else pip's
isolated build fetches one from the index), installed with --no-deps --no-index, and the
dependencies come from this environment's site-packages, listed in a .pth file of the fresh
one (after its own site-packages, so the installed probanon is the one imported; a .pth line is
a plain path, so the editable install of this environment is not loaded there). The fresh
environment is made anew each time at a fixed place (.pytest_cache/readme-wheel), with numba's
cache beside it, so that kernels compiled by a previous run of the test are reused as a user's
cache would be.
"""

import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import time
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIMIT = 120  # seconds per command: "under a minute" warm, with room for a cold numba compilation
PLACE = ROOT / ".pytest_cache" / "readme-wheel"


def _repository_files() -> list[str]:
    """The files a clone holds (tracked, or new and not ignored), as in the work tree now."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def _run(argv, **kwargs):
    run = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert run.returncode == 0, f"{argv}\n{run.stdout[-2000:]}\n{run.stderr[-3000:]}"
    return run


def _recent_setuptools() -> bool:
    try:
        return int(metadata.version("setuptools").split(".")[0]) >= 77
    except metadata.PackageNotFoundError:
        return False


@pytest.fixture(scope="module")
def installed(tmp_path_factory, shared_data):
    """(environment variables, folder) to run the README's commands in: probanon from its wheel."""
    build = tmp_path_factory.mktemp("clone")
    (build / "shared").symlink_to(shared_data.parent)
    for name in _repository_files():
        (build / "repo" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, build / "repo" / name)
    assert not (build / "repo" / "probanon" / "datasets" / "data").exists()  # never in the repository
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run([*pip, "wheel", "--no-deps", *(["--no-build-isolation"] if _recent_setuptools() else []),
          "-w", str(build / "dist"), str(build / "repo")], timeout=600)
    wheel, = (build / "dist").glob("probanon-*.whl")

    shutil.rmtree(PLACE / "venv", ignore_errors=True)
    PLACE.mkdir(parents=True, exist_ok=True)
    _run([sys.executable, "-m", "venv", str(PLACE / "venv")], timeout=300)
    python = PLACE / "venv" / "bin" / "python"
    _run([str(python), "-m", "pip", "--disable-pip-version-check", "-q", "install", "--no-deps", "--no-index",
          str(wheel)], timeout=300)
    fresh = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    ours = [p for p in dict.fromkeys([*site.getsitepackages(), sysconfig.get_paths()["purelib"]]) if Path(p).is_dir()]
    (Path(fresh) / "_probanon_test_dependencies.pth").write_text("".join(f"{p}\n" for p in ours))

    work = tmp_path_factory.mktemp("user") / "somewhere"  # no ../shared beside it
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "NUMBA_CACHE_DIR")}
    env.update(PATH=f"{python.parent}{os.pathsep}{env['PATH']}", NUMBA_CACHE_DIR=str(PLACE / "numba"))
    where = _run([str(python), "-c", "import probanon, probanon.datasets as d; print(probanon.__file__); "
                  "print(d.path('adult'))"], cwd=work, env=env).stdout.split()
    assert all(Path(p).is_relative_to(PLACE / "venv") for p in where), where
    return env, work


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
def test_readme_examples_run_as_printed_from_the_wheel(installed):
    env, work = installed
    ran = 0
    for lang, block in _blocks((ROOT / "README.md").read_text()):
        commands = [block] if lang == "python" else _commands(block)
        for command in commands:
            argv = ["python", "-c", command] if lang == "python" else ["bash", "-c", command]
            start = time.monotonic()
            run = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=LIMIT)
            took = time.monotonic() - start
            assert run.returncode == 0, f"{command}\n{run.stderr[-2000:]}"
            assert "Traceback" not in run.stderr, command
            assert took < LIMIT, (command, took)
            ran += 1
    assert ran >= 20


@pytest.mark.slow
def test_readme_survey_walkthrough_runs_as_printed_from_the_wheel(installed, tmp_path):
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
    env, _ = installed
    env = {k: v for k, v in env.items() if k != "PROBANON_TOKEN"}
    work = tmp_path / "somewhere"  # no ../shared beside it
    work.mkdir()
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

"""Do two versions of probanon write the same files? (issue 41: a structural step changes no output)

Runs the README's worked examples (the shell blocks from "Inputs are the example data sets" on:
datasets, risk, audit, microaggregate, evaluate, report, attack, apply, swap, survey, diversity,
km, reproduce, demo) once with each source tree, each in its own empty folder, and compares every
file they write byte for byte. A command that takes ``--seed`` and has none in the README gets
``--seed 7``, so that both runs draw the same record order. Files that embed the time of the run or
how long it took (HTML reports, figures) are compared after masking those figures, and listed
apart.

    PYTHONPATH=. .venv/bin/python benchmarks/compare_outputs.py OLD_TREE NEW_TREE

``OLD_TREE``: a checkout of the version before the step (``git worktree add /tmp/old COMMIT``);
``NEW_TREE``: this one. The new version runs twice: a file that differs between its own two
runs is not reproducible whatever the version (listed, not compared). Exit 0 when every other
file agrees. The old tree needs the data sets (``make datasets`` there, or a copy of
probanon/datasets/data/).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
START = "written into `data/` by the first command"
#: what a report or figure states about the run itself, not about the data
VOLATILE = [rb"\d{4}-\d\d-\d\dT?\s?\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)?", rb"\d+(\.\d+)? ?(s|ms|seconds)\b",
            rb"probanon \d+\.\d+\.\d+", rb"[\d.,]+ ?s/(run|fit|step)\b"]


def readme_commands(readme: Path) -> list[str]:
    """The shell commands of the README's example blocks (continuation lines joined)."""
    text = readme.read_text()
    text = text[text.index(START):]
    commands = []
    for block in re.findall(r"```\n(.*?)```", text, flags=re.S):
        lines = block.replace("\\\n", " ").splitlines()
        i = 0
        while i < len(lines):
            line = lines[i]
            if line.startswith('python -c "'):  # a multi-line python -c "..." up to its closing quote
                j = i
                while not lines[j].rstrip().endswith('"') or j == i and lines[j].count('"') < 2:
                    j += 1
                commands.append("\n".join(lines[i:j + 1]))
                i = j + 1
                continue
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append(line)
            i += 1
    return [c for c in commands if not c.startswith(("probanon serve", "probanon collector", "probanon survey check"))]


def seeded(command: str, takes_seed) -> str:
    if not command.startswith("probanon "):
        return command
    command = re.sub(r"\s+#.*$", "", command)  # a trailing comment
    head, sep, tail = command.partition(" || ")
    if "--seed" not in head and takes_seed(head):
        head = f"{head.rstrip()} --seed 7"
    return head + (f" {sep.strip()} {tail}" if sep else "")


def run(tree: Path, folder: Path, commands: list[str]) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0"}
    exe = Path(sys.executable).parent
    env["PATH"] = f"{exe}:{env['PATH']}"
    codes = {}
    for command in commands:
        t = time.perf_counter()
        done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True)
        codes[command] = (done.returncode, round(time.perf_counter() - t, 1), done.stdout)
    return codes


def files(folder: Path) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def masked(data: bytes) -> bytes:
    for pattern in VOLATILE:
        data = re.sub(pattern, b"#", data)
    return data


def main(old: str, new: str) -> int:
    old, new = Path(old).resolve(), Path(new).resolve()

    def takes_seed(words: str) -> bool:
        name = shlex.split(words)[1:3]
        name = name[:2] if name[0] in ("survey", "diversity", "km", "reproduce") else name[:1]
        out = subprocess.run([sys.executable, "-m", "probanon.cli", *name, "--help"], capture_output=True,
                             text=True, env={**os.environ, "PYTHONPATH": str(new)})
        return "--seed" in out.stdout

    commands = [seeded(c, takes_seed) for c in readme_commands(new / "README.md")]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, tree in (("old", old), ("new", new), ("new again", new)):
            folder = Path(tmp) / label
            folder.mkdir()
            results[label] = (run(tree, folder, commands), files(folder))
        (old_codes, old_files), (new_codes, new_files) = results["old"], results["new"]
        again = results["new again"][1]
        unstable = sorted(n for n in set(new_files) | set(again) if new_files.get(n) != again.get(n))
        print(f"{len(commands)} commands, each run with {old} and {new}")
        bad = 0
        for command in commands:
            (a, ta, out_a), (b, tb, out_b) = old_codes[command], new_codes[command]
            timing_only = out_a != out_b and masked(out_a.encode()) == masked(out_b.encode())
            same_out = "same stdout" if out_a == out_b else "same stdout but times" if timing_only else "STDOUT DIFFERS"
            flag = "" if a == b and (out_a == out_b or timing_only) else "  <-- DIFFERENT"
            bad += bool(flag)
            print(f"  exit {a}/{b}  {ta:6.1f} s / {tb:6.1f} s  {same_out}  {command.splitlines()[0][:90]}{flag}")
            if out_a != out_b and not timing_only:
                first = next(i for i, (x, y) in enumerate(zip(out_a.splitlines() + [""], out_b.splitlines() + [""]))
                             if x != y)
                print(f"      old: {(out_a.splitlines() + [''])[first][:110]}")
                print(f"      new: {(out_b.splitlines() + [''])[first][:110]}")
        names = sorted(set(old_files) | set(new_files))
        if unstable:  # two runs of one version disagree: the command is not reproducible, whatever the version
            print(f"{len(unstable)} files differ between two runs of the new version itself (not compared):")
            for n in unstable:
                print(f"  not reproducible: {n}")
        names = [n for n in names if n not in unstable]
        exact = [n for n in names if old_files.get(n) == new_files.get(n)]
        near = [n for n in names if n not in exact and n in old_files and n in new_files
                and masked(old_files[n]) == masked(new_files[n])]
        differ = [n for n in names if n not in exact and n not in near]
        print(f"{len(names)} files: {len(exact)} byte for byte the same, {len(near)} the same but for the run's "
              f"time or version, {len(differ)} different")
        for n in near:
            print(f"  same but for times: {n}")
        for n in differ:
            a, b = old_files.get(n), new_files.get(n)
            print(f"  DIFFERENT: {n} (old {'missing' if a is None else hashlib.sha256(a).hexdigest()[:12]}, "
                  f"new {'missing' if b is None else hashlib.sha256(b).hexdigest()[:12]})")
        return 0 if not differ and not bad else 1


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))

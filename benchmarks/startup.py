"""Start-up of the command line (issue 41.7): wall time of ``probanon --version``, ``--help``,
``probanon microaggregate --help`` and of importing the library, for one or two source trees,
interleaved in one run (this machine is shared: compare within a run), repeated; best and median.

    PYTHONPATH=. .venv/bin/python benchmarks/startup.py [OLD_TREE] NEW_TREE [--repeat 7]

Also the cumulative import time ``python -X importtime`` reports for ``import probanon.cli`` (what
the ``probanon`` script imports before it parses anything).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CASES = {
    "probanon --version": ["-m", "probanon.cli", "--version"],
    "probanon --help": ["-m", "probanon.cli", "--help"],
    "probanon microaggregate --help": ["-m", "probanon.cli", "microaggregate", "--help"],
    "import probanon.microagg": ["-c", "import probanon.microagg"],
}


def timed(tree: Path, argv: list) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    t = time.perf_counter()
    subprocess.run([sys.executable, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True, cwd=tempfile.gettempdir())  # not a source tree: PYTHONPATH decides
    return time.perf_counter() - t


def importtime(tree: Path) -> float:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    err = subprocess.run([sys.executable, "-X", "importtime", "-c", "import probanon.cli"], env=env,
                         capture_output=True, text=True, cwd=tempfile.gettempdir()).stderr
    line = [x for x in err.splitlines() if re.search(r"\|\s*probanon\.cli$", x)][-1]
    return int(line.split("|")[1]) / 1e6


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trees", nargs="+", type=Path)
    p.add_argument("--repeat", type=int, default=7)
    args = p.parse_args()
    times = {(tree, case): [] for tree in args.trees for case in CASES}
    for case, argv in CASES.items():  # warm the file cache once
        for tree in args.trees:
            timed(tree, argv)
    for _ in range(args.repeat):
        for case, argv in CASES.items():
            for tree in args.trees:
                times[tree, case].append(timed(tree, argv))
    print(f"{sys.executable}, {args.repeat} runs each, interleaved; seconds, best / median")
    for case in CASES:
        row = "   ".join(f"{tree}: {min(times[tree, case]):.3f} / {statistics.median(times[tree, case]):.3f}"
                         for tree in args.trees)
        print(f"  {case:<32} {row}")
    row = "   ".join(f"{tree}: {importtime(tree):.3f}" for tree in args.trees)
    print(f"  {'-X importtime probanon.cli':<32} {row}")


if __name__ == "__main__":
    main()

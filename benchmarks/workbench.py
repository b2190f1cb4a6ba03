"""The browser workbench (``probanon workbench``, :mod:`probanon.workbench`) on a large file, through
its real HTTP API, as its page drives it.

A survey-like CSV file of --rows records (default 10^6) and 20 columns is written once (seeded
numpy Generator: 10 numeric columns, 5 of whole numbers and 5 of decimals with some missing
values; 8 text columns of 2 to ~200 categories, Zipf-like frequencies, a few missing; an id-like
text column, distinct per record; a positive sampling weight). Its in-memory size is the pandas
DataFrame's ``memory_usage(deep=True).sum()`` as :func:`probanon.data.read_table` reads it (the
workbench's own ``bench.source.frame``, measured after the run).

The workbench runs in a child process (``probanon.workbench.server.running(folder, seed)``, one
fresh process per measurement), so that its memory is that process's alone; the benchmark talks to
it with urllib and ``Authorization: Bearer TOKEN``. Measured:

1. time to the first table page: from sending ``POST /api/open {path, version}`` until
   ``GET /api/table?offset=0&limit=50`` (polled every 0.05 s) answers with rows (target < 3 s);
2. time to the column summaries: from the same POST until ``GET /api/columns`` (polled every
   0.1 s, as the page polls) answers non-null "summaries" (target < 30 s); the server's step log
   says how much of it was reading the file (``read_table``), the rest being the summaries;
3. memory: the server process's peak resident set (/proc/PID/status VmHWM, reset through
   /proc/PID/clear_refs just before the POST where the kernel allows it) minus its VmRSS just before
   the POST, against the file's in-memory size (target < 3x);
4. risk update on a --risk-rows file (default 10^5) of the same generator: roles set
   (``POST /api/roles``: 3 numeric keys, 3 categorical keys, 2 confidential, the weight, the id
   dropped, the rest kept), then per repeat a recoding step (``POST /api/prepare``: intervals of
   width 5, 6, ... of the key "age", the previous one undone first, so that no repeat finds its
   preparation cached) followed by ``POST /api/risk {"k": 3}`` until its job
   (``GET /api/jobs/ID``, polled every 0.02 s) is "done": the latency of step + risk, then of the
   risk alone on the same state (target < 2 s each); best and median of --repeat; the first risk
   (numba compiling, untimed in the others) is printed beside them.

No peer is measured: sdcMicro's browser interface sdcApp (R Shiny) cannot be run here, and its
issues #251 and #276 report the browser freezing on files of this size, which is the behaviour
these targets exclude.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/workbench.py
    PYTHONPATH=. .venv/bin/python benchmarks/workbench.py --rows 200000 --risk-rows 20000 --repeat 3
    PYTHONPATH=. .venv/bin/python benchmarks/workbench.py --folder /tmp/wb --open-repeat 3   # files kept and reused
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent

TARGET_FIRST_PAGE = 3.0
TARGET_SUMMARIES = 30.0
TARGET_MEMORY = 3.0
TARGET_RISK = 2.0

ROLES = {"age": "key", "hhsize": "key", "children": "key",
         "sex": "categorical key", "region": "categorical key", "marital": "categorical key",
         "income": "confidential", "expenditure": "confidential",
         "weight": "weight", "person_id": "drop"}
STEP_COLUMN = "age"

# the workbench in a child process: prints {"base", "token", "pid"}, then answers "size" with the
# in-memory size of the table it holds, until "quit" or the end of its standard input
CHILD = r"""
import json, os, sys
import pandas as pd
from probanon.workbench.server import running
with running(folder=sys.argv[1], seed=int(sys.argv[2]), timeout=60) as (base, token, bench):
    print(json.dumps({"base": base, "token": token, "pid": os.getpid()}), flush=True)
    for line in sys.stdin:
        if line.strip() == "size":
            f = bench.source.frame
            print(json.dumps({"bytes": int(f.memory_usage(deep=True).sum()), "records": len(f),
                              "columns": int(f.shape[1]),
                              "text_columns": int(sum(not pd.api.types.is_numeric_dtype(t) for t in f.dtypes)),
                              "text_dtype": sorted({str(t) for t in f.dtypes if not pd.api.types.is_numeric_dtype(t)})}), flush=True)
        else:
            break
"""


# --- the file -------------------------------------------------------------------------------------
def _zipf(rng, labels, n, s=1.1, missing=0.0):
    """``n`` draws of ``labels`` with Zipf-like frequencies (rank ** -s), shuffled ranks; a share
    ``missing`` of them empty."""
    p = np.arange(1, len(labels) + 1, dtype=float) ** -s
    rng.shuffle(p)
    out = np.asarray(labels, dtype=object)[rng.choice(len(labels), size=n, p=p / p.sum())]
    if missing:
        out[rng.random(n) < missing] = None
    return out


def survey(n: int, seed: int) -> pd.DataFrame:
    """``n`` records of the survey-like table (module docstring)."""
    rng = np.random.default_rng(seed)
    age = np.clip(rng.normal(42, 20, n), 0, 99).astype(np.int64)
    hhsize = np.clip(rng.poisson(1.6, n) + 1, 1, 12)
    children = np.minimum(rng.poisson(0.4 * (hhsize - 1)), hhsize - 1)
    hours = np.where(rng.random(n) < 0.35, 0, np.clip(rng.normal(38, 9, n), 1, 80)).astype(np.int64)
    years = np.clip(rng.exponential(12, n), 0, age).astype(np.int64)
    income = np.round(rng.lognormal(10.2, 0.7, n), 2)
    income[rng.random(n) < 0.03] = np.nan
    expenditure = np.round(income * rng.uniform(0.4, 1.1, n), 2)
    savings = np.round(rng.normal(0, 1, n) * 8000 + 0.1 * np.nan_to_num(income), 2)
    savings[rng.random(n) < 0.10] = np.nan
    bmi = np.round(rng.normal(26, 4.5, n), 1)
    commute = np.round(rng.gamma(2.0, 6.0, n), 1)
    frame = pd.DataFrame({
        "person_id": np.char.add("P", np.char.zfill(rng.permutation(n).astype(str), 8)),
        "age": age, "hhsize": hhsize, "children": children, "hours_week": hours, "years_resident": years,
        "income": income, "expenditure": expenditure, "savings": savings, "bmi": bmi, "commute_km": commute,
        "sex": _zipf(rng, ["female", "male"], n, s=0.05),
        "marital": _zipf(rng, ["single", "married", "divorced", "widowed", "separated"], n, missing=0.01),
        "tenure": _zipf(rng, ["owner", "mortgage", "rented", "free of charge"], n),
        "education": _zipf(rng, ["none", "primary", "lower secondary", "upper secondary", "post-secondary",
                                 "short tertiary", "bachelor", "master or doctorate"], n, s=0.6),
        "region": _zipf(rng, [f"region {c}" for c in "ABCDEFGHIJKL"], n, s=0.7),
        "occupation": _zipf(rng, [f"occupation {i:02d}" for i in range(1, 43)], n, missing=0.04),
        "nationality": _zipf(rng, [f"country {i:02d}" for i in range(1, 61)], n, s=1.8),
        "municipality": _zipf(rng, [f"municipality {i:03d}" for i in range(1, 201)], n),
        "weight": np.round(rng.uniform(40, 600, n), 3),
    })
    return frame


def write_file(folder: Path, n: int, seed: int) -> tuple[Path, float | None]:
    """The file of ``n`` records in ``folder`` (reused when there already): (path, seconds to write)."""
    path = folder / f"survey-{n}-seed{seed}.csv"
    if path.is_file():
        return path, None
    t = time.perf_counter()
    partial = path.with_suffix(".partial")
    survey(n, seed).to_csv(partial, index=False)
    partial.rename(path)
    return path, time.perf_counter() - t


# --- the workbench in a child process ---------------------------------------------------------------
class Server:
    """``running(...)`` in a child process; ``call`` its API."""

    def __init__(self, folder: Path, seed: int):
        self.log = open(folder / "server-stderr.txt", "ab")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, str(folder / "session"), str(seed)], cwd=ROOT,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
                                     text=True)
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the workbench did not start (see {self.log.name})")
        hello = json.loads(line)
        self.base, self.token, self.pid = hello["base"], hello["token"], hello["pid"]

    def call(self, method: str, path: str, body: dict | None = None, timeout: float = 600):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Authorization": f"Bearer {self.token}",
                                                  **({"Content-Type": "application/json"} if body is not None else {})})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"{method} {path}: HTTP {exc.code}: {exc.read().decode(errors='replace')[:300]}") \
                from None

    def status(self) -> dict:
        """VmRSS and VmHWM of the server process, in bytes."""
        out = {}
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                out[name] = int(value.split()[0]) * 1024
        return out

    def reset_peak(self) -> bool:
        """VmHWM reset to the current VmRSS (Linux >= 4.0: "5" into clear_refs); False if refused."""
        try:
            Path(f"/proc/{self.pid}/clear_refs").write_text("5")
            return True
        except OSError:
            return False

    def size(self) -> dict:
        self.proc.stdin.write("size\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.close()
            self.proc.wait(60)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def wait_job(server: Server, job: dict, poll: float, timeout: float = 600) -> dict:
    deadline = time.perf_counter() + timeout
    while job["status"] == "running":
        if time.perf_counter() > deadline:
            raise RuntimeError(f"job {job['id']} ({job['kind']}) still running after {timeout} s")
        time.sleep(poll)
        job = server.call("GET", f"/api/jobs/{job['id']}")
    if job["status"] != "done":
        raise RuntimeError(f"job {job['id']} ({job['kind']}) {job['status']}: {job['error']}")
    return job


# --- the measurements -------------------------------------------------------------------------------
def measure_open(folder: Path, path: Path, seed: int) -> dict:
    """Times to the first page and to the summaries, memory, in a fresh workbench process."""
    server = Server(folder, seed)
    try:
        version = server.call("GET", "/api/session")["version"]
        time.sleep(0.5)  # the server settled
        before = server.status()
        reset = server.reset_peak()
        sampled = before["VmRSS"]
        t0 = time.perf_counter()
        job = server.call("POST", "/api/open", {"path": str(path), "version": version})
        first_page = None
        while first_page is None:
            page = server.call("GET", "/api/table?offset=0&limit=50")
            if page.get("rows"):
                first_page = time.perf_counter() - t0
                first_rows, first_loading = len(page["rows"]), page.get("loading")
            else:
                time.sleep(0.05)
        summaries = None
        while summaries is None:
            got = server.call("GET", "/api/columns")
            if got.get("summaries") is not None:
                summaries = time.perf_counter() - t0
            else:
                sampled = max(sampled, server.status()["VmRSS"])
                time.sleep(0.1)
                if time.perf_counter() - t0 > 1800:
                    raise RuntimeError("no column summaries after 30 minutes")
        after = server.status()
        job = wait_job(server, server.call("GET", f"/api/jobs/{job['id']}"), 0.1)
        log = server.call("GET", "/api/session")["log"]
        read = [e["seconds"] for e in log if e["what"].startswith("read ") and e["seconds"] is not None]
        size = server.size()
    finally:
        server.close()
    peak = after["VmHWM"] if reset else max(sampled, after["VmRSS"])
    return {"first_page": first_page, "first_rows": first_rows, "first_loading": first_loading,
            "summaries": summaries, "read_seconds": read[-1] if read else None, "job_seconds": job["seconds"],
            "rss_before": before["VmRSS"], "peak": peak, "rss_after": after["VmRSS"], "peak_reset": reset,
            "size": size}


def measure_risk(folder: Path, path: Path, seed: int, repeat: int) -> dict:
    """Step + risk and risk alone on the file ``path``, in a fresh workbench process."""
    server = Server(folder, seed)
    try:
        version = server.call("GET", "/api/session")["version"]
        wait_job(server, server.call("POST", "/api/open", {"path": str(path), "version": version}), 0.05)
        session = server.call("GET", "/api/session")
        columns = session["file"]["columns"]
        roles = {c: ROLES.get(c, "keep") for c in columns}
        version = server.call("POST", "/api/roles", {"roles": roles, "version": session["version"]})["version"]
        t = time.perf_counter()
        first = wait_job(server, server.call("POST", "/api/risk", {"k": 3}), 0.02)
        cold = time.perf_counter() - t
        step_risk, risk_alone, server_risk = [], [], []
        for i in range(repeat):
            if i:
                version = server.call("POST", "/api/undo", {"version": version})["version"]
            step = {"kind": "intervals", "column": STEP_COLUMN, "width": 5 + i}
            t = time.perf_counter()
            version = server.call("POST", "/api/prepare", {"step": step, "version": version})["version"]
            job = wait_job(server, server.call("POST", "/api/risk", {"k": 3}), 0.02)
            step_risk.append(time.perf_counter() - t)
            t = time.perf_counter()
            job = wait_job(server, server.call("POST", "/api/risk", {"k": 3}), 0.02)
            risk_alone.append(time.perf_counter() - t)
            server_risk.append(job["result"]["seconds"])
        result = job["result"]
    finally:
        server.close()
    return {"records": result["records"], "keys": result["keys"], "cold": cold, "cold_server": first["result"]["seconds"],
            "step_risk": step_risk, "risk_alone": risk_alone, "server_risk": server_risk,
            "k_achieved": result["k_achieved"], "sample_uniques": result["sample_uniques"]}


def gib(b: float) -> str:
    return f"{b / 2**30:.2f} GiB" if abs(b) >= 2**30 else f"{b / 2**20:.0f} MiB"


def verdict(value: float, target: float) -> str:
    return "met" if value < target else "MISSED"


def best_median(xs) -> str:
    return f"{min(xs):.2f} / {statistics.median(xs):.2f} s"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000, help="records of the large file")
    p.add_argument("--risk-rows", type=int, default=100_000, help="records of the file of the risk updates")
    p.add_argument("--repeat", type=int, default=5, help="risk updates timed (best and median)")
    p.add_argument("--open-repeat", type=int, default=1, help="openings of the large file, each in a fresh process")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--folder", default=None, help="where the files go (kept and reused; default: a temporary "
                                                  "folder, removed at the end)")
    args = p.parse_args(argv)
    folder = Path(args.folder) if args.folder else Path(tempfile.mkdtemp(prefix="probanon-bench-workbench-"))
    folder.mkdir(parents=True, exist_ok=True)
    load_start = os.getloadavg()
    print(f"# benchmarks/workbench.py {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, load average at "
          f"start {' '.join(f'{x:.2f}' for x in load_start)}; the workbench in a child process "
          f"({sys.executable}); no peer (sdcApp cannot be run here)", flush=True)
    try:
        big, secs = write_file(folder, args.rows, args.seed)
        small, secs2 = write_file(folder, args.risk_rows, args.seed)
        print(f"files: {big} ({big.stat().st_size / 2**20:.0f} MiB on disk"
              + (f", written in {secs:.0f} s" if secs is not None else ", reused") + f"), {small} "
              f"({small.stat().st_size / 2**20:.1f} MiB)", flush=True)

        opened = []
        for i in range(args.open_repeat):
            r = measure_open(folder, big, args.seed)
            opened.append(r)
            print(f"open {i + 1}: first page {r['first_page']:.2f} s ({r['first_rows']} rows, loading "
                  f"{r['first_loading']}), summaries {r['summaries']:.2f} s (read_table {r['read_seconds']:.2f} s "
                  f"in the server's log, the open job {r['job_seconds']:.2f} s), RSS before {gib(r['rss_before'])}, "
                  f"peak {gib(r['peak'])} ({'VmHWM after a reset' if r['peak_reset'] else 'sampled VmRSS'}), "
                  f"after {gib(r['rss_after'])}; load {os.getloadavg()[0]:.2f}", flush=True)
        size = opened[0]["size"]
        print(f"in memory (read_table's DataFrame, memory_usage(deep=True)): {gib(size['bytes'])} for "
              f"{size['records']:,} records, {size['columns']} columns ({size['text_columns']} of text, dtype "
              f"{', '.join(size['text_dtype'])})", flush=True)

        risk = measure_risk(folder, small, args.seed, args.repeat)
        print(f"risk: {risk['records']:,} records, keys {', '.join(risk['keys'])}, k achieved {risk['k_achieved']}, "
              f"sample uniques {risk['sample_uniques']:,}; first risk (cold) {risk['cold']:.2f} s "
              f"(server {risk['cold_server']:.2f} s); step + risk "
              f"{', '.join(f'{x:.2f}' for x in risk['step_risk'])} s; risk alone "
              f"{', '.join(f'{x:.2f}' for x in risk['risk_alone'])} s (server's job "
              f"{', '.join(f'{x:.2f}' for x in risk['server_risk'])} s); load {os.getloadavg()[0]:.2f}", flush=True)
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)

    first = [r["first_page"] for r in opened]
    summ = [r["summaries"] for r in opened]
    ratios = [(r["peak"] - r["rss_before"]) / r["size"]["bytes"] for r in opened]
    how = "" if len(opened) == 1 else f", best / median of {len(opened)}"
    rows = [
        (f"time to first table page ({args.rows:,} rows{how})",
         f"{min(first):.2f} s" if len(first) == 1 else best_median(first), f"< {TARGET_FIRST_PAGE:g} s",
         verdict(min(first), TARGET_FIRST_PAGE)),
        (f"time to column summaries ({args.rows:,} rows{how})",
         f"{min(summ):.2f} s" if len(summ) == 1 else best_median(summ), f"< {TARGET_SUMMARIES:g} s",
         verdict(min(summ), TARGET_SUMMARIES)),
        ("  of which read_table (server's log)", f"{min(r['read_seconds'] for r in opened):.2f} s", "", ""),
        ("peak RSS increase / in-memory size",
         f"{gib(opened[0]['peak'] - opened[0]['rss_before'])} / {gib(size['bytes'])} = {min(ratios):.2f}x",
         f"< {TARGET_MEMORY:g}x", verdict(min(ratios), TARGET_MEMORY)),
        (f"step + risk ({risk['records']:,} rows), best / median of {args.repeat}", best_median(risk["step_risk"]),
         f"< {TARGET_RISK:g} s", verdict(statistics.median(risk["step_risk"]), TARGET_RISK)),
        (f"risk alone ({risk['records']:,} rows), best / median of {args.repeat}", best_median(risk["risk_alone"]),
         f"< {TARGET_RISK:g} s", verdict(statistics.median(risk["risk_alone"]), TARGET_RISK)),
    ]
    print()
    width = max(len(r[0]) for r in rows)
    for name, value, target, ok in rows:
        print(f"{name:<{width}}  {value:<36} {target:<7} {ok}")
    print(f"\nload average at start {' '.join(f'{x:.2f}' for x in load_start)}, at end "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

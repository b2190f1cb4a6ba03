"""Parallel numba kernels with and without a competing CPU-bound process (issue 16, point 5).

For each kernel (MDAV fit 50,000 x 10 and 100,000 x 10 at k = 5; ordered-balls and
power-diagram assignment of 200,000 x 10 records to 1,000 cells; the offsets' assignment
``offsets._assign`` of a 100,000 x 400 cost matrix, 5 calls; PCL's kicks on two threads, in
two halves of the cells and in two restarts, :func:`kick_kernels`; a whole PCL fit of
20,000 x 10, :func:`pcl_kernels`) it times

  (a) idle machine, numba's default thread count      (b) idle, numba.set_num_threads(1)
  (c) one competing process, default threads           (d) one competing process, one thread

The competing process is a busy loop (``python -c "while True: pass"``) that this script
starts before (c)/(d) of each kernel and kills afterwards. Target: (c)/(d) <= 1.10 (medians).

Reference: the code of commit fe8de73 (before probanon._threads: always parallel above a
size, libgomp's default spinning wait), extracted with ``git archive`` to a temporary
directory and run in a child process in the same run, interleaved with (a) and (b): idle
for each kernel, and contended (default threads) once for MDAV 50,000 x 10. Target: (a) <= 1.10 x the reference's (a) (medians). Every result is
also compared with the reference's (same labels).

Run from the repository root (heavy: hold the benchmark lock)::

    flock /tmp/bench.lock env PYTHONPATH=. .venv/bin/python benchmarks/contention.py
    ... benchmarks/contention.py --repeat 5 --skip-reference [--only 'offsets|balls']
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

REF_COMMIT = "fe8de73"
ROOT = Path(__file__).resolve().parent.parent
SEED = 2026


def kernels():
    """(name, callable returning a result array) of every parallel kernel, on fixed data."""
    from probanon.microagg import MDAV, VMDAV
    from probanon.microagg.mdav import mdav_partition
    from probanon.microagg.offsets import _assign

    rng = np.random.default_rng(SEED)
    Z50, Z100 = rng.standard_normal((50_000, 10)), rng.standard_normal((100_000, 10))
    S, X = rng.standard_normal((5_000, 10)), rng.standard_normal((200_000, 10))
    balls, power = MDAV(k=5).fit(S).function_, VMDAV(k=5).fit(S).function_
    D, c = rng.random((100_000, 400)), rng.standard_normal(400) * 0.01

    def offsets5():
        return np.concatenate([_assign(D, c * i)[0] for i in range(5)])

    out = [
        ("MDAV fit 50,000 x 10, k=5", lambda: mdav_partition(Z50, 5).labels),
        ("MDAV fit 100,000 x 10, k=5", lambda: mdav_partition(Z100, 5).labels),
        ("ordered balls assign 200,000 x 10, 1,000 cells", lambda: balls.assign(X)),
        ("power diagram assign 200,000 x 10, 1,000 cells", lambda: power.assign(X)),
        ("offsets._assign 100,000 x 400, 5 calls", offsets5),
    ]
    return out + kick_kernels(Z100) + pcl_kernels(Z100)


def pcl_kernels(Z100):
    """A whole PCL fit (20,000 x 10, k = 5): the candidate kernels (pricing, pools, costs,
    scans), the kicks and the serial parts together, as a user runs it."""
    from probanon.microagg import PCL
    from probanon.microagg import local_search as ls

    if not hasattr(ls, "searches"):  # REF_COMMIT
        return []
    Z20 = Z100[:20_000]
    return [("PCL fit 20,000 x 10, k=5", lambda: PCL(k=5, random_state=0).fit(Z20).labels_)]


#: kernels added after REF_COMMIT (no reference: its kicks ran on one thread, other results;
#: its PCL took 178 s at 20,000 records)
NEW = ("PCL kicks", "PCL fit")


def kick_kernels(Z100):
    """PCL's kicks on two threads: two halves of 19,785 cells (100,000 x 10, k = 5, 20,000
    kicks, fixed sizes) and two restarts on 1,000 cells (5,000 x 10, k = 5, 10,000 kicks);
    both from the local search's optimum of MDAV's partition."""
    from probanon.microagg import local_search as ls
    from probanon.microagg.mdav import mdav_partition

    if not hasattr(ls, "searches"):  # REF_COMMIT: no such kernels
        return []
    Z5 = Z100[:5_000]
    start100 = ls.local_search(Z100, mdav_partition(Z100, 5).labels, 5)
    start5 = ls.local_search(Z5, mdav_partition(Z5, 5).labels, 5)
    return [
        ("PCL kicks in two halves 100,000 x 10, k=5, 20,000 kicks",
         lambda: ls.iterated_local_search(Z100, start100, 5, 20_000, np.random.default_rng(SEED))),
        ("PCL kicks, two restarts 5,000 x 10, k=5, 10,000 kicks",
         lambda: ls.iterated_local_search(Z5, start5, 5, 10_000, np.random.default_rng(SEED), restarts=2)),
    ]


def digest(a) -> str:
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()[:12]


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


class Competitor:
    """One CPU-bound busy-loop process for the duration of a with block."""

    def __enter__(self):
        self.proc = subprocess.Popen([sys.executable, "-c", "while True: pass"])
        time.sleep(0.3)
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def load() -> str:
    """1, 5, 15-minute load averages and running/total tasks (Linux), for the record."""
    return " ".join(open("/proc/loadavg").read().split()[:4]) if os.path.exists("/proc/loadavg") else "n/a"


def stats(ts):
    return min(ts), statistics.median(ts)


def fmt(ts):
    best, med = stats(ts)
    return f"{best:8.3f} {med:8.3f}"


# ---------------------------------------------------------------------------------------
# reference: the code of REF_COMMIT in a child process


def reference_tree() -> Path:
    """REF_COMMIT's probanon package extracted to a temporary directory (kept between runs
    so that its numba cache is reused)."""
    where = Path(os.environ.get("TMPDIR", "/tmp")) / f"probanon-ref-{REF_COMMIT}"
    if not (where / "probanon" / "__init__.py").exists():
        blob = subprocess.run(["git", "-C", str(ROOT), "archive", REF_COMMIT, "probanon"],
                              check=True, capture_output=True).stdout
        where.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            tar.extractall(where)
    return where


class Reference:
    """REF_COMMIT's kernels in a child process that runs one kernel per request, so that its
    timings interleave with this process's (the load of a shared machine drifts)."""

    def __init__(self):
        from probanon import _threads

        env = {k: v for k, v in os.environ.items() if k not in _threads.SET_HERE}  # libgomp's default
        env["PYTHONPATH"] = str(reference_tree())
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--child-reference"],
                                     env=env, cwd=env["PYTHONPATH"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.info = json.loads(self.proc.stdout.readline())  # after the warm-up of every kernel

    def run(self, i):
        self.proc.stdin.write(f"{i}\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit("the reference process ended")
        out = json.loads(line)
        return out["t"], out["digest"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def child_reference() -> int:
    import numba
    import probanon

    ks = kernels()
    for _, fn in ks:
        fn()  # JIT compile / cache load
    print(json.dumps({"module": probanon.__file__, "layer": numba.threading_layer()}), flush=True)
    for line in sys.stdin:
        t, out = timed(ks[int(line)][1])
        print(json.dumps({"t": t, "digest": digest(out)}), flush=True)
    return 0


# ---------------------------------------------------------------------------------------


def main(argv=()) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--only", metavar="REGEX", help="only the kernels whose name matches REGEX (re.search)")
    ap.add_argument("--child-reference", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(list(argv))
    if args.repeat < 1:
        raise SystemExit("--repeat must be >= 1")
    if args.child_reference:
        return child_reference()

    import numba

    from probanon import _threads

    threads = numba.get_num_threads()
    print("Parallel kernels under contention: one competing CPU-bound process (busy loop)")
    print(f"  numba {numba.__version__}, {threads} threads (cpu_count {os.cpu_count()}), "
          f"wait policy: " + ", ".join(f"{k}={os.environ.get(k)}" for k in _threads.WAIT_POLICY)
          + (" (set by probanon._threads)" if _threads.SET_HERE else " (set by the user)"))
    print(f"  repeat = {args.repeat}, times in seconds (best, median); load before: {load()}")
    ref = None if args.skip_reference else Reference()
    ok = True
    for i, (name, fn) in enumerate(kernels()):
        if args.only and not re.search(args.only, name):
            continue
        fn()  # JIT compile / cache load, threads started
        t = {"a": [], "b": [], "c": [], "d": [], "r": [], "rc": []}
        digests = set()

        def run(key, n):
            numba.set_num_threads(n)
            dt, out = timed(fn)
            numba.set_num_threads(threads)
            t[key].append(dt)
            digests.add(digest(out))

        for _ in range(args.repeat):  # interleaved: a drifting load hits every column alike
            if ref is not None and not name.startswith(NEW):
                dt, dg = ref.run(i)
                t["r"].append(dt)
                digests.add(dg)
            run("a", threads)
            run("b", 1)
        with Competitor():
            for _ in range(args.repeat):
                run("c", threads)
                run("d", 1)
            if ref is not None and i == 0:
                t["rc"].append(ref.run(i)[0])
        cd = stats(t["c"])[1] / stats(t["d"])[1]
        line = f"{name}\n    (a) idle, {threads} threads  {fmt(t['a'])}    (b) idle, 1 thread  {fmt(t['b'])}\n" \
               f"    (c) contended, {threads} thr {fmt(t['c'])}    (d) contended, 1 thr {fmt(t['d'])}\n" \
               f"    (c)/(d) median {cd:5.2f} (best {stats(t['c'])[0] / stats(t['d'])[0]:4.2f}; target <= 1.10: " \
               f"{'PASS' if cd <= 1.10 else 'FAIL'})"
        ok &= cd <= 1.10
        if ref is not None and t["r"]:
            ar = stats(t["a"])[1] / stats(t["r"])[1]
            ok &= ar <= 1.10
            line += f"\n    reference {REF_COMMIT} idle {fmt(t['r'])}    (a)/reference median {ar:4.2f} " \
                    f"(best {stats(t['a'])[0] / stats(t['r'])[0]:4.2f}; target <= 1.10: {'PASS' if ar <= 1.10 else 'FAIL'})"
            if t["rc"]:
                line += f"\n    reference {REF_COMMIT} contended, {threads} threads, once: {t['rc'][0]:.3f} s " \
                        f"= {t['rc'][0] / stats(t['d'])[1]:.1f} x (d)"
        line += f"\n    same result in every run{' and the reference' if t['r'] else ''}: " \
                f"{'yes' if len(digests) == 1 else 'NO'}"
        ok &= len(digests) == 1
        print(line, flush=True)
    if ref is not None:
        ref.close()
        print(f"reference: {ref.info['module']} (threading layer {ref.info['layer']}, libgomp default wait)")
    print(f"load after: {load()}")
    print(f"all targets: {'PASS' if ok else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

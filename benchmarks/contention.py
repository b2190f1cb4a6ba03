"""Parallel numba kernels with and without a competing CPU-bound process (issue 16, point 5).

For each kernel (MDAV fit 50,000 x 10 and 100,000 x 10 at k = 5; ordered-balls and
power-diagram assignment of 200,000 x 10 records to 1,000 cells; the offsets' assignment
``offsets._assign`` of a 100,000 x 400 cost matrix, 5 calls) it times

  (a) idle machine, numba's default thread count      (b) idle, numba.set_num_threads(1)
  (c) one competing process, default threads           (d) one competing process, one thread

The competing process is a busy loop (``python -c "while True: pass"``) that this script
starts before (c)/(d) of each kernel and kills afterwards. Target: (c)/(d) <= 1.10 (medians).

Reference: the code of commit fe8de73 (before probanon._threads: always parallel above a
size, libgomp's default spinning wait), extracted with ``git archive`` to a temporary
directory and run in a child process in the same run: (a) of each kernel, and (c) of MDAV
50,000 x 10 once. Target: (a) <= 1.10 x the reference's (a) (medians). Every result is
also compared with the reference's (same labels).

Run from the repository root (heavy: hold the benchmark lock)::

    flock /tmp/bench.lock env PYTHONPATH=. .venv/bin/python benchmarks/contention.py
    ... benchmarks/contention.py --repeat 5 --skip-reference
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
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

    return [
        ("MDAV fit 50,000 x 10, k=5", lambda: mdav_partition(Z50, 5).labels),
        ("MDAV fit 100,000 x 10, k=5", lambda: mdav_partition(Z100, 5).labels),
        ("ordered balls assign 200,000 x 10, 1,000 cells", lambda: balls.assign(X)),
        ("power diagram assign 200,000 x 10, 1,000 cells", lambda: power.assign(X)),
        ("offsets._assign 100,000 x 400, 5 calls", offsets5),
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


def run_reference(repeat: int) -> dict:
    from probanon import _threads

    env = {k: v for k, v in os.environ.items() if k not in _threads.SET_HERE}  # libgomp's default wait
    env["PYTHONPATH"] = str(reference_tree())
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child-reference", "--repeat", str(repeat)],
                         env=env, cwd=env["PYTHONPATH"], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"reference run failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def child_reference(repeat: int) -> int:
    import numba
    import probanon

    res = {"module": probanon.__file__, "layer": None, "kernels": {}}
    for name, fn in kernels():
        fn()  # JIT compile / cache load
        ts, out = [], None
        for _ in range(repeat):
            t, out = timed(fn)
            ts.append(t)
        res["kernels"][name] = {"idle": ts, "digest": digest(out)}
        if name.startswith("MDAV fit 50,000"):
            with Competitor():
                res["kernels"][name]["contended"] = [timed(fn)[0]]
    res["layer"] = numba.threading_layer()
    print(json.dumps(res))
    return 0


# ---------------------------------------------------------------------------------------


def main(argv=()) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-reference", action="store_true")
    ap.add_argument("--child-reference", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(list(argv))
    if args.repeat < 1:
        raise SystemExit("--repeat must be >= 1")
    if args.child_reference:
        return child_reference(args.repeat)

    import numba

    from probanon import _threads

    threads = numba.get_num_threads()
    print("Parallel kernels under contention: one competing CPU-bound process (busy loop)")
    print(f"  numba {numba.__version__}, {threads} threads (cpu_count {os.cpu_count()}), "
          f"wait policy: " + ", ".join(f"{k}={os.environ.get(k)}" for k in _threads.WAIT_POLICY)
          + (" (set by probanon._threads)" if _threads.SET_HERE else " (set by the user)"))
    print(f"  repeat = {args.repeat}, times in seconds (best, median); load before: "
          f"{' '.join(open('/proc/loadavg').read().split()[:4]) if os.path.exists('/proc/loadavg') else 'n/a'}")
    ref = None if args.skip_reference else run_reference(args.repeat)
    rows, ok = [], True
    for name, fn in kernels():
        fn()  # JIT compile / cache load, threads started
        t = {"a": [], "b": [], "c": [], "d": []}
        digests = set()
        for phase in ("idle", "contended"):
            ctx = Competitor() if phase == "contended" else None
            if ctx:
                ctx.__enter__()
            try:
                for _ in range(args.repeat):  # interleaved: drifting load hits both alike
                    for key, n in (("a", threads), ("b", 1)):
                        key = key if phase == "idle" else chr(ord(key) + 2)
                        numba.set_num_threads(n)
                        dt, out = timed(fn)
                        t[key].append(dt)
                        digests.add(digest(out))
            finally:
                numba.set_num_threads(threads)
                if ctx:
                    ctx.__exit__(None, None, None)
        rows.append((name, t, digests))
        cd = stats(t["c"])[1] / stats(t["d"])[1]
        line = f"{name}\n    (a) idle, {threads} threads  {fmt(t['a'])}    (b) idle, 1 thread  {fmt(t['b'])}\n" \
               f"    (c) contended, {threads} thr {fmt(t['c'])}    (d) contended, 1 thr {fmt(t['d'])}\n" \
               f"    (c)/(d) median {cd:5.2f} (best {stats(t['c'])[0] / stats(t['d'])[0]:4.2f}; target <= 1.10: " \
               f"{'PASS' if cd <= 1.10 else 'FAIL'})"
        ok &= cd <= 1.10
        if ref is not None:
            r = ref["kernels"][name]
            ar = stats(t["a"])[1] / stats(r["idle"])[1]
            ok &= ar <= 1.10
            line += f"\n    reference {REF_COMMIT} idle {fmt(r['idle'])}    (a)/reference median {ar:4.2f} " \
                    f"(target <= 1.10: {'PASS' if ar <= 1.10 else 'FAIL'})"
            if "contended" in r:
                line += f"\n    reference {REF_COMMIT} contended, {threads} threads, once: {r['contended'][0]:.3f} s " \
                        f"= {r['contended'][0] / stats(t['d'])[1]:.1f} x (d)"
            digests.add(r["digest"])
        line += f"\n    same result in every run{' and the reference' if ref else ''}: " \
                f"{'yes' if len(digests) == 1 else 'NO'}"
        ok &= len(digests) == 1
        print(line, flush=True)
    if ref is not None:
        print(f"reference: {ref['module']} (threading layer {ref['layer']}, libgomp default wait)")
    print(f"load after: {' '.join(open('/proc/loadavg').read().split()[:4]) if os.path.exists('/proc/loadavg') else 'n/a'}")
    print(f"all targets: {'PASS' if ok else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

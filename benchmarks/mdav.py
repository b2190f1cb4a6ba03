"""Benchmark of classical MDAV (:func:`probanon.microagg.mdav.mdav_partition`).

Times the numba kernel (after a JIT warm-up) against the plain NumPy reference on standard
Gaussian data, checks that both engines return the same partition, fits the scaling
exponent of the numba times and measures the peak memory of one numba call.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/mdav.py
    PYTHONPATH=. .venv/bin/python benchmarks/mdav.py --sizes 20000 50000 --no-reference
    PYTHONPATH=. .venv/bin/python benchmarks/mdav.py --json mdav.json

Memory: each size is also run once in a fresh child process (the same script with the
internal option ``--mem-probe N``) where the peak resident set size (Linux VmHWM, reset
through /proc/self/clear_refs after data generation and warm-up) is compared with the
resident size just before the call. A fresh process keeps memory freed by earlier runs
from hiding the allocation. Without /proc the child falls back to ru_maxrss.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

import numba
import numpy as np

from probanon.microagg.mdav import mdav_partition

SEED = 2026
WARMUP_N = 2000


def make_data(n: int, d: int) -> np.ndarray:
    return np.random.default_rng(SEED).standard_normal((n, d))


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def same_partition(a, b) -> bool:
    return all(
        np.array_equal(getattr(a, f), getattr(b, f))
        for f in ("labels", "references", "radius2", "boundary")
    )


# ---------------------------------------------------------------------------------------
# memory


def _status_kb(field: str):
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_hwm() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _maxrss_kb() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r // 1024 if sys.platform == "darwin" else r  # bytes on macOS, KiB on Linux


def mem_probe(n: int, d: int, k: int) -> dict:
    """Run in a child: peak extra resident memory of one numba call on n x d data."""
    mdav_partition(make_data(WARMUP_N, d), k, engine="numba")
    Z = make_data(n, d)
    exact = _reset_hwm()
    before = _status_kb("VmRSS") if exact else _maxrss_kb()
    mdav_partition(Z, k, engine="numba")
    peak = _status_kb("VmHWM") if exact else _maxrss_kb()
    return {"n": n, "rss_before_kib": before, "rss_peak_kib": peak,
            "extra_kib": max(0, peak - before), "method": "VmHWM" if exact else "ru_maxrss"}


def run_mem_probe(n: int, d: int, k: int):
    cmd = [sys.executable, os.path.abspath(__file__), "--mem-probe", str(n), "--d", str(d),
           "--k", str(k)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError) as exc:
        print(f"  (memory probe for n={n} failed: {exc})", file=sys.stderr)
        return None


# ---------------------------------------------------------------------------------------
# main


def fmt_n(n: int) -> str:
    return f"{n:,}"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[20_000, 50_000, 100_000])
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--d", type=int, default=10)
    p.add_argument("--repeat", type=int, default=3, help="numba runs per size (best and median)")
    p.add_argument("--no-reference", action="store_true", help="skip the slow NumPy runs")
    p.add_argument("--reference-max", type=int, default=100_000,
                   help="largest n for the NumPy reference")
    p.add_argument("--no-memory", action="store_true", help="skip the memory probes")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    p.add_argument("--mem-probe", type=int, metavar="N", help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.mem_probe is not None:
        print(json.dumps(mem_probe(a.mem_probe, a.d, a.k)))
        return 0

    sizes = sorted(set(a.sizes))
    repeat = max(1, a.repeat)
    res = {
        "seed": SEED, "d": a.d, "k": a.k, "repeat": repeat, "sizes": sizes,
        "numba_threads": numba.get_num_threads(), "cpu_count": os.cpu_count(),
        "numba_version": numba.__version__, "numpy_version": np.__version__,
        "python": platform.python_version(), "rows": [],
    }

    print("MDAV benchmark: mdav_partition(Z, k) on standard Gaussian data")
    print(f"  d = {a.d}, k = {a.k}, seed = default_rng({SEED}), repeat = {repeat} (best / median)")
    print(f"  numba {numba.__version__}, numpy {np.__version__}, Python {platform.python_version()}")
    print(f"  numba threads: {numba.get_num_threads()} (cpu_count {os.cpu_count()})")

    t_warm, _ = timed(lambda: mdav_partition(make_data(WARMUP_N, a.d), a.k, engine="numba"))
    res["warmup_s"] = t_warm
    try:
        layer = numba.threading_layer()
    except ValueError:
        layer = "?"
    res["threading_layer"] = layer
    print(f"  threading layer: {layer}")
    print(f"  JIT warm-up ({fmt_n(WARMUP_N)} x {a.d}, compile or cache load): {t_warm:.3f} s")
    print()

    head = (f"{'n':>9} | {'numba best':>10} | {'numba med':>10} | {'numpy':>9} | "
            f"{'speed-up':>8} | {'same partition':>14} | {'groups':>7}")
    print(head)
    print("-" * len(head))
    for n in sizes:
        Z = make_data(n, a.d)
        times = []
        part = None
        for _ in range(repeat):
            t, part = timed(lambda: mdav_partition(Z, a.k, engine="numba"))
            times.append(t)
        row = {"n": n, "numba_times_s": times, "numba_best_s": min(times),
               "numba_median_s": statistics.median(times), "n_groups": part.n_groups,
               "numpy_s": None, "speedup": None, "same_partition": None}
        if not a.no_reference and n <= a.reference_max:
            t_ref, ref = timed(lambda: mdav_partition(Z, a.k, engine="numpy"))
            row["numpy_s"] = t_ref
            row["speedup"] = t_ref / row["numba_best_s"]
            row["same_partition"] = bool(same_partition(part, ref))
            del ref
        res["rows"].append(row)
        ref_s = f"{row['numpy_s']:8.2f}s" if row["numpy_s"] is not None else f"{'-':>9}"
        sp_s = f"{row['speedup']:7.1f}x" if row["speedup"] is not None else f"{'-':>8}"
        same = {True: "yes", False: "no", None: "-"}[row["same_partition"]]
        print(f"{fmt_n(n):>9} | {row['numba_best_s']:9.3f}s | {row['numba_median_s']:9.3f}s | "
              f"{ref_s} | {sp_s} | {same:>14} | {part.n_groups:>7}", flush=True)
        del Z, part
    print()

    # scaling: log(time) = a + b log(n)
    res["exponent_numba"] = res["exponent_numpy"] = None
    if len(sizes) >= 2:
        ln = np.log([r["n"] for r in res["rows"]])
        b = float(np.polyfit(ln, np.log([r["numba_best_s"] for r in res["rows"]]), 1)[0])
        res["exponent_numba"] = b
        line = f"scaling: time ~ n^{b:.2f} (numba, best times, fit over {len(sizes)} sizes; MDAV is O(n^2 d))"
        refrows = [r for r in res["rows"] if r["numpy_s"] is not None]
        if len(refrows) >= 2:
            bn = float(np.polyfit(np.log([r["n"] for r in refrows]),
                                  np.log([r["numpy_s"] for r in refrows]), 1)[0])
            res["exponent_numpy"] = bn
            line += f"; numpy reference ~ n^{bn:.2f}"
        print(line)
    else:
        print("scaling: needs at least two sizes")

    # memory
    res["memory"] = []
    if not a.no_memory:
        print("peak memory of one numba call (fresh process, extra resident memory over the "
              "resident size before the call):")
        for n in sizes:
            m = run_mem_probe(n, a.d, a.k)
            if m is None:
                continue
            m["input_mib"] = n * a.d * 8 / 2**20
            m["extra_bytes_per_value"] = m["extra_kib"] * 1024 / (n * a.d)
            res["memory"].append(m)
            print(f"  n = {fmt_n(n):>9}: +{m['extra_kib'] / 1024:7.1f} MiB "
                  f"(input Z {m['input_mib']:6.1f} MiB; {m['extra_bytes_per_value']:5.1f} bytes "
                  f"per value of Z; {m['method']})")
        if len(res["memory"]) >= 2 and all(m["extra_kib"] > 0 for m in res["memory"]):
            bm = float(np.polyfit(np.log([m["n"] for m in res["memory"]]),
                                  np.log([m["extra_kib"] for m in res["memory"]]), 1)[0])
            res["exponent_memory"] = bm
            print(f"  memory ~ n^{bm:.2f} (O(n d); an n x n distance matrix at "
                  f"n = {fmt_n(sizes[-1])} would be {sizes[-1] ** 2 * 8 / 2**30:.1f} GiB)")
    res["maxrss_this_process_mib"] = _maxrss_kb() / 1024
    incl = ", includes the NumPy reference runs" if any(r["numpy_s"] for r in res["rows"]) else ""
    print(f"peak RSS of this process (ru_maxrss{incl}): {res['maxrss_this_process_mib']:.1f} MiB")

    # target
    res["target_pass"] = None
    big = [r for r in res["rows"] if r["n"] == 100_000]
    if big and a.d == 10 and a.k == 5:
        best = big[0]["numba_best_s"]
        res["target_pass"] = best <= 2.5
        print(f"target: 100,000 x 10, k=5 <= 2.5 s after warm-up: "
              f"{'PASS' if best <= 2.5 else 'FAIL'} (best {best:.3f} s)")

    if a.json:
        with open(a.json, "w") as fh:
            json.dump(res, fh, indent=2)
        print(f"figures written to {a.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Survey design at national scale (issue 16.3): a 10^6-record frame, 10 Gaussian columns,
k = 10, pbar = 10^-3, constant pi = 0.6 and per-record pi_j ~ U[0.3, 0.9].

Prints, for the 10^6 frame: design time (constant pi: MDAV with cells of n_cell records;
per-record pi_j: the numba kernel), the time to verify the published specification (read from
its JSON file, every cell's failure recomputed) and to assign respondents (one, and a batch),
plus the references measured in the same run: MDAV on the same data with the same cell size
(the constant design's core), and the per-record code of 2026-11-23 (plain NumPy, read from
git) on smaller frames, extrapolated with its fitted exponent.

    .venv/bin/python benchmarks/scale_survey.py [--records N] [--quick]

Heavy (minutes, about 1 GB): run it under ``flock /tmp/bench.lock``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
from probanon.data import Standardizer
from probanon.microagg.mdav import mdav_partition
from probanon.survey.design import _per_record_partition, design, safe_cell_size
from probanon.survey.spec import assign, build_spec, verify

K, RISK, PI, COLUMNS = 10, 1e-3, 0.6, 10
OLD_COMMIT = "fe8de73"  # the last commit with the plain NumPy per-record design


def timed(f, *args, repeat=1, **kwargs):
    """(result of the last call f(*args, **kwargs), best, median) over ``repeat`` calls."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = f(*args, **kwargs)
        times.append(time.perf_counter() - t)
    return out, min(times), float(np.median(times))


def frame(n, seed=2026):
    r = np.random.default_rng(seed)
    return r.normal(size=(n, COLUMNS)), r.uniform(0.3, 0.9, n)


def old_per_record():
    """``_per_record_partition`` of probanon/survey/design.py at OLD_COMMIT (None without git)."""
    try:
        src = subprocess.run(["git", "-C", str(ROOT), "show", f"{OLD_COMMIT}:probanon/survey/design.py"],
                             capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    mod = types.ModuleType("probanon.survey._design_2026_11_23")
    mod.__package__ = "probanon.survey"
    sys.modules[mod.__name__] = mod  # its dataclass looks itself up there
    src = src.replace("@njit(cache=True)", "@njit")  # no cache locator for source from git
    exec(compile(src, f"design.py@{OLD_COMMIT}", "exec"), mod.__dict__)  # noqa: S102 (our own file from git)
    return mod._per_record_partition


def write_spec(path, spec):
    """As ``probanon survey design`` writes it."""
    path.write_text(json.dumps(spec, indent=1, allow_nan=False))


def zscore(X):
    return np.ascontiguousarray(Standardizer.fit(X).transform(X))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--quick", action="store_true", help="a 20,000-record frame (a smoke run)")
    args = ap.parse_args(argv)
    N = 20_000 if args.quick else args.records
    print(f"Survey design at scale (issue 16.3): k = {K}, pbar = {RISK:g}, {COLUMNS} Gaussian columns")
    print(f"  numba {numba.__version__}, numpy {np.__version__}, threads {numba.get_num_threads()} "
          f"(cpu_count {os.cpu_count()}), load average {os.getloadavg()[0]:.2f} at start")
    X, pis = frame(N)
    Z = zscore(X)
    t = time.perf_counter()
    design(X[:2000], K, pis[:2000], RISK), design(X[:2000], K, PI, RISK)
    print(f"  JIT warm-up (2,000 records, compile or cache load): {time.perf_counter() - t:.2f} s")
    n_cell = safe_cell_size(K, PI, RISK, N)

    print(f"\n1. constant pi = {PI}: MDAV with cells of n_cell = {n_cell} records ({N:,} records, one run each)")
    dc, tc, _ = timed(design, X, K, PI, RISK)
    _, tm, _ = timed(mdav_partition, Z, n_cell, keep_duplicates=True)
    print(f"  design (whole design(): MDAV, failures, centroids, function): {tc:8.1f} s, {len(dc.sizes):,} cells "
          f"of {dc.sizes.min()}..{dc.sizes.max()}, largest failure {dc.cell_failures.max():.3g}")
    print(f"  reference: mdav_partition(Z, {n_cell}, keep_duplicates=True) alone:   {tm:8.1f} s")

    print(f"\n2. per-record pi_j ~ U[0.3, 0.9] ({N:,} records)")
    ticks = []
    dp, tp, _ = timed(design, X, K, pis, RISK, progress=lambda *call: ticks.append(call))
    print(f"  design (numba kernel, {len(ticks)} progress reports): {tp:8.1f} s, {len(dp.sizes):,} cells of "
          f"{dp.sizes.min()}..{dp.sizes.max()} (mean {dp.sizes.mean():.1f}), largest failure "
          f"{dp.cell_failures.max():.3g}")
    old = old_per_record()
    if old is None:
        print("  reference: the 2026-11-23 NumPy code is not available (no git history)")
    else:
        sizes, best = [2000, 4000, 8000], []
        print(f"  reference: the per-record partition of {OLD_COMMIT} (plain NumPy), best / median of 3, "
              "against the kernel on the same rows:")
        for n in sizes:
            z = zscore(X[:n])
            ref, b, med = timed(old, z, pis[:n], K, RISK, repeat=3)
            new, nb, nmed = timed(_per_record_partition, z, pis[:n], K, RISK, repeat=3)
            same = all(np.array_equal(a, c) for a, c in zip(ref, new))
            best.append(b)
            print(f"    n = {n:6,}: NumPy {b:7.2f} / {med:7.2f} s, kernel {nb:6.3f} / {nmed:6.3f} s, "
                  f"same partition: {'yes' if same else 'NO'}")
        slope = np.polyfit(np.log(sizes), np.log(best), 1)[0]
        extra = best[-1] * (N / sizes[-1]) ** slope
        print(f"    NumPy time ~ n^{slope:.2f}: extrapolated to {N:,} records {extra:,.0f} s "
              f"({extra / 86400:.1f} days); the kernel took {tp:.1f} s ({extra / tp:,.0f}x)")

    print("\n3. the published specifications: written, verified from the file, respondents assigned")
    with tempfile.TemporaryDirectory() as tmp:
        for name, d in (("constant", dc), ("per-record", dp)):
            path = Path(tmp) / f"{name}.json"
            (spec, tb, _) = timed(build_spec, d)
            _, tw, _ = timed(write_spec, path, spec)
            v, tv, tvm = timed(verify, str(path), expected_digest=spec["digest"], repeat=3)
            cli, tcli, _ = timed(subprocess.run, [sys.executable, "-m", "probanon.cli", "survey", "verify", str(path),
                                                  "--digest", spec["digest"]], capture_output=True, check=False)
            print(f"  {name}: {len(spec['cells']):,} cells, {path.stat().st_size / 1e6:.1f} MB; build_spec {tb:.2f} s, "
                  f"write {tw:.2f} s")
            print(f"    verify(file, digest): best {tv:.2f} s, median {tvm:.2f} s; `probanon survey verify` "
                  f"(new process, exit {cli.returncode}): {tcli:.2f} s")
            for m in (1, 1000, 10_000):
                (cells, _), ta, tam = timed(assign, v, X[:m], repeat=3)
                ok = np.array_equal(cells, d.labels[:m])
                print(f"    assign {m:6,} respondent(s) (verified spec): best {ta:.4f} s, median {tam:.4f} s, "
                      f"cells as designed: {'yes' if ok else 'NO'}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS of this process: {peak:,.0f} MiB")
    print(f"targets (10^6 records, <= 600 s each): constant {tc:.0f} s {'PASS' if tc <= 600 else 'FAIL'}, "
          f"per-record {tp:.0f} s {'PASS' if tp <= 600 else 'FAIL'}" + ("" if N == 1_000_000 else f" (run at {N:,})"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

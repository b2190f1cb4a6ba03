"""Local suppression on Dask beyond 10^7 records (issue 43, "10^7 under 15 minutes (and on Dask
beyond)"): census-like records (benchmarks/_census_like.py: 8 keys of the issue's cardinalities)
as a directory of Parquet files, k-anonymity over every combination of at most 4 keys.

In one run, for each size: the single-process fast method (`local_suppression` on the files' rows
concatenated, in a child process: its time and peak memory) where it fits (--single-upto), and
`probanon.distributed.suppression.suppress_parquet` on a local cluster of --workers processes
(time, peak memory of this process and of each worker, read from the kernel's ru_maxrss). Where
both ran, the released files are compared with the single process's values, record by record.
A Dask release without a one-process run beside it is read back and its violations counted by
the benchmark's own counter (_census_like.violations: no probanon code) with a missing value
matching any value.

    PYTHONPATH=. .venv/bin/python benchmarks/categorical_dask.py --sizes 10000000 20000000 --single-upto 10000000
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "benchmarks"
# benchmarks/ after the packages: benchmarks/distributed.py is not Dask's package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE] + [str(HERE)]
from _census_like import census_like, violations  # noqa: E402

KEYS = ["age", "sex", "region", "marital", "education", "occupation", "citizenship", "hhsize"]
PER_FILE = 1_000_000


def peak_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def write_files(folder: Path, n: int, seed: int) -> None:
    """n census-like records in files of PER_FILE (each file its own households: seed + i)."""
    folder.mkdir(parents=True)
    for i, start in enumerate(range(0, n, PER_FILE)):
        frame = census_like(min(PER_FILE, n - start), seed=seed + i)[KEYS + ["weight"]]
        for c in KEYS:
            frame[c] = frame[c].astype(np.int16)
        frame.to_parquet(folder / f"part-{i:05d}.parquet", index=False)


def child_single(folder: str, k: int, m: int, out: str) -> dict:
    """In a fresh process: the fast method on the files concatenated; time, peak, the mask saved."""
    from probanon.categorical import local_suppression

    frame = pd.concat([pd.read_parquet(f, columns=KEYS) for f in sorted(Path(folder).glob("*.parquet"))],
                      ignore_index=True)
    local_suppression(frame.iloc[:20_000], KEYS, k, combinations=m, random_state=1)  # numba compiled before timing
    t = time.perf_counter()
    res = local_suppression(frame, KEYS, k, combinations=m, random_state=1)
    seconds = time.perf_counter() - t
    np.save(out, np.packbits(res.suppressed.to_numpy(), axis=None))
    return {"seconds": seconds, "peak_gib": peak_gib(), "total": res.total, "n_suppressed": res.n_suppressed,
            "after": res.violations_after.total}


def _worker_peak():
    import resource as r

    return r.getrusage(r.RUSAGE_SELF).ru_maxrss / 2**20


def run_dask(folder: Path, out: Path, k: int, m: int, workers: int) -> dict:
    """suppress_parquet on a fresh local cluster (in a child process, so that its peak is its own)."""
    cmd = [sys.executable, __file__, "--child-dask", str(folder), str(k), str(m), str(out), str(workers)]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if r.returncode:
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(r.stdout.strip().splitlines()[-1])


def child_dask(folder: str, k: int, m: int, out: str, workers: int) -> dict:
    from probanon.distributed import dask_client
    from probanon.distributed.suppression import suppress_parquet

    with dask_client(workers=workers) as client:
        # numba compiled on the workers before timing (a small folder of the same schema)
        small = Path(out).parent / "warm"
        small.mkdir(exist_ok=True)
        pd.read_parquet(sorted(Path(folder).glob("*.parquet"))[0]).iloc[:20_000].to_parquet(small / "a.parquet")
        suppress_parquet(client, small, KEYS, k, combinations=m, random_state=1)
        t = time.perf_counter()
        res = suppress_parquet(client, folder, KEYS, k, combinations=m, random_state=1, output=out, keep_order=True)
        seconds = time.perf_counter() - t
        workers_peak = sorted(client.run(_worker_peak).values())
    return {"seconds": seconds, "client_peak_gib": peak_gib(), "workers_peak_gib": workers_peak, "total": res.total,
            "n_suppressed": res.n_suppressed, "after": res.violations_after.total,
            "before": res.violations_before.total}


def independent(out: Path, k: int, m: int) -> tuple:
    """(records below k on some combination, combinations with one, combinations) of the release
    read back, by the benchmark's own counter."""
    X = np.concatenate([pd.read_parquet(f, columns=KEYS).to_numpy(dtype=np.float64, na_value=np.nan)
                        for f in sorted(out.glob("*.parquet"))])
    codes = np.full(X.shape, -1, dtype=np.int64)
    for j in range(X.shape[1]):
        present = ~np.isnan(X[:, j])
        codes[present, j] = pd.factorize(X[present, j])[0]
    return violations(codes, k, m)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[10_000_000, 20_000_000])
    p.add_argument("--single-upto", type=int, default=10_000_000, help="the single-process run at sizes up to this")
    p.add_argument("--k", type=int, default=3)
    p.add_argument("--combinations", type=int, default=4)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--tmp", default=None, help="where the files go (default: a temporary folder)")
    p.add_argument("--child-single", nargs=4, help=argparse.SUPPRESS)
    p.add_argument("--child-dask", nargs=5, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child_single:
        folder, k, m, out = args.child_single
        print(json.dumps(child_single(folder, int(k), int(m), out)))
        return 0
    if args.child_dask:
        folder, k, m, out, w = args.child_dask
        print(json.dumps(child_dask(folder, int(k), int(m), out, int(w))))
        return 0
    tmp = Path(tempfile.mkdtemp(dir=args.tmp))
    print(f"# benchmarks/categorical_dask.py {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}; k = {args.k}, every combination of at most {args.combinations} of "
          f"{len(KEYS)} keys; Dask: a local cluster of {args.workers} worker processes", flush=True)
    try:
        for n in args.sizes:
            folder = tmp / f"in-{n}"
            t = time.perf_counter()
            write_files(folder, n, seed=2026)
            print(f"\n{n:,} records in {len(list(folder.glob('*.parquet')))} Parquet files "
                  f"(written in {time.perf_counter() - t:.0f} s); load {os.getloadavg()[0]:.1f}", flush=True)
            single, released, theirs = None, None, None
            if n <= args.single_upto:
                mask = tmp / f"mask-{n}.npy"
                r = subprocess.run([sys.executable, __file__, "--child-single", str(folder), str(args.k),
                                    str(args.combinations), str(mask)], capture_output=True, text=True,
                                   env={**os.environ, "PYTHONPATH": str(ROOT)})
                single = (json.loads(r.stdout.strip().splitlines()[-1]) if r.returncode == 0 else
                          {"error": (r.stderr.strip().splitlines() or ["?"])[-1]})
                print(f"  one process:  {single}", flush=True)
            out = tmp / f"out-{n}.parquet"
            res = run_dask(folder, out, args.k, args.combinations, args.workers)
            print(f"  Dask:         {res}", flush=True)
            if "error" in res:
                continue
            if single and "error" not in single:
                released = np.concatenate([pd.read_parquet(f, columns=KEYS).isna().to_numpy()
                                           for f in sorted(out.glob("*.parquet"))])
                theirs = np.unpackbits(np.load(mask), count=released.size).reshape(released.shape).astype(bool)
                print(f"  the same values suppressed as one process, record by record: "
                      f"{bool((released == theirs).all())} ({int(released.sum()):,} values)", flush=True)
            if single and "error" not in single and bool((released == theirs).all()):
                print("  (the release is one process's, record by record: not counted again)", flush=True)
                shutil.rmtree(folder)
                shutil.rmtree(out)
                continue
            t = time.perf_counter()
            below, bad, total = independent(out, args.k, args.combinations)
            print(f"  counted by the benchmark on the release: {below:,} records below k = {args.k} in {bad} of "
                  f"{total} combinations ({time.perf_counter() - t:.0f} s)", flush=True)
            shutil.rmtree(folder)
            shutil.rmtree(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

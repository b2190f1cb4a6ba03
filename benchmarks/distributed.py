"""probanon on Dask (issue 19), printed beside the single-process figures of the same run.

    PYTHONPATH=. flock /tmp/bench.lock .venv/bin/python benchmarks/distributed.py --part blocks [--records N]

``blocks``  blocked MDAV (or ``--method pcl``) on a 10-D Gaussian of ``--records`` records (default
            10,000,000, k = 5, automatic blocks) written as 32 Parquet files: first through a
            2-worker ``LocalCluster`` with the files read by the workers and the release written
            by them (``fit_parquet``), then in this machine's own worker processes (``n_jobs =
            2``, the single-machine blocked path) on the rows read here. Printed: time, IL (100
            SSE/SST, computed here), the peak memory (VmHWM) of the client process (measured
            before it reads the data) and of each Dask worker, and whether the fits are identical.

The single-process run's peak is that of this process plus its worker processes (sampled every
0.2 s, :class:`scale_blocks.PeakMemory`).
"""

from __future__ import annotations

import argparse
import importlib.util
import resource
import sys
import time
from pathlib import Path

import numpy as np

# this file's name is the Dask package's: its folder must not come first on the path
HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE]
_spec = importlib.util.spec_from_file_location("scale_blocks", HERE / "scale_blocks.py")
scale_blocks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(scale_blocks)
K, PeakMemory, gaussian, il = scale_blocks.K, scale_blocks.PeakMemory, scale_blocks.gaussian, scale_blocks.il

from probanon.distributed import dask_client, describe  # noqa: E402
from probanon.microagg import MDAV, PCL  # noqa: E402


def _worker_peak() -> int:
    """The peak resident set (bytes) of the process it runs in (a Dask worker): VmHWM, per address
    space and reset by exec. (Not ru_maxrss: Linux keeps it across fork + exec, so a spawned worker
    reported its parent's peak at the time it was started.)"""
    return _own_peak()


def _reset_peak() -> None:
    """Start this process's VmHWM afresh at its current resident set (Linux >= 4.0)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def _own_peak() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))


def _write_partitions(folder: Path, n: int, files: int) -> None:
    """A 10-D Gaussian of n records as ``files`` Parquet files, generated one file at a time
    (file p from SeedSequence(0).spawn(files)[p]): this process never holds all of it."""
    import pandas as pd

    seeds = np.random.SeedSequence(0).spawn(files)
    for p in range(files):
        rows = n * (p + 1) // files - n * p // files
        X = np.random.default_rng(seeds[p]).normal(size=(rows, 10))
        pd.DataFrame(X, columns=[f"x{j}" for j in range(10)]).to_parquet(folder / f"part{p:03d}.parquet", index=False)


def part_blocks(n: int, method: str, block_size=None, files: int = 32) -> None:
    """Parquet directory in and out on Dask (:func:`probanon.distributed.partitioned.fit_parquet`,
    the data read by the workers), then the single-machine blocked fit of the same rows read
    here, in this machine's worker processes; the two must be identical."""
    import tempfile

    import pandas as pd

    from probanon.distributed.partitioned import fit_parquet

    cls = {"mdav": MDAV, "pcl": PCL}[method]
    params = {"random_state": 1, "block_size": block_size} if cls is PCL else {"block_size": block_size}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "in"
        folder.mkdir()
        _write_partitions(folder, n, files)
        print(f"Blocked {method.upper()} on a 10-D Gaussian of {n:,} records in {files} Parquet files "
              f"({sum(f.stat().st_size for f in folder.iterdir()) / 1e9:.2f} GB), k = {K}, "
              + (f"blocks of <= {block_size:,}" if block_size else "automatic blocks"), flush=True)
        with dask_client(workers=2) as client:
            print(f"  {describe(client)}", flush=True)
            start = time.perf_counter()
            remote = fit_parquet(client, cls(k=K, **params), folder, output=Path(tmp) / "out")
            t_dask = time.perf_counter() - start
            peaks = client.run(_own_peak)
        client_peak = _own_peak()
        written = sum(len(pd.read_parquet(f, columns=["x0"])) for f in (Path(tmp) / "out").iterdir())
        print(f"  Dask, 2-worker LocalCluster, Parquet in and out: {remote.n_blocks_} blocks of <= "
              f"{remote.block_size_:,}, {t_dask:.1f} s, client peak {client_peak / 1e9:.2f} GB, per worker "
              + ", ".join(f"{p / 1e9:.2f}" for p in peaks.values()) + f" GB; {written:,} records written", flush=True)
        frame = pd.concat([pd.read_parquet(f) for f in sorted(folder.iterdir())], ignore_index=True)
    X = frame.to_numpy()
    il_dask = il(X, remote.labels_)
    local = cls(k=K, n_jobs=2, **params)
    start = time.perf_counter()
    with PeakMemory() as memory:
        local.fit(frame)  # by column name, as the Parquet fit
    t_local = time.perf_counter() - start
    il_local = il(X, local.labels_)
    same = np.array_equal(remote.labels_, local.labels_) and remote.function_.to_json() == local.function_.to_json()
    print(f"  single machine, 2 worker processes:              {local.n_blocks_} blocks of <= {local.block_size_:,}, "
          f"{t_local:.1f} s, peak {memory.peak / 1e9:.2f} GB (process + workers, the data read in one array)")
    print(f"  IL: Dask {il_dask:.4f}, single machine {il_local:.4f}; same labels and function: "
          f"{'yes' if same else 'NO'}; Dask / single machine time {t_dask / t_local:.2f}")


def part_km(users: int, m: int, runs: int, mode: str = "sharded", local: bool = True, n_jobs: int = 1) -> None:
    """k^m (k = 20, sigma = .99, coordinate constraints) on a synthetic CDR of ``users`` users
    written as a FIMI file: on this machine (the file read here, ``n_jobs`` run processes), then
    through a 2-worker LocalCluster started afresh for each ``mode``: ``runs`` (the r runs as
    tasks, :func:`probanon.distributed.km.runs_on_dask`: the data read here and sent to every
    worker) and ``sharded`` (:class:`probanon.distributed.km.ShardedRecords`: each worker reads
    its half of the file; two runs at a time over both shards, ``at_once = 2``: the worker peaks
    hold two runs' record lists).

    Times include reading the file. Memory is the peak resident set (VmHWM) of each process over
    its phase: on this machine, of this process or of one forked run process (shared pages counted
    in each: ``ru_maxrss`` of the waited-for children, read before any Dask worker has ended); on
    Dask, of the client (reset before the phase, /proc/self/clear_refs) and of each worker
    process (started for the phase: VmHWM is per address space and reset by exec)."""
    import tempfile

    import pandas as pd

    from probanon.distributed.km import ShardedRecords, runs_on_dask
    from probanon.setvalued import anonymize, read_fimi
    from probanon.setvalued.cdr import generate_cdr, write_fimi
    from probanon.setvalued.constraints import constraints_from_coordinates

    cdr = generate_cdr(users, random_state=0)
    towers = pd.DataFrame({"item": np.arange(cdr.n_towers), "x": cdr.towers[:, 0], "y": cdr.towers[:, 1]})
    bounds = cdr.bounds

    def constraints():
        return constraints_from_coordinates(towers, bounds=bounds)

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "cdr.txt"
        write_fimi(cdr.indptr, cdr.indices, path)
        del cdr
        print(f"k^m on a synthetic CDR of {users:,} users (FIMI {path.stat().st_size / 1e6:.0f} MB), k = 20, m = {m}, "
              f"sigma = 0.99, r = {runs}, coordinate constraints", flush=True)
        reference = None
        if local:
            _reset_peak()
            start = time.perf_counter()
            reference = anonymize(read_fimi(path), 20, m, 0.99, constraints(), runs=runs, random_state=1,
                                  n_jobs=n_jobs)
            t_local = time.perf_counter() - start
            peak = max(_own_peak(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
            print(f"  this machine, n_jobs = {n_jobs}:      {reference.n_parts} parts, err {reference.err:.1f}, "
                  f"{t_local:.1f} s, peak {peak / 1e9:.2f} GB (this process or one run process)", flush=True)
        for how in ("runs", "sharded") if mode == "both" else (mode,):
            with dask_client(workers=2) as client:
                print(f"  {describe(client)}", flush=True)
                _reset_peak()
                start = time.perf_counter()
                if how == "runs":
                    with runs_on_dask(client):
                        result = anonymize(read_fimi(path), 20, m, 0.99, constraints(), runs=runs, random_state=1)
                else:
                    with ShardedRecords(client, path) as records:
                        result = records.anonymize(20, m, 0.99, constraints(), runs=runs, random_state=1)
                t_dask = time.perf_counter() - start
                peaks = client.run(_worker_peak)
            label = "runs as tasks" if how == "runs" else "sharded"
            print(f"  {label}, 2-worker LocalCluster: {result.n_parts} parts, err {result.err:.1f}, {t_dask:.1f} s, "
                  f"client peak {_own_peak() / 1e9:.2f} GB, per worker "
                  + ", ".join(f"{p / 1e9:.2f}" for p in peaks.values()) + " GB", flush=True)
            if reference is not None:
                same = np.array_equal(result.partition, reference.partition) and result.err == reference.err
                print(f"  same partition as this machine: {'yes' if same else 'NO'}; {label} / this machine time "
                      f"{t_dask / t_local:.2f}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("blocks", "km"), default="blocks")
    ap.add_argument("--users", type=int, default=100_000, help="km: users of the synthetic CDR")
    ap.add_argument("--m", type=int, default=5, help="km: m")
    ap.add_argument("--runs", type=int, default=2, help="km: r")
    ap.add_argument("--mode", choices=("runs", "sharded", "both"), default="sharded",
                    help="km: the r runs as tasks (data in every worker), the records sharded, or both")
    ap.add_argument("--n-jobs", type=int, default=1, help="km: run processes of the run on this machine")
    ap.add_argument("--skip-local", action="store_true", help="km: no run on this machine (no comparison)")
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--method", choices=("mdav", "pcl"), default="mdav")
    ap.add_argument("--block-size", type=int, default=None, help="default: the automatic blocks")
    args = ap.parse_args()
    if args.part == "km":
        part_km(args.users, args.m, args.runs, args.mode, not args.skip_local, args.n_jobs)
    else:
        part_blocks(args.records, args.method, args.block_size)


if __name__ == "__main__":
    main()

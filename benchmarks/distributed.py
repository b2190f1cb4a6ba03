"""probanon on Dask (issue 19), printed beside the single-process figures of the same run.

    PYTHONPATH=. flock /tmp/bench.lock .venv/bin/python benchmarks/distributed.py --part blocks [--records N]

``blocks``  blocked MDAV (or ``--method pcl``) on a 10-D Gaussian of ``--records`` records (default
            10,000,000), k = 5, automatic blocks: first in this machine's own worker processes
            (``n_jobs = 2``, the single-machine blocked path), then through a 2-worker
            ``LocalCluster`` (``on_dask``). Printed: time, IL (100 SSE/SST, computed here), the
            peak memory of the client process (VmHWM) and of each Dask worker process (its
            maximum resident set, from the worker), and whether the two releases are identical.

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

from probanon.distributed import dask_client, describe, on_dask  # noqa: E402
from probanon.microagg import MDAV, PCL  # noqa: E402


def _worker_peak() -> int:
    """This worker process's maximum resident set (bytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _own_peak() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmHWM:"))


def part_blocks(n: int, method: str, block_size=None) -> None:
    cls = {"mdav": MDAV, "pcl": PCL}[method]
    params = {"random_state": 1, "block_size": block_size} if cls is PCL else {"block_size": block_size}
    X = gaussian(n)
    print(f"Blocked {method.upper()} on a 10-D Gaussian of {n:,} records, k = {K}, "
          + (f"blocks of <= {block_size:,}" if block_size else "automatic blocks"))
    local = cls(k=K, n_jobs=2, **params)
    start = time.perf_counter()
    with PeakMemory() as memory:
        local.fit(X)
    t_local = time.perf_counter() - start
    il_local = il(X, local.labels_)
    print(f"  single machine, 2 worker processes: {local.n_blocks_} blocks of <= {local.block_size_:,}, "
          f"IL {il_local:.4f}, {t_local:.1f} s, peak {memory.peak / 1e9:.2f} GB (process + workers)", flush=True)
    with dask_client(workers=2) as client:
        print(f"  {describe(client)}", flush=True)
        start = time.perf_counter()
        with on_dask(client):
            remote = cls(k=K, **params).fit(X)
        t_dask = time.perf_counter() - start
        peaks = client.run(_worker_peak)
    il_dask = il(X, remote.labels_)
    same = np.array_equal(remote.labels_, local.labels_) and remote.function_.to_json() == local.function_.to_json()
    print(f"  Dask, 2-worker LocalCluster:        {remote.n_blocks_} blocks of <= {remote.block_size_:,}, "
          f"IL {il_dask:.4f}, {t_dask:.1f} s, client peak {_own_peak() / 1e9:.2f} GB, per worker "
          + ", ".join(f"{p / 1e9:.2f}" for p in peaks.values()) + " GB")
    print(f"  same release as the single-machine blocked run: {'yes' if same else 'NO'}; "
          f"Dask / single machine time {t_dask / t_local:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("blocks",), default="blocks")
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--method", choices=("mdav", "pcl"), default="mdav")
    ap.add_argument("--block-size", type=int, default=None, help="default: the automatic blocks")
    args = ap.parse_args()
    part_blocks(args.records, args.method, args.block_size)


if __name__ == "__main__":
    main()

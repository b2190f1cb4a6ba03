"""Streaming input (issue 16.6): ``probanon apply`` of a published function to a 10^7-record CSV
and Parquet file, chunk by chunk (``--chunk-size``, default 1,000,000), against the whole-file
path on the same file (``--chunk-size`` larger than the file) in the same run: wall time and
peak resident memory of each run (its own process: ``os.wait4``), and whether the two releases
are the same (CSV: same bytes; Parquet: same table).

The data (generated here, in a temporary folder, seeded): an id, 4 quasi-identifiers (age,
income, hours, household: the function's keys, an MDAV function with k = 10 fitted on 5,000
records) and 3 confidential columns. Heavy: run under ``flock /tmp/bench.lock``.

    flock /tmp/bench.lock .venv/bin/python benchmarks/scale_stream.py [--records N] [--repeats R]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

KEYS = ["age", "income", "hours", "household"]


def generate(folder: Path, n: int, seed: int = 2026) -> dict:
    """The CSV and Parquet files of ``n`` records and the published function; written in pieces
    of 10^6 records (the generator itself stays small)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from probanon.microagg import MDAV

    rng = np.random.default_rng(seed)
    csv, parquet, func = folder / "people.csv", folder / "people.parquet", folder / "function.json"
    writer = None
    for start in range(0, n, 10**6):
        m = min(10**6, n - start)
        age = rng.integers(18, 91, m)
        frame = pd.DataFrame({
            "id": np.arange(start + 1, start + m + 1),
            "age": age,
            "income": np.round(np.exp(rng.normal(10.2, 0.55, m) + 0.006 * (age - 18)), -1),
            "hours": np.clip(np.round(rng.normal(38, 9, m)), 0, 80),
            "household": np.clip(rng.poisson(1.6, m) + 1, 1, 9),
            "health": np.round(rng.gamma(2.0, 150, m), 2),
            "savings": np.round(rng.normal(5000, 2500, m), 2),
            "visits": rng.integers(0, 30, m),
        })
        frame.to_csv(csv, mode="a", header=start == 0, index=False)
        table = pa.Table.from_pandas(frame, preserve_index=False)
        writer = writer or pq.ParquetWriter(parquet, table.schema)
        writer.write_table(table)
        if start == 0:
            model = MDAV(10).fit(frame[KEYS].iloc[:5000].to_numpy(float))
            model.function_.columns = KEYS
            func.write_text(model.function_.to_json())
    writer.close()
    return {"csv": csv, "parquet": parquet, "function": func}


def run(command: list) -> tuple[float, float]:
    """Wall time (s) and peak resident memory (GB) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed:\n{err[-2000:]}")
    return seconds, usage.ru_maxrss / 2**20  # ru_maxrss in KB on Linux


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 24), b""):
            h.update(block)
    return h.hexdigest()


def same_release(a: Path, b: Path) -> bool:
    if a.suffix == ".csv":
        return digest(a) == digest(b)
    import pyarrow.parquet as pq

    return pq.read_table(a).equals(pq.read_table(b))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=10**7)
    p.add_argument("--chunk-size", type=int, default=10**6)
    p.add_argument("--repeats", type=int, default=1)
    args = p.parse_args(argv)
    n = args.records
    with tempfile.TemporaryDirectory(prefix="probanon-stream-", dir=os.environ.get("BENCH_TMP")) as tmp:
        folder = Path(tmp)
        t0 = time.perf_counter()
        files = generate(folder, n)
        print(f"streaming apply: {n:,} records x 8 columns (id, 4 keys, 3 confidential), MDAV function k = 10 "
              f"({time.perf_counter() - t0:.0f} s to generate; CSV {files['csv'].stat().st_size / 2**30:.2f} GiB, "
              f"Parquet {files['parquet'].stat().st_size / 2**30:.2f} GiB); {args.repeats} repeat(s), "
              "best / median; peak RSS of the process", flush=True)
        base = [sys.executable, "-m", "probanon.cli", "apply", str(files["function"])]
        roles = ["--confidential", "health,savings,visits", "--drop", "id", "--seed", "1", "--quiet", "--force"]
        for kind in ("csv", "parquet"):
            outputs = {}
            for label, size in (("whole file (reference)", n + 1), (f"chunks of {args.chunk_size:,}", args.chunk_size)):
                out = folder / f"out_{size}.{kind}"
                times, peaks = [], []
                for _ in range(args.repeats):
                    seconds, peak = run(base + [str(files[kind]), "-o", str(out), *roles, "--chunk-size", str(size)])
                    times.append(seconds)
                    peaks.append(peak)
                outputs[label] = out
                print(f"  {kind:8s} {label:24s} time best {min(times):7.1f} s  median {statistics.median(times):7.1f} s"
                      f"   peak RSS {max(peaks):6.2f} GB", flush=True)
            whole, chunked = outputs.values()
            print(f"  {kind:8s} same release as the whole-file path: {same_release(whole, chunked)}", flush=True)
            for out in outputs.values():
                out.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: synthetic CDR at the paper's full size (Table II, 4,427,486 users).

Target (issue 7): generation (including writing towers.csv and records.txt) in at most 3 minutes
on a 2-core machine. Prints the time of each phase, the peak resident memory of the process and the
record-size statistics beside Table II (the reference).

    NUMBA_CACHE_DIR=... PYTHONPATH=. .venv/bin/python benchmarks/km_generate.py [--users N] [-o DIR]
"""

import argparse
import resource
import sys
import tempfile
import time

import numpy as np

from probanon.setvalued.cdr import TABLE_II, generate_cdr, write_cdr


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--users", type=int, default=TABLE_II["users"])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", default=None, help="directory (default: a temporary one)")
    args = p.parse_args(argv)
    generate_cdr(1000, random_state=0)  # compile / load the numba cache outside the timing

    with tempfile.TemporaryDirectory() as tmp:
        out = args.output or tmp
        t0 = time.perf_counter()
        cdr = generate_cdr(args.users, random_state=args.seed)
        t1 = time.perf_counter()
        _, records_path = write_cdr(cdr, out)
        t2 = time.perf_counter()
        size_mb = records_path.stat().st_size / 2**20
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10  # KiB -> MiB on Linux
    s = cdr.sizes
    occ = np.bincount(cdr.indices, minlength=cdr.n_towers)
    print(f"users                {cdr.n_users:>12,}   (Table II: {TABLE_II['users']:,})")
    print(f"towers               {cdr.n_towers:>12,}   (Table II: {TABLE_II['towers']:,})")
    print(f"area km^2            {cdr.area_km2:>12.1f}   (Table II: {TABLE_II['area_km2']})")
    print(f"record size mean     {s.mean():>12.3f}   (Table II: {TABLE_II['size_mean']})")
    print(f"record size sd       {s.std(ddof=1):>12.3f}   (Table II: {TABLE_II['size_sd']})")
    print(f"record size min/max  {s.min():>5} / {s.max():<5}   (Table II: {TABLE_II['size_min']} / {TABLE_II['size_max']})")
    print(f"users per tower      mean {occ.mean():,.0f}, sd {occ.std():,.0f}   (paper: mean 38,817, sd 50,911)")
    print(f"generate             {t1 - t0:>10.1f} s")
    print(f"write FIMI + CSV     {t2 - t1:>10.1f} s   (records.txt {size_mb:,.0f} MiB)")
    print(f"total                {t2 - t0:>10.1f} s   (target: <= 180 s)")
    print(f"peak memory (RSS)    {peak:>10,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

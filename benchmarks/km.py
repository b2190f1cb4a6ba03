"""Benchmark: sigma-k^m-anonymity (Algorithm 2, A^(r)) on the synthetic CDR (issue 7 targets).

(a) a 100,000-user CDR with the deterministic phase for l <= 3 (k = 20, m = 5, sigma = .99):
    time, peak memory, parts, err (metres), per-l fractions;
(b) with ``--full``: the full-size CDR (4,427,486 users), k = 20, m = 11, sigma = .99, r = 10,
    exact phase only for l = 1 (target: <= 30 minutes, <= 8 GB peak), parts and err for
    m = 5, 8, 11; without it a scaled version (``--users``, ``--runs``, default 50,000 and 2).

Constraints: item coordinates (Voronoi cells of the towers clipped to the city square).
Peak memory is the resident set of this process and of its (finished) worker processes.

    NUMBA_CACHE_DIR=... PYTHONPATH=. .venv/bin/python benchmarks/km.py [--full] [--skip-a] [--skip-b]
"""

import argparse
import resource
import time

import numpy as np
import pandas as pd

from probanon.setvalued import anonymize
from probanon.setvalued.cdr import TABLE_II, generate_cdr
from probanon.setvalued.constraints import constraints_from_coordinates
from probanon.setvalued.data import from_pairs


def peak_mib():
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return max(own, children) / 2**10  # KiB -> MiB on Linux


def cdr_problem(users, seed=0):
    """(SetData, coordinate constraints, seconds) of a synthetic CDR."""
    t0 = time.perf_counter()
    cdr = generate_cdr(users, random_state=seed)
    labels = np.array([str(t) for t in range(cdr.n_towers)], dtype=object)
    rec = np.repeat(np.arange(cdr.n_users, dtype=np.int64), np.diff(cdr.indptr))
    data = from_pairs(rec, cdr.indices, labels)
    del rec
    towers = pd.DataFrame({"tower": labels, "x": cdr.towers[:, 0], "y": cdr.towers[:, 1]})
    constraints = constraints_from_coordinates(towers, bounds=cdr.bounds)
    return data, constraints, time.perf_counter() - t0


def report(name, res, seconds):
    fr = ", ".join(f"l={lv.l}: {lv.fraction:.4f} ({lv.method}, {lv.n_merges} merges)" for lv in res.levels)
    print(f"{name}: {seconds:,.1f} s, peak {peak_mib():,.0f} MiB, parts {res.n_parts}, err {res.err:,.1f} m, "
          f"satisfied {res.satisfied}", flush=True)
    print(f"    fractions: {fr}", flush=True)
    if len(res.run_errors) > 1:
        print(f"    run errors (m): {', '.join(f'{e:,.1f}' for e in res.run_errors)}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="part (b) at the paper's size: 4,427,486 users, r = 10")
    p.add_argument("--users", type=int, default=50_000, help="users of the scaled part (b)")
    p.add_argument("--runs", type=int, default=2, help="r of the scaled part (b)")
    p.add_argument("--ms", default="5,8,11", help="values of m of part (b)")
    p.add_argument("--m-exact", type=int, default=5, help="m of part (a)")
    p.add_argument("--skip-a", action="store_true")
    p.add_argument("--skip-b", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    k, sigma = 20, 0.99
    warm, wc, _ = cdr_problem(2000)  # compile / load the numba caches outside the timings
    anonymize(warm, k, 2, sigma, wc, exact_upto=1, random_state=0)

    if not args.skip_a:
        data, c, gen = cdr_problem(100_000, args.seed)
        print(f"(a) 100,000 users, {data.n_entries:,} entries (generated in {gen:.1f} s); "
              f"k={k}, m={args.m_exact}, sigma={sigma}, deterministic phase l <= 3", flush=True)
        t0 = time.perf_counter()
        res = anonymize(data, k, args.m_exact, sigma, c, runs=1, exact_upto=3, random_state=args.seed)
        report(f"    m={args.m_exact}", res, time.perf_counter() - t0)
        del data, c, res

    if not args.skip_b:
        users = TABLE_II["users"] if args.full else args.users
        runs = 10 if args.full else args.runs
        data, c, gen = cdr_problem(users, args.seed)
        print(f"(b) {users:,} users, {data.n_entries:,} entries (generated in {gen:.1f} s); "
              f"k={k}, sigma={sigma}, r={runs}, exact phase l = 1", flush=True)
        for m in (int(x) for x in args.ms.split(",")):
            t0 = time.perf_counter()
            res = anonymize(data, k, m, sigma, c, runs=runs, exact_upto=1, random_state=args.seed)
            target = " (target: <= 1800 s, <= 8192 MiB)" if args.full and m == 11 else ""
            report(f"    m={m}{target}", res, time.perf_counter() - t0)


if __name__ == "__main__":
    main()

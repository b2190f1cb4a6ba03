"""Benchmark: sigma-k^m-anonymity (Algorithm 2, A^(r)) on the synthetic CDR (issue 7 targets).

(a) a 100,000-user CDR with the deterministic phase for l <= 3 (k = 20, m = 5, sigma = .99,
    one run): time, memory, parts, err (metres), per-l fractions;
(b) with ``--full``: the full-size CDR (4,427,486 users; generating it: target <= 3 minutes),
    k = 20, m = 11, sigma = .99, r = 10, exact phase only for l = 1 (target: <= 30 minutes,
    <= 8 GB peak), reporting parts and err for m = 5, 8, 11. The three come from the same ten
    runs: each run's partition after level 5 and 8 is what a run with m = 5 or 8 and the same
    seed returns, and the best of the ten is kept for each m (``anonymize(..., also_m=(5, 8))``).
    Without ``--full`` a scaled version (``--users``, ``--runs``, default 50,000 and 2).

Constraints: item coordinates (Voronoi cells of the towers clipped to the city square).
Memory: "peak" is the largest resident set of this process or one worker (shared pages
counted in each), "system" the peak of (MemTotal - MemAvailable) above its value at the start,
sampled every 0.2 s: the memory the benchmark actually took from the machine.

    NUMBA_CACHE_DIR=... PYTHONPATH=. .venv/bin/python benchmarks/km.py [--full] [--skip-a] [--skip-b]
"""

import argparse
import resource
import threading
import time

import numpy as np
import pandas as pd

from probanon.setvalued import anonymize
from probanon.setvalued.cdr import TABLE_II, generate_cdr
from probanon.setvalued.constraints import constraints_from_coordinates
from probanon.setvalued.data import from_pairs


def _used_mib():
    info = dict(line.split(":") for line in open("/proc/meminfo"))
    kib = lambda key: int(info[key].split()[0])  # noqa: E731
    return (kib("MemTotal") - kib("MemAvailable")) / 2**10


class SystemMemory:
    """Peak of the machine's used memory above the value at start, sampled in a thread."""

    def __init__(self):
        self.base = self.peak = _used_mib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self):
        while not self._stop.wait(0.2):
            self.peak = max(self.peak, _used_mib())

    def restart(self):
        """Forget the peak so far (the base stays)."""
        self.peak = _used_mib()

    def above_base(self):
        return self.peak - self.base


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


def report(name, res, seconds=None, memory=None):
    fr = ", ".join(f"l={lv.l}: {lv.fraction:.4f} ({lv.method}, {lv.n_checked:,} checked, {lv.n_merges} merges)"
                   for lv in res.levels)
    when = "" if seconds is None else f"{seconds:,.1f} s, "
    mem = "" if memory is None else f"peak {peak_mib():,.0f} MiB, system {memory.above_base():,.0f} MiB, "
    print(f"{name}: {when}{mem}parts {res.n_parts}, err {res.err:,.1f} m, satisfied {res.satisfied}", flush=True)
    print(f"    fractions: {fr}", flush=True)
    if len(res.run_errors) > 1:
        print(f"    run errors (m): {', '.join(f'{e:,.1f}' for e in res.run_errors)}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="part (b) at the paper's size: 4,427,486 users, r = 10")
    p.add_argument("--users", type=int, default=50_000, help="users of the scaled part (b)")
    p.add_argument("--runs", type=int, default=2, help="r of the scaled part (b)")
    p.add_argument("--m-exact", type=int, default=5, help="m of part (a)")
    p.add_argument("--pair-budget", type=int, default=1 << 29, help="record entries of the pair index (4 B each)")
    p.add_argument("--skip-a", action="store_true")
    p.add_argument("--skip-b", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    k, sigma = 20, 0.99
    memory = SystemMemory()
    warm, wc, _ = cdr_problem(2000)  # compile / load the numba caches outside the timings
    anonymize(warm, k, 4, sigma, wc, exact_upto=2, random_state=0)

    if not args.skip_a:
        data, c, gen = cdr_problem(100_000, args.seed)
        print(f"(a) 100,000 users, {data.n_entries:,} entries (generated in {gen:.1f} s); "
              f"k={k}, m={args.m_exact}, sigma={sigma}, deterministic phase l <= 3", flush=True)
        t0 = time.perf_counter()
        res = anonymize(data, k, args.m_exact, sigma, c, runs=1, exact_upto=3, random_state=args.seed,
                        pair_budget=args.pair_budget)
        report(f"    m={args.m_exact}", res, time.perf_counter() - t0, memory)
        del data, c, res

    if not args.skip_b:
        memory.restart()
        users = TABLE_II["users"] if args.full else args.users
        runs = 10 if args.full else args.runs
        data, c, gen = cdr_problem(users, args.seed)
        target = " (target <= 180 s)" if args.full else ""
        print(f"(b) {users:,} users, {data.n_entries:,} entries, generated in {gen:.1f} s{target}; "
              f"k={k}, sigma={sigma}, r={runs}, exact phase l = 1, m = 11 (and 5, 8 from the same runs)",
              flush=True)
        t0 = time.perf_counter()
        res = anonymize(data, k, 11, sigma, c, runs=runs, exact_upto=1, random_state=args.seed,
                        pair_budget=args.pair_budget, also_m=(5, 8))
        seconds = time.perf_counter() - t0
        for m in (5, 8):
            report(f"    m={m}", res.earlier[m])
        target = " (target: <= 1800 s, <= 8192 MiB)" if args.full else ""
        report(f"    m=11{target}", res, seconds, memory)


if __name__ == "__main__":
    main()

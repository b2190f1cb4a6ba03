"""Benchmark of Greedy-Generalize (:func:`probanon.diversity.greedy_generalize`, paper 4,
Algorithm 2 as corrected in NOTES.md Sec. 4). Target (issue 6): 10^6 QI values x 100 sensitive
values in <= 5 s.

Three parts, each printed:

1. a random joint pmf of 10^6 x 100 (Gamma(1/2) weights, normalised; 800 MB): time of building
   and checking the distribution, and of the greedy partition at ``p = beta p_l`` for a few beta
   (best of ``--repeat`` runs after a JIT warm-up);
2. the product of uniform marginals of the same size: the class count must be Corollary 4.8's
   ``floor(p_l / p) = floor(1 / beta)`` when ``|Q| beta`` is an integer (exact comparisons);
3. a reference in the same run: a plain NumPy implementation (one vectorised row at a time,
   plain sums and the same tolerance) on the first
   ``--reference-rows`` QI values, which must return the same labels; its time per QI value
   is extrapolated to 10^6.

Part 1 also times the budget chooser of :func:`plan_diversity` (no target: it runs one
partition per bisection step over p).

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/diversity.py
    PYTHONPATH=. .venv/bin/python benchmarks/diversity.py --rows 200000 --repeat 1
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from functools import partial

import numba
import numpy as np

from probanon.diversity import (
    distribution_from_array,
    greedy_generalize,
    plan_diversity,
)
from probanon.diversity.planning import RTOL

SEED = 2026
TARGET_SECONDS = 5.0


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def random_pmf(n_q: int, n_s: int) -> np.ndarray:
    P = np.random.default_rng(SEED).standard_gamma(0.5, size=(n_q, n_s))
    P /= P.sum()
    return P


def reference_greedy(P: np.ndarray, l: int, p: float) -> np.ndarray:
    """Greedy-Generalize with NumPy, one QI value at a time (plain sums; the same cut)."""
    cut = p * (1 - RTOL)
    labels = np.empty(P.shape[0], np.int64)
    acc = np.zeros(P.shape[1])
    R, start = 0, 0
    for i in range(P.shape[0]):
        acc += P[i]
        labels[i] = R
        if np.count_nonzero(acc >= cut) >= l:
            R, start, acc = R + 1, i + 1, np.zeros(P.shape[1])
    if R and start < P.shape[0]:
        labels[start:] = R - 1
    return labels


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000, help="|Q| (default 10^6)")
    ap.add_argument("--sensitive", type=int, default=100, help="|S| (default 100)")
    ap.add_argument("-l", type=int, default=10)
    ap.add_argument("--betas", type=float, nargs="+", default=[0.0001, 0.001, 0.01, 0.1])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reference-rows", type=int, default=20_000)
    args = ap.parse_args(argv)
    n_q, n_s, l = args.rows, args.sensitive, args.l

    print(f"Greedy-Generalize benchmark: |Q| = {n_q:,} QI values x |S| = {n_s} sensitive values, l = {l}")
    print(f"  numba {numba.__version__}, numpy {np.__version__}, Python {platform.python_version()}; "
          f"target <= {TARGET_SECONDS:g} s per partition")
    warm = distribution_from_array(random_pmf(2000, 20))
    t_jit, _ = timed(lambda: greedy_generalize(warm, 3, 0.1 * warm.p_l(3)))
    print(f"  JIT warm-up (compile or cache load): {t_jit:.3f} s")

    t_gen, P = timed(lambda: random_pmf(n_q, n_s))
    t_check, dist = timed(lambda: distribution_from_array(P))
    p_l = dist.p_l(l)
    print(f"\n1. random pmf (Gamma(1/2) weights): generated in {t_gen:.2f} s, checked and copied in {t_check:.2f} s; "
          f"p_l = {p_l:.4g}")
    print(f"  {'beta':>7} | {'p':>10} | {'classes':>9} | {'best':>8} | {'median':>8} | target")
    worst = 0.0
    results = {}
    for beta in args.betas:
        p = beta * p_l
        times = []
        for _ in range(args.repeat):
            t, g = timed(partial(greedy_generalize, dist, l, p))
            times.append(t)
        results[beta] = g
        worst = max(worst, min(times))
        print(f"  {beta:>7g} | {p:>10.3e} | {g.n_classes:>9,} | {min(times):>7.3f}s | {np.median(times):>7.3f}s | "
              f"{'met' if min(times) <= TARGET_SECONDS else 'MISSED'}")

    budget = 10 ** 6
    t_plan, plan = timed(partial(plan_diversity, dist, l, 0.01, budget=budget))
    print(f"  chooser (most classes with N <= {budget:,}, delta = 0.01): {plan.classes:,} classes, "
          f"p = {plan.p:.4g}, N = {plan.n_samples:,} in {t_plan:.2f} s (a bisection over p, one partition per step)")

    del dist
    uniform = distribution_from_array(np.full((n_q, n_s), 1.0 / (n_q * n_s)))
    print("\n2. uniform marginals (P = P_Q x P_S, both uniform): Corollary 4.8")
    ok_uniform = True
    for beta in (0.02, 0.001):
        p = beta * uniform.p_l(l)
        t, g = timed(partial(greedy_generalize, uniform, l, p))
        expected = round(1 / beta) if (n_q * beta).is_integer() else None
        same = expected is None or g.n_classes == expected
        ok_uniform &= same
        print(f"  beta = {beta:g}: {g.n_classes:,} classes (floor(1/beta) = {expected}) in {t:.3f} s "
              f"{'ok' if same else 'WRONG'}")
    del uniform

    m = min(args.reference_rows, n_q)
    sub = P[:m] / P[:m].sum()
    sub_dist = distribution_from_array(sub)
    beta = args.betas[-2]
    p = beta * sub_dist.p_l(l)
    t_ref, ref = timed(lambda: reference_greedy(sub, l, p))
    t_fast, g = timed(lambda: greedy_generalize(sub_dist, l, p))
    same = np.array_equal(ref, g.labels)
    print(f"\n3. reference (NumPy, row by row) on the first {m:,} QI values, beta = {beta:g}: "
          f"{g.n_classes:,} classes, same labels: {'yes' if same else 'NO'}")
    print(f"  numba {t_fast:.4f} s, NumPy reference {t_ref:.3f} s ({t_ref / max(t_fast, 1e-9):.0f}x); "
          f"the reference would need about {t_ref * n_q / m:.0f} s for |Q| = {n_q:,}")
    print(f"\nworst best-of time: {worst:.3f} s for |Q| = {n_q:,}, |S| = {n_s} "
          f"({'target met' if worst <= TARGET_SECONDS else 'TARGET MISSED'})")
    return 0 if (same and ok_uniform) else 1


if __name__ == "__main__":
    sys.exit(main())

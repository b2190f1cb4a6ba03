"""Local suppression on the whole of UCI Adult against the exact optimum (issue 43): the keys age,
sex, race, marital-status, education, k = 3, every key weighing 1, a missing value a category of its
own (``missing="category"``; under ``"any"`` the optimum is degenerate, see the README). The integer
program (``categorical.exact.exact_suppression``, HiGHS) is solved with ``only_violating=True``:
records already in classes of k keep their values, the problem the fast method solves; its optimum is
that problem's. Prints the fast method's count and time beside the optimum (or HiGHS's bound when its
time limit stops it) and the gap.

    PYTHONPATH=. .venv/bin/python benchmarks/categorical_exact_adult.py [--time-limit 900]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from probanon.categorical.exact import exact_suppression
from probanon.categorical.suppression import local_suppression
from probanon.frequencies import key_codes

KEYS = ["age", "sex", "race", "marital-status", "education"]
ADULT = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "adult", "adult.csv")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default=ADULT, help="UCI Adult (default ../shared/data/adult/adult.csv)")
    p.add_argument("-k", type=int, default=3, help="k (default 3)")
    p.add_argument("--time-limit", type=float, default=900.0, help="HiGHS's time limit, seconds (default 900)")
    args = p.parse_args()
    print(f"# load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    data = pd.read_csv(args.data)
    unit = {c: 1.0 for c in KEYS}
    times = []
    for _ in range(3):
        t = time.perf_counter()
        fast = local_suppression(data, KEYS, args.k, missing="category", importance=unit)
        times.append(time.perf_counter() - t)
    print(f"fast : {fast.total:,} values suppressed, violations {fast.violations_before.total:,} -> "
          f"{fast.violations_after.total}; best {min(times):.2f} s, median {sorted(times)[1]:.2f} s (of 3)")
    t = time.perf_counter()
    suppressed, optimal, bound = exact_suppression(key_codes(data, KEYS), np.ones(len(KEYS)), args.k,
                                                   missing="category", only_violating=True,
                                                   time_limit=args.time_limit)
    took = time.perf_counter() - t
    found = int(suppressed.sum())
    print(f"exact: {found:,} values suppressed ({'the optimum, proved' if optimal else f'HiGHS bound {bound:,.1f}'}) "
          f"in {took:.0f} s")
    reference = found if optimal else bound
    print(f"fast over the {'optimum' if optimal else 'bound'}: {100 * (fast.total / reference - 1):+.1f}%")
    print(f"# load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

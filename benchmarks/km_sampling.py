"""Speed of the two uniform l-itemset samplers of paper 5 (Section IV-B) on a synthetic data set.

Prints samples/second for exact rejection sampling and the Metropolis-Hastings chain
(Geweke burn-in included, thin = 1) at several l. Usage:
    python benchmarks/km_sampling.py [--users N] [--items M] [--samples S]
"""

import argparse
import time

import numpy as np

from probanon.setvalued import from_pairs, sample_itemsets


def synthetic(users: int, items: int, seed: int = 0):
    """Records with log-normal sizes (mean ~11, heavy tail, capped at 422) over items with
    a Zipf-like popularity, loosely shaped like the paper's Table II."""
    rng = np.random.default_rng(seed)
    sizes = np.clip(np.rint(rng.lognormal(1.8, 0.95, users)), 1, min(422, items)).astype(np.int64)
    pop = 1.0 / np.arange(1, items + 1) ** 0.8
    pop /= pop.sum()
    rec = np.repeat(np.arange(users), sizes)
    itm = rng.choice(items, size=len(rec), p=pop)
    return from_pairs(rec, itm, np.arange(items))  # duplicates dropped: sizes shrink a little


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--users", type=int, default=200_000)
    ap.add_argument("--items", type=int, default=1303)
    ap.add_argument("--samples", type=int, default=20_000)
    args = ap.parse_args()
    t = time.perf_counter()
    data = synthetic(args.users, args.items)
    print(f"data: {data.n_records} records, {data.n_items} items, mean size "
          f"{data.record_sizes.mean():.2f}, {data.nbytes / 1e6:.1f} MB CSR, built in {time.perf_counter() - t:.1f} s")
    sample_itemsets(data, 2, 10, method="rejection", random_state=0)  # compile
    sample_itemsets(data, 2, 10, method="mcmc", random_state=0)
    for l in (2, 5, 8, 11):
        row = []
        for method in ("rejection", "mcmc"):
            t = time.perf_counter()
            s = sample_itemsets(data, l, args.samples, method=method, random_state=1)
            dt = time.perf_counter() - t
            extra = f", burn-in {s.burn_in}" if method == "mcmc" else ""
            row.append(f"{method}: {args.samples / dt:10.0f} samples/s (acceptance {s.acceptance_rate:.3f}{extra})")
        print(f"l = {l:2d}  " + "   ".join(row))


if __name__ == "__main__":
    main()

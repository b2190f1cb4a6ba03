"""Noise, rank swapping and targeted record swapping at scale (issue 43.6), probanon beside
sdcMicro (``addNoise``, ``rankSwap``, ``recordSwap``) on the same files in the same run.

    PYTHONPATH=. .venv/bin/python benchmarks/perturbation.py [--records 1000000] [--repeat 3]
        [--rlib /work/peers/sdcmicro/Rlib]

Data: ``--records`` rows of three correlated normal columns (noise, rank swap: 5% window, 5% top
and bottom coding) and a census of households (sizes 1-6, NUTS1 4 > NUTS2 20 > NUTS3 160, age
group 20 x nationality 5 as risk variables, household size the similarity profile, 5% swap rate,
k = 3). Times are of the method alone (files read before), best and median of ``--repeat``; the R
part is skipped, saying so, without Rscript or sdcMicro (../shared/peers/sdcmicro/README.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from probanon.perturbation.noise import NoisePromise, add_noise
from probanon.perturbation.rankswap import RankSwapPromise, rank_swap
from probanon.perturbation.recordswap import RecordSwapPromise, record_swap

R_DRIVER = r"""
args <- commandArgs(trailingOnly = TRUE)
.libPaths(c(args[1], .libPaths()))
suppressMessages(library(sdcMicro)); suppressMessages(library(data.table))
repeat_n <- as.integer(args[4])
x <- as.data.frame(fread(args[2])); census <- fread(args[3])
best <- function(f) { t <- sapply(seq_len(repeat_n), function(i) system.time(f())[["elapsed"]]); c(min(t), median(t)) }
out <- list()
out$additive <- best(function() addNoise(x, noise = 150, method = "additive"))
out$correlated <- best(function() addNoise(x, noise = 150, method = "correlated"))
out$rankswap <- best(function() rankSwap(x, P = 0.05, TopPercent = 5, BottomPercent = 5, seed = 1))
res <- NULL
out$recordswap <- best(function() res <<- recordSwap(census, hid = "hid", hierarchy = c("nuts1", "nuts2", "nuts3"),
  similar = list(c("hsize")), swaprate = 0.05, k_anonymity = 3, risk_variables = c("age", "national"),
  carry_along = NULL, return_swapped_id = TRUE, seed = 1))
out$recordswap_households <- res[hid != hid_swapped, uniqueN(hid)]
cat(jsonlite::toJSON(out, auto_unbox = TRUE))
"""


def census(records: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    H = int(records / 3.5)
    size = rng.integers(1, 7, H)
    n1 = rng.integers(1, 5, H)
    n2 = n1 * 10 + rng.integers(0, 5, H)
    n3 = n2 * 10 + rng.integers(0, 8, H)
    i = np.repeat(np.arange(H), size)
    return pd.DataFrame({"hid": i + 1, "nuts1": n1[i], "nuts2": n2[i], "nuts3": n3[i], "hsize": size[i],
                         "age": rng.integers(1, 21, i.size), "national": rng.integers(1, 6, i.size)})


def timed(f, repeat: int):
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = f()
        times.append(time.perf_counter() - t)
    return min(times), float(np.median(times)), result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", type=int, default=1_000_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--rlib", default="/work/peers/sdcmicro/Rlib")
    p.add_argument("--no-sdcmicro", action="store_true", help="probanon's figures only")
    a = p.parse_args()
    rng = np.random.default_rng(1)
    C = np.array([[1.0, 0.6, 0.3], [0.6, 1.0, 0.5], [0.3, 0.5, 1.0]])
    X = pd.DataFrame(rng.multivariate_normal([0, 0, 0], C, size=a.records), columns=["x1", "x2", "x3"])
    D = census(a.records)
    rank_swap(X.head(100), p=5, random_state=0)  # numba compiled (or loaded) before timing
    record_swap(D.head(300), "hid", ["nuts1", "nuts2", "nuts3"], similar=[["hsize"]], k=3,
                risk_variables=["age", "national"], random_state=0)
    rows = {}
    for name, f in [("additive", lambda: add_noise(X, "additive", 150, random_state=1)),
                    ("correlated", lambda: add_noise(X, "correlated", 150, random_state=1)),
                    ("rankswap", lambda: rank_swap(X, p=5, top=5, bottom=5, random_state=1)),
                    ("recordswap", lambda: record_swap(D, "hid", ["nuts1", "nuts2", "nuts3"], similar=[["hsize"]],
                                                       swaprate=0.05, k=3, risk_variables=["age", "national"],
                                                       random_state=1))]:
        best, median, result = timed(f, a.repeat)
        t = time.perf_counter()
        if name == "rankswap":
            RankSwapPromise(X, result, result.coded).check(result.released)
        elif name == "recordswap":
            RecordSwapPromise(D, result, "hid").check(result.released)
            rows["recordswap_households"] = result.households_swapped
            rows["recordswap_risky"] = (result.risky_before, result.risky_after)
        else:
            NoisePromise(X, result).check(result.released)
        rows[name] = (best, median, time.perf_counter() - t)
    print(f"probanon (seconds, best / median of {a.repeat}; then its promise check): "
          + "; ".join(f"{name} {rows[name][0]:.2f} / {rows[name][1]:.2f}, check {rows[name][2]:.2f}"
                      for name in ("additive", "correlated", "rankswap", "recordswap")), flush=True)
    r_times = None
    if a.no_sdcmicro:
        print("sdcMicro not run (--no-sdcmicro)")
    elif not Path(a.rlib, "sdcMicro").is_dir() or subprocess.run(["which", "Rscript"], capture_output=True).returncode:
        print(f"sdcMicro not found ({a.rlib}) or no Rscript: its column is left empty")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            X.to_csv(Path(tmp, "x.csv"), index=False)
            D.to_csv(Path(tmp, "census.csv"), index=False)
            Path(tmp, "driver.R").write_text(R_DRIVER)
            run = subprocess.run(["Rscript", str(Path(tmp, "driver.R")), a.rlib, str(Path(tmp, "x.csv")),
                                  str(Path(tmp, "census.csv")), str(a.repeat)], capture_output=True, text=True,
                                 env={**os.environ, "OMP_NUM_THREADS": "1"})
            if run.returncode:
                print("sdcMicro failed:", run.stderr.strip().splitlines()[-1:])
            else:
                r_times = json.loads(run.stdout.strip().splitlines()[-1])
    print(f"{a.records:,} records ({len(D):,} in {D['hid'].nunique():,} households for record swapping), "
          f"best / median of {a.repeat}, seconds")
    print(f"{'method':<12} {'probanon':>18} {'its promise check':>18} {'sdcMicro':>18}")
    for name in ("additive", "correlated", "rankswap", "recordswap"):
        best, median, check = rows[name]
        ref = "" if r_times is None else f"{r_times[name][0]:8.2f} / {r_times[name][1]:6.2f}"
        print(f"{name:<12} {best:8.2f} / {median:6.2f} {check:18.2f} {ref:>18}")
    print(f"record swap: probanon swapped {rows['recordswap_households']:,} households (risky before/after "
          f"{rows['recordswap_risky'][0]:,}/{rows['recordswap_risky'][1]:,})"
          + ("" if r_times is None else f"; sdcMicro {r_times['recordswap_households']:,}"))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

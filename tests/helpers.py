"""Shared test helpers: the reference data in ../shared/data (never copied into the repo)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from scipy.special import logsumexp
from scipy.stats import binom

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DATA = SHARED_DATA / "casc"
EIA_DROP = ["UTILITYID", "UTILNAME", "STATE", "YEAR", "MONTH"]

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def increments(events: list):
    """A progress callback of the library's form, ``progress(stage, done, total)`` (issue 41.5),
    that appends to ``events`` what each call adds to the count before it: the increments the
    counting form (``progress(n)``) reported, as tests written for it count them."""
    last = [0]

    def progress(stage, done, total):
        events.append(done - last[0] if done >= last[0] else done)
        last[0] = done

    return progress


def run_bounds_checked(code: str, cache_dir, timeout: float = 600):
    """Run ``code`` (it prints one JSON value last) in a fresh interpreter with numba's bounds
    checking on (NUMBA_BOUNDSCHECK=1: an index out of bounds raises IndexError where compiled
    code would write past the array) and its kernel cache in ``cache_dir``, a folder only ever
    used with bounds checking (numba's cache does not tell the two builds apart). Returns the
    value; a crash or a traceback fails with its stderr. The first run compiles the kernels
    (about a minute), later runs load them."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "NUMBA_BOUNDSCHECK": "1", "NUMBA_CACHE_DIR": str(cache_dir)}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, cwd=root,
                         env=env)
    assert run.returncode == 0, f"exit {run.returncode}: {run.stderr[-3000:]}"
    return json.loads(run.stdout.strip().splitlines()[-1])


def casc(name: str) -> np.ndarray:
    """A CASC file as a float matrix (EIA: its 10 continuous columns)."""
    frame = pd.read_csv(DATA / f"{name}.csv")
    if name == "eia":
        frame = frame.drop(columns=EIA_DROP)
    return frame.to_numpy(dtype=np.float64)


@st.composite
def continuous_problem(draw, n_max=60, d_max=4):
    """Gaussian data (no ties with probability 1), with random offsets and scales."""
    n = draw(st.integers(1, n_max))
    d = draw(st.integers(1, d_max))
    k = draw(st.integers(1, n))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(n, d)) * rng.uniform(0.1, 100, size=d) + rng.uniform(-50, 50, size=d)
    return X, k


def paper_triangle(text):
    """Rows A1..A13 x columns A7..A13 of paper 2's triangular tables (row i prints its last
    min(7, 13 - i) columns) -> {(i, j): printed string}, 0-based."""
    cells = {}
    for i, line in enumerate(text.strip().splitlines()):
        values = line.split()
        for jj, v in enumerate(values):
            cells[(i, 13 - len(values) + jj)] = v
    return cells


# paper 2, as printed: Table VI (census correlations) and Table VII (MDAV-ID, k = 12)
CENSUS_TABLE_VI = paper_triangle("""
.0038 -.027 -.024 .031 .032 .039 .036
.98 .14 .2 .73 .71 .72 .7
.44 -.12 -.058 .56 .55 .56 .55
.98 .2 .28 .73 .69 .71 .69
.78 .27 .27 .9 .85 .88 .86
.79 .13 .22 .59 .57 .57 .56
1 .17 .23 .72 .7 .71 .69
1 .45 -.17 -.19 -.17 -.17
1 .072 .061 .70 .075
1 .96 .98 .96
1 .91 .89
1 .97
1
""")

CENSUS_TABLE_VII = paper_triangle("""
-.0035 -.035 -.055 .034 .035 .042 .04
1 .18 .39 .8 .81 .8 .78
.79 -.17 .084 .89 .9 .89 .89
.99 .23 .45 .82 .8 .81 .8
.86 .18 .4 .94 .92 .94 .93
.95 .2 .43 .77 .76 .76 .75
1 .2 .41 .8 .8 .79 .78
1 .68 -.15 -.18 -.15 -.16
1 .18 .14 .17 .16
1 .98 1 .99
1 .97 .97
1 1
1
""")


def qbar(n, k, pi):
    """Independent cell failure P{0 < K < k}, K ~ Binomial(n, pi) (paper 1's qbar)."""
    if k == 1:
        return 0.0
    return float(np.exp(logsumexp(binom.logpmf(np.arange(1, k), n, pi))))


def brute_qbar(pis, k):
    """P{0 < K < k} for independent Bernoulli(pi_j), by convolution of the full pmf."""
    pmf = np.array([1.0])
    for p in pis:
        pmf = np.convolve(pmf, [1 - p, p])
    return float(pmf[1:k].sum())


def adjusted_r2(A: np.ndarray, y: np.ndarray) -> float:
    """Adjusted R^2 of least squares of y on the columns of A with an intercept (numpy, independent
    of probanon's audit)."""
    n, p = A.shape
    design = np.column_stack([np.ones(n), A])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    r2 = 1.0 - np.sum((y - design @ coef) ** 2) / np.sum((y - y.mean()) ** 2)
    return 1.0 - (1.0 - r2) * (n - 1) / (n - p - 1)

"""Shared test helpers: the reference data in ../shared/data (never copied into the repo)."""

from pathlib import Path

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
DATA = SHARED_DATA / "casc"
EIA_DROP = ["UTILITYID", "UTILNAME", "STATE", "YEAR", "MONTH"]

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


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

"""Synthetic call-detail records (CDR) calibrated to Table II of the k^m-anonymity paper.

The paper's data set (4,427,486 phone users of one city, the set of cell towers each visited) is
not public; Table II gives its characteristics (NOTES.md section 5):

    users |D| = 4,427,486;   towers |I| = 1303;   area of all cells 128.1 km^2;
    record size |D_u|: min 1, max 422, mean 11.42, sd 17.23.

The generator reproduces these figures and the spatial locality of real records:

* towers: a square city of the given area; a share ``central_share`` of the towers is drawn from an
  isotropic normal around the centre (sd = side / 6, redrawn until inside), the rest uniformly, so
  the network is denser in the centre (as in the paper's Figure 2);
* record sizes: ``s = clip(round(X), 1, 422)`` with ``X ~ LogNormal(mu, sigma)``; (mu, sigma) solve
  ``E[s] = 11.42`` and ``sd[s] = 17.23`` for this discretised, clipped law exactly
  (:func:`record_size_distribution`), so the sample moments match Table II up to sampling error;
  the clipping mass at 422 (6.5e-5, ~287 users at full size) makes the maximum 422;
* records: a home tower (weights Gamma(1)) and a work tower (weights Gamma(1) times a Gaussian
  bump at the centre, sd = side / 4); a record of size s holds home, work (size >= 2) and s - 2
  further towers, each near home (probability 0.6) or work: the ``r``-th nearest tower of the
  anchor with ``r = 1 + floor(Exp(1 + s / 2))``; a tower already in the record is replaced by the
  next nearest free one, so every record is a set of exactly ``s`` towers.

Records are kept as CSR arrays (``indptr`` int64, ``indices`` int32, sorted within each record).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numba
import numpy as np

from .._validation import check_random_state
from ..errors import InputError, ParameterError

#: Table II of the paper (characteristics of the CDR data set).
TABLE_II = {"users": 4_427_486, "towers": 1303, "area_km2": 128.1,
            "size_min": 1, "size_max": 422, "size_mean": 11.42, "size_sd": 17.23}

_CHUNK = 262_144  # users per generation/writing chunk (fixed: the output depends on it only via the stream)


@dataclass(frozen=True)
class RecordSizeDistribution:
    """Discretised, clipped lognormal law of the record size: ``P(s = j)``, j = 1..max_size."""

    mu: float
    sigma: float
    pmf: np.ndarray  # pmf[j - 1] = P(s = j)

    @property
    def mean(self) -> float:
        return float(np.dot(np.arange(1, len(self.pmf) + 1), self.pmf))

    @property
    def sd(self) -> float:
        j = np.arange(1, len(self.pmf) + 1)
        return float(np.sqrt(np.dot(j * j, self.pmf) - self.mean ** 2))


@dataclass(frozen=True)
class SyntheticCDR:
    """Synthetic CDR: tower coordinates (metres, city ``[0, side]^2``) and one set of towers per user."""

    towers: np.ndarray  # (n_towers, 2) float64, metres
    indptr: np.ndarray  # (n_users + 1,) int64
    indices: np.ndarray  # (nnz,) int32, tower ids sorted within each record
    home: np.ndarray  # (n_users,) int32 home tower of each user
    work: np.ndarray  # (n_users,) int32 work tower of each user
    side: float  # metres

    @property
    def n_users(self) -> int:
        return len(self.indptr) - 1

    @property
    def n_towers(self) -> int:
        return len(self.towers)

    @property
    def area_km2(self) -> float:
        return self.side ** 2 / 1e6

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        return (0.0, 0.0, self.side, self.side)

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.indptr)


def _discretised_lognormal(mu: float, sigma: float, max_size: int) -> np.ndarray:
    from scipy import stats

    edges = np.concatenate([[-np.inf], np.log(np.arange(1.5, max_size + 0.5)), [np.inf]])
    return np.diff(stats.norm.cdf((edges - mu) / sigma))


@lru_cache(maxsize=16)
def record_size_distribution(mean: float = TABLE_II["size_mean"], sd: float = TABLE_II["size_sd"],
                             max_size: int = TABLE_II["size_max"]) -> RecordSizeDistribution:
    """Calibrate ``s = clip(round(X), 1, max_size)``, ``X ~ LogNormal(mu, sigma)``, to a mean and sd.

    Solves ``sum_j j P(s=j) = mean`` and ``sum_j j^2 P(s=j) - mean^2 = sd^2`` for (mu, sigma) with
    ``P(s=j) = Phi((ln(j+1/2) - mu)/sigma) - Phi((ln(j-1/2) - mu)/sigma)`` (the end classes take the
    tails), starting from the moment match of the continuous lognormal.
    """
    from scipy import optimize

    if not (mean >= 1 and sd > 0 and max_size >= 2 and mean < max_size):
        raise ParameterError(f"record sizes need 1 <= mean < max_size and sd > 0, got mean={mean}, sd={sd}, max={max_size}")
    j = np.arange(1, max_size + 1)

    def moments(p):
        q = _discretised_lognormal(p[0], abs(p[1]), max_size)
        m = q @ j
        return [m - mean, np.sqrt(max(q @ (j * j) - m * m, 0.0)) - sd]

    s2 = np.log1p((sd / mean) ** 2)
    sol, _, ok, _ = optimize.fsolve(moments, [np.log(mean) - s2 / 2, np.sqrt(s2)], full_output=True)
    if ok != 1 or max(abs(v) for v in moments(sol)) > 1e-8:
        raise ParameterError(f"no discretised lognormal on [1, {max_size}] has mean {mean} and sd {sd}")
    return RecordSizeDistribution(float(sol[0]), float(abs(sol[1])), _discretised_lognormal(sol[0], abs(sol[1]), max_size))


def tower_locations(n_towers: int, area_km2: float, random_state=None, central_share: float = 0.6):
    """Tower coordinates in metres in the square ``[0, side]^2``, ``side = sqrt(area)``: a share
    ``central_share`` from N(centre, (side/6)^2 I) truncated to the square, the rest uniform.
    Returns ``(towers, side)``."""
    rng = check_random_state(random_state)
    if n_towers < 2:
        raise ParameterError(f"need at least 2 towers, got {n_towers}")
    if not area_km2 > 0 or not np.isfinite(area_km2):
        raise ParameterError(f"area must be a positive number of km^2, got {area_km2}")
    side = float(np.sqrt(area_km2 * 1e6))
    n_central = round(central_share * n_towers)
    central = np.empty((0, 2))
    while len(central) < n_central:
        draw = rng.normal(side / 2, side / 6, size=(2 * n_central, 2))
        draw = draw[((draw >= 0) & (draw <= side)).all(axis=1)]
        central = np.vstack([central, draw])
    towers = np.vstack([central[:n_central], rng.uniform(0, side, size=(n_towers - n_central, 2))])
    return towers, side


@numba.njit(cache=True)
def _fill_records(indptr, home, work, order, u_anchor, u_rank, stamp, stamp_base, out):
    """Fill ``out[indptr[i]:indptr[i+1]]`` for each user i of a chunk (see the module docstring)."""
    n_towers = order.shape[0]
    for i in range(home.shape[0]):
        a = indptr[i]
        s = indptr[i + 1] - a
        mark = stamp_base + i + 1
        h = home[i]
        out[a] = h
        stamp[h] = mark
        filled = 1
        if s >= 2:
            w = work[i]
            if stamp[w] == mark:  # home == work: nearest free tower of the work anchor
                r = 0
                while stamp[order[w, r]] == mark:
                    r += 1
                w = order[w, r]
            out[a + 1] = w
            stamp[w] = mark
            filled = 2
        scale = 1.0 + 0.5 * s
        for j in range(filled, s):
            anchor = h if u_anchor[a + j] < 0.6 else work[i]
            r = 1 + int(-scale * np.log1p(-u_rank[a + j]))
            if r >= n_towers:
                r = n_towers - 1
            t = order[anchor, r]
            while stamp[t] == mark:
                r += 1
                if r == n_towers:
                    r = 0
                t = order[anchor, r]
            out[a + j] = t
            stamp[t] = mark
        out[a:a + s].sort()


def generate_cdr(users: int = TABLE_II["users"], *, towers: int = TABLE_II["towers"],
                 area_km2: float = TABLE_II["area_km2"], size_mean: float = TABLE_II["size_mean"],
                 size_sd: float = TABLE_II["size_sd"], size_max: int = TABLE_II["size_max"],
                 random_state=None, progress=None) -> SyntheticCDR:
    """Synthetic CDR with the characteristics of Table II (defaults: the paper's full size).

    ``users`` scales the data set down (tower network and record-size law unchanged). ``progress``
    (optional) is called as ``progress("users", done, users)`` (:mod:`probanon.progress`) after
    each chunk of users.
    """
    rng = check_random_state(random_state)
    if users < 1:
        raise ParameterError(f"users must be >= 1, got {users}")
    size_max = int(min(size_max, towers))
    law = record_size_distribution(float(size_mean), float(size_sd), size_max)
    xy, side = tower_locations(towers, area_km2, rng)
    centre = np.array([side / 2, side / 2])
    w_home = rng.gamma(0.3, size=towers)
    w_work = rng.gamma(0.3, size=towers) * np.exp(-((xy - centre) ** 2).sum(1) / (2 * (side / 4) ** 2))
    from scipy.spatial.distance import cdist

    order = np.argsort(cdist(xy, xy), axis=1, kind="stable").astype(np.int32)
    cdf = np.cumsum(law.pmf)
    sizes = np.minimum(np.searchsorted(cdf / cdf[-1], rng.random(users), side="right"), size_max - 1) + 1
    indptr = np.zeros(users + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    home = rng.choice(towers, size=users, p=w_home / w_home.sum()).astype(np.int32)
    work = rng.choice(towers, size=users, p=w_work / w_work.sum()).astype(np.int32)
    indices = np.empty(indptr[-1], dtype=np.int32)
    stamp = np.zeros(towers, dtype=np.int64)
    if progress is not None:
        progress("users", 0, users)
    for start in range(0, users, _CHUNK):
        stop = min(start + _CHUNK, users)
        a, b = indptr[start], indptr[stop]
        u = rng.random((2, b - a))
        _fill_records(indptr[start:stop + 1] - a, home[start:stop], work[start:stop], order,
                      u[0], u[1], stamp, start, indices[a:b])
        if progress is not None:
            progress("users", stop, users)
    return SyntheticCDR(xy, indptr, indices, home, work, side)


@numba.njit(cache=True)
def _fimi_bytes(indptr, indices):
    """ASCII of records ``indptr``-sliced from ``indices``: ids separated by ' ', one record a line."""
    n = indptr.shape[0] - 1
    nnz = indptr[n] - indptr[0]
    buf = np.empty(nnz * 11 + n, dtype=np.uint8)  # <= 10 digits + separator per item
    digits = np.empty(10, dtype=np.uint8)
    p = 0
    for i in range(n):
        a = indptr[i]
        b = indptr[i + 1]
        for j in range(b - a):
            v = indices[a + j]
            nd = 0
            while True:
                digits[nd] = 48 + v % 10
                v //= 10
                nd += 1
                if v == 0:
                    break
            for d in range(nd):
                buf[p] = digits[nd - 1 - d]
                p += 1
            buf[p] = 32 if j < b - a - 1 else 10
            p += 1
        if b == a:
            buf[p] = 10
            p += 1
    return buf[:p]


def write_fimi(indptr, indices, path, progress=None) -> None:
    """Write CSR records in FIMI format (one line of space-separated non-negative item ids per
    record), chunk by chunk, atomically (a temporary file renamed at the end); ``progress("records",
    done, total)`` after each chunk."""
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices)
    if indices.size and indices.min() < 0:
        raise InputError("FIMI item ids must be non-negative integers")
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    if progress is not None:
        progress("records", 0, len(indptr) - 1)
    try:
        with open(tmp, "wb") as fh:
            for start in range(0, len(indptr) - 1, _CHUNK):
                stop = min(start + _CHUNK, len(indptr) - 1)
                fh.write(_fimi_bytes(indptr[start:stop + 1], indices).tobytes())
                if progress is not None:
                    progress("records", stop, len(indptr) - 1)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_cdr(cdr: SyntheticCDR, directory, progress=None) -> tuple[Path, Path]:
    """Write ``towers.csv`` (tower,x,y in metres) and ``records.txt`` (FIMI, tower ids) to a directory."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory} exists and is not a directory")
    towers_path, records_path = directory / "towers.csv", directory / "records.txt"
    tmp = towers_path.with_name("towers.csv.tmp")
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w") as fh:
            fh.write("tower,x,y\n")
            fh.writelines(f"{t},{x:.2f},{y:.2f}\n" for t, (x, y) in enumerate(cdr.towers))
        write_fimi(cdr.indptr, cdr.indices, records_path, progress=progress)
        os.replace(tmp, towers_path)
    except OSError as exc:
        raise InputError(f"cannot write to {directory}: {exc.strerror or exc}") from None
    finally:
        if tmp.exists():
            tmp.unlink()
    return towers_path, records_path

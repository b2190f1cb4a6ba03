"""Design of a p-probabilistic k-anonymous microaggregation function from a model
population (paper 1, Sec. V-VI).

Constant participation pi: every cell of size n is safe when qbar(n) <= pbar. Because qbar
is not monotone in n for small pi, the cell size used is

    n_cell = min{ n >= n_min : qbar(s) <= pbar for every s in [n, N] }

(usually n_cell = n_min), and MDAV with groups of n_cell records (identical tuples never
split, so the published function reproduces the design) builds the cells. Every cell is
checked again at its real size.

Per-record participation pi_j: MDAV's structure with groups that grow. The reference record
r (farthest from the centroid of the remaining records) takes the remaining records in
increasing order of the key (squared distance to r, coordinates, row) - the ORDER used by
Algorithm A - until Algorithm A on their pi_j gives n >= k and qbar <= pbar (all copies of
the last tuple join too, and the cell is rechecked); then the same around s, the record
farthest from r. A group that would leave a remainder which is not itself a safe cell takes
the whole remainder (whether the remainder is safe: a Chernoff bound, Algorithm A on it in
row order when the bound does not decide). Every group is a ball around its reference in key
order, so the ordered-balls function of MDAV publishes it exactly. The centroid is a running
sum, as in MDAV (all rows in row order, each group's members subtracted in key order); the
farthest record is the first in row order on ties. A numba kernel (:mod:`._per_record`, MDAV's
float32 passes with exact float64 decisions) builds it in O(n d) memory: 10^6 records in
minutes.

Centroids are pi-weighted, x_c = sum pi_j x_j / sum pi_j, and the distortion is
D = sum_j pi_j ||z_j - z_c(j)||^2 / (m sum_j pi_j) on z-scored quasi-identifiers (Sec. VI.B;
m = number of non-constant columns; D = SSE/SST when pi = 1). With design weights d_j (a frame
record standing for d_j persons; issue 17.1), every pi_j above becomes d_j pi_j, the expected
number of respondents the record stands for, and D's z-scores use the d-weighted mean and sd (the
population's): the cells do not change, the centroids and D do (D = weighted SSE/SST when pi = 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd
from numba import njit

from .._validation import check_k, check_matrix, check_weights, weights_of
from ..data import Standardizer, is_constant, select_columns
from ..errors import ParameterError, ProbanonError
from ..microagg.base import group_means
from ..microagg.function import MicroaggregationFunction
from ..microagg.mdav import mdav_partition
from . import _per_record
from .anonymity import (
    _log_tail,
    _step,
    cell_failure,
    cells_log_failure,
    check_participation,
    check_participations,
    check_risk,
    log_cell_failure,
    required_anonymity,
)


class DesignError(ProbanonError, ValueError):
    """The population cannot be partitioned into safe cells (too few records)."""


@njit(cache=True)
def _log_failures(pi, k, N):
    """log qbar(s) for s = 1..N with constant pi (one Algorithm A scan)."""
    v = np.zeros(k)
    v[0] = 1.0
    scale = 0.0
    out = np.empty(N)
    for s in range(N):
        scale += _step(v, pi)
        out[s] = _log_tail(v, scale)[0] if s + 1 >= k else 0.0
    return out


def safe_cell_size(k: int, pi: float, risk: float, records: int) -> int:
    """n_cell = min{n >= n_min : qbar(s) <= pbar for all s in [n, records]}.

    Our construction (not in the paper): qbar is not monotone in n for small pi (NOTES.md
    §1), so Algorithm A's n_min alone does not make cells of n_min..2 n_min - 1 safe."""
    eff = required_anonymity(k, pi, risk)
    if eff.n > records:
        raise DesignError(f"the population has {records} records but one safe cell needs n_min = {eff.n}")
    logq = _log_failures(pi, k, records)
    bad = np.flatnonzero(logq[eff.n - 1:] > math.log(risk))
    if bad.size == 0:
        return eff.n
    size = eff.n + int(bad[-1]) + 1
    if size > records:
        raise DesignError(f"no cell size up to {records} records keeps the failure below {risk}")
    return size


@dataclass(frozen=True)
class SurveyDesign:
    """Result of :func:`design`: the publishable function plus what the guarantee needs."""

    function: MicroaggregationFunction
    labels: np.ndarray  # cell of each population record
    k: int
    risk: float
    participation: float | None  # constant pi, or None for per-record pi_j
    record_participation: np.ndarray  # pi_j of every population record
    n_min: int  # Algorithm A's n_min (constant pi) or the smallest cell (per-record)
    cell_size: int  # the MDAV group size used (constant pi)
    cell_failures: np.ndarray  # qbar of every cell at its real size
    distortion: float

    @property
    def sizes(self) -> np.ndarray:
        return np.asarray(self.function.sizes)


def _per_record_partition(Z: np.ndarray, pis: np.ndarray, k: int, risk: float, progress=None):
    """MDAV-like partition with groups grown until Algorithm A holds on their pi_j (our
    construction for the paper's uneven participation, Sec. V: the "predefined order" is
    the key order around the group's reference record). The rules are in the module
    docstring; the centroid is a running sum (rows in row order, each cell's members
    subtracted in key order). numba kernel: :mod:`._per_record`, run in slices so that
    ``progress`` hears of every slice of cells."""
    log_pbar = math.log(risk)
    n = Z.shape[0]
    if not (n >= k and log_cell_failure(k, pis) <= log_pbar):
        raise DesignError("the whole population is not even one safe cell: too few records for this k and risk")
    state = _per_record.new_state(Z, pis, k)
    nchunks = max(2, numba.get_num_threads())
    per_call = max(1, n // (100 * k))  # about a hundred progress reports
    while not state["st"][_per_record.DONE]:
        placed = _per_record.run(Z, pis, k, log_pbar, nchunks=nchunks, max_groups=per_call, **state)
        if progress is not None:
            progress(int(placed))
    g = int(state["st"][_per_record.GROUPS])
    return state["labels"], state["refs"][:g], state["rad2"][:g], state["bnds"][:g]


def design(population, k: int, participation, risk: float, columns=None, progress=None, weights=None) -> SurveyDesign:
    """Design the microaggregation function for a survey (paper 1).

    ``population``: the model population's quasi-identifiers (DataFrame or array);
    ``participation``: a constant pi in (0, 1], or one pi_j per population record (array,
    or the name of a population column); ``risk``: the acceptable cell failure pbar, so each
    cell is k-anonymous with probability >= 1 - pbar. ``progress``: None or a callback
    ``progress(n)``, called with 0 once the inputs are checked (before the numerical kernels
    run, or compile on first use), then with the number of population records placed in cells
    (N in all; per-record participation reports every max(1, N // (100 k)) cells, constant
    participation at once after MDAV). ``weights``: design weights d_j (n numbers > 0, or the
    name of a population column) for the centroids and D (module docstring). Returns a
    :class:`SurveyDesign`.
    """
    k = check_k(k)
    risk = check_risk(risk)
    if isinstance(population, pd.DataFrame):
        if isinstance(participation, str):
            if participation not in population.columns:
                raise ParameterError(f"participation column {participation!r} is not in the population")
            column = participation
            participation = check_participations(population[column].to_numpy(), name=column)
            population = population.drop(columns=[column])
        if isinstance(weights, str):
            weights, population = weights_of(population, weights), population.drop(columns=[weights])
        cols = select_columns(population, columns)
        X = check_matrix(population[cols], name="population")
    else:
        cols = None
        X = check_matrix(population, name="population")
    N = X.shape[0]
    constant = not isinstance(participation, (np.ndarray, list, tuple, pd.Series))
    if constant:
        pi = check_participation(participation)
        pis = np.full(N, pi)
    else:
        pis = check_participations(participation)
        if pis.size != N:
            raise ParameterError(f"{pis.size} participation probabilities for {N} population records")
        pi = None
    d_j = None if weights is None else check_weights(weights, N, "weights")
    mass = pis if d_j is None else pis * d_j  # d_j pi_j
    if N < k:  # n_min >= k: no cell can be safe (said before any kernel runs)
        raise DesignError(f"the population has {N} records but a cell needs at least k = {k}")
    if progress is not None:
        progress(0)
    std = Standardizer.fit(X)
    Z = np.ascontiguousarray(std.transform(X))
    if constant:
        size = safe_cell_size(k, pi, risk, N)
        n_min = required_anonymity(k, pi, risk).n
        part = mdav_partition(Z, size, keep_duplicates=True)
        labels, refs, rad2, bnds = part.labels, part.references, part.radius2, part.boundary
        if progress is not None:
            progress(N)
    else:
        labels, refs, rad2, bnds = _per_record_partition(Z, pis, k, risk, progress)
        size = 0
    n_cells = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=n_cells)
    if constant:
        distinct, which = np.unique(sizes, return_inverse=True)
        failures = np.array([cell_failure(int(s), k, pi).cell_failure for s in distinct])[which]
    else:  # each cell's pi_j in row order
        failures = np.exp(cells_log_failure(k, pis[np.argsort(labels, kind="stable")], sizes))
    if (failures > risk).any():
        c = int(np.argmax(failures))
        raise DesignError(f"cell {c} of {sizes[c]} records fails with probability {failures[c]:.3g} > {risk}")
    if not constant:
        n_min = int(sizes.min())
    centroids = group_means(X, labels, n_cells, weights=mass)
    d = Z.shape[1]
    function = MicroaggregationFunction(
        kind="ordered-balls",
        standardizer=std,
        centroids=centroids,
        sizes=sizes,
        rule={
            "references": np.ascontiguousarray(Z[refs[:-1]].reshape(-1, d)),
            "radius2": np.ascontiguousarray(rad2[:-1]),
            "boundary": np.ascontiguousarray(Z[bnds[:-1]].reshape(-1, d)),
        },
        columns=cols,
        meta={"method": "survey design (MDAV)", "k": k, "weighted": weights is not None},
    )
    if d_j is not None:  # D on the population's z-scores (d-weighted mean and sd)
        std = Standardizer.fit(X, d_j)
        Z = std.transform(X)
    zc = group_means(Z, labels, n_cells, weights=mass)
    varying = ~is_constant(std.mean_, X.std(axis=0))
    err = (mass * ((Z - zc[labels]) ** 2).sum(axis=1)).sum()
    distortion = float(err / (max(int(varying.sum()), 1) * mass.sum()))
    return SurveyDesign(function=function, labels=labels, k=k, risk=risk, participation=pi,
                        record_participation=pis, n_min=int(n_min), cell_size=int(size),
                        cell_failures=failures, distortion=distortion)

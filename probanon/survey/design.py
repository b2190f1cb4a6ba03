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

Other designs (issue 18, ``method=``): "pcl", PCL cells (the paper: "readily extensible to
any k-anonymous microaggregation algorithm") published as a power diagram, :func:`_pcl_cells`;
"tree", cells a respondent finds on paper by answering single-key questions, categorical keys
allowed (:mod:`.tree`, function kind "decision-tree"). Whatever the method, the labels are those
the published function assigns, and every cell is checked at its real size (constant pi) or by
Algorithm A on its members (per-record pi_j) before the design is returned.

Centroids are pi-weighted, x_c = sum pi_j x_j / sum pi_j, and the distortion is
D = sum_j pi_j ||z_j - z_c(j)||^2 / (m sum_j pi_j) on z-scored quasi-identifiers (Sec. VI.B;
m = number of non-constant columns; D = SSE/SST when pi = 1). With design weights d_j (a frame
record standing for d_j persons; issue 17.1), every pi_j above becomes d_j pi_j, the expected
number of respondents the record stands for, and D's z-scores use the d-weighted mean and sd (the
population's): the cells do not change, the centroids and D do (D = weighted SSE/SST when pi = 1).
With categorical keys (tree), D is measured in the embedding of :mod:`probanon.microagg.mixed`
(a nominal key: 1 per differing category, from the cell's mean indicators), m counting keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
import pandas as pd

from .._validation import check_k, check_matrix, check_random_state, check_weights, is_numeric_column, weights_of
from ..data import Standardizer, is_constant, select_columns
from ..errors import InputError, ParameterError, ProbanonError
from ..microagg.base import group_means
from ..microagg.function import MicroaggregationFunction, publish_function
from ..microagg.mdav import mdav_partition
from ..microagg.mixed import Encoding
from ..microagg.pcl import pcl_partition
from ..microagg.potentials import strict_offsets
from ..microagg.settle import Unsettled, settle_power
from ..microagg.transport import transport_assign
from ..release import column_list
from . import _per_record
from .anonymity import (
    cell_failure,
    cells_log_failure,
    check_participation,
    check_participations,
    check_risk,
    log_cell_failure,
    prefix_log_failures,
    required_anonymity,
)
from .participation import LogisticParticipation
from .tree import tree_partition


class DesignError(ProbanonError, ValueError):
    """The population cannot be partitioned into safe cells (too few records)."""


def safe_cell_size(k: int, pi: float, risk: float, records: int) -> int:
    """n_cell = min{n >= n_min : qbar(s) <= pbar for all s in [n, records]}.

    Our construction (not in the paper): qbar is not monotone in n for small pi (NOTES.md
    §1), so Algorithm A's n_min alone does not make cells of n_min..2 n_min - 1 safe."""
    eff = required_anonymity(k, pi, risk)
    if eff.n > records:
        raise DesignError(f"the population has {records} records but one safe cell needs n_min = {eff.n}")
    logq = prefix_log_failures(np.full(records, float(pi)), k)
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
    participation_model: dict | None = None  # a fitted model's specification (LogisticParticipation.to_spec())
    method: str = "mdav"  # "mdav", "pcl" or "tree" (METHODS)

    @property
    def sizes(self) -> np.ndarray:
        return np.asarray(self.function.sizes)


def _check_whole(k: int, pis, risk: float) -> None:
    """A :class:`DesignError` unless the whole population is at least one safe cell."""
    if not (pis.size >= k and log_cell_failure(k, pis) <= math.log(risk)):
        raise DesignError("the whole population is not even one safe cell: too few records for this k and risk")


def _per_record_partition(Z: np.ndarray, pis: np.ndarray, k: int, risk: float, progress=None):
    """MDAV-like partition with groups grown until Algorithm A holds on their pi_j (our
    construction for the paper's uneven participation, Sec. V: the "predefined order" is
    the key order around the group's reference record). The rules are in the module
    docstring; the centroid is a running sum (rows in row order, each cell's members
    subtracted in key order). numba kernel: :mod:`._per_record`, run in slices so that
    ``progress`` hears of every slice of cells."""
    log_pbar = math.log(risk)
    n = Z.shape[0]
    _check_whole(k, pis, risk)
    state = _per_record.new_state(Z, pis, k)
    nchunks = max(2, numba.get_num_threads())
    per_call, placed = max(1, n // (100 * k)), 0  # about a hundred progress reports
    while not state["st"][_per_record.DONE]:
        placed += int(_per_record.run(Z, pis, k, log_pbar, nchunks=nchunks, max_groups=per_call, **state))
        if progress is not None:
            progress("records", placed, n)
    g = int(state["st"][_per_record.GROUPS])
    return state["labels"], state["refs"][:g], state["rad2"][:g], state["bnds"][:g]


def _balls_rule(Z, refs, rad2, bnds) -> dict:
    """The "ordered-balls" rule of MDAV's groups (their references, squared radii and boundary
    records; the last group is the default)."""
    d = Z.shape[1]
    return {"references": np.ascontiguousarray(Z[refs[:-1]].reshape(-1, d)),
            "radius2": np.ascontiguousarray(rad2[:-1]), "boundary": np.ascontiguousarray(Z[bnds[:-1]].reshape(-1, d))}


#: rounds of the per-record PCL repair (each one exact size-constrained assignment)
REPAIR_ROUNDS = 200


#: Lloyd rounds of the per-record PCL design (each: centres to the cell means, assignment, repair)
LLOYD_ROUNDS = 10


def _repair(Z, pis, k, risk, labels, centers, m):
    """The repair of :func:`_pcl_cells`: (labels, centers, minimum sizes m) whose cells all pass
    Algorithm A on their members' pi_j."""
    n = Z.shape[0]
    log_pbar = math.log(risk)
    for _ in range(REPAIR_ROUNDS):
        sizes = np.bincount(labels, minlength=m.size)
        bad = np.flatnonzero(_cells_log_failure(k, pis, labels, sizes) > log_pbar)
        if bad.size == 0:
            return labels, centers, m
        for q in bad:
            mean = float(pis[labels == q].mean())
            m[q] = max(m[q] + 1, required_anonymity(k, mean, risk, max_records=n).n)
        while m.sum() > n:  # no room: dissolve the failing cell of fewest records
            if m.size == 1:
                raise DesignError("the whole population is not even one safe cell: too few records")
            q = int(bad[np.argmin(sizes[bad])]) if bad.size else int(np.argmax(m))
            centers, m = np.delete(centers, q, axis=0), np.delete(m, q)
            bad = bad[bad != q] - (bad[bad != q] > q)
            sizes = np.delete(sizes, q)
        labels = transport_assign(Z, centers, m).labels
    raise DesignError(f"PCL cells not all safe after {REPAIR_ROUNDS} rounds of repair")


def _cells_log_failure(k: int, pis, labels, sizes) -> np.ndarray:
    """log qbar of every non-empty cell (``sizes``: their record counts, in cell order), by
    Algorithm A on its members' pi_j in row order."""
    return cells_log_failure(k, pis[np.argsort(labels, kind="stable")], sizes)


def _distortion(Z, labels, w) -> float:
    """sum_j w_j ||z_j - z_c(j)||^2 with w-weighted centroids z_c (D times m sum_j w_j)."""
    c = group_means(Z, labels, int(labels.max()) + 1, weights=w)
    return float((w * ((Z - c[labels]) ** 2).sum(axis=1)).sum())


def _pcl_cells(Z, pis, k: int, risk: float, cell_size, rng):
    """PCL cells (issue 18.2; paper 3 over the paper 1 guarantee) and their power diagram rule.

    Constant pi: PCL with minimum cell size n_cell (every size from n_cell on is safe, see
    :func:`safe_cell_size`). Per-record pi_j: PCL with the minimum size that is safe at the
    median pi_j, then a repair that keeps the cells a power diagram (:func:`_repair`): while
    some cell fails Algorithm A on its members' pi_j, its minimum size m_q is raised (to the
    n_min of its mean pi_j, and by at least one record) and the exact size-constrained
    assignment to the same centres (:func:`.microagg.transport.transport_assign`, min-cost
    flow; its duals are the offsets) is solved again; the m_q only grow, and when they exceed
    the records the failing cell of fewest records is dissolved (its centre removed). Then
    Lloyd rounds: centres to the pi-weighted cell means, each minimum size back to the n_min of
    the cell's mean pi_j, assignment and repair again, while the distortion D falls by 0.01%
    (census, k = 5, pbar = 1e-3, pi_j ~ U[0.3, 0.9], three draws of the pi_j: D 0.85-0.89 x
    MDAV's; 0.85-0.94 without these rounds). The labels returned are those the
    published rule assigns (strict offsets, :func:`.microagg.potentials.strict_offsets`)."""
    n = Z.shape[0]
    if not np.ptp(Z, axis=0).any():  # identical records: one cell (no distance to optimise)
        return _safe_diagram(Z, pis, k, risk, cell_size, Z[:1].copy(), np.zeros(1))
    if cell_size is not None:
        labels, centers, offsets, _ = pcl_partition(Z, cell_size, random_state=rng)
    else:
        start = required_anonymity(k, float(np.median(pis)), risk).n
        if start > n:
            raise DesignError(f"the population has {n} records but one safe cell needs about {start}")
        labels, centers, _, _ = pcl_partition(Z, start, random_state=rng)
        m = np.full(centers.shape[0], start, np.int64)
        labels, centers, m = _repair(Z, pis, k, risk, labels, centers, m)
        best = (_distortion(Z, labels, pis), labels, centers)
        for _ in range(LLOYD_ROUNDS):  # centres to the means of the safe cells, assigned and repaired again
            Q = centers.shape[0]
            centers = group_means(Z, labels, Q, weights=pis)
            mean_pi = np.bincount(labels, pis, Q) / np.bincount(labels, minlength=Q)
            m = np.array([required_anonymity(k, float(p), risk, max_records=n).n for p in mean_pi], np.int64)
            labels, centers, m = _repair(Z, pis, k, risk, transport_assign(Z, centers, m).labels, centers, m)
            sse, gained = _distortion(Z, labels, pis), best[0]
            if sse < best[0]:
                best = (sse, labels, centers)
            if sse > gained * (1 - 1e-4):  # less than 0.01% better: stop
                break
        _, labels, centers = best
        strict = strict_offsets(Z, centers, labels)
        offsets = strict[1] if strict is not None else \
            transport_assign(Z, centers, np.bincount(labels, minlength=centers.shape[0])).offsets
    return _safe_diagram(Z, pis, k, risk, cell_size, centers, offsets)


def _safe_diagram(Z, pis, k: int, risk: float, cell_size, centers, offsets):
    """(labels, rule) of the power diagram (centres, offsets) with every cell safe. A published
    function cannot split identical records, PCL's optimum may: where it did, the diagram's own
    cells differ from PCL's and one may fall short. Such a cell (or an empty one) is dissolved,
    its centre removed, the one of fewest records first: its records go to their next cell and
    the other cells only gain records (:func:`.microagg.settle.settle_power`, removals only).
    Repeated until every cell is safe (size >= n_cell, or Algorithm A on its members' pi_j)."""
    log_pbar = math.log(risk)

    def failing(labels, sizes):
        bad = np.zeros(sizes.size, bool)
        if cell_size is None:  # Algorithm A on the members of every non-empty cell
            full = np.flatnonzero(sizes > 0)
            bad[full] = _cells_log_failure(k, pis, labels, sizes[full]) > log_pbar
        return bad

    try:
        settled = settle_power(Z, centers, offsets, cell_size or 1, failing=failing)
    except Unsettled:
        raise DesignError("the whole population is not even one safe cell: too few records for this k and risk") \
            from None
    return settled.labels, {"centers": np.ascontiguousarray(settled.centers),
                            "offsets": np.ascontiguousarray(settled.offsets)}


#: designs: MDAV's ordered balls (paper 1), PCL's power diagram, the untrusted-mode tree (issue 18)
METHODS = {"mdav": "MDAV", "pcl": "PCL", "tree": "tree of questions"}


def design(population, k: int, participation, risk: float, columns=None, progress=None, weights=None,
           method: str = "mdav", nominal=(), ordinal=(), random_state=None) -> SurveyDesign:
    """Design the microaggregation function for a survey (paper 1).

    ``population``: the model population's quasi-identifiers (DataFrame or array);
    ``participation``: a constant pi in (0, 1], or one pi_j per population record (array,
    or the name of a population column, or a fitted :class:`.participation.LogisticParticipation`
    whose covariates are then no quasi-identifiers unless named in ``columns``); ``risk``: the
    acceptable cell failure pbar, so each cell is k-anonymous with probability >= 1 - pbar.
    ``progress``: None or a callback ``progress("records", placed, N)`` (:mod:`probanon.progress`),
    called with 0 once the inputs are checked (before the numerical kernels run, or compile on
    first use), then with the population records placed in cells (per-record participation with
    MDAV reports every max(1, N // (100 k)) cells, the other designs at once at the end). ``weights``: design
    weights d_j (n numbers > 0, or the name of a population column) for the centroids and D
    (module docstring).

    ``method``: "mdav" (locally trusted respondents, the paper's design: ordered balls), "pcl"
    (locally trusted, PCL cells published as a power diagram, :func:`_pcl_cells`) or "tree"
    (untrusted respondents: a tree of questions on the keys, :mod:`.tree`). ``nominal`` /
    ``ordinal`` (tree only): categorical keys by name, added to the numeric keys (``columns``,
    default every numeric column); their released value is the cell's (pi-weighted) mode or
    median level (:mod:`probanon.microagg.mixed`). ``random_state`` seeds PCL's kicks.
    Returns a :class:`SurveyDesign`.
    """
    k = check_k(k)
    risk = check_risk(risk)
    if method not in METHODS:
        raise ParameterError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    categorical = list(column_list(nominal)) + list(column_list(ordinal))
    if categorical and method != "tree":
        raise ParameterError("categorical keys (nominal, ordinal) need the tree design (method 'tree')")
    if categorical and not isinstance(population, pd.DataFrame):
        raise ParameterError("categorical keys need the population as a table with named columns")
    model_spec, encoding = None, None
    if isinstance(participation, LogisticParticipation):  # issue 18.3: pi_j from a fitted model
        model_spec = participation.to_spec()
        participation = participation.probabilities(population, name="the population")
        if columns is None:
            population = population.drop(columns=model_spec["covariates"])
    if isinstance(population, pd.DataFrame):
        if isinstance(participation, str):
            if participation not in population.columns:
                raise ParameterError(f"participation column {participation!r} is not in the population")
            column = participation
            participation = check_participations(population[column].to_numpy(), name=column)
            population = population.drop(columns=[column])
        if isinstance(weights, str):
            weights, population = weights_of(population, weights), population.drop(columns=[weights])
        if categorical:  # the numeric keys and the categorical ones, in the table's order
            absent = [c for c in categorical if c not in population.columns]
            if absent:
                raise InputError(f"categorical key {absent[0]!r} is not a column of the population")
            numeric = [c for c in column_list(columns) if c not in categorical]
            rest = population.drop(columns=categorical)
            if numeric or any(is_numeric_column(rest[c]) for c in rest.columns):
                numeric = select_columns(rest, numeric or None)
            chosen = set(numeric) | set(categorical)
            cols = [c for c in population.columns if c in chosen]
            encoding = Encoding.fit(population[cols], column_list(nominal),
                                    ordinal if isinstance(ordinal, dict) else column_list(ordinal))
            V = encoding.values(population[cols])
            X = encoding.embed_values(V)
        else:
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
    if not constant:
        _check_whole(k, pis, risk)
    if progress is not None:
        progress("records", 0, N)
    std = Standardizer.fit(X) if encoding is None else encoding.standardizer(X)
    Z = np.ascontiguousarray(std.transform(X))
    size = safe_cell_size(k, pi, risk, N) if constant else None
    if method == "mdav" and constant:
        part = mdav_partition(Z, size, keep_duplicates=True)
        kind, rule = "ordered-balls", _balls_rule(Z, part.references, part.radius2, part.boundary)
        labels = part.labels
    elif method == "mdav":
        labels, refs, rad2, bnds = _per_record_partition(Z, pis, k, risk, progress)
        kind, rule = "ordered-balls", _balls_rule(Z, refs, rad2, bnds)
    elif method == "pcl":
        labels, rule = _pcl_cells(Z, pis, k, risk, size, check_random_state(random_state))
        kind = "power-diagram"
    else:
        keys = encoding.columns if encoding is not None else [None] * Z.shape[1]
        kinds = ["nominal" if encoding and c in encoding.nominal else "ordinal" if encoding and c in encoding.ordinal
                 else "numeric" for c in keys]
        levels = [encoding.levels(c) if encoding else None for c in keys]
        labels, nodes = tree_partition(V if encoding is not None else X, Z, mass, kinds, levels, k, risk, pis, size)
        kind, rule = "decision-tree", {"nodes": nodes}
    if progress is not None and (method != "mdav" or constant):  # the per-record kernel reports as it goes
        progress("records", N, N)
    n_cells = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=n_cells)
    if constant:
        distinct, which = np.unique(sizes, return_inverse=True)
        failures = np.array([cell_failure(int(s), k, pi).cell_failure for s in distinct])[which]
    else:  # each cell's pi_j in row order
        failures = np.exp(_cells_log_failure(k, pis, labels, sizes))
    if (failures > risk).any():
        c = int(np.argmax(failures))
        raise DesignError(f"cell {c} of {sizes[c]} records fails with probability {failures[c]:.3g} > {risk}")
    n_min = required_anonymity(k, pi, risk).n if constant else int(sizes.min())
    centroids = group_means(X, labels, n_cells, weights=mass) if encoding is None else \
        encoding.released(population[cols], labels, mass)
    function = publish_function(
        kind, rule, standardizer=std, centroids=centroids, sizes=sizes, columns=cols, encoding=encoding,
        meta={"method": f"survey design ({METHODS[method]})", "k": k, "weighted": weights is not None,
              **({"nominal": list(encoding.nominal), "ordinal": list(encoding.ordinal)} if encoding else {})},
    )
    if d_j is not None:  # D on the population's z-scores (d-weighted mean and sd)
        std = Standardizer.fit(X, d_j) if encoding is None else encoding.standardizer(X, d_j)
        Z = std.transform(X)
    varying = ~is_constant(std.mean_, X.std(axis=0))
    if encoding is not None:  # a key varies when any of its embedded columns does
        varying = np.array([v.any() for v in np.split(varying, np.cumsum(encoding.widths())[:-1])])
    distortion = _distortion(Z, labels, mass) / (max(int(varying.sum()), 1) * mass.sum())
    return SurveyDesign(function=function, labels=labels, k=k, risk=risk, participation=pi,
                        record_participation=pis, n_min=int(n_min), cell_size=int(size or 0), method=method,
                        cell_failures=failures, distortion=distortion, participation_model=model_spec)

"""Monte Carlo verification of the failure metrics of Algorithm A (paper 1, Sec. VI.A, Table II).

A table is a list of cells, each given by the participation probabilities pi_j of its records.
Every run draws I_j ~ Bernoulli(pi_j) independently for every record of every cell; with
K_c = sum_{j in c} I_j the number of active records of cell c, the cell FAILS when 0 < K_c < k.
Over all runs the simulation measures

    cell failure                 fraction of (cell, run) pairs that fail
    mean unprotected u           mean of K_c over the failing (cell, run) pairs
    record failure rbar          active records in failing cells / (records x runs)
    given participation rbar'    active records in failing cells / active records
    table failure tbar           fraction of runs with at least one failing cell

and compares them with the values Algorithm A predicts (:func:`~probanon.survey.anonymity.cell_failure`
per cell, qbar_c, u_c, rbar_c, for n_c records):

    cell failure   mean_c qbar_c
    u              sum_c qbar_c u_c / sum_c qbar_c
    rbar           sum_c n_c rbar_c / sum_c n_c
    rbar'          sum_c sum_{j in c} pi_j P{0 < K_c < k | I_j = 1} / sum_j pi_j
                   = sum_c n_c rbar_c / sum_j pi_j          (rbar_c / pi for one constant-pi cell)
    tbar           1 - prod_c (1 - qbar_c)                   (log1p / expm1)

Intervals (level ``confidence``, default 0.99):

* cell and table failure: exact Clopper-Pearson intervals on the failure counts (trials =
  cells x runs, resp. runs). With cells of different qbar_c the count of failing pairs is
  Poisson-binomial, whose variance is below the binomial one: the interval is conservative.
* u, rbar, rbar': each is a ratio sum_i Y_i / sum_i X_i over the independent (cell, run)
  pairs i; the interval is the normal one with the linearised (ratio-estimator) standard error
  sqrt(sum_i (Y_i - R X_i)^2) / sum_i X_i. It is approximate (large-sample) and is None when
  fewer than two failing pairs were observed.

``*_agrees`` is True when the prediction lies inside the interval (None when either is undefined).

The runs are independent seeded batches of :data:`RUNS_PER_BATCH` runs (the last one shorter):
batch b draws from ``default_rng(SeedSequence(seed).spawn(batches)[b])`` and returns integer
counts, which are summed, so the result depends only on the cells, k, runs and the random state,
whether the batches run in this process or as tasks of a Dask cluster (``runner``,
:mod:`probanon.montecarlo`). Within a batch, records are drawn at most
:data:`MAX_BATCH_ELEMENTS` uniforms at a time, so memory stays bounded whatever ``runs``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .._validation import check_confidence, check_k, check_random_state, check_runs
from ..errors import InputError, ParameterError
from .anonymity import (
    cell_failure,
    check_participation,
    check_participations,
    table_sizes,
)
from .participation import participation_from_spec

MAX_BATCH_ELEMENTS = 1 << 24  # uniforms drawn at once (~16.8e6 doubles, 134 MB)
RUNS_PER_BATCH = 100  # runs of one seeded batch (one task on a Dask cluster), whatever the workers
PARTICIPATION_RTOL = 1e-9  # a population's pi_j against a specification's (simulate_spec)

_METRICS = ("cell_failure", "mean_unprotected", "record_failure", "record_failure_participant", "table_failure")


@dataclass(frozen=True)
class SimulationResult:
    """Observed vs predicted failure metrics of a simulated table.

    Counts are totals over all runs; intervals are (lower, upper) tuples or None.
    """

    k: int
    runs: int
    cells: int  # number of cells |C|
    records: int  # number of (potentially active) records N
    confidence: float
    # counts
    failing_cells: int  # failing (cell, run) pairs
    failing_runs: int  # runs with at least one failing cell
    active_records: int  # active records, summed over runs
    unprotected_records: int  # active records in failing cells, summed over runs
    # observed
    observed_cell_failure: float
    observed_mean_unprotected: float  # NaN when no cell failed
    observed_record_failure: float
    observed_record_failure_participant: float  # NaN when no record was active
    observed_table_failure: float
    # predicted (Algorithm A)
    predicted_cell_failure: float
    predicted_mean_unprotected: float  # NaN when every qbar_c = 0
    predicted_record_failure: float
    predicted_record_failure_participant: float
    predicted_table_failure: float
    # intervals at level `confidence`
    cell_failure_interval: tuple  # Clopper-Pearson, trials = cells x runs
    mean_unprotected_interval: tuple | None  # normal, ratio-estimator standard error
    record_failure_interval: tuple | None
    record_failure_participant_interval: tuple | None
    table_failure_interval: tuple  # Clopper-Pearson, trials = runs
    # prediction inside the interval
    cell_failure_agrees: bool
    mean_unprotected_agrees: bool | None
    record_failure_agrees: bool | None
    record_failure_participant_agrees: bool | None
    table_failure_agrees: bool

    @property
    def agrees(self) -> bool:
        """True when every defined ``*_agrees`` flag is True."""
        return all(getattr(self, f"{m}_agrees") is not False for m in _METRICS)

    def to_dict(self) -> dict:
        """JSON-serialisable dict (tuples as lists, NaN/inf as None)."""
        return {key: _plain(value) for key, value in asdict(self).items()}


def _plain(value):
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        value = float(value)
        return value if math.isfinite(value) else None
    return value


# --------------------------------------------------------------------------- checks


def _check_cells(cells) -> tuple[np.ndarray, np.ndarray]:
    """Concatenated pi_j and the cell sizes; ParameterError on anything else."""
    if isinstance(cells, np.ndarray) or not hasattr(cells, "__len__"):
        raise ParameterError("cells must be a list of 1-D arrays of participation probabilities")
    if len(cells) == 0:
        raise ParameterError("cells: no cells given")
    arrays = []
    for i, cell in enumerate(cells):
        try:
            a = np.asarray(cell, dtype=np.float64)
        except (TypeError, ValueError):
            raise ParameterError(f"cells[{i}] must be numbers in (0, 1]") from None
        if a.ndim != 1:
            raise ParameterError(f"cells[{i}] must be a 1-D array, got {a.ndim} dimensions")
        if a.size == 0:
            raise ParameterError(f"cells[{i}] is empty (no records)")
        arrays.append(a)
    sizes = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
    pis = np.concatenate(arrays)
    bad = ~((pis > 0.0) & (pis <= 1.0))  # NaN is bad too
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        c = int(np.searchsorted(np.cumsum(sizes), j, side="right"))
        raise ParameterError(f"cells[{c}]: participation must be in (0, 1], got {pis[j]!r}")
    return pis, sizes


# --------------------------------------------------------------------------- prediction


def _predict(pis: np.ndarray, sizes: np.ndarray, starts: np.ndarray, k: int) -> dict:
    """Per-cell qbar, u, rbar from Algorithm A, combined into the table predictions."""
    lo = np.minimum.reduceat(pis, starts)
    hi = np.maximum.reduceat(pis, starts)
    q = np.empty(sizes.size)
    qu = np.empty(sizes.size)  # qbar_c u_c (0 when qbar_c = 0)
    nr = np.empty(sizes.size)  # n_c rbar_c
    cache: dict = {}
    for c in range(sizes.size):
        n = int(sizes[c])
        if lo[c] == hi[c]:
            key = (n, float(lo[c]))
            arg = float(lo[c])
        else:
            arg = pis[starts[c]:starts[c] + n]
            key = (n, arg.tobytes())
        res = cache.get(key)
        if res is None:
            f = cell_failure(n, k, arg)
            res = (f.cell_failure, f.cell_failure * f.mean_unprotected if f.cell_failure > 0.0 else 0.0,
                   n * f.record_failure)
            cache[key] = res
        q[c], qu[c], nr[c] = res
    q_sum = float(q.sum())
    with np.errstate(divide="ignore"):  # qbar_c = 1 -> log1p(-1) = -inf -> tbar = 1
        log_success = float(np.sum(np.log1p(-q)))
    return dict(
        cell_failure=q_sum / sizes.size,
        mean_unprotected=float(qu.sum()) / q_sum if q_sum > 0.0 else math.nan,
        record_failure=float(nr.sum()) / float(sizes.sum()),
        record_failure_participant=float(nr.sum()) / float(pis.sum()),
        table_failure=-math.expm1(log_success),
    )


# --------------------------------------------------------------------------- intervals


def _clopper_pearson(x: int, n: int, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    lower = float(stats.beta.ppf(alpha / 2, x, n - x + 1)) if x > 0 else 0.0
    upper = float(stats.beta.ppf(1 - alpha / 2, x + 1, n - x)) if x < n else 1.0
    return lower, upper


def _ratio_interval(sy, sx, syy, sxy, sxx, pairs, z) -> tuple[float, tuple | None]:
    """Ratio R = sy / sx over independent units and its normal interval (linearisation)."""
    if sx == 0:
        return math.nan, None
    r = sy / sx
    if pairs < 2:
        return r, None
    ss = max(float(syy) - 2.0 * r * float(sxy) + r * r * float(sxx), 0.0)
    se = math.sqrt(ss) / sx
    return r, (r - z * se, r + z * se)


def _inside(value, interval):
    """value in [lower, upper], up to rounding (1e-9 relative): a degenerate interval
    [3, 3] holds a prediction of 3.0000000000000004."""
    if interval is None or not math.isfinite(value):
        return None
    slack = 1e-9 * abs(value)
    return bool(interval[0] - slack <= value <= interval[1] + slack)


# --------------------------------------------------------------------------- simulation


def _blocks(sizes: np.ndarray) -> list[tuple[int, int, int]]:
    """Consecutive cell ranges [a, b) of at most MAX_BATCH_ELEMENTS records (or one cell), each
    with the runs drawn at once in it (at most MAX_BATCH_ELEMENTS uniforms, at least one run)."""
    blocks, a, total = [], 0, 0
    for c, n in enumerate(sizes.tolist()):
        if c > a and total + n > MAX_BATCH_ELEMENTS:
            blocks.append((a, c, max(1, MAX_BATCH_ELEMENTS // total)))
            a, total = c, 0
        total += n
    blocks.append((a, sizes.size, max(1, MAX_BATCH_ELEMENTS // total)))
    return blocks


def _simulate_batch(pis: np.ndarray, sizes: np.ndarray, k: int, blocks: list, runs: int,
                    seed: np.random.SeedSequence) -> tuple[int, ...]:
    """One seeded batch of ``runs`` runs drawn from ``default_rng(seed)``, cell block by cell
    block (:func:`_blocks`): the integer counts (failing pairs, failing runs, sum K, sum K^2,
    sum Y, sum Y^2, sum Y n_c over the (cell, run) pairs, Y = K 1{0 < K < k}), summed over the
    batches by :func:`probanon.montecarlo.seeded_totals`."""
    rng = np.random.default_rng(seed)
    ends = np.cumsum(sizes)
    starts = ends - sizes
    failing = unprotected = unprotected_sq = unprotected_n = active = active_sq = 0
    run_failed = np.zeros(runs, dtype=bool)
    for a, b, per_draw in blocks:
        r0, r1 = int(starts[a]), int(ends[b - 1])
        p = pis[r0:r1]
        block_starts = starts[a:b] - r0
        n_c = sizes[a:b]
        for s in range(0, runs, per_draw):
            m = min(per_draw, runs - s)
            on = rng.random((m, p.size)) < p
            K = np.add.reduceat(on, block_starts, axis=1, dtype=np.int64)  # (m, cells in block)
            fail = (K > 0) & (K < k)
            Y = np.where(fail, K, 0)
            failing += int(np.count_nonzero(fail))
            unprotected += int(Y.sum())
            unprotected_sq += int((Y * Y).sum())
            unprotected_n += int((Y * n_c).sum())
            active += int(K.sum())
            active_sq += int((K * K).sum())
            run_failed[s:s + m] |= fail.any(axis=1)
    return failing, int(np.count_nonzero(run_failed)), active, active_sq, unprotected, unprotected_sq, unprotected_n


def simulate_cells(cells, k: int, runs: int, random_state=None, confidence: float = 0.99, runner=None,
                   progress=None) -> SimulationResult:
    """Simulate ``runs`` independent participations of the table ``cells`` and compare the
    observed failure metrics with Algorithm A.

    ``cells`` is a list of 1-D arrays, one per cell, of per-record participation probabilities
    in (0, 1] (a constant-pi cell is ``np.full(n, pi)``). ``random_state``: None, an int or a
    :class:`numpy.random.Generator`; the same seed gives the same result. ``runner``: where the seeded
    batches run (:mod:`probanon.montecarlo`; None: here; ``batches_on_dask(client)``: as tasks of a
    Dask cluster, with the same result);
    ``progress("batches", done, total)`` over the batches.
    """
    from ..montecarlo import seeded_totals

    k = check_k(k)
    runs = check_runs(runs)
    confidence = check_confidence(confidence)
    pis, sizes = _check_cells(cells)
    rng = check_random_state(random_state)
    ends = np.cumsum(sizes)
    starts = ends - sizes

    failing, failing_runs, active, active_sq, unprotected, unprotected_sq, unprotected_n = seeded_totals(
        _simulate_batch, runs, RUNS_PER_BATCH, rng, fixed=(k, _blocks(sizes)), shared=(pis, sizes), runner=runner,
        progress=progress)

    pairs = sizes.size * runs
    records = int(sizes.sum())
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    # u: Y = K 1{fail}, X = 1{fail};  rbar: X = n_c;  rbar': X = K (so sum XY = sum Y^2)
    u, u_ci = _ratio_interval(unprotected, failing, unprotected_sq, unprotected, failing, failing, z)
    rb, rb_ci = _ratio_interval(unprotected, records * runs, unprotected_sq, unprotected_n,
                                runs * int((sizes * sizes).sum()), pairs, z)
    if failing < 2:
        rb_ci = None
    rp, rp_ci = _ratio_interval(unprotected, active, unprotected_sq, unprotected_sq, active_sq, pairs, z)
    if failing < 2:
        rp_ci = None
    q_ci = _clopper_pearson(failing, pairs, confidence)
    t_ci = _clopper_pearson(failing_runs, runs, confidence)

    pred = _predict(pis, sizes, starts, k)
    return SimulationResult(
        k=k, runs=runs, cells=int(sizes.size), records=records, confidence=confidence,
        failing_cells=failing, failing_runs=failing_runs, active_records=active,
        unprotected_records=unprotected,
        observed_cell_failure=failing / pairs,
        observed_mean_unprotected=u,
        observed_record_failure=rb,
        observed_record_failure_participant=rp,
        observed_table_failure=failing_runs / runs,
        predicted_cell_failure=pred["cell_failure"],
        predicted_mean_unprotected=pred["mean_unprotected"],
        predicted_record_failure=pred["record_failure"],
        predicted_record_failure_participant=pred["record_failure_participant"],
        predicted_table_failure=pred["table_failure"],
        cell_failure_interval=q_ci,
        mean_unprotected_interval=u_ci,
        record_failure_interval=rb_ci,
        record_failure_participant_interval=rp_ci,
        table_failure_interval=t_ci,
        cell_failure_agrees=_inside(pred["cell_failure"], q_ci),
        mean_unprotected_agrees=_inside(pred["mean_unprotected"], u_ci),
        record_failure_agrees=_inside(pred["record_failure"], rb_ci),
        record_failure_participant_agrees=_inside(pred["record_failure_participant"], rp_ci),
        table_failure_agrees=_inside(pred["table_failure"], t_ci),
    )


def table_cells(records: int, k: int, participation: float, risk: float) -> list[np.ndarray]:
    """The constant-pi table of Sec. VI.A as cells of participation probabilities
    (sizes from :func:`probanon.survey.anonymity.table_sizes`)."""
    pi = check_participation(participation)
    return [np.full(n, pi) for n in table_sizes(records, k, pi, risk)]


def simulate_table(records: int, k: int, participation: float, risk: float, runs: int,
                   random_state=None, confidence: float = 0.99, runner=None, progress=None) -> SimulationResult:
    """:func:`simulate_cells` on the table of :func:`table_cells` (constant participation);
    its ``predicted_table_failure`` equals :func:`~probanon.survey.anonymity.table_failure`."""
    cells = table_cells(records, k, participation, risk)
    return simulate_cells(cells, k, runs, random_state=random_state, confidence=confidence, runner=runner,
                          progress=progress)


# --------------------------------------------------------------------------- a published specification


def _spec_population(verified, population) -> list[np.ndarray]:
    """The participation probabilities of the population's records, one array per cell of the
    specification, after checking that the population is the one the specification declares:
    its number of records, the function's columns, the size of every cell the function forms
    and, for per-record participation, every cell's pi_j. :class:`InputError` names the first
    difference."""
    from .._validation import check_matrix
    from ..data import select_columns

    f, g = verified.function, verified.guarantee
    model = g["participation"]
    column = model.get("column") if model["model"] == "per-record" else None
    if not isinstance(population, pd.DataFrame):
        if model["model"] == "per-record":
            raise InputError("a per-record specification needs the population as a table with its participation column")
        population = pd.DataFrame(check_matrix(population, name="population"))
    if len(population) != g["records"]:
        raise InputError(f"the population has {len(population)} records but the specification declares "
                         f"{g['records']}: not the population it was designed on")
    width = np.asarray(f.centroids).shape[1]
    if f.columns is not None:
        missing = [c for c in f.columns if c not in population.columns]
        if missing:
            raise InputError(f"the population has no column {missing[0]!r} of the specification's function "
                             f"(columns {', '.join(map(str, f.columns))})")
        # text in a number: named with its line (categorical keys: checked by the function's encoding)
        columns = list(f.columns) if f.encoding is not None else select_columns(population, list(f.columns))
    else:
        columns = select_columns(population.drop(columns=[column] if column in population.columns else []))
        if len(columns) != width:
            raise InputError(f"the population has {len(columns)} numeric columns, the specification's function "
                             f"takes {width} (it does not name them)")
    X = population[columns] if f.encoding is not None else check_matrix(population[columns], name="population")
    cells = np.asarray(f.assign(X))
    declared = np.asarray(f.sizes, dtype=np.int64)
    found = np.bincount(cells, minlength=declared.size)
    differ = np.flatnonzero(found != declared)
    if differ.size:
        c = int(differ[0])
        more = f"; {differ.size} cells differ" if differ.size > 1 else ""
        raise InputError(f"cell {c}: the specification declares {declared[c]} records, the function puts "
                         f"{found[c]} of this population there{more}: not the population it was designed on")
    order = np.argsort(cells, kind="stable")
    if model["model"] == "constant":
        pis = np.full(len(population), float(model["pi"]))
    elif model["model"] == "logistic":  # issue 18.3: recomputed from the model and the covariates
        pis = participation_from_spec(model, population, name="the population")
    else:
        if column is None or column not in population.columns:
            raise InputError(f"the population needs the participation column {column!r} of this specification")
        pis = check_participations(population[column].to_numpy(), name=column)
    groups = np.split(pis[order], np.cumsum(declared)[:-1])
    if model["model"] != "constant":
        for c, (group, cell) in enumerate(zip(groups, verified.spec["cells"])):
            if not np.allclose(np.sort(group), cell["participation"], rtol=PARTICIPATION_RTOL, atol=0.0):
                raise InputError(f"cell {c}: the participation probabilities of the population's records differ "
                                 f"from those the specification declares")
    return groups


def simulate_spec(spec, population, runs: int, random_state=None, confidence: float = 0.99, runner=None,
                  progress=None) -> SimulationResult:
    """:func:`simulate_cells` on the population a published specification was designed on.

    ``spec``: a :class:`~probanon.survey.spec.VerifiedSpec`, or a specification (dict, JSON text
    or path) that is verified first. ``population``: a DataFrame (the function's columns and,
    for per-record participation, the specification's participation column) or, for constant
    participation, a matrix. The population must match the specification: the declared number
    of records, the function's columns, every declared cell size when the function is applied
    to it, and (per-record) every cell's participation probabilities within a relative
    ``PARTICIPATION_RTOL``; otherwise :class:`InputError` names the first difference, since the
    simulation would otherwise check another table than the one the guarantee is about.
    ``runner``, ``progress``: as for :func:`simulate_cells`.
    """
    from .spec import VerifiedSpec, verify

    runs = check_runs(runs)
    confidence = check_confidence(confidence)
    rng = check_random_state(random_state)
    verified = spec if isinstance(spec, VerifiedSpec) else verify(spec)
    groups = _spec_population(verified, population)
    return simulate_cells(groups, verified.guarantee["k"], runs, random_state=rng, confidence=confidence,
                          runner=runner, progress=progress)

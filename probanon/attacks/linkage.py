"""The linkage attack on (l, delta)-diverse count releases (paper 4: l-delta-diversity.txt), with
its failure rate against the claimed bound.

The intruder (Sec. 2.3, Assumption 1) knows a person's quasi-identifier, hence the person's class
in the public plan, that the person contributes to each of t releases, and holds the t count
tables ``n^(qbar)(s)``. It keeps the sensitive values present in the person's class of every
table, ``n_[t](s) = min_j n^(qbar)_j(s)`` (:func:`probanon.diversity.attack.linkage_attack`), and
wins when fewer than l values survive. Theorem 4.5: releases of Algorithm 1 (N i.i.d. records
each) linked t at a time leave some non-empty class with fewer than l values with probability at
most ``t delta`` (at most ``delta`` for one release, Theorem 4.4); the probability is over the
sampling of the records, so a failure rate needs many independent releases:

* simulated: ``runs`` sets of t releases drawn from the planned distribution with the plan's N and
  classes (:func:`probanon.diversity.attack.linkage_monte_carlo`), the probability space of the
  theorems;
* given: the releases supplied, each one a trial against delta, and their consecutive disjoint
  groups of t (releases 1..t, t+1..2t, ...) linked, each group a trial against ``t delta``.

Each rate comes with a Clopper-Pearson interval; a rate whose interval lies entirely above its
bound refutes the claim.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .._validation import check_confidence, check_random_state, check_runs
from ..errors import InputError, ParameterError
from ..metrics.risk import reidentification_result
from .scope import guarantee
from .suite import AttackReport, with_bound

KNOWS = ("the person's quasi-identifier (its class in the public plan), that the person is in each of the {t} "
         "releases and the count tables; keeps the sensitive values present in that class of every table "
         "(per-class minimum of counts) and wins when fewer than l = {l} survive in some class")
KNOWS_ONE = ("the person's quasi-identifier (its class in the public plan) and one count table; wins when the "
             "class holds fewer than l = {l} sensitive values")


def _plan(plan):
    from ..diversity.planning import DiversityPlan
    from ..diversity.release import load_plan

    return plan if isinstance(plan, DiversityPlan) else load_plan(plan)


def _aligned_pmf(plan, distribution) -> np.ndarray:
    """The planned pmf with rows in the plan's QI order and columns in its sensitive order."""
    from ..diversity.distribution import JointDistribution, read_distribution, value_key

    dist = distribution if isinstance(distribution, JointDistribution) else read_distribution(distribution)
    rows = pd.Index(dist.qi_keys()).get_indexer(list(plan.qi_keys))
    cols = pd.Index([value_key(s) for s in dist.sensitive_values]).get_indexer(list(plan.sensitive_values))
    for what, found, names, size in (("QI value", rows, plan.qi_keys, dist.n_qi),
                                     ("sensitive value", cols, plan.sensitive_values, dist.n_sensitive)):
        if (found < 0).any():
            raise InputError(f"the distribution is not the plan's: it has no {what} "
                             f"{names[int(np.argmax(found < 0))]!r}")
        if len(names) != size:
            raise InputError(f"the distribution is not the plan's: it has {size} {what}s, the plan {len(names)}")
    return dist.probabilities[np.ix_(rows, cols)]


def count_array(plan, table, j: int) -> np.ndarray:
    """Release ``j``'s counts as an array (plan classes x plan sensitive values); a class or a
    sensitive value the plan does not have is an :class:`InputError`."""
    from ..diversity.distribution import value_key

    name = f"release {j + 1}"
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"{name} must be a count table (DataFrame with class, sensitive, count)")
    missing = [c for c in ("class", "sensitive", "count") if c not in table.columns]
    if missing:
        raise InputError(f"{name} is not a count table (no column {missing[0]!r})")
    if table.empty:
        raise InputError(f"{name} has no rows")
    values = {}
    for c in ("class", "count"):
        v = pd.to_numeric(table[c], errors="coerce").to_numpy(dtype=np.float64)
        bad = ~np.isfinite(v) | (v != np.round(v)) | (v < 0)
        if bad.any():
            raise InputError(f"{name}: {c} {table[c].iloc[int(np.argmax(bad))]!r} is not a non-negative integer")
        values[c] = v.astype(np.int64)
    if values["class"].max() >= plan.classes:
        raise InputError(f"{name}: class {int(values['class'].max())} is not one of the plan's {plan.classes}")
    s_codes = pd.Index(plan.sensitive_values).get_indexer([value_key(s) for s in table["sensitive"]])
    if (s_codes < 0).any():
        raise InputError(f"{name}: sensitive value {table['sensitive'].iloc[int(np.argmax(s_codes < 0))]!r} "
                         "is not in the plan")
    counts = np.zeros((plan.classes, len(plan.sensitive_values)), dtype=np.int64)
    np.add.at(counts, (values["class"], s_codes), values["count"])
    return counts


def _failures(counts: np.ndarray, l: int) -> tuple[bool, int, int]:
    """Counts (t, classes, values) linked by the per-class minimum: (some class non-empty in every
    release has fewer than l values, that class, its number of values)."""
    nonempty = (counts.sum(axis=2) > 0).all(axis=0)
    distinct = (counts.min(axis=0) > 0).sum(axis=1)
    distinct = np.where(nonempty, distinct, np.iinfo(np.int64).max)
    worst = int(np.argmin(distinct))
    return bool(distinct[worst] < l), worst, int(distinct[worst])


def _given(plan, tables: list, t: int) -> list:
    """Trials on the supplied releases: each alone (against delta), each disjoint group of t linked."""
    from ..diversity.attack import linkage_attack

    counts = np.stack([count_array(plan, table, j) for j, table in enumerate(tables)])
    short = int((counts.sum(axis=(1, 2)) < plan.n_samples).sum())
    caveat = (f"; {short} release{'s' if short > 1 else ''} with fewer than N = {plan.n_samples} records "
              "(outside the guarantee)") if short else ""
    out = []
    single = [_failures(c[None], plan.l) for c in counts]
    failed = sum(f for f, _, _ in single)
    note = f"{failed} of {len(tables)} releases not {plan.l}-diverse" + caveat
    out.append(("one release (given)", KNOWS_ONE.format(l=plan.l), len(tables), failed, plan.delta,
                f"delta = {plan.delta:g}", note))
    groups = len(tables) // t
    if t > 1 and groups:
        linked = [_failures(counts[g * t:(g + 1) * t], plan.l) for g in range(groups)]
        failed = sum(f for f, _, _ in linked)
        g = int(np.argmin([d for _, _, d in linked]))
        _, cls, _ = linked[g]
        worst = linkage_attack([_table(plan, counts[j]) for j in range(g * t, (g + 1) * t)], [cls] * t)
        survivors = ", ".join(str(s) for s, _ in worst.surviving)
        note = (f"{failed} of {groups} groups of {t} linked releases leave a class with fewer than {plan.l} values; "
                f"worst: releases {g * t + 1}-{(g + 1) * t}, class {cls}: {worst.l_linked} left ({survivors})"
                + (f"; {len(tables) - groups * t} release(s) left out" if len(tables) % t else "") + caveat)
        out.append((f"{t} linked releases (given)", KNOWS.format(t=t, l=plan.l), groups, failed,
                    min(1.0, t * plan.delta), f"t delta, t = {t}, delta = {plan.delta:g}", note))
    return out


def _table(plan, counts: np.ndarray) -> pd.DataFrame:
    """A count array back as a count table (class, sensitive, count) with the plan's values."""
    cls, s = np.nonzero(counts)
    return pd.DataFrame({"class": cls, "sensitive": [plan.sensitive_values[j] for j in s], "count": counts[cls, s]})


def linkage_test(plan, distribution=None, releases=(), *, t: int | None = None, runs: int = 2000,
                 confidence: float = 0.99, random_state=None, runner=None, progress=None) -> AttackReport:
    """Failure rates of (l, delta)-diversity, alone and after linkage, against delta and t delta.

    Parameters
    ----------
    plan : DiversityPlan, path or JSON text
        The plan the releases were made under (``probanon diversity plan -o``): classes, l, delta, N.
    distribution : JointDistribution or path, optional
        The planned joint distribution P(q, s); with it, ``runs`` sets of t releases are simulated.
    releases : sequence of count tables (DataFrames or paths), optional
        Releases made under the plan (``probanon diversity release``): each a trial against delta,
        their consecutive disjoint groups of t linked trials against t delta.
    t : int, optional
        Releases linked (default the plan's t).
    runs : int
        Simulated sets of t releases.
    confidence : float
        Level of the Clopper-Pearson intervals.
    random_state : None, int or Generator
    runner : callable, optional
        Where the simulation's seeded batches run (:mod:`probanon.montecarlo`; None: here;
        ``probanon.distributed.batches_on_dask(client)``: as tasks of a Dask cluster; the same result).
    progress : callable, optional
        ``progress("batches", done, total)`` over the simulation's batches (after the checks).

    Returns
    -------
    AttackReport
        One :class:`~probanon.metrics.ReidentificationTest` per kind of trial (``successes`` are
        failures of l-diversity, the intruder's wins), each with its own bound.
    """
    from ..data import read_table
    from ..diversity.attack import linkage_monte_carlo

    plan = _plan(plan)
    t = plan.t if t is None else check_runs(t, name="t")
    runs, confidence = check_runs(runs), check_confidence(confidence)
    rng = check_random_state(random_state)
    if distribution is None and not len(releases):
        raise ParameterError("give the planned distribution (to simulate releases) or releases made under the plan")
    tables = [read_table(r) if not isinstance(r, pd.DataFrame) else r for r in releases]
    pmf = None if distribution is None else _aligned_pmf(plan, distribution)
    trials = _given(plan, tables, t) if tables else []
    if pmf is not None:
        mc = linkage_monte_carlo(pmf, plan.class_of, plan.n_samples, plan.l, t=t, runs=runs, delta=plan.delta,
                                 confidence=confidence, random_state=rng, runner=runner, progress=progress)
        drawn = f"of N = {plan.n_samples:,} records drawn from the plan's distribution"
        trials.insert(0, ("one release (simulated)", KNOWS_ONE.format(l=plan.l), mc.release_trials,
                          mc.release_failures, plan.delta, f"delta = {plan.delta:g}",
                          f"{mc.release_trials:,} releases {drawn}"))
        if t > 1:
            trials.insert(1, (f"{t} linked releases (simulated)", KNOWS.format(t=t, l=plan.l), mc.linked_trials,
                              mc.linked_failures, min(1.0, t * plan.delta), f"t delta, t = {t}, delta = {plan.delta:g}",
                              f"{mc.linked_trials:,} sets of {t} releases {drawn}"))
    results, formulas = [], []
    for rule, knows, n, failures, bound, formula, note in trials:
        result = reidentification_result(rule, list(plan.qi_columns), n, [failures], None, confidence, knows=knows,
                                         note=note)
        results.append(with_bound(result, bound))
        formulas.append(formula)
    groups = (f"the plan's {plan.classes} class{'es' if plan.classes > 1 else ''} (public); l = {plan.l}, delta = {plan.delta:g}, N = {plan.n_samples:,} "
              f"records per release, {t} release{'s' if t > 1 else ''} linked")
    return AttackReport("l-delta", None, min(1.0, t * plan.delta), guarantee("l-delta"), plan.n_samples,
                       list(plan.qi_columns), [plan.sensitive_column], groups, tuple(results), formulas=tuple(formulas))

"""Disclosure risk of a release: record linkage, interval disclosure, and an empirical test of
probabilistic k-anonymity.

All measures compare a ``released`` table with the ``original`` one, record by record: row ``i``
of the release is the record of individual ``i`` (it carries ``i``'s confidential values), so
an intruder who links individual ``i`` to released row ``i`` has re-identified it. Columns are
chosen as in :func:`probanon.metrics.utility_report` (by name for two DataFrames, else by
position); they are the attributes the intruder knows.

Probabilistic k-anonymity (Soria-Comas and Domingo-Ferrer, "Probabilistic k-anonymity through
microaggregation and data swapping", Sec. III, Inequality (1)) asks that an intruder's
probability of a correct re-identification be at most 1/k, for every intruder strategy.
:func:`record_linkage` measures it for the nearest-neighbour intruder on one release;
:func:`reidentification_test` and :func:`mechanism_reidentification_test` estimate it by
simulation, with an exact (Clopper-Pearson) interval, for any linkage rule.

Nearest neighbours are searched with :class:`scipy.spatial.cKDTree` over the distinct released
tuples, so 10^5 records take seconds on real data (a k-d tree slows down on many uncorrelated
dimensions). Two distances to a target are *tied* when they differ by at most
``TIE_TOLERANCE * max(1, d_min)`` (z-score units), which absorbs rounding differences.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import spatial, stats

from .._validation import check_confidence, check_k, check_random_state, check_runs
from ..data import Standardizer
from ..errors import InputError, ParameterError
from .utility import _selected_matrices

TIE_TOLERANCE = 1e-9
RULES = ("nearest", "group")


def _known_zscores(original, released, columns) -> tuple[np.ndarray, np.ndarray, list]:
    """Known columns of both tables z-scored with the ORIGINAL's mean and population sd."""
    X, Y, names = _selected_matrices(original, released, columns)
    scaler = Standardizer.fit(X)
    return scaler.transform(X), scaler.transform(Y), names


class _Blocks:
    """Rows grouped by a label: members of block ``b`` are ``order[starts[b]:starts[b] + counts[b]]``."""

    def __init__(self, labels: np.ndarray, n_blocks: int):
        self.order = np.argsort(labels, kind="stable")
        self.counts = np.bincount(labels, minlength=n_blocks)
        self.starts = np.concatenate(([0], np.cumsum(self.counts)[:-1]))

    def members(self, block: int) -> np.ndarray:
        return self.order[self.starts[block]:self.starts[block] + self.counts[block]]

    def uniform_member(self, blocks: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One member of each ``blocks[i]``, uniformly at random."""
        offset = np.floor(rng.random(blocks.size) * self.counts[blocks]).astype(np.int64)
        return self.order[self.starts[blocks] + offset]


class _NearestCandidates:
    """For each target (row of ``Zx``), the released rows at minimal Euclidean distance.

    Released rows are collapsed into distinct tuples; ``first[i]`` is the nearest distinct tuple
    and ``tied[i]`` (only where two distinct tuples tie) all the distinct tuples at the minimal
    distance. The candidates of ``i`` are every released row holding one of these tuples.
    """

    def __init__(self, Zx: np.ndarray, Zy: np.ndarray):
        tuples, inverse = np.unique(Zy, axis=0, return_inverse=True)
        self.inverse = inverse.reshape(-1)
        self.blocks = _Blocks(self.inverse, tuples.shape[0])
        tree = spatial.cKDTree(tuples)
        if tuples.shape[0] == 1:
            dist, first = tree.query(Zx, k=1, workers=-1)
            self.first, self.tied = first.astype(np.int64), {}
            return
        dist, nearest = tree.query(Zx, k=2, workers=-1)
        radius = dist[:, 0] + TIE_TOLERANCE * np.maximum(1.0, dist[:, 0])
        self.first = nearest[:, 0].astype(np.int64)
        rows = np.flatnonzero(dist[:, 1] <= radius)
        balls = tree.query_ball_point(Zx[rows], radius[rows]) if rows.size else []
        self.tied = {int(i): np.asarray(sorted(b), dtype=np.int64) for i, b in zip(rows, balls)}

    def probabilities(self) -> np.ndarray:
        """P(the target's own row is picked) when one candidate is picked uniformly."""
        p = np.where(self.inverse == self.first, 1.0 / self.blocks.counts[self.first], 0.0)
        for i, tuples in self.tied.items():
            p[i] = 1.0 / self.blocks.counts[tuples].sum() if self.inverse[i] in tuples else 0.0
        return p

    def choose(self, rng: np.random.Generator) -> np.ndarray:
        """One candidate per target, uniformly among its candidates."""
        chosen = self.blocks.uniform_member(self.first, rng)
        for i, tuples in self.tied.items():
            rows = np.concatenate([self.blocks.members(t) for t in tuples])
            chosen[i] = rows[rng.integers(rows.size)]
        return chosen


def linkage_probabilities(original, released, columns=None) -> np.ndarray:
    r"""Per-record success probability of distance-based record linkage.

    Distance-based record linkage (DBRL; Domingo-Ferrer and Torra, "A quantitative comparison
    of disclosure control methods for microdata", 2001 -- reference [17] of the swapping paper):
    the intruder links each original record to the released record at minimal Euclidean
    distance on the known attributes, both z-scored with the mean and population sd of the
    *original* (:class:`~probanon.data.Standardizer`). When several released records are at the
    minimal distance the intruder picks one uniformly, so record ``i`` is re-identified with
    probability

    .. math::

        p_i = \frac{\mathbf 1[\, d(z_i, \tilde z_i) = d_i^{\min} \,]}
                   {\#\{ j : d(z_i, \tilde z_j) = d_i^{\min} \}},
        \qquad d_i^{\min} = \min_j d(z_i, \tilde z_j),

    (distances equal up to ``TIE_TOLERANCE``, see module doc). A group of ``m`` identical
    released records (microaggregation with centroid replacement) gives each of its targets
    ``p_i <= 1/m``. Each target is linked independently (no one-to-one assignment).

    Returns
    -------
    numpy.ndarray of float, shape (n,), each 0 or 1/(number of tied candidates).
    """
    Zx, Zy, _ = _known_zscores(original, released, columns)
    return _NearestCandidates(Zx, Zy).probabilities()


def record_linkage(original, released, columns=None) -> float:
    r"""Share of original records re-identified by distance-based record linkage:
    :math:`RL = \frac1n \sum_i p_i` with :math:`p_i` from :func:`linkage_probabilities` (own
    record nearest counts 1, own record among ``t`` tied nearest counts ``1/t``).

    This is the expected success rate of the nearest-neighbour intruder of Sec. III of the
    swapping paper; probabilistic k-anonymity against it requires ``RL <= 1/k`` on average and
    ``p_i <= 1/k`` per record. 1 for an identical release of distinct records.

    Parameters
    ----------
    original, released : array_like or DataFrame, shape (n, p)
        Numeric, finite tables with the same records in the same order.
    columns : list or str, optional
        The attributes the intruder knows (names for a DataFrame ``original``, else positions);
        default: the numeric columns of a DataFrame, every column of an array.
    """
    return float(linkage_probabilities(original, released, columns).mean())


def interval_disclosure(original, released, columns=None, p: float = 0.05) -> float:
    r"""Interval disclosure risk of sdcMicro's ``dRisk`` (sdcMicro 5.6.0, ``dRiskWORK``;
    after method SDID of Mateo-Sanz, Sebe and Domingo-Ferrer, "Outlier protection in continuous
    microdata masking", PSD 2004).

    Around every released value an interval of half-width ``p`` times the standard deviation of
    the released column is built; a record is at risk when every one of its original values
    lies inside its intervals:

    .. math::

        DR = \frac1n \sum_{i=1}^n \prod_{j}
             \mathbf 1\!\left[\tilde x_{ij} - p\, s_j \le x_{ij} \le \tilde x_{ij} + p\, s_j\right],
        \qquad s_j = \sqrt{\tfrac{1}{n-1} \textstyle\sum_i (\tilde x_{ij} - \bar{\tilde x}_j)^2}

    with :math:`s_j` the *sample* sd (R's ``sd``) of the *released* column ``j``. ``p = 0.05``
    is sdcMicro's default ``k`` (older releases, up to 3.0, defaulted to 0.01; sdcMicro 4.x-5.5
    counted a record at risk when at most one of its values fell outside). 1 for an identical
    release; a constant released column has a zero-width interval.

    Parameters
    ----------
    original, released, columns
        As in :func:`record_linkage`.
    p : float
        Half-width of the interval as a fraction of the released column's sd (> 0).

    Raises
    ------
    InputError
        NaN/inf/text, different shapes, or fewer than two records (no sample sd).
    ParameterError
        ``p`` not a positive finite number.
    """
    if isinstance(p, (bool, np.bool_)) or not isinstance(p, numbers.Real) or not np.isfinite(p) or p <= 0:
        raise ParameterError(f"p must be a positive number, got {p!r}")
    X, Y, _ = _selected_matrices(original, released, columns)
    if X.shape[0] < 2:
        raise InputError("interval disclosure needs at least 2 records (sample standard deviation)")
    sd = Y.std(axis=0, ddof=1)
    low, high = Y - p * sd, Y + p * sd
    inside = ~((X < low) | (X > high))
    return float(inside.all(axis=1).mean())


@dataclass(frozen=True)
class ReidentificationTest:
    """Empirical re-identification rate of an intruder, with an exact interval.

    Attributes
    ----------
    rule : str
        Linkage rule (``"nearest"``, ``"group"`` or the name of a callable).
    runs : int
        Intruder runs (one per release in :func:`mechanism_reidentification_test`).
    n_records : int
        Targets per run (every original record).
    columns : list
        Attributes the intruder knows.
    run_rates : tuple of float
        Share of targets re-identified in each run.
    successes, trials : int
        Correct links and link attempts pooled over the runs (``trials = runs * n_records``).
    rate : float
        Pooled success rate ``successes / trials``.
    confidence : float
        Level of ``interval``.
    interval : tuple of float
        Two-sided Clopper-Pearson interval for the success probability (``scipy.stats.binomtest``,
        ``method="exact"``), which treats the ``trials`` link attempts as independent (the attack
        suite, whose runs attack one release, uses the ``n_records`` targets instead).
    k : int or None
        The k of probabilistic k-anonymity being tested; ``bound = 1/k``.
    upper_exceeds_bound : bool or None
        ``interval[1] > 1/k``: the run does not certify a success probability <= 1/k.
    lower_exceeds_bound : bool or None
        ``interval[0] > 1/k``: the success probability significantly exceeds 1/k (the release or
        mechanism violates probabilistic k-anonymity at this level).
    """

    rule: str
    runs: int
    n_records: int
    columns: list
    run_rates: tuple
    successes: int
    trials: int
    rate: float
    confidence: float
    interval: tuple
    k: int | None
    bound: float | None
    upper_exceeds_bound: bool | None
    lower_exceeds_bound: bool | None
    knows: str = ""
    note: str = ""

    def to_dict(self) -> dict:
        """Plain-Python, JSON-serialisable copy."""
        return {
            "rule": self.rule, "runs": self.runs, "n_records": self.n_records,
            "columns": [str(c) for c in self.columns], "run_rates": [float(r) for r in self.run_rates],
            "successes": self.successes, "trials": self.trials, "rate": self.rate,
            "confidence": self.confidence, "interval": [float(v) for v in self.interval],
            "k": self.k, "bound": self.bound, "upper_exceeds_bound": self.upper_exceeds_bound,
            "lower_exceeds_bound": self.lower_exceeds_bound, "knows": self.knows, "note": self.note,
        }


def _check_rule(rule):
    if callable(rule) or (isinstance(rule, str) and rule in RULES):
        return rule
    raise ParameterError(f"rule must be one of {', '.join(RULES)} or a callable, got {rule!r}")


def _group_blocks(groups, n: int) -> tuple[np.ndarray, _Blocks]:
    """Group code of every record and the records of every group."""
    if groups is None:
        raise ParameterError("rule 'group' needs the groups of the release")
    labels = np.asarray(groups)
    if labels.ndim != 1 or labels.size != n:
        raise InputError(f"groups must be one label per record ({n}), got shape {labels.shape}")
    codes, uniques = pd.factorize(labels)
    if (codes < 0).any():
        raise InputError(f"groups has a missing label (record {int(np.argmax(codes < 0))})")
    codes = codes.astype(np.int64)
    return codes, _Blocks(codes, len(uniques))


class _Intruder:
    """One linkage rule bound to one release: ``links(rng)`` gives the chosen released row of
    every target."""

    def __init__(self, Zx, Zy, rule, groups):
        self.Zx, self.Zy, self.rule, self.groups = Zx, Zy, rule, groups
        n = Zx.shape[0]
        if rule == "nearest":
            self.candidates = _NearestCandidates(Zx, Zy)
        elif rule == "group":
            self.own_block, self.blocks = _group_blocks(groups, n)

    def links(self, rng: np.random.Generator) -> np.ndarray:
        n = self.Zx.shape[0]
        if self.rule == "nearest":
            return self.candidates.choose(rng)
        if self.rule == "group":
            return self.blocks.uniform_member(self.own_block, rng)
        chosen = np.asarray(self.rule(self.Zx, self.Zy, self.groups, rng))
        if chosen.shape != (n,) or not np.issubdtype(chosen.dtype, np.integer) \
                or chosen.min() < 0 or chosen.max() >= n:
            raise InputError(f"the linkage rule must return {n} row indices in [0, {n}), one per target")
        return chosen


def reidentification_result(rule, columns, n, rates_successes, k, confidence, knows: str = "",
                            note: str = "", same_release: bool = False) -> ReidentificationTest:
    """The :class:`ReidentificationTest` of ``runs`` intruder runs on ``n`` targets each
    (``rates_successes``: correct links per run), Clopper-Pearson interval at ``confidence``.

    ``same_release``: the runs attack one release and differ only in the intruder's tie-breaking,
    so they are not independent evidence: the interval is then that of ``n`` trials with the
    mean number of successes per run (rounded), not of ``runs * n`` trials."""
    successes_per_run = [int(s) for s in rates_successes]
    runs = len(successes_per_run)
    successes, trials = sum(successes_per_run), runs * n
    ci_successes, ci_trials = (int(round(successes / runs)), n) if same_release else (successes, trials)
    low, high = stats.binomtest(ci_successes, ci_trials).proportion_ci(confidence_level=confidence, method="exact")
    bound = None if k is None else 1.0 / k
    return ReidentificationTest(
        rule=rule if isinstance(rule, str) else getattr(rule, "__name__", "custom"),
        runs=runs, n_records=n, columns=list(columns),
        run_rates=tuple(s / n for s in successes_per_run),
        successes=successes, trials=trials, rate=successes / trials,
        confidence=confidence, interval=(float(low), float(high)),
        k=k, bound=bound,
        upper_exceeds_bound=None if k is None else bool(high > bound),
        lower_exceeds_bound=None if k is None else bool(low > bound),
        knows=knows, note=note,
    )


def reidentification_test(original, released, columns=None, rule="nearest", groups=None, k=None,
                          runs: int = 100, confidence: float = 0.99, random_state=None) -> ReidentificationTest:
    """Let an intruder who knows ``columns`` of every original record link each of them to a
    released record ``runs`` times, and count correct links (target ``i`` linked to row ``i``).

    This is the re-identification experiment of Sec. III of the swapping paper: the intruder
    holds the external data ``E`` (the original ``columns``), the release ``T'`` and knows the
    mechanism; probabilistic k-anonymity requires a success probability <= 1/k (Inequality (1)).

    Linkage rules
    -------------
    ``"nearest"``
        The released record nearest to the target on the known columns (z-scored with the
        original's mean and sd), uniformly among ties; the expected rate is
        :func:`record_linkage`.
    ``"group"``
        A record of the target's group, uniformly (an intruder who knows the partition, e.g.
        MDAV on the original quasi-identifiers, but cannot tell the records of a group apart);
        ``groups`` gives the group label of every record (released row ``j`` belongs to group
        ``groups[j]``).
    callable
        ``rule(Zx, Zy, groups, rng)`` returning the chosen released row of every target, from
        the z-scored known columns of the original (``Zx``) and the release (``Zy``).

    Parameters
    ----------
    original, released, columns
        As in :func:`record_linkage`.
    groups : array_like, optional
        One label per record (needed by ``"group"``, passed to a callable rule).
    k : int, optional
        Test against the bound 1/k (fields ``upper_exceeds_bound``/``lower_exceeds_bound``).
    runs : int
        Independent intruder runs on this release (they differ only in the intruder's random
        choices).
    confidence : float
        Level of the Clopper-Pearson interval (default 0.99).
    random_state : None, int or numpy.random.Generator
        Same seed, same result.
    """
    rule = _check_rule(rule)
    runs = check_runs(runs)
    confidence = check_confidence(confidence)
    rng = check_random_state(random_state)
    Zx, Zy, names = _known_zscores(original, released, columns)
    n = Zx.shape[0]
    k = None if k is None else check_k(k, n)
    intruder = _Intruder(Zx, Zy, rule, groups)
    target = np.arange(n)
    successes = [np.count_nonzero(intruder.links(rng) == target) for _ in range(runs)]
    return reidentification_result(rule, names, n, successes, k, confidence)


def mechanism_reidentification_test(original, mechanism, releases: int = 100, columns=None, rule="nearest",
                                    k=None, confidence: float = 0.99, random_state=None) -> ReidentificationTest:
    """Run a randomised release ``mechanism`` ``releases`` times and let one intruder (see
    :func:`reidentification_test`) attack each release; pooled success rate, per-release rates
    and the Clopper-Pearson interval at ``confidence``.

    ``mechanism(original, rng)`` must return ``(released, groups)``: a table of the same records
    in the same order (row ``i`` carries record ``i``'s confidential values) and the group label
    of every record, or ``None`` when the rule does not use groups. Each release gets the
    generator ``rng`` drawn from ``random_state``, so the same seed gives the same result.

    Within one release the link attempts are not independent (e.g. the fixed points of a random
    permutation of a group are positively correlated), so the interval, which treats all
    ``releases * n`` attempts as independent, is somewhat narrower than an exact one; for swapping
    in groups of size m the variance of the successes per group is 1 instead of 1 - 1/m.
    """
    if not callable(mechanism):
        raise ParameterError("mechanism must be a callable mechanism(original, rng) -> (released, groups)")
    rule = _check_rule(rule)
    releases = check_runs(releases, name="releases")
    confidence = check_confidence(confidence)
    rng = check_random_state(random_state)
    if k is not None:
        check_k(k)  # k <= n is checked once n is known
    successes, names, n = [], None, None
    for _ in range(releases):
        out = mechanism(original, rng)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise InputError("the mechanism must return a pair (released, groups)")
        released, groups = out
        Zx, Zy, names = _known_zscores(original, released, columns)
        n = Zx.shape[0]
        successes.append(np.count_nonzero(_Intruder(Zx, Zy, rule, groups).links(rng) == np.arange(n)))
    k = None if k is None else check_k(k, n)
    return reidentification_result(rule, names, n, successes, k, confidence)

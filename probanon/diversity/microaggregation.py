"""Microaggregation whose every group is t-close and/or l-diverse on declared sensitive columns
(issue 42.2): the three algorithms of Soria-Comas, Domingo-Ferrer, Sanchez and Martinez,
"t-Closeness through microaggregation: strict privacy with enhanced utility preservation",
IEEE TKDE 27(11), 2015, and the same two strategies for distinct and entropy l-diversity, on
MDAV and PCL.

The requirement of a group c on each sensitive column (the definitions and the one
computation of EMD and entropy are :mod:`.checks`'; ``distance="auto"``: the ordered ground
distance for a numeric column, the equal one otherwise, as ``probanon diversity check``):

* t-closeness: ``EMD(P_c, P) <= t`` with ``P`` the whole file's distribution; ordered distance
  ``EMD = 1/(m-1) sum_i |sum_{j<=i} (P_c - P)_j|`` over the m distinct values in increasing order;
* distinct l-diversity: at least l distinct values in c;
* entropy l-diversity: ``H_c = -sum_s P_c(s) ln P_c(s) >= ln l``.

Several sensitive columns: every group must meet the requirement on each column (the paper
states its algorithms for one confidential attribute; the requirement on several is the
conjunction, as ARX and sdcMicro check it column by column).

Algorithms (``algorithm=``):

* ``"merge"`` (paper, Algorithm 1, microaggregation then merging): the plain k-anonymous
  partition of ``method`` (MDAV or PCL); then, while a group fails, the group that fails the
  most (largest EMD - t, or l-shortfall) is merged with the group whose key centroid is
  nearest (standardised keys). The groups stay unions of the method's cells, so the method's
  published function, each cell given its merged group's mean, reproduces the release:
  the only algorithm that publishes a function.
* ``"k-anonymity-first"`` (paper, Algorithm 2, k-anonymity-first t-closeness-aware
  microaggregation; MDAV only): MDAV's loop (the record r farthest from the centroid of the
  remaining records, then the record s farthest from r), each group started with its
  reference record and its k-1 nearest remaining records and then grown, one record at a time,
  by the remaining record whose addition leaves the smallest shortfall (EMD - t, or l-shortfall;
  the largest over the sensitive columns; every value's in O(m), :func:`.checks._one_more`),
  ties to the one nearest the reference record, until
  the group meets the requirement. Fewer than k records left join the group with the nearest
  centroid; a group that could not be completed is merged as in ``"merge"``.
* ``"t-closeness-first"`` (paper, Algorithm 3; t-closeness): the cluster size
  ``k' = max(k, ceil(n / (2(n-1)t + 1)))`` (:func:`t_closeness_first_size`), the records
  sorted by the (first) sensitive column and cut into k' buckets of consecutive values (sizes
  floor(n/k') or one more: ``numpy.array_split``), each group made MDAV-like of its reference
  record and, from every bucket, the remaining record nearest to it; the n mod k' records left
  (one in each of the first n mod k' buckets) join the group with the nearest centroid. With
  distinct values, one record of each of k' equal buckets gives ``EMD <= (n - k')/(2 k' (n-1))
  <= t`` (the paper's bound); ties in the sensitive column, the extra records and further
  sensitive columns are not covered by it, so the groups are then merged as in ``"merge"``
  where they fail (``merges_`` counts the merges; 0 on data the bound covers).
  With ``method="pcl"`` these groups are then improved by Lloyd rounds that keep the bucket
  structure (paper 3's alternation of means and optimal constrained assignment; here one
  assignment problem per bucket, :func:`_bucket_lloyd`), so the bound still holds and the SSE
  never rises (``lloyd_rounds_``).

Every fit ends by checking each group (``emd_``, ``distinct_``, ``entropy_``); a group that
fails is a bug and raises :class:`~probanon.errors.GuaranteeError`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin

from .._output import OutputMixin
from .._validation import (NONE, RANDOM_STATE, check_k, check_matrix, check_params, integer, is_numeric_column, one_of,
                           real)
from ..data import Standardizer, select_columns
from ..errors import GuaranteeError, InputError, NotFittedError, ParameterError
from ..microagg import MDAV, PCL
from ..microagg.means import group_means
from .checks import ENTROPY_TOLERANCE, T_TOLERANCE, _emd_rows, _entropy_rows, _one_more

ALGORITHMS = ("auto", "merge", "k-anonymity-first", "t-closeness-first")
L_KINDS = ("distinct", "entropy")
BASE_METHODS = ("mdav", "pcl")
#: t-closeness-first on PCL: Lloyd rounds under the bucket constraint, at most LLOYD_ROUNDS,
#: until one lowers the SSE by less than LLOYD_RTOL of it (EIA, k = 5: 0.8034, 0.8029, 0.8028
#: after rounds 1-3, 0.8027 after 14; a round there is 5 assignment problems of 818 x 818, ~8 s)
LLOYD_ROUNDS = 30
LLOYD_RTOL = 1e-3


def t_closeness_first_size(n: int, k: int, t: float) -> int:
    """The cluster size of t-closeness-first microaggregation (Soria-Comas et al. 2015,
    Algorithm 3): ``k' = max(k, ceil(n / (2(n-1)t + 1)))``, at most n.

    A cluster of one record from each of k' buckets of n/k' consecutive values (n distinct
    values, ordered distance ``|i-j|/(n-1)``) moves each member's mass 1/k' over its bucket at
    an average distance of at most ``(n/k' - 1)/(2(n-1))``, so ``EMD <= (n-k')/(2k'(n-1))``,
    which is <= t exactly when ``k' >= n / (2(n-1)t + 1)``."""
    if n <= 1:
        return max(1, n)
    bound = n / (2.0 * (n - 1) * float(t) + 1.0)
    return int(min(n, max(int(k), math.ceil(bound - 1e-12))))


@dataclasses.dataclass(frozen=True)
class _Sensitive:
    """The sensitive columns as codes: ``codes[j]`` the rank of each record's value among the
    column's sorted distinct values, ``values[j]`` those values, ``ordered[j]`` the ground
    distance, ``whole[j]`` the file's shares of the values."""

    names: list
    codes: list
    values: list
    ordered: list
    whole: list


def _sensitive_of(sensitive, n: int, distance: str) -> _Sensitive:
    if sensitive is None:
        raise InputError("fit needs the sensitive values: fit(X, sensitive=...)")
    if isinstance(sensitive, pd.Series):
        frame = sensitive.to_frame()
    elif isinstance(sensitive, pd.DataFrame):
        frame = sensitive
    else:
        array = np.asarray(sensitive, dtype=object)
        if array.ndim not in (1, 2):
            raise InputError("sensitive must be n values or an n x s table")
        frame = pd.DataFrame(array.reshape(len(array), -1)).infer_objects()
    if len(frame) != n:
        raise InputError(f"sensitive has {len(frame)} rows, X has {n}")
    if frame.shape[1] == 0:
        raise InputError("no sensitive column given")
    names, codes, values, ordered, whole = [], [], [], [], []
    for j, name in enumerate(frame.columns):
        column = frame.iloc[:, j]
        if column.isna().any():
            raise InputError(f"sensitive column {name!r} has a missing value (row {int(np.argmax(column.isna()))})")
        numeric = is_numeric_column(column) and not pd.api.types.is_bool_dtype(column)
        if distance == "ordered" and not numeric:
            raise ParameterError(f"the ordered distance needs a numeric sensitive column, {name!r} is not")
        uniques, code = np.unique(column.to_numpy(), return_inverse=True) if numeric else \
            _categories(column)
        names.append(str(name))
        codes.append(code.astype(np.int64).ravel())
        values.append(uniques)
        ordered.append(numeric and distance != "equal")
        whole.append(np.bincount(codes[-1], minlength=len(uniques)) / n)
    return _Sensitive(names, codes, values, ordered, whole)


def _categories(column: pd.Series):
    code, uniques = pd.factorize(column, sort=False)
    try:
        order = np.argsort(np.asarray(uniques, dtype=object), kind="stable")
    except TypeError:  # values of mixed types: first-appearance order (equal distance: order is irrelevant)
        return np.asarray(uniques, dtype=object), code
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return np.asarray(uniques, dtype=object)[order], rank[code]


class _Requirement:
    """The shortfall of groups (rows of per-column counts): > 0 where a group fails t (EMD - t),
    distinct l (l - distinct values) or entropy l (ln l - H), the largest over the conditions."""

    def __init__(self, sens: _Sensitive, t, l, l_kind):
        self.sens, self.t, self.l, self.l_kind = sens, t, l, l_kind

    def column(self, j: int, counts: np.ndarray) -> np.ndarray:
        """Shortfall on sensitive column j of groups with ``counts`` (groups x values, floats)."""
        out = np.full(counts.shape[0], -np.inf)
        if self.t is not None:
            emd = _emd_rows(counts, self.sens.whole[j], self.sens.ordered[j])
            out = np.maximum(out, emd - float(self.t) - T_TOLERANCE)
        if self.l is not None:
            if self.l_kind == "distinct":
                out = np.maximum(out, float(self.l) - (counts > 0).sum(axis=1))
            else:
                out = np.maximum(out, math.log(self.l) - ENTROPY_TOLERANCE - _entropy_rows(counts))
        return out

    def one_more(self, j: int, row: np.ndarray) -> np.ndarray:
        """Shortfall on column j of the group of counts ``row`` after one more record of each
        value v (array of m): the same conditions as :meth:`column`."""
        emd, entropy = _one_more(row, self.sens.whole[j], self.sens.ordered[j])
        out = np.full(row.size, -np.inf)
        if self.t is not None:
            out = np.maximum(out, emd - float(self.t) - T_TOLERANCE)
        if self.l is not None:
            if self.l_kind == "distinct":
                out = np.maximum(out, float(self.l) - ((row > 0).sum() + (row == 0)))
            else:
                out = np.maximum(out, math.log(self.l) - ENTROPY_TOLERANCE - entropy)
        return out

    def of(self, counts: list) -> np.ndarray:
        """Shortfall over every sensitive column (``counts[j]``: groups x values of column j)."""
        return np.max([self.column(j, c) for j, c in enumerate(counts)], axis=0)

    def feasible(self) -> None:
        """The whole file must meet the requirement (one group of all the records is the last
        resort of every algorithm): an :class:`InputError` naming the column otherwise."""
        for j, name in enumerate(self.sens.names):
            whole = self.sens.whole[j][None, :]
            if self.column(j, whole)[0] > 0:
                what = f"{whole.size} distinct values" if self.l_kind == "distinct" else \
                    f"entropy l = {math.exp(_entropy_rows(whole)[0]):.3g}"
                raise InputError(f"sensitive column {name!r} has {what} in the whole file: no grouping is "
                                 f"{self.l_kind} {self.l}-diverse")


def _counts(labels: np.ndarray, codes: np.ndarray, n_groups: int, m: int) -> np.ndarray:
    return np.bincount(labels * m + codes, minlength=n_groups * m).reshape(n_groups, m).astype(np.float64)


def _merge(Z, labels, sens: _Sensitive, req: _Requirement):
    """Paper, Algorithm 1's merging: while a group fails, the group that fails the most is
    merged with the group of nearest key centroid. Returns (labels numbered 0.., merges)."""
    labels = np.unique(labels, return_inverse=True)[1].ravel().astype(np.int64)  # no empty group
    g = int(labels.max()) + 1
    sizes = np.bincount(labels, minlength=g).astype(np.float64)
    sums = np.column_stack([np.bincount(labels, weights=Z[:, j], minlength=g) for j in range(Z.shape[1])]) \
        if Z.shape[1] else np.zeros((g, 0))
    counts = [_counts(labels, c, g, len(v)) for c, v in zip(sens.codes, sens.values)]
    short = req.of(counts)
    alive = np.ones(g, bool)
    owner = np.arange(g)
    merges = 0
    while True:
        failing = alive & (short > 0)
        if not failing.any() or alive.sum() == 1:
            break
        a = int(np.argmax(np.where(failing, short, -np.inf)))
        centres = sums / sizes[:, None]
        d2 = ((centres - centres[a]) ** 2).sum(axis=1)
        d2[~alive] = np.inf
        d2[a] = np.inf
        b = int(np.argmin(d2))
        sums[a] += sums[b]
        sizes[a] += sizes[b]
        for c in counts:
            c[a] += c[b]
        alive[b] = False
        owner[owner == b] = a
        short[a] = req.of([c[a:a + 1] for c in counts])[0]
        merges += 1
    _, dense = np.unique(owner[labels], return_inverse=True)
    return dense.astype(np.int64), merges


def _nearest_first(Z, rows, ref):
    """``rows`` ordered by squared distance to record ``ref``, ties by row."""
    d2 = ((Z[rows] - Z[ref]) ** 2).sum(axis=1)
    return rows[np.lexsort((rows, d2))], d2


def _farthest(Z, rows, point):
    d2 = ((Z[rows] - point) ** 2).sum(axis=1)
    return int(rows[int(np.argmax(d2))])  # first in row order among equal distances


def _join_nearest(Z, labels, rows):
    """Records ``rows`` (label -1) join the group of nearest centroid (of the labelled records)."""
    if rows.size == 0:
        return labels
    done = labels >= 0
    g = int(labels[done].max()) + 1
    centres = group_means(Z[done], labels[done], g)
    for i in rows:
        labels[i] = int(np.argmin(((centres - Z[i]) ** 2).sum(axis=1)))
    return labels


def _aware(Z, k, sens: _Sensitive, req: _Requirement):
    """Paper, Algorithm 2 (k-anonymity-first, aware): MDAV's references, each group grown
    until it meets the requirement (module docstring). Returns labels (-1 none)."""
    n = Z.shape[0]
    labels = np.full(n, -1, np.int64)
    remaining = np.ones(n, bool)
    group = 0

    def form(ref):
        rows = np.flatnonzero(remaining)
        near, _ = _nearest_first(Z, rows, ref)
        members = list(near[:k])
        remaining[members] = False
        counts = [np.bincount(c[members], minlength=len(v)).astype(np.float64)[None, :]
                  for c, v in zip(sens.codes, sens.values)]
        while req.of(counts)[0] > 0 and remaining.any():
            rows = np.flatnonzero(remaining)
            score = np.full(rows.size, -np.inf)
            for j, c in enumerate(sens.codes):
                score = np.maximum(score, req.one_more(j, counts[j][0])[c[rows]])
            d2 = ((Z[rows] - Z[ref]) ** 2).sum(axis=1)
            score = np.round(score, 12)  # equal shortfalls up to rounding are ties: the nearest record wins
            pick = int(rows[np.lexsort((rows, d2, score))[0]])
            members.append(pick)
            remaining[pick] = False
            for j, c in enumerate(sens.codes):
                counts[j][0, c[pick]] += 1.0
        labels[members] = group

    while remaining.sum() >= k:
        rows = np.flatnonzero(remaining)
        r = _farthest(Z, rows, Z[rows].mean(axis=0))
        form(r)
        group += 1
        if remaining.sum() >= k:
            s = _farthest(Z, np.flatnonzero(remaining), Z[r])
            form(s)
            group += 1
    return _join_nearest(Z, labels, np.flatnonzero(remaining))


def _t_first(Z, k_prime: int, codes: np.ndarray):
    """Paper, Algorithm 3 (t-closeness-first): k' buckets of consecutive sensitive values, each
    group one record from every bucket, the one nearest its MDAV-like reference record."""
    n = Z.shape[0]
    order = np.lexsort((np.arange(n), codes))
    bucket = np.empty(n, np.int64)
    for b, rows in enumerate(np.array_split(order, k_prime)):
        bucket[rows] = b
    labels = np.full(n, -1, np.int64)
    remaining = np.ones(n, bool)
    n_groups = n // k_prime

    def form(ref, group):
        rows = np.flatnonzero(remaining)
        d2 = ((Z[rows] - Z[ref]) ** 2).sum(axis=1)
        d2[rows == ref] = -1.0  # the reference record is its bucket's pick
        ranked = np.lexsort((rows, d2, bucket[rows]))
        _, first = np.unique(bucket[rows][ranked], return_index=True)
        members = rows[ranked[first]]
        labels[members] = group
        remaining[members] = False

    group = 0
    while group < n_groups:
        rows = np.flatnonzero(remaining)
        r = _farthest(Z, rows, Z[rows].mean(axis=0))
        form(r, group)
        group += 1
        if group < n_groups:
            s = _farthest(Z, np.flatnonzero(remaining), Z[r])
            form(s, group)
            group += 1
    return _join_nearest(Z, labels, np.flatnonzero(remaining)), bucket


def _bucket_lloyd(Z, labels, bucket, max_iter: int):
    """t-closeness-first on PCL: Lloyd iterations that keep every group's one record of each
    bucket (paper 3's alternation under Algorithm 3's constraint). Given the group means, the
    best assignment is one assignment problem per bucket (records x groups, squared distances;
    :func:`scipy.optimize.linear_sum_assignment`), a bucket's extra record joining its nearest
    mean; then the means of the new groups. The SSE never rises; stops when a round lowers it
    by less than ``LLOYD_RTOL`` of it, or after ``max_iter`` rounds."""
    from scipy.optimize import linear_sum_assignment

    g = int(labels.max()) + 1

    def sse(lab):
        return float(((Z - group_means(Z, lab, g)[lab]) ** 2).sum())

    best, rounds = sse(labels), 0
    members = [np.flatnonzero(bucket == b) for b in range(int(bucket.max()) + 1)]
    while rounds < max_iter:
        centres = group_means(Z, labels, g)
        new = labels.copy()
        for rows in members:
            cost = ((Z[rows, None, :] - centres[None, :, :]) ** 2).sum(axis=2)
            picked, groups = linear_sum_assignment(cost)
            new[rows[picked]] = groups
            extra = np.setdiff1d(np.arange(rows.size), picked)
            new[rows[extra]] = np.argmin(cost[extra], axis=1)
        rounds += 1
        value = sse(new)
        gain = best - value
        if gain > 0:
            labels, best = new, value
        if gain <= LLOYD_RTOL * best:
            break
    return labels, rounds


_CONSTRAINTS = {
    "k": [integer(1, integral_reals=True)],
    "t": [NONE, real(0.0, 1.0)],
    "l": [NONE, integer(1)],
    "l_kind": [one_of(*L_KINDS)],
    "algorithm": [one_of(*ALGORITHMS)],
    "method": [one_of(*BASE_METHODS)],
    "distance": [one_of("auto", "ordered", "equal")],
    "random_state": RANDOM_STATE,
}


class SensitiveMicroaggregation(OutputMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator,
                                auto_wrap_output_keys=None):
    """k-anonymous microaggregation of numeric keys whose groups are also t-close and/or
    l-diverse on sensitive columns (see the module docstring for the algorithms).

    Parameters
    ----------
    k : int
        Minimum group size.
    t : float in [0, 1], optional
        t-closeness: every group's EMD from the whole file <= t on each sensitive column.
    l : int, optional
        l-diversity of kind ``l_kind`` ("distinct" or "entropy") on each sensitive column.
    algorithm : {"auto", "merge", "k-anonymity-first", "t-closeness-first"}
        "auto": "t-closeness-first" with t; with l alone "k-anonymity-first" (MDAV) or
        "merge" (PCL). "k-anonymity-first" is MDAV's.
    method : {"mdav", "pcl"}
        The k-anonymous microaggregation underneath: "merge"'s first partition; for
        "t-closeness-first", PCL adds Lloyd rounds under the bucket constraint.
    distance : {"auto", "ordered", "equal"}
        Ground distance of the EMD ("auto": ordered for a numeric column).
    random_state : None, int or Generator
        PCL's seed.

    ``fit(X, sensitive=S)``: X the numeric keys (array or DataFrame), S the sensitive values
    (n values, an n x s table or a DataFrame; not keys, released per record). Fitted:
    ``labels_``, ``centroids_`` (group means of X), ``sizes_``, ``k_``, ``algorithm_``,
    ``cluster_size_`` (k' of t-closeness-first, else k), ``merges_`` (groups merged to meet
    the requirement), ``emd_`` / ``distinct_`` / ``entropy_`` (groups x sensitive columns),
    ``base_labels_`` (the plain k-anonymous partition of ``method`` for "merge") and
    ``function_``: for "merge" the method's published function, each cell releasing its
    merged group's mean (it reproduces ``labels_``' release); None otherwise, with the reason
    in ``unpublished_`` (the groups of the other algorithms are chosen by sensitive values, so
    they are not cells of the key space and no function of the keys can assign them).
    """

    _parameter_constraints = _CONSTRAINTS

    def __init__(self, k: int = 3, *, t=None, l=None, l_kind="distinct", algorithm="auto", method="mdav",
                 distance="auto", random_state=None):
        self.k = k
        self.t = t
        self.l = l
        self.l_kind = l_kind
        self.algorithm = algorithm
        self.method = method
        self.distance = distance
        self.random_state = random_state

    def _algorithm(self) -> str:
        if self.t is None and self.l is None:
            raise ParameterError("give t (t-closeness) or l (l-diversity)")
        algorithm = self.algorithm
        if algorithm == "auto":
            algorithm = "t-closeness-first" if self.t is not None else \
                "merge" if self.method == "pcl" else "k-anonymity-first"
        if algorithm == "k-anonymity-first" and self.method != "mdav":
            raise ParameterError("algorithm 'k-anonymity-first' is MDAV's (method='mdav'); with method='pcl' use "
                                 "'merge' or 't-closeness-first'")
        if algorithm == "t-closeness-first" and self.t is None:
            raise ParameterError("algorithm 't-closeness-first' needs t")
        return algorithm

    def fit(self, X, y=None, *, sensitive=None):
        """Partition the records of X so that every group has at least k records and meets
        the requirement on every column of ``sensitive`` (module docstring)."""
        check_params(self)
        algorithm = self._algorithm()
        for stale in ("feature_names_in_", "unpublished_", "base_labels_", "lloyd_rounds_"):
            self.__dict__.pop(stale, None)
        if isinstance(X, pd.DataFrame):
            text = [str(c) for c in X.columns if not is_numeric_column(X[c])]
            if text:
                raise InputError(f"X has columns that are not numbers: {', '.join(text)}")
            self.feature_names_in_ = list(select_columns(X))
        E = check_matrix(X, name="data", two_d=True)
        n = E.shape[0]
        self.n_features_in_ = E.shape[1]
        self.k_ = check_k(self.k, n)
        sens = _sensitive_of(sensitive, n, self.distance)
        req = _Requirement(sens, self.t, self.l, self.l_kind)
        req.feasible()
        self.standardizer_ = Standardizer.fit_valid(E)
        Z = np.ascontiguousarray(self.standardizer_.transform(E))
        self.cluster_size_ = self.k_
        base = None
        if algorithm == "merge":
            base = (MDAV(self.k_) if self.method == "mdav" else PCL(self.k_, random_state=self.random_state))
            base.set_output(transform="default").fit(E)
            labels = base.labels_
            self.base_labels_ = labels
        elif algorithm == "k-anonymity-first":
            labels = _aware(Z, self.k_, sens, req)
        else:
            self.cluster_size_ = t_closeness_first_size(n, self.k_, self.t)
            labels, bucket = _t_first(Z, self.cluster_size_, sens.codes[0])
            if self.method == "pcl":
                labels, self.lloyd_rounds_ = _bucket_lloyd(Z, labels, bucket, LLOYD_ROUNDS)
        labels, self.merges_ = _merge(Z, labels, sens, req)
        self.algorithm_ = algorithm
        self.sensitive_names_ = sens.names
        self.labels_ = labels
        g = int(labels.max()) + 1
        self.sizes_ = np.bincount(labels, minlength=g)
        self.centroids_ = group_means(E, labels, g)
        counts = [_counts(labels, c, g, len(v)) for c, v in zip(sens.codes, sens.values)]
        self.emd_ = np.column_stack([_emd_rows(c, w, o) for c, w, o in zip(counts, sens.whole, sens.ordered)])
        self.distinct_ = np.column_stack([(c > 0).sum(axis=1) for c in counts])
        self.entropy_ = np.column_stack([_entropy_rows(c) for c in counts])
        if self.sizes_.min() < self.k_ or (req.of(counts) > 0).any():
            raise GuaranteeError(f"{type(self).__name__}: a group fails its requirement (a bug: please report it)")
        self.function_ = self._function(base, E, labels, g)
        return self

    def _function(self, base, E, labels, g):
        """The published function of a "merge" fit: the method's own, each cell releasing its
        merged group's mean; None (reason in ``unpublished_``) for the other algorithms."""
        if base is None:
            self.unpublished_ = (f"the groups of {self.algorithm_} are chosen by sensitive values, not cells of the "
                                 "key space: no function of the keys assigns them (use algorithm 'merge')")
            return None
        if base.function_ is None:
            self.unpublished_ = base.unpublished_
            return None
        cells = base.labels_
        if not np.array_equal(base.function_.assign(E), cells):
            self.unpublished_ = "the method's function does not reproduce its cells on these records"
            return None
        group_of_cell = np.zeros(int(cells.max()) + 1, np.int64)
        group_of_cell[cells] = labels
        meta = {**base.function_.meta, "merged_for": self._requirement_text(), "groups": g}
        return dataclasses.replace(base.function_, centroids=self.centroids_[group_of_cell], meta=meta,
                                   columns=getattr(self, "feature_names_in_", None))

    def _requirement_text(self) -> str:
        parts = ([f"t-closeness t = {self.t:g}"] if self.t is not None else []) + \
            ([f"{self.l_kind} l-diversity l = {self.l}"] if self.l is not None else [])
        return " and ".join(parts)

    def __sklearn_is_fitted__(self) -> bool:
        return hasattr(self, "labels_")

    def transform(self, X):
        """Records replaced by their cell's released mean (the published function; "merge" only)."""
        if not hasattr(self, "labels_"):
            raise NotFittedError(f"this {type(self).__name__} is not fitted yet: call fit first")
        if self.function_ is None:
            raise NotFittedError(f"{self.unpublished_}: transform is not available")
        return self._wrap_output(self.function_.transform(X), X, getattr(self, "feature_names_in_", None))

    def fit_transform(self, X, y=None, *, sensitive=None):
        """Fit, then every fitted record replaced by its group's mean."""
        self.fit(X, sensitive=sensitive)
        return self._wrap_output(self.centroids_[self.labels_], X, getattr(self, "feature_names_in_", None))

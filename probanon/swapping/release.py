"""The swapping step and the released data (paper 2, Sec. IV-V).

Within each group of a partition the moved columns receive a uniformly random permutation
of the group's values (a permutation, not a derangement: a record may keep its own value).
Hence for every record i and every member j of its group G, P(record i receives the values
of j) = 1/|G| <= 1/k, the re-identification bound of Sec. IV-A (for an intruder who links by the
swapped attributes alone: :data:`probanon.attacks.GUARANTEES` says what it does not cover); and
every column keeps its
multiset of values, so its mean and variance exactly.

Permutations are drawn from ``random_state`` (same seed, same release): for each partition,
one uniform key per record; inside each group the members sorted by key receive, in
order, the values of the members in row order. Equal keys (probability ~n^2 / 2^53) fall
back to row order and still give a permutation.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sklearn.base import BaseEstimator

from .._validation import (BOOLEAN, NONE, RANDOM_STATE, Constraint, check_k, check_matrix, check_params,
                           check_random_state, integer, one_of)
from ..errors import ParameterError
from ..microagg.means import group_means
from .groups import METHODS, Grouping, check_confidential, check_method, partition_groups


@dataclass(frozen=True)
class SwapResult:
    """A release by one of the methods of paper 2.

    ``released`` the released table (a DataFrame with the input's columns and index if the
    input was one, else an (n, d) float array); ``groups`` the :class:`Grouping` used;
    ``sources`` (n, p) int64: record ``i`` received the moved columns of partition ``t``
    from record ``sources[i, t]`` (``None`` for MDAV-ID, which publishes group means);
    with strata, ``strata`` the value tuples of each stratum and ``strata_merged`` the
    statements of the small strata merged (:mod:`probanon.microagg.strata`).
    """

    released: np.ndarray | pd.DataFrame
    groups: Grouping
    sources: np.ndarray | None
    strata: list | None = None
    strata_merged: list = ()
    households: object = None  # :class:`probanon.households.Households` of a swap of households

    @property
    def labels(self) -> np.ndarray:
        return self.groups.labels

    def value_rows(self) -> np.ndarray:
        """(n, p) int64: the row that received record ``i``'s moved columns of partition ``t``
        (the inverse of ``sources``; what an attack needs as the truth of column-wise swaps)."""
        if self.sources is None:
            raise ParameterError("MDAV-ID moves no values (it publishes group means)")
        if self.households is not None:
            raise ParameterError("a swap of households moves a household's values to all members of another, of "
                                 "another size: no record holds a given record's values")
        rows = np.empty_like(self.sources)
        for t in range(self.sources.shape[1]):
            rows[self.sources[:, t], t] = np.arange(self.sources.shape[0])
        return rows

    @property
    def guarantee(self):
        """What this method's guarantee covers and what it does not (:class:`probanon.attacks.Guarantee`)."""
        from ..attacks.scope import guarantee

        return guarantee(self.groups.method)


def permutation_within_groups(labels, random_state=None) -> np.ndarray:
    """``source`` (n,) such that ``x'_i = x_source[i]`` is a uniformly random permutation of
    the rows inside each group of ``labels`` (independent across groups)."""
    labels = np.asarray(labels)
    rng = check_random_state(random_state)
    keys = rng.random(labels.size)
    receivers = np.argsort(labels, kind="stable")
    givers = np.lexsort((keys, labels))
    source = np.empty(labels.size, dtype=np.int64)
    source[receivers] = givers
    return source


def release_values(X, groups: Grouping, random_state=None) -> tuple[np.ndarray, np.ndarray | None]:
    """Released values of the float matrix ``X`` and the sources (see :class:`SwapResult`).

    MDAV-ID replaces the moved columns by their group means; the other methods permute
    the moved columns of each partition inside its groups, partitions in order, each from
    the ORIGINAL values (partitions move disjoint columns).
    """
    return _release_values(check_matrix(X, name="data"), groups, random_state)


def _release_values(X: np.ndarray, groups: Grouping, random_state=None) -> tuple[np.ndarray, np.ndarray | None]:
    """:func:`release_values` of a matrix already checked (finite float64)."""
    out = X.copy()
    if groups.method == "mdav-id":
        labels = groups.labels[:, 0]
        cols = list(groups.columns[0])
        out[:, cols] = group_means(X[:, cols], labels, int(labels.max()) + 1)[labels]
        return out, None
    rng = check_random_state(random_state)
    sources = np.empty(groups.labels.shape, dtype=np.int64)
    for t, cols in enumerate(groups.columns):
        sources[:, t] = permutation_within_groups(groups.labels[:, t], rng)
        cols = list(cols)
        out[:, cols] = X[sources[:, t]][:, cols]
    return out, sources


def released_table(frame: pd.DataFrame, columns: list, result: SwapResult) -> pd.DataFrame:
    """``frame`` with the attributes ``columns`` (the columns of the swapped matrix, in order)
    released as in ``result``; other columns and every row unchanged. Swapped columns take
    the original cells of their sources, so they keep their dtype and exact values; MDAV-ID
    columns become the group means (floats)."""
    out = frame.copy()
    if result.sources is None:
        values = result.released.to_numpy() if isinstance(result.released, pd.DataFrame) else result.released
        for j, c in enumerate(columns):
            out[c] = values[:, j]
        return out
    for t, cols in enumerate(result.groups.columns):
        for j in cols:
            out[columns[j]] = frame[columns[j]].to_numpy()[result.sources[:, t]]
    return out


def _as_matrix(X, confidential, two_d: bool = False) -> tuple[np.ndarray, tuple | None, pd.DataFrame | None]:
    """Float matrix, confidential positions (None if not given) and the input DataFrame
    (``two_d``: a 1-D X refused, see :func:`check_matrix`)."""
    frame = X if isinstance(X, pd.DataFrame) else None
    M = check_matrix(X, name="data", two_d=two_d)
    if confidential is None:
        return M, None, frame
    names = list(frame.columns) if frame is not None else None
    return M, check_confidential(confidential, M.shape[1], names), frame


def stratified_groups(M, k, method: str, confidential, standardize: bool, strata, merge: bool):
    """The partitions of ``method`` within each stratum (each stratum grouped as a file of its
    own), numbered across strata: (:class:`Grouping`, strata value tuples, merge statements)."""
    from ..microagg.strata import group_strata, strata_of

    which, strata, notes = group_strata(strata_of(strata, M.shape[0])[1], k, merge)
    parts = [(rows, partition_groups(M[rows], k, method, confidential, standardize))
             for rows in (np.flatnonzero(which == s) for s in range(len(strata)))]
    first = parts[0][1]
    labels = np.empty((M.shape[0], first.labels.shape[1]), np.int64)
    offset = np.zeros(first.labels.shape[1], np.int64)
    for rows, g in parts:
        labels[rows] = g.labels + offset
        offset += g.labels.max(axis=0) + 1
    return Grouping(labels, first.columns, first.method, first.k), strata, notes


def swap(X, k, method: str, confidential=None, random_state=None, standardize: bool = True, strata=None,
         merge_small_strata: bool = False, households=None) -> SwapResult:
    """Release ``X`` by ``method`` (``"mdav-id"``, ``"mdav-swap"``, ``"mdav-swap-informed"``
    or ``"ir-swap"``; see :mod:`probanon.swapping.groups`).

    Parameters
    ----------
    X : array_like or DataFrame (n, d)
        Numeric, finite attributes (all of them numeric for a DataFrame).
    k : int
        Minimum group size, 1 <= k <= n.
    confidential : names (DataFrame) or positions
        The confidential attributes; required except for MDAV-ID, which aggregates every
        attribute (the informed-intruder view: all attributes are quasi-identifiers).
    random_state : None, int or numpy Generator
        Seeds the permutations (MDAV-ID is deterministic).
    standardize : bool
        MDAV on z-scores (default) or on raw values (the paper's experiments).
    strata : DataFrame of strata columns, or n values or rows, optional
        Swap within each stratum (its groups formed as in a file of its own), so no value
        moves between strata; a stratum of fewer than ``k`` records is an error unless
        ``merge_small_strata`` (merged into its neighbour, :mod:`probanon.microagg.strata`).
    households : n household ids, optional
        Swap households, not records (issue 43.5, :mod:`probanon.households`): the columns the
        method groups on or moves (mdav-swap: the non-confidential ones; ir-swap: the
        confidential ones; mdav-swap-informed, mdav-id: all) must be constant within every
        household, and no household straddles a stratum; the method runs on one record per
        household, so every group holds at least ``k`` households, and each household's tuple
        moves to all members of another (``sources``: the first member of the giving household;
        ``value_rows`` is then undefined).
    """
    return _swap(*_checked(X, k, method, confidential), random_state, standardize, strata, merge_small_strata,
                 households)


def _checked(X, k, method: str, confidential, two_d: bool = False):
    """(matrix, input DataFrame or None, k, method, confidential positions) of :func:`swap`'s
    arguments, checked once."""
    if method not in METHODS:
        raise ParameterError(f"unknown swapping method {method!r} (use one of {', '.join(METHODS)})")
    M, conf, frame = _as_matrix(X, confidential, two_d)
    return M, frame, check_k(k, M.shape[0]), method, check_method(method, conf, M.shape[1])


def _swap(M, frame, k, method, conf, random_state, standardize, strata, merge_small_strata,
          households=None) -> SwapResult:
    """:func:`swap` of checked arguments (:func:`_checked`)."""
    if households is not None:
        return _swap_households(M, frame, k, method, conf, random_state, standardize, strata, merge_small_strata,
                                households)
    if strata is None:
        groups, names, notes = partition_groups(M, k, method, conf, standardize), None, ()
    else:
        groups, names, notes = stratified_groups(M, k, method, conf, standardize, strata, merge_small_strata)
    values, sources = _release_values(M, groups, random_state)
    released = values if frame is None else pd.DataFrame(values, columns=frame.columns, index=frame.index)
    return SwapResult(released, groups, sources, names, list(notes))


def _swap_households(M, frame, k, method, conf, random_state, standardize, strata, merge, households) -> SwapResult:
    """:func:`swap` of one record per household, its groups, values and sources given to every member."""
    from ..households import by_household

    level = list(conf) if method == "ir-swap" else [j for j in range(M.shape[1])
                                                    if method != "mdav-swap" or j not in conf]
    view = by_household(M if frame is None else frame, households, strata=strata,
                        columns=level if frame is None else [frame.columns[j] for j in level])
    part = _swap(M[view.first], None, check_k(k, view.n_households), method, conf, random_state, standardize,
                 view.strata, merge)
    groups = Grouping(view.expand(part.groups.labels), part.groups.columns, part.groups.method, part.groups.k)
    if part.sources is None:
        values, sources = view.expand(part.released), None
    else:
        values, sources = M.copy(), view.source_rows(part.sources)
        for t, cols in enumerate(groups.columns):
            values[:, list(cols)] = M[sources[:, t]][:, list(cols)]
    released = values if frame is None else pd.DataFrame(values, columns=frame.columns, index=frame.index)
    return SwapResult(released, groups, sources, part.strata, part.strata_merged, view)


def mdav_id(X, k, *, standardize: bool = True) -> SwapResult:
    """MDAV-ID (paper 2, Sec. V): MDAV on every attribute, each replaced by its group mean;
    k-anonymous in the classical sense."""
    return swap(X, k, "mdav-id", standardize=standardize)


def mdav_swap(X, k, confidential, *, random_state=None, standardize: bool = True) -> SwapResult:
    """MDAV-SWAP for the uninformed intruder (Sec. IV-A): MDAV on the quasi-identifiers
    (non-confidential attributes), quasi-identifier tuples permuted inside each group."""
    return swap(X, k, "mdav-swap", confidential, random_state, standardize)


def mdav_swap_informed(X, k, confidential, *, random_state=None, standardize: bool = True) -> SwapResult:
    """MDAV-SWAP for informed intruders (Sec. IV-B, Table V): per confidential ``c``, MDAV on
    every other attribute of the original data, column ``c`` permuted inside each group."""
    return swap(X, k, "mdav-swap-informed", confidential, random_state, standardize)


def ir_swap(X, k, confidential, *, random_state=None) -> SwapResult:
    """IR-SWAP (Sec. IV-C): per confidential ``c``, blocks of ``k`` consecutive values of
    ``c`` (remainder in the last block), ``c`` permuted inside each block."""
    return swap(X, k, "ir-swap", confidential, random_state)


def _is_column(value, params) -> bool:
    return isinstance(value, str) or integer(0).test(value, params)


class Swapper(BaseEstimator):
    """scikit-learn style front end of :func:`swap`.

    ``fit(X)`` draws one release and sets ``groups_``, ``labels_``, ``sources_`` and
    ``released_``; ``fit_transform(X)`` returns ``released_``. There is no ``transform``:
    a swap is defined on the data set it permutes, not on new records. ``fit(X, strata=...)``
    swaps within each stratum; ``merge_small_strata`` merges a stratum of fewer than k records
    into its neighbour instead of refusing it (see :func:`swap`).

    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(50, 3))
    >>> Y = Swapper(k=5, method="ir-swap", confidential=[2], random_state=1).fit_transform(X)
    >>> bool((np.sort(Y[:, 2]) == np.sort(X[:, 2])).all() and (Y[:, :2] == X[:, :2]).all())
    True
    """

    _parameter_constraints = {
        "k": [integer(1, integral_reals=True)],
        "method": [one_of(*METHODS)],
        "confidential": [NONE, Constraint("a column name or position", _is_column),
                         Constraint("a list of them", lambda value, params: isinstance(value, (list, tuple)))],
        "standardize": [BOOLEAN],
        "random_state": RANDOM_STATE,
        "merge_small_strata": [BOOLEAN],
    }

    def __init__(self, k: int = 5, method: str = "mdav-swap-informed", confidential=None, *,
                 standardize: bool = True, random_state=None, merge_small_strata: bool = False):
        self.k = k
        self.method = method
        self.confidential = confidential
        self.standardize = standardize
        self.random_state = random_state
        self.merge_small_strata = merge_small_strata

    def fit(self, X, y=None, *, strata=None, households=None):
        """One release of X; ``strata``: swap within each stratum; ``households``: swap
        households, their members together (see :func:`swap`)."""
        check_params(self)
        self.__dict__.pop("feature_names_in_", None)
        result = _swap(*_checked(X, self.k, self.method, self.confidential, two_d=True), self.random_state,
                       bool(self.standardize), strata, bool(self.merge_small_strata), households)
        if isinstance(X, pd.DataFrame):
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        self.n_features_in_ = int(np.shape(result.released)[1])
        self.result_ = result
        self.groups_ = result.groups
        self.labels_ = result.groups.labels
        self.sources_ = result.sources
        self.released_ = result.released
        return self

    def fit_transform(self, X, y=None, *, strata=None, households=None):
        return self.fit(X, strata=strata, households=households).released_

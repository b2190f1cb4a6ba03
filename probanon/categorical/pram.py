"""Invariant PRAM, the post-randomisation method of categorical keys (issue 43, point 4), as
sdcMicro's ``pram()``.

Every value of a key is replaced by a value drawn from its row of a published transition matrix
R (``R[i, j]`` = P(released j | original i)); records keep their other columns. The matrix is
*invariant*: ``t R = t`` for the vector ``t`` of the key's category frequencies, so the expected
frequencies of the release are the original ones, and an analyst who knows R corrects any other
table (``corrected_frequencies``: ``t_hat = t_obs R^{-1}``). R is built as sdcMicro builds it
(:func:`invariant_matrix`), for each key on its own, or for the keys' combinations as one variable
(``joint``), within each stratum (a matrix per stratum, from the stratum's frequencies: no value
moves to a category absent from the stratum). Missing values are not perturbed and not counted
(sdcMicro: ``!is.na``). With ``households``, the keys are household variables: each household's
value is drawn once and given to all its members (a key that varies within a household is
refused), and ``t`` counts households.

One difference from sdcMicro, by design: a matrix is built over the categories present (in the
stratum), where sdcMicro builds P over all the factor's levels, absent ones included (they receive
no one, since Q has no mass on them, but P's off-diagonal mass is spread over L - 1 levels instead
of the m - 1 present). With every level present the two are the same construction: the test
reproduces the matrix of the real sdcMicro 5.8.1 to 1e-12 from its drawn diagonal.

Randomness (``random_state``): the matrices' diagonals are drawn from one stream and the released
values from another, so that ``fit`` and ``transform`` are each reproducible: for an int seed they
are children 1 and 2 of ``SeedSequence(seed)`` (child 0 is a release's record order,
:func:`probanon.release.shuffle_stream`); a Generator is used as it is by both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from .._validation import BOOLEAN, RANDOM_STATE, Constraint, check_params, check_random_state, one_of, real
from ..errors import InputError, NotFittedError, ParameterError

#: the largest number of categories of one variable (a joint variable's combinations): its matrix
#: has as many squared cells and R = P Q costs their cube
MAX_CATEGORIES = 2000
DIAGONALS = ("uniform", "fixed")


def invariant_matrix(frequencies, pd: float = 0.8, alpha: float = 0.5, random_state=None,
                     diagonal: str = "uniform") -> np.ndarray:
    """The invariant transition matrix of a variable whose categories have ``frequencies`` t (L > 0
    counts or shares, all positive), as sdcMicro's ``pram()`` (R/pram.R, ``calcTransitionMatrix``),
    after Gouweleeuw, Kooiman, Willenborg and de Wolf (1998), "Post randomisation for statistical
    disclosure control: theory and implementation", J. Official Statistics 14(4), Sec. 3:

    - P: ``P[i, i] = d_i`` and ``P[i, j] = (1 - d_i) / (L - 1)`` for j != i, with ``d_i`` drawn
      uniformly on [pd, 1] (sdcMicro's ``runif(L, min = pd, max = 1)``; ``diagonal="fixed"``:
      ``d_i = pd``);
    - Q, the reverse transitions by Bayes' rule, with p = t / sum(t):
      ``Q[k, j] = P[j, k] p_j / sum_l p_l P[l, k]``;
    - R = P Q, invariant: (p R)_j = sum_k (p P)_k Q[k, j] = sum_k P[j, k] p_j = p_j;
    - released: ``alpha R + (1 - alpha) I`` (``alpha`` the amount of perturbation), invariant too.

    A single category gives [[1]]. Returns the (L, L) row-stochastic matrix.
    """
    t = np.asarray(frequencies, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or not np.isfinite(t).all() or (t <= 0).any():
        raise InputError("frequencies must be a non-empty vector of positive numbers")
    if diagonal not in DIAGONALS:
        raise ParameterError(f"diagonal must be one of {', '.join(map(repr, DIAGONALS))}, got {diagonal!r}")
    _check_pd_alpha(pd, alpha)
    return _invariant(t, float(pd), float(alpha), check_random_state(random_state), diagonal)


def _check_pd_alpha(pd, alpha) -> None:
    if not real(0.0, 1.0, closed="right").test(pd, {}):
        raise ParameterError(f"pd must be a number in (0, 1], got {pd!r}")
    if not real(0.0, 1.0).test(alpha, {}):
        raise ParameterError(f"alpha must be a number in [0, 1], got {alpha!r}")


def _invariant(t: np.ndarray, pd: float, alpha: float, rng: np.random.Generator, diagonal: str) -> np.ndarray:
    """:func:`invariant_matrix` of checked arguments."""
    L = t.size
    if L == 1:
        return np.ones((1, 1))
    d = rng.uniform(pd, 1.0, L) if diagonal == "uniform" else np.full(L, pd)
    o = (1.0 - d) / (L - 1)  # P = diag(d - o) + o 1^T: Q and PQ in O(L^2), no matrix product
    p = t / t.sum()
    s = p @ o + p * (d - o)  # s_k = sum_l p_l P[l, k]
    Q = (np.repeat(o[None, :], L, axis=0) * p[None, :]) / s[:, None]  # Q[k, j] = P[j, k] p_j / s_k, j != k
    Q[np.diag_indices(L)] = d * p / s
    R = alpha * ((d - o)[:, None] * Q + o[:, None] * Q.sum(axis=0)[None, :])  # (PQ)[i, j]
    R[np.diag_indices(L)] += 1.0 - alpha
    return R / R.sum(axis=1, keepdims=True)


def invariant_of(P, frequencies, alpha: float = 1.0) -> np.ndarray:
    """The invariant matrix ``alpha P Q + (1 - alpha) I`` made from any row-stochastic (L, L)
    matrix ``P`` and the category ``frequencies`` t (L positive numbers), Q the reverse transitions
    ``Q[k, j] = P[j, k] p_j / sum_l p_l P[l, k]`` (p = t / sum(t)): the construction of
    :func:`invariant_matrix` (Gouweleeuw et al. 1998, Sec. 3; sdcMicro's ``pram()``) for a P of
    one's own, e.g. sdcMicro's with its drawn diagonal."""
    P = np.asarray(P, dtype=np.float64)
    t = np.asarray(frequencies, dtype=np.float64)
    if t.ndim != 1 or t.size == 0 or not np.isfinite(t).all() or (t <= 0).any():
        raise InputError("frequencies must be a non-empty vector of positive numbers")
    if P.shape != (t.size, t.size) or not np.isfinite(P).all() or (P < 0).any() or \
            np.abs(P.sum(axis=1) - 1).max() > 1e-12:
        raise InputError(f"P must be a row-stochastic {t.size}x{t.size} matrix (one row and column per frequency)")
    if not real(0.0, 1.0).test(alpha, {}):
        raise ParameterError(f"alpha must be a number in [0, 1], got {alpha!r}")
    return _invariant_of(P, t, float(alpha))


def _invariant_of(P: np.ndarray, t: np.ndarray, alpha: float) -> np.ndarray:
    L = t.size
    p = t / t.sum()
    s = p @ P  # s_k = sum_l p_l P[l, k] > 0
    Q = P.T * p[None, :] / s[:, None]
    R = alpha * (P @ Q)
    R[np.diag_indices(L)] += 1.0 - alpha
    return R / R.sum(axis=1, keepdims=True)  # rows sum to 1 to rounding already; exactly as far as floats go


def corrected_frequencies(observed, matrix):
    """The unbiased moment estimator of the original frequencies from those of a PRAM release:
    ``E[t_obs] = t R``, hence ``t_hat = t_obs R^{-1}`` (Gouweleeuw et al. 1998, Sec. 2; Kooiman,
    Willenborg and Gouweleeuw, "PRAM: a method for disclosure limitation of microdata", 1997).

    ``observed``: the released counts of the categories (an array in the matrix's order, or a
    Series indexed by its categories); ``matrix``: R as an (L, L) array, a DataFrame (index: from,
    columns: to) or a :class:`TransitionMatrix`. Returns the estimate in the form ``observed`` came
    (a Series indexed by the categories for a Series). A single-category cell may come out
    negative: the estimator is unbiased, not constrained.
    """
    categories = None
    if isinstance(matrix, TransitionMatrix):
        categories, matrix = list(matrix.categories), matrix.matrix
    elif isinstance(matrix, pd.DataFrame):
        if list(matrix.index) != list(matrix.columns):
            raise InputError("the transition matrix's rows (from) and columns (to) must be the same categories, "
                             "in the same order")
        categories, matrix = list(matrix.index), matrix.to_numpy(np.float64)
    R = np.asarray(matrix, dtype=np.float64)
    if R.ndim != 2 or R.shape[0] != R.shape[1] or not np.isfinite(R).all():
        raise InputError("the transition matrix must be a square matrix of finite numbers")
    if isinstance(observed, pd.Series):
        if categories is None:
            raise InputError("observed counts indexed by category need a matrix that names its categories")
        unknown = [c for c in observed.index if c not in set(categories)]
        if unknown:
            raise InputError(f"observed category {unknown[0]!r} is not a category of the transition matrix")
        t_obs = observed.reindex(categories, fill_value=0).to_numpy(np.float64)
    else:
        t_obs = np.asarray(observed, dtype=np.float64)
    if t_obs.shape != (R.shape[0],):
        raise InputError(f"{t_obs.size} observed counts for a {R.shape[0]}x{R.shape[0]} transition matrix")
    try:
        t_hat = np.linalg.solve(R.T, t_obs)  # t_hat R = t_obs
    except np.linalg.LinAlgError:
        raise InputError("the transition matrix is singular: the frequencies cannot be corrected with it") from None
    return pd.Series(t_hat, index=categories) if isinstance(observed, pd.Series) else t_hat


@dataclass(frozen=True)
class TransitionMatrix:
    """The matrix of one variable in one stratum: ``keys`` (one key, or the keys of a joint
    variable), ``stratum`` (the stratum's value tuple, None without strata), ``categories`` (the
    categories present there, in the matrix's order: values, or value tuples of a joint variable),
    ``matrix`` (R, row-stochastic) and ``frequencies`` (t: records, or households, per category;
    t R = t)."""

    keys: tuple
    stratum: tuple | None
    categories: list
    matrix: np.ndarray
    frequencies: np.ndarray

    def frame(self) -> pd.DataFrame:
        """R as a DataFrame (index: from, columns: to)."""
        return pd.DataFrame(self.matrix, index=list(self.categories), columns=list(self.categories))


@dataclass(frozen=True)
class _Variable:
    """A key (or the joint keys) as codes: ``codes`` (n,) int64, -1 where missing; ``categories``
    (the values of each code: an Index, or a DataFrame of the keys for a joint variable)."""

    keys: tuple
    codes: np.ndarray
    categories: object

    def value(self, code):
        if isinstance(self.categories, pd.DataFrame):
            return tuple(self.categories.iloc[code])
        return self.categories[code]


def _key(label):
    """A stratum's value tuple as a dictionary key: every missing value the same (NaN is not
    equal to itself)."""
    return None if label is None else tuple(None if pd.isna(v) else v for v in label)


def _shown(value) -> str:
    """A value (or a tuple of values) as a message says it: text quoted, numbers as numbers."""
    if isinstance(value, tuple):
        return "(" + ", ".join(_shown(v) for v in value) + ")"
    if isinstance(value, str):
        return repr(value)
    return "missing" if pd.isna(value) else str(value.item() if hasattr(value, "item") else value)


def _factorize(column: pd.Series) -> tuple[np.ndarray, pd.Index]:
    try:
        codes, uniques = pd.factorize(column, sort=True)
    except TypeError:  # mixed types that do not sort: order of appearance
        codes, uniques = pd.factorize(column)
    return codes.astype(np.int64), pd.Index(uniques)


def _variables(X: pd.DataFrame, keys: list, joint: bool) -> list[_Variable]:
    if not joint:
        return [_Variable((k,), *_factorize(X[k])) for k in keys]
    missing = X[keys].isna().any(axis=1).to_numpy()
    groups = X[keys].groupby(keys, sort=True, dropna=True, observed=True)
    codes = groups.ngroup().to_numpy()
    codes = np.where(missing, -1, codes).astype(np.int64)
    first = pd.Series(np.arange(len(X)))[~missing].groupby(codes[~missing]).first().to_numpy()
    return [_Variable(tuple(keys), codes, X[keys].iloc[first].reset_index(drop=True))]


def _strata(strata, n: int) -> tuple[np.ndarray, list, list | None]:
    """(stratum code of each record, the value tuple of each stratum, the strata's column names or
    None) of ``strata``: None, a DataFrame of strata columns, a Series or n values."""
    if strata is None:
        return np.zeros(n, np.int64), [None], None
    if isinstance(strata, pd.Series):
        strata = strata.to_frame()
    names = [str(c) for c in strata.columns] if isinstance(strata, pd.DataFrame) else None
    if not isinstance(strata, pd.DataFrame):
        values = np.asarray(strata, dtype=object)
        if values.ndim != 1 or values.shape[0] != n:
            raise InputError(f"strata: expected {n} values, one per record, got an array of shape {values.shape}")
        strata = pd.DataFrame({"stratum": values})
    if len(strata) != n:
        raise InputError(f"strata: {len(strata)} values for {n} records")
    frame = strata.reset_index(drop=True)
    cols = list(frame.columns)
    codes = frame.groupby(cols, sort=True, dropna=False, observed=True).ngroup().to_numpy().astype(np.int64)
    first = pd.Series(np.arange(n)).groupby(codes).first().to_numpy()
    labels = [tuple(row) for row in frame.iloc[first].itertuples(index=False, name=None)]
    return codes, labels, names


def _units(households, strata_codes: np.ndarray, n: int):
    """(household code of each record, one record of each household) or (None, None)."""
    if households is None:
        return None, None
    from ..release import household_codes

    values = np.asarray(households, dtype=object)
    if values.ndim != 1 or values.shape[0] != n:
        raise InputError(f"households: expected {n} ids, one per record, got an array of shape {values.shape}")
    codes = household_codes(values, strata_codes)
    first = np.full(int(codes.max()) + 1, n, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(n))
    return codes, first


def _unit_codes(var: _Variable, house: np.ndarray | None, first: np.ndarray | None) -> np.ndarray:
    """The variable's code of each unit (record, or household: refused unless its members agree)."""
    if house is None:
        return var.codes
    unit = var.codes[first]
    bad = unit[house] != var.codes
    if bad.any():
        r = int(bad.argmax())
        name = "+".join(var.keys)
        raise InputError(f"{name} is not a household variable: household {int(house[r]) + 1} (in order of appearance) "
                         f"has members with different values of it (record {r + 1}); PRAM with households "
                         "perturbs a value shared by all members")
    return unit


class PRAM(BaseEstimator):
    """Invariant PRAM (sdcMicro's ``pram()``, module docstring): ``fit(X, strata=None,
    households=None)`` builds the transition matrices of the keys (the columns of ``X``) from
    their frequencies, ``transition_matrices_`` (a list of :class:`TransitionMatrix`, one per
    key and stratum); ``transform(X, strata=None, households=None)`` returns X with the keys
    perturbed by them (missing values kept); ``fit_transform`` both.

    ``pd``: the minimum diagonal of P (a number in (0, 1], or {key: number} / a list, one per
    key); ``alpha``: the amount of perturbation in [0, 1] (idem); ``joint``: the keys'
    combinations perturbed as one variable (records with a missing key left as they are);
    ``diagonal``: ``"uniform"`` (sdcMicro: ``P[i, i]`` drawn on [pd, 1]) or ``"fixed"``
    (``P[i, i] = pd``); ``random_state``: None, an int or a Generator.

    >>> import pandas as pd
    >>> X = pd.DataFrame({"sex": ["F", "M"] * 50, "region": list("abcde") * 20})
    >>> released = PRAM(pd=0.8, random_state=1).fit_transform(X)
    >>> sorted(released["sex"].unique()), len(released)
    (['F', 'M'], 100)
    """

    _parameter_constraints = {
        "pd": [real(0.0, 1.0, closed="right"),
               Constraint("{key: number} or a list of numbers in (0, 1]", lambda v, p: isinstance(v, (dict, list, tuple)))],
        "alpha": [real(0.0, 1.0),
                  Constraint("{key: number} or a list of numbers in [0, 1]", lambda v, p: isinstance(v, (dict, list, tuple)))],
        "joint": [BOOLEAN],
        "diagonal": [one_of(*DIAGONALS)],
        "random_state": RANDOM_STATE,
    }

    def __init__(self, pd=0.8, alpha=0.5, *, joint: bool = False, diagonal: str = "uniform", random_state=None):
        self.pd = pd
        self.alpha = alpha
        self.joint = joint
        self.diagonal = diagonal
        self.random_state = random_state

    def _stream(self, child: int) -> np.random.Generator:
        if isinstance(self.random_state, np.random.Generator):
            return self.random_state
        if self.random_state is None:
            return np.random.default_rng()
        return np.random.default_rng(np.random.SeedSequence(int(self.random_state)).spawn(3)[child])

    def _per_key(self, name: str, value, keys: list) -> list:
        if isinstance(value, dict):
            unknown = [k for k in value if k not in keys]
            if unknown:
                raise ParameterError(f"{name} names {unknown[0]!r}, which is not a key")
            absent = [k for k in keys if k not in value]
            if absent:
                raise ParameterError(f"{name} gives no value for the key {absent[0]!r}")
            values = [value[k] for k in keys]
        elif isinstance(value, (list, tuple)):
            if len(value) != len(keys):
                raise ParameterError(f"{name}: {len(value)} values for {len(keys)} keys")
            values = list(value)
        else:
            values = [value] * len(keys)
        for v in values:
            _check_pd_alpha(v if name == "pd" else 0.5, v if name == "alpha" else 0.5)
        return [float(v) for v in values]

    def _check_X(self, X) -> pd.DataFrame:
        if isinstance(X, pd.Series):
            X = X.to_frame()
        if not isinstance(X, pd.DataFrame):
            raise InputError("PRAM takes a DataFrame of the categorical keys (one column per key)")
        if X.shape[1] == 0 or len(X) == 0:
            raise InputError("PRAM needs at least one key and one record")
        if X.columns.duplicated().any():
            raise InputError(f"the key {X.columns[X.columns.duplicated()][0]!r} is given twice")
        return X.copy()

    def fit(self, X, y=None, *, strata=None, households=None):
        """Build the transition matrices of the keys (the columns of X) from their frequencies
        in each stratum (in households with ``households``)."""
        check_params(self)
        X = self._check_X(X)
        keys = [str(c) for c in X.columns]
        X.columns = keys
        joint = bool(self.joint)
        if joint:
            if isinstance(self.pd, (dict, list, tuple)) or isinstance(self.alpha, (dict, list, tuple)):
                raise ParameterError("joint PRAM perturbs the keys' combinations as one variable: pd and alpha are "
                                     "one number each")
            pds, alphas = self._per_key("pd", self.pd, ["joint"]), self._per_key("alpha", self.alpha, ["joint"])
        else:
            pds, alphas = self._per_key("pd", self.pd, keys), self._per_key("alpha", self.alpha, keys)
        scodes, labels, names = _strata(strata, len(X))
        house, first = _units(households, scodes, len(X))
        unit_strata = scodes if house is None else scodes[first]
        rng = self._stream(1)
        matrices = []
        for var, pd_, alpha in zip(_variables(X, keys, joint), pds, alphas):
            codes = _unit_codes(var, house, first)
            m = len(var.categories)
            valid = codes >= 0
            counts = np.bincount(unit_strata[valid] * m + codes[valid], minlength=len(labels) * m).reshape(len(labels), m)
            for s, label in enumerate(labels):
                present = np.flatnonzero(counts[s])
                if present.size == 0:
                    continue
                if present.size > MAX_CATEGORIES:
                    raise InputError(f"{'+'.join(var.keys)} has {present.size:,} categories"
                                     + ("" if label is None else f" in stratum {_shown(label)}")
                                     + f"; PRAM builds a matrix of at most {MAX_CATEGORIES:,} (recode it, or PRAM "
                                     "the keys one by one)")
                R = _invariant(counts[s, present].astype(np.float64), pd_, alpha, rng, self.diagonal)
                matrices.append(TransitionMatrix(var.keys, label, [var.value(c) for c in present], R,
                                                 counts[s, present].copy()))
        self.keys_ = keys
        self.strata_names_ = names
        self.transition_matrices_ = matrices
        self.n_features_in_ = len(keys)
        self.feature_names_in_ = np.asarray(keys, dtype=object)
        return self

    def transform(self, X, strata=None, households=None) -> pd.DataFrame:
        """X with its keys perturbed by the fitted matrices (each record's, or each household's,
        value drawn from its category's row in its stratum); missing values kept."""
        if not hasattr(self, "transition_matrices_"):
            raise NotFittedError("this PRAM is not fitted yet: call fit (or fit_transform) first")
        X = self._check_X(X)
        X.columns = [str(c) for c in X.columns]
        if list(X.columns) != self.keys_:
            raise InputError(f"PRAM was fitted on the keys {', '.join(self.keys_)}, got {', '.join(X.columns)}")
        scodes, labels, _ = _strata(strata, len(X))
        house, first = _units(households, scodes, len(X))
        unit_strata = scodes if house is None else scodes[first]
        rng = self._stream(2)
        out = X.copy()
        by_keys: dict = {}
        for tm in self.transition_matrices_:
            by_keys.setdefault(tm.keys, {})[_key(tm.stratum)] = tm
        by_stratum = np.argsort(unit_strata, kind="stable")
        bounds = np.searchsorted(unit_strata[by_stratum], np.arange(len(labels) + 1))
        for var in _variables(X, self.keys_, bool(self.joint)):
            codes = _unit_codes(var, house, first)
            u = rng.random(codes.size)
            fitted = by_keys.get(var.keys, {})
            units, values = [], [[] for _ in var.keys]
            for s, label in enumerate(labels):
                rows = by_stratum[bounds[s]:bounds[s + 1]]
                rows = rows[codes[rows] >= 0]
                if rows.size == 0:
                    continue
                if _key(label) not in fitted:
                    raise InputError(f"stratum {_shown(label)} had no values of {'+'.join(var.keys)} when PRAM was fitted")
                tm = fitted[_key(label)]
                local = _local_codes(tm, var)[codes[rows]]
                if (local < 0).any():
                    bad = codes[rows][local < 0][0]
                    raise InputError(f"the category {_shown(var.value(bad))} of {'+'.join(var.keys)} was not a "
                                     f"category of it{'' if label is None else ' in stratum ' + _shown(label)} when "
                                     "PRAM was fitted")
                j = _draw(tm.matrix, local, u[rows])
                moved = j != local
                units.append(rows[moved])
                for i in range(len(var.keys)):
                    values[i].append(_category_values(tm, i, isinstance(var.categories, pd.DataFrame))[j[moved]])
            if not units:
                continue
            units = np.concatenate(units)
            records = units if house is None else np.flatnonzero(np.isin(house, units))
            for i, k in enumerate(var.keys):
                new = pd.Index(np.concatenate(values[i]) if len(values[i]) > 1 else values[i][0])
                if house is not None:  # every member gets its household's value
                    position = np.empty(int(house.max()) + 1, dtype=np.int64)
                    position[units] = np.arange(units.size)
                    new = new[position[house[records]]]
                column = out[k].copy()
                column.iloc[records] = new
                out[k] = column
        return out

    def fit_transform(self, X, y=None, *, strata=None, households=None) -> pd.DataFrame:
        return self.fit(X, strata=strata, households=households).transform(X, strata=strata, households=households)


def _draw(R: np.ndarray, local: np.ndarray, u: np.ndarray) -> np.ndarray:
    """The released category (row/column index of R) of units of category ``local`` given their
    uniforms ``u``: the first j with u < cumsum(R[i])_j, for all units at once on the rows laid
    end to end (row i shifted by i, so that the cumulative sums increase throughout)."""
    m = R.shape[0]
    cum = np.cumsum(R, axis=1)
    cum[:, -1] = 1.0
    flat = (cum + np.arange(m)[:, None]).ravel()
    j = np.searchsorted(flat, local + u, side="right") - local * m
    return np.clip(j, 0, m - 1)


def _local_codes(tm: TransitionMatrix, var: _Variable) -> np.ndarray:
    """The matrix's index of each of the variable's codes (-1: not a category of the matrix)."""
    if isinstance(var.categories, pd.DataFrame):
        return pd.MultiIndex.from_tuples(tm.categories).get_indexer(pd.MultiIndex.from_frame(var.categories))
    return pd.Index(tm.categories).get_indexer(var.categories)


def _category_values(tm: TransitionMatrix, i: int, joint: bool) -> np.ndarray:
    """The values of key ``i`` of the matrix's categories (in its order; ``joint``: value tuples)."""
    values = [c[i] for c in tm.categories] if joint else list(tm.categories)
    return pd.Index(values).to_numpy()

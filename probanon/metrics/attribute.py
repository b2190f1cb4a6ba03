"""Attribute disclosure (issue 42): how often a person's released group pins their confidential
value, for numeric columns (:func:`pinned_shares`) and categorical ones (:func:`class_shares`).

A release that keeps each record's confidential values and hides who is who within a group of k
(microaggregation's equivalence classes, a swap's blocks) bounds re-identification, not what the
group says about a value: when every member's value is close to yours, whoever places you in the
group knows your value without knowing your row. For record i with value v_i in group g(i) and a
margin of p percent, a value x is *within* when

    |x - v_i| <= (p / 100) |v_i|        (for v_i = 0: x = 0),

and the measures are the shares of records for which

    - every value of the group is within (``all_within``: the group pins the value), and
    - the group's median is within (``median_within``: the group's typical value gives it away).

Baselines, what the same guess achieves without the release:

    - ``all_within``: the group replaced by a group of the same size drawn at random from the
      released values; with ``m_i`` of the ``N`` values within p% of v_i and a group of ``s``,
      the chance all are within is ``C(m_i, s) / C(N, s)`` (hypergeometric; when the person's own
      value is among the ``N``, ``C(m_i - 1, s - 1) / C(N - 1, s - 1)``), averaged over people.
      A zero-heavy column is pinned by chance too: the excess over this is the release's doing.
    - ``median_within``: the file's median as everyone's guess.

For a categorical column the group *pins* a person's value when every value of the group is
theirs (a constant class; baseline: a random group of the same size, the same hypergeometric
form with ``m_i`` the released values equal to theirs), and the group's mode guesses it with
probability ``1/m`` when theirs is one of the group's ``m`` most frequent values (baseline: the
file's mode). A missing value is one more category. Per class, the distinct l (values present),
the entropy l (``exp H_c``, Machanavajjhala et al. 2007) and the t of t-closeness
(equal-distance EMD to the file's distribution, Li et al. 2007) are summarised by their worst
class (:mod:`probanon.diversity.checks`, for up to :data:`DENSE_CELLS` class-value cells).

A numeric column's missing values are left out (``n_missing`` says how many people): a person
lacking the value has nothing to pin, a group's missing values say nothing. Which columns are
numeric is decided once, by :func:`is_numeric_confidential`.

The values compared with a person's may be those of another table (``released``, grouped by
``released_groups``): the release's values of the group the intruder places the person in, while
``values`` are the person's own (original) ones. No bound is claimed: these measure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy import special

from .._validation import is_numeric_column
from ..errors import InputError

#: the margins of the measures, in percent of the person's value (issue 42: 1, 5 and 10)
MARGINS = (1.0, 5.0, 10.0)
#: classes x values up to which the worst class's l and t are computed (a dense table)
DENSE_CELLS = 20_000_000


def is_numeric_confidential(*columns) -> bool:
    """Whether confidential ``columns`` (the person's and the released, pandas Series or arrays)
    are measured as numbers: every one of int or float type (booleans and text are categories)."""
    return all(is_numeric_column(pd.Series(c)) for c in columns)


def within(guess, values, p: float) -> np.ndarray:
    """``|guess - v| <= (p/100) |v|`` elementwise (a missing guess is never within)."""
    values = np.asarray(values, dtype=np.float64)
    return np.abs(np.asarray(guess, dtype=np.float64) - values) <= np.abs(values) * (p / 100.0)


def category_codes(*columns) -> list:
    """The values of each of ``columns`` as integer codes shared by all, a missing value one more
    category (compared as text, so 1 and "1" are one category)."""
    text = [pd.Series(np.asarray(c, dtype=object)).map(lambda x: None if pd.isna(x) else str(x)) for c in columns]
    codes, _ = pd.factorize(pd.concat(text, ignore_index=True), use_na_sentinel=False)
    out, start = [], 0
    for c in text:
        out.append(codes[start:start + len(c)].astype(np.int64))
        start += len(c)
    return out


@dataclass(frozen=True)
class PinnedShares:
    """The shares of records whose group pins their value of one column, for each margin."""

    column: str
    margins: tuple  # p, in percent
    all_within: tuple  # share of records whose group's values are all within p% of theirs
    median_within: tuple  # share of records whose group's median is within p% of theirs
    baseline_all_within: tuple  # the same with a random group of the same size
    baseline_median_within: tuple  # the file's median within p%
    n_records: int  # people measured (with a value)
    n_groups: int
    n_missing: int = 0  # people left out: no value

    def to_dict(self) -> dict:
        return {**asdict(self), "headline": self.headline()}

    @property
    def excess(self) -> float:
        """Pinned within the largest margin, beyond its baseline."""
        return self.all_within[-1] - self.baseline_all_within[-1]

    def headline(self) -> str:
        """'15.0% of people pinned within 10% on TAXINC (random groups 0.0%)': the largest margin."""
        missing = f"; {self.n_missing:,} without a value left out" if self.n_missing else ""
        return (f"{100 * self.all_within[-1]:.1f}% of people pinned within {self.margins[-1]:g}% on {self.column} "
                f"(random groups of the same sizes: {100 * self.baseline_all_within[-1]:.1f}%); the group's median "
                f"within {self.margins[-1]:g}% for {100 * self.median_within[-1]:.1f}% (the file's median: "
                f"{100 * self.baseline_median_within[-1]:.1f}%){missing}")


def pinned_shares(values, groups, margins=MARGINS, column: str = "value", *, released=None,
                  released_groups=None) -> PinnedShares:
    """The shares of records whose ``groups`` label pins their ``values`` (module docstring).

    ``values``: the confidential values of one column (n numbers; missing ones left out);
    ``groups``: each record's released group (n labels of any hashable type: a class of released
    keys, a swap block; or a DataFrame of the released key columns); ``margins``: p in percent
    (> 0); ``released``, ``released_groups``: the values the groups hold and their labels (default
    ``values`` and ``groups``; a person whose label no released value has is pinned by nothing).
    Returns a :class:`PinnedShares`.
    """
    v = _numbers(values, column)
    margins = _margins(margins)
    labels, r, r_labels = _pair(v, groups, released, released_groups, column)
    own_in_pool = released is None
    r = v if own_in_pool else _numbers(r, column)
    keep_r = ~np.isnan(r)
    r, r_labels = r[keep_r], r_labels[keep_r]
    have = ~np.isnan(v)
    v, labels = v[have], labels[have]
    if r.size == 0 or v.size == 0:
        raise InputError(f"{column}: no value to measure (every value is missing)")
    n_labels = int(max(labels.max(initial=-1), r_labels.max(initial=-1))) + 1
    stats = pd.Series(r).groupby(r_labels).agg(["min", "max", "median", "size"]).reindex(np.arange(n_labels))
    low, high, median = (stats[f].to_numpy()[labels] for f in ("min", "max", "median"))
    size = np.nan_to_num(stats["size"].to_numpy(), nan=0.0).astype(np.int64)[labels]
    pool = np.sort(r)
    shares, baseline = [], []
    for p in margins:
        t = np.abs(v) * (p / 100.0)
        every = (low >= v - t) & (high <= v + t)
        shares.append((float(every.mean()), float((np.abs(median - v) <= t).mean())))
        count = np.searchsorted(pool, v + t, side="right") - np.searchsorted(pool, v - t, side="left")
        chance = _all_drawn(count, size, pool.size, own_in_pool)
        baseline.append((float(chance.mean()), float(within(np.median(pool), v, p).mean())))
    return PinnedShares(column, margins, tuple(s[0] for s in shares), tuple(s[1] for s in shares),
                        tuple(b[0] for b in baseline), tuple(b[1] for b in baseline), int(v.size),
                        int(np.unique(r_labels).size), int(np.count_nonzero(~have)))


def _all_drawn(m: np.ndarray, s: np.ndarray, n: int, own_in_pool: bool) -> np.ndarray:
    """P(a group of ``s`` drawn without replacement from ``n`` values, ``m`` of them good, is all
    good): ``C(m, s)/C(n, s)``, or with the person's own (good) value among them and in the
    group, ``C(m-1, s-1)/C(n-1, s-1)``; 0 for an empty group."""
    empty = s <= 0
    if own_in_pool:
        m, s, n = m - 1, s - 1, n - 1
    m, s = m.astype(np.float64), s.astype(np.float64)
    with np.errstate(invalid="ignore"):
        logp = special.gammaln(m + 1) - special.gammaln(m - s + 1) - special.gammaln(n + 1) + special.gammaln(n - s + 1)
    out = np.where(m >= s, np.exp(np.where(m >= s, logp, 0.0)), 0.0)
    return np.where(empty, 0.0, out)


@dataclass(frozen=True)
class ClassShares:
    """What the released classes say about one categorical column (module docstring)."""

    column: str
    constant: float  # share of people whose class holds their value only
    mode_right: float  # expected share whose class mode is their value (ties: 1/m)
    baseline_mode_right: float  # the same with the file's mode
    baseline_constant: float  # a random class of the same size holding their value only
    distinct_l: int | None  # fewest distinct values in a class (None: not computed, too many cells)
    entropy_l: float | None  # smallest exp(H_c) of a class
    t: float | None  # largest equal-distance EMD of a class from the file
    n_records: int
    n_groups: int

    def to_dict(self) -> dict:
        return {**asdict(self), "headline": self.headline()}

    @property
    def excess(self) -> float:
        return self.constant - self.baseline_constant

    def headline(self) -> str:
        return (f"{100 * self.constant:.1f}% of people in classes where {self.column} is constant (random classes of "
                f"the same sizes: {100 * self.baseline_constant:.1f}%); the class mode is right for "
                f"{100 * self.mode_right:.1f}% (the file's mode: {100 * self.baseline_mode_right:.1f}%)")

    def worst(self) -> str:
        if self.distinct_l is None:
            return "not computed (too many classes x values)"
        return f"{self.distinct_l} / {self.entropy_l:.2f} / {self.t:.3f}"


def class_shares(values, groups, column: str = "value", *, released=None, released_groups=None) -> ClassShares:
    """The categorical measures of the module docstring for ``values`` (n labels, a missing value
    one more value) in ``groups``; ``released``/``released_groups`` as in :func:`pinned_shares`.

    With ``n_g(s)`` the released count of value ``s`` in group ``g``, ``n_g`` its size and ``M_g``
    its most frequent values: person ``i`` (value ``s_i``, group ``g``) counts in ``constant``
    when ``n_g(s_i) = n_g > 0``, and adds ``1/|M_g|`` to ``mode_right`` when ``s_i`` is in ``M_g``.
    """
    v = np.asarray(pd.Series(values, dtype=object).to_numpy(), dtype=object)
    labels, r, r_labels = _pair(v, groups, released, released_groups, column)
    own_in_pool = released is None
    own, held = category_codes(v, v if own_in_pool else r)
    n_groups = int(max(labels.max(initial=-1), r_labels.max(initial=-1))) + 1
    cells = pd.Series(1, index=pd.MultiIndex.from_arrays([r_labels, held])).groupby(level=[0, 1]).size()
    size = np.bincount(r_labels, minlength=n_groups)
    top = np.zeros(n_groups, dtype=np.int64)
    top_of = cells.groupby(level=0).max()
    top[top_of.index.to_numpy()] = top_of.to_numpy()
    n_top = np.zeros(n_groups, dtype=np.int64)
    ties = (cells == top[cells.index.get_level_values(0)]).groupby(level=0).sum()
    n_top[ties.index.to_numpy()] = ties.to_numpy()
    mine = cells.reindex(pd.MultiIndex.from_arrays([labels, own]), fill_value=0).to_numpy()
    present = size[labels] > 0
    constant = float(np.mean(present & (mine == size[labels])))
    mode_right = float(np.mean(np.where(present & (mine == top[labels]), 1.0 / np.maximum(n_top[labels], 1), 0.0)))
    whole = np.bincount(held, minlength=max(held.max(initial=-1), own.max(initial=-1)) + 1)
    baseline = float(np.mean(np.where(whole[own] == whole.max(), 1.0 / np.count_nonzero(whole == whole.max()), 0.0)))
    chance = float(_all_drawn(whole[own], size[labels], held.size, own_in_pool).mean())
    occupied = np.flatnonzero(size > 0)
    distinct_l = entropy_l = t = None
    if occupied.size * whole.size <= DENSE_CELLS:
        from ..diversity.checks import emd_per_class, entropy_per_class

        dense = np.zeros((n_groups, whole.size), dtype=np.int64)
        dense[cells.index.get_level_values(0), cells.index.get_level_values(1)] = cells.to_numpy()
        frame = pd.DataFrame(dense[occupied])
        distinct_l = int((dense[occupied] > 0).sum(axis=1).min())
        entropy_l = float(np.exp(entropy_per_class(frame).min()))
        t = float(emd_per_class(frame, "equal").max())
    return ClassShares(column, constant, mode_right, baseline, chance, distinct_l, entropy_l, t, int(v.size),
                       int(occupied.size))


@dataclass(frozen=True)
class ReleaseDisclosure:
    """The measures of a release's own groups (the office knows them): one :class:`PinnedShares`
    or :class:`ClassShares` per confidential column, and ``unique_rows``, the released records
    whose combination of confidential values no other record has."""

    columns: tuple
    unique_rows: int
    n_records: int

    def to_dict(self) -> dict:
        return {"columns": [c.to_dict() for c in self.columns], "unique_rows": self.unique_rows,
                "n_records": self.n_records}

    def rows(self) -> list[dict]:
        """One row per measure and column (reports): column, measure, released share, baseline."""
        out = []
        for c in self.columns:
            if isinstance(c, PinnedShares):
                for name, shares, base in (("group pins within", c.all_within, c.baseline_all_within),
                                           ("group median within", c.median_within, c.baseline_median_within)):
                    out += [{"column": c.column, "measure": f"{name} {p:g}%", "released": round(x, 4),
                             "baseline": round(b, 4)} for p, x, b in zip(c.margins, shares, base)]
            else:
                out += [{"column": c.column, "measure": "class constant", "released": round(c.constant, 4),
                         "baseline": round(c.baseline_constant, 4)},
                        {"column": c.column, "measure": "class mode right", "released": round(c.mode_right, 4),
                         "baseline": round(c.baseline_mode_right, 4)},
                        {"column": c.column, "measure": "worst class: distinct l / entropy l / t",
                         "released": c.worst(), "baseline": "-"}]
        return out

    def lines(self) -> list[str]:
        out = [c.headline() for c in self.columns]
        if self.unique_rows:
            out.append(f"{self.unique_rows:,} of {self.n_records:,} released records have a combination of confidential "
                       "values no other record has: whoever knows a person's values finds such a record when it holds "
                       "them, and reads its keys")
        return out


def release_disclosure(data: pd.DataFrame, confidential, groups, margins=MARGINS,
                       original: pd.DataFrame | None = None) -> ReleaseDisclosure:
    """Attribute disclosure of a release by its own groups: ``data`` the released table,
    ``confidential`` its confidential columns, ``groups`` the group of every released row (n
    labels, a DataFrame of the columns whose combinations are the groups, or {column: labels}
    when each confidential column has its own, as a column-wise swap). ``original``: the persons'
    records, row i released as row i of ``data`` (their own values are compared with their
    group's released ones; needed when the release changes the values, e.g. replaces them by a
    group mean); without it each person's value is taken to be in their group (a release that
    keeps or permutes the values inside groups). Numeric columns (:func:`is_numeric_confidential`):
    :func:`pinned_shares`; others: :func:`class_shares`.
    """
    confidential = list(confidential)
    out = []
    for c in confidential:
        g = groups[c] if isinstance(groups, dict) else groups
        held = data[c]
        own = held if original is None else original[c]
        pair = {} if original is None else {"released": held.to_numpy(), "released_groups": g}
        if is_numeric_confidential(own, held):
            out.append(pinned_shares(own.to_numpy(dtype=np.float64, na_value=np.nan), g, margins, str(c), **pair))
        else:
            out.append(class_shares(own.to_numpy(), g, str(c), **pair))
    counts = data.groupby(confidential, dropna=False, sort=False)[confidential[0]].transform("size") if confidential \
        else pd.Series(dtype=np.int64)
    return ReleaseDisclosure(tuple(out), int((counts == 1).sum()), int(len(data)))


def _numbers(values, column) -> np.ndarray:
    try:
        v = np.asarray(pd.Series(values).to_numpy(dtype=np.float64, na_value=np.nan)).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"{column}: the values are not numbers (measure it as a category)") from None
    if np.isinf(v).any():
        raise InputError(f"{column}: an infinite value")
    return v


def _margins(margins) -> tuple:
    margins = tuple(float(p) for p in margins)
    if not margins or any(not np.isfinite(p) or p <= 0 for p in margins):
        raise InputError(f"margins must be percentages > 0, got {margins!r}")
    return margins


def _pair(v, groups, released, released_groups, column):
    """Group numbers of the persons and of the released values, numbered alike."""
    if (released is None) != (released_groups is None):
        raise InputError(f"{column}: give both the released values and their groups, or neither")
    if released is None:
        labels = _labels(groups)
        if labels.shape[0] != len(v):
            raise InputError(f"{column}: {len(v)} values but {labels.shape[0]} group labels")
        return labels, v, labels
    if len(released) != len(released_groups):
        raise InputError(f"{column}: {len(released)} released values but {len(released_groups)} group labels")
    both = _labels(_stack(groups, released_groups))
    labels, r_labels = both[:len(v)], both[len(v):]
    if labels.shape[0] != len(v):
        raise InputError(f"{column}: {len(v)} values but {labels.shape[0]} group labels")
    return labels, released, r_labels


def _stack(a, b):
    if isinstance(a, pd.DataFrame):
        return pd.concat([a, b], ignore_index=True)
    return np.concatenate([np.asarray(a, dtype=object), np.asarray(b, dtype=object)])


def _labels(groups) -> np.ndarray:
    """Group numbers 0..G-1 of each record: from n labels, or from the rows of a DataFrame (the
    released key columns: a group is a combination of their values, a missing value a value)."""
    if isinstance(groups, pd.DataFrame):
        return groups.groupby(list(groups.columns), dropna=False, sort=False).ngroup().to_numpy()
    labels = np.asarray(groups, dtype=object)
    if labels.ndim != 1:
        raise InputError("groups must be n labels or a DataFrame of the released key columns")
    return pd.factorize(labels, use_na_sentinel=False)[0]


__all__ = ["MARGINS", "PinnedShares", "pinned_shares", "ClassShares", "class_shares", "ReleaseDisclosure",
           "release_disclosure", "is_numeric_confidential", "within", "category_codes"]

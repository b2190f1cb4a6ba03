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

Each comes with its baseline, the same guess without the release: the whole file as one group
(every value of the file within; the file's median within). No bound is claimed: these measure.

For a categorical column the group *pins* a person's value when every value of the group is
theirs (a constant class), and the group's mode guesses it with probability ``1/m`` when theirs
is one of the group's ``m`` most frequent values (the baseline: the file's mode). Per class the
distinct l (values present), the entropy l (``exp H_c``, Machanavajjhala et al. 2007) and the
t of t-closeness (equal-distance EMD to the file's distribution, Li et al. 2007) are summarised
by their worst class.

The values compared with a person's may be those of another table (``released``, grouped by
``released_groups``): the release's values of the group the intruder places the person in, while
``values`` are the person's own (original) ones.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .._validation import check_matrix
from ..errors import InputError

#: the margins of the measures, in percent of the person's value (issue 42: 1, 5 and 10)
MARGINS = (1.0, 5.0, 10.0)


@dataclass(frozen=True)
class PinnedShares:
    """The shares of records whose group pins their value of one column, for each margin."""

    column: str
    margins: tuple  # p, in percent
    all_within: tuple  # share of records whose group's values are all within p% of theirs
    median_within: tuple  # share of records whose group's median is within p% of theirs
    baseline_all_within: tuple  # the same with the whole file as one group
    baseline_median_within: tuple
    n_records: int
    n_groups: int

    def to_dict(self) -> dict:
        return {**asdict(self), "headline": self.headline()}

    def headline(self) -> str:
        """'15.0% of people pinned within 10% on TAXINC (baseline 0.0%)': the largest margin."""
        return (f"{100 * self.all_within[-1]:.1f}% of people pinned within {self.margins[-1]:g}% on {self.column} "
                f"(baseline {100 * self.baseline_all_within[-1]:.1f}%); the group's median within "
                f"{self.margins[-1]:g}% for {100 * self.median_within[-1]:.1f}% (baseline "
                f"{100 * self.baseline_median_within[-1]:.1f}%)")


def pinned_shares(values, groups, margins=MARGINS, column: str = "value", *, released=None,
                  released_groups=None) -> PinnedShares:
    """The shares of records whose ``groups`` label pins their ``values`` (module docstring).

    ``values``: the confidential values of one column (n numbers, finite); ``groups``: each
    record's released group (n labels of any hashable type: a class of released keys, a swap
    block); ``margins``: p in percent (> 0); ``released``, ``released_groups``: the values the
    groups hold and their labels (default ``values`` and ``groups``; a person whose label no
    released value has is pinned by nothing). Returns a :class:`PinnedShares`.
    """
    v = check_matrix(np.asarray(values).reshape(-1, 1), name=column)[:, 0]
    margins = _margins(margins)
    labels, r, r_labels = _pair(v, groups, released, released_groups, column)
    r = v if released is None else check_matrix(np.asarray(r).reshape(-1, 1), name=column)[:, 0]
    by = pd.Series(r).groupby(r_labels)
    stats = by.agg(["min", "max", "median"]).reindex(np.arange(labels.max() + 1 if labels.size else 0))
    low, high, median = (stats[f].to_numpy()[labels] for f in ("min", "max", "median"))
    whole = tuple(np.full(v.shape, x) for x in (r.min(), r.max(), np.median(r)))
    shares = [_within(v, low, high, median, p) for p in margins]
    baseline = [_within(v, *whole, p) for p in margins]
    return PinnedShares(column, margins, tuple(s[0] for s in shares), tuple(s[1] for s in shares),
                        tuple(b[0] for b in baseline), tuple(b[1] for b in baseline), int(v.shape[0]),
                        int(np.unique(r_labels).size))


@dataclass(frozen=True)
class ClassShares:
    """What the released classes say about one categorical column (module docstring)."""

    column: str
    constant: float  # share of people whose class holds their value only
    mode_right: float  # expected share whose class mode is their value (ties: 1/m)
    baseline_mode_right: float  # the same with the file's mode
    baseline_constant: float  # 1 when the file holds one value, else 0
    distinct_l: int  # fewest distinct values in a class
    entropy_l: float  # smallest exp(H_c) of a class
    t: float  # largest equal-distance EMD of a class from the file
    n_records: int
    n_groups: int

    def to_dict(self) -> dict:
        return {**asdict(self), "headline": self.headline()}

    def headline(self) -> str:
        return (f"{100 * self.constant:.1f}% of people in classes where {self.column} is constant (baseline "
                f"{100 * self.baseline_constant:.1f}%); the class mode is right for {100 * self.mode_right:.1f}% "
                f"(the file's mode: {100 * self.baseline_mode_right:.1f}%)")


def class_shares(values, groups, column: str = "value", *, released=None, released_groups=None) -> ClassShares:
    """The categorical measures of the module docstring for ``values`` (n labels, a missing value
    one more value) in ``groups``; ``released``/``released_groups`` as in :func:`pinned_shares`.

    With ``n_g(s)`` the released count of value ``s`` in group ``g``, ``n_g`` its size and ``M_g``
    its most frequent values: person ``i`` (value ``s_i``, group ``g``) counts in ``constant``
    when ``n_g(s_i) = n_g > 0``, and adds ``1/|M_g|`` to ``mode_right`` when ``s_i`` is in ``M_g``.
    """
    v = np.asarray(pd.Series(values, dtype=object).to_numpy(), dtype=object)
    labels, r, r_labels = _pair(v, groups, released, released_groups, column)
    r = v if released is None else np.asarray(pd.Series(r, dtype=object).to_numpy(), dtype=object)
    codes, uniques = pd.factorize(np.concatenate([v, r]), use_na_sentinel=False)
    own, held = codes[:v.size], codes[v.size:]
    n_groups = int(max(labels.max(initial=-1), r_labels.max(initial=-1))) + 1
    counts = np.zeros((n_groups, uniques.size), dtype=np.int64)
    np.add.at(counts, (r_labels, held), 1)
    size, top = counts.sum(axis=1), counts.max(axis=1)
    n_top = (counts == top[:, None]).sum(axis=1)
    mine = counts[labels, own]
    constant = float(np.mean((size[labels] > 0) & (mine == size[labels])))
    mode_right = float(np.mean(np.where((size[labels] > 0) & (mine == top[labels]), 1.0 / n_top[labels], 0.0)))
    whole = counts.sum(axis=0)
    baseline = float(np.mean(np.where(whole[own] == whole.max(), 1.0 / np.count_nonzero(whole == whole.max()), 0.0)))
    present = counts[size > 0]
    frame = pd.DataFrame(present)
    from ..diversity.checks import emd_per_class, entropy_per_class

    return ClassShares(column, constant, mode_right, baseline, float(np.count_nonzero(whole) == 1),
                       int((present > 0).sum(axis=1).min()), float(np.exp(entropy_per_class(frame).min())),
                       float(emd_per_class(frame, "equal").max()), int(v.size), int(present.shape[0]))


@dataclass(frozen=True)
class ReleaseDisclosure:
    """The measures of a release's own groups (the office knows them): one :class:`PinnedShares`
    or :class:`ClassShares` per confidential column, and ``singled_out``, the released records
    whose confidential values no other record shares (whoever knows them finds the row)."""

    columns: tuple
    singled_out: int
    n_records: int

    def to_dict(self) -> dict:
        return {"columns": [c.to_dict() for c in self.columns], "singled_out": self.singled_out,
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
                         "released": f"{c.distinct_l} / {c.entropy_l:.2f} / {c.t:.3f}", "baseline": "-"}]
        return out

    def lines(self) -> list[str]:
        out = [c.headline() for c in self.columns]
        if self.singled_out:
            out.append(f"the released confidential values single out {self.singled_out:,} of {self.n_records:,} "
                       "records: whoever knows them finds the row and reads its keys")
        return out


def release_disclosure(data: pd.DataFrame, confidential, groups, margins=MARGINS,
                       original: pd.DataFrame | None = None) -> ReleaseDisclosure:
    """Attribute disclosure of a release by its own groups: ``data`` the released table,
    ``confidential`` its confidential columns, ``groups`` the group of every released row (n
    labels, a DataFrame of the columns whose combinations are the groups, or {column: labels}
    when each confidential column has its own, as a column-wise swap). Each person's values are
    in their group (a release that keeps or permutes them inside groups), so the released values
    stand for the persons'; with ``original`` (the persons' records, row i released as row i of
    ``data``) their own values are compared instead. Numeric columns: :func:`pinned_shares`;
    others: :func:`class_shares`.
    """
    from .._validation import is_numeric_column

    confidential = list(confidential)
    out = []
    for c in confidential:
        g = groups[c] if isinstance(groups, dict) else groups
        values = data[c]
        own = values if original is None else original[c]
        pair = {} if original is None else {"released_groups": g}
        if is_numeric_column(values) and is_numeric_column(own) and not values.isna().any() and not own.isna().any():
            if pair:
                pair["released"] = values.to_numpy(dtype=float)
            out.append(pinned_shares(own.to_numpy(dtype=float), g, margins, str(c), **pair))
        else:
            if pair:
                pair["released"] = values.to_numpy()
            out.append(class_shares(own.to_numpy(), g, str(c), **pair))
    counts = data.groupby(confidential, dropna=False, sort=False)[confidential[0]].transform("size") if confidential \
        else pd.Series(dtype=np.int64)
    return ReleaseDisclosure(tuple(out), int((counts == 1).sum()), int(len(data)))


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


def _within(v, low, high, median, p: float) -> tuple[float, float]:
    """(share with every group value within p% of v, share with the group median within p%):
    all values of a group lie within [v - t, v + t] exactly when its minimum and maximum do."""
    t = np.abs(v) * (p / 100.0)
    every = (low >= v - t) & (high <= v + t)
    middle = np.abs(median - v) <= t
    return float(every.mean()), float(middle.mean())


__all__ = ["MARGINS", "PinnedShares", "pinned_shares", "ClassShares", "class_shares", "ReleaseDisclosure",
           "release_disclosure"]

"""Attribute disclosure of numeric confidential columns (issue 42.1, first measure): how often a
person's released group pins their confidential value.

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
"""

from __future__ import annotations

from dataclasses import dataclass

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

    def headline(self) -> str:
        """'15.0% of people pinned within 10% on TAXINC (baseline 0.0%)': the largest margin."""
        return (f"{100 * self.all_within[-1]:.1f}% of people pinned within {self.margins[-1]:g}% on {self.column} "
                f"(baseline {100 * self.baseline_all_within[-1]:.1f}%); the group's median within "
                f"{self.margins[-1]:g}% for {100 * self.median_within[-1]:.1f}% (baseline "
                f"{100 * self.baseline_median_within[-1]:.1f}%)")


def pinned_shares(values, groups, margins=MARGINS, column: str = "value") -> PinnedShares:
    """The shares of records whose ``groups`` label pins their ``values`` (module docstring).

    ``values``: the confidential values of one column (n numbers, finite); ``groups``: each
    record's released group (n labels of any hashable type: a class of released keys, a swap
    block); ``margins``: p in percent (> 0). Returns a :class:`PinnedShares`.
    """
    v = check_matrix(np.asarray(values).reshape(-1, 1), name=column)[:, 0]
    labels = _labels(groups)
    if labels.shape[0] != v.shape[0]:
        raise InputError(f"{column}: {v.shape[0]} values but {labels.shape[0]} group labels")
    margins = tuple(float(p) for p in margins)
    if not margins or any(not np.isfinite(p) or p <= 0 for p in margins):
        raise InputError(f"margins must be percentages > 0, got {margins!r}")
    by = pd.Series(v).groupby(labels)
    low, high, median = (by.transform(f).to_numpy() for f in ("min", "max", "median"))
    whole = tuple(np.full(v.shape, x) for x in (v.min(), v.max(), np.median(v)))
    released = [_within(v, low, high, median, p) for p in margins]
    baseline = [_within(v, *whole, p) for p in margins]
    return PinnedShares(column, margins, tuple(r[0] for r in released), tuple(r[1] for r in released),
                        tuple(b[0] for b in baseline), tuple(b[1] for b in baseline), int(v.shape[0]),
                        int(labels.max()) + 1)


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


__all__ = ["MARGINS", "PinnedShares", "pinned_shares"]

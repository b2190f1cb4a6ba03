"""Strata (issue 17, point 2): microaggregation within each stratum, as sdcMicro's
``strata_variables``.

Records are grouped by the values of their strata columns (region, sex, ...); MDAV, V-MDAV or
PCL runs on each stratum separately (on the rows of the global z-scores, so every stratum's rule
is in the same units; a large stratum is blocked as a file of its size would be), so no group
mixes strata and the strata values are released unchanged. The fitted function has kind
"stratified": the strata columns, and per stratum its values, its own rule and the offset of its
first cell.

A stratum with fewer than k records cannot hold a group: it is an error naming it, or, with
``merge_small_strata``, it is merged into its neighbour: the next stratum in the sorted order
of the strata values (the previous one for the last), repeatedly until every merged stratum
holds k records. The merges are stated (``strata_merged_``, and each issued as an
:class:`~probanon.errors.AdjustmentWarning`) and the function maps the merged
values to the same stratum. A release recodes the merged values (:func:`recode_merged`): a
strata column whose values differ within a merged stratum gets their joined label ("W+X") for
all its records, so the released strata values do not single out the small stratum and every
group is k-anonymous on the keys and the strata columns together.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
import pandas as pd

from ..errors import AdjustmentWarning, InputError


def _scalar(value):
    """A stratum value as a plain JSON scalar (str, int or float); missing values refused."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and not np.isfinite(value)):
        raise InputError("a strata column has a missing value: every record needs its stratum")
    if isinstance(value, bool) or not isinstance(value, (str, numbers.Integral, numbers.Real)):
        value = str(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # 3.0 and 3 name one stratum, as in the published rule
    return value


def strata_of(strata, n: int) -> tuple[list | None, list[tuple]]:
    """(column names or None, the stratum value tuple of each of the n records) of ``strata``:
    a DataFrame of strata columns, a Series, or an array of n values or n rows."""
    if isinstance(strata, pd.Series):
        strata = strata.to_frame()
    names = [str(c) for c in strata.columns] if isinstance(strata, pd.DataFrame) else None
    if not isinstance(strata, pd.DataFrame):
        values = np.asarray(strata, dtype=object)
        if values.ndim == 0 or values.shape[0] != n or values.ndim > 2:
            raise InputError(f"strata: expected {n} values (or rows), one per record, got an array of shape "
                             f"{values.shape}")
        strata = pd.DataFrame(values.reshape(n, -1))
    table = strata
    if len(table) != n:
        raise InputError(f"strata: {len(table)} values for {n} records")
    return names, [tuple(_scalar(v) for v in row) for row in table.itertuples(index=False, name=None)]


def group_strata(values: list[tuple], k: int, merge: bool) -> tuple[np.ndarray, list[list[tuple]], list[str]]:
    """(stratum index of each record, the value tuples of each stratum, merge statements).

    Strata are numbered in the sorted order of their values. A stratum of fewer than ``k``
    records is an :class:`InputError` naming it, unless ``merge`` (module docstring): each merge
    is then stated, and issued as an :class:`AdjustmentWarning` once all are made."""
    distinct = sorted(set(values), key=lambda v: tuple((isinstance(x, str), x) for x in v))
    index = {v: i for i, v in enumerate(distinct)}
    codes = np.fromiter((index[v] for v in values), np.int64, len(values))
    sizes = np.bincount(codes, minlength=len(distinct))
    groups = [[v] for v in distinct]
    counts = list(sizes)
    notes = []
    while True:
        small = next((g for g, c in enumerate(counts) if c < k), None)
        if small is None:
            break
        label = _label(groups[small])
        if not merge:
            raise InputError(f"stratum {label} has {counts[small]} records, fewer than k = {k}: give "
                             "--merge-small-strata (merge_small_strata=True) to merge it into its neighbour")
        if len(groups) == 1:
            raise InputError(f"all the strata together hold {counts[0]} records, fewer than k = {k}")
        into = small + 1 if small + 1 < len(groups) else small - 1
        notes.append(f"stratum {label} ({counts[small]} records < k = {k}) merged into stratum {_label(groups[into])}")
        groups[into] = sorted(groups[into] + groups[small], key=lambda v: tuple((isinstance(x, str), x) for x in v))
        counts[into] += counts[small]
        del groups[small], counts[small]
    for note in notes:
        warnings.warn(note, AdjustmentWarning, stacklevel=2)
    member = {v: g for g, vs in enumerate(groups) for v in vs}
    return np.fromiter((member[v] for v in values), np.int64, len(values)), groups, notes


def _label(values: list[tuple]) -> str:
    return " + ".join(str(v[0]) if len(v) == 1 else str(v) for v in values)


def stratum_label(values: list[tuple]) -> str:
    """How messages name a stratum of :func:`group_strata` (its value tuples): ``W``, ``W + X``."""
    return _label(values)


def stratum_index(strata: list[list[tuple]], values: list[tuple]) -> np.ndarray:
    """The stratum of each record (its strata ``values``) among ``strata``, the value tuples of
    each stratum of a "stratified" rule; a record of a stratum the function does not know is an
    :class:`InputError` naming it."""
    member = {tuple(v): s for s, stratum in enumerate(strata) for v in stratum}
    out = np.empty(len(values), np.int64)
    for i, v in enumerate(values):
        s = member.get(v)
        if s is None:
            raise InputError(f"record {i}: stratum {_label([v])} is not one of the function's strata")
        out[i] = s
    return out


def recode_merged(groups: list[list[tuple]], table: pd.DataFrame) -> dict:
    """{strata column: released values} for the columns that merged strata recode (module
    docstring); empty when no stratum was merged. ``table``: the records' strata columns."""
    names = list(table.columns)
    _, values = strata_of(table, len(table))
    recoded = {}
    for stratum in groups:
        for j, name in enumerate(names):
            distinct = sorted({v[j] for v in stratum}, key=lambda x: (isinstance(x, str), x))
            if len(distinct) > 1:  # the column becomes text (one type for CSV, Parquet, SPSS, Stata)
                label = "+".join(str(x) for x in distinct)
                column = recoded.setdefault(name, np.array([str(v[j]) for v in values], dtype=object))
                members = {v for v in stratum}
                column[[i for i, v in enumerate(values) if v in members]] = label
    return recoded


__all__ = ["group_strata", "recode_merged", "strata_of", "stratum_index", "stratum_label"]

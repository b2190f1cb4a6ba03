"""Households kept together (issue 43, point 5): household-level variables masked once per household.

A household survey's keys are often variables of the household (region, dwelling type, household
size, income of the household), the same for every member. Masking them record by record lets the
members of one household fall into different groups, receive different released values, and count
as several of the k records of a group although an intruder who finds one member has found them
all. sdcMicro's guidance for household-level variables (its ``selectHouseholdData`` /
``mergeHouseholdData``): extract one record per household, protect that file, merge the values
back to the members. Made a guarantee here:

1. :func:`by_household` checks that every household-level column is constant within every
   household (a person-level key, such as age or sex, cannot be kept together this way: an
   :class:`~probanon.errors.InputError` names the first household and column that vary), that no
   household id is missing and no household straddles a stratum
   (:func:`probanon.release.household_codes`), and that sampling weights, if given, are the
   household's (constant within it);
2. the method runs on one record per household (its first member's), so every group it forms
   holds at least k households, each counted once (weights: the household's sampling weight,
   else one per household, as sdcMicro's household file);
3. :meth:`Households.expand` gives every member their household's released values; a swap's
   household-level sources become each member's (:meth:`Households.source_rows`): all members
   of a household move together.

The release's promise then counts households, not records (:class:`probanon.release.Promise`,
``household=``). The microaggregation estimators (``fit(X, households=...)``) and
:func:`probanon.swapping.release.swap` (``households=``) use this module; so can any method:

>>> import numpy as np
>>> X = np.array([[1.0], [1.0], [5.0], [9.0], [9.0], [9.0]])
>>> view = by_household(X, ["a", "a", "b", "c", "c", "c"])
>>> view.X.ravel().tolist(), view.sizes.tolist()
([1.0, 5.0, 9.0], [2, 1, 3])
>>> view.expand(np.array([10.0, 20.0, 30.0])).tolist()
[10.0, 10.0, 20.0, 30.0, 30.0, 30.0]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ._validation import row_label
from .errors import InputError
from .release import household_codes


@dataclass(frozen=True)
class Households:
    """One record per household and the way back to the records.

    ``codes`` (n,) the household of every record, 0..H-1 in order of first appearance;
    ``first`` (H,) the record that stands for each household (its first member); ``sizes`` (H,)
    members per household; ``X``, ``strata``, ``sample_weight``: the data, strata and weights of
    the households (one row each, the first member's; None where not given)."""

    codes: np.ndarray
    first: np.ndarray
    sizes: np.ndarray
    X: object = None
    strata: object = None
    sample_weight: np.ndarray | None = None

    @property
    def n_households(self) -> int:
        return int(self.first.size)

    def collapse(self, values):
        """One row per household (its first member's) of per-record ``values`` (array, Series or
        DataFrame; a pandas object gets a fresh 0..H-1 index)."""
        if isinstance(values, (pd.DataFrame, pd.Series)):
            return values.iloc[self.first].reset_index(drop=True)
        return np.asarray(values)[self.first]

    def expand(self, values):
        """Per-household ``values`` (H rows) given to every member (n rows, in record order)."""
        if isinstance(values, (pd.DataFrame, pd.Series)):
            return values.iloc[self.codes].reset_index(drop=True)
        return np.asarray(values)[self.codes]

    def source_rows(self, sources) -> np.ndarray:
        """Record-level sources of household-level ones: household h received the values of
        household ``sources[h]`` (a swap's sources, (H,) or (H, p)), so each of its members
        receives them from that household's first member (the household-level values are the
        same for every member). Not a permutation of the records when households differ in size."""
        return self.first[np.asarray(sources)[self.codes]]


def by_household(X, households, *, strata=None, sample_weight=None, columns=None,
                 name: str | None = None) -> Households:
    """The households of the records of ``X`` and their one-record-per-household data.

    ``X``: the records (array or DataFrame, n rows); ``households``: the household id of each
    record (n values; none missing); ``columns``: the columns of X that must be household-level
    (names of a DataFrame or positions; default all): each constant within every household (two
    missing values are equal), else an :class:`InputError` naming the first household and
    column that vary. ``strata``: each record's stratum (a DataFrame of strata columns, or n
    values or rows): no household may straddle two. ``sample_weight``: the household's sampling
    weight on each member's record (constant within each household). ``name``: the household
    column, as messages name it (default: the name of a Series of ids, else "household"). See the
    module docstring."""
    if name is None:
        named = isinstance(households, pd.Series) and households.name is not None
        name = str(households.name) if named else "household"
    ids = pd.Series(np.asarray(households, dtype=object) if not isinstance(households, pd.Series) else households)
    n = _length(X)
    if len(ids) != n:
        raise InputError(f"{name}: {len(ids)} household ids for {n} records")
    frame = X if isinstance(X, pd.DataFrame) else None
    codes = household_codes(ids.astype(object), None if strata is None else _strata_codes(strata, n), name)
    first = np.flatnonzero(~pd.Series(codes).duplicated().to_numpy())  # codes number households as they appear
    sizes = np.bincount(codes, minlength=first.size)
    view = Households(codes, first, sizes)
    table = X if frame is not None else pd.DataFrame(np.asarray(X).reshape(n, -1))
    chosen = list(table.columns) if columns is None else [table.columns[c] if frame is None else c
                                                          for c in columns]
    for c in chosen:
        _constant(table[c], view, ids, repr(c) if frame is not None else f"column {c}", name, frame, person=True)
    w = None
    if sample_weight is not None:
        w = np.asarray(sample_weight, dtype=np.float64).ravel()
        if w.size != n:
            raise InputError(f"sample_weight: {w.size} values for {n} records")
        _constant(pd.Series(w), view, ids, "the sampling weight", name, frame, person=False)
        w = w[first]
    return Households(codes, first, sizes, view.collapse(X),
                      None if strata is None else view.collapse(_as_table(strata, n)), w)


def sizes_singled_out(households, groups, k: int) -> tuple[int, int]:
    """(households, records) whose household size fewer than ``k`` households of their group
    share: a published household id gives away each household's size (its members counted), and
    an intruder who knows it narrows a group of k households to those of that size. ``groups``:
    one array of group labels per partition (n each; a record's group, e.g. its released
    combination of keys); the worst partition counts."""
    codes = pd.factorize(pd.Series(households).reset_index(drop=True))[0]
    size = np.bincount(codes)[codes]
    worst = (0, 0)
    for labels in groups:
        once = pd.DataFrame({"group": np.asarray(labels), "household": codes, "size": size}).drop_duplicates(
            ["group", "household"])
        shared = once.groupby(["group", "size"])["household"].transform("size").to_numpy()
        few = shared < k
        worst = max(worst, (int(few.sum()), int(once["size"].to_numpy()[few].sum())))
    return worst


def _length(X) -> int:
    return len(X) if isinstance(X, (pd.DataFrame, pd.Series)) else int(np.shape(X)[0])


def _as_table(strata, n: int):
    """Strata as a DataFrame or an array of n values or rows (as given)."""
    if isinstance(strata, (pd.DataFrame, pd.Series)):
        return strata.reset_index(drop=True)
    return np.asarray(strata, dtype=object)


def _strata_codes(strata, n: int) -> np.ndarray:
    """The stratum of each record as codes (equal value tuples, missing values included, one code)."""
    table = strata.to_frame() if isinstance(strata, pd.Series) else strata
    if not isinstance(table, pd.DataFrame):
        table = pd.DataFrame(np.asarray(strata, dtype=object).reshape(n, -1))
    if len(table) != n:
        raise InputError(f"strata: {len(table)} values for {n} records")
    return table.reset_index(drop=True).groupby(list(table.columns), dropna=False, sort=False).ngroup().to_numpy()


def _constant(values: pd.Series, view: Households, ids: pd.Series, what: str, name: str, frame, person: bool):
    """:class:`InputError` unless ``values`` are the same for every member of each household."""
    v = values.reset_index(drop=True)
    mine = v.iloc[view.first[view.codes]].reset_index(drop=True)
    equal = v.eq(mine)
    equal = equal.fillna(False).to_numpy(dtype=bool) if equal.dtype != bool else equal.to_numpy()
    same = equal | (v.isna().to_numpy() & mine.isna().to_numpy())
    if same.all():
        return
    i = int(np.argmin(same))
    where = row_label(frame, i) if frame is not None else f"row {i}"
    tail = ("; only household-level variables (constant within every household) can be kept together by "
            "household: a person-level key cannot be (release it without the household id)") if person else \
        ("; with households the weights must be the household's sampling weights, the same for every member")
    raise InputError(f"household {_plain(ids.iloc[i])!r} ({name}) has different values of {what} "
                     f"({_plain(mine.iloc[i])!r} and {_plain(v.iloc[i])!r} at {where}){tail}")


def _plain(value):
    """A NumPy scalar as the Python value it holds (messages show 3.5, not np.float64(3.5))."""
    return value.item() if isinstance(value, np.generic) else value


__all__ = ["Households", "by_household", "sizes_singled_out"]

"""What a PRAM release changed, the table of its transition matrices, and what it promises.

- :func:`pram_measure`: per key, the records changed, the frequencies before and after and the
  transitions observed (as sdcMicro's ``print``/``summary`` of a ``pram`` object: "roof !=
  roof_pram : 123 (12.3%)", the frequency comparison and the "a --> b" counts).
- :func:`matrix_table` / :func:`matrices_from_table`: the transition matrices as the table written
  beside the release (one row per cell: key, stratum columns, from, to, probability; a joint
  variable has ``from_<key>`` and ``to_<key>`` per key instead of key, from, to), and back.
- :class:`PramPromise`: checked on what is about to be released before anything is written: PRAM
  promises no k, but that every released key value is a category of that key in the record's
  stratum (missing values left missing; a household's members sharing one value), and that the
  published matrices are row-stochastic and invariant for the original frequencies, t R = t to
  1e-9 (shares), counted here again from the original records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import GuaranteeError, InputError

#: tolerance of the promise's checks on the matrices (row sums, t R = t on shares)
TOLERANCE = 1e-9


@dataclass(frozen=True)
class KeyChange:
    """What PRAM did to one key: ``changed`` records of ``n`` (missing values never change),
    ``frequencies`` (DataFrame: category, before, after; a missing value is a row of its own,
    category NaN) and ``transitions`` (DataFrame: from, to, records; every pair observed)."""

    key: str
    changed: int
    n: int
    frequencies: pd.DataFrame
    transitions: pd.DataFrame

    @property
    def share(self) -> float:
        return self.changed / self.n if self.n else 0.0

    def line(self) -> str:
        """sdcMicro's line: ``key != key_pram : changed (percent%)``, and the largest frequency shift."""
        shift = (self.frequencies["after"] - self.frequencies["before"]).abs()
        worst = "" if shift.empty else (f"; largest frequency change {int(shift.max()):,} records "
                                        f"(category {_shown(self.frequencies['category'].iloc[int(shift.to_numpy().argmax())])})")
        return f"{self.key}: {self.changed:,} of {self.n:,} records changed ({100 * self.share:.2f}%){worst}"


def _shown(value) -> str:
    return repr(value) if isinstance(value, str) else "missing" if pd.isna(value) else str(value)


@dataclass(frozen=True)
class PramMeasure:
    """:func:`pram_measure`'s result: one :class:`KeyChange` per key, and ``any_changed``, the
    records with at least one key changed."""

    keys: list
    changes: dict = field(default_factory=dict)
    any_changed: int = 0
    n: int = 0

    def table(self) -> pd.DataFrame:
        """One row per key: key, changed, share."""
        return pd.DataFrame({"key": self.keys, "changed": [self.changes[k].changed for k in self.keys],
                             "share": [self.changes[k].share for k in self.keys]})

    def lines(self) -> list[str]:
        return [self.changes[k].line() for k in self.keys] + [
            f"records with at least one key changed: {self.any_changed:,} of {self.n:,} "
            f"({100 * self.any_changed / max(self.n, 1):.2f}%)"]


def pram_measure(original: pd.DataFrame, released: pd.DataFrame, keys) -> PramMeasure:
    """What PRAM changed: ``original`` and ``released`` hold the same records row by row (the
    release in the input's order); ``keys`` the perturbed columns."""
    keys = [str(k) for k in keys]
    if len(original) != len(released):
        raise InputError(f"the tables have different numbers of records ({len(original)} and {len(released)})")
    absent = [k for k in keys if k not in original.columns or k not in released.columns]
    if absent:
        raise InputError(f"the key {absent[0]!r} is not in both tables")
    changes, anyc = {}, np.zeros(len(original), dtype=bool)
    for k in keys:
        a, b = original[k].reset_index(drop=True), released[k].reset_index(drop=True)
        differ = (a != b).to_numpy() & ~(a.isna() & b.isna()).to_numpy()
        anyc |= differ
        before, after = a.value_counts(dropna=False), b.value_counts(dropna=False)
        freq = pd.concat([before.rename("before"), after.rename("after")], axis=1).fillna(0).astype(np.int64)
        freq = freq.rename_axis("category").reset_index()
        pairs = pd.DataFrame({"from": a, "to": b}).value_counts(dropna=False).rename("records").reset_index()
        changes[k] = KeyChange(k, int(differ.sum()), len(a), freq, pairs.sort_values(["from", "to"], ignore_index=True)
                               if _sortable(pairs) else pairs)
    return PramMeasure(keys, changes, int(anyc.sum()), len(original))


def _sortable(frame: pd.DataFrame) -> bool:
    try:
        frame.sort_values(["from", "to"])
        return True
    except TypeError:
        return False


# ------------------------------------------------------------------ the matrices as a table

FIXED = ("key", "from", "to", "probability")


def matrix_table(matrices, strata_names=None) -> pd.DataFrame:
    """The transition matrices (:class:`~probanon.categorical.pram.TransitionMatrix`) as one table,
    a row per cell of each: ``key``, the strata columns (``strata_names``; ``stratum`` for strata
    given as values; none without strata), ``from``, ``to``, ``probability``; a joint variable's
    rows have ``from_<key>`` and ``to_<key>`` for each of its keys instead of key, from and to."""
    matrices = list(matrices)
    if not matrices:
        return pd.DataFrame(columns=list(FIXED))
    stratified = any(tm.stratum is not None for tm in matrices)
    names = list(strata_names) if strata_names else (["stratum"] if stratified else [])
    joint = len(matrices[0].keys) > 1
    clash = [c for c in names if c in FIXED or (joint and (c.startswith("from_") or c.startswith("to_")))]
    if clash:
        raise InputError(f"a strata column is named {clash[0]!r}, a column of the transition-matrix file; rename it")
    parts = []
    for tm in matrices:
        m = len(tm.categories)
        part = {}
        if not joint:
            part["key"] = np.repeat(tm.keys[0], m * m)
        for i, name in enumerate(names):
            part[name] = [tm.stratum[i]] * (m * m)
        cats = list(tm.categories)
        if joint:
            for i, k in enumerate(tm.keys):
                values = pd.Index([c[i] for c in cats]).to_numpy()
                part[f"from_{k}"] = np.repeat(values, m)
            for i, k in enumerate(tm.keys):
                values = pd.Index([c[i] for c in cats]).to_numpy()
                part[f"to_{k}"] = np.tile(values, m)
        else:
            values = pd.Index(cats).to_numpy()
            part["from"], part["to"] = np.repeat(values, m), np.tile(values, m)
        part["probability"] = tm.matrix.ravel()
        parts.append(pd.DataFrame(part))
    return pd.concat(parts, ignore_index=True)


def matrices_from_table(table: pd.DataFrame, keys, joint: bool, strata_names=()) -> dict:
    """The matrices of a table of :func:`matrix_table`: {(keys tuple, stratum tuple or None):
    DataFrame R (index: from, columns: to; value tuples for a joint variable)}; a cell missing,
    given twice, or a from category that is not a to category is an :class:`InputError`."""
    keys, names = [str(k) for k in keys], list(strata_names or ())
    if joint:
        frm, to = [f"from_{k}" for k in keys], [f"to_{k}" for k in keys]
    else:
        frm, to = ["from"], ["to"]
    needed = (["key"] if not joint else []) + names + frm + to + ["probability"]
    absent = [c for c in needed if c not in table.columns]
    if absent:
        raise InputError(f"the transition-matrix table has no column {absent[0]!r}")
    out = {}
    by = (["key"] if not joint else []) + names
    groups = table.groupby(by, sort=False, dropna=False) if by else [((), table)]
    for label, part in groups:
        label = label if isinstance(label, tuple) else (label,)
        var = tuple(keys) if joint else (str(label[0]),)
        stratum = tuple(label[0 if joint else 1:]) if names else None
        rows = pd.MultiIndex.from_frame(part[frm]) if joint else pd.Index(part["from"])
        cols = pd.MultiIndex.from_frame(part[to].set_axis(frm, axis=1)) if joint else pd.Index(part["to"])
        categories = rows.unique()
        m = len(categories)
        i, j = categories.get_indexer(rows), categories.get_indexer(cols)
        cell = np.where(j >= 0, i * m + j, -1)
        if len(part) != m * m or (cell < 0).any() or np.unique(cell).size != m * m:
            raise InputError(f"the transition matrix of {'+'.join(var)} (stratum {stratum}) is not square over its "
                             "categories (a cell missing, given twice, or a category it moves to that it does not "
                             "move from)")
        R = np.empty(m * m)
        R[cell] = part["probability"].to_numpy(np.float64)
        out[(var, stratum)] = pd.DataFrame(R.reshape(m, m), index=categories, columns=categories)
    return out


# ------------------------------------------------------------------ the promise


class _Missing:
    """A missing stratum value in a stratum's label (NaN is not equal to itself; this is)."""

    def __repr__(self) -> str:
        return "missing"


MISSING = _Missing()


def _label(values) -> tuple | None:
    """A stratum's value tuple with every missing value as :data:`MISSING` (None: no strata)."""
    if values is None:
        return None
    return tuple(MISSING if v is MISSING or pd.isna(v) else v for v in values)


def _same(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Where two columns (row by row) hold the same value; two missing values are the same."""
    a, b = a.reset_index(drop=True).astype(object), b.reset_index(drop=True).astype(object)
    return (a == b).to_numpy(bool) | (a.isna() & b.isna()).to_numpy()


@dataclass
class PramPromise:
    """What a PRAM release promises (module docstring), checked by :meth:`check` on the records
    about to be written. ``original``: the input's keys, strata columns (``strata``) and household
    column (``household``) in the RELEASED order (row r: the original of released record r);
    ``table``: the transition-matrix table about to be written (:func:`matrix_table`); ``joint``
    as the release was made. ``columns`` is empty: PRAM forms no groups of records."""

    original: pd.DataFrame
    keys: list
    table: pd.DataFrame
    joint: bool = False
    strata: list = field(default_factory=list)
    household: str | None = None
    mechanism: str = "PRAM"
    columns: tuple = ()

    def check(self, data: pd.DataFrame) -> None:
        """:class:`GuaranteeError` unless ``data`` (the release, its records in released order)
        and the matrix table keep the promise."""
        original, keys = self.original.reset_index(drop=True), self.keys
        released = data[keys].reset_index(drop=True)
        if len(released) != len(original):
            self._fail(f"the release has {len(released):,} records, the input {len(original):,}")
        units = original if self.household is None else original.drop_duplicates(self.household)
        try:
            matrices = matrices_from_table(self.table, keys, self.joint, self.strata)
        except InputError as exc:
            self._fail(f"the transition-matrix table: {exc}")
        for var in ([keys] if self.joint else [[k] for k in keys]):
            self._check_values(original, released, var, units)
            self._check_matrices(units.loc[~units[var].isna().any(axis=1)], var, matrices)

    def _fail(self, what: str) -> None:
        raise GuaranteeError(f"{self.mechanism}: {what}; nothing written")

    def _check_values(self, original, released, keys, units) -> None:
        name = "+".join(keys)
        was = original[keys].isna().any(axis=1).to_numpy()
        rows = np.flatnonzero(was)
        if rows.size and not all(_same(original[k].iloc[rows], released[k].iloc[rows]).all() for k in keys):
            self._fail(f"{name}: a record with a missing value was perturbed (missing values are left as they are)")
        if (~was & released[keys].isna().any(axis=1).to_numpy()).any():
            self._fail(f"{name}: a value was released as missing")
        values = self.strata + keys
        allowed = original.loc[~was, values].reset_index(drop=True)
        given = pd.concat([original.loc[~was, self.strata].reset_index(drop=True),
                           released.loc[~was, keys].reset_index(drop=True)], axis=1)
        # one numbering of the value combinations of both (a released value that is no original one gets its own)
        codes = pd.concat([allowed, given], ignore_index=True).groupby(
            values, dropna=False, sort=False).ngroup().to_numpy()
        outside = ~np.isin(codes[len(allowed):], codes[:len(allowed)])
        if outside.any():
            self._fail(f"{name}: {int(outside.sum()):,} released values are not categories of {name} in their stratum")
        if self.household is not None:
            spread = pd.concat([original[[self.household]], released[keys]], axis=1).groupby(
                self.household, dropna=False)[keys].nunique(dropna=False).max(axis=1)
            if (spread > 1).any():
                self._fail(f"{name}: members of a household were released with different values")

    def _check_matrices(self, units: pd.DataFrame, keys, matrices: dict) -> None:
        name = "+".join(keys)
        mine = {_label(s): R for (var, s), R in matrices.items() if var == tuple(keys)}
        parts = units.groupby(self.strata, dropna=False, sort=False) if self.strata else [(None, units)]
        strata_seen = []
        for stratum, part in parts:
            stratum = None if stratum is None else _label(stratum if isinstance(stratum, tuple) else (stratum,))
            strata_seen.append(stratum)
            t = part.groupby(keys, dropna=False, observed=True, sort=False).size()
            where = "" if stratum is None else f" in stratum {stratum}"
            if stratum not in mine:
                self._fail(f"no transition matrix of {name}{where}")
            R = mine[stratum]
            if set(R.index) != set(t.index):
                self._fail(f"the transition matrix of {name}{where} is not over the categories present there")
            M = R.to_numpy(np.float64)
            if (M < -TOLERANCE).any() or (M > 1 + TOLERANCE).any() or np.abs(M.sum(axis=1) - 1).max() > TOLERANCE:
                self._fail(f"the transition matrix of {name}{where} is not row-stochastic")
            p = t.reindex(R.index).to_numpy(np.float64)
            p = p / p.sum()
            if np.abs(p @ M - p).max() > TOLERANCE:
                self._fail(f"the transition matrix of {name}{where} is not invariant for the original frequencies "
                           f"(|t R - t| = {np.abs(p @ M - p).max():.2e} in shares)")
        extra = set(mine) - set(strata_seen)
        if extra:
            self._fail(f"the transition-matrix table has a matrix of {name} for a stratum without its values")

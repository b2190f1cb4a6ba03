"""What goes out with a release: variable roles, record order, the private link file.

**Roles** (as sdcMicro's ``keyVars`` / ``numVars`` / removed direct identifiers, and ARX's
attribute types). Every column of the table has exactly one role:

``key``           a quasi-identifier: masked by the method (microaggregated, swapped...);
``confidential``  kept, as the method defines (copied unchanged, or swapped by ``swap``);
``drop``          removed from the release (a direct identifier, or any column not to publish);
``other``         passed through unchanged, only when asked for (``keep_other=True``,
                  ``--keep-other``): a column nobody assigned is an error naming it, never
                  published silently.

**Order**: the records are written in a random order (a seeded permutation; ``keep_order=True``
keeps the input order), so that the row position links no released record to its original; no
index column is written. The permutation is returned as a **link** table (``original_row``,
``released_row``: record numbers counted from 1, the first record after the header being 1) for
the office's own evaluation (``--link FILE``); it is as secret as the original data and never
goes out with the release.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ._validation import check_random_state, check_seed, row_label
from .errors import InputError
from .labelled import carry_labels, labels_of


def column_list(columns) -> list[str]:
    """A list of column names from a list or a comma-separated string (None: empty)."""
    if columns is None:
        return []
    if isinstance(columns, str):
        return [c.strip() for c in columns.split(",") if c.strip()]
    try:
        return [str(c) for c in columns]
    except TypeError:
        raise InputError(f"columns must be a list of names or a comma-separated string, got {columns!r}") from None


def assign_roles(table_columns, keys, confidential=(), drop=(), keep_other: bool = False, weights=None,
                 strata=()) -> dict:
    """The role of every column of the table ({column: role}, in table order).

    ``keys``, ``confidential``, ``drop``: lists or comma-separated strings. Every named column
    must be in the table and have one role; keys are required. Columns not named are an
    :class:`InputError` listing them, unless ``keep_other`` (then their role is ``"other"``).
    ``weights``: the sampling-weight column, role ``"weight"`` (released unchanged, as sdcMicro
    does) unless it is dropped; it cannot be a key or confidential. ``strata``: the strata
    columns, role ``"stratum"`` (released unchanged: the groups lie within them) unless dropped.
    """
    table_columns = column_list(table_columns)
    named = {"key": column_list(keys), "confidential": column_list(confidential), "drop": column_list(drop)}
    if not named["key"]:
        raise InputError("no key variables: name the quasi-identifiers with --keys")
    roles: dict = {}
    for role, columns in named.items():
        for c in columns:
            if c not in table_columns:
                raise InputError(f"{role} column {c!r} is not in the table")
            if c in roles:
                same = "twice as " + role if roles[c] == role else f"both {roles[c]} and {role}"
                raise InputError(f"column {c!r} is named {same}")
            roles[c] = role
    for role, column in [("weight", weights)] + [("stratum", c) for c in column_list(strata)]:
        if column is None:
            continue
        if column not in table_columns:
            raise InputError(f"{role} column {column!r} is not in the table")
        if roles.get(column, "drop") != "drop":
            raise InputError(f"the {role} column {column!r} cannot also be {roles[column]}")
        roles.setdefault(column, role)
    unassigned = [c for c in table_columns if c not in roles]
    if unassigned and not keep_other:
        shown = ", ".join(unassigned[:12]) + (f" (+{len(unassigned) - 12} more)" if len(unassigned) > 12 else "")
        raise InputError(f"columns without a role: {shown}; name them with --keys, --confidential or --drop, "
                         "or give --keep-other to publish them unchanged")
    return {c: roles.get(c, "other") for c in table_columns}


def columns_with(roles: dict, role: str) -> list[str]:
    """The columns of ``role``, in table order."""
    return [c for c, r in roles.items() if r == role]


def shuffle_stream(seed) -> np.random.Generator:
    """The generator of the record order: independent of the method's stream drawn from the same
    seed (a spawned child of ``SeedSequence(seed)``); fresh entropy when ``seed`` is None."""
    seed = check_seed(seed)
    if seed is None:
        return np.random.default_rng()
    return np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])


@dataclass
class Release:
    """A release ready to write: ``data`` (the published records, in released order),
    ``link`` (private: ``original_row`` -> ``released_row``, from 1) and ``actions``
    ({column: what happened to it}, every input column and every added one)."""

    data: pd.DataFrame
    link: pd.DataFrame
    actions: dict = field(default_factory=dict)

    def summary(self) -> str:
        """One line per column: what the release did with it."""
        width = max((len(c) for c in self.actions), default=0)
        return "\n".join(f"  {c:<{width}}  {a}" for c, a in self.actions.items())


ACTIONS = {"key": "key: masked", "confidential": "confidential: kept unchanged",
           "drop": "removed (--drop)", "other": "other: passed through unchanged",
           "weight": "sampling weight: released unchanged", "stratum": "stratum: released unchanged"}


def make_release(frame: pd.DataFrame, roles: dict, replaced: dict | None = None, added: dict | None = None,
                 actions: dict | None = None, *, keep_order: bool = False, random_state=None) -> Release:
    """Apply the roles to ``frame`` and put the records in a random order.

    ``replaced``: {column: new values} (the masked keys, swapped confidential columns);
    ``added``: {column: values} appended at the end (e.g. the cell index); ``actions``: text per
    role or per column overriding :data:`ACTIONS` in the summary. ``drop`` columns are removed.
    The order is a permutation drawn from ``random_state`` (seed or Generator), or the input's
    with ``keep_order``.
    """
    replaced, added, actions = replaced or {}, added or {}, actions or {}
    out = {}
    described = {}
    for c, role in roles.items():
        described[c] = actions.get(c) or actions.get(role) or ACTIONS[role]
        if role == "drop":
            continue
        out[c] = np.asarray(replaced[c]) if c in replaced else frame[c].to_numpy()
    for c, values in added.items():
        if c in out:
            raise InputError(f"the release would have two columns {c!r}; rename that column of the input")
        out[c] = np.asarray(values)
        described[c] = actions.get(c, "added")
    order, link = record_order(len(frame), keep_order=keep_order, random_state=random_state)
    data = carry_labels(frame, pd.DataFrame(out).iloc[order].reset_index(drop=True))
    labels = labels_of(data)
    for c in labels.dropped(data) if labels is not None else ():
        described[c] += "; its value labels dropped (its values are no longer codes)"
    return Release(data=data, link=link, actions=described)


def record_order(n: int, *, keep_order: bool = False, random_state=None) -> tuple[np.ndarray, pd.DataFrame]:
    """The released order of ``n`` records (released record r is original record ``order[r]``;
    a permutation drawn from ``random_state``, the identity with ``keep_order``) and its link
    table (``original_row`` -> ``released_row``, numbered from 1)."""
    order = np.arange(n) if keep_order else check_random_state(random_state).permutation(n)
    released_row = np.empty(n, dtype=np.int64)
    released_row[order] = np.arange(1, n + 1)
    return order, pd.DataFrame({"original_row": np.arange(1, n + 1), "released_row": released_row})


def _record_numbers(path, link: pd.DataFrame, name: str, n: int) -> np.ndarray:
    """Column ``name`` of a link file as 0-based positions, checked to number the ``n`` records."""
    values = pd.to_numeric(link[name], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values) | (values != np.round(values))
    if bad.any():  # checked before any integer cast: NaN, inf and text are one line of ours
        row = int(np.argmax(bad))
        raise InputError(f"{path}: {name} must hold record numbers ({row_label(link, row)}: "
                         f"{link[name].iloc[row]!r})")
    if values.min() < 1 or values.max() > n or np.unique(values).size != n:
        raise InputError(f"{path}: {name} is not a numbering of the {n} records (1..{n}, each once)")
    return values.astype(np.int64) - 1


def read_link(path, n_original: int, n_released: int, value_columns=()) -> np.ndarray | tuple[np.ndarray, dict]:
    """Read a link file (``original_row``, ``released_row``) and return, for each original
    record (position), the position of its released record; checks that it is a one-to-one
    map between the two tables' records.

    ``value_columns``: confidential columns moved one at a time (column-wise swapping); the link
    file then has ``released_row_<c>``, the released record holding the original record's value
    of ``c``, and the result is ``(positions, {c: positions})``."""
    from .data import read_table

    link = read_table(path)
    missing = [c for c in ("original_row", "released_row") if c not in link.columns]
    if missing:
        raise InputError(f"{path}: not a link file (no column {missing[0]!r})")
    if len(link) != n_original or n_original != n_released:
        raise InputError(f"{path}: links {len(link)} records, the tables have {n_original} and {n_released}")
    orig = _record_numbers(path, link, "original_row", n_original)
    position = np.empty(n_original, dtype=np.int64)
    position[orig] = _record_numbers(path, link, "released_row", n_released)
    if not value_columns:
        return position
    rows = {}
    for c in value_columns:
        name = f"released_row_{c}"
        if name not in link.columns:
            raise InputError(f"{path}: no column {name!r} (a link file of 'probanon swap' with a column-wise method "
                             "has one per confidential column)")
        rows[c] = np.empty(n_original, dtype=np.int64)
        rows[c][orig] = _record_numbers(path, link, name, n_released)
    return position, rows


def align(original: pd.DataFrame, released: pd.DataFrame, keys, *, link=None, id=None,
          by_position: bool = False) -> np.ndarray:
    """The released row of every original record (positions), from the private link file
    (``link``), an identifying column present in both tables (``id``) or, checked, the position
    (``by_position``: the columns the two tables share besides ``keys`` must agree)."""
    given = [name for name, v in (("--link", link), ("--id", id), ("--by-position", by_position)) if v]
    if len(given) != 1:
        raise InputError("say how the records of the two files match: --link FILE, --id COLUMN or --by-position"
                         if not given else f"give one of {', '.join(given)}, not several")
    if link:
        return read_link(link, len(original), len(released))
    if len(original) != len(released):
        raise InputError(f"the tables have different numbers of records ({len(original)} and {len(released)})")
    if id:
        for name, table in (("original", original), ("released", released)):
            if id not in table.columns:
                raise InputError(f"the {name} table has no column {id!r} (--id)")
            if table[id].isna().any() or table[id].duplicated().any():
                raise InputError(f"column {id!r} does not identify the records of the {name} table "
                                 "(missing or repeated values)")
        position = pd.Index(released[id]).get_indexer(original[id])
        if (position < 0).any():
            raise InputError(f"the id {original[id].iloc[int(np.argmax(position < 0))]!r} of the original "
                             "is not in the release")
        return position.astype(np.int64)
    common = [c for c in original.columns if c in released.columns and c not in keys]
    if not common:
        raise InputError("--by-position cannot check that the files are aligned: they share no column "
                         "besides the keys (use --link or --id)")
    for c in common:
        a, b = original[c].reset_index(drop=True), released[c].reset_index(drop=True)
        if not (a.equals(b) or (a.astype(str) == b.astype(str)).all()):
            row = int(np.argmax((a.astype(str) != b.astype(str)).to_numpy()))
            raise InputError(f"--by-position: the files are not aligned (column {c!r} differs at record {row + 1}); "
                             "a shuffled release needs --link or --id")
    return np.arange(len(original), dtype=np.int64)

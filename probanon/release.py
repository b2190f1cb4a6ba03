"""What goes out with a release: variable roles, record order, the private link file.

**Roles** (as sdcMicro's ``keyVars`` / ``numVars`` / removed direct identifiers, and ARX's
attribute types). Every column of the table has exactly one role:

``key``           a quasi-identifier: masked by the method (microaggregated, swapped...);
``confidential``  kept, as the method defines (copied unchanged, or swapped by ``swap``);
``drop``          removed from the release (a direct identifier, or any column not to publish);
``other``         passed through unchanged, only when asked for (``keep_other=True``,
                  ``--keep-other``): a column nobody assigned is an error naming it, never
                  published silently;
``household``     the household id (``--household``): members of one household are kept together
                  where the method allows; released renumbered 1, 2, ... in the released order
                  (the grouping is kept, the office's own ids are not published) unless dropped.

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
from .errors import GuaranteeError, InputError
from .labelled import carry_labels, labels_of


def column_list(columns) -> list[str]:
    """A list of column names from a list (None: empty; one name may be given as a string). The
    library takes lists: the command line splits its comma-separated options once, as it parses
    them (:func:`probanon.cli.options.column_names`)."""
    if columns is None:
        return []
    if isinstance(columns, str):
        return [columns]
    try:
        return [str(c) for c in columns]
    except TypeError:
        raise InputError(f"columns must be a list of names, got {columns!r}") from None


def assign_roles(table_columns, keys, confidential=(), drop=(), keep_other: bool = False, weights=None,
                 strata=(), household=None) -> dict:
    """The role of every column of the table ({column: role}, in table order).

    ``keys``, ``confidential``, ``drop``: lists of names. Every named column
    must be in the table and have one role; keys are required. Columns not named are an
    :class:`InputError` listing them, unless ``keep_other`` (then their role is ``"other"``).
    ``weights``: the sampling-weight column, role ``"weight"`` (released unchanged, as sdcMicro
    does) unless it is dropped; it cannot be a key or confidential. ``strata``: the strata
    columns, role ``"stratum"`` (released unchanged: the groups lie within them) unless dropped.
    ``household``: the household-id column, role ``"household"`` (released renumbered, see
    :func:`make_release`) unless dropped.
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
    for role, column in ([("weight", weights), ("household", household)]
                         + [("stratum", c) for c in column_list(strata)]):
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


@dataclass(frozen=True)
class Promise:
    """What a mechanism promises of the released records, checked before anything is written
    (issue 39.1): every combination of values of each set of ``columns`` is shared by at least
    ``k`` released records (k-anonymity on those columns). ``missing``: the missing-value rule
    (:mod:`probanon.frequencies`): ``"category"`` (a missing value compared as equal to a missing
    value, the rule of ``--missing pattern``) or ``"any"`` (a missing value matches any value,
    sdcMicro's counting: each record's count of matching records must reach k; a local
    suppression's promise). ``strata``: the columns of ``columns`` compared exactly under
    ``"any"`` (a missing stratum is a stratum of its own, never a wildcard). ``mechanism`` names
    the method in the message. ``household``: the household-id column (issue 43.5,
    :mod:`probanon.households`; rule "category" only): every combination is then shared by at
    least k distinct households, not just records (the counts of :meth:`counts` are households;
    those of chunks add up only when no household spans two chunks)."""

    k: int
    columns: tuple  # tuples of column names: k-anonymity on each
    mechanism: str
    missing: str = "category"
    strata: tuple = ()
    household: str | None = None

    def check(self, data: pd.DataFrame) -> None:
        """:class:`GuaranteeError` unless ``data`` keeps the promise."""
        if self.missing == "any":
            self.check_matches(data)
        else:
            self.check_counts(self.counts(data))

    def check_matches(self, data: pd.DataFrame) -> None:
        """The rule "any": every record's count of matching records (counting core,
        :func:`probanon.frequencies.match_counts`) on each set of columns is at least k."""
        from .frequencies import key_codes, match_counts, stratum_codes

        for columns in self.columns:
            keys = [c for c in columns if c not in self.strata]
            strata = [c for c in columns if c in self.strata]
            f, _ = match_counts(key_codes(data, keys), missing="any", strata=stratum_codes(data, strata))
            self.check_matched(columns, int(f.min(initial=self.k)), int((f < self.k).sum()))

    def check_matched(self, columns, smallest: int, short: int) -> None:
        """The rule "any" on one set of columns, from its counts of matching records: the
        ``smallest`` and the number of records ``short`` of k (the counts computed elsewhere,
        e.g. on Dask: :mod:`probanon.distributed.suppression`)."""
        if short:
            raise GuaranteeError(
                f"{self.mechanism} promises {self.k}-anonymity on {', '.join(columns)} (a missing value matching "
                f"any value), but what is about to be released has k achieved = {smallest} "
                f"({short:,} records with fewer than {self.k} matching records); nothing written")

    def counts(self, data: pd.DataFrame) -> list:
        """Records per combination of values, one Series per set of columns (a file released in
        chunks adds up the counts of its chunks, :meth:`add`; rule "category" only: under "any"
        the counts of two chunks do not add up, a record of one matching records of the other)."""
        if self.missing == "any":
            raise InputError("a promise under the rule 'a missing value matches any value' is checked on the whole "
                             "release, not added up over chunks")
        if self.household is not None:  # one row per (combination, household): households counted
            return [data.drop_duplicates([*columns, self.household])
                    .groupby(list(columns), dropna=False, observed=True, sort=False).size() for columns in self.columns]
        return [data.groupby(list(columns), dropna=False, observed=True, sort=False).size()
                for columns in self.columns]

    @staticmethod
    def add(a: list | None, b: list) -> list:
        """The counts of two parts of a release, together."""
        if a is None:
            return b
        return [pd.concat([x, y]).groupby(level=list(range(x.index.nlevels)), dropna=False, sort=False).sum()
                for x, y in zip(a, b)]

    def check_counts(self, counts: list) -> None:
        """:class:`GuaranteeError` unless every combination counted holds at least k records."""
        for columns, sizes in zip(self.columns, counts):
            self.check_sizes(sizes.to_numpy(), columns)

    def check_sizes(self, sizes, columns) -> None:
        """:class:`GuaranteeError` unless every non-empty class in ``sizes`` holds k records."""
        short = sizes[(sizes > 0) & (sizes < self.k)]
        if short.size:
            unit = "records" if self.household is None else f"households ({self.household})"
            raise GuaranteeError(
                f"{self.mechanism} promises {self.k}-anonymity on {', '.join(columns)}"
                f"{'' if self.household is None else ' counted in households'}, but what is about to be "
                f"released has k achieved = {int(short.min())} ({int(short.sum()):,} {unit} in {short.size:,} "
                f"combinations shared by fewer than {self.k}); nothing written")


def combination_promise(k: int, keys, combinations: int | None, mechanism: str, *, missing: str = "any",
                        strata=()) -> Promise:
    """The promise of a release k-anonymous on every combination of at most ``combinations`` keys
    (None: all keys together) with the ``missing`` rule, within the released ``strata`` columns
    (local suppression): the combinations of exactly min(combinations, len(keys)) keys, each with
    the strata, the counts being monotone (a record matching on a set matches on its subsets)."""
    from .frequencies import key_sets

    keys, strata = column_list(keys), tuple(column_list(strata))
    sets = key_sets(len(keys), combinations)
    largest = max(len(x) for x in sets)
    columns = tuple(tuple(keys[i] for i in x) + strata for x in sets if len(x) == largest)
    return Promise(int(k), columns, mechanism, missing=missing, strata=strata)


@dataclass
class Release:
    """A release ready to write: ``data`` (the published records, in released order),
    ``link`` (private: ``original_row`` -> ``released_row``, from 1), ``actions``
    ({column: what happened to it}, every input column and every added one) and ``promise``
    (:class:`Promise`, or None: checked by :func:`probanon.cli.options.write_release` before
    anything is written)."""

    data: pd.DataFrame
    link: pd.DataFrame
    actions: dict = field(default_factory=dict)
    promise: Promise | None = None

    def summary(self) -> str:
        """One line per column: what the release did with it."""
        width = max((len(c) for c in self.actions), default=0)
        return "\n".join(f"  {c:<{width}}  {a}" for c, a in self.actions.items())


ACTIONS = {"key": "key: masked", "confidential": "confidential: kept unchanged",
           "drop": "removed (--drop)", "other": "other: passed through unchanged",
           "weight": "sampling weight: released unchanged", "stratum": "stratum: released unchanged",
           "household": "household id: renumbered 1, 2, ... in the released order (members kept together)"}


def make_release(frame: pd.DataFrame, roles: dict, replaced: dict | None = None, added: dict | None = None,
                 actions: dict | None = None, *, keep_order: bool = False, random_state=None,
                 promise: Promise | None = None, means: dict | None = None) -> Release:
    """Apply the roles to ``frame`` and put the records in a random order.

    ``replaced``: {column: new values} (the masked keys, swapped confidential columns), each in
    the type of its input column where the values fit it (:func:`probanon.precision.like_input`:
    whole numbers of an integer column stay integers, also in a CSV column with empty cells,
    ``frame.attrs["integer_columns"]``); ``added``: {column: values} appended at
    the end (e.g. the cell index); ``actions``: text per role or per column overriding
    :data:`ACTIONS` in the summary; ``means``: {replaced column: the decimals its values are
    rounded to, or None} of the columns whose values are group means, not codes: integers only
    when rounded to 0 decimals, and their SPSS/Stata value labels are dropped (also when the
    means are whole numbers). ``drop`` columns are removed. The order is a permutation drawn from
    ``random_state`` (seed or Generator), or the input's with ``keep_order``. ``promise``: what
    the mechanism promises of the records (:class:`Promise`), checked before the release is
    written.
    """
    from .precision import like_input

    replaced, added, actions, means = replaced or {}, added or {}, actions or {}, means or {}
    out = {}
    described = {}
    for c, role in roles.items():
        described[c] = actions.get(c) or actions.get(role) or ACTIONS[role]
        if role == "drop":
            continue
        whole, integer = None if c not in means else means[c] == 0, c in frame.attrs.get("integer_columns", ())
        if c in replaced:
            out[c] = like_input(np.asarray(replaced[c]), frame[c], whole, integer)
        else:
            out[c] = like_input(frame[c].to_numpy(), frame[c], True, True) if integer else frame[c].to_numpy()
    for c, values in added.items():
        if c in out:
            raise InputError(f"the release would have two columns {c!r}; rename that column of the input")
        out[c] = np.asarray(values)
        described[c] = actions.get(c, "added")
    order, link = record_order(len(frame), keep_order=keep_order, random_state=random_state)
    data = carry_labels(frame, pd.DataFrame(out).iloc[order].reset_index(drop=True))
    for c in columns_with(roles, "household"):
        if c not in replaced:
            data[c] = renumbered_households(data[c])
    for c in _drop_value_labels(data, means):
        described[c] += "; its value labels dropped (its values are no longer codes)"
    return Release(data=data, link=link, actions=described, promise=promise)


def renumbered_households(ids) -> np.ndarray:
    """Household ids renumbered 1, 2, ... in order of first appearance (members of one household
    keep one number; a missing id stays missing)."""
    ids = pd.Series(ids).reset_index(drop=True)
    codes, _ = pd.factorize(ids, use_na_sentinel=True)
    out = pd.array(codes + 1, dtype="Int64")
    out[codes < 0] = pd.NA
    return out


def household_codes(ids, strata=None, name: str = "household") -> np.ndarray:
    """The household of every record as codes 0..H-1 (:class:`InputError` for a missing id, or
    for a household whose members lie in different strata: ``strata``, codes or None, as one
    household never straddles a stratum)."""
    ids = pd.Series(ids).reset_index(drop=True)
    if ids.isna().any():
        raise InputError(f"the household id {name!r} is missing at {row_label(ids.to_frame(), int(ids.isna().to_numpy().argmax()))}")
    codes = pd.factorize(ids)[0].astype(np.int64)
    if strata is not None:
        s = pd.factorize(pd.Series(np.asarray(strata)).reset_index(drop=True))[0].astype(np.int64)
        first = np.full(codes.max() + 1 if codes.size else 0, -1, dtype=np.int64)
        first[codes[::-1]] = s[::-1]
        bad = first[codes] != s
        if bad.any():
            raise InputError(f"household {ids.iloc[int(bad.argmax())]!r} ({name}) has members in different strata; "
                             "a household must lie within one stratum")
    return codes


def _drop_value_labels(data: pd.DataFrame, means) -> list:
    """The columns of ``data`` whose value labels no longer apply: values that are not codes,
    or ``means``; their labels are removed from ``data``'s."""
    from dataclasses import replace

    from .labelled import ATTR

    labels = labels_of(data)
    if labels is None:
        return []
    gone = list(dict.fromkeys(labels.dropped(data) + [c for c in means if c in labels.value_labels and c in data]))
    if gone:
        data.attrs[ATTR] = replace(labels, value_labels={c: v for c, v in labels.value_labels.items() if c not in gone})
    return gone


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
          by_position: bool = False, changed=()) -> np.ndarray:
    """The released row of every original record (positions), from the private link file
    (``link``), an identifying column present in both tables (``id``) or the position
    (``by_position``). Every match is checked (:func:`check_match`): the columns the two tables
    share besides ``keys`` and ``changed`` (columns the mechanism masks, e.g. the confidential
    columns of a column-wise swap) are released unchanged, so they must agree under it."""
    given = [name for name, v in (("--link", link), ("--id", id), ("--by-position", by_position)) if v]
    if len(given) != 1:
        raise InputError("say how the records of the two files match: --link FILE, --id COLUMN or --by-position"
                         if not given else f"give one of {', '.join(given)}, not several")
    masked = [*column_list(keys), *column_list(changed)]
    if link:
        position = read_link(link, len(original), len(released))
        check_match(original, released, position, masked, f"--link {link}")
        return position
    if len(original) != len(released):
        raise InputError(f"the tables have different numbers of records ({len(original)} and {len(released)})")
    if id:
        position = _id_positions(original, released, id)
        check_match(original, released, position, masked + [id], f"--id {id}")
        return position
    position = np.arange(len(original), dtype=np.int64)
    if not check_match(original, released, position, masked, "--by-position"):
        raise InputError("--by-position cannot check that the files are aligned: they share no column "
                         "besides the keys (use --link or --id)")
    return position


def _id_positions(original: pd.DataFrame, released: pd.DataFrame, id) -> np.ndarray:
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


def differing(a: pd.Series, b: pd.Series) -> np.ndarray:
    """Where two columns (aligned row by row) hold different values: numbers compared as numbers
    (to 1e-9 relative, for a column written with another type or precision), anything else as
    text; two missing values agree."""
    a, b = a.reset_index(drop=True), b.reset_index(drop=True)
    missing = a.isna().to_numpy() & b.isna().to_numpy()
    x, y = pd.to_numeric(a, errors="coerce"), pd.to_numeric(b, errors="coerce")
    numbers = (x.notna() & y.notna()).to_numpy()
    same = np.where(numbers, np.isclose(x.to_numpy(np.float64, na_value=np.nan),
                                        y.to_numpy(np.float64, na_value=np.nan), rtol=1e-9, atol=0.0),
                    (a.astype(str) == b.astype(str)).to_numpy())
    return ~(same | missing)


def check_match(original: pd.DataFrame, released: pd.DataFrame, position: np.ndarray, masked, how: str,
                columns=None) -> list:
    """Check a match of the records (``position``: the released row of each original record):
    a column released unchanged holds, in the released row of a record, that record's value, so
    every column the two tables share besides the ``masked`` ones (or the given ``columns``) must
    agree under the match; the first that does not is an :class:`InputError` naming it and how
    many records disagree (``how``: the match, as the message names it). Returns the columns
    checked (none: the match could not be checked this way)."""
    masked = set(column_list(masked))
    if columns is None:
        columns = [c for c in original.columns if c in released.columns and c not in masked]
    moved = released.iloc[position]
    for c in columns:
        bad = differing(original[c], moved[c])
        if bad.any():
            n, first = int(bad.sum()), int(np.argmax(bad))
            if how == "--by-position":
                raise InputError(f"--by-position: the files are not aligned (column {c!r} differs on {n:,} of "
                                 f"{len(bad):,} records, first at record {first + 1}); a shuffled release needs "
                                 "--link or --id")
            raise InputError(f"{how} does not match these files: column {c!r}, released unchanged, differs on {n:,} "
                             f"of {len(bad):,} records under it (first: original record {first + 1}); the link file "
                             "of another release? (a column the release masked is a key: name it)")
    return list(columns)

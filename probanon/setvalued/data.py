"""Set-valued records (paper 5, Section III): one set of items D_u per user u.

Records are kept as two CSR structures with int32 entries: record -> sorted,
deduplicated items, and item -> sorted records (the table T of Section IV-B used
to intersect record lists). Items are relabelled 0..m-1; their original names
are kept in ``item_labels``. At the paper's scale (4,427,486 users, mean record
size 11.42, i.e. about 50.6M entries) both structures take 2 x 4 x 50.6M bytes
plus two int64 index arrays: about 0.44 GB.

Readers: FIMI text (one line of whitespace-separated items per record), a
CSV/Parquet table of (record, item) pairs, or Python iterables of items.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np
import pandas as pd

from .._validation import row_label
from ..data import read_table
from ..outputs import TABLE_FORMATS
from ..errors import InputError

_FIMI_CHUNK = 1 << 18  # lines parsed per chunk


@dataclass(frozen=True)
class SetData:
    """Set-valued data in CSR form.

    ``record_indptr``/``record_items``: items of record u are
    ``record_items[record_indptr[u]:record_indptr[u+1]]`` (sorted, distinct, int32).
    ``item_indptr``/``item_records``: records containing item i, sorted (int32).
    ``item_labels[i]`` is the original name of item i; ``record_labels`` the
    original record ids (None when records are numbered by position).
    """

    record_indptr: np.ndarray
    record_items: np.ndarray
    item_indptr: np.ndarray
    item_records: np.ndarray
    item_labels: np.ndarray
    record_labels: np.ndarray | None = None

    @property
    def n_records(self) -> int:
        return len(self.record_indptr) - 1

    @property
    def n_items(self) -> int:
        return len(self.item_indptr) - 1

    @property
    def n_entries(self) -> int:
        return len(self.record_items)

    @property
    def record_sizes(self) -> np.ndarray:
        """|D_u| for every record (int64)."""
        return np.diff(self.record_indptr)

    @property
    def item_counts(self) -> np.ndarray:
        """Number of records containing each item (its support, int64)."""
        return np.diff(self.item_indptr)

    @property
    def nbytes(self) -> int:
        """Bytes held by the CSR arrays (labels excluded)."""
        return sum(a.nbytes for a in (self.record_indptr, self.record_items,
                                      self.item_indptr, self.item_records))

    def record(self, u: int) -> np.ndarray:
        """Item codes of record ``u``."""
        return self.record_items[self.record_indptr[u]:self.record_indptr[u + 1]]

    def records_of(self, item: int) -> np.ndarray:
        """Sorted record indices containing item code ``item``."""
        return self.item_records[self.item_indptr[item]:self.item_indptr[item + 1]]

    def item_codes(self, labels) -> np.ndarray:
        """Codes of the given original item names; unknown names are an :class:`InputError`."""
        index = pd.Index(self.item_labels)
        codes = index.get_indexer(list(labels))
        if (codes < 0).any():
            bad = list(labels)[int(np.flatnonzero(codes < 0)[0])]
            raise InputError(f"unknown item {bad!r}")
        return codes.astype(np.int32)


def from_pairs(record_codes, item_codes, item_labels, record_labels=None) -> SetData:
    """Build :class:`SetData` from parallel arrays of (record code, item code) pairs.

    Codes are 0-based; every record 0..max must occur (empty records are refused by
    the readers before this point). Duplicate pairs are dropped.
    """
    records = np.asarray(record_codes, dtype=np.int64)
    items = np.asarray(item_codes, dtype=np.int64)
    n = int(records.max()) + 1 if len(records) else 0
    m = len(item_labels)
    if n == 0 or m == 0:
        raise InputError("the data set has no records")
    if n > np.iinfo(np.int32).max or m > np.iinfo(np.int32).max:
        raise InputError("too many records or items for int32 codes")
    if _sorted_distinct(records, items):  # already record-major without duplicates (the usual case)
        rec, itm = records.astype(np.int32), items.astype(np.int32)
    else:
        key = np.sort(records * m + items)  # by record, then item
        key = key[np.concatenate(([True], key[1:] != key[:-1]))]  # duplicates dropped
        rec = (key // m).astype(np.int32)
        itm = (key % m).astype(np.int32)
        del key
    record_indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rec, minlength=n), out=record_indptr[1:])
    if (np.diff(record_indptr) == 0).any():
        raise InputError(f"record {int(np.flatnonzero(np.diff(record_indptr) == 0)[0])} is empty")
    item_indptr, item_records = _transpose(rec, itm, m)
    return SetData(record_indptr, itm, item_indptr, item_records,
                   np.asarray(item_labels), None if record_labels is None else np.asarray(record_labels))


def size_limits(data: SetData) -> np.ndarray:
    """limit[j] for j = 0..max size + 1: records u >= limit[j] have fewer than j items, so no
    j-itemset (nor a generalized itemset of j parts) can be among them. Informative when the
    records are sorted by decreasing size (:func:`by_decreasing_size`), else limit[j] = n."""
    sizes = data.record_sizes
    n_max = int(sizes.max()) if len(sizes) else 0
    if len(sizes) > 1 and (np.diff(sizes) > 0).any():
        return np.full(n_max + 2, data.n_records, dtype=np.int64)
    return np.searchsorted(-sizes, -np.arange(n_max + 2), side="right").astype(np.int64)


def by_decreasing_size(data: SetData) -> SetData:
    """The same records renumbered by decreasing size (stable), so that intersections of
    record lists meet the large records, the likeliest supporters, first and may stop at
    :func:`size_limits`. Record labels follow the records."""
    sizes = data.record_sizes
    if len(sizes) < 2 or not (np.diff(sizes) > 0).any():
        return data
    order = np.argsort(-sizes, kind="stable")
    new_sizes = sizes[order]
    indptr = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(new_sizes, out=indptr[1:])
    take = np.repeat(data.record_indptr[:-1][order] - indptr[:-1], new_sizes) + np.arange(indptr[-1])
    items = data.record_items[take]
    del take
    rec = np.repeat(np.arange(len(sizes), dtype=np.int32), new_sizes)
    item_indptr, item_records = _transpose(rec, items, data.n_items)
    labels = None if data.record_labels is None else data.record_labels[order]
    return SetData(indptr, items, item_indptr, item_records, data.item_labels, labels)


@numba.njit(cache=True)
def _sorted_distinct(records, items):
    """True when the pairs are strictly increasing in (record, item)."""
    for j in range(1, len(records)):
        if records[j] < records[j - 1] or (records[j] == records[j - 1] and items[j] <= items[j - 1]):
            return False
    return True


@numba.njit(cache=True)
def _transpose(rec, itm, m):
    """item -> sorted records, by a counting sort of the record-major pairs (stable, O(n + m))."""
    indptr = np.zeros(m + 1, dtype=np.int64)
    for j in range(len(itm)):
        indptr[itm[j] + 1] += 1
    for i in range(m):
        indptr[i + 1] += indptr[i]
    cursor = indptr[:-1].copy()
    out = np.empty(len(itm), dtype=np.int32)
    for j in range(len(itm)):
        i = itm[j]
        out[cursor[i]] = rec[j]
        cursor[i] += 1
    return indptr, out


def _sorted_labels(codes_by_label: dict):
    """Return (labels sorted, permutation old code -> new code). Integer-like names sort numerically."""
    labels = list(codes_by_label)
    try:
        keys = [int(x) for x in labels]
        numeric = True
    except (TypeError, ValueError):
        numeric = False
    if numeric:
        order = np.argsort(np.asarray(keys, dtype=np.int64), kind="stable")
        sorted_labels = np.asarray([keys[i] for i in order], dtype=np.int64)
    else:
        try:
            order = np.asarray(sorted(range(len(labels)), key=lambda i: labels[i]), dtype=np.int64)
        except TypeError:  # mixed, unorderable labels: keep first appearance
            order = np.arange(len(labels))
        sorted_labels = np.empty(len(labels), dtype=object)
        sorted_labels[:] = [labels[i] for i in order]
    perm = np.empty(len(labels), dtype=np.int64)
    perm[order] = np.arange(len(labels))
    return sorted_labels, perm


def from_iterables(records) -> SetData:
    """Build :class:`SetData` from an iterable of records, each an iterable of hashable items."""
    codes: dict = {}
    rec_codes: list[int] = []
    item_codes: list[int] = []
    u = -1
    for u, rec in enumerate(records):
        if isinstance(rec, (str, bytes)):
            raise InputError(f"record {u} is a string; give each record as a collection of items")
        try:
            before = len(item_codes)
            item_codes.extend(codes.setdefault(x, len(codes)) for x in rec)
        except TypeError:
            raise InputError(f"record {u} is not a collection of hashable items") from None
        if len(item_codes) == before:
            raise InputError(f"record {u} is empty")
        rec_codes.extend([u] * (len(item_codes) - before))
    if u < 0:
        raise InputError("the data set has no records")
    labels, perm = _sorted_labels(codes)
    return from_pairs(np.asarray(rec_codes), perm[np.asarray(item_codes)], labels)


def read_fimi(path) -> SetData:
    """Read FIMI text: one record per line, items separated by whitespace.

    A blank line inside the file is an empty record and an :class:`InputError`; blank lines at
    the end are ignored, as is a missing final newline. A comma is refused (the file is then a
    CSV, not FIMI). Integer item names are sorted numerically, others lexically. Errors name
    the line of the file.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    codes: dict = {}
    rec_parts, item_parts = [], []
    u, line_no, blank = 0, 0, None  # records, lines read, first blank line not yet followed by a record
    try:
        with open(path, encoding="utf-8") as fh:
            while True:
                lines = fh.readlines(_FIMI_CHUNK * 64)
                if not lines:
                    break
                sizes: list[int] = []
                chunk: list[int] = []
                for line in lines:
                    line_no += 1
                    tokens = line.split()
                    if not tokens:
                        blank = line_no if blank is None else blank
                        continue
                    if blank is not None:
                        raise InputError(f"{path}: line {blank} is an empty record")
                    if "," in line:
                        raise InputError(f"{path}: line {line_no} has a comma; FIMI items are separated by "
                                         f"whitespace (a table of (record, item) pairs needs a .csv name)")
                    sizes.append(len(tokens))
                    chunk.extend(codes.setdefault(t, len(codes)) for t in tokens)
                rec_parts.append(np.repeat(np.arange(u, u + len(sizes), dtype=np.int32), sizes))
                item_parts.append(np.asarray(chunk, dtype=np.int32))
                u += len(sizes)
    except UnicodeDecodeError:
        raise InputError(f"{path}: is not UTF-8 text") from None
    if u == 0:
        raise InputError(f"{path}: the file has no records")
    labels, perm = _sorted_labels(codes)
    items = perm[np.concatenate(item_parts)]
    return from_pairs(np.concatenate(rec_parts), items, labels)


def read_pairs(path, record: str | None = None, item: str | None = None) -> SetData:
    """Read a CSV/Parquet table of (record, item) pairs.

    ``record`` and ``item`` name the columns (default: the first two). Records keep
    their order of first appearance (``record_labels``); missing values are an error.
    """
    frame = read_table(path)
    cols = list(frame.columns)
    if record is None and item is None and len(cols) < 2:
        raise InputError(f"{path}: a (record, item) table needs two columns")
    record = cols[0] if record is None else record
    item = cols[1] if item is None else item
    for c in (record, item):
        if c not in frame.columns:
            raise InputError(f"{path}: no column {c!r}")
        if frame[c].isna().any():
            raise InputError(f"{path}: column {c!r} has a missing value "
                             f"({row_label(frame, int(frame[c].isna().to_numpy().argmax()))})")
    rec_codes, rec_labels = pd.factorize(frame[record], sort=False)
    item_raw, item_uniques = pd.factorize(frame[item], sort=True)
    return from_pairs(rec_codes, item_raw, np.asarray(item_uniques), np.asarray(rec_labels))


def load_records(source, **kwargs) -> SetData:
    """Load set-valued data from a path (``.csv``/``.parquet``/``.pq`` pairs, anything
    else FIMI text), a :class:`SetData` (returned as is) or an iterable of records."""
    if isinstance(source, SetData):
        return source
    if isinstance(source, (str, Path)):
        if any(str(source).lower().endswith(ending) for ending in TABLE_FORMATS):
            return read_pairs(source, **kwargs)
        return read_fimi(source)
    try:
        iter(source)
    except TypeError:
        raise InputError(f"records must be a path, a SetData or an iterable of records, got "
                         f"{type(source).__name__}") from None
    return from_iterables(source)

"""The workbench's file: opened at once, paged on the server, summarised in the background.

:func:`sniff` reads the first bytes of a CSV file and says its encoding (UTF-8, else Windows-1252,
else Latin-1) and separator (``csv.Sniffer`` over ``,`` ``;`` tab ``|``), shown on the page and
changeable. :func:`head` reads the first rows only (the first page of a file of millions of rows
appears at once); the whole file is then read in the background by :func:`probanon.data.read_table`,
the reader of every command (same types, same one-line errors). :func:`page` gives rows of the
prepared table; :func:`summarise` one column's type, missing and distinct values and a histogram
or bar chart; :func:`suggest_roles` proposes roles from the data, which the office accepts or not.
"""

from __future__ import annotations

import csv
import gzip
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import InputError
from ..formats import table_format
from ..labelled import labels_of

#: bytes read to sniff a CSV file's encoding and separator
SNIFF_BYTES = 1 << 16
#: separators the sniffer chooses among
SEPARATORS = ",;\t|"
#: encodings tried in this order (Latin-1 reads any bytes)
ENCODINGS = ("utf-8", "cp1252", "latin-1")
#: categories listed per column in its summary (the rest summed in one bar)
CATEGORIES_SHOWN = 12
#: bins of a numeric column's histogram
BINS = 20
#: a page holds at most this many rows
MAX_PAGE = 500


def _opener(path: Path):
    return gzip.open if path.name.lower().endswith(".gz") else open


def sniff(path) -> dict:
    """{"sep", "encoding"} of a CSV file from its first :data:`SNIFF_BYTES` bytes; {} for other
    formats."""
    path = Path(path)
    if table_format(path) != "csv":
        return {}
    try:
        with _opener(path)(path, "rb") as fh:
            raw = fh.read(SNIFF_BYTES)
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    for encoding in ENCODINGS:
        try:
            text = raw.decode(encoding)
            break
        except UnicodeDecodeError as exc:
            if encoding == "utf-8" and exc.start > len(raw) - 4:  # a character cut by the sample's end
                text = raw[:exc.start].decode(encoding)
                break
    lines = text.splitlines()[:50]
    sample = "\n".join(lines[:-1] if len(lines) > 1 and len(raw) == SNIFF_BYTES else lines)
    try:
        sep = csv.Sniffer().sniff(sample, delimiters=SEPARATORS).delimiter
    except csv.Error:
        sep = ","
    return {"sep": sep, "encoding": encoding}


def head(path, rows: int, sep=None, encoding=None) -> pd.DataFrame:
    """The first ``rows`` records of a table, read without the rest: the first chunk of the command
    line's reader (:func:`probanon.data.read_chunks`: same types, same one-line errors)."""
    from ..data import read_chunks

    try:
        return next(read_chunks(path, rows, sep=sep, encoding=encoding))
    except LookupError:
        raise InputError(f"unknown encoding {encoding!r}") from None


def plain(v):
    """A JSON-ready cell: None for a missing value, numbers as numbers, the rest as text."""
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return float(v) if math.isfinite(v) else str(v)
    if isinstance(v, (np.bool_, bool)):
        return bool(v)
    return str(v)


def page(frame: pd.DataFrame, offset: int, limit: int, sort: str | None = None, descending: bool = False) -> dict:
    """Rows ``offset``..``offset + limit`` of ``frame`` (at most :data:`MAX_PAGE`; ``sort``: a
    column to order by first, missing values last): {"offset", "total", "columns", "rows"}, each
    row its record number (from 1, in the file) and its cells."""
    n = len(frame)
    offset, limit = max(0, int(offset)), max(1, min(int(limit), MAX_PAGE))
    if sort is not None:
        if sort not in frame.columns:
            raise InputError(f"no column {sort!r} to sort by")
        order = np.argsort(pd.factorize(frame[sort], sort=True)[0] % (n + 1) if not
                           pd.api.types.is_numeric_dtype(frame[sort]) else
                           np.nan_to_num(frame[sort].to_numpy(dtype=float), nan=np.inf), kind="stable")
        order = order[::-1] if descending else order
        rows = order[offset:offset + limit]
    else:
        rows = np.arange(offset, min(n, offset + limit))
    part = frame.iloc[rows]
    return {"offset": offset, "total": n, "columns": [str(c) for c in frame.columns],
            "rows": [[int(r) + 1, *[plain(v) for v in values]] for r, values in
                     zip(rows, part.itertuples(index=False, name=None))]}


def summarise(column: pd.Series, labels: dict | None = None) -> dict:
    """One column's summary: its type ("number", "integer", "text", "coded": numbers with value
    labels), missing and distinct values, and a histogram (numbers: :data:`BINS` bins between the
    smallest and largest value) or the :data:`CATEGORIES_SHOWN` most frequent categories (with
    their labels) and the others summed."""
    n = len(column)
    missing = int(column.isna().sum())
    numeric = pd.api.types.is_numeric_dtype(column) and not pd.api.types.is_bool_dtype(column)
    distinct = int(column.nunique(dropna=True))
    out = {"name": str(column.name), "records": n, "missing": missing, "distinct": distinct}
    if numeric and not labels and distinct > CATEGORIES_SHOWN:
        x = column.to_numpy(dtype=float)
        x = x[np.isfinite(x)]
        whole = bool(len(x)) and bool(np.all(x == np.round(x)))
        counts, edges = np.histogram(x, bins=BINS) if len(x) else (np.zeros(0, int), np.zeros(0))
        out.update(type="integer" if whole else "number", min=plain(x.min()) if len(x) else None,
                   max=plain(x.max()) if len(x) else None, mean=plain(x.mean()) if len(x) else None,
                   histogram={"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]})
        return out
    counts = column.value_counts(dropna=True)
    shown = counts.iloc[:CATEGORIES_SHOWN]
    out.update(type="coded" if labels else ("integer" if numeric else "text"),
               categories=[{"value": plain(v), "label": None if not labels else labels.get(v, labels.get(plain(v))),
                            "count": int(c)} for v, c in shown.items()],
               others=int(counts.iloc[CATEGORIES_SHOWN:].sum()))
    return out


def summaries(frame: pd.DataFrame, progress=None, known=None) -> list[dict]:
    """:func:`summarise` of every column, calling ``progress("column summaries", done, total)``;
    ``known``: {column: summary} already made (taken as they are)."""
    labels = labels_of(frame)
    value_labels = labels.value_labels if labels is not None else {}
    known = known or {}
    out = []
    for i, c in enumerate(frame.columns):
        if progress is not None:
            progress("column summaries", i, frame.shape[1])
        out.append(known[c] if c in known else summarise(frame[c], value_labels.get(c)))
    if progress is not None:
        progress("column summaries", frame.shape[1], frame.shape[1])
    return out


_WEIGHT = re.compile(r"(^|[^a-z])(w|wt|wgt|weight|weights|peso|poids|gewicht|factor|fexp|expansion)([^a-z]|$)|weight|wgt",
                     re.IGNORECASE)
_HOUSEHOLD = re.compile(r"(^|[^a-z])(hh|hid|hhid|household|hogar|menage|haushalt)", re.IGNORECASE)
_IDENTIFIER = re.compile(r"(^|[^a-z])(id|ident|identifier|name|email|phone|ssn|nif|dni)([^a-z]|$)", re.IGNORECASE)


def suggest_roles(summary: list[dict]) -> dict:
    """{column: (role, why)} proposed from the summaries, for the office to accept or not (never
    applied by themselves): an identifier-like column (a name saying so, or a distinct value per
    record) "drop"; a weight-like one (positive numbers named so) "weight"; a household id
    "household"; a coded column or text with few categories "categorical key"."""
    out = {}
    for s in summary:
        name, n, distinct = s["name"], s["records"], s["distinct"]
        numeric = s["type"] in ("number", "integer")
        counting = s["type"] == "integer" and s.get("min") is not None and s["max"] - s["min"] + 1 == distinct
        if _IDENTIFIER.search(name) or (distinct == n - s["missing"] and n > 20 and (s["type"] == "text" or counting)):
            out[name] = ("drop", "a distinct value per record or an identifier's name: a direct identifier")
        elif numeric and _WEIGHT.search(name) and (s.get("min") or 0) > 0:
            out[name] = ("weight", "positive numbers named as a weight")
        elif _HOUSEHOLD.search(name) and distinct < n:
            out[name] = ("household", "named as a household id, shared by several records")
        elif s["type"] in ("coded", "text") or (s["type"] == "integer" and "categories" in s):
            out[name] = ("categorical key", f"{distinct} categories" + (" with value labels" if s["type"] == "coded"
                                                                         else ""))
    return out


__all__ = ["head", "page", "plain", "sniff", "suggest_roles", "summarise", "summaries"]

"""Loading tables, choosing quasi-identifier columns, z-scoring.

Tables are read by file extension (``.csv``, ``.csv.gz``, ``.parquet``/``.pq``, SPSS ``.sav`` and Stata
``.dta`` with their labels, :mod:`.labelled`). Z-scoring uses the
population standard deviation (ddof = 0); a constant column gets scale 1, so it is
centred but otherwise kept as is and never divides by zero.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ._validation import check_matrix, is_numeric_column, row_label
from .exactsum import exact_sums
from .errors import InputError, ParameterError
from .precision import integer_columns

from .formats import table_format

#: CSV reading options of the running command (``--sep``, ``--encoding``): every ``read_table``
#: of a command uses them unless told otherwise (set by the CLI with :func:`csv_options`)
_CSV_OPTIONS: contextvars.ContextVar = contextvars.ContextVar("csv_options", default={})
SEPARATORS = ",;\t|"


@contextlib.contextmanager
def csv_options(sep=None, encoding=None):
    """Within the block, :func:`read_table` reads CSV with this separator and encoding."""
    token = _CSV_OPTIONS.set({"sep": sep, "encoding": encoding})
    try:
        yield
    finally:
        _CSV_OPTIONS.reset(token)


def read_table(path, sep=None, encoding=None, text: bool = False) -> pd.DataFrame:
    """Read a CSV (``.csv``, gzip-compressed ``.csv.gz``), Parquet, SPSS (``.sav``) or Stata
    (``.dta``) file into a DataFrame (SPSS/Stata: labels in ``attrs["labels"]``, :mod:`.labelled`).

    CSV: separator ``sep`` (default ``,``) and ``encoding`` (default UTF-8). Refused with a one-line
    :class:`InputError`: a missing or empty file, no records, duplicate column names, text that is
    not in the encoding; when no column is numeric and the file looks separated by another
    character, the message names it. Row positions in later messages are file line numbers: the
    frame carries ``attrs["first_line"]`` (the line of its first record, 2 for a CSV with a header);
    SPSS and Stata records are named by their case number, from 1 (``attrs["first_case"]``).
    ``text``: every value is read as text, stripped, and nothing is taken for a missing value
    (labels of hierarchies and graphs). The whole table is the one chunk of :func:`read_chunks`.
    """
    return next(read_chunks(path, None, sep=sep, encoding=encoding, text=text))


def read_chunks(path, chunk_size: int | None, sep=None, encoding=None, text: bool = False, dtypes=None):
    """The table of ``path`` as DataFrames of at most ``chunk_size`` records, in file order (CSV:
    pandas' chunked reader; Parquet: ``pyarrow.parquet.ParquetFile.iter_batches``); ``None``: one
    DataFrame, the whole file (:func:`read_table`). Every chunk is read and checked as
    :func:`read_table` reads and checks the whole file (the separator hint on the first chunk), and
    carries ``attrs["integer_columns"]`` (CSV: the columns of whole numbers with empty cells,
    :func:`probanon.precision.integer_columns`, unless ``dtypes`` is given) and
    ``attrs["first_line"]`` (CSV: the file line of its first record),
    ``attrs["first_case"]`` (SPSS, Stata: the case number of its first record, from 1) or
    ``attrs["first_row"]`` (Parquet: the position of its first record in the file; see
    :func:`in_file`). ``dtypes`` ({column: dtype}): the chunks' columns are read (CSV) or cast
    (Parquet) to these types, e.g. those of the whole file from :func:`table_dtypes`."""
    path = Path(path)
    kind = table_format(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    options = _CSV_OPTIONS.get()
    sep = sep or options.get("sep") or ","
    encoding = encoding or options.get("encoding") or "utf-8"
    with _reading(path, kind, encoding):
        if kind == "csv":
            header = pd.read_csv(path, sep=sep, encoding=encoding, header=None, nrows=1, dtype=str)
            names = [str(v) for v in header.iloc[0].tolist()] if len(header) else []
            read = {"dtype": str, "keep_default_na": False, "skipinitialspace": True} if text else {}
            read = {**read, "dtype": dtypes} if dtypes else read
            reader = pd.read_csv(path, sep=sep, encoding=encoding, chunksize=chunk_size, **read)
            frames = iter([reader]) if chunk_size is None else iter(reader)
        elif kind in ("spss", "stata"):
            from .labelled import read_labelled

            frames, names = read_labelled(path, kind, chunk_size), None
        elif chunk_size is None:
            frames = iter([pd.read_parquet(path)])
            names = None
        else:
            import pyarrow.parquet as pq

            parquet = pq.ParquetFile(path)
            names = [str(c) for c in parquet.schema_arrow.names]
            frames = (batch.to_pandas() for batch in parquet.iter_batches(batch_size=chunk_size))
    offset = 0
    while True:
        with _reading(path, kind, encoding):
            frame = next(frames, None)
        if frame is None or (offset == 0 and frame.shape[0] == 0):
            break
        if kind != "csv":
            names = names or [str(c) for c in frame.columns]
            labels = frame.attrs.get("labels")
            frame = frame.astype(str) if text else frame.astype(dtypes) if dtypes else frame
            if labels is not None:
                frame.attrs["labels"] = labels
        if offset == 0:
            _check_names(path, names)
            if kind == "csv" and not any(is_numeric_column(frame[c]) for c in frame.columns):
                _refuse_other_separator(path, sep, encoding, frame.shape[1])
        if kind == "csv":
            frame.attrs["first_line"] = 2 + offset
            if not text and dtypes is None:  # with dtypes, the caller knows the whole file's
                frame.attrs["integer_columns"] = integer_columns(frame)
        elif kind in ("spss", "stata"):
            frame.attrs["first_case"] = 1 + offset
        elif chunk_size is not None:
            frame.attrs["first_row"] = offset
        offset += frame.shape[0]
        yield frame
    if offset == 0:
        if names:
            _check_names(path, names)
        raise InputError(f"{path}: the table has no records")


@contextlib.contextmanager
def _reading(path: Path, kind: str, encoding: str):
    """Errors of the CSV and Parquet readers as one-line :class:`InputError`."""
    try:
        yield
    except pd.errors.EmptyDataError:
        raise InputError(f"{path}: the file is empty") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: is not {encoding} text (give --encoding, e.g. --encoding latin-1)") from None
    except LookupError:
        raise InputError(f"unknown encoding {encoding!r}") from None
    except Exception as exc:  # parser errors of pandas/pyarrow, a corrupt gzip stream
        raise InputError(f"{path}: cannot be read as {kind} ({str(exc).splitlines()[0]})") from None


def _check_names(path: Path, names) -> None:
    seen = set()
    for name in names:
        if name in seen:
            raise InputError(f"{path}: the column name {name!r} appears twice")
        seen.add(name)


@contextlib.contextmanager
def in_file(chunk: pd.DataFrame):
    """Within the block, a message of a check of ``chunk`` (a chunk of :func:`read_chunks`) names
    the record's position in the file: CSV chunks carry their file lines already; a Parquet
    chunk's ``row N`` (:func:`probanon._validation.row_label`) is shifted by its first row."""
    first = chunk.attrs.get("first_row")
    try:
        yield
    except InputError as exc:
        if not first:
            raise
        text = re.sub(r"\(row (\d+)([,:])", lambda m: f"(row {int(m[1]) + first}{m[2]}", str(exc))
        raise type(exc)(text) from None


def table_dtypes(dtypes) -> dict:
    """The column types of a whole file from those of its chunks (a list of {column: dtype}):
    one type where the chunks agree, float64 for a mix of integer and float numbers, text
    otherwise (a chunk of numbers in a column with text in another chunk)."""
    out = {}
    for c in dtypes[0]:
        seen = [d[c] for d in dtypes]
        if all(t == seen[0] for t in seen):
            out[c] = seen[0]
        elif all(getattr(t, "kind", "") in ("i", "u", "f") for t in seen):
            out[c] = np.result_type(*seen)
        else:
            out[c] = object
    return out


def _refuse_other_separator(path: Path, sep: str, encoding: str, n_columns: int) -> None:
    """No numeric column was found: if another separator splits the header into more columns,
    the user probably needs ``--sep``; say which."""
    import csv
    import gzip

    opener = gzip.open if path.name.lower().endswith(".gz") else open
    try:
        with opener(path, "rt", encoding=encoding, errors="replace") as fh:
            sample = fh.read(65536)
        found = csv.Sniffer().sniff(sample, delimiters=SEPARATORS).delimiter
    except (csv.Error, OSError, EOFError):
        return
    if found != sep and len(sample.splitlines()[0].split(found)) > n_columns:
        raise InputError(f"{path}: no numeric column with separator {sep!r}; the file looks "
                         f"{found!r}-separated: give --sep {found!r}")


def values_frame(values, columns=None, index=None) -> pd.DataFrame:
    """An (n, d) array of released values as a DataFrame: ``columns`` (x0, x1... when None),
    ``index``; each column keeps its own type (numbers stay numbers in an object array of
    mixed keys)."""
    values = np.asarray(values)
    columns = [f"x{j}" for j in range(values.shape[1])] if columns is None else list(columns)
    return pd.DataFrame({c: pd.Series(values[:, j], index=index).infer_objects() for j, c in enumerate(columns)},
                        index=index)


def select_columns(frame: pd.DataFrame, columns=None) -> list[str]:
    """Quasi-identifier columns: ``columns`` if given (checked), else every numeric column.

    ``columns``: a list of names (one name may be given as a string; the command line splits
    its comma-separated lists itself).
    """
    if isinstance(columns, str):
        columns = [columns]
    if columns:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise InputError(f"column {missing[0]!r} is not in the table")
        if len(set(columns)) != len(columns):
            raise InputError("a column is named twice")
        for c in columns:
            _reject_text_in_numbers(frame[c])
            if not is_numeric_column(frame[c]):
                raise InputError(f"column {c!r} is not numeric")
        return list(columns)
    for c in frame.columns:
        _reject_text_in_numbers(frame[c])
    chosen = [c for c in frame.columns if is_numeric_column(frame[c])]
    if not chosen:
        raise InputError("the table has no numeric column")
    return chosen


def _reject_text_in_numbers(series: pd.Series) -> None:
    """A text column whose values are mostly numbers is a numeric column with stray text:
    say where, rather than silently treating the column as categorical."""
    if is_numeric_column(series) or series.empty:
        return
    _refuse_text(series.name, *_text_in_numbers(series))


def _text_in_numbers(series: pd.Series) -> tuple[int, int, str | None]:
    """Of a column: its values (not missing), how many are numbers, and where the first that is
    not stands (``line 7: 'abc'``, the record's place in the file, see :func:`in_file`)."""
    values = series.dropna()
    numbers = pd.to_numeric(values, errors="coerce")
    where = None
    if numbers.isna().any():
        label = numbers.index[numbers.isna()][0]
        position = series.index.get_loc(label)
        first = series.attrs.get("first_row")
        where = row_label(series, position) if first is None else f"row {first + position}"
        where = f"{where}: {values[label]!r}"
    return len(values), int(numbers.notna().sum()), where


def _refuse_text(name, values: int, numbers: int, where: str | None) -> None:
    if values and numbers / values >= 0.5 and where:
        raise InputError(f"column {name!r} has text in a numeric column ({where})")


class NumericColumns:
    """:func:`select_columns`' check of named numeric ``columns`` over a file read in chunks: give
    it every chunk (:meth:`add`), then :meth:`check` refuses as :func:`select_columns` refuses the
    whole file (a column with text in some chunk is text in the whole file)."""

    def __init__(self, columns):
        self.seen = {c: [0, 0, None, True] for c in columns}  # values, numbers, first text, numeric

    def add(self, chunk: pd.DataFrame) -> None:
        for c, seen in self.seen.items():
            if is_numeric_column(chunk[c]):
                values, numbers, where = (int(chunk[c].notna().sum()),) * 2 + (None,)
            else:
                values, numbers, where = _text_in_numbers(chunk[c])
                seen[3] = False
            seen[0], seen[1], seen[2] = seen[0] + values, seen[1] + numbers, seen[2] or where

    def check(self) -> None:
        for c, (values, numbers, where, numeric) in self.seen.items():
            if not numeric:
                _refuse_text(c, values, numbers, where)
                raise InputError(f"column {c!r} is not numeric")


def input_decimals(path, frame: pd.DataFrame, columns) -> dict:
    """{column: the number of decimals of its values as read} of the numeric ``columns`` of
    ``frame``, the table of ``path`` (:mod:`probanon.precision`): of a CSV file the text of its
    values (``12.50``: 2), read again for these columns with the command's CSV options; of
    another format the values themselves."""
    from .precision import decimals, text_decimals

    columns = list(columns)
    if not columns:
        return {}
    if table_format(path) != "csv":
        return {c: decimals(frame[c].to_numpy()) for c in columns}
    options = _CSV_OPTIONS.get()
    encoding = options.get("encoding") or "utf-8"
    with _reading(Path(path), "csv", encoding):
        texts = pd.read_csv(path, sep=options.get("sep") or ",", encoding=encoding, usecols=columns, dtype=str,
                            keep_default_na=False)
    return {c: text_decimals(texts[c]) for c in columns}


#: how a refused missing key names the policy that takes it
MISSING_HINT = "; give --missing pattern (missing='pattern') to group records by the keys they lack"


def quasi_identifiers(frame: pd.DataFrame, columns=None, missing: bool = False, hint: str = "") -> tuple[np.ndarray, list[str]]:
    """The checked float matrix of the chosen quasi-identifier columns and their names
    (``missing``: NaN allowed, see :mod:`probanon.microagg.missing`; ``hint`` ends the message
    of a refused missing value, e.g. :data:`MISSING_HINT` for the commands that take
    ``--missing``)."""
    cols = select_columns(frame, columns)
    return check_matrix(frame[cols], name="data", missing=missing, hint=hint), cols


CONSTANT_RELATIVE_SD = 1e-12


def is_constant(mean, sd) -> np.ndarray:
    """A column is constant when its sd is at rounding level of its magnitude:
    sd <= 1e-12 * max(1, |mean|)."""
    return np.asarray(sd) <= CONSTANT_RELATIVE_SD * np.maximum(1.0, np.abs(mean))


@dataclass(frozen=True)
class Standardizer:
    """Affine z-scoring z = (x - mean_) / scale_ with the population sd (ddof = 0).

    Columns of zero variance get ``scale_ = 1``. The same instance maps fitted data and new
    records bit-for-bit identically, which the published microaggregation functions rely on.
    """

    mean_: np.ndarray
    scale_: np.ndarray

    @classmethod
    def fit(cls, X, weights=None) -> "Standardizer":
        return cls.fit_valid(check_matrix(X), weights)

    @classmethod
    def fit_valid(cls, X: np.ndarray, weights=None) -> "Standardizer":
        """:meth:`fit` of a matrix already checked (finite float64, 2-D): the estimators' path,
        which validated X once at their edge."""
        # Exactly rounded sums (:mod:`probanon.exactsum`, as math.fsum): NumPy's SIMD sums
        # depend on memory alignment in the last bit, and a last bit can decide a tie in MDAV.
        # Same input, same output, also when the sums are made in pieces on a cluster.
        w = None if weights is None else np.asarray(weights, dtype=np.float64)
        total = float(X.shape[0]) if w is None else exact_sums(w)[0]
        mean = exact_sums(X if w is None else w[:, None] * X) / total
        unit = cls.unit(mean, X.min(axis=0), X.max(axis=0))
        dev = (X - mean) / unit
        return cls.from_moments(mean, unit, exact_sums(dev ** 2 if w is None else w[:, None] * dev ** 2) / total)

    @staticmethod
    def unit(mean, low, high) -> np.ndarray:
        """max |x - mean| per column from the column's extremes (rounding is monotone), 1 where
        it is 0: the sd is computed on deviations scaled by it (no overflow near 1e308)."""
        spread = np.maximum(np.abs(low - mean), np.abs(high - mean))
        return np.where(spread > 0, spread, 1.0)

    @classmethod
    def from_moments(cls, mean, unit, mean_square) -> "Standardizer":
        """From the means, the units of :meth:`unit` and the mean squares of (x - mean) / unit."""
        scale = unit * np.sqrt(mean_square)
        return cls(mean_=mean, scale_=np.where(is_constant(mean, scale), 1.0, scale))

    def transform(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=np.float64)
        return (X - self.mean_) / self.scale_

    def inverse_transform(self, Z) -> np.ndarray:
        return np.asarray(Z, dtype=np.float64) * self.scale_ + self.mean_

    def to_dict(self) -> dict:
        return {"mean": self.mean_.tolist(), "scale": self.scale_.tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> "Standardizer":
        return cls(mean_=np.asarray(d["mean"], dtype=np.float64), scale_=np.asarray(d["scale"], dtype=np.float64))


def zscore(X) -> np.ndarray:
    """Z-score the columns of ``X`` (population sd, constant columns only centred)."""
    X = check_matrix(X)
    return Standardizer.fit_valid(X).transform(X)


def synthetic_survey(n: int = 2000, random_state=None) -> pd.DataFrame:
    """Built-in synthetic microdata (no files needed): four quasi-identifiers (age, income,
    household size, weekly hours) and two confidential attributes that depend on them
    (health spending, savings), plus a record id. Seeded: same ``random_state``, same table."""
    from ._validation import check_random_state

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ParameterError(f"the number of records must be a positive integer, got {n!r}")
    rng = check_random_state(random_state)
    age = rng.integers(18, 91, n)
    income = np.round(np.exp(rng.normal(10.2, 0.55, n) + 0.006 * (age - 18)), -1)
    household = np.clip(rng.poisson(1.6, n) + 1, 1, 9)
    hours = np.clip(np.round(rng.normal(38, 9, n) - 0.25 * np.maximum(age - 60, 0)), 0, 80)
    health = np.round(120 + 9.5 * age + 0.004 * income + rng.gamma(2.0, 150, n), 2)
    savings = np.round(np.maximum(0, 0.12 * income - 900 * household + rng.normal(0, 2500, n)), 2)
    return pd.DataFrame({
        "id": np.arange(1, n + 1), "age": age, "income": income, "household": household,
        "hours": hours, "health_spending": health, "savings": savings,
    })

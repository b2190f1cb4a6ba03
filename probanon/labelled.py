"""SPSS (``.sav``) and Stata (``.dta``) tables with their labels, through pyreadstat.

A table read from such a file carries its labels in ``frame.attrs["labels"]``
(:class:`TableLabels`): the file label, the variable (column) labels and the value labels. A
release made from it (:func:`probanon.release.make_release`) carries them on, and a ``.sav`` or
``.dta`` output is written with them:

- variable labels are kept for every released column;
- value labels are kept for a column whose released values are all whole numbers or missing (a
  coded variable: sex 1/2, region 1..17). A key replaced by group means (2.4) has no code any
  more, so its value labels are dropped and the release summary says so; a text column keeps
  the labels of the texts it still holds.

Codes are read as numbers (pyreadstat's ``apply_value_formats=False``), so a coded key is
microaggregated or swapped like any number; missing values (SPSS system-missing, Stata ``.``)
are NaN. Value labels are written with codes of the column's written type (pyreadstat wants
integer codes on an integer column, e.g. a nominal key's released modes).

**User-missing values** (SPSS missing values and ranges, Stata's extended missing ``.a``-``.z``)
are missing values: every method, check and count sees NaN. Each is read as a *tagged* NaN, a NaN
whose payload bits name its code (R's haven does the same, ``tagged_na``): copying and permuting
records keep the tag, any computed value is a plain NaN. So a column released unchanged
(confidential, passed through, a stratum) is written back with its codes and its missing-value
declaration, in the format it was read from (SPSS to SPSS, Stata to Stata); a column a method
changed (a key: its groups release one value, missing for them all) holds plain missing values,
written as system-missing, as is a code in another output format (CSV and Parquet: empty/null).
An SPSS code is kept when it is a whole number of magnitude below 2**41; another code (a fraction
in a missing range) is read as a plain missing value. A user-missing text code is a missing text.

SPSS display formats and measurement levels, and Stata display formats, are kept for the columns
still holding values of the same kind (a fixed number of decimals widened when the released values
need more: ``--decimals``). pyreadstat writes a file in one call, so a ``.sav``/``.dta`` output is
assembled in memory (CSV and Parquet outputs are streamed).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from .errors import InputError

#: key of a frame's labels in ``frame.attrs``
ATTR = "labels"
NAMES = {"spss": "SPSS", "stata": "Stata"}


@dataclass
class TableLabels:
    """The labels of an SPSS/Stata table: ``file_label``, ``column_labels`` ({column: label})
    and ``value_labels`` ({column: {code: label}}); ``kind`` the format read ("spss", "stata"),
    ``missing`` ({column: its user-missing declaration}: SPSS ranges ``{"lo", "hi"}``, Stata
    letters), ``formats`` ({column: display format}) and ``measures`` (SPSS: {column: level})."""

    file_label: str = ""
    column_labels: dict = field(default_factory=dict)
    value_labels: dict = field(default_factory=dict)
    kind: str = ""
    missing: dict = field(default_factory=dict)
    formats: dict = field(default_factory=dict)
    measures: dict = field(default_factory=dict)

    @classmethod
    def from_meta(cls, meta, kind: str = "") -> "TableLabels":
        names = list(meta.column_names)
        labels = dict(zip(names, meta.column_labels or [None] * len(names)))
        declared = {c: list(v) for c, v in {**(meta.missing_ranges or {}), **(meta.missing_user_values or {})}.items()
                    if v}
        return cls(file_label=meta.file_label or "", column_labels={c: v for c, v in labels.items() if v},
                   value_labels={c: dict(v) for c, v in (meta.variable_value_labels or {}).items()}, kind=kind,
                   missing=declared, formats=dict(meta.original_variable_types or {}),
                   measures={c: v for c, v in (meta.variable_measure or {}).items() if v != "unknown"})

    def for_frame(self, frame: pd.DataFrame) -> "TableLabels":
        """The labels that still apply to ``frame``: those of its columns; value labels only
        where every non-missing value is a whole number (or, for text, a labelled text)."""
        values = {}
        for column, codes in self.value_labels.items():
            if column in frame.columns and _still_coded(frame[column], codes):
                values[column] = codes
        keep = lambda d: {c: v for c, v in d.items() if c in frame.columns}  # noqa: E731
        return replace(self, column_labels=keep(self.column_labels), value_labels=values, missing=keep(self.missing),
                       formats=keep(self.formats), measures=keep(self.measures))

    def dropped(self, frame: pd.DataFrame) -> list[str]:
        """Columns of ``frame`` whose value labels no longer apply (see :meth:`for_frame`)."""
        kept = self.for_frame(frame).value_labels
        return [c for c in self.value_labels if c in frame.columns and c not in kept]


def _still_coded(series: pd.Series, codes: dict) -> bool:
    values = series.dropna().to_numpy()
    if values.dtype == object and len(values) and all(isinstance(v, (int, float, np.number)) for v in values):
        values = values.astype(np.float64)  # numbers in an object column (a nominal key's modes)
    if values.dtype.kind in "iub":
        return True
    if values.dtype.kind == "f":
        return bool(np.all(values == np.round(values)))
    return bool(pd.Series(values).isin(list(codes)).all())


#: a tagged NaN (module docstring): a quiet NaN with the marker 0x55 in bits 44-50 of its payload,
#: bit 43 set for a Stata letter, bits 0-42 the code (a letter's ordinal, or an SPSS whole number
#: plus 2**41)
_HEAD, _HEAD_MASK = 0x7FF8_0000_0000_0000 | 0x55 << 44, 0xFFFF_F000_0000_0000
_LETTER, _OFFSET = 1 << 43, 1 << 41


def tagged_missing(codes) -> np.ndarray:
    """Tagged NaNs of user-missing ``codes``: Stata letters ("a".."z") or SPSS whole numbers of
    magnitude below 2**41 (module docstring)."""
    bits = [_HEAD | (_LETTER | ord(c) if isinstance(c, str) else int(c) + _OFFSET) for c in codes]
    return np.array(bits, dtype=np.uint64).view(np.float64)


def missing_codes(values) -> tuple[np.ndarray, np.ndarray]:
    """(which values are tagged NaNs, their codes: letters or numbers, None elsewhere)."""
    x = np.ascontiguousarray(values, dtype=np.float64)
    bits = x.view(np.uint64)
    tagged = (bits & np.uint64(_HEAD_MASK)) == np.uint64(_HEAD)
    codes = np.full(x.shape, None, dtype=object)
    for i in np.flatnonzero(tagged):
        code = int(bits[i]) & (_LETTER | (_LETTER - 1))
        codes[i] = chr(code & 0xFF) if code & _LETTER else float(code - _OFFSET)
    return tagged, codes


def _tag_user_missing(frame: pd.DataFrame, labels: TableLabels) -> pd.DataFrame:
    """``frame`` (read with pyreadstat's ``user_missing=True``) with every user-missing value of
    its numeric columns a tagged NaN, of its text columns a missing text."""
    for c, declared in labels.missing.items():
        column = frame[c]
        if labels.kind == "stata":  # the extended missing values come as their letters
            x = pd.to_numeric(column, errors="coerce").to_numpy(np.float64, copy=True)
            letters = np.isnan(x) & column.notna().to_numpy()
            x[letters] = tagged_missing(column[letters])
            frame[c] = x
        elif pd.api.types.is_numeric_dtype(column):
            x = column.to_numpy(np.float64, copy=True)
            ranges = [(r["lo"], r["hi"]) for r in declared if isinstance(r, dict)]
            ranges += [(r, r) for r in declared if not isinstance(r, dict)]
            user = np.zeros(x.shape, bool)
            for lo, hi in ranges:
                user |= (x >= lo) & (x <= hi)
            kept = user & (x == np.round(x)) & (np.abs(x) < _OFFSET)
            x[user] = np.nan
            x[kept] = tagged_missing(column.to_numpy(np.float64)[kept])
            frame[c] = x
        else:  # text codes: missing texts
            codes = {r["lo"] if isinstance(r, dict) else r for r in declared}
            frame[c] = column.where(~column.isin(codes))
    return frame


def _with_codes(frame: pd.DataFrame, labels: TableLabels, kind: str) -> tuple[pd.DataFrame, dict]:
    """(``frame`` with its tagged NaNs back as their codes, the declarations of the columns that
    hold codes) for an output of ``kind``: only in the format they were read from."""
    if labels.kind != kind:
        return frame, {}
    out, declared = {}, {}
    for c, declaration in labels.missing.items():
        if c not in frame.columns or frame[c].dtype.kind != "f":
            continue
        tagged, codes = missing_codes(frame[c].to_numpy())
        if not tagged.any():
            continue
        values = frame[c].to_numpy(np.float64 if kind == "spss" else object, copy=True)
        values[tagged] = codes[tagged]
        out[c], declared[c] = values, declaration
    return (frame.assign(**out) if out else frame), declared


def _written_value_labels(frame: pd.DataFrame, value_labels: dict, user_missing: dict) -> dict:
    """Value labels with codes of the type pyreadstat writes each column with: a whole code as an
    int (an integer column takes no other), a fraction only on a float column; a Stata letter
    only where the column holds it as a user-missing value; text codes of a text column as
    they are."""
    out = {}
    for c, codes in value_labels.items():
        if not pd.api.types.is_numeric_dtype(frame[c]) and frame[c].dtype != object:
            out[c] = codes
            continue
        floating = frame[c].dtype.kind == "f"
        kept = {}
        for code, label in codes.items():
            if isinstance(code, str):
                if code in user_missing.get(c, ()):
                    kept[code] = label
            elif float(code) == round(float(code)):
                kept[int(round(float(code)))] = label
            elif floating:
                kept[float(code)] = label
        if kept:
            out[c] = kept
    return out


def _written_formats(frame: pd.DataFrame, labels: TableLabels, kind: str) -> dict:
    """The input's display formats of the numeric columns (same format only), with more
    decimals where the released values need them."""
    import re

    from .precision import decimals

    if labels.kind != kind:
        return {}
    out = {}
    for c, fmt in labels.formats.items():
        if c not in frame.columns or not pd.api.types.is_numeric_dtype(frame[c]) or \
                pd.api.types.is_bool_dtype(frame[c]):
            continue
        spss = re.fullmatch(r"(F|COMMA|DOT|DOLLAR|PCT)(\d+)(?:\.(\d+))?", str(fmt))
        stata = re.fullmatch(r"%(-?)(\d+)\.(\d+)([fg])(c?)", str(fmt))
        if kind == "spss" and spss:
            width, places = int(spss[2]), int(spss[3] or 0)
            needed = decimals(frame[c].to_numpy())
            out[c] = fmt if needed <= places else f"{spss[1]}{min(40, _wider(width, places, needed))}.{needed}"
        elif kind == "stata" and stata:
            width, places = int(stata[2]), int(stata[3])
            needed = decimals(frame[c].to_numpy()) if stata[4] == "f" else places
            out[c] = fmt if needed <= places else f"%{stata[1]}{_wider(width, places, needed)}.{needed}f{stata[5]}"
    return out


def _wider(width: int, places: int, needed: int) -> int:
    """The width of a fixed format of ``width`` with ``places`` decimals widened to ``needed``
    decimals (and the decimal point, where there was none)."""
    return width + needed - places + (places == 0)


def labels_of(frame: pd.DataFrame) -> TableLabels | None:
    return frame.attrs.get(ATTR)


def carry_labels(source: pd.DataFrame, target: pd.DataFrame) -> pd.DataFrame:
    """``target`` with the labels of ``source`` (if it has any); returns ``target``."""
    labels = labels_of(source)
    if labels is not None:
        target.attrs[ATTR] = labels
    return target


def _reader(kind: str):
    import pyreadstat

    return pyreadstat.read_sav if kind == "spss" else pyreadstat.read_dta


def read_labelled(path, kind: str, chunk_size: int | None):
    """The table of an SPSS (``kind="spss"``) or Stata (``"stata"``) file as DataFrames of at
    most ``chunk_size`` records (None: one), each with its :class:`TableLabels` in
    ``attrs["labels"]``."""
    import pyreadstat

    read = _reader(kind)
    if chunk_size is None:
        parts = iter([read(str(path), user_missing=True)])
    else:
        parts = pyreadstat.read_file_in_chunks(read, str(path), chunksize=chunk_size, user_missing=True)
    for frame, meta in parts:
        labels = TableLabels.from_meta(meta, kind)
        frame = _tag_user_missing(frame, labels)
        frame.attrs[ATTR] = labels
        yield frame


def write_labelled(frame: pd.DataFrame, path, kind: str, name=None) -> None:
    """Write ``frame`` to ``path`` as SPSS or Stata with the labels that still apply to it
    (:meth:`TableLabels.for_frame`), its user-missing codes, display formats and measurement
    levels (module docstring); ``name``: the output named in errors (default ``path``).
    A table the format cannot hold is a one-line :class:`InputError`."""
    import pyreadstat

    labels = labels_of(frame)
    labels = labels.for_frame(frame) if labels is not None else TableLabels()
    formats = _written_formats(frame, labels, kind) or None
    frame, user_missing = _with_codes(frame, labels, kind)
    value_labels = _written_value_labels(frame, labels.value_labels, user_missing if kind == "stata" else {})
    if kind == "spss":
        measures = (labels.measures or None) if labels.kind == kind else None
        write, options = pyreadstat.write_sav, {"missing_ranges": user_missing or None, "variable_format": formats,
                                                "variable_measure": measures}
    else:
        write, options = pyreadstat.write_dta, {"missing_user_values": user_missing or None, "variable_format": formats}
    try:
        write(frame, str(path), file_label=labels.file_label, column_labels=labels.column_labels or None,
              variable_value_labels=value_labels or None, **options)
    except Exception as exc:  # noqa: BLE001 - pyreadstat's own errors (names, too long texts)
        raise InputError(f"{name or path}: cannot be written as {NAMES[kind]} ({str(exc).splitlines()[0]})") from None


def check_names(path, columns) -> None:
    """Refuse, before any work, an SPSS/Stata output ``path`` whose format cannot hold these
    column names (a space, a leading digit, too long, Stata: a dot): pyreadstat's own rules, by
    writing an empty table of these columns to a temporary folder."""
    import tempfile

    from .formats import table_format

    kind = table_format(path, "output")
    if kind not in NAMES:
        return
    with tempfile.TemporaryDirectory() as folder:
        write_labelled(pd.DataFrame({c: pd.Series(dtype=float) for c in columns}), f"{folder}/names", kind,
                       name=path)


__all__ = ["TableLabels", "carry_labels", "check_names", "labels_of", "missing_codes", "read_labelled",
           "tagged_missing", "write_labelled"]

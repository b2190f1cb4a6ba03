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
are NaN. pyreadstat writes a file in one call, so a ``.sav``/``.dta`` output is assembled in
memory (CSV and Parquet outputs are streamed).
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
    and ``value_labels`` ({column: {code: label}})."""

    file_label: str = ""
    column_labels: dict = field(default_factory=dict)
    value_labels: dict = field(default_factory=dict)

    @classmethod
    def from_meta(cls, meta) -> "TableLabels":
        names = list(meta.column_names)
        labels = dict(zip(names, meta.column_labels or [None] * len(names)))
        return cls(file_label=meta.file_label or "", column_labels={c: v for c, v in labels.items() if v},
                   value_labels={c: dict(v) for c, v in (meta.variable_value_labels or {}).items()})

    def for_frame(self, frame: pd.DataFrame) -> "TableLabels":
        """The labels that still apply to ``frame``: those of its columns; value labels only
        where every non-missing value is a whole number (or, for text, a labelled text)."""
        values = {}
        for column, codes in self.value_labels.items():
            if column in frame.columns and _still_coded(frame[column], codes):
                values[column] = codes
        return replace(self, column_labels={c: v for c, v in self.column_labels.items() if c in frame.columns},
                       value_labels=values)

    def dropped(self, frame: pd.DataFrame) -> list[str]:
        """Columns of ``frame`` whose value labels no longer apply (see :meth:`for_frame`)."""
        kept = self.for_frame(frame).value_labels
        return [c for c in self.value_labels if c in frame.columns and c not in kept]


def _still_coded(series: pd.Series, codes: dict) -> bool:
    values = series.dropna().to_numpy()
    if values.dtype.kind in "iub":
        return True
    if values.dtype.kind == "f":
        return bool(np.all(values == np.round(values)))
    return bool(pd.Series(values).isin(list(codes)).all())


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
        parts = iter([read(str(path))])
    else:
        parts = pyreadstat.read_file_in_chunks(read, str(path), chunksize=chunk_size)
    for frame, meta in parts:
        frame.attrs[ATTR] = TableLabels.from_meta(meta)
        yield frame


def write_labelled(frame: pd.DataFrame, path, kind: str, name=None) -> None:
    """Write ``frame`` to ``path`` as SPSS or Stata with the labels that still apply to it
    (:meth:`TableLabels.for_frame`); ``name``: the output named in errors (default ``path``).
    A table the format cannot hold is a one-line :class:`InputError`."""
    import pyreadstat

    labels = labels_of(frame)
    labels = labels.for_frame(frame) if labels is not None else TableLabels()
    write = pyreadstat.write_sav if kind == "spss" else pyreadstat.write_dta
    try:
        write(frame, str(path), file_label=labels.file_label, column_labels=labels.column_labels or None,
              variable_value_labels=labels.value_labels or None)
    except Exception as exc:  # noqa: BLE001 - pyreadstat's own errors (names, too long texts)
        raise InputError(f"{name or path}: cannot be written as {NAMES[kind]} ({str(exc).splitlines()[0]})") from None


def check_names(path, columns) -> None:
    """Refuse, before any work, an SPSS/Stata output ``path`` whose format cannot hold these
    column names (a space, a leading digit, too long, Stata: a dot): pyreadstat's own rules, by
    writing an empty table of these columns to a temporary folder."""
    import tempfile

    from .outputs import table_format

    kind = table_format(path, "output")
    if kind not in NAMES:
        return
    with tempfile.TemporaryDirectory() as folder:
        write_labelled(pd.DataFrame({c: pd.Series(dtype=float) for c in columns}), f"{folder}/names", kind,
                       name=path)


__all__ = ["TableLabels", "carry_labels", "check_names", "labels_of", "read_labelled", "write_labelled"]

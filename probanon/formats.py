"""Table formats by file ending: the one place that tells what a path holds (read by
:mod:`.data`, written by :mod:`.outputs` and :mod:`.labelled`)."""

from __future__ import annotations

from pathlib import Path

from .errors import InputError

#: table formats by file ending (longest ending first); ``.csv.gz`` is gzip-compressed CSV; SPSS
#: and Stata files keep their labels (:mod:`.labelled`)
TABLE_FORMATS = {".csv.gz": "csv", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".sav": "spss",
                 ".dta": "stata"}


def table_format(path, what: str = "file") -> str:
    """``"csv"``, ``"parquet"``, ``"spss"`` or ``"stata"`` by the file's ending; :class:`InputError`
    otherwise."""
    name = Path(path).name.lower()
    for ending, kind in TABLE_FORMATS.items():
        if name.endswith(ending):
            return kind
    endings = ", ".join(TABLE_FORMATS)
    raise InputError(f"{path}: unknown {what} type {Path(path).suffix!r} (use {endings})")

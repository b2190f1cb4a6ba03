"""Example data sets shipped with probanon: the public CASC files as sdcMicro ships them
(``census``, ``tarragona``, ``eia``) and UCI Adult (``adult``, gzip-compressed in the package).

>>> from probanon import datasets
>>> datasets.names()
['census', 'tarragona', 'eia', 'adult']
>>> census = datasets.load("census")        # a DataFrame, 1080 x 13

``probanon datasets -o DIR`` writes them out as CSV files (``census.csv``, ..., ``adult.csv``).
They are packaged at build time from ``../shared/data`` (:mod:`.sources`); a package built
without it (an sdist unpacked elsewhere) has none, and every function here says so.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from ..errors import InputError, ParameterError
from .sources import DATASETS, FOLDER

__all__ = ["names", "describe", "path", "load", "content", "file_name", "reference_file"]


def names() -> list[str]:
    """The data sets' names, in a fixed order."""
    return list(DATASETS)


def _entry(name: str) -> tuple:
    if name not in DATASETS:
        raise ParameterError(f"unknown data set {name!r} (choose from {', '.join(DATASETS)})")
    return DATASETS[name]


def describe(name: str) -> str:
    """One line: the data set's size and origin."""
    _, _, (records, columns), text = _entry(name)
    return f"{records:,} records x {columns} columns; {text}"


def file_name(name: str) -> str:
    """The name of the data set written out as CSV (``adult.csv``: uncompressed)."""
    return f"{name}.csv"


def path(name: str) -> Path:
    """The packaged file (``adult``: ``adult.csv.gz``); :class:`InputError` when this
    installation has no data sets."""
    target = FOLDER / _entry(name)[1]
    if not target.is_file():
        raise InputError(f"the example data set {name!r} is not in this installation of probanon ({target} is "
                         "missing): the package was built without ../shared/data beside its source; build or "
                         "install it from a clone with ../shared beside it")
    return target


def reference_file(folder, name: str) -> Path:
    """The file of data set ``name``: in ``folder`` laid out as ``../shared/data``
    (``casc/census.csv``, ``adult/adult.csv``) when one is given, else the packaged file (which
    may be absent: check ``is_file()``). The reproductions' ``data_dir`` (``--data-dir``)."""
    relative, packaged = _entry(name)[:2]
    return Path(folder) / relative if folder is not None else FOLDER / packaged


def content(name: str) -> bytes:
    """The data set as CSV bytes, exactly the reference file (``adult``: decompressed)."""
    target = path(name)
    return gzip.decompress(target.read_bytes()) if target.name.endswith(".gz") else target.read_bytes()


def load(name: str):
    """The data set as a pandas DataFrame, read as ``probanon`` reads any table
    (:func:`probanon.data.read_table`)."""
    from ..data import read_table

    return read_table(path(name))

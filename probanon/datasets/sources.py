"""The example data sets and where a build takes them from (standard library only: ``setup.py``
and the Makefile run this file by its path, before probanon's dependencies are installed).

The files are the public reference data in ``../shared/data`` beside the source tree (see its
README): they are never committed to the repository. A build (``pip install``, ``pip wheel``,
``make``) copies them into ``probanon/datasets/data/`` (ignored by git), the Adult file
gzip-compressed, and the wheel ships them as package data. A build without ``../shared`` beside
it makes a package without them, which :mod:`probanon.datasets` reports clearly.

``python probanon/datasets/sources.py SHARED_DATA``: copy what is missing or out of date, quietly.
"""

from __future__ import annotations

import gzip
import os
import shutil
import sys
from pathlib import Path

#: name: (file under ../shared/data, packaged file, records x columns, description)
DATASETS = {
    "census": ("casc/census.csv", "census.csv", (1080, 13),
               "CASC reference microdata 'Census' (sdcMicro's CASCrefmicrodata), all integer"),
    "tarragona": ("casc/tarragona.csv", "tarragona.csv", (834, 13),
                  "CASC 'Tarragona' (sdcMicro's Tarragona), all integer"),
    "eia": ("casc/eia.csv", "eia.csv", (4092, 15),
            "CASC 'EIA' (sdcMicro's EIA): 5 identifiers/categorical columns, 10 continuous"),
    "adult": ("adult/adult.csv", "adult.csv.gz", (48842, 15),
              "UCI Adult, training + test rows; missing values are the string '?'"),
}

#: the packaged folder, beside this file
FOLDER = Path(__file__).resolve().parent / "data"


def up_to_date(source: Path, target: Path) -> bool:
    """The packaged ``target`` was made from ``source`` as it is now (same modification time,
    which :func:`populate` copies over)."""
    return target.is_file() and int(target.stat().st_mtime) == int(source.stat().st_mtime)


def populate(shared, folder=FOLDER) -> list[str]:
    """Copy each data set from ``shared`` (``../shared/data``) into ``folder`` unless it is up to
    date there; ``.gz`` targets are compressed (reproducibly: no name, time 0 in the header).
    Each file is written to a temporary name, then renamed. Returns the names copied."""
    shared, folder = Path(shared), Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    copied = []
    for name, (relative, packaged, _, _) in DATASETS.items():
        source, target = shared / relative, folder / packaged
        if not source.is_file() or up_to_date(source, target):
            continue
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        with open(source, "rb") as src:
            if packaged.endswith(".gz"):
                with open(tmp, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
                    shutil.copyfileobj(src, out)
            else:
                with open(tmp, "wb") as out:
                    shutil.copyfileobj(src, out)
        stat = source.stat()
        os.utime(tmp, (stat.st_atime, stat.st_mtime))
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
        copied.append(name)
    return copied


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit(f"usage: {sys.argv[0]} SHARED_DATA_FOLDER (an existing folder)")
    populate(sys.argv[1])

"""The one writer of probanon: every file a command writes goes through :class:`Outputs`.

Before any work starts, :class:`Outputs` checks every path the command will write:

- an output is never one of the inputs: the same path, a symbolic link or a hard link to an input
  (compared with :func:`os.path.samefile`, i.e. device and inode, and by resolved path) is refused,
  with or without ``force``;
- an existing output is refused unless ``force`` (``--force`` in the CLI);
- the output's folder exists, the output is not a folder, a table output has a known format, and
  no two outputs are the same file.

At the end :meth:`Outputs.write` writes every output or none: each goes to a temporary file in
its folder first, and only when all are written are they renamed into place.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from .errors import InputError

#: table formats by file ending (longest ending first); ``.csv.gz`` is gzip-compressed CSV
TABLE_FORMATS = {".csv.gz": "csv", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


def table_format(path, what: str = "file") -> str:
    """``"csv"`` or ``"parquet"`` by the file's ending; :class:`InputError` otherwise."""
    name = Path(path).name.lower()
    for ending, kind in TABLE_FORMATS.items():
        if name.endswith(ending):
            return kind
    endings = ", ".join(TABLE_FORMATS)
    raise InputError(f"{path}: unknown {what} type {Path(path).suffix!r} (use {endings})")


def same_file(a, b) -> bool:
    """True when ``a`` and ``b`` name one file: same path, a link to it (symbolic or hard)."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): compare where they point
        return os.path.realpath(a) == os.path.realpath(b)


def check_output(path, inputs=(), force: bool = False, table: bool = False) -> Path:
    """Check one output path (see the module docstring); return it as a :class:`Path`."""
    path = Path(path)
    for source in inputs:
        if source is not None and same_file(path, source):
            raise InputError(f"{path}: the output would overwrite the input {source}; choose another output")
    if path.is_dir():
        raise InputError(f"{path}: is a folder, not a file")
    if table:
        table_format(path, "output")
    folder = path.parent
    if not folder.is_dir():
        raise InputError(f"{path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{path}: the folder {folder} is not writable")
    if (path.exists() or path.is_symlink()) and not force:
        raise InputError(f"{path}: exists already (give --force to overwrite it)")
    return path


def check_output_folder(folder, names=(), force: bool = False) -> Path:
    """Check a folder a command writes its files ``names`` into: not an existing file; when it
    exists, none of ``names`` exists in it unless ``force``. The folder is created at write time."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: is a file, not a folder")
    parent = next((p for p in [folder, *folder.parents] if p.exists()), Path("."))
    if not parent.is_dir() or not os.access(parent, os.W_OK):
        raise InputError(f"{folder}: cannot be created ({parent} is not a writable folder)")
    if not force:
        present = [n for n in names if (folder / n).exists()]
        if present:
            raise InputError(f"{folder / present[0]}: exists already (give --force to overwrite it)")
    return folder


class Outputs:
    """The files one command writes, checked as they are declared (:meth:`add`) and written all
    or nothing. ``inputs``: every file the command reads; ``force``: existing outputs may be
    replaced (inputs never)."""

    def __init__(self, inputs=(), force: bool = False):
        self.inputs = [Path(p) for p in inputs if p is not None]
        self.force = bool(force)
        self.files: list[Path] = []

    def add(self, path, table: bool = False) -> Path:
        """Declare (and check) one more output; ``table``: it must have a table format."""
        path = Path(path)
        for other in self.files:
            if same_file(path, other):
                raise InputError(f"{path}: named twice as an output")
        check_output(path, self.inputs, self.force, table=table)
        self.files.append(path)
        return path

    def write(self, contents: dict) -> None:
        """Write ``contents`` ({path: DataFrame | str | bytes}); every path must have been
        declared. Checked again (an output may have appeared meanwhile), then all or nothing."""
        undeclared = [p for p in contents if Path(p) not in self.files]
        if undeclared:
            raise RuntimeError(f"output {undeclared[0]} was not declared")  # a bug, not bad input
        for path in contents:
            check_output(path, self.inputs, self.force, table=isinstance(contents[path], pd.DataFrame))
        write_outputs(contents)


def write_outputs(outputs: dict) -> None:
    """Write every output or none: ``outputs`` maps a path to a DataFrame (CSV, ``.csv.gz`` or
    Parquet by ending, without the index), text or bytes. All are written to temporary files
    first, then renamed; any failure removes the temporaries and raises :class:`InputError`
    with one line. Commands go through :class:`Outputs`, which checks the paths first."""
    staged = []
    path = None
    try:
        for path, content in outputs.items():
            path = Path(path)
            kind = table_format(path, "output") if isinstance(content, pd.DataFrame) else None
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            staged.append((tmp, path))
            if kind == "csv":
                content.to_csv(tmp, index=False, compression="gzip" if path.name.lower().endswith(".gz") else None)
            elif kind == "parquet":
                content.to_parquet(tmp, index=False)
            elif isinstance(content, bytes):
                tmp.write_bytes(content)
            else:
                tmp.write_text(content)
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        for tmp, _ in staged:
            if tmp.exists():
                tmp.unlink()

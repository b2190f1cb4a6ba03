"""The one writer of probanon: every file a command writes goes through :class:`Outputs`.

Before any work starts, :class:`Outputs` checks every path the command will write:

- an output is never one of the inputs: the same path, a symbolic link or a hard link to an input
  (compared with :func:`os.path.samefile`, i.e. device and inode, and by resolved path) is refused,
  with or without ``force``;
- an existing output is refused unless ``force`` (``--force`` in the CLI);
- the output's folder exists, the output is not a folder, a table output has a known format, and
  no two outputs are the same file.

At the end :meth:`Outputs.write` writes every output or none: each goes to a temporary file in
its folder first, and only when all are written are they renamed into place. A table too large
for memory is written chunk by chunk (:class:`TableWriter`, in any record order with
:class:`OrderedTableWriter`) into its temporary file, which :meth:`Outputs.write` then renames
with the others.
"""

from __future__ import annotations

import gzip
import os
import pickle
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import InputError
from .formats import TABLE_FORMATS, table_format  # noqa: F401 - where outputs and data name them

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
    """Check a folder a command writes its files ``names`` into: not an existing file; the folder
    it lies in exists, as for a file output (:func:`check_output`); when it exists, none of
    ``names`` exists in it unless ``force``. The folder itself is created at write time."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise InputError(f"{folder}: is a file, not a folder")
    parent = folder if folder.is_dir() else folder.parent
    if not parent.is_dir():
        raise InputError(f"{folder}: the folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
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
        self.folders: list[Path] = []  # folders whose files are named when written (reports)

    def add(self, path, table: bool = False) -> Path:
        """Declare (and check) one more output; ``table``: it must have a table format."""
        path = Path(path)
        for other in self.files:
            if same_file(path, other):
                raise InputError(f"{path}: named twice as an output")
        check_output(path, self.inputs, self.force, table=table)
        self.files.append(path)
        return path

    def add_folder(self, folder) -> Path:
        """Declare a folder (checked by :func:`check_output_folder` beforehand) whose files are
        named only when written; its missing subfolders are created then."""
        self.folders.append(Path(folder))
        return Path(folder)

    def write(self, contents: dict) -> None:
        """Write ``contents`` ({path: DataFrame | str | bytes}); every path must have been
        declared, or lie in a declared folder. Checked again (an output may have appeared
        meanwhile), then all or nothing: the folders created for them are removed on failure."""
        inside = lambda p: any(f == Path(p).parent or f in Path(p).parents for f in self.folders)  # noqa: E731
        undeclared = [p for p in contents if Path(p) not in self.files and not inside(p)]
        if undeclared:
            raise RuntimeError(f"output {undeclared[0]} was not declared")  # a bug, not bad input
        created = []
        try:
            for folder in sorted({Path(p).parent for p in contents if inside(p)}, key=lambda p: len(p.parts)):
                for part in [*reversed(folder.parents), folder]:
                    if not part.exists():
                        part.mkdir()
                        created.append(part)
            for path in contents:
                check_output(path, self.inputs, self.force,
                             table=isinstance(contents[path], (pd.DataFrame, TableWriter)))
            write_outputs(contents)
        except BaseException:
            for folder in reversed(created):
                folder.rmdir()
            raise


def write_outputs(outputs: dict) -> None:
    """Write every output or none: ``outputs`` maps a path to a DataFrame (CSV, ``.csv.gz`` or
    Parquet by ending, without the index), text, bytes or a :class:`TableWriter` of that path
    (already written). All are written to temporary files first, then renamed; any failure
    removes the temporaries and raises :class:`InputError` with one line. Commands go through
    :class:`Outputs`, which checks the paths first."""
    staged = []
    path = None
    try:
        for path, content in outputs.items():
            path = Path(path)
            tmp = _temporary(path)
            staged.append((tmp, path))
            if isinstance(content, pd.DataFrame):
                TableWriter(path).append(content).close()
            elif isinstance(content, TableWriter):
                content.close()
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
        for content in outputs.values():
            if isinstance(content, TableWriter):
                content.discard()  # its temporaries (an ordered writer's buckets)


def _temporary(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


class TableWriter:
    """One table output written chunk by chunk (:meth:`append`, in order) into a temporary file
    beside ``path``: CSV (gzip-compressed for ``.csv.gz``) with one header line, Parquet through
    one ``pyarrow.parquet.ParquetWriter`` (the schema of the first chunk). The same file as
    writing the concatenated chunks at once (Parquet: the same table, in one row group per
    chunk). SPSS and Stata: the chunks are kept and written in one call at :meth:`close`, with
    the labels of the first (:func:`.labelled.write_labelled`). :meth:`Outputs.write` renames
    it into place; :meth:`discard` (also on leaving a ``with`` block by an exception) removes
    it. ``total``: the records it will hold, when known (the total its ``progress`` reports)."""

    def __init__(self, path, total: int | None = None):
        self.path = Path(path)
        self.kind = table_format(self.path, "output")
        self.tmp = _temporary(self.path)
        self._file = self._parquet = self._schema = None
        self._frames = []  # SPSS/Stata: the chunks, written at close
        # progress: None or called as progress("writing", records written, total) (probanon.progress)
        self.records, self.total, self.progress = 0, total, None

    def place(self, frame: pd.DataFrame, positions) -> None:
        """Append ``frame``, whose records are at ``positions`` of the table: the next ones."""
        if not np.array_equal(positions, np.arange(self.records, self.records + len(frame))):
            raise RuntimeError("records out of order: use an OrderedTableWriter")  # a bug, not bad input
        self.append(frame)

    def append(self, frame: pd.DataFrame) -> "TableWriter":
        if self.kind == "csv":
            header = self._file is None
            if header:
                gz = self.path.name.lower().endswith(".gz")
                self._file = (gzip.open if gz else open)(self.tmp, "wt", encoding="utf-8", newline="")
            frame.to_csv(self._file, index=False, header=header)
        elif self.kind in ("spss", "stata"):
            self._frames.append(frame)
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False, schema=self._schema)
            if self._parquet is None:
                self._schema = table.schema
                self._parquet = pq.ParquetWriter(self.tmp, self._schema)
            self._parquet.write_table(table)
        self.records += len(frame)
        if self.progress is not None:
            self.progress("writing", self.records, self.total)
        return self

    def close(self) -> Path:
        """Finish the temporary file and return its path."""
        if self._frames:
            from .labelled import carry_labels, write_labelled

            frames, self._frames = self._frames, []
            whole = carry_labels(frames[0], pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])
            write_labelled(whole, self.tmp, self.kind, name=self.path)
        for handle in (self._file, self._parquet):
            if handle is not None:
                handle.close()
        self._file = self._parquet = None
        return self.tmp

    def discard(self) -> None:
        self._frames = []
        self.close()
        if self.tmp.exists():
            self.tmp.unlink()

    def __enter__(self):
        return self

    def __exit__(self, kind, *exc) -> None:
        if kind is not None:
            self.discard()


class OrderedTableWriter(TableWriter):
    """A table of ``n`` records whose chunks arrive in another order: :meth:`place` takes a chunk
    and the positions (0..n-1) of its records in the table. An external shuffle with bounded
    memory: each chunk is split over buckets of ``bucket`` consecutive positions (temporary
    files in a folder beside the output), and :meth:`close` appends each bucket, sorted, to the
    table; memory of one chunk or one bucket, disk of one more table."""

    def __init__(self, path, n: int, bucket: int):
        super().__init__(path, n)
        self.n, self.bucket = int(n), int(bucket)
        self.folder = Path(tempfile.mkdtemp(prefix=f".{self.path.name}.", dir=self.path.parent))

    def place(self, frame: pd.DataFrame, positions) -> None:
        positions = np.asarray(positions, dtype=np.int64)
        buckets = positions // self.bucket
        order = np.argsort(buckets, kind="stable")
        starts = np.flatnonzero(np.diff(buckets[order], prepend=-1))
        for part in np.split(order, starts[1:]):
            with open(self.folder / str(buckets[part[0]]), "ab") as fh:
                pickle.dump((positions[part], frame.iloc[part]), fh, protocol=pickle.HIGHEST_PROTOCOL)

    def close(self) -> Path:
        if self.folder is not None:
            for b in range(-(-self.n // self.bucket)):
                positions, frames = [], []
                with open(self.folder / str(b), "rb") as fh:
                    while fh.peek(1):
                        where, part = pickle.load(fh)
                        positions.append(where)
                        frames.append(part)
                positions = np.concatenate(positions)
                order = np.argsort(positions)
                expected = np.arange(b * self.bucket, min(self.n, (b + 1) * self.bucket))
                if not np.array_equal(positions[order], expected):
                    raise RuntimeError(f"bucket {b}: positions are not a permutation")  # a bug, not bad input
                self.append(pd.concat(frames).iloc[order].reset_index(drop=True))
            shutil.rmtree(self.folder)
            self.folder = None
        return super().close()

    def discard(self) -> None:
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self.folder = None
        super().discard()

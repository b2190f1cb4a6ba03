"""The checks of a published function read from JSON (:func:`.function.function_from_json`,
the ``from_dict`` and ``read`` of :mod:`.rules`): arrays, sizes, tree nodes, cell ranges, the
released values of categorical keys. Each failure is one :class:`SpecificationError` line."""

from __future__ import annotations

import numpy as np

from ..errors import SpecificationError

_MAX_CELLS = 2**62  # no bound on the cells of a rule nested in another


def _array(d: dict, key: str, ndim: int, width: int | None = None) -> np.ndarray:
    try:
        a = np.asarray(d[key], dtype=np.float64)
    except KeyError:
        raise SpecificationError(f"function: missing {key!r}") from None
    except (TypeError, ValueError):
        raise SpecificationError(f"function: {key!r} is not numeric") from None
    if ndim == 2 and a.size == 0 and width is not None:
        a = a.reshape(0, width)  # e.g. no balls: a single group
    if a.ndim != ndim or (width is not None and a.shape[-1] != width):
        raise SpecificationError(f"function: {key!r} has the wrong shape {a.shape}")
    if not np.isfinite(a).all():
        raise SpecificationError(f"function: {key!r} contains NaN or infinity")
    return a


def _sizes(values) -> np.ndarray:
    """Declared cell sizes: non-negative integers."""
    try:
        a = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise SpecificationError("function: 'sizes' must be integers") from None
    if a.ndim != 1 or not np.isfinite(a).all() or (a < 0).any() or (a != np.round(a)).any():
        raise SpecificationError("function: 'sizes' must be non-negative integers")
    return a.astype(np.int64)


def _index(node: dict, key: str, low: int, high: int) -> int:
    value = node.get(key)
    if type(value) is not int or not low <= value < high:
        raise SpecificationError(f"function: tree node {key!r} must be an integer in {low}..{high - 1}")
    return value


def _children(node: dict, i: int, parents: list) -> tuple[int, int]:
    """The ``left`` and ``right`` nodes of split node i (indices above i), counted in ``parents``."""
    left, right = _index(node, "left", i + 1, len(parents)), _index(node, "right", i + 1, len(parents))
    parents[left] += 1
    parents[right] += 1
    return left, right


def _one_tree(parents: list, what: str) -> None:
    if any(count != 1 for count in parents[1:]):
        raise SpecificationError(f"function: {what} nodes must form one tree (each node but 0 the child of one node)")


def _tiled(ranges: list, n_cells: int | None, what: str) -> None:
    """The cell ranges [offset, offset + cells) of nested rules tile 0..n_cells-1 once (``n_cells``
    None: up to where they reach)."""
    ranges = sorted(ranges)
    end = ranges[-1][1] if n_cells is None else n_cells
    if ranges[0][0] != 0 or ranges[-1][1] != end or any(a[1] != b[0] for a, b in zip(ranges, ranges[1:])):
        raise SpecificationError(f"function: {what} (offset + their cells) must tile the cells once")


def _mixed_centroids(rows, encoding) -> np.ndarray:
    """The released values of a function with categorical keys: one row per cell, a finite
    number per numeric key and one of its levels per categorical key."""
    p = len(encoding.columns)
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) and len(r) == p for r in rows):
        raise SpecificationError(f"function: 'centroids' must list {p} values per cell")
    out = np.empty((len(rows), p), dtype=object)
    for j, c in enumerate(encoding.columns):
        levels = encoding.levels(c)
        column = [r[j] for r in rows]
        ok = all(v in levels for v in column) if levels is not None else all(
            type(v) in (int, float) and np.isfinite(v) for v in column)
        if not ok:
            raise SpecificationError(f"function: the centroids of key {c!r} must be " +
                                     ("its categories" if levels is not None else "finite numbers"))
        out[:, j] = column
    return out

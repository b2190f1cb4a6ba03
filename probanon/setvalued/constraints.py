"""Generalization constraints for set-valued data (paper 5, Section V-C; issue 7 item 5).

A generalization is a global recoding: a partition R of the items, every item replaced by its part.
The constraints C say which parts are permitted:

* a **hierarchy** (CSV ``child,parent``): the items are its leaves; a permitted part is a single
  item or the set of leaves below one node (full-subtree recoding);
* an **adjacency graph** (CSV of edges): a permitted part is connected in the graph;
* **item coordinates**: the graph of the Voronoi cells of the items clipped to the bounding region
  (two cells are adjacent when they share an edge or only a point), so that "the voronoi polygons of
  all towers within a partition must constitute a single contiguous polygon" (paper, Section V-C).

The error of a partition (paper, Section V-C) is the occurrence-weighted distance of each item to
the centre of its part, see :func:`partition_error`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import row_label
from ..data import read_table
from ..errors import InputError, ParameterError


@dataclass(frozen=True)
class GeneralizationConstraints:
    """Which items may be merged into one part.

    ``items[i]`` is the label of item i (``str``); ``indptr``/``indices`` the symmetric adjacency
    in CSR form (int64/int32, sorted neighbours, no self-loops). ``coordinates`` (n, 2) are the item
    positions if known; ``centroids`` the centroid of each item's clipped Voronoi cell where cells
    exist, else its coordinates; ``areas`` the cell areas (None without cells); ``cells`` the cell
    polygons (counter-clockwise vertex arrays). For a hierarchy, ``parent`` gives the parent node of
    each node (nodes 0..n-1 are the items, then the inner nodes ``node_labels``; -1 at a root) and the
    adjacency links the items with the same parent.
    """

    kind: str  # "hierarchy", "adjacency" or "coordinates"
    items: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    coordinates: np.ndarray | None = None
    centroids: np.ndarray | None = None
    areas: np.ndarray | None = None
    cells: tuple | None = None
    bounds: tuple | None = None
    parent: np.ndarray | None = None
    node_labels: np.ndarray | None = None

    @property
    def n_items(self) -> int:
        return len(self.items)

    def neighbours(self, i: int) -> np.ndarray:
        return self.indices[self.indptr[i]:self.indptr[i + 1]]

    def index(self) -> dict:
        """Item label -> item id."""
        return {label: i for i, label in enumerate(self.items)}


# ---------------------------------------------------------------------------------------- helpers

def _read_two_columns(source, what: str, names: tuple[str, str] | None) -> pd.DataFrame:
    frame = source if isinstance(source, pd.DataFrame) else read_table(source, text=True)
    if names is not None:
        missing = [c for c in names if c not in frame.columns]
        if missing:
            raise InputError(f"the {what} needs columns {','.join(names)}; {missing[0]!r} is missing")
        frame = frame[list(names)]
    elif frame.shape[1] < 2:
        raise InputError(f"the {what} needs two columns (one edge a row), got {frame.shape[1]}")
    else:
        frame = frame.iloc[:, :2]
    if len(frame) == 0:
        raise InputError(f"the {what} is empty")
    frame = frame.astype(str).apply(lambda c: c.str.strip())
    if (frame == "").to_numpy().any():
        row = int(np.flatnonzero((frame == "").to_numpy().any(axis=1))[0])
        raise InputError(f"the {what} has an empty field ({row_label(frame, row)})")
    return frame


def _csr_from_pairs(a: np.ndarray, b: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric CSR (no self-loops, no duplicates, sorted rows) from undirected pairs."""
    keep = a != b
    a, b = np.concatenate([a[keep], b[keep]]), np.concatenate([b[keep], a[keep]])
    key = np.unique(a.astype(np.int64) * n + b)
    rows, cols = key // n, key % n
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=n), out=indptr[1:])
    return indptr, cols.astype(np.int32)


def _check_items(items, known: dict, what: str, inner=()) -> None:
    """The items of the data and those of the constraints (``known``) must be the same: an item
    on one side only is an :class:`InputError` naming it (``inner``: inner hierarchy nodes)."""
    data = {str(i) for i in items}
    for item in items:
        if str(item) not in known:
            where = "is an inner node of" if str(item) in inner else "is not in"
            raise InputError(f"item {str(item)!r} of the data {where} the {what}")
    for label in known:
        if label not in data:
            raise InputError(f"item {label!r} of the {what} is not in the data")


def _aligned_coordinates(coordinates, labels: np.ndarray) -> np.ndarray:
    """Coordinates aligned with ``labels``: an (n, 2) array in that order or a mapping label -> (x, y)."""
    if isinstance(coordinates, dict):
        missing = [lab for lab in labels if lab not in coordinates]
        if missing:
            raise InputError(f"item {missing[0]!r} has no coordinates")
        coordinates = [coordinates[lab] for lab in labels]
    xy = np.asarray(coordinates, dtype=float)
    if xy.shape != (len(labels), 2):
        raise InputError(f"coordinates must be {len(labels)} pairs (x, y), got shape {xy.shape}")
    if not np.isfinite(xy).all():
        raise InputError("coordinates must be finite numbers")
    return xy


# -------------------------------------------------------------------------------------- hierarchy

def constraints_from_hierarchy(source, items=None, coordinates=None) -> GeneralizationConstraints:
    """Constraints from a hierarchy, a CSV (or DataFrame) with columns ``child,parent``.

    The items are the leaves (children that are never a parent). ``items`` (optional) are the items
    of the data: they must be exactly the leaves (a data item that is not a leaf, or a leaf that is
    not in the data, is an :class:`InputError` naming it). A node with two parents or a cycle is
    an error. ``coordinates`` (optional, aligned with the leaves in order of first appearance or a
    mapping label -> (x, y)) give the positions used by :func:`partition_error`.
    """
    frame = _read_two_columns(source, "hierarchy", ("child", "parent"))
    child, par = frame["child"].to_numpy(), frame["parent"].to_numpy()
    dup = pd.Series(child)[pd.Series(child).duplicated()]
    for c in dup:
        parents = set(par[child == c])
        if len(parents) > 1:
            raise InputError(f"hierarchy node {c!r} has two parents ({', '.join(sorted(parents)[:2])})")
    parents_set = set(par)
    leaves = list(dict.fromkeys(c for c in child if c not in parents_set))
    inner = list(dict.fromkeys([c for c in child if c in parents_set] + list(par)))
    if not leaves:
        raise InputError("the hierarchy has no leaves (every child is also a parent)")
    labels = np.array(leaves + inner, dtype=object)
    node = {lab: i for i, lab in enumerate(labels)}
    parent = np.full(len(labels), -1, dtype=np.int64)
    parent[[node[c] for c in child]] = [node[p] for p in par]
    for start in range(len(labels)):  # cycle check: walk up at most len(labels) steps
        v, steps = start, 0
        while v != -1 and steps <= len(labels):
            v, steps = parent[v], steps + 1
        if v != -1:
            raise InputError(f"the hierarchy has a cycle through {labels[start]!r}")
    n = len(leaves)
    if items is not None:
        _check_items(items, {lab: 0 for lab in leaves}, "hierarchy", set(inner))
    leaf_parent = parent[:n]
    order = np.argsort(leaf_parent, kind="stable")
    groups = np.split(order, np.flatnonzero(np.diff(leaf_parent[order])) + 1)
    a = [np.repeat(g, len(g)) for g in groups if len(g) > 1 and leaf_parent[g[0]] != -1]
    b = [np.tile(g, len(g)) for g in groups if len(g) > 1 and leaf_parent[g[0]] != -1]
    pairs = (np.concatenate(a), np.concatenate(b)) if a else (np.empty(0, np.int64), np.empty(0, np.int64))
    indptr, indices = _csr_from_pairs(*pairs, n)
    xy = None if coordinates is None else _aligned_coordinates(coordinates, labels[:n])
    return GeneralizationConstraints("hierarchy", labels[:n], indptr, indices, coordinates=xy, centroids=xy,
                                     parent=parent, node_labels=labels[n:])


def hierarchy_cover(part, constraints: GeneralizationConstraints) -> np.ndarray:
    """The leaves below the lowest hierarchy node containing every item of ``part`` (the smallest
    permitted part containing it); all items when the part spans several roots."""
    if constraints.parent is None:
        raise ParameterError("hierarchy_cover needs hierarchy constraints")
    parent, n = constraints.parent, constraints.n_items
    part = np.unique(np.asarray(part, dtype=np.int64))
    if len(part) == 1:
        return part

    def ancestors(v):
        path = [v]
        while parent[v] != -1:
            v = parent[v]
            path.append(v)
        return path

    common = ancestors(int(part[0]))
    for v in part[1:]:
        up = set(ancestors(int(v)))
        common = [u for u in common if u in up]
        if not common:
            return np.arange(n)
    lca = common[0]
    below = np.zeros(n, dtype=bool)
    for leaf in range(n):
        v = leaf
        while v != -1 and v != lca:
            v = parent[v]
        below[leaf] = v == lca
    return np.flatnonzero(below)


# -------------------------------------------------------------------------------------- adjacency

def constraints_from_adjacency(source, items=None, coordinates=None) -> GeneralizationConstraints:
    """Constraints from an adjacency graph, a CSV (or DataFrame) whose first two columns are the
    endpoints of one undirected edge a row (a header row is expected). The items are the endpoints
    in order of first appearance; ``items`` (optional, the items of the data) must be exactly the
    endpoints (an item on one side only is an :class:`InputError` naming it). ``coordinates`` as in :func:`constraints_from_hierarchy`."""
    frame = _read_two_columns(source, "adjacency graph", None)
    ends = frame.to_numpy()
    labels = np.array(list(dict.fromkeys(ends.ravel())), dtype=object)
    node = {lab: i for i, lab in enumerate(labels)}
    if items is not None:
        _check_items(items, node, "adjacency graph")
    a = np.array([node[v] for v in ends[:, 0]], dtype=np.int64)
    b = np.array([node[v] for v in ends[:, 1]], dtype=np.int64)
    indptr, indices = _csr_from_pairs(a, b, len(labels))
    xy = None if coordinates is None else _aligned_coordinates(coordinates, labels)
    return GeneralizationConstraints("adjacency", labels, indptr, indices, coordinates=xy, centroids=xy)


# ------------------------------------------------------------------------------------ coordinates

def _clip_halfplane(poly: np.ndarray, normal: np.ndarray, offset: float) -> np.ndarray:
    """Sutherland-Hodgman: the part of convex ``poly`` with ``normal . z <= offset``."""
    if len(poly) == 0:
        return poly
    side = poly @ normal - offset
    inside = side <= 0
    if inside.all():
        return poly
    if not inside.any():
        return poly[:0]
    out = []
    for k in range(len(poly)):
        cur, nxt = poly[k], poly[(k + 1) % len(poly)]
        sc, sn = side[k], side[(k + 1) % len(poly)]
        if sc <= 0:
            out.append(cur)
        if (sc <= 0) != (sn <= 0):
            out.append(cur + (nxt - cur) * (sc / (sc - sn)))
    return np.array(out)


def polygon_area_centroid(poly: np.ndarray) -> tuple[float, np.ndarray]:
    """Shoelace formula: ``A = 1/2 sum (x_k y_{k+1} - x_{k+1} y_k)``,
    ``C = 1/(6A) sum (z_k + z_{k+1}) (x_k y_{k+1} - x_{k+1} y_k)`` (counter-clockwise polygon)."""
    x, y = poly[:, 0], poly[:, 1]
    x1, y1 = np.roll(x, -1), np.roll(y, -1)
    cross = x * y1 - x1 * y
    area = cross.sum() / 2
    if area <= 0:
        return 0.0, poly.mean(axis=0)
    return float(area), np.array([((x + x1) * cross).sum(), ((y + y1) * cross).sum()]) / (6 * area)


def clipped_voronoi(points, bounds=None) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """Voronoi cells of ``points`` clipped to the box ``bounds = (xmin, ymin, xmax, ymax)`` (default:
    the bounding box of the points). Cell i is the box cut by the half-planes
    ``|z - p_i| <= |z - p_j|`` of its Voronoi neighbours j (scipy.spatial.Voronoi ridges; all other
    points below 64 points). Returns the polygons and the adjacency pairs (i < j): cells sharing an
    edge or a single point, found as the points nearest (within 1e-9 of the box diagonal) to some
    cell vertex."""
    from scipy.spatial import Voronoi, cKDTree

    p = np.asarray(points, dtype=float)
    n = len(p)
    if p.ndim != 2 or p.shape[1] != 2 or n < 2:
        raise InputError(f"need at least two points (x, y), got shape {p.shape}")
    if not np.isfinite(p).all():
        raise InputError("coordinates must be finite numbers")
    uniq, counts = np.unique(p, axis=0, return_counts=True)
    if (counts > 1).any():
        dup = np.flatnonzero((p == uniq[np.argmax(counts > 1)]).all(axis=1))
        raise InputError(f"items {dup[0]} and {dup[1]} have the same coordinates")
    if bounds is None:
        bounds = (*p.min(axis=0), *p.max(axis=0))
    xmin, ymin, xmax, ymax = map(float, bounds)
    if not (xmax > xmin and ymax > ymin):
        raise InputError(f"the bounding region must have a positive area, got {bounds}")
    if (p[:, 0] < xmin).any() or (p[:, 0] > xmax).any() or (p[:, 1] < ymin).any() or (p[:, 1] > ymax).any():
        raise InputError("every point must lie inside the bounding region")
    origin = np.array([(xmin + xmax) / 2, (ymin + ymax) / 2])
    q = p - origin  # centred coordinates: bisector offsets without cancellation
    box = np.array([[xmin, ymin], [xmax, ymin], [xmax, ymax], [xmin, ymax]]) - origin
    if n < 64:
        nbrs = [np.delete(np.arange(n), i) for i in range(n)]
    else:
        ridges = Voronoi(q).ridge_points
        rows = np.concatenate([ridges[:, 0], ridges[:, 1]])
        cols = np.concatenate([ridges[:, 1], ridges[:, 0]])
        order = np.argsort(rows, kind="stable")
        nbrs = np.split(cols[order], np.searchsorted(rows[order], np.arange(1, n)))
    cells = []
    for i in range(n):
        poly = box
        for j in nbrs[i]:
            d = q[j] - q[i]
            poly = _clip_halfplane(poly, d, (q[j] @ q[j] - q[i] @ q[i]) / 2)
        cells.append(poly)
    tree = cKDTree(q)
    tol = 1e-9 * np.hypot(xmax - xmin, ymax - ymin)
    pairs = set()
    for poly in cells:
        for v in poly:
            dmin = tree.query(v)[0]
            near = tree.query_ball_point(v, dmin + tol)
            near.sort()
            pairs.update((a, b) for k, a in enumerate(near) for b in near[k + 1:])
    pairs = np.array(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    return [c + origin for c in cells], pairs[:, 0], pairs[:, 1]


def constraints_from_coordinates(source, bounds=None) -> GeneralizationConstraints:
    """Constraints from item coordinates: an (n, 2) array (items 0..n-1), or a CSV/DataFrame with
    columns ``x``, ``y`` and the item label in the first other column (else the row number).
    Adjacency, cell centroids and areas come from :func:`clipped_voronoi` on ``bounds``."""
    if isinstance(source, np.ndarray) or (isinstance(source, (list, tuple)) and not isinstance(source, str)):
        xy = np.asarray(source, dtype=float)
        labels = np.array([str(i) for i in range(len(xy))], dtype=object)
    else:
        if isinstance(source, pd.DataFrame):
            frame = source
        else:
            try:
                frame = pd.read_csv(source, dtype={0: str}, keep_default_na=False)
            except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
                raise InputError(f"cannot read the coordinates {source}: {str(exc).splitlines()[0]}") from None
        if "x" not in frame.columns or "y" not in frame.columns:
            raise InputError("the coordinates need columns x and y")
        other = [c for c in frame.columns if c not in ("x", "y")]
        labels = (frame[other[0]].astype(str).str.strip() if other else pd.Series(range(len(frame))).astype(str))
        labels = labels.to_numpy(dtype=object)
        if len(set(labels)) != len(labels):
            raise InputError(f"item {pd.Series(labels)[pd.Series(labels).duplicated()].iloc[0]!r} appears twice in the coordinates")
        try:
            xy = frame[["x", "y"]].apply(pd.to_numeric).to_numpy(float)
        except (ValueError, TypeError):
            raise InputError("the coordinates x and y must be numbers") from None
    if xy.ndim != 2 or xy.shape[1] != 2 or len(xy) < 2:
        raise InputError(f"need at least two items with coordinates (x, y), got shape {xy.shape}")
    cells, a, b = clipped_voronoi(xy, bounds)
    ac = [polygon_area_centroid(c) for c in cells]
    areas = np.array([v[0] for v in ac])
    centroids = np.array([v[1] for v in ac])
    indptr, indices = _csr_from_pairs(a, b, len(xy))
    if bounds is None:
        bounds = (*xy.min(axis=0), *xy.max(axis=0))
    return GeneralizationConstraints("coordinates", labels, indptr, indices, coordinates=xy, centroids=centroids,
                                     areas=areas, cells=tuple(cells), bounds=tuple(map(float, bounds)))


# --------------------------------------------------------------------------- contiguity and error

def is_contiguous(part, constraints: GeneralizationConstraints) -> bool:
    """True if the items of ``part`` form one connected component of the adjacency graph."""
    part = np.unique(np.asarray(part, dtype=np.int64))
    if len(part) == 0:
        raise ParameterError("a part must contain at least one item")
    if part[0] < 0 or part[-1] >= constraints.n_items:
        raise ParameterError(f"item ids must be in [0, {constraints.n_items}), got {part[[0, -1]].tolist()}")
    inside = np.zeros(constraints.n_items, dtype=bool)
    inside[part] = True
    seen = np.zeros(constraints.n_items, dtype=bool)
    stack, seen[part[0]], count = [int(part[0])], True, 1
    while stack:
        v = stack.pop()
        for w in constraints.neighbours(v):
            if inside[w] and not seen[w]:
                seen[w] = True
                count += 1
                stack.append(int(w))
    return count == len(part)


def is_permitted(part, constraints: GeneralizationConstraints) -> bool:
    """Whether ``part`` may be one part of a generalization: for a hierarchy, a single item or all
    leaves below one node; otherwise contiguity in the adjacency graph."""
    if constraints.kind == "hierarchy":
        part = np.unique(np.asarray(part, dtype=np.int64))
        return len(part) == 1 or np.array_equal(hierarchy_cover(part, constraints), part)
    return is_contiguous(part, constraints)


def part_centres(partition, constraints: GeneralizationConstraints) -> np.ndarray:
    """Centre of each part: the centroid of the union of its cells, ``sum_i A_i c_i / sum_i A_i``
    over the items of the part (cells tile the region, so this is the polygon centroid of the union),
    or the mean of the item coordinates without cells. Row p is the centre of part id p."""
    labels = np.asarray(partition, dtype=np.int64)
    if constraints.centroids is None:
        raise ParameterError("part centres need item coordinates")
    n_parts = labels.max() + 1
    w = constraints.areas if constraints.areas is not None else np.ones(constraints.n_items)
    tot = np.bincount(labels, weights=w, minlength=n_parts)
    cx = np.bincount(labels, weights=w * constraints.centroids[:, 0], minlength=n_parts)
    cy = np.bincount(labels, weights=w * constraints.centroids[:, 1], minlength=n_parts)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.column_stack([cx / tot, cy / tot])


def partition_error(partition, occurrences, constraints: GeneralizationConstraints) -> float:
    """Average approximation error of a generalization (paper, Section V-C):

        err(D, D') = sum_u sum_{i in D_u} dist(i, R(i)) / sum_u |D_u|
                   = sum_i occ_i ||c_i - c_{R(i)}|| / sum_i occ_i,

    with ``occ_i`` the number of records containing item i, ``c_i`` the centroid of the item's cell
    (its coordinates without cells) and ``c_{R(i)}`` the centre of its part (:func:`part_centres`);
    the identity partition has error 0. ``partition[i]`` is the part id (0..P-1) of item i.

    Without coordinates (a bare hierarchy or graph) the distance is replaced by the share of the
    other items merged with i, ``(|R(i)| - 1) / (n - 1)`` (the NCP of set-valued recoding).
    """
    labels = np.asarray(partition)
    occ = np.asarray(occurrences, dtype=float)
    n = constraints.n_items
    if labels.shape != (n,) or occ.shape != (n,):
        raise ParameterError(f"partition and occurrences need one entry per item ({n}), "
                             f"got {labels.shape} and {occ.shape}")
    if not np.issubdtype(labels.dtype, np.integer) or (labels < 0).any():
        raise ParameterError("part ids must be non-negative integers")
    if not np.isfinite(occ).all() or (occ < 0).any() or occ.sum() <= 0:
        raise ParameterError("occurrences must be non-negative finite counts, not all zero")
    labels = labels.astype(np.int64)
    if constraints.centroids is None:
        size = np.bincount(labels)[labels]
        dist = (size - 1) / max(n - 1, 1)
    else:
        centre = part_centres(labels, constraints)
        dist = np.hypot(*(constraints.centroids - centre[labels]).T)
    return float(occ @ dist / occ.sum())

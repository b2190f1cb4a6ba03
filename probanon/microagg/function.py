"""The fitted microaggregation function: a published rule that maps anybody's
quasi-identifiers to a cell, without the data it was fitted on.

Three forms, one JSON format (``to_json`` / :func:`function_from_json`):

``ordered-balls`` (MDAV)
    Groups in formation order, each with a reference point r_g, a squared radius rho_g and a
    boundary tuple b_g (the k-th member, in standardised units). A record z belongs to the
    FIRST group g with (||z - r_g||^2, z) <= (rho_g, b_g) in lexicographic order; the last
    group is the default. Tie rule: at equal distance to the reference, the record whose
    coordinates are lexicographically smaller comes first (the MDAV kernel uses the same
    key, then the row position). Distances are summed column by column in float64, as in
    the fit, so the rule reproduces the fitted labels bit for bit, except for records that
    exactly duplicate a record of another group (possible only with classical MDAV; fit with
    ``keep_duplicates=True`` to exclude it: no function of the quasi-identifiers can tell
    two identical records apart).
``power-diagram`` (V-MDAV, PCL)
    z goes to argmin_g ||z - c_g||^2 + w_g (centroids c_g and offsets w_g in standardised
    units; w = 0 is the nearest-centroid rule); ties go to the lowest g.
``intervals`` (individual ranking)
    Each column separately: v goes to the first group whose upper bound is >= v (the last
    group takes everything above). The cell is the tuple of per-column groups.
``blocked`` (MDAV, V-MDAV, PCL fitted in blocks, :mod:`.blocks`)
    A cut tree over the standardised records: node 0 is the root; a split node holds an axis
    vector a and a threshold t, and z goes to its ``left`` node when z . a <= t (the projection
    summed column by column in float64 by :func:`project_rows`, the function that made the
    cuts), to its ``right`` node otherwise. A leaf holds a sub-function (kind "ordered-balls"
    or "power-diagram", its rule) and a cell offset: the cell is offset + the leaf's cell.
``decision-tree`` (the untrusted-respondent survey design, :mod:`probanon.survey.tree`)
    A tree of questions on the keys in ORIGINAL units, which a respondent can follow on paper:
    node 0 is the root; a split node names a key by its position ``column`` and holds either a
    ``threshold`` (numeric key: "is the value below threshold?") or a list of ``categories``
    (categorical key, with the function's ``encoding``: "is the value one of them?"); yes goes
    to ``left``, no to ``right``; a leaf holds its ``cell``. The standardisation is not used
    to assign (it serves the distortion).
``stratified`` (MDAV, V-MDAV, PCL fitted within strata, :mod:`.strata`)
    The strata columns, and per stratum its values (one tuple, or several for merged strata),
    its rule (kind "ordered-balls", "power-diagram" or "blocked") and a cell offset: a record
    goes to the stratum of its strata values (read by name from a DataFrame, or given as
    ``strata=``), then cell = offset + the cell of that stratum's rule.

Centroids are published in original units; standardisation parameters travel with the rule.
A function fitted on a DataFrame records its column names and reads DataFrames (and Series,
one record each) by name; see :meth:`MicroaggregationFunction.assign`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from numba import njit, prange

from .._threads import chunk_plan, next_chunk, parallel_worth
from .._validation import check_matrix, read_json_document
from ..data import Standardizer, values_frame
from ..errors import InputError, SpecificationError

FORMAT_VERSION = 1


PARALLEL_MIN = 5000  # fewer records, or less work than _threads.WORK_MIN: one thread


@njit(cache=True)
def _balls_rows(Z, lo, hi, refs, rad2, bounds, out):
    """Ordered-balls rule for rows lo..hi-1 of Z (the default group is refs.shape[0])."""
    G = refs.shape[0]
    for i in range(lo, hi):
        out[i] = G
        for g in range(G):
            acc = 0.0
            for c in range(Z.shape[1]):
                t = Z[i, c] - refs[g, c]
                acc += t * t
            inside = acc < rad2[g]
            if acc == rad2[g]:
                inside = True
                for c in range(Z.shape[1]):  # lexicographic tie rule against the boundary tuple
                    if Z[i, c] != bounds[g, c]:
                        inside = Z[i, c] < bounds[g, c]
                        break
            if inside:
                out[i] = g
                break


@njit(cache=True)
def _power_rows(Z, lo, hi, centers, offsets, out):
    """Power-diagram rule argmin_g ||z - c_g||^2 + w_g for rows lo..hi-1 (lowest g on ties)."""
    for i in range(lo, hi):
        best = np.inf
        arg = 0
        for g in range(centers.shape[0]):
            acc = 0.0
            for c in range(Z.shape[1]):
                t = Z[i, c] - centers[g, c]
                acc += t * t
            acc += offsets[g]
            if acc < best:
                best = acc
                arg = g
        out[i] = arg


@njit(cache=True, parallel=True)
def _balls_parallel(Z, refs, rad2, bounds, out, threads, per, counter):
    for _ in prange(threads):  # rows in chunks taken dynamically (_threads.next_chunk)
        while True:
            lo, hi = next_chunk(counter, Z.shape[0], per)
            if lo >= hi:
                break
            _balls_rows(Z, lo, hi, refs, rad2, bounds, out)


@njit(cache=True, parallel=True)
def _power_parallel(Z, centers, offsets, out, threads, per, counter):
    for _ in prange(threads):  # as _balls_parallel
        while True:
            lo, hi = next_chunk(counter, Z.shape[0], per)
            if lo >= hi:
                break
            _power_rows(Z, lo, hi, centers, offsets, out)


def _assign_balls(Z, refs, rad2, bounds):
    out = np.empty(Z.shape[0], np.int64)
    if Z.shape[0] >= PARALLEL_MIN and parallel_worth(Z.size * refs.shape[0]):
        _balls_parallel(Z, refs, rad2, bounds, out, *chunk_plan(Z.shape[0]))
    else:
        _balls_rows(Z, 0, Z.shape[0], refs, rad2, bounds, out)
    return out


#: cells from which the power-diagram rule goes through a k-d tree (with an exact check that
#: keeps it bit for bit, :func:`.candidates.power_assign`) instead of a pass over every cell:
#: at n = 20,000, |Q| = 4,000, d = 10 the tree took 0.9 s against 1.3 s for the pass, and the
#: gap grows with |Q|
TREE_MIN_CELLS = 2048


def _assign_power(Z, centers, offsets):
    if centers.shape[0] >= TREE_MIN_CELLS and Z.shape[0] >= PARALLEL_MIN:
        from .candidates import power_assign

        return power_assign(Z, centers, offsets)
    out = np.empty(Z.shape[0], np.int64)
    if Z.shape[0] >= PARALLEL_MIN and parallel_worth(Z.size * centers.shape[0]):
        _power_parallel(Z, centers, offsets, out, *chunk_plan(Z.shape[0]))
    else:
        _power_rows(Z, 0, Z.shape[0], centers, offsets, out)
    return out


def assign_intervals(X, uppers) -> np.ndarray:
    """Per column j, the first group whose upper bound uppers[j][g] is >= the value (the last
    group above all bounds); shape (n, d)."""
    X = check_matrix(X, name="records")
    if X.shape[1] != len(uppers):
        raise InputError(f"records have {X.shape[1]} columns, the intervals describe {len(uppers)}")
    out = np.empty(X.shape, np.int64)
    for j, upper in enumerate(uppers):
        upper = np.asarray(upper, dtype=np.float64)
        out[:, j] = np.minimum(np.searchsorted(upper, X[:, j], side="left"), upper.size - 1)
    return out


@njit(cache=True)
def _project_kernel(Z, rows, axis, out):
    for i in range(rows.size):
        acc = 0.0
        for c in range(Z.shape[1]):
            acc += Z[rows[i], c] * axis[c]
        out[i] = acc


def project_rows(Z, rows, axis) -> np.ndarray:
    """z . axis for the rows ``rows`` of Z, summed column by column in float64. The ONE
    projection of the "blocked" kind: :mod:`.blocks` cuts with it and :func:`_assign_blocked`
    routes with it, so a record goes down the tree exactly as it went in the fit."""
    out = np.empty(len(rows), np.float64)
    _project_kernel(np.ascontiguousarray(Z, dtype=np.float64), np.ascontiguousarray(rows, dtype=np.int64),
                    np.ascontiguousarray(axis, dtype=np.float64), out)
    return out


def _descend(nodes, n: int, goes_left, leaf) -> np.ndarray:
    """n records from node 0 down a binary tree: at a split node the rows where
    ``goes_left(node, rows)`` go to its ``left`` node, the others to its ``right`` node; at a
    leaf (no ``left``) they take ``leaf(node, rows)``."""
    out = np.empty(n, np.int64)
    stack = [(0, np.arange(n))]
    while stack:
        i, rows = stack.pop()
        node = nodes[i]
        if rows.size == 0:
            continue
        if "left" not in node:
            out[rows] = leaf(node, rows)
            continue
        yes = goes_left(node, rows)
        stack += [(node["right"], rows[~yes]), (node["left"], rows[yes])]
    return out


def _assign_blocked(Z, nodes) -> np.ndarray:
    """The "blocked" rule: each record down the cut tree (left when z . axis <= threshold),
    then the leaf's own rule; cell = leaf offset + leaf cell."""
    return _descend(nodes, Z.shape[0], lambda node, rows: project_rows(Z, rows, node["axis"]) <= node["threshold"],
                    lambda node, rows: node["offset"] + _assign_rule(node["kind"], node["rule"],
                                                                     np.ascontiguousarray(Z[rows])))


def _assign_stratified(Z, rule: dict, strata) -> np.ndarray:
    """The "stratified" rule: each record's stratum (:func:`.strata.stratum_index`), then that
    stratum's rule; cell = stratum offset + its cell."""
    from .strata import stratum_index

    which = stratum_index(rule, strata)
    out = np.empty(Z.shape[0], np.int64)
    for s, stratum in enumerate(rule["strata"]):
        rows = np.flatnonzero(which == s)
        if rows.size:
            out[rows] = stratum["offset"] + _assign_rule(stratum["kind"], stratum["rule"], np.ascontiguousarray(Z[rows]))
    return out


def _category_codes(encoding, column: int, categories) -> np.ndarray:
    """Positions of ``categories`` among the levels of categorical key ``column``."""
    return pd.Index(encoding.levels(encoding.columns[column])).get_indexer(categories)


def _assign_tree(V, nodes, encoding=None) -> np.ndarray:
    """The "decision-tree" rule on key values V (original units; categories as positions among
    their levels, :meth:`.mixed.Encoding.values`): from node 0, a record goes to ``left`` when its
    value is below the node's threshold (numeric key) or is one of its categories (categorical
    key), else to ``right``, down to a leaf, whose cell it takes."""
    def goes_left(node, rows):
        v = V[rows, node["column"]]
        if "categories" in node:
            return np.isin(v, _category_codes(encoding, node["column"], node["categories"]))
        return v < node["threshold"]

    return _descend(nodes, V.shape[0], goes_left, lambda node, rows: node["cell"])


def _assign_rule(kind: str, rule: dict, Z) -> np.ndarray:
    """Cell of each standardised record under a rule of kind "ordered-balls", "power-diagram"
    or "blocked"."""
    if kind == "ordered-balls":
        return _assign_balls(Z, rule["references"], rule["radius2"], rule["boundary"])
    if kind == "power-diagram":
        return _assign_power(Z, rule["centers"], rule["offsets"])
    return _assign_blocked(Z, rule["nodes"])


def _rule_cells(kind: str, rule: dict) -> int:
    """Number of cells a rule of kind "ordered-balls" or "power-diagram" defines."""
    return len(rule["radius2"]) + 1 if kind == "ordered-balls" else len(rule["offsets"])


@dataclass
class MicroaggregationFunction:
    """A fitted, publishable mapping from quasi-identifiers to cells.

    Attributes: ``kind`` ("ordered-balls", "power-diagram", "intervals"), ``columns`` (names,
    or None), ``standardizer``, ``centroids`` (cells x columns, original units; for
    "intervals" a list of per-column arrays), ``sizes`` (declared records per cell), ``rule``
    (the kind's parameters, standardised units), ``meta`` (free-form, e.g. the method and k).
    """

    kind: str
    standardizer: Standardizer
    centroids: object
    sizes: object
    rule: dict
    columns: list | None = None
    meta: dict = field(default_factory=dict)
    encoding: object = None  # categorical keys (:class:`.mixed.Encoding`): records embedded first

    # -- applying the rule ------------------------------------------------------------
    def _records(self, X) -> np.ndarray:
        """X as a float matrix whose columns are the function's, in its order.

        A DataFrame is read BY NAME when the function has ``columns``: those columns are
        looked up (in the function's order), others are ignored, a missing one is an
        :class:`InputError` naming it. A function without names (fitted on an array) reads
        a DataFrame by position, which must then have exactly the function's width. A
        Series is ONE record (its index gives the names). Arrays are always positional."""
        names = self.columns
        if isinstance(X, pd.Series):
            if names is not None:
                X = X.loc[_named(X.index, names, "record")]
            try:
                X = np.asarray(X, dtype=np.float64).reshape(1, -1)
            except (TypeError, ValueError):
                raise InputError("the record contains values that are not numbers") from None
        elif isinstance(X, pd.DataFrame) and names is not None:
            X = X[_named(X.columns, names, "records")]
        return check_matrix(X, name="records")

    def _key_values(self, X) -> np.ndarray:
        """The records' key values, one column per key: numbers, and for categorical keys the
        position of the category among the key's levels (read by name, :meth:`.mixed.Encoding.values`)."""
        if self.encoding is not None:
            if isinstance(X, pd.Series):
                X = X.to_frame().T
            if not isinstance(X, pd.DataFrame):
                raise InputError("this function has categorical keys: give the records as a table with named columns")
            return self.encoding.values(X)
        X = self._records(X)
        if X.shape[1] != self.standardizer.mean_.size:
            raise InputError(
                f"records have {X.shape[1]} columns, the function expects {self.standardizer.mean_.size}"
            )
        return X

    def _standardised(self, X) -> np.ndarray:
        V = self._key_values(X)  # categorical keys: embedded (.mixed)
        E = V if self.encoding is None else self.encoding.embed_values(V)
        return np.ascontiguousarray(self.standardizer.transform(E))

    def _strata(self, X, strata, n: int) -> list:
        """The strata values of the n records of a "stratified" function: ``strata`` (a
        DataFrame of the strata columns, or n values / rows), else the strata columns of the
        DataFrame (or Series) X, by name."""
        from .strata import strata_of

        names = self.rule.get("columns")
        if strata is None:
            if names is None or not isinstance(X, (pd.DataFrame, pd.Series)):
                raise InputError("this function is stratified: give the strata of the records (strata=...)")
            strata = X[_named(X.columns, names, "records")] if isinstance(X, pd.DataFrame) else \
                X.loc[_named(X.index, names, "record")].to_frame().T
        return strata_of(strata, n)[1]

    def assign(self, X, strata=None) -> np.ndarray:
        """Cell of each record (row of X, original units): shape (n,), or (n, d) for
        "intervals" (one group per column). A DataFrame is read by column name when the
        function has ``columns``, a Series is one record (n = 1); see :meth:`_records`. A
        "stratified" function also needs each record's stratum: ``strata``, or the strata
        columns of a DataFrame X."""
        if self.kind == "intervals":
            return assign_intervals(self._records(X), self.rule["upper"])
        if self.kind == "decision-tree":
            return _assign_tree(self._key_values(X), self.rule["nodes"], self.encoding)
        Z = self._standardised(X)
        if self.kind == "stratified":
            return _assign_stratified(Z, self.rule, self._strata(X, strata, Z.shape[0]))
        return _assign_rule(self.kind, self.rule, Z)

    def transform(self, X, strata=None):
        """Each record replaced by the centroid of its cell (original units): an array, or,
        for a DataFrame X, a DataFrame with X's index and the function's columns (its keys,
        x0, x1... without names), each keeping its type."""
        labels = self.assign(X, strata)
        if self.kind == "intervals":
            values = np.column_stack([self.centroids[j][labels[:, j]] for j in range(labels.shape[1])])
        else:
            values = np.asarray(self.centroids, dtype=object if self.encoding is not None else None)[labels]
        return values_frame(values, self.columns, X.index) if isinstance(X, pd.DataFrame) else values

    @property
    def n_cells(self) -> int:
        return len(self.sizes) if self.kind != "intervals" else int(np.prod([len(s) for s in self.sizes]))

    # -- serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict:
        listify = _rule_lists(self.kind, self.rule)
        if self.kind == "intervals":
            centroids = [np.asarray(c).tolist() for c in self.centroids]
            sizes = [np.asarray(s).tolist() for s in self.sizes]
        else:
            centroids = np.asarray(self.centroids).tolist()
            sizes = np.asarray(self.sizes).tolist()
        return {
            "probanon_function": FORMAT_VERSION,
            "kind": self.kind,
            "columns": self.columns,
            "standardization": self.standardizer.to_dict(),
            "centroids": centroids,
            "sizes": sizes,
            "rule": listify,
            "tie_rule": TIE_RULES[self.kind],
            "meta": self.meta,
            **({"encoding": self.encoding.to_dict()} if self.encoding is not None else {}),
        }

    def to_json(self, path=None, indent=None) -> str:
        """JSON text of the function (floats written with repr: they round-trip exactly);
        written to ``path`` if given."""
        text = json.dumps(self.to_dict(), indent=indent, allow_nan=False)
        if path is not None:
            with open(path, "w") as fh:
                fh.write(text)
        return text

    @classmethod
    def from_json(cls, text_or_path) -> "MicroaggregationFunction":
        return function_from_json(text_or_path)


def _lists(rule: dict) -> dict:
    """A rule's arrays as (nested) lists, for JSON."""
    return {k: np.asarray(v).tolist() if not isinstance(v, list) else [np.asarray(a).tolist() for a in v]
            for k, v in rule.items()}


def _rule_lists(kind: str, rule: dict) -> dict:
    """A rule of any kind for JSON."""
    if kind == "decision-tree":
        return {"nodes": [dict(node) for node in rule["nodes"]]}
    if kind == "stratified":
        return {"columns": rule["columns"],
                "strata": [{"values": [list(v) for v in s["values"]], "kind": s["kind"],
                            "rule": _rule_lists(s["kind"], s["rule"]), "offset": int(s["offset"])}
                           for s in rule["strata"]]}
    return _blocked_lists(rule) if kind == "blocked" else _lists(rule)


def _blocked_lists(rule: dict) -> dict:
    """A "blocked" rule for JSON: split nodes (axis, threshold, left, right) and leaves
    (kind, rule, offset)."""
    nodes = []
    for node in rule["nodes"]:
        if "kind" in node:
            nodes.append({"kind": node["kind"], "rule": _lists(node["rule"]), "offset": int(node["offset"])})
        else:
            nodes.append({"axis": np.asarray(node["axis"]).tolist(), "threshold": float(node["threshold"]),
                          "left": int(node["left"]), "right": int(node["right"])})
    return {"nodes": nodes}


def _named(available, names, what: str) -> list:
    """``names`` after checking each is in ``available`` exactly once (else an InputError
    naming the first missing or repeated one)."""
    present = list(available)
    for name in names:
        count = present.count(name)
        if count != 1:
            problem = "lack" if count == 0 else f"have {count} copies of"
            raise InputError(f"the {what} {problem} the function's column {name!r}")
    return list(names)


TIE_RULES = {
    "ordered-balls": "first group g (formation order) with (||z - r_g||^2, z) <= (radius2_g, boundary_g) "
    "lexicographically, z standardised; distances summed column by column in float64; last group by default",
    "power-diagram": "argmin_g ||z - c_g||^2 + offset_g, z standardised; lowest g on ties",
    "intervals": "per column, first group with upper bound >= value; last group above all bounds",
    "blocked": "from node 0 down the cut tree: to 'left' when z . axis <= threshold (z standardised, the "
    "product summed column by column in float64), else to 'right'; at a leaf, cell = offset + the cell of the "
    "leaf's rule (its kind's tie rule)",
    "decision-tree": "from node 0 down the tree of questions on the keys in original units: to 'left' when the "
    "value of key 'column' is below 'threshold' (a number) or is one of 'categories' (a categorical key), else to "
    "'right'; a leaf gives the cell",
    "stratified": "the stratum whose values equal the record's strata values, then cell = offset + the cell of "
    "that stratum's rule (its kind's tie rule)",
}


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


def _rule_arrays(kind: str, rule: dict, width: int) -> dict:
    """The checked arrays of an "ordered-balls" or "power-diagram" rule (one ball per cell but
    the last; one center and offset per cell)."""
    if kind == "ordered-balls":
        arrays = {"references": _array(rule, "references", 2, width), "radius2": _array(rule, "radius2", 1),
                  "boundary": _array(rule, "boundary", 2, width)}
        G = arrays["radius2"].size
        if arrays["references"].shape[0] != G or arrays["boundary"].shape[0] != G:
            raise SpecificationError("function: ordered-balls rule must have one ball per cell but the last")
    else:
        arrays = {"centers": _array(rule, "centers", 2, width), "offsets": _array(rule, "offsets", 1)}
        if arrays["centers"].shape[0] != arrays["offsets"].size:
            raise SpecificationError("function: power-diagram rule must have one center per cell")
    return {k: np.ascontiguousarray(v) for k, v in arrays.items()}


LEAF_KINDS = ("ordered-balls", "power-diagram")


def _children(node: dict, i: int, parents: list) -> tuple[int, int]:
    """The ``left`` and ``right`` nodes of split node i (indices above i), counted in ``parents``."""
    left, right = _index(node, "left", i + 1, len(parents)), _index(node, "right", i + 1, len(parents))
    parents[left] += 1
    parents[right] += 1
    return left, right


def _one_tree(parents: list, what: str) -> None:
    if any(count != 1 for count in parents[1:]):
        raise SpecificationError(f"function: {what} nodes must form one tree (each node but 0 the child of one node)")


def _index(node: dict, key: str, low: int, high: int) -> int:
    value = node.get(key)
    if type(value) is not int or not low <= value < high:
        raise SpecificationError(f"function: tree node {key!r} must be an integer in {low}..{high - 1}")
    return value


def _blocked_rule(rule: dict, width: int, n_cells: int | None) -> dict:
    """The checked "blocked" rule: a tree rooted at node 0 (every other node the child of
    exactly one node with a lower index), split nodes with an axis of the data's width and a
    finite threshold, leaves of kind "ordered-balls"/"power-diagram" whose cell ranges
    [offset, offset + cells) tile 0..n_cells-1 (``n_cells`` None: as many as they reach)."""
    n_cells = _MAX_CELLS if n_cells is None else n_cells
    nodes = rule.get("nodes")
    if not isinstance(nodes, list) or not nodes or not all(isinstance(node, dict) for node in nodes):
        raise SpecificationError("function: a blocked rule needs a non-empty list of 'nodes' (objects)")
    parents = [0] * len(nodes)
    checked, ranges = [], []
    for i, node in enumerate(nodes):
        if "kind" in node:
            if set(node) != {"kind", "rule", "offset"} or node["kind"] not in LEAF_KINDS or not isinstance(node["rule"], dict):
                raise SpecificationError(f"function: blocked leaf {i} must hold 'kind' ({' or '.join(LEAF_KINDS)}), "
                                         "'rule' and 'offset'")
            leaf = _rule_arrays(node["kind"], node["rule"], width)
            offset = _index(node, "offset", 0, n_cells)
            ranges.append((offset, offset + _rule_cells(node["kind"], leaf)))
            checked.append({"kind": node["kind"], "rule": leaf, "offset": offset})
        else:
            if set(node) != {"axis", "threshold", "left", "right"}:
                raise SpecificationError(f"function: blocked node {i} must hold 'axis', 'threshold', 'left' and 'right' "
                                         "(or be a leaf)")
            threshold = node["threshold"]
            if type(threshold) not in (int, float) or not np.isfinite(threshold):
                raise SpecificationError(f"function: blocked node {i} has a threshold that is not a finite number")
            left, right = _children(node, i, parents)
            checked.append({"axis": np.ascontiguousarray(_array(node, "axis", 1, width)), "threshold": float(threshold),
                            "left": left, "right": right})
    _one_tree(parents, "blocked")
    ranges.sort()
    end = ranges[-1][1] if n_cells == _MAX_CELLS else n_cells
    if ranges[0][0] != 0 or ranges[-1][1] != end or any(a[1] != b[0] for a, b in zip(ranges, ranges[1:])):
        raise SpecificationError("function: the blocked leaves' cells (offset + their cells) must tile the cells once")
    return {"nodes": checked}


_MAX_CELLS = 2**62  # no bound on the cells of a blocked rule nested in a stratum


def _sub_rule_cells(kind: str, rule: dict) -> int:
    if kind == "blocked":
        return max(node["offset"] + _rule_cells(node["kind"], node["rule"]) for node in rule["nodes"] if "kind" in node)
    return _rule_cells(kind, rule)


def _tree_rule(rule: dict, keys: int, encoding, n_cells: int) -> dict:
    """The checked "decision-tree" rule: a tree rooted at node 0 (every other node the child of
    exactly one node with a lower index); split nodes ask about one of the ``keys`` keys, a
    numeric key with a finite 'threshold', a categorical key (of ``encoding``) with a non-empty
    list of its distinct 'categories'; the leaves' cells are 0..n_cells-1, each once."""
    nodes = rule.get("nodes")
    if not isinstance(nodes, list) or not nodes or not all(isinstance(node, dict) for node in nodes):
        raise SpecificationError("function: a decision-tree rule needs a non-empty list of 'nodes' (objects)")
    parents, cells, checked = [0] * len(nodes), [], []
    for i, node in enumerate(nodes):
        if "cell" in node:
            if set(node) != {"cell"} or type(node["cell"]) is not int:
                raise SpecificationError(f"function: decision-tree leaf {i} must hold only an integer 'cell'")
            cells.append(node["cell"])
            checked.append({"cell": node["cell"]})
            continue
        column = node.get("column")
        if type(column) is not int or not 0 <= column < keys:
            raise SpecificationError(f"function: decision-tree node {i} must ask about a key 'column' in 0..{keys - 1}")
        name = encoding.columns[column] if encoding is not None else None
        categorical = name is not None and encoding.levels(name) is not None
        if categorical:
            categories = node.get("categories")
            if set(node) != {"column", "categories", "left", "right"} or not isinstance(categories, list) \
                    or not categories or len(set(map(str, categories))) != len(categories) \
                    or (_category_codes(encoding, column, categories) < 0).any():
                raise SpecificationError(f"function: decision-tree node {i} on categorical key {name!r} must hold "
                                         "'categories' (distinct categories of the key), 'left' and 'right'")
            split = {"column": column, "categories": list(categories)}
        else:
            threshold = node.get("threshold")
            if set(node) != {"column", "threshold", "left", "right"} or type(threshold) not in (int, float) \
                    or not np.isfinite(threshold):
                raise SpecificationError(f"function: decision-tree node {i} on a numeric key must hold a finite "
                                         "'threshold', 'left' and 'right'")
            split = {"column": column, "threshold": float(threshold)}
        left, right = _children(node, i, parents)
        checked.append({**split, "left": left, "right": right})
    _one_tree(parents, "decision-tree")
    if sorted(cells) != list(range(n_cells)):
        raise SpecificationError(f"function: the decision-tree leaves must give the cells 0..{n_cells - 1}, each once")
    return {"nodes": checked}


def _stratified_rule(rule: dict, width: int, n_cells: int) -> dict:
    """The checked "stratified" rule: strata columns (names or null), strata with distinct
    value tuples of one length, rules of kind "ordered-balls", "power-diagram" or "blocked",
    and cell ranges [offset, offset + cells) that tile 0..n_cells-1."""
    from .strata import _scalar

    columns, strata = rule.get("columns"), rule.get("strata")
    if columns is not None and (not isinstance(columns, list) or not columns or
                                not all(isinstance(c, str) for c in columns)):
        raise SpecificationError("function: a stratified rule's 'columns' must be a list of names (or null)")
    if not isinstance(strata, list) or not strata or not all(isinstance(s, dict) for s in strata):
        raise SpecificationError("function: a stratified rule needs a non-empty list of 'strata' (objects)")
    checked, ranges, seen = [], [], set()
    length = len(columns) if columns else None
    for i, stratum in enumerate(strata):
        if set(stratum) != {"values", "kind", "rule", "offset"} or stratum["kind"] not in (*LEAF_KINDS, "blocked") \
                or not isinstance(stratum["rule"], dict):
            raise SpecificationError(f"function: stratum {i} must hold 'values', 'kind' (ordered-balls, power-diagram "
                                     "or blocked), 'rule' and 'offset'")
        values = stratum["values"]
        try:
            values = [tuple(_scalar(v) for v in row) for row in values]
        except (TypeError, InputError):
            raise SpecificationError(f"function: stratum {i} must list its values as lists of texts or numbers") from None
        length = length or (len(values[0]) if values else None)
        if not values or any(len(v) != length for v in values) or seen & set(values):
            raise SpecificationError(f"function: stratum {i} has no values, values of another length, or values of "
                                     "another stratum")
        seen |= set(values)
        sub = (_blocked_rule(stratum["rule"], width, None) if stratum["kind"] == "blocked"
               else _rule_arrays(stratum["kind"], stratum["rule"], width))
        offset = _index(stratum, "offset", 0, n_cells)
        ranges.append((offset, offset + _sub_rule_cells(stratum["kind"], sub)))
        checked.append({"values": values, "kind": stratum["kind"], "rule": sub, "offset": offset})
    ranges.sort()
    if ranges[0][0] != 0 or ranges[-1][1] != n_cells or any(a[1] != b[0] for a, b in zip(ranges, ranges[1:])):
        raise SpecificationError("function: the strata's cells (offset + their cells) must tile the cells once")
    return {"columns": columns, "strata": checked}


def function_from_json(text_or_path) -> MicroaggregationFunction:
    """Load a function written by :meth:`MicroaggregationFunction.to_json` (a JSON string,
    or a path to a file). Raises :class:`SpecificationError` if it is malformed."""
    d = read_json_document(text_or_path, "function")
    version = d.get("probanon_function") if isinstance(d, dict) else None
    if type(version) is not int or version != FORMAT_VERSION:
        raise SpecificationError("not a probanon function (missing or unknown 'probanon_function' version)")
    kind = d.get("kind")
    if not isinstance(kind, str) or kind not in TIE_RULES:
        raise SpecificationError(f"function: unknown kind {kind!r}")
    std = d.get("standardization")
    if not isinstance(std, dict):
        raise SpecificationError("function: missing 'standardization'")
    mean, scale = _array(std, "mean", 1), _array(std, "scale", 1)
    if mean.size != scale.size or mean.size == 0 or (scale <= 0).any():
        raise SpecificationError("function: bad standardization parameters")
    width = mean.size
    rule = d.get("rule")
    if not isinstance(rule, dict):
        raise SpecificationError("function: missing 'rule'")
    if kind == "intervals":
        try:
            upper = [np.asarray(u, dtype=np.float64) for u in rule["upper"]]
            centroids = [np.asarray(c, dtype=np.float64) for c in d["centroids"]]
        except (KeyError, TypeError, ValueError):
            raise SpecificationError("function: malformed interval rule") from None
        sizes = [_sizes(s) for s in d.get("sizes") or []]
        # bounds may repeat when ties were split (keep_ties=False): the first group wins
        if not (len(upper) == len(centroids) == len(sizes) == width) or any(
            u.ndim != 1 or u.size == 0 or u.size != c.size or u.size != s.size or (np.diff(u) < 0).any()
            or not (np.isfinite(u).all() and np.isfinite(c).all())
            for u, c, s in zip(upper, centroids, sizes)
        ):
            raise SpecificationError("function: interval rule is inconsistent")
        rule_arrays = {"upper": upper}
    else:
        encoding = None
        if "encoding" in d:
            from .mixed import Encoding

            encoding = Encoding.from_dict(d["encoding"])
            if encoding.width() != width:
                raise SpecificationError("function: the encoding's width differs from the standardization's")
            centroids = _mixed_centroids(d.get("centroids"), encoding)
        else:
            centroids = _array(d, "centroids", 2, width)
        sizes = _sizes(d.get("sizes")) if isinstance(d.get("sizes"), list) else None
        if sizes is None or sizes.shape != (centroids.shape[0],):
            raise SpecificationError("function: 'sizes' must list one size per cell")
        if kind == "blocked":
            rule_arrays = _blocked_rule(rule, width, len(sizes))
        elif kind == "stratified":
            rule_arrays = _stratified_rule(rule, width, len(sizes))
        elif kind == "decision-tree":
            rule_arrays = _tree_rule(rule, len(encoding.columns) if encoding is not None else width, encoding,
                                     len(sizes))
        else:
            rule_arrays = _rule_arrays(kind, rule, width)
            if _rule_cells(kind, rule_arrays) != len(sizes):
                raise SpecificationError(f"function: the {kind} rule must define one cell per size")
    if not isinstance(d.get("meta", {}), (dict, type(None))):
        raise SpecificationError("function: 'meta' must be an object")
    columns = d.get("columns")
    if "encoding" in d and kind != "intervals":
        width = len(d["encoding"]["columns"])  # names are the keys, not the embedded columns
    if columns is not None and (not isinstance(columns, list) or len(columns) != width):
        raise SpecificationError("function: 'columns' must name every column")
    return MicroaggregationFunction(
        kind=kind,
        standardizer=Standardizer(mean_=mean, scale_=scale),
        centroids=centroids,
        sizes=sizes,
        rule=rule_arrays,
        columns=columns,
        meta=d.get("meta") or {},
        encoding=encoding if kind != "intervals" else None,
    )


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

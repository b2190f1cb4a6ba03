"""The published rules of a microaggregation function (:class:`.function.MicroaggregationFunction`):
one class per kind, in one registry, :data:`RULES` (kind -> class).

A rule maps anybody's quasi-identifiers to a cell. Each class holds its kind's parameters and owns

- ``assign`` (the rule on the records it reads: standardised records, or key values, or
  records in original units) and ``apply(function, X, strata)``, which reads those from X
  through the function (names, standardisation, categorical keys, strata);
- ``n_cells``; ``tie_rule``, the sentence the function's JSON states;
- ``to_dict()``, the "rule" of the function's JSON, and ``from_dict(d, width, n_cells,
  encoding)``, the checked rule read back (a :class:`SpecificationError` on anything
  malformed), nested rules included; ``read(document, width)``, the rule and the published
  values (centroids and sizes) of a function document of its kind;
- ``from_parts(parts)``: the rule from the parameters a fit returns (:func:`rule_of`).

The kinds (each class's docstring gives its rule): "ordered-balls" (:class:`OrderedBalls`),
"power-diagram" (:class:`PowerDiagram`), "intervals" (:class:`Intervals`), "blocked"
(:class:`Blocked`), "decision-tree" (:class:`DecisionTree`), "stratified" (:class:`Stratified`).
Parameters are in standardised units, but for "intervals" and "decision-tree" (original units).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, fields
from typing import ClassVar

import numpy as np
import pandas as pd

from ..errors import InputError, SpecificationError
from .rule_checks import _MAX_CELLS, _array, _children, _index, _mixed_centroids, _one_tree, _sizes, _tiled
from .rule_kernels import _assign_balls, _assign_power, assign_intervals, project_rows
from .strata import _scalar, strata_of, stratum_index


class Rule(ABC):
    """A published rule (module docstring). Subclasses are frozen dataclasses of their
    parameters; the published values default to one row of centroids and one size per cell."""

    kind: ClassVar[str]
    tie_rule: ClassVar[str]

    @classmethod
    def from_parts(cls, parts: dict) -> Rule:
        """The rule from the parameters a fit returns ({parameter: array})."""
        return cls(**parts)

    @classmethod
    @abstractmethod
    def from_dict(cls, d: dict, width: int, n_cells: int | None = None, encoding=None) -> Rule:
        """The checked rule of a JSON "rule" object, for records of ``width`` (standardised)
        columns; ``n_cells``: the cells it must define (None: as many as it reaches)."""

    def to_dict(self) -> dict:
        """The rule for JSON: each parameter as (nested) lists."""
        return {f.name: np.asarray(getattr(self, f.name)).tolist() for f in fields(self)}

    @property
    @abstractmethod
    def n_cells(self) -> int:
        """The number of cells the rule defines."""

    @abstractmethod
    def assign(self, Z) -> np.ndarray:
        """Cell of each standardised record (row of Z)."""

    def apply(self, function, X, strata=None) -> np.ndarray:
        """Cell of each record of X as ``function`` reads it (:meth:`.function.MicroaggregationFunction.assign`)."""
        return self.assign(function._standardised(X))

    # -- the published values: a row of centroids and a size per cell -------------------------
    @classmethod
    def read(cls, d: dict, width: int) -> tuple:
        """(rule, centroids, sizes, encoding) of the function document ``d``, checked."""
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
        return cls.from_dict(d["rule"], width, len(sizes), encoding), centroids, sizes, encoding

    @staticmethod
    def published(centroids, sizes) -> tuple[list, list]:
        """The centroids and sizes for JSON."""
        return np.asarray(centroids).tolist(), np.asarray(sizes).tolist()

    @staticmethod
    def released(centroids, labels, encoding) -> np.ndarray:
        """The released values of records in cells ``labels``."""
        return np.asarray(centroids, dtype=object if encoding is not None else None)[labels]


def _one_cell_per_size(rule: Rule, n_cells: int | None) -> Rule:
    if n_cells is not None and rule.n_cells != n_cells:
        raise SpecificationError(f"function: the {rule.kind} rule must define one cell per size")
    return rule


@dataclass(frozen=True, eq=False)
class OrderedBalls(Rule):
    """MDAV's groups (paper 1) as ordered balls: groups in formation order, each with a reference
    point r_g, a squared radius rho_g and a boundary tuple b_g (the k-th member, in standardised
    units). A record z belongs to the FIRST group g with (||z - r_g||^2, z) <= (rho_g, b_g) in
    lexicographic order; the last group is the default. Tie rule: at equal distance to the
    reference, the record whose coordinates are lexicographically smaller comes first (the MDAV
    kernel uses the same key, then the row position). Distances are summed column by column in
    float64, as in the fit, so the rule reproduces the fitted labels bit for bit, except for
    records that exactly duplicate a record of another group (possible only with classical MDAV;
    fit with ``keep_duplicates=True`` to exclude it: no function of the quasi-identifiers can
    tell two identical records apart)."""

    kind: ClassVar[str] = "ordered-balls"
    tie_rule: ClassVar[str] = (
        "first group g (formation order) with (||z - r_g||^2, z) <= (radius2_g, boundary_g) lexicographically, "
        "z standardised; distances summed column by column in float64; last group by default")
    references: np.ndarray
    radius2: np.ndarray
    boundary: np.ndarray

    @classmethod
    def from_dict(cls, d, width, n_cells=None, encoding=None):
        """One ball (reference, squared radius, boundary) per cell but the last."""
        references, radius2 = _array(d, "references", 2, width), _array(d, "radius2", 1)
        boundary = _array(d, "boundary", 2, width)
        if references.shape[0] != radius2.size or boundary.shape[0] != radius2.size:
            raise SpecificationError("function: ordered-balls rule must have one ball per cell but the last")
        return _one_cell_per_size(cls(np.ascontiguousarray(references), np.ascontiguousarray(radius2),
                                      np.ascontiguousarray(boundary)), n_cells)

    @property
    def n_cells(self) -> int:
        return len(self.radius2) + 1

    def assign(self, Z) -> np.ndarray:
        return _assign_balls(Z, self.references, self.radius2, self.boundary)


@dataclass(frozen=True, eq=False)
class PowerDiagram(Rule):
    """V-MDAV's and PCL's cells as a power diagram: z goes to argmin_g ||z - c_g||^2 + w_g
    (centroids c_g and offsets w_g in standardised units; w = 0 is the nearest-centroid rule);
    ties go to the lowest g."""

    kind: ClassVar[str] = "power-diagram"
    tie_rule: ClassVar[str] = "argmin_g ||z - c_g||^2 + offset_g, z standardised; lowest g on ties"
    centers: np.ndarray
    offsets: np.ndarray

    @classmethod
    def from_dict(cls, d, width, n_cells=None, encoding=None):
        """One center and one offset per cell."""
        centers, offsets = _array(d, "centers", 2, width), _array(d, "offsets", 1)
        if centers.shape[0] != offsets.size:
            raise SpecificationError("function: power-diagram rule must have one center per cell")
        return _one_cell_per_size(cls(np.ascontiguousarray(centers), np.ascontiguousarray(offsets)), n_cells)

    @property
    def n_cells(self) -> int:
        return len(self.offsets)

    def assign(self, Z) -> np.ndarray:
        return _assign_power(Z, self.centers, self.offsets)


@dataclass(frozen=True, eq=False)
class Intervals(Rule):
    """Individual ranking's groups, each column separately: v goes to the first group whose upper
    bound is >= v (the last group takes everything above). The cell is the tuple of per-column
    groups; the published values are per column and group (centroids and sizes)."""

    kind: ClassVar[str] = "intervals"
    tie_rule: ClassVar[str] = "per column, first group with upper bound >= value; last group above all bounds"
    upper: list

    @classmethod
    def from_dict(cls, d, width, n_cells=None, encoding=None):
        """Per column, a non-empty non-decreasing list of finite upper bounds."""
        try:
            upper = [np.asarray(u, dtype=np.float64) for u in d["upper"]]
        except (KeyError, TypeError, ValueError):
            raise SpecificationError("function: malformed interval rule") from None
        if len(upper) != width or any(u.ndim != 1 or u.size == 0 or (np.diff(u) < 0).any() or not np.isfinite(u).all()
                                      for u in upper):
            raise SpecificationError("function: interval rule is inconsistent")
        return _one_cell_per_size(cls(upper), n_cells)

    def to_dict(self) -> dict:
        return {"upper": [np.asarray(u).tolist() for u in self.upper]}

    @property
    def n_cells(self) -> int:
        return int(np.prod([len(u) for u in self.upper]))

    def assign(self, X) -> np.ndarray:
        """Per column, the group of each record (original units): shape (n, d)."""
        return assign_intervals(X, self.upper)

    def apply(self, function, X, strata=None) -> np.ndarray:
        return self.assign(function._records(X))

    @classmethod
    def read(cls, d, width):
        rule = d["rule"]
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
        return cls(upper), centroids, sizes, None

    @staticmethod
    def published(centroids, sizes) -> tuple[list, list]:
        return [np.asarray(c).tolist() for c in centroids], [np.asarray(s).tolist() for s in sizes]

    @staticmethod
    def released(centroids, labels, encoding) -> np.ndarray:
        return np.column_stack([centroids[j][labels[:, j]] for j in range(labels.shape[1])])


@dataclass(frozen=True, eq=False)
class Blocked(Rule):
    """MDAV, V-MDAV or PCL fitted in blocks (:mod:`.blocks`): a cut tree over the standardised
    records. Node 0 is the root; a split node holds an axis vector a and a threshold t, and z
    goes to its ``left`` node when z . a <= t (the projection summed column by column in float64
    by :func:`.rule_kernels.project_rows`, the function that made the cuts), to its ``right``
    node otherwise. A leaf holds a sub-rule (:class:`OrderedBalls` or :class:`PowerDiagram`)
    and a cell offset: the cell is offset + the leaf's cell.

    ``nodes``: split nodes {"axis", "threshold", "left", "right"}, leaves {"rule", "offset"}."""

    kind: ClassVar[str] = "blocked"
    tie_rule: ClassVar[str] = (
        "from node 0 down the cut tree: to 'left' when z . axis <= threshold (z standardised, the product summed "
        "column by column in float64), else to 'right'; at a leaf, cell = offset + the cell of the leaf's rule (its "
        "kind's tie rule)")
    nodes: list

    @classmethod
    def from_parts(cls, parts):
        """Leaves as a fit gives them: {"kind", "rule" (its parameters), "offset"}."""
        return cls([{"rule": rule_of(node["kind"], node["rule"]), "offset": node["offset"]} if "kind" in node else node
                    for node in parts["nodes"]])

    @classmethod
    def from_dict(cls, d, width, n_cells=None, encoding=None):
        """A tree rooted at node 0 (every other node the child of exactly one node with a lower
        index), split nodes with an axis of the data's width and a finite threshold, leaves of
        kind "ordered-balls"/"power-diagram" whose cell ranges [offset, offset + cells) tile
        0..n_cells-1 (``n_cells`` None: as many as they reach)."""
        kinds = tuple(leaf.kind for leaf in LEAVES)
        high = _MAX_CELLS if n_cells is None else n_cells
        nodes = d.get("nodes")
        if not isinstance(nodes, list) or not nodes or not all(isinstance(node, dict) for node in nodes):
            raise SpecificationError("function: a blocked rule needs a non-empty list of 'nodes' (objects)")
        parents = [0] * len(nodes)
        checked, ranges = [], []
        for i, node in enumerate(nodes):
            if "kind" in node:
                if set(node) != {"kind", "rule", "offset"} or node["kind"] not in kinds \
                        or not isinstance(node["rule"], dict):
                    raise SpecificationError(f"function: blocked leaf {i} must hold 'kind' ({' or '.join(kinds)}), "
                                             "'rule' and 'offset'")
                leaf = RULES[node["kind"]].from_dict(node["rule"], width)
                offset = _index(node, "offset", 0, high)
                ranges.append((offset, offset + leaf.n_cells))
                checked.append({"rule": leaf, "offset": offset})
            else:
                if set(node) != {"axis", "threshold", "left", "right"}:
                    raise SpecificationError(f"function: blocked node {i} must hold 'axis', 'threshold', 'left' and "
                                             "'right' (or be a leaf)")
                threshold = node["threshold"]
                if type(threshold) not in (int, float) or not np.isfinite(threshold):
                    raise SpecificationError(f"function: blocked node {i} has a threshold that is not a finite number")
                left, right = _children(node, i, parents)
                checked.append({"axis": np.ascontiguousarray(_array(node, "axis", 1, width)),
                                "threshold": float(threshold), "left": left, "right": right})
        _one_tree(parents, "blocked")
        _tiled(ranges, n_cells, "the blocked leaves' cells")
        return cls(checked)

    def to_dict(self) -> dict:
        """Split nodes (axis, threshold, left, right) and leaves (kind, rule, offset)."""
        nodes = []
        for node in self.nodes:
            if "rule" in node:
                nodes.append({"kind": node["rule"].kind, "rule": node["rule"].to_dict(), "offset": int(node["offset"])})
            else:
                nodes.append({"axis": np.asarray(node["axis"]).tolist(), "threshold": float(node["threshold"]),
                              "left": int(node["left"]), "right": int(node["right"])})
        return {"nodes": nodes}

    @property
    def n_cells(self) -> int:
        return max(node["offset"] + node["rule"].n_cells for node in self.nodes if "rule" in node)

    def assign(self, Z) -> np.ndarray:
        """Each record down the cut tree (left when z . axis <= threshold), then the leaf's own
        rule; cell = leaf offset + leaf cell."""
        return _descend(self.nodes, Z.shape[0],
                        lambda node, rows: project_rows(Z, rows, node["axis"]) <= node["threshold"],
                        lambda node, rows: node["offset"] + node["rule"].assign(np.ascontiguousarray(Z[rows])))


@dataclass(frozen=True, eq=False)
class DecisionTree(Rule):
    """The untrusted-respondent survey design (:mod:`probanon.survey.tree`): a tree of questions
    on the keys in ORIGINAL units, which a respondent can follow on paper. Node 0 is the root; a
    split node names a key by its position ``column`` and holds either a ``threshold`` (numeric
    key: "is the value below threshold?") or a list of ``categories`` (categorical key, with the
    function's ``encoding``: "is the value one of them?"); yes goes to ``left``, no to ``right``;
    a leaf holds its ``cell``. The standardisation is not used to assign (it serves the
    distortion)."""

    kind: ClassVar[str] = "decision-tree"
    tie_rule: ClassVar[str] = (
        "from node 0 down the tree of questions on the keys in original units: to 'left' when the value of key "
        "'column' is below 'threshold' (a number) or is one of 'categories' (a categorical key), else to 'right'; a "
        "leaf gives the cell")
    nodes: list

    @classmethod
    def from_dict(cls, d, width, n_cells=None, encoding=None):
        """A tree rooted at node 0 (every other node the child of exactly one node with a lower
        index); split nodes ask about one of the keys (of ``encoding``, else the ``width``
        columns), a numeric key with a finite 'threshold', a categorical key with a non-empty
        list of its distinct 'categories'; the leaves' cells are 0..n_cells-1, each once."""
        keys = len(encoding.columns) if encoding is not None else width
        nodes = d.get("nodes")
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
                raise SpecificationError(f"function: decision-tree node {i} must ask about a key 'column' in "
                                         f"0..{keys - 1}")
            question = _question(node, i, column, encoding)
            left, right = _children(node, i, parents)
            checked.append({**question, "left": left, "right": right})
        _one_tree(parents, "decision-tree")
        n_cells = len(cells) if n_cells is None else n_cells
        if sorted(cells) != list(range(n_cells)):
            raise SpecificationError(f"function: the decision-tree leaves must give the cells 0..{n_cells - 1}, "
                                     "each once")
        return cls(checked)

    def to_dict(self) -> dict:
        return {"nodes": [dict(node) for node in self.nodes]}

    @property
    def n_cells(self) -> int:
        return sum("cell" in node for node in self.nodes)

    def assign(self, V, encoding=None) -> np.ndarray:
        """The rule on key values V (original units; categories as positions among their levels,
        :meth:`.mixed.Encoding.values`): from node 0, a record goes to ``left`` when its value is
        below the node's threshold (numeric key) or is one of its categories (categorical key),
        else to ``right``, down to a leaf, whose cell it takes."""
        def goes_left(node, rows):
            v = V[rows, node["column"]]
            if "categories" in node:
                return np.isin(v, _category_codes(encoding, node["column"], node["categories"]))
            return v < node["threshold"]

        return _descend(self.nodes, V.shape[0], goes_left, lambda node, rows: node["cell"])

    def apply(self, function, X, strata=None) -> np.ndarray:
        return self.assign(function._key_values(X), function.encoding)


def _question(node: dict, i: int, column: int, encoding) -> dict:
    """The checked question of decision-tree split node i on key ``column``."""
    name = encoding.columns[column] if encoding is not None else None
    if name is not None and encoding.levels(name) is not None:
        categories = node.get("categories")
        if set(node) != {"column", "categories", "left", "right"} or not isinstance(categories, list) \
                or not categories or len(set(map(str, categories))) != len(categories) \
                or (_category_codes(encoding, column, categories) < 0).any():
            raise SpecificationError(f"function: decision-tree node {i} on categorical key {name!r} must hold "
                                     "'categories' (distinct categories of the key), 'left' and 'right'")
        return {"column": column, "categories": list(categories)}
    threshold = node.get("threshold")
    if set(node) != {"column", "threshold", "left", "right"} or type(threshold) not in (int, float) \
            or not np.isfinite(threshold):
        raise SpecificationError(f"function: decision-tree node {i} on a numeric key must hold a finite "
                                 "'threshold', 'left' and 'right'")
    return {"column": column, "threshold": float(threshold)}


@dataclass(frozen=True, eq=False)
class Stratified(Rule):
    """MDAV, V-MDAV or PCL fitted within strata (:mod:`.strata`): the strata ``columns`` (names,
    or None), and per stratum its values (one tuple, or several for merged strata), its rule
    (:class:`OrderedBalls`, :class:`PowerDiagram` or :class:`Blocked`) and a cell offset. A
    record goes to the stratum of its strata values (read by name from a DataFrame, or given as
    ``strata=``), then cell = offset + the cell of that stratum's rule.

    ``strata``: one {"values", "rule", "offset"} per stratum."""

    kind: ClassVar[str] = "stratified"
    tie_rule: ClassVar[str] = (
        "the stratum whose values equal the record's strata values, then cell = offset + the cell of that stratum's "
        "rule (its kind's tie rule)")
    columns: list | None
    strata: list

    @classmethod
    def from_parts(cls, parts):
        """Strata as a fit gives them: {"values", "kind", "rule" (its parameters), "offset"}."""
        return cls(parts["columns"], [{"values": s["values"], "rule": rule_of(s["kind"], s["rule"]),
                                       "offset": s["offset"]} for s in parts["strata"]])

    @classmethod
    def from_dict(cls, d, width, n_cells=None, encoding=None):
        """Strata columns (names or null), strata with distinct value tuples of one length,
        rules of kind "ordered-balls", "power-diagram" or "blocked", and cell ranges
        [offset, offset + cells) that tile 0..n_cells-1."""
        kinds = (*(leaf.kind for leaf in LEAVES), Blocked.kind)
        high = _MAX_CELLS if n_cells is None else n_cells
        columns, strata = d.get("columns"), d.get("strata")
        if columns is not None and (not isinstance(columns, list) or not columns or
                                    not all(isinstance(c, str) for c in columns)):
            raise SpecificationError("function: a stratified rule's 'columns' must be a list of names (or null)")
        if not isinstance(strata, list) or not strata or not all(isinstance(s, dict) for s in strata):
            raise SpecificationError("function: a stratified rule needs a non-empty list of 'strata' (objects)")
        checked, ranges, seen = [], [], set()
        length = len(columns) if columns else None
        for i, stratum in enumerate(strata):
            if set(stratum) != {"values", "kind", "rule", "offset"} or stratum["kind"] not in kinds \
                    or not isinstance(stratum["rule"], dict):
                raise SpecificationError(f"function: stratum {i} must hold 'values', 'kind' (ordered-balls, "
                                         "power-diagram or blocked), 'rule' and 'offset'")
            values = stratum["values"]
            try:
                values = [tuple(_scalar(v) for v in row) for row in values]
            except (TypeError, InputError):
                raise SpecificationError(f"function: stratum {i} must list its values as lists of texts or "
                                         "numbers") from None
            length = length or (len(values[0]) if values else None)
            if not values or any(len(v) != length for v in values) or seen & set(values):
                raise SpecificationError(f"function: stratum {i} has no values, values of another length, or "
                                         "values of another stratum")
            seen |= set(values)
            sub = RULES[stratum["kind"]].from_dict(stratum["rule"], width)
            offset = _index(stratum, "offset", 0, high)
            ranges.append((offset, offset + sub.n_cells))
            checked.append({"values": values, "rule": sub, "offset": offset})
        _tiled(ranges, n_cells, "the strata's cells")
        return cls(columns, checked)

    def to_dict(self) -> dict:
        return {"columns": self.columns,
                "strata": [{"values": [list(v) for v in s["values"]], "kind": s["rule"].kind,
                            "rule": s["rule"].to_dict(), "offset": int(s["offset"])} for s in self.strata]}

    @property
    def n_cells(self) -> int:
        return max(s["offset"] + s["rule"].n_cells for s in self.strata)

    def assign(self, Z, values) -> np.ndarray:
        """Each record's stratum (its strata ``values``, :func:`.strata.stratum_index`), then that
        stratum's rule; cell = stratum offset + its cell."""
        which = stratum_index([s["values"] for s in self.strata], values)
        out = np.empty(Z.shape[0], np.int64)
        for s, stratum in enumerate(self.strata):
            rows = np.flatnonzero(which == s)
            if rows.size:
                out[rows] = stratum["offset"] + stratum["rule"].assign(np.ascontiguousarray(Z[rows]))
        return out

    def apply(self, function, X, strata=None) -> np.ndarray:
        Z = function._standardised(X)
        return self.assign(Z, self.record_strata(X, strata, Z.shape[0]))

    def record_strata(self, X, strata, n: int) -> list:
        """The strata values of the n records: ``strata`` (a DataFrame of the strata columns, or
        n values / rows), else the strata columns of the DataFrame (or Series) X, by name."""
        names = self.columns
        if strata is None:
            if names is None or not isinstance(X, (pd.DataFrame, pd.Series)):
                raise InputError("this function is stratified: give the strata of the records (strata=...)")
            strata = X[_named(X.columns, names, "records")] if isinstance(X, pd.DataFrame) else \
                X.loc[_named(X.index, names, "record")].to_frame().T
        return strata_of(strata, n)[1]


#: the rules a block of a "blocked" rule may have
LEAVES = (OrderedBalls, PowerDiagram)

#: every published kind: its class
RULES: dict[str, type[Rule]] = {rule.kind: rule for rule in
                                (OrderedBalls, PowerDiagram, Intervals, Blocked, DecisionTree, Stratified)}


def rule_class(kind) -> type[Rule]:
    """The class of a published kind; any other is a :class:`SpecificationError`."""
    if not isinstance(kind, str) or kind not in RULES:
        raise SpecificationError(f"function: unknown kind {kind!r}")
    return RULES[kind]


def rule_of(kind: str, parts: dict) -> Rule:
    """The rule of ``kind`` from the parameters a fit returns (its ``(kind, parts)``; nested
    rules as {"kind", "rule", "offset"})."""
    return rule_class(kind).from_parts(parts)


# -- walking a tree ------------------------------------------------------------------------------
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


def _category_codes(encoding, column: int, categories) -> np.ndarray:
    """Positions of ``categories`` among the levels of categorical key ``column``."""
    return pd.Index(encoding.levels(encoding.columns[column])).get_indexer(categories)


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


__all__ = ["RULES", "Blocked", "DecisionTree", "Intervals", "OrderedBalls", "PowerDiagram", "Rule", "Stratified",
           "rule_class", "rule_of"]

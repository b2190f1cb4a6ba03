"""The fitted microaggregation function: a published rule that maps anybody's
quasi-identifiers to a cell, without the data it was fitted on.

The rule is one of the published kinds, each a class of :mod:`.rules` (one registry,
``RULES``): "ordered-balls" (MDAV), "power-diagram" (V-MDAV, PCL), "intervals" (individual
ranking), "blocked" (MDAV, V-MDAV, PCL fitted in blocks), "decision-tree" (the
untrusted-respondent survey design) and "stratified" (fitted within strata); each class's
docstring states its rule and tie rule. One JSON format for all (``to_json`` /
:func:`function_from_json`), and one builder for every fit that publishes a function
(:func:`publish_function`: the estimators, the survey designs, the Dask path).

Centroids are published in original units; standardisation parameters travel with the rule.
A function fitted on a DataFrame records its column names and reads DataFrames (and Series,
one record each) by name; see :meth:`MicroaggregationFunction.assign`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .._validation import check_matrix, read_json_document
from ..data import Standardizer, values_frame
from ..errors import InputError, SpecificationError
from .rule_checks import _array
from .rules import Rule, _named, rule_class, rule_of

FORMAT_VERSION = 1


@dataclass
class MicroaggregationFunction:
    """A fitted, publishable mapping from quasi-identifiers to cells.

    Attributes: ``rule`` (a rule of :mod:`.rules`, its kind's parameters), ``kind`` (the
    rule's), ``columns`` (names, or None), ``standardizer``, ``centroids`` (cells x columns,
    original units; for "intervals" a list of per-column arrays), ``sizes`` (declared records
    per cell; for "intervals" per column and group), ``meta`` (free-form, e.g. the method and k).
    """

    standardizer: Standardizer
    centroids: object
    sizes: object
    rule: Rule
    columns: list | None = None
    meta: dict = field(default_factory=dict)
    encoding: object = None  # categorical keys (:class:`.mixed.Encoding`): records embedded first

    @property
    def kind(self) -> str:
        return self.rule.kind

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

    def assign(self, X, strata=None) -> np.ndarray:
        """Cell of each record (row of X, original units): shape (n,), or (n, d) for
        "intervals" (one group per column). A DataFrame is read by column name when the
        function has ``columns``, a Series is one record (n = 1); see :meth:`_records`. A
        "stratified" function also needs each record's stratum: ``strata``, or the strata
        columns of a DataFrame X."""
        return self.rule.apply(self, X, strata)

    def transform(self, X, strata=None):
        """Each record replaced by the centroid of its cell (original units): an array, or,
        for a DataFrame X, a DataFrame with X's index and the function's columns (its keys,
        x0, x1... without names), each keeping its type."""
        values = self.rule.released(self.centroids, self.assign(X, strata), self.encoding)
        return values_frame(values, self.columns, X.index) if isinstance(X, pd.DataFrame) else values

    @property
    def n_cells(self) -> int:
        return self.rule.n_cells

    # -- serialisation --------------------------------------------------------------------
    def to_dict(self) -> dict:
        centroids, sizes = self.rule.published(self.centroids, self.sizes)
        return {
            "probanon_function": FORMAT_VERSION,
            "kind": self.kind,
            "columns": self.columns,
            "standardization": self.standardizer.to_dict(),
            "centroids": centroids,
            "sizes": sizes,
            "rule": self.rule.to_dict(),
            "tie_rule": self.rule.tie_rule,
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


def publish_function(kind: str, rule: dict, *, standardizer, centroids, sizes, columns=None, encoding=None,
                     meta=None) -> MicroaggregationFunction:
    """The function a fit publishes: its rule of ``kind`` made from the parameters the fit
    returned (``rule``, :func:`.rules.rule_of`), the standardisation, the centroids and sizes of
    its cells, the key ``columns`` (names, or None), the categorical keys' ``encoding`` and
    ``meta``. The one place a fit (estimators, survey designs, the Dask path) builds a function."""
    return MicroaggregationFunction(standardizer=standardizer, centroids=centroids, sizes=sizes,
                                    rule=rule_of(kind, rule), columns=None if columns is None else list(columns),
                                    meta={} if meta is None else meta, encoding=encoding)


def function_from_json(text_or_path) -> MicroaggregationFunction:
    """Load a function written by :meth:`MicroaggregationFunction.to_json` (a JSON string,
    or a path to a file). Raises :class:`SpecificationError` if it is malformed."""
    d = read_json_document(text_or_path, "function")
    version = d.get("probanon_function") if isinstance(d, dict) else None
    if type(version) is not int or version != FORMAT_VERSION:
        raise SpecificationError("not a probanon function (missing or unknown 'probanon_function' version)")
    kind_class = rule_class(d.get("kind"))
    std = d.get("standardization")
    if not isinstance(std, dict):
        raise SpecificationError("function: missing 'standardization'")
    mean, scale = _array(std, "mean", 1), _array(std, "scale", 1)
    if mean.size != scale.size or mean.size == 0 or (scale <= 0).any():
        raise SpecificationError("function: bad standardization parameters")
    width = mean.size
    if not isinstance(d.get("rule"), dict):
        raise SpecificationError("function: missing 'rule'")
    rule, centroids, sizes, encoding = kind_class.read(d, width)
    if not isinstance(d.get("meta", {}), (dict, type(None))):
        raise SpecificationError("function: 'meta' must be an object")
    columns = d.get("columns")
    if encoding is not None:
        width = len(encoding.columns)  # names are the keys, not the embedded columns
    if columns is not None and (not isinstance(columns, list) or len(columns) != width):
        raise SpecificationError("function: 'columns' must name every column")
    return MicroaggregationFunction(standardizer=Standardizer(mean_=mean, scale_=scale), centroids=centroids,
                                    sizes=sizes, rule=rule, columns=columns, meta=d.get("meta") or {},
                                    encoding=encoding)


__all__ = ["FORMAT_VERSION", "MicroaggregationFunction", "function_from_json", "publish_function"]

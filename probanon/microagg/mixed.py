"""Categorical and mixed keys (issue 17, point 4), after sdcMicro's ``microaggrGower``.

Keys are numeric, ordinal or nominal. The distance between two records is a Gower-type sum over
the keys of:

- numeric: the squared difference of z-scores (as for numeric data alone);
- ordinal: the squared difference of the z-scored ranks of their levels;
- nominal: 1 when the categories differ, 0 when they agree.

It is the squared Euclidean distance of an embedding: numeric values and ordinal ranks (then
z-scored), and each nominal key as one indicator per category scaled by 1/sqrt(2) (two different
categories differ by 1/2 + 1/2 = 1). MDAV, V-MDAV and PCL run unchanged on the embedding, and the
published function (ordered balls, power diagram, blocks) assigns a record through the same
embedding, which it carries ("encoding" in its JSON).

Released values of a group: the (weighted) mean of a numeric key; for an ordinal key the
(weighted) lower median level of the members; for a nominal key the (weighted) mode, ties going
to the category first in the published order. So a categorical key never takes a category absent
from the group. An unknown category of a new record is an error naming it.

Missing key values (``missing=True`` below, the policy "pattern" of :mod:`.missing`): a missing
value of any key is NaN in :meth:`Encoding.values`, and a record lacking a nominal key has NaN in
each of its indicators; the levels are those observed, the z-scores those of the observed values.
A group releases a key (number or category) only when every member has it, else that key is
missing for the whole group: the rule of numeric keys (:func:`.means.released_means`), applied
to categories.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError, SpecificationError
from .means import observed_standardizer, released_means

NOMINAL_SCALE = 1.0 / np.sqrt(2.0)


def _level(value):
    """A category as a plain JSON scalar (text, integer or float)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return value


def _sorted_levels(series: pd.Series, missing: bool = False) -> list:
    """The distinct values of a categorical key, numbers first; a missing value refused unless
    ``missing`` (then left out)."""
    from ..data import MISSING_HINT

    values = pd.unique(series)
    if pd.isna(values).any():
        if not missing:
            raise InputError(f"categorical key {series.name!r} has a missing value{MISSING_HINT}")
        values = values[~pd.isna(values)]
    return sorted({_level(v) for v in values}, key=lambda v: (isinstance(v, str), v))


@dataclass(frozen=True)
class Encoding:
    """The embedding of mixed keys: ``columns`` (every key, in order), ``ordinal`` ({key: levels
    in order}) and ``nominal`` ({key: categories}); the other keys are numeric."""

    columns: tuple
    ordinal: dict
    nominal: dict

    @classmethod
    def fit(cls, frame: pd.DataFrame, nominal=(), ordinal=(), missing: bool = False) -> "Encoding":
        """From the keys ``frame``: ``nominal`` column names; ``ordinal`` column names (levels in
        numeric, else text order) or {name: [levels in order]}; ``missing``: the keys may lack
        values (module docstring)."""
        columns = [str(c) for c in frame.columns]
        ordinal = dict(ordinal) if isinstance(ordinal, dict) else {c: None for c in ordinal}
        nominal = list(nominal)
        for c in [*nominal, *ordinal]:
            if c not in columns:
                raise InputError(f"categorical key {c!r} is not a key column")
        both = set(nominal) & set(ordinal)
        if both:
            raise InputError(f"key {min(both)!r} is named both nominal and ordinal")
        levels = {}
        for c, given in ordinal.items():
            found = _sorted_levels(frame[c], missing)
            levels[c] = [_level(v) for v in given] if given is not None else found
            unknown = [v for v in found if v not in levels[c]]
            if unknown:
                raise InputError(f"ordinal key {c!r} has the value {unknown[0]!r}, not among its levels")
        for c in columns:
            if c not in nominal and c not in ordinal and not pd.api.types.is_numeric_dtype(frame[c]):
                raise InputError(f"key {c!r} holds text: name it nominal or ordinal (--nominal/--ordinal)")
        return cls(tuple(columns), levels, {c: _sorted_levels(frame[c], missing) for c in nominal})

    def levels(self, c):
        """The levels (ordinal, in order) or categories (nominal) of key ``c``; None for a number."""
        return self.nominal.get(c) or self.ordinal.get(c)

    def categorical(self) -> list:
        """The categorical keys: nominal, then ordinal."""
        return list(self.nominal) + list(self.ordinal)

    def widths(self) -> list:
        """Embedded columns of each key: one per category of a nominal key, else one."""
        return [len(self.nominal[c]) if c in self.nominal else 1 for c in self.columns]

    def width(self) -> int:
        return sum(self.widths())

    def scaled(self) -> np.ndarray:
        """True for the embedded columns that are z-scored (numeric values, ordinal ranks)."""
        return np.concatenate([np.full(w, c not in self.nominal) for c, w in zip(self.columns, self.widths())])

    def standardizer(self, E: np.ndarray, weights=None):
        """The z-scoring of embedded records E: numbers and ordinal ranks z-scored (weighted by
        ``weights`` if given; missing values, NaN, skipped), nominal indicators as they are."""
        from ..data import Standardizer
        scaled = self.scaled()
        mean, scale = np.zeros(E.shape[1]), np.ones(E.shape[1])
        if scaled.any():
            part = E[:, scaled]
            fitted = observed_standardizer(part, weights) if np.isnan(part).any() else Standardizer.fit_valid(part, weights)
            mean[scaled], scale[scaled] = fitted.mean_, fitted.scale_
        return Standardizer(mean_=mean, scale_=scale)

    def values(self, frame: pd.DataFrame, missing: bool = False) -> np.ndarray:
        """The key values of the records of ``frame`` (its key columns, by name), one column per
        key: the number of a numeric key, the position of the category among the key's levels
        (nominal: its categories) for a categorical key. An unknown category or level, a missing
        (unless ``missing``: NaN) or non-numeric value is an :class:`InputError`."""
        from .._validation import row_label

        absent = [c for c in self.columns if c not in frame.columns]
        if absent:
            raise InputError(f"records have no key column {absent[0]!r}")
        V = np.empty((len(frame), len(self.columns)))
        for j, c in enumerate(self.columns):
            values = frame[c]
            if self.levels(c) is not None:
                lacking = values.isna().to_numpy() if missing else np.zeros(len(values), bool)
                codes = pd.Index(self.levels(c)).get_indexer([_level(v) for v in values]).astype(np.float64)
                if (codes[~lacking] < 0).any():
                    bad = int(np.argmax((codes < 0) & ~lacking))
                    raise InputError(f"key {c!r}: the value {values.iloc[bad]!r} is not one of the fitted categories")
                codes[lacking] = np.nan
                V[:, j] = codes
            else:
                V[:, j] = pd.to_numeric(values, errors="coerce").to_numpy(np.float64)
        bad = np.isinf(V) | (np.isnan(V) & ~np.asarray(frame[list(self.columns)].isna().to_numpy() & missing))
        if bad.any():
            row = int(np.argwhere(bad)[0][0])
            raise InputError(f"records have a missing, infinite or non-numeric key value ({row_label(frame, row)})")
        return V

    def embed(self, frame: pd.DataFrame) -> np.ndarray:
        """The records of ``frame`` (its key columns, by name) in the embedding, before z-scoring
        (module docstring), from :meth:`values`."""
        return self.embed_values(self.values(frame))

    def embed_values(self, V: np.ndarray) -> np.ndarray:
        """Key values (:meth:`values`) in the embedding: a nominal key's position becomes its
        scaled indicator columns (NaN in each of them for a missing value)."""
        parts = []
        for j, c in enumerate(self.columns):
            if c not in self.nominal:
                parts.append(V[:, j:j + 1])
                continue
            lacking = np.isnan(V[:, j])
            indicators = np.eye(len(self.nominal[c]))[np.where(lacking, 0, V[:, j]).astype(np.int64)] * NOMINAL_SCALE
            indicators[lacking] = np.nan
            parts.append(indicators)
        return np.ascontiguousarray(np.hstack(parts))

    def released(self, frame: pd.DataFrame, labels: np.ndarray, weights=None) -> np.ndarray:
        """(groups x keys, object) each group's released values (module docstring); a key some
        member of a group lacks is missing (NaN) for the whole group."""
        n_groups = int(labels.max()) + 1
        w = np.ones(len(frame)) if weights is None else np.asarray(weights, dtype=np.float64)
        out = np.empty((n_groups, len(self.columns)), dtype=object)
        for j, c in enumerate(self.columns):
            levels = self.levels(c)
            if levels is None:
                out[:, j] = released_means(pd.to_numeric(frame[c]).to_numpy(np.float64)[:, None], labels, w)[:, 0]
                continue
            codes = pd.Index(levels).get_indexer([_level(v) for v in frame[c]])
            lacking = frame[c].isna().to_numpy()
            table = np.zeros((n_groups, len(levels)))
            np.add.at(table, (labels[~lacking], codes[~lacking]), w[~lacking])
            if c in self.nominal:  # weighted mode; ties to the first category
                pick = table.argmax(axis=1)
            else:  # weighted lower median: first level whose cumulative weight reaches half
                cum = table.cumsum(axis=1)
                pick = (cum >= cum[:, -1:] / 2).argmax(axis=1)
            out[:, j] = [levels[p] for p in pick]
            out[np.bincount(labels[lacking], minlength=n_groups) > 0, j] = np.nan
        return out

    def to_dict(self) -> dict:
        return {"columns": list(self.columns), "ordinal": {c: list(v) for c, v in self.ordinal.items()},
                "nominal": {c: list(v) for c, v in self.nominal.items()}}

    @classmethod
    def from_dict(cls, d) -> "Encoding":
        try:
            columns, ordinal, nominal = d["columns"], d["ordinal"], d["nominal"]
            ok = (isinstance(columns, list) and all(isinstance(c, str) for c in columns)
                  and all(c in columns and isinstance(v, list) and v for c, v in {**ordinal, **nominal}.items())
                  and all(isinstance(x, (str, int, float)) for v in {**ordinal, **nominal}.values() for x in v))
        except (KeyError, TypeError, AttributeError):
            ok = False
        if not ok:
            raise SpecificationError("function: malformed 'encoding' of categorical keys")
        return cls(tuple(columns), {c: [_level(x) for x in v] for c, v in ordinal.items()},
                   {c: [_level(x) for x in v] for c, v in nominal.items()})


__all__ = ["NOMINAL_SCALE", "Encoding"]

"""The kinds of recoding step (one dataclass each), as :mod:`probanon.categorical.recoding`'s
docstring describes them; :func:`~probanon.categorical.recoding.recode` applies them."""


from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import ClassVar

import numpy as np
import pandas as pd

from ..errors import InputError, ParameterError

#: how the labels of grouped codes are joined when no label is given
JOIN = " / "


def _number(v) -> str:
    """A number as R's ``cut`` writes it in an interval label (``formatC(v, digits = 8)``)."""
    return f"{float(v):.8g}"


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_))


def _as_number(text):
    """``text`` as an int or float if it reads as one, else None."""
    if _is_number(text):
        return text
    try:
        value = float(str(text).strip())
    except ValueError:
        return None
    return int(value) if value.is_integer() and "." not in str(text) and "e" not in str(text).lower() else value


def _key(v) -> str:
    """The text by which a value is matched (a whole float as an integer: 39.0 is "39")."""
    if _is_number(v):
        f = float(v)
        return str(int(f)) if f.is_integer() else repr(f)
    number = _as_number(v)
    return _key(number) if number is not None else str(v).strip()


class Step:
    """One recoding step on one ``column`` (the dataclasses below)."""

    kind: ClassVar[str]
    column: str

    def to_dict(self) -> dict:
        """A plain dictionary (JSON/TOML): ``kind``, ``column`` and the step's options."""
        out = {"kind": self.kind}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            out[f.name] = [list(pair) for pair in value.items()] if isinstance(value, dict) else \
                list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_dict(cls, d: dict) -> "Step":
        """The step of a :meth:`to_dict` dictionary (:func:`step_from_dict`); on a subclass, one of
        its kind."""
        step = step_from_dict(d)
        if cls is not Step and not isinstance(step, cls):
            raise ParameterError(f"expected a {cls.kind} step, got {d.get('kind')!r}")
        return step

    def apply(self, values: pd.Series, codes: dict | None, weights) -> tuple[pd.Series, dict | None]:
        """(the recoded values, the column's value labels after it: {code: label} or None)."""
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError


def _numeric(values: pd.Series, step: Step) -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        raise InputError(f"{step.kind}: column {step.column!r} is not numeric")
    x = values.to_numpy(np.float64, na_value=np.nan)
    if np.isinf(x).any():
        raise InputError(f"{step.kind}: column {step.column!r} holds an infinite value")
    return x


def _kept_missing(new: np.ndarray, old: np.ndarray) -> np.ndarray:
    """``new`` with the missing values of ``old`` back, bit for bit (tagged NaNs included)."""
    return np.where(np.isnan(old), old, new)


@dataclass(frozen=True)
class Intervals(Step):
    """A numeric key to intervals (module docstring): give one of ``breaks`` (increasing cut
    points), ``width`` or ``quantiles`` (the number of equal-frequency intervals)."""

    kind: ClassVar[str] = "intervals"
    column: str
    breaks: tuple | None = None
    width: float | None = None
    quantiles: int | None = None
    label: str = "interval"
    closed: str = "right"

    def __post_init__(self):
        given = [name for name in ("breaks", "width", "quantiles") if getattr(self, name) is not None]
        if len(given) != 1:
            raise ParameterError(f"intervals of {self.column!r}: give one of breaks, width or quantiles"
                                 + (f", not {' and '.join(given)}" if given else ""))
        if self.label not in ("interval", "lower", "code"):
            raise ParameterError(f"intervals: label must be 'interval', 'lower' or 'code', got {self.label!r}")
        if self.closed not in ("right", "left"):
            raise ParameterError(f"intervals: closed must be 'right' or 'left', got {self.closed!r}")
        if self.breaks is not None:
            b = tuple(float(v) for v in self.breaks)
            if len(b) < 2 or not all(math.isfinite(v) for v in b) or any(x >= y for x, y in zip(b, b[1:])):
                raise ParameterError(f"intervals of {self.column!r}: breaks must be two or more increasing finite "
                                     f"numbers, got {list(self.breaks)}")
            object.__setattr__(self, "breaks", b)
        if self.width is not None and not (_is_number(self.width) and math.isfinite(self.width) and self.width > 0):
            raise ParameterError(f"intervals of {self.column!r}: the width must be a positive number, got {self.width!r}")
        if self.quantiles is not None and not (isinstance(self.quantiles, (int, np.integer)) and self.quantiles >= 2):
            raise ParameterError(f"intervals of {self.column!r}: quantiles must be an integer >= 2, "
                                 f"got {self.quantiles!r}")

    def cut_points(self, x: np.ndarray) -> np.ndarray:
        """The breaks used on the values ``x`` (missing values left out)."""
        present = x[~np.isnan(x)]
        if self.breaks is not None:
            return np.asarray(self.breaks, dtype=np.float64)
        if not present.size:
            return np.array([0.0, 1.0])
        if self.width is not None:
            w = float(self.width)
            if self.closed == "right":  # bands (a, a + w], a a multiple of w
                lo, hi = (math.ceil(present.min() / w) - 1) * w, math.ceil(present.max() / w) * w
            else:  # [a, a + w)
                lo, hi = math.floor(present.min() / w) * w, (math.floor(present.max() / w) + 1) * w
            return lo + w * np.arange(int(round((hi - lo) / w)) + 1)
        points = np.unique(np.quantile(present, np.linspace(0.0, 1.0, int(self.quantiles) + 1)))
        return points if points.size >= 2 else np.array([points[0], points[0] + 1.0])

    def texts(self, b: np.ndarray) -> list[str]:
        """The interval labels of breaks ``b`` (R's ``cut`` with ``include.lowest = TRUE``; bands of
        a ``width`` all alike, as no value lies on their outer edge)."""
        m, edge = b.size - 1, self.width is None  # width bands never hold their outer edge
        if self.closed == "right":
            return [("[" if i == 0 and edge else "(") + f"{_number(b[i])},{_number(b[i + 1])}]" for i in range(m)]
        return [f"[{_number(b[i])},{_number(b[i + 1])}" + ("]" if i == m - 1 and edge else ")") for i in range(m)]

    def apply(self, values, codes, weights):
        x = _numeric(values, self)
        b = self.cut_points(x)
        present = ~np.isnan(x)
        outside = present & ((x < b[0]) | (x > b[-1]))
        if outside.any():
            raise InputError(f"intervals of {self.column!r}: the value {_number(x[outside][0])} lies outside the "
                             f"breaks {_number(b[0])}..{_number(b[-1])}; extend the breaks")
        side = "left" if self.closed == "right" else "right"
        i = np.clip(np.searchsorted(b, np.where(present, x, b[0]), side=side) - 1, 0, b.size - 2)
        texts = self.texts(b)
        if self.label == "interval":
            out = np.array(texts, dtype=object)[i]
            out[~present] = None
            return pd.Series(out, index=values.index, dtype=object), None
        numbers = b[:-1] if self.label == "lower" else np.arange(1, b.size, dtype=np.float64)
        out = _kept_missing(numbers[i], x)
        labels = {(_as_number(_key(v))): t for v, t in zip(numbers, texts)}
        return pd.Series(out, index=values.index), labels

    def describe(self) -> str:
        how = (f"breaks {', '.join(_number(v) for v in self.breaks)}" if self.breaks is not None else
               f"width {_number(self.width)}" if self.width is not None else f"{self.quantiles} quantiles")
        shown = {"interval": "as text", "lower": "as lower bounds", "code": "as codes 1..m"}[self.label]
        return f"{self.closed}-closed intervals ({how}) {shown}"


@dataclass(frozen=True)
class Round(Step):
    """A numeric key to the nearest multiple of ``base`` (halves up): ``base * floor(x / base + 1/2)``."""

    kind: ClassVar[str] = "round"
    column: str
    base: float = 1

    def __post_init__(self):
        if not (_is_number(self.base) and math.isfinite(self.base) and self.base > 0):
            raise ParameterError(f"round {self.column!r}: the base must be a positive number, got {self.base!r}")

    def apply(self, values, codes, weights):
        x = _numeric(values, self)
        b = float(self.base)
        return pd.Series(_kept_missing(b * np.floor(x / b + 0.5), x), index=values.index), None

    def describe(self) -> str:
        return f"rounded to multiples of {_number(self.base)}"


def _regroup(step: Step, values: pd.Series, mapping: dict, codes: dict | None, given: dict):
    """Apply {old value key: new value} to ``values`` (value labels: module docstring); ``given``:
    {new value: its label}."""
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    missing = values.isna().to_numpy()
    keys = np.array([None if m else _key(v) for v, m in zip(values.to_numpy(dtype=object), missing)], dtype=object)
    groups: dict = {}  # new value -> old keys mapped to it
    for old, new in mapping.items():
        groups.setdefault(new, []).append(old)
    text_new = any(not _is_number(_as_number(n) if isinstance(n, str) else n) for n in groups)
    if numeric and (codes is not None or not text_new):  # the column stays numeric codes
        code_of = {}
        labels = dict(codes or {})
        for new, olds in groups.items():
            number = _as_number(new) if isinstance(new, str) else new
            code = number if _is_number(number) else min(float(o) for o in olds)
            code_of[new] = code
            kept = [] if _key(code) in mapping or _as_number(_key(code)) not in labels else [_key(code)]
            joined = JOIN.join(str(labels.get(_as_number(o), o)) for o in kept + olds)
            text = given.get(new, new if not _is_number(number) else joined if codes else None)
            for o in olds:
                labels.pop(_as_number(o), None)
            if text is not None and codes is not None:
                labels[_as_number(_key(code))] = text
        x = values.to_numpy(np.float64, na_value=np.nan)
        new_x = np.array([float(code_of[mapping[k]]) if k in mapping else v for k, v in zip(keys, x)])
        return pd.Series(_kept_missing(new_x, x), index=values.index), (labels if codes is not None else None)
    out = np.array([None if k is None else str(mapping[k]) if k in mapping else
                    (k if numeric else v) for k, v in zip(keys, values.to_numpy(dtype=object))], dtype=object)
    return pd.Series(out, index=values.index, dtype=object), None


def _resolve(step: Step, values: pd.Series, codes: dict | None, old) -> list:
    """The value keys an old value names: itself (a value of the column, or a number of a
    numeric column), or the codes whose label it is."""
    numeric = pd.api.types.is_numeric_dtype(values)
    k = _key(old)
    if (numeric and _as_number(k) is not None) or (not numeric and (values.astype(str).str.strip() == k).any()):
        return [k]
    named = [_key(c) for c, label in (codes or {}).items() if str(label) == str(old)]
    if named:
        return named
    raise InputError(f"{step.kind} {step.column!r}: {old!r} is not a value of the column"
                     + (" nor one of its value labels" if codes else ""))


@dataclass(frozen=True)
class Group(Step):
    """Categories grouped by ``mapping`` {old: new} (sdcMicro's ``groupAndRename``); ``labels``:
    {new: value label} for a labelled (SPSS/Stata) column (default: the labels of the codes
    grouped, joined by " / "). An old value may be named by its value label."""

    kind: ClassVar[str] = "group"
    column: str
    mapping: dict = field(default_factory=dict)
    labels: dict | None = None

    def __post_init__(self):
        for name in ("mapping", "labels"):
            value = getattr(self, name)
            if isinstance(value, list):  # from to_dict: pairs
                try:
                    object.__setattr__(self, name, {a: b for a, b in value})
                except (TypeError, ValueError):
                    raise ParameterError(f"group {self.column!r}: {name} must be pairs [old, new]") from None
        if not isinstance(self.mapping, dict) or not self.mapping:
            raise ParameterError(f"group {self.column!r}: the mapping {{old: new}} is empty")

    def apply(self, values, codes, weights):
        mapping = {}
        for old, new in self.mapping.items():
            for k in _resolve(self, values, codes, old):
                mapping[k] = new
        return _regroup(self, values, mapping, codes, dict(self.labels or {}))

    def describe(self) -> str:
        groups: dict = {}
        for old, new in self.mapping.items():
            groups.setdefault(new, []).append(str(old))
        return "grouped: " + "; ".join(f"{', '.join(olds)} -> {new}" for new, olds in groups.items())


def read_hierarchy(path, header: bool | None = None) -> list[list[str]]:
    """The rows of an ARX hierarchy file (CSV, ``,`` ``;`` or tab separated; ``header`` None: the
    first row is a header when its first cell is not a number while the second row's is, or it
    names a level, e.g. "level 0"; a header row not recognised is one more level-0 value, harmless
    unless the data hold its first cell)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"hierarchy {path}: cannot be read ({exc.strerror or exc})") from None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise InputError(f"hierarchy {path}: the file is empty")
    sep = max((";", ",", "\t"), key=lambda s: lines[0].count(s))
    rows = [[c.strip() for c in row] for row in csv.reader(io.StringIO("\n".join(lines)), delimiter=sep)]
    if header is None:
        first = rows[0][0]
        header = (len(rows) > 1 and _as_number(first) is None and _as_number(rows[1][0]) is not None) or \
            first.lower().replace("_", " ").startswith("level")
    rows = rows[1:] if header else rows
    widths = {len(r) for r in rows}
    if not rows or len(widths) != 1:
        raise InputError(f"hierarchy {path}: every row must have the same number of levels"
                         if rows else f"hierarchy {path}: no rows")
    return rows


@dataclass(frozen=True)
class Hierarchy(Step):
    """Categories replaced by their value at ``level`` (1, 2, ...; 0 is the original) of the ARX
    hierarchy file ``path`` (:func:`read_hierarchy`); ``labels``: as :class:`Group`'s."""

    kind: ClassVar[str] = "hierarchy"
    column: str
    path: str = ""
    level: int = 1
    header: bool | None = None
    labels: dict | None = None

    def __post_init__(self):
        if isinstance(self.labels, list):
            object.__setattr__(self, "labels", {a: b for a, b in self.labels})
        if not isinstance(self.level, (int, np.integer)) or isinstance(self.level, bool) or self.level < 0:
            raise ParameterError(f"hierarchy {self.column!r}: the level must be an integer >= 0, got {self.level!r}")

    def mapping(self, values: pd.Series, codes: dict | None) -> dict:
        """{value key of the column: its value at the level}."""
        rows = read_hierarchy(self.path, self.header)
        if self.level >= len(rows[0]):
            raise InputError(f"hierarchy {self.path}: no level {self.level} (levels 0..{len(rows[0]) - 1})")
        table = {}
        for row in rows:
            if table.setdefault(_key(row[0]), row[self.level]) != row[self.level]:
                raise InputError(f"hierarchy {self.path}: {row[0]!r} appears twice in level 0 with different values "
                                 f"at level {self.level} ({table[_key(row[0])]!r}, {row[self.level]!r})")
        label_of = {_key(c): str(label) for c, label in (codes or {}).items()}
        mapping = {}
        for v in pd.unique(values.dropna()):
            k = _key(v)
            found = table.get(k, table.get(_key(label_of[k])) if k in label_of else None)
            if found is None:
                raise InputError(f"hierarchy {self.path}: the value {v!r} of {self.column!r} is not in level 0")
            number = _as_number(found)
            mapping[k] = number if number is not None else found
        return mapping

    def apply(self, values, codes, weights):
        if self.level == 0:
            self.mapping(values, codes)  # still checks every value is in the file
            return values, codes
        return _regroup(self, values, self.mapping(values, codes), codes, dict(self.labels or {}))

    def describe(self) -> str:
        return f"hierarchy {Path(self.path).name}, level {self.level}"


def _quantile(x: np.ndarray, q: float) -> float:
    return float(np.quantile(x[~np.isnan(x)], q))


@dataclass(frozen=True)
class TopCode(Step):
    """Values above ``threshold`` (or above the ``quantile`` q of the values) replaced by
    ``replacement``: a number, "mean" (the tail's mean, weighted by the sampling weights if
    any: sum(w x) / sum(w) over the tail) or None (the threshold). sdcMicro's ``topBotCoding``."""

    kind: ClassVar[str] = "top"
    column: str
    threshold: float | None = None
    quantile: float | None = None
    replacement: float | str | None = None

    def __post_init__(self):
        if (self.threshold is None) == (self.quantile is None):
            raise ParameterError(f"{self.kind}-coding {self.column!r}: give a threshold or a quantile, one of them")
        if self.quantile is not None and not (_is_number(self.quantile) and 0 < self.quantile < 1):
            raise ParameterError(f"{self.kind}-coding {self.column!r}: the quantile must lie in (0, 1), "
                                 f"got {self.quantile!r}")
        if self.threshold is not None and not (_is_number(self.threshold) and math.isfinite(self.threshold)):
            raise ParameterError(f"{self.kind}-coding {self.column!r}: the threshold must be a number")
        r = self.replacement
        if not (r is None or r == "mean" or (_is_number(r) and math.isfinite(r))):
            raise ParameterError(f"{self.kind}-coding {self.column!r}: the replacement must be a number or 'mean', "
                                 f"got {r!r}")

    def tail(self, x: np.ndarray) -> tuple[np.ndarray, float]:
        t = self.threshold if self.threshold is not None else _quantile(x, self.quantile)
        return (x > t) if self.kind == "top" else (x < t), float(t)

    def apply(self, values, codes, weights):
        x = _numeric(values, self)
        tail, t = self.tail(x)  # NaN compares False: missing values stay out of the tail
        if not tail.any():
            return values, codes
        if self.replacement == "mean":
            w = np.ones_like(x) if weights is None else np.asarray(weights, dtype=np.float64)
            value = float(np.sum(w[tail] * x[tail]) / np.sum(w[tail]))
        else:
            value = t if self.replacement is None else float(self.replacement)
        return pd.Series(np.where(tail, value, x), index=values.index), codes

    def describe(self) -> str:
        side = "above" if self.kind == "top" else "below"
        at = _number(self.threshold) if self.threshold is not None else f"the {self.quantile:g} quantile"
        by = {None: "the threshold", "mean": "the tail's mean"}.get(self.replacement, None) or _number(self.replacement)
        return f"{self.kind}-coded: values {side} {at} replaced by {by}"


@dataclass(frozen=True)
class BottomCode(TopCode):
    """As :class:`TopCode`, for the values below the threshold."""

    kind: ClassVar[str] = "bottom"


@dataclass(frozen=True)
class SetMissing(Step):
    """The ``values`` of a column set missing (sdcMicro's ``NA`` recoding of special codes: "don't
    know", 99, a category too rare to publish). A value may be named by its value label."""

    kind: ClassVar[str] = "missing"
    column: str
    values: tuple = ()

    def __post_init__(self):
        if isinstance(self.values, (list, str, int, float)):
            object.__setattr__(self, "values", tuple([self.values] if isinstance(self.values, (str, int, float))
                                                     else self.values))
        if not self.values:
            raise ParameterError(f"missing {self.column!r}: name at least one value to set missing")

    def apply(self, values, codes, weights):
        hit = set()
        for v in self.values:
            hit.update(_key(x) for x in _resolve(self, values, codes, v))
        codes_of, distinct = pd.factorize(values)  # each distinct value compared once
        chosen = np.array([_key(x) in hit for x in distinct] + [False], dtype=bool)
        mask = chosen[codes_of]  # code -1 (missing): the last entry, False
        new = values.astype(object).where(~mask, None) if not pd.api.types.is_numeric_dtype(values) else \
            values.where(~mask, np.nan)
        left = None if codes is None else {c: t for c, t in codes.items() if _key(c) not in hit} or None
        return new, left

    def describe(self) -> str:
        return "set missing: " + ", ".join(str(v) for v in self.values)


@dataclass(frozen=True)
class Combine(Step):
    """A new ``column`` made of ``columns`` joined by ``sep`` (a stratum from region and sex:
    "north/female"); missing if any of them is. The sources are kept."""

    kind: ClassVar[str] = "combine"
    creates: ClassVar[bool] = True
    column: str
    columns: tuple = ()
    sep: str = "/"

    def __post_init__(self):
        if isinstance(self.columns, list):
            object.__setattr__(self, "columns", tuple(self.columns))
        if len(self.columns) < 1 or not all(isinstance(c, str) for c in self.columns):
            raise ParameterError(f"combine {self.column!r}: name the columns to combine")

    def build(self, frame: pd.DataFrame) -> pd.Series:
        parts = [frame[c] for c in self.columns]
        lacking = np.zeros(len(frame), dtype=bool)
        for part in parts:
            lacking |= part.isna().to_numpy()
        def keys(part):
            codes_of, distinct = pd.factorize(part)
            return np.array([_key(x) for x in distinct] + [""], dtype=object)[codes_of]
        text = keys(parts[0])
        for part in parts[1:]:
            text = text + self.sep + keys(part)
        text = pd.Series(text, index=frame.index)
        return text.astype(object).where(~lacking, None)

    def describe(self) -> str:
        return f"made of {', '.join(self.columns)} (joined by {self.sep!r})"


#: every kind of step, by its ``kind``
STEPS = {cls.kind: cls for cls in (Intervals, Round, Group, Hierarchy, TopCode, BottomCode, SetMissing, Combine)}


def step_from_dict(d: dict) -> Step:
    """The step a :meth:`Step.to_dict` dictionary describes (:class:`ParameterError` otherwise)."""
    if not isinstance(d, dict) or d.get("kind") not in STEPS:
        raise ParameterError(f"a recoding step must be an object with 'kind' one of {', '.join(STEPS)}, got {d!r}")
    cls = STEPS[d["kind"]]
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(d) - names - {"kind"})
    if unknown or "column" not in d:
        raise ParameterError(f"{d['kind']} step: " + (f"unknown option {unknown[0]!r}" if unknown else "no column"))
    options = {k: tuple(v) if k in ("breaks", "values", "columns") and isinstance(v, list) else v
               for k, v in d.items() if k != "kind"}
    return cls(**options)

"""The schema of a survey's confidential answers, and the check of one respondent's answers.

A field is ``{"name", "type": "number" | "integer" | "category", "min", "max", "categories",
"required", "label"}``. Free text is not offered: it is where respondents identify themselves.
Answers are checked strictly: no undeclared field, no quasi-identifier, every value of its type
and in its range (``true`` is not a number, ``1.0`` is not an integer), every required field
present. Errors name the field, never echo the value.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

TYPES = ("number", "integer", "category")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
MAX_FIELDS = 200
MAX_CATEGORIES = 1000
MAX_TEXT = 200
MAX_INTEGER = 2**53 - 1  # integers beyond are not exact in JavaScript or in a float column


class SchemaError(ValueError):
    """A malformed answer schema or answers that do not fit it (one line, names the field)."""


def _text(value, what: str, limit: int = MAX_TEXT) -> str:
    if not isinstance(value, str) or len(value) > limit:
        raise SchemaError(f"{what} must be a string of at most {limit} characters")
    return value


def _finite(value) -> bool:
    """A JSON number that a float holds: not a bool, not NaN or infinite, not an integer beyond
    +-(2^53 - 1)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return abs(value) <= MAX_INTEGER if isinstance(value, int) else math.isfinite(value)


def _number(value, what: str) -> float | None:
    if value is None:
        return None
    if not _finite(value):
        raise SchemaError(f"{what} must be a finite number (integers within +-(2^53 - 1)) or null")
    return value


@dataclass(frozen=True)
class Field:
    name: str
    type: str
    required: bool
    label: str
    min: float | None = None
    max: float | None = None
    categories: tuple[str, ...] | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "type": self.type, "min": self.min, "max": self.max,
                "categories": None if self.categories is None else list(self.categories),
                "required": self.required, "label": self.label}

    def check(self, value):
        """The value if it fits the field, else :class:`SchemaError` naming the field."""
        if self.type == "category":
            if not isinstance(value, str) or value not in self.categories:
                raise SchemaError(f"answer {self.name!r} must be one of its {len(self.categories)} categories")
            return value
        if self.type == "integer":
            if not isinstance(value, int) or not _finite(value):
                raise SchemaError(f"answer {self.name!r} must be an integer within +-(2^53 - 1)")
        elif not _finite(value):
            raise SchemaError(f"answer {self.name!r} must be a finite number")
        if (self.min is not None and value < self.min) or (self.max is not None and value > self.max):
            raise SchemaError(f"answer {self.name!r} must lie in [{self.min}, {self.max}]")
        return value


KEYS = {"name", "type", "min", "max", "categories", "required", "label"}


def parse_field(d) -> Field:
    if not isinstance(d, dict):
        raise SchemaError("each answer field is an object")
    unknown = set(d) - KEYS
    if unknown:
        raise SchemaError(f"answer field: unknown key {sorted(unknown)[0]!r} (allowed: {', '.join(sorted(KEYS))})")
    name = d.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise SchemaError("answer field: 'name' must be an identifier (letters, digits, _; at most 64)")
    kind = d.get("type")
    if kind not in TYPES:
        raise SchemaError(f"answer {name!r}: 'type' must be one of {', '.join(TYPES)}")
    required = d.get("required", True)
    if not isinstance(required, bool):
        raise SchemaError(f"answer {name!r}: 'required' must be true or false")
    label = _text(d.get("label", name), f"answer {name!r}: 'label'")
    if kind == "category":
        cats = d.get("categories")
        if (not isinstance(cats, list) or not 1 <= len(cats) <= MAX_CATEGORIES
                or any(not isinstance(c, str) or not c or len(c) > MAX_TEXT for c in cats) or len(set(cats)) != len(cats)):
            raise SchemaError(f"answer {name!r}: 'categories' must list 1..{MAX_CATEGORIES} distinct non-empty strings")
        if d.get("min") is not None or d.get("max") is not None:
            raise SchemaError(f"answer {name!r}: a category has no 'min' or 'max'")
        return Field(name, kind, required, label, categories=tuple(cats))
    if d.get("categories") is not None:
        raise SchemaError(f"answer {name!r}: only a category has 'categories'")
    lo, hi = _number(d.get("min"), f"answer {name!r}: 'min'"), _number(d.get("max"), f"answer {name!r}: 'max'")
    if lo is not None and hi is not None and lo > hi:
        raise SchemaError(f"answer {name!r}: 'min' exceeds 'max'")
    return Field(name, kind, required, label, min=lo, max=hi)


def bare(name: str) -> str:
    """``name`` without case, blanks or punctuation: ``AGI``, ``agi``, ``A.G.I``, ``a g i`` and
    ``a_g_i`` are all ``agi``."""
    return "".join(ch for ch in name.casefold() if ch.isalnum())


def same_as_key(name: str, quasi_identifiers) -> str | None:
    """The quasi-identifier that ``name`` equals up to case, blanks or punctuation, if any (issue
    40.4: a survey must not ask for a key's exact value as an answer, ``agi`` beside ``AGI``)."""
    return next((q for q in quasi_identifiers if bare(q) == bare(name)), None)


def parse_schema(fields, quasi_identifiers=(), release_columns=()) -> tuple[Field, ...]:
    """The answer fields. Each becomes a column of the release beside the ``quasi_identifiers`` and
    the ``release_columns`` (``cell``, ...), so a name equal to any of those or to another answer's,
    ignoring case (SPSS, SAS and SQL do), is refused; a name equal to a quasi-identifier up to case,
    blanks or punctuation too (it would ask for the key's value: :func:`same_as_key`)."""
    if not isinstance(fields, list) or not 1 <= len(fields) <= MAX_FIELDS:
        raise SchemaError(f"'answers' must list 1..{MAX_FIELDS} answer fields")
    parsed = tuple(parse_field(f) for f in fields)
    written = {c.casefold() for c in release_columns}
    seen = set()
    for f in parsed:
        name = f.name.casefold()
        if name in seen:
            raise SchemaError(f"answer {f.name!r} is declared twice (names are compared ignoring case)")
        key = same_as_key(f.name, quasi_identifiers)
        if key is not None:
            raise SchemaError(f"answer {f.name!r}: the name is the quasi-identifier {key!r} of the function "
                              "(names are compared ignoring case, blanks and punctuation)")
        if name in written:
            raise SchemaError(f"answer {f.name!r}: the release writes a column of that name "
                              f"({', '.join(release_columns)} are reserved)")
        seen.add(name)
    return parsed


def undeclared(name, quasi_identifiers, what: str) -> str:
    """The refusal of an undeclared field ``name`` (a quasi-identifier is named as such)."""
    if name in quasi_identifiers:
        return f"{name!r} is a quasi-identifier: send only the cell, never its value"
    return f"{what}: undeclared field" + (f" {name!r}" if NAME.fullmatch(name) else "")


def check_answers(schema: tuple[Field, ...], answers, quasi_identifiers=()) -> dict:
    """The answers, in schema order, if they fit; optional fields left out are absent."""
    if not isinstance(answers, dict):
        raise SchemaError("'answers' must be an object")
    declared = {f.name: f for f in schema}
    for name in answers:
        if name not in declared:
            raise SchemaError(undeclared(name, quasi_identifiers, "answers"))
    out = {}
    for f in schema:
        if f.name in answers and answers[f.name] is not None:
            out[f.name] = f.check(answers[f.name])
        elif f.required:
            raise SchemaError(f"answer {f.name!r} is required")
    return out


def parse_questions(questions, columns) -> dict:
    """Labels and units of the quasi-identifiers shown on the respondent page."""
    questions = {} if questions is None else questions
    if not isinstance(questions, dict):
        raise SchemaError("'questions' must map quasi-identifiers to {label, unit}")
    out = {}
    for col in columns:
        q = questions.get(col, {})
        if not isinstance(q, dict) or set(q) - {"label", "unit"}:
            raise SchemaError(f"question {col!r}: an object with 'label' and 'unit' only")
        unit = q.get("unit")
        out[col] = {"label": _text(q.get("label", col), f"question {col!r}: 'label'"),
                    "unit": None if unit is None else _text(unit, f"question {col!r}: 'unit'")}
    extra = set(questions) - set(columns)
    if extra:
        raise SchemaError(f"question {sorted(extra)[0]!r} is not a quasi-identifier of the function")
    return out

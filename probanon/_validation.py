"""Input checks shared by the API and the CLI.

Each check raises a subclass of :class:`probanon.errors.ProbanonError` with a
one-line message; nothing is written before all checks pass.
"""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .errors import InputError, NotNumbersError, ParameterError


def check_k(k, n: int | None = None, name: str = "k") -> int:
    """Return ``k`` as an int after checking 1 <= k (<= n when n is given)."""
    if isinstance(k, (bool, np.bool_)):
        raise ParameterError(f"{name} must be an integer, got {k!r}")
    if not isinstance(k, numbers.Integral):
        if isinstance(k, numbers.Real) and float(k).is_integer():
            k = int(k)
        else:
            raise ParameterError(f"{name} must be an integer, got {k!r}")
    k = int(k)
    if k < 1:
        raise ParameterError(f"{name} must be >= 1, got {k}")
    if n is not None and k > n:
        raise ParameterError(f"{name} = {k} is larger than the number of records ({n})")
    return k


def check_runs(runs, name: str = "runs") -> int:
    """Return ``runs`` as an int after checking it is a positive integer (booleans refused)."""
    if isinstance(runs, (bool, np.bool_)) or not isinstance(runs, numbers.Integral) or runs < 1:
        raise ParameterError(f"{name} must be a positive integer, got {runs!r}")
    return int(runs)


def check_confidence(confidence) -> float:
    """Return a confidence level in the open interval (0, 1) as a float."""
    if (isinstance(confidence, (bool, np.bool_)) or not isinstance(confidence, numbers.Real)
            or not (0.0 < float(confidence) < 1.0)):
        raise ParameterError(f"confidence must be in (0, 1), got {confidence!r}")
    return float(confidence)


def check_matrix(X, name: str = "X", missing: bool = False, hint: str = "", two_d: bool = False) -> np.ndarray:
    """Return ``X`` as a finite 2-D float64 array with at least one row and column.

    Accepts NumPy arrays, pandas DataFrames (all columns must be numeric) and
    nested sequences; a 1-D input is one column, unless ``two_d`` (the estimators, as
    scikit-learn's contract wants: then it is refused). Raises :class:`InputError` on a sparse
    matrix, complex numbers, text, NaN or infinity (``missing``: NaN, a missing value, is
    allowed; ``hint`` ends the message of a missing value).
    """
    if hasattr(X, "toarray") or hasattr(X, "tocsr"):
        raise InputError(f"{name} is a sparse matrix, which is not supported: give a dense table (X.toarray())")
    kinds = list(X.dtypes) if isinstance(X, pd.DataFrame) else [getattr(X, "dtype", None)]
    if any(getattr(kind, "kind", None) == "c" for kind in kinds):
        raise InputError(f"{name} holds complex numbers: Complex data not supported")
    labels, frame = None, X
    if isinstance(X, pd.DataFrame):
        bad = [c for c in X.columns if not is_numeric_column(X[c])]
        if bad:
            raise InputError(f"{name}: column {bad[0]!r} is not numeric")
        labels = list(X.columns)
        X = X.to_numpy(dtype=np.float64)
    else:
        try:
            X = np.asarray(X, dtype=np.float64)
        except TypeError as exc:  # an object that is no number at all (scikit-learn wants a TypeError)
            raise NotNumbersError(f"{name} contains values that are not numbers ({exc})") from None
        except ValueError:
            raise InputError(f"{name} contains values that are not numbers") from None
    if X.ndim == 1:
        if two_d:
            raise InputError(f"{name} must be a 2-D table (records x columns), got a 1-D array: Reshape your data "
                             "either using X.reshape(-1, 1) if it has a single column or X.reshape(1, -1) if it is "
                             "a single record")
        X = X.reshape(-1, 1)
    if X.ndim != 2:
        raise InputError(f"{name} must be a 2-D table, got {X.ndim} dimensions")
    if X.shape[0] == 0:
        raise InputError(f"{name} is empty (no records)")
    if X.shape[1] == 0:
        raise InputError(f"{name} has no columns: 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    bad = np.isinf(X) if missing else ~np.isfinite(X)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        where = f"{row_label(frame, row)}, column {repr(labels[col]) if labels is not None else col}"
        if missing:
            raise InputError(f"{name} has an infinite value ({where})")
        raise InputError(f"{name} has a missing or infinite value ({where}){hint if np.isnan(X[row, col]) else ''}")
    return np.ascontiguousarray(X)


def row_label(frame, position: int) -> str:
    """How a message names the record at ``position``: its file line (``line 7``) when the
    frame was read from a CSV file (``attrs["first_line"]``, see :func:`probanon.data.read_table`),
    its case number counted from 1 as SPSS and Stata number them (``case 7``) when read from
    such a file (``attrs["first_case"]``), else ``row <position>`` (counted from 0)."""
    attrs = getattr(frame, "attrs", {})
    if attrs.get("first_line") is not None:
        return f"line {attrs['first_line'] + int(position)}"
    if attrs.get("first_case") is not None:
        return f"case {attrs['first_case'] + int(position)}"
    return f"row {int(position)}"


def is_numeric_column(series: pd.Series) -> bool:
    """True for int/float columns (booleans excluded)."""
    return pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)


MAX_SEED = 2**63 - 1  #: seeds are stored as int64 (JSON, NumPy arrays): 0 <= seed <= MAX_SEED


def check_weights(weights, n: int, name: str = "weights", frame=None) -> np.ndarray:
    """Sampling weights: ``n`` finite numbers > 0, as float64; else a one-line
    :class:`InputError` naming the first bad value (its file line when ``frame``, the table the
    weights come from, was read from a file)."""
    raw = np.asarray(weights, dtype=object).ravel()
    w = pd.to_numeric(pd.Series(raw), errors="coerce").to_numpy(dtype=np.float64)
    if w.size != n:
        raise InputError(f"{name}: {w.size} values for {n} records")
    bad = np.flatnonzero(~np.isfinite(w) | (w <= 0))
    if bad.size:
        where = row_label(frame, int(bad[0])) if frame is not None else f"row {bad[0]}"
        more = f" (and {bad.size - 1} more)" if bad.size > 1 else ""
        zero = " (every weight is zero)" if (w == 0).all() else ""
        raise InputError(f"{name}: every weight must be a number > 0; {where} holds {raw[bad[0]]!r}{more}{zero}")
    return w


def weights_of(frame, column, where: str = "") -> np.ndarray | None:
    """The checked sampling weights in ``column`` of the table ``frame`` (None: no weights);
    ``where`` prefixes the messages (e.g. the file name and a colon)."""
    if column is None:
        return None
    if column not in frame.columns:
        raise InputError(f"{where}no weight column {column!r} in the table")
    return check_weights(frame[column], len(frame), f"{where}weight column {column!r}", frame)


def check_seed(seed, name: str = "seed") -> int | None:
    """Return ``seed`` (None or an integer in 0..2**63 - 1) as an int; :class:`ParameterError`
    for a negative, oversized, boolean or non-integer seed."""
    if seed is None:
        return None
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise ParameterError(f"{name} must be an integer, got {seed!r}")
    if not 0 <= int(seed) <= MAX_SEED:
        raise ParameterError(f"{name} must be between 0 and 2**63 - 1, got {seed}")
    return int(seed)


def check_random_state(random_state) -> np.random.Generator:
    """Turn ``None``, an int (0..2**63 - 1) or a Generator into a :class:`numpy.random.Generator`."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, numbers.Integral):
        return np.random.default_rng(check_seed(random_state, "random_state"))
    raise ParameterError(f"random_state must be None, an int or a numpy Generator, got {random_state!r}")


def read_json_document(text_or_path, what: str):
    """Parse a JSON document given as text (starting with '{') or as a path; a
    :class:`SpecificationError` names ``what`` (and the file) on an unreadable file or invalid
    JSON."""
    import json

    from .errors import SpecificationError

    text, where = text_or_path, ""
    if not isinstance(text, (str, os.PathLike)):
        raise SpecificationError(f"{what} must be JSON text or a path, got {type(text).__name__}")
    if not (isinstance(text, str) and text.lstrip().startswith("{")):
        where = f"{text_or_path}: "
        try:
            with open(text_or_path, encoding="utf-8") as fh:
                text = fh.read()
        except OSError as exc:
            raise SpecificationError(f"{where}cannot read {what} ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise SpecificationError(f"{where}{what} is not UTF-8 text") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecificationError(f"{where}{what} is not valid JSON ({exc.msg} at line {exc.lineno})") from None


def checked_call(func):
    """``func`` whose call with arguments that do not fit its signature (one missing, one
    unknown, too many) raises :class:`ParameterError` naming them, not a bare TypeError.
    Applied to the public functions of each package by :func:`guard_public`."""
    import functools
    import inspect

    signature = inspect.signature(func)

    @functools.wraps(func)
    def call(*args, **kwargs):
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise ParameterError(f"{func.__name__}{signature}: {exc}") from None
        return func(*args, **kwargs)

    call.checked_call = True
    return call


def guard_public(namespace: dict, names) -> None:
    """Every plain function among ``names`` in a package's ``namespace`` (its ``__all__``)
    replaced by :func:`checked_call` of it: the public edge checks how it is called."""
    import inspect

    for name in names:
        value = namespace.get(name)
        if inspect.isfunction(value) and not getattr(value, "checked_call", False):
            namespace[name] = checked_call(value)


# ------------------------------------------------------------------ declared parameter constraints
# scikit-learn's ``_parameter_constraints`` (sklearn/utils/_param_validation.py), with our one
# message format and our ParameterError: an estimator declares, per constructor parameter, the
# forms it accepts; ``check_params`` reads the parameter names from the constructor's signature
# and checks every value once, at the start of ``fit``. The private steps after it assume valid
# parameters.


@dataclass(frozen=True)
class Constraint:
    """One accepted form of a parameter: ``test(value, params)`` says whether ``value`` has it
    (``params``: every parameter of the estimator, for forms that depend on another one), and
    ``what(params)`` how a message names it ("an integer >= 1")."""

    what: object  # str, or a callable of params giving the text
    test: object

    def describe(self, params) -> str:
        return self.what(params) if callable(self.what) else self.what


def _is_integer(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, (bool, np.bool_))


def _is_real(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_))


def integer(low=None, *, integral_reals: bool = False) -> Constraint:
    """An integer (booleans refused) >= ``low``; ``integral_reals``: a real with an integer
    value (3.0) too."""
    def test(value, params):
        whole = _is_integer(value) or (integral_reals and _is_real(value) and float(value).is_integer())
        return whole and (low is None or value >= low)
    what = "an integer" if low is None else "a non-negative integer" if low == 0 else f"an integer >= {low}"
    return Constraint(what, test)


def real(low=None, high=None, *, closed: str = "both") -> Constraint:
    """A finite real number (booleans refused) in the interval from ``low`` to ``high``
    (None: unbounded), ``closed`` "both", "left", "right" or "neither"."""
    import math

    def test(value, params):
        if not _is_real(value) or not math.isfinite(float(value)):
            return False
        v = float(value)
        above = low is None or (v >= low if closed in ("both", "left") else v > low)
        below = high is None or (v <= high if closed in ("both", "right") else v < high)
        return above and below
    if low is not None and high is not None:
        left, right = "[" if closed in ("both", "left") else "(", "]" if closed in ("both", "right") else ")"
        what = f"a number in {left}{low}, {high}{right}"
    elif low is not None:
        what = f"a finite number {'>=' if closed in ('both', 'left') else '>'} {low}"
    else:
        what = "a finite number"
    return Constraint(what, test)


def one_of(*options) -> Constraint:
    """One of ``options`` (compared with ==, strings only)."""
    return Constraint("one of " + ", ".join(repr(o) for o in options),
                      lambda value, params: isinstance(value, str) and value in options)


#: None; a boolean (Python's or NumPy's); a NumPy random Generator
NONE = Constraint("None", lambda value, params: value is None)
BOOLEAN = Constraint("True or False", lambda value, params: isinstance(value, (bool, np.bool_)))
GENERATOR = Constraint("a numpy Generator", lambda value, params: isinstance(value, np.random.Generator))
#: a random_state: None, an int seed or a Generator (:func:`check_random_state`)
RANDOM_STATE = [NONE, Constraint("an integer in 0..2**63 - 1",
                                 lambda value, params: _is_integer(value) and 0 <= value <= MAX_SEED), GENERATOR]


def names(what: str = "column names") -> Constraint:
    """A list or tuple of names (strings)."""
    return Constraint(f"a list of {what}", lambda value, params: isinstance(value, (list, tuple))
                      and all(isinstance(v, str) for v in value))


def check_params(estimator) -> dict:
    """Check every constructor parameter of ``estimator`` (names from its ``__init__``
    signature, scikit-learn's ``get_params``) against its class's ``_parameter_constraints``
    ({name: [Constraint, ...]}: the value must have one of the forms); the first that has none
    is a :class:`ParameterError` "NAME must be FORM, FORM or FORM, got VALUE". Returns the
    parameters."""
    params = estimator.get_params(deep=False)
    table = type(estimator)._parameter_constraints
    for name, value in params.items():
        forms = table[name]  # a KeyError here is the developer's: every parameter is declared
        if not any(form.test(value, params) for form in forms):
            said = [form.describe(params) for form in forms]
            text = said[0] if len(said) == 1 else ", ".join(said[:-1]) + " or " + said[-1]
            raise ParameterError(f"{name} must be {text}, got {value!r}")
    return params


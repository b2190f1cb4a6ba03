"""Input checks shared by the API and the CLI.

Each check raises a subclass of :class:`probanon.errors.ProbanonError` with a
one-line message; nothing is written before all checks pass.
"""

from __future__ import annotations

import numbers
import os

import numpy as np
import pandas as pd

from .errors import InputError, ParameterError


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


def check_matrix(X, name: str = "X", missing: bool = False, hint: str = "") -> np.ndarray:
    """Return ``X`` as a finite 2-D float64 array with at least one row and column.

    Accepts NumPy arrays, pandas DataFrames (all columns must be numeric) and
    nested sequences. Raises :class:`InputError` on text, NaN or infinity (``missing``: NaN,
    a missing value, is allowed; ``hint`` ends the message of a missing value).
    """
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
        except (TypeError, ValueError):
            raise InputError(f"{name} contains values that are not numbers") from None
    if X.ndim == 1:
        X = X.reshape(-1, 1)
    if X.ndim != 2:
        raise InputError(f"{name} must be a 2-D table, got {X.ndim} dimensions")
    if X.shape[0] == 0:
        raise InputError(f"{name} is empty (no records)")
    if X.shape[1] == 0:
        raise InputError(f"{name} has no columns")
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
        raise InputError(f"{name}: every weight must be a number > 0; {where} holds {raw[bad[0]]!r}{more}")
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

"""Released values keep the input's type and precision (issue 39, point 6).

- **Decimals of a column** (:func:`decimals`): the smallest d in 0..15 for which every value x
  satisfies round(x, d) == x, i.e. the decimals the values carry once read as binary floats
  (``38.5`` has 1, ``40.0`` has 0, ``0.1`` has 1 although its binary value is not 1/10). Of a CSV
  column the text says more (``12.50`` has 2 decimals): :func:`text_decimals` counts the digits
  after the decimal point, a number written with an exponent counting as :func:`decimals` of its
  value.
- **Rounding released means** (:func:`round_columns`): each column's values rounded to its
  number of decimals (NumPy's rounding, half to even on the binary value). A group's released
  mean is the same number for all its members, so rounding the released records is rounding the
  group centroids: identical means stay identical, two groups may only become one, and the k
  of the release holds. Missing values stay missing.
- **Type** (:func:`like_input`): a released column takes the type of the input column when its
  values allow it: whole numbers in an integer column stay integers (pandas' nullable ``Int64``
  when some are missing, e.g. suppressed; a CSV column of whole numbers with empty cells, which
  pandas reads as floats, is an integer column: :func:`integer_columns`), numbers released for a
  float column are floats, a
  nominal key's modes stored as objects go back to the column's numbers; anything else (group
  means with decimals in an integer column, recoded strata text) keeps the released values' own
  type.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the most decimals a float64 carries meaningfully (15 significant digits for values near 1)
MAX_DECIMALS = 15


def decimals(values) -> int:
    """The smallest d in 0..:data:`MAX_DECIMALS` with round(x, d) == x for every finite value x
    (non-numbers and missing values ignored); :data:`MAX_DECIMALS` when none is."""
    x = pd.to_numeric(pd.Series(np.asarray(values, dtype=object).ravel()), errors="coerce").to_numpy(np.float64)
    x = np.unique(x[np.isfinite(x)])
    for d in range(MAX_DECIMALS + 1):
        if np.array_equal(np.round(x, d), x):
            return d
    return MAX_DECIMALS


def text_decimals(texts) -> int:
    """The decimals of numbers written as text: the most digits after a decimal point (a number
    written with an exponent, e.g. ``1.5e-3``, counts the :func:`decimals` of its value);
    empty and missing texts ignored."""
    s = pd.Series(np.asarray(texts, dtype=object).ravel()).dropna().astype(str).str.strip()
    s = s[s != ""]
    exponent = s.str.contains(r"[eE]\s*[-+]?\d", regex=True)
    plain = s[~exponent].str.partition(".")[2].str.extract(r"^(\d*)", expand=False).fillna("")
    found = int(plain.str.len().max()) if len(plain) else 0
    return min(MAX_DECIMALS, max(found, decimals(s[exponent]) if exponent.any() else 0))


def round_columns(values: np.ndarray, digits) -> np.ndarray:
    """``values`` (records x columns, numbers) with column j rounded to ``digits[j]`` decimals
    (None: left as it is); a new float array."""
    out = np.array(values, dtype=np.float64)
    for j, d in enumerate(digits):
        if d is not None:
            out[:, j] = np.round(out[:, j], int(d))
    return out


def whole_numbers(frame: pd.DataFrame) -> dict:
    """{numeric column: (all its values are whole numbers, it has missing values)} of ``frame``."""
    out = {}
    for c in frame.columns:
        x = frame[c]
        kind = x.dtype.kind if isinstance(x.dtype, np.dtype) else ""
        if kind in "iu":
            out[c] = (True, False)
        elif kind == "f":
            present = x.dropna().to_numpy()
            out[c] = (bool(np.all(present == np.round(present)) and np.all(np.abs(present) < 2.0 ** 53)),
                      len(present) < len(x))
    return out


def integer_columns(frame: pd.DataFrame, parts=None) -> list:
    """The float columns of ``frame`` that hold whole numbers and missing values: integer columns
    to which a CSV reader gave floats for their empty cells (pandas has no missing integer).
    ``parts``: the :func:`whole_numbers` of each chunk of a file read in chunks, for the file's."""
    parts = [whole_numbers(frame)] if parts is None else parts
    return [c for c in parts[0] if all(p.get(c, (False,))[0] for p in parts) and any(p[c][1] for p in parts)]


def like_input(values, original: pd.Series, whole: bool | None = None, integer: bool = False):
    """The released ``values`` of a column in the type of the ``original`` column where they fit
    it (module docstring); else ``values`` as they are. ``whole``: whether the values are whole
    numbers by construction (means rounded to 0 decimals: True; other means: False, so that every
    part of a file read in chunks gets one type), None: as the values say. ``integer``: the
    original is an integer column read as floats (:func:`integer_columns`)."""
    kind = original.dtype.kind if isinstance(original.dtype, np.dtype) else getattr(original.dtype, "kind", "O")
    if kind not in "iuf" or pd.api.types.is_bool_dtype(original):
        return values
    kind = "i" if integer else kind
    array = np.asarray(values)
    if array.dtype.kind not in "iuf":
        if array.dtype != object or not all(v is None or isinstance(v, (int, float, np.number)) and
                                            not isinstance(v, (bool, np.bool_)) for v in array):
            return values  # text: recoded strata, categories
        array = pd.to_numeric(pd.Series(array, dtype=object)).to_numpy(np.float64)
    if kind == "f":
        return array.astype(original.dtype, copy=False)
    missing = pd.isna(array)
    present = array[~missing]
    if whole is None:
        whole = bool(np.all(present == np.round(present)) and np.all(np.abs(present) < 2.0 ** 63))
    if not whole:
        return array.astype(np.float64)  # means with decimals: floats
    if not missing.any():
        return array.astype(original.dtype if original.dtype.kind in "iu" else np.int64, copy=False)
    return pd.arrays.IntegerArray(np.where(missing, 0, array).astype(np.int64), missing)


__all__ = ["MAX_DECIMALS", "decimals", "integer_columns", "like_input", "round_columns", "text_decimals",
           "whole_numbers"]

"""Anonymity of a release: equivalence classes of quasi-identifiers and the k achieved.

An equivalence class is a maximal set of records whose quasi-identifier tuples are
identical (exact equality; missing values are equal to each other). A release is
k-anonymous for every ``k <= min_c |c|``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError


def _quasi_identifier_frame(released, columns) -> pd.DataFrame:
    """``released`` as a DataFrame restricted to ``columns`` (default: every column).

    ``columns`` may be a list or one column name;
    for NumPy arrays columns are positions 0..p-1.
    """
    if isinstance(released, pd.DataFrame):
        frame = released
    else:
        values = np.asarray(released)
        if values.ndim == 1:
            values = values.reshape(-1, 1)
        if values.ndim != 2:
            raise InputError(f"released must be a 2-D table, got {values.ndim} dimensions")
        frame = pd.DataFrame(values)
    if isinstance(columns, str):
        columns = [columns]  # one name
    elif columns is not None and np.ndim(columns) == 0:
        columns = [columns]
    if columns is not None:
        columns = list(columns)
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise InputError(f"column {missing[0]!r} is not in the table")
        frame = frame[columns]
    if frame.shape[1] == 0:
        raise InputError("no quasi-identifier column")
    if frame.shape[0] == 0:
        raise InputError("released is empty (no records)")
    return frame


def equivalence_class_sizes(released, columns=None) -> np.ndarray:
    """Sizes ``|c|`` of the equivalence classes on ``columns``, sorted ascending.

    Parameters
    ----------
    released : DataFrame or array_like, shape (n, p)
        Any dtypes (numbers, strings, categories); NaN/None form their own class.
    columns : list or str, optional
        Quasi-identifier columns (names, or positions for arrays); default every column.

    Returns
    -------
    numpy.ndarray of int64, summing to n.
    """
    frame = _quasi_identifier_frame(released, columns)
    keys = [frame.iloc[:, j] for j in range(frame.shape[1])]
    sizes = frame.groupby(keys, dropna=False, observed=True, sort=False).size()
    return np.sort(sizes.to_numpy(dtype=np.int64))


def k_achieved(released, columns=None, missing: str = "category") -> int:
    """Largest k for which ``released`` is k-anonymous: ``k = min_c |c|``.

    See :func:`equivalence_class_sizes` for the parameters. ``missing``: ``"category"`` (a
    missing value is a value of its own, the classes above) or ``"any"`` (a missing value
    matches any value, as sdcMicro counts a suppressed key: k = min_i f_i, f_i the number of
    records agreeing with record i on every key both have, :func:`probanon.frequencies.match_counts`;
    without missing values both are the same).
    """
    if missing == "any":
        from ..frequencies import key_codes, match_counts

        frame = _quasi_identifier_frame(released, columns)
        return int(match_counts(key_codes(frame, list(frame.columns)), missing="any")[0].min())
    if missing != "category":
        raise InputError(f"missing must be 'category' or 'any', got {missing!r}")
    return int(equivalence_class_sizes(released, columns)[0])

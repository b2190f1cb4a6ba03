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


def k_achieved(released, columns=None) -> int:
    """Largest k for which ``released`` is k-anonymous: ``k = min_c |c|``.

    See :func:`equivalence_class_sizes` for the parameters.
    """
    return int(equivalence_class_sizes(released, columns)[0])

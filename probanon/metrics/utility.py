"""Utility of a release: information loss and differences of means, variances, correlations.

All formulas compare a ``released`` table with the ``original`` one, record by record
(row ``i`` of one is row ``i`` of the other). Variances are population variances
(ddof = 0), as in :class:`probanon.data.Standardizer`. With sampling weights ``w`` (a sample
standing for a population), every sum over records is weighted: means sum_i w_i x_i / sum_i w_i,
variances and correlations of the weighted moments, and the information loss below.

A column is *constant* when its population sd is at rounding level of its magnitude,
``sd <= 1e-12 * max(1, |mean|)`` -- the rule the Standardizer uses to give it scale 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_matrix, check_weights
from ..data import Standardizer, is_constant, select_columns
from ..errors import InputError

def constant_columns(X: np.ndarray) -> np.ndarray:
    """Boolean mask of the constant columns of a checked float matrix (rule in module doc)."""
    mean = X.mean(axis=0)
    return is_constant(mean, np.sqrt(((X - mean) ** 2).mean(axis=0)))


def _paired_matrices(original, released) -> tuple[np.ndarray, np.ndarray]:
    X = check_matrix(original, name="original")
    Y = check_matrix(released, name="released")
    if X.shape != Y.shape:
        raise InputError(f"original has shape {X.shape} but released has shape {Y.shape}")
    return X, Y


def information_loss(original, released, standardize: bool = True, weights=None, missing: bool = False) -> float:
    r"""Information loss of ``released`` with respect to ``original``, in percent.

    .. math::

        IL = 100 \cdot \frac{SSE}{SST}, \quad
        SSE = \sum_{i,j} (z_{ij} - \tilde z_{ij})^2, \quad
        SST = \sum_{j \notin C} \sum_i (z_{ij} - \bar z_j)^2

    where :math:`z = (x - \bar x_j) / s_j` and :math:`\tilde z = (\tilde x - \bar x_j) / s_j`
    are both z-scored with the mean and population sd of the *original* (a
    :class:`~probanon.data.Standardizer` fitted on ``original``; constant columns get
    :math:`s_j = 1`), and :math:`C` is the set of constant columns of the original: they add
    nothing to SST but their SSE still counts. With ``standardize=False`` the raw values are
    used instead of z-scores. IL is 0 for an exact copy and 100 when every record is
    replaced by the column means. With sampling ``weights`` w_i, record i counts w_i times in
    SSE and SST, and the mean and sd are weighted. With ``missing``, NaN marks a missing value:
    a value missing in the original counts in neither sum, one released missing (suppressed)
    counts as replaced by the mean (z = 0), and the mean and sd are those of the observed values.

    Parameters
    ----------
    original, released : array_like or DataFrame, shape (n, p)
        Numeric, finite tables of the same shape; columns are matched by position.
    standardize : bool
        Z-score both tables with the original's mean and sd first (default).

    Raises
    ------
    InputError
        NaN/inf/text in either table, different shapes, or every column of the original
        constant (SST = 0).
    """
    if missing:
        return _information_loss_missing(original, released, standardize, weights)
    X, Y = _paired_matrices(original, released)
    w = np.ones(X.shape[0]) if weights is None else check_weights(weights, X.shape[0])
    if standardize:
        scaler = Standardizer.fit(X, w)
        X, Y = scaler.transform(X), scaler.transform(Y)
    varying = ~constant_columns(X)
    sse = float(w @ ((X - Y) ** 2).sum(axis=1))
    centred = X[:, varying] - (w @ X[:, varying]) / w.sum()
    sst = float(w @ (centred**2).sum(axis=1))
    if sst == 0.0:
        raise InputError("information loss is undefined: every column of the original is constant")
    return 100.0 * sse / sst


def _information_loss_missing(original, released, standardize: bool, weights) -> float:
    """:func:`information_loss` with missing values (its docstring)."""
    from ..microagg.means import observed_standardizer

    X = check_matrix(original, name="original", missing=True)
    Y = check_matrix(released, name="released", missing=True)
    if X.shape != Y.shape:
        raise InputError(f"original has shape {X.shape} but released has shape {Y.shape}")
    w = np.ones(X.shape[0]) if weights is None else check_weights(weights, X.shape[0])
    scaler = observed_standardizer(X, w) if standardize else None
    if standardize:
        X, Y = scaler.transform(X), scaler.transform(Y)
        centre = np.zeros(X.shape[1])
    else:
        centre = np.array([np.average(X[~np.isnan(X[:, j]), j], weights=w[~np.isnan(X[:, j])]) for j in range(X.shape[1])])
    seen = ~np.isnan(X)
    kept = np.where(np.isnan(Y), centre, Y)
    sse = float(w @ np.where(seen, (X - kept) ** 2, 0.0).sum(axis=1))
    sst = float(w @ np.where(seen, (X - centre) ** 2, 0.0).sum(axis=1))
    if sst == 0.0:
        raise InputError("information loss is undefined: every column of the original is constant")
    return 100.0 * sse / sst


@dataclass(frozen=True)
class UtilityReport:
    """Summary of how much a release distorts the original, column by column.

    Attributes
    ----------
    information_loss : float
        ``100 * SSE / SST`` on z-scores (see :func:`information_loss`).
    n_records : int
        Number of records compared.
    columns : list
        Names of the compared columns (positions for arrays).
    mean_difference : dict
        ``mean(released_j) - mean(original_j)`` per column.
    variance_difference : dict
        ``var(released_j) - var(original_j)`` per column, population variances (ddof = 0).
    relative_variance_difference : dict
        ``(var(released_j) - var(original_j)) / var(original_j)``; ``None`` for a column
        that is constant in the original.
    correlation_difference_max, correlation_difference_mean : float or None
        Max and mean over column pairs ``j < l`` of ``|r_rel(j, l) - r_orig(j, l)|``
        (Pearson). Pairs with a column constant in either table are skipped; ``None`` when
        no pair is left.
    """

    information_loss: float
    n_records: int
    columns: list
    mean_difference: dict
    variance_difference: dict
    relative_variance_difference: dict
    correlation_difference_max: float | None
    correlation_difference_mean: float | None

    def to_dict(self) -> dict:
        """Plain-Python, JSON-serialisable copy (column names become strings)."""

        def per_column(values: dict) -> dict:
            return {str(k): (None if v is None else float(v)) for k, v in values.items()}

        return {
            "information_loss": float(self.information_loss),
            "n_records": int(self.n_records),
            "columns": [str(c) for c in self.columns],
            "mean_difference": per_column(self.mean_difference),
            "variance_difference": per_column(self.variance_difference),
            "relative_variance_difference": per_column(self.relative_variance_difference),
            "correlation_difference_max": _optional_float(self.correlation_difference_max),
            "correlation_difference_mean": _optional_float(self.correlation_difference_mean),
        }


def _optional_float(value) -> float | None:
    return None if value is None else float(value)


def _columns_of(table, positions: list[int], name: str) -> np.ndarray:
    """Checked float matrix of the columns of ``table`` at ``positions``."""
    if isinstance(table, pd.DataFrame):
        return check_matrix(table.iloc[:, positions], name=name)
    X = check_matrix(table, name=name)
    if max(positions) >= X.shape[1]:
        raise InputError(f"{name} has {X.shape[1]} columns, fewer than needed ({max(positions) + 1})")
    return X[:, positions]


def _selected_matrices(original, released, columns) -> tuple[np.ndarray, np.ndarray, list]:
    """Checked matrices of the compared columns: by name for two DataFrames, else by position.

    For a DataFrame ``original`` the default columns are its numeric columns
    (:func:`probanon.data.select_columns`); for an array, every column (named 0..p-1).
    """
    if isinstance(original, pd.DataFrame):
        names = select_columns(original, columns)
        positions = [original.columns.get_loc(c) for c in names]
    else:
        width = check_matrix(original, name="original").shape[1]
        names = list(range(width)) if columns is None else list(columns)
        bad = [c for c in names if not isinstance(c, (int, np.integer)) or not 0 <= c < width]
        if bad:
            raise InputError(f"original: column {bad[0]!r} is not a position in a table of {width} columns")
        names = positions = [int(c) for c in names]
    if isinstance(original, pd.DataFrame) and isinstance(released, pd.DataFrame):
        missing = [c for c in names if c not in released.columns]
        if missing:
            raise InputError(f"released: column {missing[0]!r} is not in the table")
        released_positions = [released.columns.get_loc(c) for c in names]
    else:
        released_positions = positions
    X = _columns_of(original, positions, "original")
    Y = _columns_of(released, released_positions, "released")
    if X.shape != Y.shape:
        raise InputError(f"original has shape {X.shape} but released has shape {Y.shape}")
    return X, Y, names


def _correlations(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Correlation matrix of the columns of X with record weights w (the weighted moments)."""
    cov = np.cov(X, rowvar=False, aweights=w, ddof=0)
    sd = np.sqrt(np.diag(cov))
    return cov / np.outer(sd, sd)


def _correlation_differences(X: np.ndarray, Y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``|r_Y - r_X|`` over pairs j < l of columns that vary in both tables."""
    usable = ~constant_columns(X) & ~constant_columns(Y)
    if usable.sum() < 2:
        return np.empty(0)
    upper = np.triu_indices(int(usable.sum()), k=1)
    return np.abs(_correlations(Y[:, usable], w)[upper] - _correlations(X[:, usable], w)[upper])


def format_information_loss(value: float) -> str:
    """The information loss (percent) as every command and report prints it, so that a release,
    ``evaluate`` and ``report`` state the same figure for the same keys: two decimals, or two
    significant digits below 0.1 % (``"4.65 %"``, ``"0.037 %"``)."""
    value = float(value)
    return f"{value:.2f} %" if value >= 0.1 or value == 0.0 else f"{value:.2g} %"


def utility_report(original, released, columns=None, weights=None) -> UtilityReport:
    """Compare ``released`` with ``original`` on ``columns`` (see :class:`UtilityReport`).

    Parameters
    ----------
    original, released : array_like or DataFrame, shape (n, p)
        Numeric, finite tables with the same records in the same order.
    columns : list or str, optional
        Column names (DataFrame ``original``; a list, or one name) or
        positions (arrays) to compare. Default: the numeric columns of a DataFrame, every
        column of an array. Two DataFrames are matched by column name, otherwise by
        position.
    weights : array_like, optional
        Sampling weights of the records (numbers > 0): weighted means, variances,
        correlations and information loss (module docstring).
    """
    X, Y, names = _selected_matrices(original, released, columns)
    w = np.ones(X.shape[0]) if weights is None else check_weights(weights, X.shape[0])

    mean_x, mean_y = (w @ X) / w.sum(), (w @ Y) / w.sum()
    mean_diff = mean_y - mean_x
    var_orig, var_rel = (w @ (X - mean_x) ** 2) / w.sum(), (w @ (Y - mean_y) ** 2) / w.sum()
    const_orig = constant_columns(X)
    corr_diff = _correlation_differences(X, Y, w)
    return UtilityReport(
        information_loss=information_loss(X, Y, weights=None if weights is None else w),
        n_records=int(X.shape[0]),
        columns=names,
        mean_difference={c: float(d) for c, d in zip(names, mean_diff)},
        variance_difference={c: float(v1 - v0) for c, v0, v1 in zip(names, var_orig, var_rel)},
        relative_variance_difference={
            c: None if const else float((v1 - v0) / v0)
            for c, v0, v1, const in zip(names, var_orig, var_rel, const_orig)
        },
        correlation_difference_max=float(corr_diff.max()) if corr_diff.size else None,
        correlation_difference_mean=float(corr_diff.mean()) if corr_diff.size else None,
    )

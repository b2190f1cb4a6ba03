"""The joint distribution P(q, s) of quasi-identifiers and the sensitive attribute (paper 4).

The (l, delta)-diversity mechanism (l-delta-diversity.txt, Sec. 4, Algorithm 1) is planned by a
central agency that knows, or has estimated, the joint probability mass function
``P(q, s)`` on the finite alphabets Q (quasi-identifier values, in a fixed total order) and S
(sensitive values). This module builds and checks that pmf from

* an array of shape (|Q|, |S|) (:func:`distribution_from_array`),
* a table of rows (qi..., sensitive, probability) (:func:`distribution_from_frame`,
  :func:`read_distribution`), or
* a sample of records, as the empirical pmf ``P^(q, s) = n(q, s) / n``
  (:func:`estimate_distribution`).

An estimate comes with a total-variation margin ``eps``: if the true pmf P is within total
variation eps of the estimate, then ``P(qbar, s) >= P^(qbar, s) - eps`` for every class qbar and
value s, so a class that holds ``l`` values with ``P^(qbar, s) >= p + eps`` holds them with
``P(qbar, s) >= p`` (the remark before Algorithm 1: an estimation error "can be carried forward
in every step of our analysis"). The planning functions therefore compare estimated class
masses with the raised threshold ``p + eps``.

Checks (one-line :class:`~probanon.errors.InputError`): finite, non-negative entries summing
to 1 within ``SUM_TOLERANCE = 1e-9``, no duplicated (q, s) pair, no missing QI value; the
margin must lie in [0, 1) (:class:`~probanon.errors.ParameterError`). A pmf whose sum is off by
more than 1e-9 but at most ``NORMALIZE_TOLERANCE = 1e-6`` (probabilities rounded to six or so
digits) is divided by its sum when ``normalize=True`` (``--normalize``; the distribution keeps
the old sum in ``renormalized_from``) and refused otherwise; beyond 1e-6 it is always refused.

The order of the QI values is the order of first appearance unless ``order`` asks for a sort
(``"sorted"``: by every QI column in turn; a list of column names: by those columns first,
then the remaining ones) or gives the QI values explicitly (a list of tuples).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

from .._validation import is_numeric_column, row_label
from ..errors import InputError, ParameterError

SUM_TOLERANCE = 1e-9
NORMALIZE_TOLERANCE = 1e-6
KEY_SEPARATOR = "|"


def value_key(value) -> str:
    """The text of one QI or sensitive value as it appears in a plan: integral numbers without
    a decimal point (``39`` and ``39.0`` are the same age), other numbers by ``repr``."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        return str(int(value)) if value.is_integer() else repr(value)
    return str(value)


def qi_key(values) -> str:
    """The key of one QI value (a tuple over the QI columns): its parts joined by ``|``."""
    return KEY_SEPARATOR.join(value_key(v) for v in values)


@dataclass(frozen=True, eq=False)
class JointDistribution:
    """A checked joint pmf ``P(q, s)``: row i is the i-th QI value in the planning order.

    ``margin`` is the total-variation margin eps of an estimate (0 for a known pmf),
    ``n_records`` the size of the sample it was estimated from (None otherwise) and
    ``renormalized_from`` the sum of the probabilities as given when they were divided by it
    (``normalize=True``; None otherwise).
    """

    probabilities: np.ndarray
    qi_values: tuple
    qi_columns: tuple
    sensitive_values: tuple
    sensitive_column: str = "sensitive"
    margin: float = 0.0
    n_records: int | None = None
    renormalized_from: float | None = None

    @property
    def n_qi(self) -> int:
        """|Q|."""
        return self.probabilities.shape[0]

    @property
    def n_sensitive(self) -> int:
        """|S|."""
        return self.probabilities.shape[1]

    @cached_property
    def sensitive_marginal(self) -> np.ndarray:
        """``P_S(s) = sum_q P(q, s)`` (compensated sums, accurate to a few ulps)."""
        from ._greedy_kernel import class_sums_kernel

        marginal = class_sums_kernel(self.probabilities, np.zeros(self.n_qi, np.int64), 1)[0]
        marginal.setflags(write=False)
        return marginal

    @property
    def qi_marginal(self) -> np.ndarray:
        """``P_Q(q) = sum_s P(q, s)``."""
        return self.probabilities.sum(axis=1)

    def sorted_sensitive(self) -> np.ndarray:
        """``p_1 >= p_2 >= ... >= p_|S|``: the values of P_S in decreasing order (Sec. 4)."""
        return np.sort(self.sensitive_marginal)[::-1]

    def p_l(self, l: int) -> float:
        """``p_l``, the l-th largest value of P_S (the largest admissible p, Lemma 4.2)."""
        return float(self.sorted_sensitive()[l - 1])

    def qi_keys(self) -> list[str]:
        """The QI values as text, multi-column values joined by ``|`` (unique)."""
        return [qi_key(v) for v in self.qi_values]

    def to_frame(self) -> pd.DataFrame:
        """The pmf as rows (qi..., sensitive, probability), zero cells left out."""
        rows, cols = np.nonzero(self.probabilities)
        frame = pd.DataFrame([self.qi_values[i] for i in rows], columns=list(self.qi_columns))
        frame["sensitive"] = [self.sensitive_values[j] for j in cols]
        frame["probability"] = self.probabilities[rows, cols]
        return frame


def check_margin(margin) -> float:
    """The total-variation margin eps as a float in [0, 1)."""
    if (isinstance(margin, (bool, np.bool_)) or not isinstance(margin, numbers.Real)
            or not np.isfinite(margin) or not (0.0 <= float(margin) < 1.0)):
        raise ParameterError(f"margin must be in [0, 1), got {margin!r}")
    return float(margin)


def check_pmf(P, name: str = "distribution", normalize: bool = False) -> np.ndarray:
    """Return ``P`` as a C-contiguous float64 (|Q|, |S|) array after checking that it is a pmf:
    finite, non-negative, summing to 1 within ``SUM_TOLERANCE``; with ``normalize``, a sum
    within ``NORMALIZE_TOLERANCE`` of 1 is accepted and ``P`` divided by it."""
    return _check_pmf(P, name, normalize)[0]


def _check_pmf(P, name: str, normalize: bool) -> tuple[np.ndarray, float | None]:
    """:func:`check_pmf` and the sum P was divided by (None when it was not)."""
    try:
        P = np.array(P, dtype=np.float64, copy=True)
    except (TypeError, ValueError):
        raise InputError(f"{name} contains values that are not numbers") from None
    if P.ndim != 2:
        raise InputError(f"{name} must be a 2-D array (QI values x sensitive values), got {P.ndim} dimensions")
    if P.size == 0:
        raise InputError(f"{name} is empty")
    if not np.isfinite(P).all():
        i, j = np.argwhere(~np.isfinite(P))[0]
        raise InputError(f"{name} has a missing or infinite probability (QI value {i}, sensitive value {j})")
    if (P < 0).any():
        i, j = np.argwhere(P < 0)[0]
        raise InputError(f"{name} has a negative probability {P[i, j]!r} (QI value {i}, sensitive value {j})")
    total = float(P.sum())
    renormalized_from = None
    if abs(total - 1.0) > SUM_TOLERANCE:
        if abs(total - 1.0) > NORMALIZE_TOLERANCE:
            raise InputError(f"{name} probabilities sum to {total!r}, not 1 (tolerance {SUM_TOLERANCE:g}; "
                             f"--normalize renormalizes sums within {NORMALIZE_TOLERANCE:g} of 1 only)")
        if not normalize:
            raise InputError(f"{name} probabilities sum to {total!r}, not 1 (tolerance {SUM_TOLERANCE:g}); "
                             f"it is within {NORMALIZE_TOLERANCE:g} of 1: use --normalize (normalize=True) "
                             "to divide by the sum")
        P /= total
        renormalized_from = total
    P = np.ascontiguousarray(P)
    P.setflags(write=False)
    return P, renormalized_from


def distribution_from_array(P, qi_values=None, sensitive_values=None, *, qi_columns=("qi",),
                            margin: float = 0.0, normalize: bool = False) -> JointDistribution:
    """A :class:`JointDistribution` from an array ``P[q, s]``; rows are in QI order.

    ``qi_values`` default to 0..|Q|-1 (one-tuples), ``sensitive_values`` to 0..|S|-1;
    ``normalize``: see :func:`check_pmf`.
    """
    P, renormalized_from = _check_pmf(P, "distribution", normalize)
    n_q, n_s = P.shape
    qi_columns = tuple(qi_columns)
    default_qi = qi_values is None
    if default_qi:
        qi_values = tuple((i,) for i in range(n_q))
    else:
        qi_values = tuple(v if isinstance(v, tuple) else (v,) for v in qi_values)
        if len(qi_values) != n_q:
            raise InputError(f"{len(qi_values)} QI values for {n_q} rows of the distribution")
        if any(len(v) != len(qi_columns) for v in qi_values):
            raise InputError(f"every QI value needs {len(qi_columns)} parts (one per QI column)")
    sensitive_values = tuple(range(n_s)) if sensitive_values is None else tuple(sensitive_values)
    if len(sensitive_values) != n_s:
        raise InputError(f"{len(sensitive_values)} sensitive values for {n_s} columns of the distribution")
    if not default_qi:
        _check_unique_keys([qi_key(v) for v in qi_values], "QI value")
    _check_unique_keys([value_key(v) for v in sensitive_values], "sensitive value")
    return JointDistribution(P, qi_values, qi_columns, sensitive_values, margin=check_margin(margin),
                             renormalized_from=renormalized_from)


def _check_unique_keys(keys, what: str) -> None:
    seen = set()
    for key in keys:
        if key in seen:
            raise InputError(f"the {what} {key!r} appears twice (values must differ as text, "
                             f"multi-column values joined by {KEY_SEPARATOR!r})")
        seen.add(key)


def _columns(frame: pd.DataFrame, columns, what: str) -> list:
    if isinstance(columns, str):  # one name
        columns = [columns]
    columns = list(columns)
    if not columns:
        raise InputError(f"no {what} column given")
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"{what} column {missing[0]!r} is not in the table")
    if len(set(columns)) != len(columns):
        raise InputError(f"a {what} column is named twice")
    return columns


def _qi_order(frame: pd.DataFrame, qi: list, order) -> pd.DataFrame:
    """The distinct QI tuples of ``frame`` in the requested order (a DataFrame over ``qi``)."""
    distinct = frame[qi].drop_duplicates(ignore_index=True)
    if order is None or (isinstance(order, str) and order == "appearance"):
        return distinct
    if isinstance(order, str) and order == "sorted":
        return distinct.sort_values(qi, kind="stable", ignore_index=True)
    if isinstance(order, str):  # one column
        order = [order]
        unknown = [c for c in order if c not in qi]
        if unknown or not order:
            raise ParameterError(f"order must be 'appearance', 'sorted' or QI columns to sort by; "
                                 f"{unknown[0] if unknown else order!r} is not a QI column ({', '.join(qi)})")
    order = list(order)
    if order and all(isinstance(c, str) and c in qi for c in order):
        if len(set(order)) != len(order):
            raise ParameterError("a column is named twice in the order")
        keys = order + [c for c in qi if c not in order]
        return distinct.sort_values(keys, kind="stable", ignore_index=True)
    # an explicit list of QI values
    values = [v if isinstance(v, tuple) else (v,) for v in order]
    given = [qi_key(v) for v in values]
    _check_unique_keys(given, "QI value in the order")
    present = dict(zip((qi_key(v) for v in distinct.itertuples(index=False, name=None)), range(len(distinct))))
    missing = [k for k in present if k not in set(given)]
    if missing:
        raise ParameterError(f"the explicit order does not list the QI value {missing[0]!r}")
    unknown = [k for k in given if k not in present]
    if unknown:
        raise ParameterError(f"the explicit order lists {unknown[0]!r}, which is not in the distribution")
    return distinct.iloc[[present[k] for k in given]].reset_index(drop=True)


def _check_qi_columns(frame: pd.DataFrame, qi: list) -> None:
    for c in qi:
        if frame[c].isna().any():
            row = int(np.flatnonzero(frame[c].isna().to_numpy())[0])
            raise InputError(f"QI column {c!r} has a missing value ({row_label(frame, row)})")


def _table(frame: pd.DataFrame, qi: list, sensitive: str, weights: np.ndarray, order,
           ) -> tuple[np.ndarray, tuple, tuple]:
    """Accumulate ``weights`` into the (|Q|, |S|) array in the requested QI order."""
    _check_qi_columns(frame, qi)
    if frame[sensitive].isna().any():
        row = int(np.flatnonzero(frame[sensitive].isna().to_numpy())[0])
        raise InputError(f"sensitive column {sensitive!r} has a missing value ({row_label(frame, row)})")
    distinct = _qi_order(frame, qi, order)
    qi_values = tuple(distinct.itertuples(index=False, name=None))
    keys = pd.Series(range(len(distinct)), index=pd.MultiIndex.from_frame(distinct) if len(qi) > 1
                     else pd.Index(distinct[qi[0]]))
    rows = (keys.reindex(pd.MultiIndex.from_frame(frame[qi])) if len(qi) > 1
            else keys.reindex(pd.Index(frame[qi[0]]))).to_numpy()
    s_codes, s_uniques = pd.factorize(frame[sensitive], sort=False)
    P = np.zeros((len(distinct), len(s_uniques)))
    np.add.at(P, (rows.astype(np.int64), s_codes), weights)
    return P, qi_values, tuple(s_uniques.tolist())


def distribution_from_frame(frame: pd.DataFrame, qi=None, sensitive: str = "sensitive",
                            probability: str = "probability", *, order=None,
                            margin: float = 0.0, normalize: bool = False) -> JointDistribution:
    """A :class:`JointDistribution` from rows (qi..., sensitive, probability).

    ``qi`` defaults to every column other than ``sensitive`` and ``probability``, in table
    order. Pairs (q, s) that do not appear have probability 0; a pair listed twice is an
    error. ``normalize``: see :func:`check_pmf`.
    """
    if not isinstance(frame, pd.DataFrame):
        raise InputError("the distribution must be a DataFrame of (qi..., sensitive, probability)")
    if frame.shape[0] == 0:
        raise InputError("the distribution table has no rows")
    for col, what in ((sensitive, "sensitive"), (probability, "probability")):
        if col not in frame.columns:
            raise InputError(f"the distribution table has no {what} column {col!r}")
    if qi is None:
        qi = [c for c in frame.columns if c not in (sensitive, probability)]
        if not qi:
            raise InputError("the distribution table has no QI column")
    qi = _columns(frame, qi, "QI")
    if sensitive in qi or probability in qi:
        raise InputError("a QI column cannot be the sensitive or the probability column")
    prob = frame[probability]
    if not is_numeric_column(prob):
        numbers_ = pd.to_numeric(prob, errors="coerce")
        bad = int(np.flatnonzero(numbers_.isna().to_numpy())[0]) if numbers_.isna().any() else 0
        raise InputError(f"probability column {probability!r} is not numeric "
                         f"({row_label(frame, bad)}: {prob.iloc[bad]!r})")
    weights = prob.to_numpy(dtype=np.float64)
    if not np.isfinite(weights).all():
        row = int(np.flatnonzero(~np.isfinite(weights))[0])
        raise InputError(f"probability column has a missing or infinite value ({row_label(frame, row)})")
    if (weights < 0).any():
        row = int(np.flatnonzero(weights < 0)[0])
        raise InputError(f"probability column has a negative value {weights[row]!r} ({row_label(frame, row)})")
    dup = frame.duplicated(subset=qi + [sensitive])
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise InputError(f"the (QI, sensitive) pair of {row_label(frame, row)} is listed twice")
    P, qi_values, s_values = _table(frame, qi, sensitive, weights, order)
    dist = distribution_from_array(P, qi_values, s_values, qi_columns=qi, margin=margin, normalize=normalize)
    return _with(dist, sensitive_column=sensitive)


def _with(dist: JointDistribution, **changes) -> JointDistribution:
    from dataclasses import replace

    return replace(dist, **changes)


def read_distribution(path, *, order=None, margin: float = 0.0, normalize: bool = False) -> JointDistribution:
    """Read a distribution CSV/Parquet: the QI columns, then ``sensitive``, then
    ``probability`` (a column named ``sensitive`` is the sensitive one wherever it stands;
    without one, the column just before ``probability`` is). ``normalize``: see
    :func:`check_pmf`."""
    from ..data import read_table

    frame = read_table(path)
    if "probability" not in frame.columns:
        raise InputError(f"{path}: no column named 'probability'")
    if "sensitive" in frame.columns:
        sensitive = "sensitive"
    else:
        pos = list(frame.columns).index("probability")
        if pos == 0:
            raise InputError(f"{path}: no sensitive column before 'probability'")
        sensitive = frame.columns[pos - 1]
    return distribution_from_frame(frame, sensitive=sensitive, probability="probability", order=order,
                                   margin=margin, normalize=normalize)


def estimate_distribution(sample: pd.DataFrame, qi, sensitive: str, *, order=None,
                          margin: float = 0.0) -> JointDistribution:
    """The empirical pmf ``P^(q, s) = n(q, s) / n`` of a sample of records, with the
    total-variation margin ``margin`` (eps) that the planning adds to the threshold p.

    Only QI and sensitive values seen in the sample are in the alphabets.
    """
    if not isinstance(sample, pd.DataFrame) or sample.shape[0] == 0:
        raise InputError("the sample has no records")
    qi = _columns(sample, qi, "QI")
    if sensitive not in sample.columns:
        raise InputError(f"sensitive column {sensitive!r} is not in the table")
    if sensitive in qi:
        raise InputError("the sensitive column cannot be a QI column")
    n = sample.shape[0]
    P, qi_values, s_values = _table(sample, qi, sensitive, np.ones(n), order)
    dist = distribution_from_array(P / n, qi_values, s_values, qi_columns=qi, margin=margin)
    return _with(dist, sensitive_column=sensitive, n_records=n)

"""Anonymity checks of a released table: k-anonymity, l-diversity (distinct, entropy,
recursive (c, l)) and t-closeness, as pycanon offers them, on microdata or on count tables.

A released table is either

* **microdata**: one row per record, quasi-identifier columns ``qi`` and a ``sensitive``
  column (optionally a ``count`` column giving each row's multiplicity); the equivalence
  classes are the distinct QI tuples (exact equality, missing QI values form their own class,
  as in :mod:`probanon.metrics.anonymity`); or
* a **count table** as published by the (l, delta)-diversity mechanism: columns ``class``,
  ``sensitive``, ``count``, one row per (class, sensitive value) with the number of records
  ``n^(qbar)(s)`` (paper 4, Sec. 2.3: the counts are a sufficient statistic of an anonymized
  dataset). Duplicate rows are added up; rows with count 0 are allowed.

Everything is computed from the contingency table ``n_c(s)`` of class c and sensitive value s
(:func:`sensitive_counts`). Only non-empty classes (``n_c = sum_s n_c(s) > 0``) are checked,
as in Definition 2.1 of l-delta-diversity.txt.

Definitions, for a class c with counts ``n_c(s)``, size ``n_c`` and the positive counts sorted
``r_1 >= r_2 >= ... >= r_m`` (m distinct values):

* k-anonymity (Sweeney 2002): ``k = min_c n_c``.
* distinct l-diversity (Machanavajjhala et al. 2007; paper 4, Definition 2.1):
  ``l = min_c |{s : n_c(s) > 0}|``.
* entropy l-diversity (Machanavajjhala et al. 2007): a class is entropy l-diverse iff
  ``H_c = -sum_s (n_c(s)/n_c) ln(n_c(s)/n_c) >= ln l``; the largest such l of the table is
  ``exp(min_c H_c)`` (a real number; pycanon returns its integer part).
* recursive (c, l)-diversity (Machanavajjhala et al. 2007): a class satisfies it iff
  ``r_1 < c (r_l + r_{l+1} + ... + r_m)`` (an empty sum, l > m, is 0 and fails). The tail sum
  decreases with l, so the largest l of a class is ``max{l : r_1 < c sum_{i>=l} r_i}`` (0 when
  not even l = 1 holds, i.e. ``r_1 >= c n_c``) and the table holds for every l up to the minimum
  over classes. ``c`` is compared exactly as the decimal it prints as (``0.3`` is 3/10).
* t-closeness (Li, Li and Venkatasubramanian 2007, Sec. 4): ``t = max_c EMD(P_c, P)`` between
  the class distribution ``P_c = n_c(s)/n_c`` and the whole table's ``P = n(s)/n``, with the
  Earth Mover's distance of Li et al.: the **equal** ground distance (every pair of distinct
  values at distance 1) gives ``EMD = 1/2 sum_s |P_c(s) - P(s)|`` (categorical values), the
  **ordered** distance (values ``v_1 < ... < v_m`` of the whole table at distance
  ``|i - j|/(m - 1)``) gives ``EMD = 1/(m-1) sum_{i=1}^{m} |sum_{j<=i} (P_c(v_j) - P(v_j))|``
  (numeric values). ``distance="auto"`` uses ordered for a numeric sensitive column and equal
  otherwise, as pycanon does. With one sensitive value in the table, t = 0.

Requirements (:func:`diversity_report` with ``k``, ``l`` and ``t``; ``probanon diversity check
-k K -l L --sense S -t T`` exits 1 when one fails): k-anonymity holds when ``k >= K``;
l-diversity in the chosen ``sense`` (distinct by default) when ``l_distinct >= L``, when
``H_min >= ln L`` (entropy, up to ``ENTROPY_TOLERANCE``) or when ``L <= l_recursive`` (recursive,
which needs ``c``); t-closeness when ``t <= T`` (up to ``T_TOLERANCE``). ``holds`` is True when
every requirement given holds, None when none was given.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
import pandas as pd

from .._validation import check_k, is_numeric_column, row_label
from ..errors import InputError, ParameterError
from .distribution import _columns

COUNT_TABLE_COLUMNS = ("class", "sensitive", "count")
DISTANCES = ("auto", "equal", "ordered")
SENSES = ("distinct", "entropy", "recursive")
# t <= T is decided up to this absolute rounding of the EMD (a class at exactly T = 2/7 may
# compute as 2/7 + 1 ulp).
T_TOLERANCE = 1e-12
# H_c >= ln l is decided up to this absolute rounding of the entropy sum (a class uniform on l
# values has H_c = ln l exactly, which floating point may miss by an ulp or two).
ENTROPY_TOLERANCE = 1e-12


def _weights(frame: pd.DataFrame, count) -> np.ndarray:
    if count is None:
        return np.ones(len(frame), dtype=np.int64)
    if count not in frame.columns:
        raise InputError(f"count column {count!r} is not in the table")
    column = frame[count]
    if not is_numeric_column(column):
        text = pd.to_numeric(column, errors="coerce").isna() & column.notna()
        where = f" ({row_label(frame, int(np.argmax(text)))}: {column[text].iloc[0]!r})" if text.any() else ""
        raise InputError(f"count column {count!r} is not numeric{where}")
    w = column.to_numpy(dtype=np.float64)
    if not np.isfinite(w).all():
        raise InputError(f"count column {count!r} has a missing or infinite value "
                         f"({row_label(frame, int(np.argmax(~np.isfinite(w))))})")
    if (w < 0).any() or (w != np.round(w)).any():
        bad = int(np.argmax((w < 0) | (w != np.round(w))))
        raise InputError(f"count column {count!r} must hold non-negative integers, got {w[bad]!r} "
                         f"({row_label(frame, bad)})")
    if w.sum() == 0:
        raise InputError(f"count column {count!r} is zero everywhere (no records)")
    return w.astype(np.int64)


def _sorted_values(uniques: pd.Index) -> pd.Index:
    try:
        return uniques.sort_values()
    except TypeError:  # values of mixed types: keep the order of first appearance
        return uniques


def sensitive_counts(table: pd.DataFrame, qi=None, sensitive=None, count=None) -> pd.DataFrame:
    """Contingency table ``n_c(s)``: one row per equivalence class, one column per sensitive value.

    Parameters
    ----------
    table : DataFrame
        Microdata (with ``qi`` and ``sensitive``) or a count table (columns ``class``,
        ``sensitive``, ``count``; used when ``qi`` is None).
    qi : list or str, optional
        Quasi-identifier columns (a list, or one name). None: ``table``
        is a count table and the class column is ``class``.
    sensitive : str, optional
        Sensitive column (default ``"sensitive"`` for a count table; required with ``qi``).
    count : str, optional
        Column of non-negative integer multiplicities (default ``"count"`` for a count table;
        for microdata None means one record per row).

    Returns
    -------
    DataFrame of int64, index = class labels (tuples for several QI columns) in order of first
    appearance, columns = sensitive values sorted (first-appearance order if not sortable).
    Classes whose counts are all zero are kept (the checks skip them).
    """
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"the released table must be a pandas DataFrame, got {type(table).__name__}")
    if table.shape[0] == 0:
        raise InputError("the released table is empty (no records)")
    if qi is None:
        qi_columns = ["class"]
        sensitive = "sensitive" if sensitive is None else sensitive
        count = "count" if count is None else count
        missing = [col for col in (*qi_columns, sensitive, count) if col not in table.columns]
        if missing:
            raise InputError(f"the table is not a count table (no column {missing[0]!r}); "
                             "name the quasi-identifier and sensitive columns")
        if table["class"].isna().any():
            row = int(np.argmax(table["class"].isna().to_numpy()))
            raise InputError(f"the class column has a missing value ({row_label(table, row)})")
    else:
        if sensitive is None:
            raise InputError("no sensitive column given")
        qi_columns = _columns(table, qi, "quasi-identifier")
    if sensitive not in table.columns:
        raise InputError(f"sensitive column {sensitive!r} is not in the table")
    if sensitive in qi_columns:
        raise InputError(f"the sensitive column {sensitive!r} is also a quasi-identifier")
    if count is not None and (count in qi_columns or count == sensitive):
        raise InputError(f"the count column {count!r} is also a quasi-identifier or the sensitive column")
    s_column = table[sensitive]
    if s_column.isna().any():
        raise InputError(f"sensitive column {sensitive!r} has a missing value "
                         f"({row_label(table, int(np.argmax(s_column.isna())))})")
    weights = _weights(table, count)

    if len(qi_columns) == 1:
        c_codes, c_labels = pd.factorize(table[qi_columns[0]], use_na_sentinel=False)
    else:
        c_codes, c_labels = pd.factorize(pd.MultiIndex.from_frame(table[qi_columns]))
    s_codes, s_labels = pd.factorize(s_column)
    values = _sorted_values(pd.Index(s_labels))
    s_codes = values.get_indexer(s_labels)[s_codes]
    n_classes, n_values = len(c_labels), len(values)
    flat = np.bincount(c_codes * n_values + s_codes, weights=weights, minlength=n_classes * n_values)
    counts = np.rint(flat).astype(np.int64).reshape(n_classes, n_values)
    index = pd.Index(list(c_labels), tupleize_cols=False) if len(qi_columns) > 1 else pd.Index(c_labels)
    return pd.DataFrame(counts, index=index.rename(qi_columns[0] if len(qi_columns) == 1 else None),
                        columns=values.rename(sensitive))


def _nonempty(counts: pd.DataFrame) -> np.ndarray:
    if not isinstance(counts, pd.DataFrame):
        raise InputError("counts must be the DataFrame of sensitive_counts")
    n = counts.to_numpy(dtype=np.int64)
    n = n[n.sum(axis=1) > 0]
    if n.shape[0] == 0:
        raise InputError("the table has no records")
    return n


def entropy_per_class(counts: pd.DataFrame) -> np.ndarray:
    """Entropy ``H_c = ln n_c - (1/n_c) sum_s n_c(s) ln n_c(s)`` (nats) of every non-empty class
    (entropy l-diversity, Machanavajjhala et al. 2007)."""
    return _entropy_rows(_nonempty(counts).astype(np.float64))


def _entropy_rows(n: np.ndarray) -> np.ndarray:
    """:func:`entropy_per_class` of a float array of counts (classes x values, no empty class)."""
    size = n.sum(axis=1)
    nlogn = np.where(n > 0, n * np.log(np.where(n > 0, n, 1.0)), 0.0).sum(axis=1)
    return np.maximum(np.log(size) - nlogn / size, 0.0)


def _c_fraction(c) -> Fraction:
    if isinstance(c, (bool, np.bool_)) or not isinstance(c, numbers.Real) or not math.isfinite(float(c)) or c <= 0:
        raise ParameterError(f"c must be a positive number, got {c!r}")
    return Fraction(repr(float(c)))


def _less_than_c_times(r1: np.ndarray, tails: np.ndarray, c: Fraction) -> np.ndarray:
    """Exact ``r1 < c * tails`` for integer arrays (``r1`` broadcast against ``tails``)."""
    a, b = c.numerator, c.denominator
    if a * max(int(tails.max(initial=0)), 1) < 2**62 and b * max(int(r1.max(initial=0)), 1) < 2**62:
        return r1 * b < tails * a
    return np.asarray(r1.astype(object) * b < tails.astype(object) * a, dtype=bool)


def recursive_l_per_class(counts: pd.DataFrame, c) -> np.ndarray:
    """Largest l with ``r_1 < c (r_l + ... + r_m)`` for every non-empty class (recursive
    (c, l)-diversity, Machanavajjhala et al. 2007); 0 where not even l = 1 holds."""
    cf = _c_fraction(c)
    r = -np.sort(-_nonempty(counts), axis=1)  # r_1 >= r_2 >= ... (zeros last)
    tails = np.cumsum(r[:, ::-1], axis=1)[:, ::-1]  # tails[:, l-1] = r_l + ... + r_m
    holds = _less_than_c_times(r[:, :1], tails, cf)  # monotone: True for l = 1..l_c, then False
    return holds.sum(axis=1).astype(np.int64)


def _distance(counts: pd.DataFrame, distance: str) -> str:
    if distance not in DISTANCES:
        raise ParameterError(f"distance must be one of {', '.join(DISTANCES)}, got {distance!r}")
    if distance == "auto":
        numeric = pd.api.types.is_numeric_dtype(counts.columns.dtype) and not pd.api.types.is_bool_dtype(counts.columns.dtype)
        return "ordered" if numeric else "equal"
    if distance == "ordered" and not counts.columns.is_monotonic_increasing:
        raise ParameterError("ordered distance needs sensitive values that can be sorted")
    return distance


def emd_per_class(counts: pd.DataFrame, distance: str = "auto") -> np.ndarray:
    """Earth Mover's distance between each non-empty class's sensitive distribution and the
    whole table's (Li et al. 2007, Sec. 4): equal distance ``1/2 sum |P_c - P|`` or ordered
    distance ``1/(m-1) sum_i |sum_{j<=i} (P_c - P)_j|`` (see the module docstring)."""
    distance = _distance(counts, distance)
    n = _nonempty(counts).astype(np.float64)
    return _emd_rows(n, n.sum(axis=0) / n.sum(), distance == "ordered")


def _emd_rows(n: np.ndarray, whole: np.ndarray, ordered: bool) -> np.ndarray:
    """:func:`emd_per_class` of a float array of counts (classes x values, no empty class)
    against the whole table's distribution ``whole`` (the values' shares), with the ordered
    ground distance (values in increasing order) or the equal one."""
    diff = n / n.sum(axis=1, keepdims=True) - whole
    m = n.shape[1]
    if m == 1:
        return np.zeros(n.shape[0])
    if not ordered:
        return 0.5 * np.abs(diff).sum(axis=1)
    return np.abs(np.cumsum(diff, axis=1)).sum(axis=1) / (m - 1)


def _one_more(row: np.ndarray, whole: np.ndarray, ordered: bool):
    """The EMD (as :func:`_emd_rows`) and the entropy (as :func:`_entropy_rows`) of a class of
    counts ``row`` (floats, one per value) after one more record of value v, for every v at once
    (arrays of m), in O(m): with s the class size and ``a = cumsum(row) - (s+1) cumsum(whole)``,
    the ordered EMD is ``(sum_{i<v} |a_i| + sum_{i>=v} |a_i + 1|) / ((s+1)(m-1))``; with
    ``b = row - (s+1) whole`` the equal one is ``(sum |b| - |b_v| + |b_v + 1|) / (2(s+1))``; the
    entropy is ``ln(s+1) - (sum n ln n - n_v ln n_v + (n_v+1) ln(n_v+1)) / (s+1)``. Used to grow a
    class record by record (:mod:`.microaggregation`)."""
    size = row.sum() + 1.0
    m = row.size
    if m == 1:
        emd = np.zeros(1)
    elif ordered:
        a = np.abs(np.cumsum(row) - size * np.cumsum(whole))
        b = np.abs(np.cumsum(row) - size * np.cumsum(whole) + 1.0)
        below = np.concatenate([[0.0], np.cumsum(a)[:-1]])
        above = np.cumsum(b[::-1])[::-1]
        emd = (below + above) / (size * (m - 1))
    else:
        b = row - size * whole
        emd = (np.abs(b).sum() - np.abs(b) + np.abs(b + 1.0)) / (2.0 * size)
    nlogn = np.where(row > 0, row * np.log(np.where(row > 0, row, 1.0)), 0.0)
    entropy = np.log(size) - (nlogn.sum() - nlogn + (row + 1.0) * np.log(row + 1.0)) / size
    return emd, np.maximum(entropy, 0.0)


@dataclass(frozen=True)
class Requirement:
    """One threshold asked of a release: ``property`` ("k-anonymity", "distinct l-diversity",
    "entropy l-diversity", "recursive (c, l)-diversity" or "t-closeness") must reach
    ``required`` (at least it; at most it for t-closeness); ``achieved`` is the table's value."""

    property: str
    required: float
    achieved: float
    holds: bool

    def describe(self) -> str:
        relation = "<=" if self.property == "t-closeness" else ">="
        achieved = f"{self.achieved:.4g}" if isinstance(self.achieved, float) else str(self.achieved)
        return (f"{self.property} {relation} {self.required:g}: {'holds' if self.holds else 'FAILS'} "
                f"(achieved {achieved})")

    def to_dict(self) -> dict:
        return {"property": self.property, "required": self.required, "achieved": self.achieved,
                "holds": self.holds}


@dataclass(frozen=True)
class DiversityReport:
    """Anonymity of a released table (see the module docstring for every definition).

    Attributes
    ----------
    records : int
        Records ``n`` (sum of the counts).
    classes : int
        Non-empty equivalence classes; ``empty_classes`` published with count 0 are not checked.
    sensitive_values : int
        Distinct sensitive values in the table.
    k : int
        k-anonymity: smallest class size.
    l_distinct : int
        Distinct l-diversity: fewest distinct sensitive values in a class.
    entropy_min : float
        Smallest class entropy (nats); ``l_entropy = exp(entropy_min)``.
    c, l_recursive : float, int or None
        With ``c``: the largest l for which the table is recursive (c, l)-diverse (0: none).
    t_closeness, distance : float, str
        Largest EMD of a class from the whole table, and the ground distance used.
    l : int or None
        With ``l``: whether the table is distinct / entropy / recursive (c, l)-diverse.
    requirements : tuple of Requirement
        The thresholds asked (``k``; ``l`` in the chosen sense; ``t``), in that order.
    per_class : DataFrame
        One row per non-empty class: ``size``, ``distinct``, ``entropy``, ``emd`` (and
        ``l_recursive`` with ``c``); not part of :meth:`to_dict`.
    """

    records: int
    classes: int
    empty_classes: int
    sensitive_values: int
    k: int
    l_distinct: int
    entropy_min: float
    l_entropy: float
    c: float | None
    l_recursive: int | None
    t_closeness: float
    distance: str
    l: int | None
    distinct_holds: bool | None
    entropy_holds: bool | None
    recursive_holds: bool | None
    per_class: pd.DataFrame = field(repr=False, compare=False)
    requirements: tuple = ()

    @property
    def holds(self) -> bool | None:
        """True when every requirement holds, False when one fails, None without requirements."""
        return None if not self.requirements else all(r.holds for r in self.requirements)

    @property
    def failed(self) -> list[str]:
        """The properties whose requirement fails."""
        return [r.property for r in self.requirements if not r.holds]

    def to_dict(self) -> dict:
        """Plain-Python, JSON-serialisable copy (without ``per_class``)."""
        return {
            "records": self.records, "classes": self.classes, "empty_classes": self.empty_classes,
            "sensitive_values": self.sensitive_values, "k": self.k, "l_distinct": self.l_distinct,
            "entropy_min": self.entropy_min, "l_entropy": self.l_entropy,
            "c": self.c, "l_recursive": self.l_recursive,
            "t_closeness": self.t_closeness, "distance": self.distance,
            "l": self.l, "distinct_holds": self.distinct_holds, "entropy_holds": self.entropy_holds,
            "recursive_holds": self.recursive_holds,
            "requirements": [r.to_dict() for r in self.requirements],
            "holds": self.holds, "failed": self.failed,
        }


def diversity_report(table: pd.DataFrame, qi=None, sensitive=None, count=None, c=None, l=None,
                     distance: str = "auto", *, k=None, t=None, sense: str = "distinct") -> DiversityReport:
    """k-anonymity, distinct / entropy / recursive (c, l)-diversity and t-closeness of a release.

    Parameters
    ----------
    table, qi, sensitive, count
        The release, as in :func:`sensitive_counts` (``qi=None``: a count table with columns
        ``class``, ``sensitive``, ``count``).
    c : float, optional
        Constant of recursive (c, l)-diversity (> 0); gives ``l_recursive``.
    l : int, optional
        Target l (>= 1): gives ``distinct_holds``, ``entropy_holds`` and, with ``c``,
        ``recursive_holds``, and a requirement in the sense ``sense``.
    distance : {"auto", "equal", "ordered"}
        Ground distance of t-closeness' EMD ("auto": ordered for numeric sensitive values).
    k : int, optional
        Required k-anonymity (>= 1).
    t : float, optional
        Required t-closeness: the largest EMD must be at most ``t`` (in [0, 1]).
    sense : {"distinct", "entropy", "recursive"}
        The l-diversity the requirement ``l`` is about ("recursive" needs ``c``).

    Returns
    -------
    DiversityReport
    """
    cf = None if c is None else float(_c_fraction(c))
    if l is not None:
        l = check_k(l, name="l")
    if k is not None:
        k = check_k(k, name="k")
    if t is not None and (isinstance(t, (bool, np.bool_)) or not isinstance(t, numbers.Real)
                          or not 0.0 <= float(t) <= 1.0):
        raise ParameterError(f"t (t-closeness) must be a number in [0, 1], got {t!r}")
    if sense not in SENSES:
        raise ParameterError(f"sense must be one of {', '.join(SENSES)}, got {sense!r}")
    if sense == "recursive" and l is not None and cf is None:
        raise ParameterError("recursive (c, l)-diversity needs c")
    counts = sensitive_counts(table, qi, sensitive, count)
    distance = _distance(counts, distance)
    n = counts.to_numpy(dtype=np.int64)
    nonempty = n.sum(axis=1) > 0
    sizes = n[nonempty].sum(axis=1)
    distinct = (n[nonempty] > 0).sum(axis=1)
    entropy = entropy_per_class(counts)
    emd = emd_per_class(counts, distance)
    per_class = pd.DataFrame({"size": sizes, "distinct": distinct, "entropy": entropy, "emd": emd},
                             index=counts.index[nonempty])
    l_rec = None
    if cf is not None:
        per_class["l_recursive"] = recursive_l_per_class(counts, c)
        l_rec = int(per_class["l_recursive"].min())
    h_min = float(entropy.min())
    l_holds = {"distinct": None if l is None else bool(distinct.min() >= l),
               "entropy": None if l is None else bool(h_min >= math.log(l) - ENTROPY_TOLERANCE),
               "recursive": None if l is None or l_rec is None else bool(l <= l_rec)}
    achieved_l = {"distinct": int(distinct.min()), "entropy": float(math.exp(h_min)), "recursive": l_rec}
    requirements = []
    if k is not None:
        requirements.append(Requirement("k-anonymity", k, int(sizes.min()), bool(sizes.min() >= k)))
    if l is not None:
        name = "recursive (c, l)-diversity" if sense == "recursive" else f"{sense} l-diversity"
        requirements.append(Requirement(name, l, achieved_l[sense], l_holds[sense]))
    if t is not None:
        requirements.append(Requirement("t-closeness", float(t), float(emd.max()),
                                        bool(emd.max() <= float(t) + T_TOLERANCE)))
    return DiversityReport(
        records=int(sizes.sum()), classes=int(nonempty.sum()), empty_classes=int((~nonempty).sum()),
        sensitive_values=int((n.sum(axis=0) > 0).sum()),
        k=int(sizes.min()), l_distinct=achieved_l["distinct"],
        entropy_min=h_min, l_entropy=achieved_l["entropy"],
        c=cf, l_recursive=l_rec,
        t_closeness=float(emd.max()), distance=distance,
        l=l,
        distinct_holds=l_holds["distinct"], entropy_holds=l_holds["entropy"], recursive_holds=l_holds["recursive"],
        per_class=per_class,
        requirements=tuple(requirements),
    )

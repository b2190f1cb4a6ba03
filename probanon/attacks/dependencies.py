"""Functional and near-functional dependencies between columns of any type (the audit's
categorical search, issue 42.3).

Every column is read as classes (:func:`encode`): a text, boolean or nominal column by its values;
a numeric column with at most :data:`MAX_LEVELS` distinct values by its values too; a numeric
(or date) column with more by its deciles (:data:`BINS` equal-frequency bins, edges at the
deciles of its values; tied values never straddle an edge, so a column with a heavy value has
fewer bins); a missing value is a class of its own. For X (one column, or a pair of columns
read jointly) and Y, over the N rows:

* ``pinned`` = sum over the classes x of X holding at least :data:`MIN_SUPPORT` rows of
  max_y n(x, y): the rows whose Y is the majority value of Y in their X class, the value an
  intruder reads off X (classes of fewer rows pin nothing: a class of one row is trivially pure);
* ``baseline`` = max_y n(y): the rows the most common value of Y alone guesses;
* ``H(Y|X)/H(Y)`` = sum n(x, y) log(n(x) / n(x, y)) / sum n(y) log(N / n(y)), 0 when X determines Y,
  1 when X tells nothing of Y (reported beside the counts; the pinned share is what flags);
* value rules: a class x of at least :data:`MIN_SUPPORT` rows whose most common Y value v holds
  on at least :data:`RULE_SHARE` of them, and not by chance (the binomial probability of that many
  of n(x) rows holding v, given v's share of the file, below :data:`RULE_LEVEL` Bonferroni-corrected
  over the classes tested), e.g. Adult's relationship 'Husband' -> sex 'Male' on 19,715 of 19,716.

X *determines* Y when ``pinned >= min_share * N`` and the rule at least halves the errors of the
guess without X (``N - pinned <= (1 - min_gain) (N - baseline)``: a Y that is almost constant is
not "determined" by whatever agrees with its common value). X *largely determines* Y when, short
of that, its value rules pin Y on at least ``partial_share * N`` rows. Pairs of columns are tried as
X for determination only (not for value rules: with 2 columns, small pure classes multiply), and
only where neither column alone determines Y.
"""

from __future__ import annotations

import itertools
import math
import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

#: a numeric column with at most this many distinct values is read by its values, else binned
MAX_LEVELS = 20
#: equal-frequency bins of a numeric column with more distinct values (deciles)
BINS = 10
#: X determines Y when the majority of Y in X's class is right on at least this share of the rows
MIN_SHARE = 0.95
#: ... and X at least halves the rows the most common value of Y alone gets wrong
MIN_GAIN = 0.5
#: X largely determines Y when its value rules pin Y on at least this share of the rows
PARTIAL_SHARE = 0.25
#: a value rule: at least this share of the rows of an X class hold one Y value ...
RULE_SHARE = 0.99
#: ... in a class of at least this many rows (also the smallest class whose majority counts as pinned)
MIN_SUPPORT = 10
#: ... and no coincidence (binomial probability, Bonferroni-corrected over the classes tested)
RULE_LEVEL = 0.01
#: a text column is not audited when fewer than this share of its rows share a value with at
#: least MIN_SUPPORT - 1 others (nearly one value per row: free text, identifiers)
MIN_CLASSED = 0.5
#: a date in a text column: audited as a date when at least this share of its values parse as ISO dates
DATE_SHARE = 0.95


@dataclass(frozen=True)
class Coding:
    """A column read as classes: ``codes`` (0..levels-1, one per row), ``labels`` (each class as
    text), ``how`` (how it was read, e.g. "its deciles"); ``numeric``: its values as numbers
    (dates as days) for the linear and rank searches, or None."""

    name: str
    codes: np.ndarray
    labels: tuple
    how: str
    numeric: np.ndarray | None

    @property
    def levels(self) -> int:
        return len(self.labels)

    @property
    def binned(self) -> bool:
        return self.how.startswith("binned")


#: the label of the class of missing values (always the last class)
MISSING_LABEL = "(missing)"


def _label(value) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.6g}"
    return str(value)


def _by_values(name, values: pd.Series, how: str, numeric) -> Coding:
    codes, uniques = pd.factorize(values, sort=True, use_na_sentinel=True)
    labels = [_label(u) for u in uniques]
    if (codes < 0).any():  # missing: a class of its own
        codes = np.where(codes < 0, len(labels), codes)
        labels.append(MISSING_LABEL)
    return Coding(name, codes.astype(np.int64), tuple(labels), how, numeric)


def _binned(name, x: np.ndarray, what: str) -> Coding:
    present = ~np.isnan(x)
    edges = np.unique(np.quantile(x[present], np.arange(1, BINS) / BINS)) if present.any() else np.empty(0)
    codes = np.searchsorted(edges, x, side="right").astype(np.int64)
    bounds = np.concatenate([[-np.inf], edges, [np.inf]])
    labels = [f"[{_label(float(lo))}, {_label(float(hi))})" for lo, hi in zip(bounds[:-1], bounds[1:])]
    if not present.all():
        codes[~present] = len(labels)
        labels.append(MISSING_LABEL)
    return Coding(name, codes, tuple(labels), f"binned at {what} deciles ({len(edges) + 1} bins)", x)


def encode(series: pd.Series, *, nominal: bool = False) -> Coding | str:
    """``series`` as classes (module docstring), or the reason it cannot be audited (str).
    ``nominal``: numeric codes of categories, read by their values and never as numbers."""
    name = str(series.name)
    if series.isna().all():
        return "no value"
    if pd.api.types.is_bool_dtype(series):
        return _by_values(name, series, "its values", None)
    if pd.api.types.is_datetime64_any_dtype(series):
        return _dates(name, series)
    if pd.api.types.is_numeric_dtype(series):
        x = series.to_numpy(dtype=np.float64, na_value=np.nan)
        if nominal or series.nunique() <= MAX_LEVELS:
            return _by_values(name, series, "its values", None if nominal else x)
        return _binned(name, x, "its")
    values = series.astype(object).where(series.isna(), series.astype(str)).where(series.notna(), None)
    counts = values.value_counts(dropna=True)
    classed = int(counts[counts >= MIN_SUPPORT].sum())
    if classed >= MIN_CLASSED * int(series.notna().sum()):
        return _by_values(name, values, "its values", None)
    dates = pd.to_datetime(values, errors="coerce", format="ISO8601")
    if dates.notna().sum() >= DATE_SHARE * series.notna().sum():
        return _dates(name, dates)
    return (f"{counts.size:,} distinct values in {int(series.notna().sum()):,} records: only {classed:,} records share "
            f"a value with {MIN_SUPPORT - 1} others or more (free text or an identifier?), so no dependency on it can "
            "be measured; such a column singles records out by itself")


def _dates(name, series: pd.Series) -> Coding:
    stamps = pd.to_datetime(series)
    days = (stamps - pd.Timestamp("1970-01-01", tz=getattr(stamps.dt, "tz", None))).dt.total_seconds() / 86400.0
    x = days.to_numpy(dtype=np.float64, na_value=np.nan)
    if pd.Series(x).nunique() <= MAX_LEVELS:
        return _by_values(name, series.astype(object).where(series.notna(), None), "its values (dates)", x)
    return _binned(name, x, "its (dates, as days)")


# --------------------------------------------------------------------------- one X against one Y

@dataclass(frozen=True)
class Dependency:
    """X (``determining``: one or two column names) against Y (``determined``) over ``n`` rows
    (module docstring): ``pinned``, ``baseline``, ``entropy_ratio`` = H(Y|X)/H(Y), ``rules``
    ((x label, y label, rows holding y, rows of x), ...) and ``ruled`` (their rows holding y);
    ``full``: X determines Y (else largely)."""

    determining: tuple
    determined: str
    n: int
    pinned: int
    baseline: int
    entropy_ratio: float
    rules: tuple
    ruled: int
    full: bool
    how: tuple = ()  # how each determining column, then the determined one, was read

    @property
    def share(self) -> float:
        return (self.pinned if self.full else self.ruled) / self.n


def _class_table(x: np.ndarray, y: np.ndarray, ny: int):
    """(per X class: rows, rows of its majority Y value, that value; the joint counts; Y's counts)."""
    joint, counts = np.unique(x * ny + y, return_counts=True)
    xs, ys = joint // ny, joint % ny
    order = np.lexsort((-counts, xs))
    xs_o, first = xs[order], np.ones(order.size, dtype=bool)
    first[1:] = xs_o[1:] != xs_o[:-1]
    top_rows = order[first]
    n_x = np.add.reduceat(counts[order], np.flatnonzero(first))
    return n_x, counts[top_rows], ys[top_rows], xs[top_rows], xs, counts


def _entropy_ratio(xs, counts, n_x_of, n_y: np.ndarray, n: int) -> float:
    h_y = float(np.sum(n_y * np.log(n / n_y)))
    if h_y <= 0:
        return float("nan")
    return float(np.sum(counts * np.log(n_x_of / counts))) / h_y


def dependency(x: np.ndarray, y: Coding, names: tuple, x_labels, *, min_share: float = MIN_SHARE,
               min_gain: float = MIN_GAIN, partial_share: float = PARTIAL_SHARE, rule_share: float = RULE_SHARE,
               min_support: int = MIN_SUPPORT, rules: bool = True, how: tuple = ()) -> Dependency | None:
    """X (``x``: class codes 0..; ``x_labels(code)`` its label) against ``y``: the
    :class:`Dependency` when X determines or largely determines Y, else None. Rows lacking Y are
    left out: a missing value neither confirms nor contradicts what X says of Y (a few missing
    values must not hide a dependency that holds on every row with a value)."""
    if y.labels and y.labels[-1] == MISSING_LABEL:
        present = y.codes != len(y.labels) - 1
        if not present.all():
            x, y = x[present], dataclasses.replace(y, codes=y.codes[present],
                                                   numeric=None if y.numeric is None else y.numeric[present])
    n = x.size
    if n == 0:
        return None
    n_y = np.bincount(y.codes, minlength=y.levels)
    n_y = n_y[n_y > 0]
    baseline = int(n_y.max())
    if baseline == n:  # a constant: nothing to determine
        return None
    n_x, top, top_y, top_x, xs, counts = _class_table(x, y.codes, y.levels)
    supported = n_x >= min_support
    pinned = int(top[supported].sum())
    full = pinned >= min_share * n and n - pinned <= (1.0 - min_gain) * (n - baseline)
    found, ruled = (), 0
    if not full and rules:
        from scipy.stats import binom

        marginal = np.bincount(y.codes, minlength=y.levels) / n
        tested = int(supported.sum())
        pure = supported & (top >= rule_share * n_x)
        if pure.any():
            p = binom.sf(top[pure] - 1, n_x[pure], marginal[top_y[pure]])
            keep = np.flatnonzero(pure)[p < RULE_LEVEL / max(tested, 1)]
            ruled = int(top[keep].sum())
            if ruled >= partial_share * n:
                keep = keep[np.argsort(-top[keep], kind="stable")]
                found = tuple((x_labels(int(top_x[i])), y.labels[top_y[i]], int(top[i]), int(n_x[i])) for i in keep)
        if not found:
            return None
    elif not full:
        return None
    n_x_full = np.zeros(int(top_x.max()) + 1, dtype=np.int64)
    n_x_full[top_x] = n_x
    ratio = _entropy_ratio(xs, counts, n_x_full[xs], n_y, n)
    return Dependency(tuple(names), y.name, n, pinned, baseline, ratio, found, ruled if found else 0, full, how)


def _pair(a: Coding, b: Coding):
    """The classes of the pair (a, b) read jointly, and their labels."""
    values, codes = np.unique(a.codes * b.levels + b.codes, return_inverse=True)

    def label(code: int) -> str:
        joint = int(values[code])
        return f"({a.labels[joint // b.levels]}, {b.labels[joint % b.levels]})"

    return codes.astype(np.int64).reshape(-1), label


def search(determining: list, determined: list, *, pairs: bool = True, skip=(), **thresholds) -> list[Dependency]:
    """Every column of ``determined`` (:class:`Coding`) against every column of ``determining``
    (and, with ``pairs``, every pair of them where neither alone determines it): the dependencies
    found (:func:`dependency`), strongest first. ``skip``: (X name, Y name) pairs not to report
    (a column against itself); ``thresholds``: :func:`dependency`'s."""
    found = []
    for y in determined:
        full_by = set()
        for x in determining:
            if x.name == y.name or (x.name, y.name) in skip:
                continue
            d = dependency(x.codes, y, (x.name,), lambda c, x=x: x.labels[c], how=(x.how, y.how), **thresholds)
            if d is not None:
                found.append(d)
                if d.full:
                    full_by.add(x.name)
        if not pairs:
            continue
        for a, b in itertools.combinations([x for x in determining if x.name != y.name], 2):
            if {a.name, b.name} & full_by or (a.name, y.name) in skip or (b.name, y.name) in skip:
                continue
            if a.levels * b.levels < 2:
                continue
            codes, label = _pair(a, b)
            d = dependency(codes, y, (a.name, b.name), label, rules=False, how=(a.how, b.how, y.how), **thresholds)
            if d is not None:
                found.append(d)
    found.sort(key=lambda d: (not d.full, -d.share, len(d.determining), d.determined))
    return found


def describe(d: Dependency) -> str:
    """``education determines education-num on 48,842/48,842 rows (...)``."""
    names = [f"{c} ({h})" if h.startswith("binned") else c for c, h in zip(d.determining, d.how)]
    y_how = d.how[-1] if d.how else ""
    y_name = f"the bin of {d.determined} ({y_how})" if y_how.startswith("binned") else d.determined
    x = " and ".join(names) + (" together" if len(names) > 1 else "")
    verb = "determine" if len(names) > 1 else "determines"
    given = ",".join(d.determining)
    entropy = ("" if math.isnan(d.entropy_ratio) else
               f", H({d.determined}|{given})/H({d.determined}) = {d.entropy_ratio:.3f}")
    if d.full:
        return (f"{x} {verb} {y_name} on {d.pinned:,}/{d.n:,} rows (the most common value of {d.determined} alone: "
                f"{d.baseline:,}{entropy})")
    shown = ", ".join(f"{xv!r} -> {yv!r} ({h:,}/{nx:,})" for xv, yv, h, nx in d.rules[:4])
    more = f" and {len(d.rules) - 4} more values" if len(d.rules) > 4 else ""
    return (f"{x} largely {verb} {y_name}: its values pin it on {d.ruled:,}/{d.n:,} rows ({shown}{more}{entropy})")

"""The pre-release audit: on the original alone, find keys determined by the columns released per
record (confidential and passed-through ones) and released columns determined by keys, whatever
their type.

Such a dependence voids every guarantee that protects the keys only: the release carries the
confidential columns per record, so whoever knows a person's keys recomputes the relation and
finds their row (on the CASC census ``PTOTVAL = PEARNVAL + POTHVAL`` on every row, and every
PTOTVAL is distinct: 100% re-identification at any k; on UCI Adult the released ``education``
gives back ``education-num`` on every row). Four searches, each in both directions (a key
determined by released columns; a released column determined by keys):

* exact (or near-exact) relations with small integer coefficients, :func:`.relations.relations_in`
  (holding on at least ``min_share`` of the records and singling out at least one), numeric columns;
* near-perfect regressions: each key on all released numeric columns, and each released numeric
  column on all keys (least squares with an intercept, on the identity and the signed-log1p
  scale), flagged when the adjusted R^2 reaches ``r2_threshold``;
* monotone relations of any shape: Spearman's rho of every (key, released column) pair of numeric
  columns (the correlation of their ranks, ties at their mean rank), flagged when rho^2 reaches the
  same ``r2_threshold`` (y = exp(x), a tax schedule), where the linear search did not flag the pair;
* functional and near-functional dependencies of every column, text, nominal, ordinal, binary or
  numeric (binned at its deciles when it has more than 20 values), from one column or a pair of
  columns (:mod:`.dependencies`): X *determines* Y when Y's majority value in X's class is right
  on at least ``min_share`` of the rows (and X at least halves the errors of Y's most common value),
  and *largely determines* it when values of X each pin Y (>= 99% of >= 10 rows, no coincidence)
  on at least ``partial_share`` of the rows (Adult: relationship 'Husband' -> sex 'Male').

A column that cannot be audited (no value; text with nearly one value per row) is listed in
:attr:`AuditResult.not_audited` with the reason, and a release says so (:func:`verdict`): the
audit never passes a column silently. The release commands run the audit and refuse to publish
while a finding holds, unless ``--accept-risk`` is given (:func:`verdict`: an error, or a
:class:`~probanon.errors.ProbanonWarning` that the risk was accepted); the remedy is to treat the
column as a key, drop it, or perturb it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..data import quasi_identifiers
from ..errors import InputError, ParameterError, ProbanonWarning
from . import dependencies as deps
from .likelihood import signed_log1p
from .relations import MAX_TERMS, TOLERANCE, relations_in

#: regressions (adjusted R^2) and monotone pairs (Spearman rho^2) are flagged from this value
R2_THRESHOLD = 0.99
#: relations and dependencies are flagged when they hold on (pin) at least this share of the rows
MIN_SHARE = deps.MIN_SHARE
#: X largely determines Y when its values each pin Y on rows adding up to this share
PARTIAL_SHARE = deps.PARTIAL_SHARE
#: pairs of columns are tried as the determining side while the (pair, column) tests are at most this many
MAX_PAIR_TESTS = 4000
#: Spearman's rho is read on at least this many rows (as many as a class needs to pin a value)
MIN_RANK_ROWS = deps.MIN_SUPPORT

KEY_SIDE = "key determined by confidential columns"
RELEASED_SIDE = "confidential column determined by keys"


@dataclass(frozen=True)
class AuditFinding:
    """One dependence: ``kind`` "relation", "regression", "monotone", "dependency" (X determines
    the column) or "partial dependency" (X largely determines it); ``column`` the determined
    column; ``direction`` "key determined by confidential columns" (the released columns: confidential
    and passed-through ones) or "confidential column determined by keys"; ``text`` the dependence as
    found, with its counts and why it matters; ``share`` the records it holds on (relations), the
    adjusted R^2 (regressions), Spearman's rho^2 (monotone) or the share of rows pinned
    (dependencies); ``determining`` the columns on the other side; ``rows``/``n`` the rows it holds
    on (pins) and the rows audited, when counted; ``entropy_ratio`` H(column | determining) / H(column)
    for dependencies (NaN elsewhere)."""

    kind: str
    column: str
    direction: str
    text: str
    share: float
    determining: tuple = ()
    rows: int | None = None
    n: int | None = None
    entropy_ratio: float = float("nan")

    def to_dict(self) -> dict:
        return {"kind": self.kind, "column": self.column, "direction": self.direction, "text": self.text,
                "share": self.share, "determining": [str(c) for c in self.determining], "rows": self.rows,
                "n": self.n, "entropy_ratio": None if np.isnan(self.entropy_ratio) else self.entropy_ratio}


@dataclass(frozen=True)
class AuditResult:
    """Findings of :func:`audit` (empty: nothing found). ``not_audited``: ((column, reason), ...)
    for the columns no search could read; ``deferred``: partial dependencies onto categorical keys
    that the release measures on what it is about to write (:func:`contradictions`), reported but no
    finding here; ``parameters``: the thresholds used."""

    keys: list
    confidential: list
    n_records: int
    findings: tuple
    r2_threshold: float
    not_audited: tuple = ()
    deferred: tuple = ()
    parameters: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.findings

    def advice(self) -> str:
        return ("make the determining column a key too (or drop it), declare the determined column confidential "
                "instead of a key (or drop it), or perturb it; --accept-risk publishes anyway")

    def found(self) -> str:
        """The finding a refusal names (the first, and how many more)."""
        more = f" (and {len(self.findings) - 1} more)" if len(self.findings) > 1 else ""
        return f"{self.findings[0].text}{more}" if self.findings else ""

    def searched(self) -> str:
        p = self.parameters
        return (f"relations of up to {p.get('max_terms', MAX_TERMS)} columns, R^2 >= {self.r2_threshold} (linear) and "
                f"Spearman rho^2 >= {self.r2_threshold} (monotone), columns and pairs of columns of any type that "
                f"determine another on >= {p.get('min_share', MIN_SHARE):.0%} of the rows, values pinning another "
                f"column on >= {p.get('partial_share', PARTIAL_SHARE):.0%}")

    def unaudited(self) -> str:
        """The columns no search could read, and why ("" when every column was audited)."""
        return "; ".join(f"{c} not audited: {why}" for c, why in self.not_audited)

    def summary(self) -> str:
        if self.passed:
            text = (f"audit: no key is determined by the released columns and no released column by the keys "
                    f"({self.searched()})")
        else:
            text = "; ".join(f.text for f in self.findings)
        extra = [self.unaudited()] if self.not_audited else []
        extra += [f"checked on the release: {f.text}" for f in self.deferred]
        return "; ".join([text, *extra])

    def to_dict(self) -> dict:
        return {"keys": [str(c) for c in self.keys], "confidential": [str(c) for c in self.confidential],
                "n_records": self.n_records, "r2_threshold": self.r2_threshold, "passed": self.passed,
                "findings": [f.to_dict() for f in self.findings],
                "not_audited": [{"column": str(c), "reason": why} for c, why in self.not_audited],
                "deferred": [f.to_dict() for f in self.deferred], "parameters": dict(self.parameters)}


def _adjusted_r2(A: np.ndarray, y: np.ndarray) -> float:
    n, p = A.shape
    if n <= p + 2 or np.ptp(y) == 0:
        return float("nan")
    design = np.column_stack([np.ones(n), A])
    coef, *_ = np.linalg.lstsq(design, y, rcond=None)
    r2 = 1.0 - np.sum((y - design @ coef) ** 2) / np.sum((y - y.mean()) ** 2)
    return float(1.0 - (1.0 - r2) * (n - 1) / (n - p - 1))


def _regressions(A, B, names_a, names_b, direction, threshold, skip) -> list[AuditFinding]:
    out = []
    for j, name in enumerate(names_b):
        if name in skip:
            continue
        fits = {scale: _adjusted_r2(f(A), f(B[:, j])) for scale, f in (("identity", lambda v: v),
                                                                      ("log1p", signed_log1p))}
        scale, r2 = max(fits.items(), key=lambda item: -1.0 if np.isnan(item[1]) else item[1])
        if not np.isnan(r2) and r2 >= threshold:
            side = "confidential columns" if direction.startswith("key") else "keys"
            out.append(AuditFinding("regression", name, direction,
                                    f"{name} is predicted by the {side} ({', '.join(map(str, names_a))}) with adjusted "
                                    f"R^2 = {r2:.4f} (linear, {scale} scale)", r2, tuple(names_a)))
    return out


def spearman(X: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Spearman's rho of every column of ``X`` with every column of ``C`` (rows: X's columns):
    Pearson's correlation of the ranks, tied values at their mean rank (``scipy.stats.rankdata``);
    NaN where a column is constant."""
    from scipy.stats import rankdata

    def standard(M):
        R = rankdata(M, axis=0) if M.size else M
        R = R - R.mean(axis=0)
        norm = np.sqrt((R ** 2).sum(axis=0))
        with np.errstate(invalid="ignore", divide="ignore"):
            return R / np.where(norm > 0, norm, np.nan)

    return standard(X).T @ standard(C)


def _monotone(X, C, keys, released, threshold, skip) -> list[AuditFinding]:
    """(key, released column) pairs in a monotone relation (Spearman rho^2 >= ``threshold``), one
    finding per pair, the released column giving back the key's rank (and the reverse); pairs
    with a column in ``skip`` (flagged by the linear searches) are not repeated."""
    rho = spearman(X, C)
    out = []
    with np.errstate(invalid="ignore"):
        hits = np.argwhere(rho ** 2 >= threshold)
    for i, j in sorted(hits.tolist(), key=lambda ij: -abs(rho[ij[0], ij[1]])):
        key, column = keys[i], released[j]
        if key in skip or column in skip:
            continue
        r = float(rho[i, j])
        out.append(AuditFinding(
            "monotone", key, KEY_SIDE,
            f"{column} and {key} are monotone in one another on {X.shape[0]:,} rows: Spearman rho = {r:.4f} "
            f"(rho^2 = {r * r:.4f} >= {threshold}; {'increasing' if r > 0 else 'decreasing'}, of any shape): the "
            f"released {column} gives back the rank of {key}, whatever masks it", r * r, (column,), None,
            X.shape[0]))
    return out


def _complete_records(frame, keys, confidential, missing: bool) -> tuple[np.ndarray, np.ndarray]:
    """The checked key and confidential matrices of the records that have every audited value
    (confidential values may be missing; keys only with ``missing``)."""
    if not (keys and confidential):
        return np.empty((0, len(keys))), np.empty((0, len(confidential)))
    X = quasi_identifiers(frame, keys, missing=missing)[0]
    C = quasi_identifiers(frame, confidential, missing=True)[0]
    complete = ~(np.isnan(X).any(axis=1) | np.isnan(C).any(axis=1))
    return X[complete], C[complete]


def _why(d: deps.Dependency, direction: str) -> str:
    x = " and ".join(d.determining)
    y = d.determined
    if direction == KEY_SIDE:
        return (f"the released {x} gives back the original {y}, whatever masks it" if d.full else
                f"masking {y} by a group's mode or mean leaves it readable from the released {x} on those rows")
    return (f"whoever knows {x} reads the released {y} off it and finds the rows through it" if d.full else
            f"on those rows whoever knows {x} reads the released {y} off it and finds the rows through it")


def _dependency_finding(d: deps.Dependency, direction: str) -> AuditFinding:
    return AuditFinding("dependency" if d.full else "partial dependency", d.determined, direction,
                        f"{deps.describe(d)}: {_why(d, direction)}", d.share, d.determining,
                        d.pinned if d.full else d.ruled, d.n, d.entropy_ratio)


def _codings(frame, columns, nominal) -> tuple[list, list]:
    """(the columns read as classes, [(column, why it cannot be)])."""
    read, unread = [], []
    for c in columns:
        coded = deps.encode(frame[c], nominal=c in nominal)
        if isinstance(coded, str):
            unread.append((c, coded))
        else:
            read.append(coded)
    return read, unread


def _dependencies(frame, keys, released, nominal, masked, thresholds, pairs) -> tuple[list, list, list]:
    """(findings, deferred, not audited) of the dependency search (:mod:`.dependencies`)."""
    K, unread_k = _codings(frame, keys, nominal)
    C, unread_c = _codings(frame, released, nominal)
    unread = unread_k + unread_c
    pair_tests = len(K) * len(C) * (len(C) + len(K) - 2) // 2
    if pairs and pair_tests > MAX_PAIR_TESTS:
        pairs = False
        unread.append(("(pairs of columns)", f"{pair_tests:,} (pair, column) tests exceed {MAX_PAIR_TESTS:,}: single "
                                             "columns only were tried as the determining side"))
    findings, deferred = [], []
    for direction, determining, determined in ((KEY_SIDE, C, K), (RELEASED_SIDE, K, C)):
        for d in deps.search(determining, determined, pairs=pairs, **thresholds):
            finding = _dependency_finding(d, direction)
            (deferred if direction == KEY_SIDE and not d.full and d.determined in masked else findings).append(finding)
    return findings, deferred, unread


def _share(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
        raise ParameterError(f"{what} must be in (0, 1], got {value!r}")
    return float(value)


def audit(frame: pd.DataFrame, keys, confidential, *, r2_threshold: float = R2_THRESHOLD,
          min_share: float = MIN_SHARE, tolerance: float = TOLERANCE, max_terms: int = MAX_TERMS,
          missing: bool = False, nominal=(), masked_by_level=(), partial_share: float = PARTIAL_SHARE,
          min_gain: float = deps.MIN_GAIN, pairs: bool = True) -> AuditResult:
    """Audit ``frame`` (the original) for dependences between ``keys`` and ``confidential`` columns
    (every column released per record; module docstring), whatever their type.

    Relations, regressions and monotone pairs read the numeric columns (not ``nominal`` ones:
    numeric codes of categories); the dependency search reads every column (:mod:`.dependencies`).
    A released column may lack values (it is released as it is); ``missing``: so may the keys.
    The numeric searches read the records that have every audited value (a relation that holds on
    them is the one an intruder can use); the dependency search reads every record, a missing value
    being a class of its own. ``masked_by_level``: categorical keys the release replaces by their
    group's mode or median level; a partial dependency onto one is measured on the release itself
    (:func:`contradictions`: the records whose masked value it gives back), so it is listed in
    ``deferred``, not as a finding. Thresholds: ``r2_threshold`` (regressions, rho^2), ``min_share``
    (relations and dependencies), ``min_gain`` and ``partial_share`` (:mod:`.dependencies`);
    ``pairs``: also try pairs of columns as the determining side."""
    if isinstance(r2_threshold, bool) or not isinstance(r2_threshold, (int, float)) or not 0 < r2_threshold <= 1:
        raise ParameterError(f"the R^2 threshold must be in (0, 1], got {r2_threshold!r}")
    min_share = _share(min_share, "min_share")
    partial_share = _share(partial_share, "partial_share")
    min_gain = _share(min_gain, "min_gain")
    if not isinstance(frame, pd.DataFrame):
        raise InputError("the audit reads a DataFrame (columns are named)")
    keys, confidential = list(keys), list(confidential)
    nominal, masked = set(nominal or ()), set(masked_by_level or ())
    absent = [c for c in keys + confidential + sorted(nominal | masked, key=str) if c not in frame.columns]
    if absent:
        raise InputError(f"column {absent[0]!r} is not in the table")
    confidential = [c for c in confidential if c not in keys]
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c]) and not
               pd.api.types.is_bool_dtype(frame[c]) and c not in nominal]
    num_keys = [c for c in keys if c in numeric]
    num_conf = [c for c in confidential if c in numeric and frame[c].notna().any()]
    findings: list[AuditFinding] = []
    X, C = _complete_records(frame, num_keys, num_conf, missing)
    linear: list[AuditFinding] = []
    too_few: list = []
    if num_keys and num_conf and X.shape[0]:
        for found in relations_in(X, C, num_keys, num_conf, min_share=min_share, tolerance=tolerance,
                                  max_terms=max_terms):
            rel = found.relation
            determined, direction, other = (
                (rel.key_terms[0][0], KEY_SIDE, rel.confidential_terms) if len(rel.key_terms) == 1 else
                (rel.confidential_terms[0][0], RELEASED_SIDE, rel.key_terms))
            findings.append(AuditFinding("relation", determined, direction, str(found), found.holds / found.n,
                                         tuple(name for name, _ in other), found.holds, found.n))
        exact = {f.column for f in findings}
        linear += _regressions(C, X, num_conf, num_keys, KEY_SIDE, r2_threshold, exact)
        linear += _regressions(X, C, num_keys, num_conf, RELEASED_SIDE, r2_threshold, exact)
        flagged = exact | {f.column for f in linear} | {c for f in findings for c in f.determining}
        if X.shape[0] >= MIN_RANK_ROWS:
            linear += _monotone(X, C, num_keys, num_conf, r2_threshold, flagged)
        else:
            too_few = [("(monotone relations)", f"{X.shape[0]:,} records with every numeric value: Spearman's rho is "
                                                f"read on {MIN_RANK_ROWS} or more")]
    thresholds = dict(min_share=min_share, min_gain=min_gain, partial_share=partial_share)
    found, deferred, unread = _dependencies(frame, keys, confidential, nominal, masked, thresholds, pairs)
    order = {"relation": 0, "dependency": 1, "regression": 2, "monotone": 3, "partial dependency": 4}
    findings = sorted(findings + found + linear, key=lambda f: order[f.kind])  # stable: strongest first in a kind
    parameters = {"min_share": min_share, "min_gain": min_gain, "partial_share": partial_share,
                  "r2_threshold": r2_threshold, "max_terms": max_terms, "tolerance": tolerance, "pairs": pairs,
                  "max_levels": deps.MAX_LEVELS, "bins": deps.BINS, "rule_share": deps.RULE_SHARE,
                  "min_support": deps.MIN_SUPPORT, "rule_level": deps.RULE_LEVEL, "min_rank_rows": MIN_RANK_ROWS}
    return AuditResult(list(keys), list(confidential), len(frame), tuple(findings), r2_threshold, tuple(unread + too_few),
                       tuple(deferred), parameters)


# ------------------------------------------------------------------ categorical keys: contradictions

#: a value c of a released column determines a categorical key when at least this share of the
#: original records with c hold one key value (Adult: 'Husband' -> Male in 19,715 of 19,716)
DETERMINED_SHARE = 0.99
#: ... at least this many original records hold c (a rule an intruder can learn from the release,
#: whose other records mostly keep it; a value of a few records determines nothing learnable)
MIN_SUPPORT = 10
#: ... and the rule is no coincidence: that many records of c holding v has a binomial probability
#: below this level, Bonferroni-corrected over the values tested, given v's share of the file (ten
#: records of one fnlwgt all Male, p = 0.67^10 = 0.018, among thousands of fnlwgt values: chance)
RULE_LEVEL = 0.01


@dataclass(frozen=True)
class Contradiction:
    """Released records whose per-record ``column`` contradicts their released categorical
    ``key`` (:func:`contradictions`): ``rules`` ((column value, key value it determines, released
    records contradicting it, original records contradicting it), ...); ``released`` and
    ``original`` the totals; ``given_back`` the records whose key the release changed and whose
    column value determines their original key value (the masking undone)."""

    key: str
    column: str
    rules: tuple
    released: int
    original: int
    given_back: int

    @property
    def text(self) -> str:
        shown = "; ".join(f"{c!r} with {self.key} other than {v!r}: {r:,} released, {o:,} in the original"
                          for c, v, r, o in self.rules if r)
        return (f"{self.column} gives back the masked {self.key} of {_records(self.given_back)} "
                f"(records contradicting their {self.key}: {self.released:,} released, {self.original:,} in the original; "
                f"{shown})")

    def to_dict(self) -> dict:
        return {"key": self.key, "column": self.column, "released": self.released, "original": self.original,
                "given_back": self.given_back,
                "rules": [{"value": _plain(c), "determines": _plain(v), "released": r, "original": o}
                          for c, v, r, o in self.rules]}


def _records(n: int) -> str:
    return f"{n:,} record{'s' * (n != 1)}"


def _plain(value):
    return value.item() if isinstance(value, np.generic) else value


@dataclass(frozen=True)
class ContradictionResult:
    """Findings of :func:`contradictions`: every (key, column) pair with a contradiction, and the
    pairs that give back masked key values (``findings``: a release with one is refused)."""

    pairs: tuple
    n_records: int

    @property
    def findings(self) -> tuple:
        return tuple(p for p in self.pairs if p.given_back)

    @property
    def passed(self) -> bool:
        return not self.findings

    def found(self) -> str:
        return "; ".join(p.text for p in self.findings)

    def advice(self) -> str:
        return ("microaggregate within that column's values (--strata COLUMN), make it a key too, or drop it; "
                "--accept-risk publishes anyway")

    def summary(self) -> str:
        if not self.pairs:
            return "no released column contradicts a categorical key"
        return "; ".join(p.text for p in self.pairs)

    def to_dict(self) -> dict:
        return {"n_records": self.n_records, "passed": self.passed, "pairs": [p.to_dict() for p in self.pairs]}


def _determined(key: pd.Series, column: pd.Series, share: float, min_support: int) -> pd.Series:
    """{column value: the key value it determines} in the original (module constants)."""
    from scipy.stats import binom

    pairs = pd.DataFrame({"c": column, "k": key}).dropna()
    counts = pairs.groupby(["c", "k"], sort=False).size()  # sparse: a column may hold a value per record
    if counts.empty:
        return pd.Series(dtype=object)
    total = counts.groupby(level="c", sort=False).sum()
    tested = total[total >= min_support].index
    counts = counts[counts.index.get_level_values("c").isin(tested)]
    if counts.empty:
        return pd.Series(dtype=object)
    top = counts.sort_values(ascending=False, kind="stable").groupby(level="c", sort=False).head(1)
    value = pd.Series(top.index.get_level_values("k"), index=top.index.get_level_values("c"))
    n, top = total[value.index].to_numpy(), top.to_numpy()
    marginal = pairs["k"].value_counts(normalize=True)  # v's share among records with a column value
    p_value = binom.sf(top - 1, n, marginal[value.to_numpy()].to_numpy())
    keep = (top >= share * n) & (p_value < RULE_LEVEL / len(tested))
    return value[keep]


def contradictions(original: pd.DataFrame, released: pd.DataFrame, keys, columns, *,
                   share: float = DETERMINED_SHARE, min_support: int = MIN_SUPPORT) -> ContradictionResult:
    """Released records whose per-record columns contradict their masked categorical keys.

    A categorical key replaced by its group's mode (nominal) or median level (ordinal) can take, in
    a record, a value that record's own per-record columns rule out: on UCI Adult, sex replaced by
    the group's mode makes records 'Husband' + Female although the original holds one. A value c of
    a released ``column`` *determines* key value v when at least ``share`` of the ``min_support`` or
    more original records with c have v; a record *contradicts* its key when its c determines a value
    other than its key's (and no coincidence: :data:`RULE_LEVEL`). The release gives back a record's masked key when the release changed
    that key and c determines the original value: an intruder who knows the person's key (e.g. a
    woman) singles her record out of its group ('Wife' released as Male). Counted per (key, column):
    released and original contradictions (released <= original + given back, every other released
    contradiction being one of the original's own), and the records given back.

    ``original`` and ``released``: the records row by row (released: the keys' released values and
    the columns as released, e.g. merged strata recoded); ``keys``: the categorical keys;
    ``columns``: the columns released per record (confidential, passed through, weights, strata).
    """
    if len(original) != len(released):
        raise InputError(f"the original and released records differ in number ({len(original)}, {len(released)})")
    pairs = []
    for key in keys:
        before, after = original[key].reset_index(drop=True), released[key].reset_index(drop=True)
        for column in columns:
            if column == key:
                continue
            rule = _determined(before, original[column].reset_index(drop=True), share, min_support)
            if rule.empty:
                continue
            shown, kept = released[column].reset_index(drop=True), original[column].reset_index(drop=True)
            ruled, told = shown.map(rule), kept.map(rule)
            wrong_released = (ruled.notna() & (after != ruled)).to_numpy()
            wrong_original = (told.notna() & (before != told)).to_numpy()
            given_back = wrong_released & (after != before).to_numpy() & (ruled == before).to_numpy()
            if not wrong_released.any() and not wrong_original.any():
                continue
            by_value = [(c, v, int((wrong_released & (shown == c).to_numpy()).sum()),
                         int((wrong_original & (kept == c).to_numpy()).sum())) for c, v in rule.items()]
            pairs.append(Contradiction(str(key), str(column), tuple(r for r in by_value if r[2] or r[3]),
                                       int(wrong_released.sum()), int(wrong_original.sum()), int(given_back.sum())))
    return ContradictionResult(tuple(pairs), len(original))


def verdict(result, accept_risk: bool = False, where: str = "", *, say_unread: bool = True) -> None:
    """The verdict on an audit (:func:`audit`, :func:`contradictions`) before a release: nothing
    when it passed and read every column; a :class:`ProbanonWarning` naming the columns it could
    not read (:attr:`AuditResult.not_audited`); with a finding (``where``: on what, e.g. a file), an
    :class:`InputError` saying it and its remedy, unless ``accept_risk`` (``--accept-risk``): then a
    :class:`ProbanonWarning` that the release goes out although. ``say_unread=False``: the caller
    says the columns not read itself (a command, once its release is written)."""
    on = f" in {where}" if where else ""
    unread = getattr(result, "not_audited", ())
    if unread and say_unread:
        warnings.warn(f"the pre-release audit{on} could not read every released column: {result.unaudited()}",
                      ProbanonWarning, stacklevel=2)
    if result.passed:
        return
    if not accept_risk:
        raise InputError(f"the pre-release audit found{on} that {result.found()}: whoever knows the keys "
                         f"finds the rows through the released columns; {result.advice()}")
    warnings.warn(f"--accept-risk: publishing although{on} {result.summary()}", ProbanonWarning, stacklevel=2)

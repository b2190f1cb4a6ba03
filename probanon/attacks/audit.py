"""The pre-release audit: on the original alone, find keys determined by confidential columns and
confidential columns determined by keys.

Such a dependence voids every guarantee that protects the keys only: the release carries the
confidential columns per record, so whoever knows a person's keys recomputes the relation and
finds their row (on the CASC census ``PTOTVAL = PEARNVAL + POTHVAL`` on every row, and every
PTOTVAL is distinct: 100% re-identification at any k). Two searches:

* exact (or near-exact) relations with small integer coefficients, :func:`.relations.relations_in`
  (holding on at least ``min_share`` of the records and singling out at least one);
* near-perfect regressions: each key on all confidential columns, and each confidential column on
  all keys (least squares with an intercept, on the identity and the signed-log1p scale), flagged
  when the adjusted R^2 reaches ``r2_threshold``.

The release commands run the audit and refuse to publish while a finding holds, unless
``--accept-risk`` is given (:func:`verdict`: an error, or a :class:`~probanon.errors.ProbanonWarning`
that the risk was accepted); the remedy is to treat the column as a key, drop it, or perturb it.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data import quasi_identifiers
from ..errors import InputError, ParameterError, ProbanonWarning
from .likelihood import signed_log1p
from .relations import MAX_TERMS, TOLERANCE, relations_in

R2_THRESHOLD = 0.99
MIN_SHARE = 0.95


@dataclass(frozen=True)
class AuditFinding:
    """One dependence: ``kind`` "relation" or "regression"; ``column`` the determined column;
    ``direction`` "key determined by confidential columns" or "confidential column determined by
    keys"; ``text`` the relation as found; ``share`` the records it holds on (relations) or the
    adjusted R^2 (regressions)."""

    kind: str
    column: str
    direction: str
    text: str
    share: float

    def to_dict(self) -> dict:
        return {"kind": self.kind, "column": self.column, "direction": self.direction, "text": self.text,
                "share": self.share}


@dataclass(frozen=True)
class AuditResult:
    """Findings of :func:`audit` (empty: nothing found)."""

    keys: list
    confidential: list
    n_records: int
    findings: tuple
    r2_threshold: float

    @property
    def passed(self) -> bool:
        return not self.findings

    def advice(self) -> str:
        return ("declare the determined column confidential (or drop it) instead of a key, or perturb it; "
                "--accept-risk publishes anyway")

    def found(self) -> str:
        """The finding a refusal names (the first, and how many more)."""
        more = f" (and {len(self.findings) - 1} more)" if len(self.findings) > 1 else ""
        return f"{self.findings[0].text}{more}" if self.findings else ""

    def summary(self) -> str:
        if self.passed:
            return (f"audit: no key is determined by the confidential columns and no confidential column by the keys "
                    f"(relations of up to {MAX_TERMS} columns, R^2 >= {self.r2_threshold})")
        return "; ".join(f.text for f in self.findings)

    def to_dict(self) -> dict:
        return {"keys": [str(c) for c in self.keys], "confidential": [str(c) for c in self.confidential],
                "n_records": self.n_records, "r2_threshold": self.r2_threshold, "passed": self.passed,
                "findings": [f.to_dict() for f in self.findings]}


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
                                    f"R^2 = {r2:.4f} (linear, {scale} scale)", r2))
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


def audit(frame: pd.DataFrame, keys, confidential, *, r2_threshold: float = R2_THRESHOLD,
          min_share: float = MIN_SHARE, tolerance: float = TOLERANCE, max_terms: int = MAX_TERMS,
          missing: bool = False) -> AuditResult:
    """Audit ``frame`` (the original) for dependences between ``keys`` and ``confidential`` columns
    (module docstring). Non-numeric columns are left out (they take part in no linear relation).
    A confidential column may lack values (it is released as it is); ``missing``: so may the keys.
    The records that have every audited value are audited (a relation that holds on them is the
    one an intruder can use); a confidential column with no value at all relates to nothing."""
    if isinstance(r2_threshold, bool) or not isinstance(r2_threshold, (int, float)) or not 0 < r2_threshold <= 1:
        raise ParameterError(f"the R^2 threshold must be in (0, 1], got {r2_threshold!r}")
    if not isinstance(frame, pd.DataFrame):
        raise InputError("the audit reads a DataFrame (columns are named)")
    keys, confidential = list(keys), list(confidential)
    absent = [c for c in keys + confidential if c not in frame.columns]
    if absent:
        raise InputError(f"column {absent[0]!r} is not in the table")
    numeric = [c for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c]) and not
               pd.api.types.is_bool_dtype(frame[c])]
    keys = [c for c in keys if c in numeric]
    confidential = [c for c in confidential if c in numeric and frame[c].notna().any()]
    findings: list[AuditFinding] = []
    X, C = _complete_records(frame, keys, confidential, missing)
    if keys and confidential and X.shape[0]:
        for found in relations_in(X, C, keys, confidential, min_share=min_share, tolerance=tolerance,
                                  max_terms=max_terms):
            rel = found.relation
            determined, direction = ((rel.key_terms[0][0], "key determined by confidential columns")
                                     if len(rel.key_terms) == 1 else
                                     (rel.confidential_terms[0][0], "confidential column determined by keys"))
            findings.append(AuditFinding("relation", determined, direction, str(found), found.holds / found.n))
        exact = {f.column for f in findings}
        findings += _regressions(C, X, confidential, keys, "key determined by confidential columns", r2_threshold,
                                 exact)
        findings += _regressions(X, C, keys, confidential, "confidential column determined by keys", r2_threshold,
                                 exact)
    return AuditResult(list(keys), list(confidential), len(frame), tuple(findings), r2_threshold)


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


def verdict(result, accept_risk: bool = False, where: str = "") -> None:
    """The verdict on an audit (:func:`audit`, :func:`contradictions`) before a release: nothing
    when it passed; with a finding (``where``: on what, e.g. a file), an :class:`InputError`
    saying it and its remedy, unless ``accept_risk`` (``--accept-risk``): then a
    :class:`ProbanonWarning` that the release goes out although."""
    if result.passed:
        return
    on = f" in {where}" if where else ""
    if not accept_risk:
        raise InputError(f"the pre-release audit found{on} that {result.found()}: whoever knows the keys "
                         f"finds the rows through the released columns; {result.advice()}")
    warnings.warn(f"--accept-risk: publishing although{on} {result.summary()}", ProbanonWarning, stacklevel=2)

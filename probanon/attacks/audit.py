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
``--accept-risk`` is given; the remedy is to treat the column as a key, drop it, or perturb it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data import quasi_identifiers
from ..errors import InputError, ParameterError
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

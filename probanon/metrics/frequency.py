"""Frequency-based disclosure risk of categorical keys, as sdcMicro's ``measure_risk``.

For record i with key combination c(i):

- sample frequency f_k: the number of records that share c(i) (sdcMicro's ``freqCalc``: a
  missing value stands for any category, so a record with a missing key counts for, and is
  counted by, every record that agrees with it on the keys both have);
- estimated population frequency F_k: the sum of the sampling weights of those records (no
  weights: F_k = f_k, the file is the population);
- sample uniques: records with f_k = 1; k-anonymity violations: records with f_k < k;
- individual re-identification risk (Benedetti and Franconi 1998, the approximation of
  sdcMicro's ``indivRisk``, its default), with p_k = f_k / F_k:

      f_k = 1:   r = p_k / (1 - p_k) * log(1 / p_k)
      f_k = 2:   r = p_k / (1 - p_k) - (p_k / (1 - p_k))^2 * log(1 / p_k)
      f_k >= 3:  r = p_k / (f_k - (1 - p_k))

  At p_k = 1 (a population, or weights below 1, where sdcMicro's first two formulas are 0/0)
  their limit is taken, r = 1 / f_k, the risk of picking the right one of f_k identical
  records;
- expected re-identifications: sum of r over the records; global risk: their mean;
- records above the main risk level: sdcMicro's ``print(sdc, "risk")`` ("observations with higher
  risk than the main part of the data", R/printFunctions.R) counts the records with
  r > median(r) + 2 mad(r) and r > 0.1, R's ``mad`` being scaled by 1.4826 (consistent with the
  sd of a normal distribution): the records above the level max(0.1, median(r) + 2 mad(r))
  (:func:`main_risk_level`). (sdcMicro's ``print.measure_risk``, R/measure_risk.R, counts with
  3 mad instead; we follow ``print(sdc, "risk")``, the summary sdcMicro users read.)

Keys are compared by exact value (numbers and texts alike): after microaggregation the released
keys of a group are identical, so f_k >= k there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_weights, weights_of
from ..errors import InputError
from ..frequencies import key_codes, match_counts

#: the k of the violation counts reported by default (sdcMicro prints 2, 3 and 5)
VIOLATION_KS = (2, 3, 5)
#: R's ``mad`` constant, 1 / Phi^-1(3/4) rounded as R rounds it (``mad(x, constant = 1.4826)``)
MAD_CONSTANT = 1.4826
#: sdcMicro's floor of the main risk level (print(sdc, "risk"): risky records have risk > 0.1)
MAIN_LEVEL_FLOOR = 0.1
#: the quantiles of the individual risk summarised (R's ``quantile`` type 7: NumPy's default)
RISK_QUANTILES = {"min": 0.0, "q25": 0.25, "median": 0.5, "q75": 0.75, "max": 1.0}


def main_risk_level(risk) -> float:
    """sdcMicro's level above which a record's individual risk is "higher than the main part of the
    data" (``print(sdc, "risk")``, R/printFunctions.R):

        max(0.1, median(r) + 2 mad(r)),   mad(r) = 1.4826 median(|r - median(r)|);

    a record counts when its risk is strictly above this level."""
    r = np.asarray(risk, dtype=np.float64)
    if r.size == 0:
        raise InputError("no individual risk to summarise (no records)")
    median = float(np.median(r))
    mad = MAD_CONSTANT * float(np.median(np.abs(r - median)))
    return max(MAIN_LEVEL_FLOOR, median + 2.0 * mad)


@dataclass
class FrequencyRisk:
    """Frequency-based risk of one table: per record ``fk``, ``Fk`` and ``risk`` (module
    docstring), ``keys`` and whether sampling weights were given."""

    keys: list
    weighted: bool
    fk: np.ndarray
    Fk: np.ndarray
    risk: np.ndarray

    @property
    def n(self) -> int:
        return int(self.fk.size)

    @property
    def sample_uniques(self) -> int:
        return int((self.fk == 1).sum())

    def violations(self, k: int) -> int:
        """Records whose key combination is shared by fewer than k records."""
        return int((self.fk < k).sum())

    @property
    def expected_reidentifications(self) -> float:
        return float(self.risk.sum())

    @property
    def global_risk(self) -> float:
        return self.expected_reidentifications / self.n

    def risk_summary(self) -> dict:
        """The individual risk's minimum, quartiles, maximum (:data:`RISK_QUANTILES`) and mean."""
        values = np.quantile(self.risk, list(RISK_QUANTILES.values()))
        return {**{name: float(v) for name, v in zip(RISK_QUANTILES, values)}, "mean": float(self.risk.mean())}

    def above(self, level: float | None = None) -> np.ndarray:
        """Which records have an individual risk strictly above ``level`` (default: sdcMicro's main
        risk level, :func:`main_risk_level`)."""
        return self.risk > (main_risk_level(self.risk) if level is None else float(level))

    def to_dict(self, ks=VIOLATION_KS, level: float | None = None) -> dict:
        """JSON-ready summary; ``level``: the risk level of ``records_above_level`` (default:
        sdcMicro's main risk level)."""
        main = main_risk_level(self.risk)
        return {"keys": list(self.keys), "weighted": self.weighted, "records": self.n,
                "sample_uniques": self.sample_uniques,
                "violations": {str(k): self.violations(k) for k in ks},
                "expected_reidentifications": self.expected_reidentifications,
                "global_risk": self.global_risk, "max_individual_risk": float(self.risk.max()),
                "individual_risk": self.risk_summary(), "main_risk_level": main,
                "risk_level": main if level is None else float(level),
                "records_above_level": int(self.above(level).sum())}


def sample_frequencies(frame: pd.DataFrame, weights=None) -> tuple[np.ndarray, np.ndarray]:
    """(f_k, F_k) of every record of ``frame`` (its columns are the keys), a missing value
    matching any value (module docstring), counted by the counting core
    (:func:`probanon.frequencies.match_counts`, ``missing="any"``: records grouped by their
    pattern of missing keys, each pair of patterns matched on the keys both observe, so the cost is
    O(patterns^2 * n), not n^2)."""
    w = np.ones(len(frame)) if weights is None else np.asarray(weights, dtype=np.float64)
    fk, Fk = match_counts(key_codes(frame, list(frame.columns)), missing="any", weights=w)
    return fk, Fk


def individual_risk(fk, Fk) -> np.ndarray:
    """Benedetti-Franconi individual risk from the sample and estimated population frequencies
    (module docstring: sdcMicro's approximation; 1/f_k where p_k = f_k/F_k reaches 1).

    Evaluated with u = 1 - p_k = (F_k - f_k)/F_k and log(1/p_k) = -log1p(-u), and for f_k = 2
    near p_k = 1 (u < 0.01), where the formula is a difference of two terms of order 1/u, by
    its series r = p_k - p_k^2 sum_{j>=0} u^j / (j + 2) (terms to u^8: error below 1e-19)."""
    fk = np.asarray(fk, dtype=np.float64)
    Fk = np.maximum(np.asarray(Fk, dtype=np.float64), fk)  # F_k < f_k (weights below 1): p_k = 1
    p, u = fk / Fk, (Fk - fk) / Fk
    risk = 1.0 / fk  # the limit at p = 1
    inside = u > 0.0
    q = np.divide(p, u, out=np.zeros_like(p), where=inside)
    log = -np.log1p(-np.where(inside, u, 0.0))
    one, two, more = inside & (fk == 1), inside & (fk == 2), inside & (fk >= 3)
    risk[one] = q[one] * log[one]
    direct = two & (u >= 0.01)
    risk[direct] = q[direct] - q[direct] ** 2 * log[direct]
    series = two & (u < 0.01)
    risk[series] = p[series] - p[series] ** 2 * sum(u[series] ** j / (j + 2) for j in range(9))
    risk[more] = p[more] / (fk[more] - u[more])
    return risk


def frequency_risk(table: pd.DataFrame, keys, weights=None) -> FrequencyRisk:
    """Frequency-based risk (module docstring) of the ``keys`` of ``table``; ``weights``: the
    sampling weights (a column name of ``table`` or n values), or None for a population."""
    keys = [keys] if isinstance(keys, str) else list(keys)
    absent = [c for c in keys if c not in table.columns]
    if not keys or absent:
        raise InputError(f"column {absent[0]!r} is not in the table" if absent else "no key column")
    if len(table) == 0:
        raise InputError("the table has no records")
    if isinstance(weights, str):
        weights = weights_of(table, weights)
    elif weights is not None:
        weights = check_weights(weights, len(table))
    fk, Fk = sample_frequencies(table[keys], weights)
    return FrequencyRisk(keys=keys, weighted=weights is not None, fk=fk, Fk=Fk, risk=individual_risk(fk, Fk))


__all__ = ["FrequencyRisk", "frequency_risk", "individual_risk", "main_risk_level", "sample_frequencies"]

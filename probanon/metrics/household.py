"""Household (hierarchical) disclosure risk, as sdcMicro's ``measure_risk`` with ``hid``
(R/measure_risk.R, ``fast_hier = TRUE``, its default).

A household is re-identified when at least one of its members is: with r_i the individual risk
of member i (:mod:`probanon.metrics.frequency`, sdcMicro's ``indivRisk``), members taken as
independent, the risk of household h is

    R_h = 1 - prod_{i in h} (1 - r_i)

and every member carries it (sdcMicro's ``Res[, "hier_risk"]``). As sdcMicro:

- expected re-identifications with household structure (``hier_risk_ER``): the sum of R_h over the
  records (a household counts once per member: the expected number of *people* re-identified when
  re-identifying one member discloses the whole household);
- hierarchical risk (``hier_risk``): that sum divided by the number of records; in percent
  (``hier_risk_pct``) times 100.

We add the expected number of households re-identified, the sum of R_h over the households.
Household ids must all be present (sdcMicro leaves a record without one out of the sums; we
refuse it, :func:`probanon.release.household_codes`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError
from ..release import household_codes
from .frequency import frequency_risk


def household_risks(individual_risk, households) -> np.ndarray:
    """R_h = 1 - prod_{i in h} (1 - r_i) for every household code 0..H-1 (``households``: the code
    of each record), computed as 1 - exp(sum log(1 - r_i)) (a member with r_i = 1 gives R_h = 1)."""
    r = np.asarray(individual_risk, dtype=np.float64)
    h = np.asarray(households, dtype=np.int64)
    with np.errstate(divide="ignore"):
        log_safe = np.log1p(-np.clip(r, 0.0, 1.0))
    total = np.bincount(h, weights=log_safe, minlength=int(h.max()) + 1 if h.size else 0)
    return -np.expm1(total)


@dataclass
class HouseholdRisk:
    """Household risk of one file (module docstring): ``household`` the code of each record's
    household, ``ids`` the household ids by code, ``by_household`` R_h by code, ``risk`` R_h of
    each record (its household's)."""

    household: np.ndarray
    ids: pd.Index
    by_household: np.ndarray
    risk: np.ndarray

    @property
    def n(self) -> int:
        return int(self.risk.size)

    @property
    def households(self) -> int:
        return int(self.by_household.size)

    @property
    def expected_reidentifications(self) -> float:
        """sdcMicro's ``hier_risk_ER``: sum of R_h over the records."""
        return float(self.risk.sum())

    @property
    def hierarchical_risk(self) -> float:
        """sdcMicro's ``hier_risk``: ``hier_risk_ER`` / records."""
        return self.expected_reidentifications / self.n

    @property
    def expected_households(self) -> float:
        """Expected number of households re-identified: sum of R_h over the households."""
        return float(self.by_household.sum())

    def table(self) -> pd.DataFrame:
        """One row per household: its id, members and risk, riskiest first."""
        members = np.bincount(self.household, minlength=self.households)
        frame = pd.DataFrame({"household": self.ids, "members": members, "risk": self.by_household})
        return frame.sort_values("risk", ascending=False, kind="stable").reset_index(drop=True)

    def to_dict(self) -> dict:
        """JSON-ready summary."""
        return {"records": self.n, "households": self.households,
                "expected_reidentifications": self.expected_reidentifications,
                "hierarchical_risk": self.hierarchical_risk, "hierarchical_risk_pct": 100.0 * self.hierarchical_risk,
                "expected_households": self.expected_households,
                "max_household_risk": float(self.by_household.max())}


def household_risk(individual_risk, households, name: str = "household") -> HouseholdRisk:
    """Household risk (module docstring) from each record's ``individual_risk`` and its household
    id (``households``: one id per record, none missing; ``name`` names the column in errors)."""
    r = np.asarray(individual_risk, dtype=np.float64)
    ids = pd.Series(households).reset_index(drop=True)
    if r.ndim != 1 or r.size != len(ids):
        raise InputError(f"{r.size} individual risks for {len(ids)} household ids")
    if r.size == 0:
        raise InputError("the table has no records")
    if not np.isfinite(r).all() or (r < 0).any() or (r > 1).any():
        raise InputError("an individual risk is not a probability (between 0 and 1)")
    codes = household_codes(ids, name=name)
    by_household = household_risks(r, codes)
    return HouseholdRisk(household=codes, ids=pd.Index(pd.unique(ids)), by_household=by_household,
                         risk=by_household[codes])


def hierarchical_risk(table: pd.DataFrame, keys, household: str, weights=None) -> HouseholdRisk:
    """Household risk of ``table``: the individual risk of its ``keys`` (with sampling ``weights``,
    as :func:`probanon.metrics.frequency.frequency_risk`) combined within the households of its
    column ``household`` (sdcMicro's ``measure_risk(..., hid = household)``)."""
    if household not in table.columns:
        raise InputError(f"column {household!r} is not in the table")
    risk = frequency_risk(table, keys, weights)
    return household_risk(risk.risk, table[household], name=household)


__all__ = ["HouseholdRisk", "household_risk", "household_risks", "hierarchical_risk"]

"""The risk measures around categorical keys in one call (issue 43.5), for ``risk``, ``evaluate``,
the report and the API: the frequency risk (:mod:`.frequency`, with its records above sdcMicro's
main risk level), and on request SUDA2 (:mod:`.suda`), the household risk (:mod:`.household`) and
the k-anonymity violations per key combination (:func:`probanon.frequencies.k_violations`, a
missing value matching any value as in the frequency risk).

>>> from probanon.metrics.key_risk import key_risk
>>> found = key_risk(table, ["age", "sex", "region"], suda=True, household="hid", combinations=2)
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..errors import InputError
from ..frequencies import KViolations, k_violations
from .frequency import FrequencyRisk, frequency_risk, main_risk_level
from .household import HouseholdRisk, household_risk
from .suda import DIS_FRACTION, SudaResult, suda2

#: the k of the violations per key combination unless one is given (sdcMicro's kAnon default)
COMBINATION_K = 3
#: sdcMicro's highest interval of the DIS-SUDA table: a record above it is "at risk" in our summary
DIS_HIGH = 0.7


def combination_violations(table: pd.DataFrame, keys, k: int, combinations: int | None) -> KViolations:
    """k-anonymity violations per combination of at most ``combinations`` keys (None: all keys
    together), a missing value matching any value (sdcMicro's rule, as the frequency risk)."""
    return k_violations(table, keys, k, combinations=combinations, missing="any")


@dataclass
class KeyRisk:
    """The measures of one file: ``frequency`` always; ``suda``, ``household``, ``violations``
    when asked (else None)."""

    frequency: FrequencyRisk
    suda: SudaResult | None = None
    household: HouseholdRisk | None = None
    violations: KViolations | None = None

    def above_main_level(self) -> int:
        """Records whose individual risk is above sdcMicro's main risk level."""
        return int(self.frequency.above().sum())

    def rows(self) -> list:
        """(label, text) rows of a readable summary of the requested measures (beyond the
        frequency risk, which its callers show their way)."""
        rows = []
        if self.suda is not None:
            s = self.suda
            high = int((s.dis_score > DIS_HIGH).sum())
            sizes = ", ".join(f"{r.size}: {r.msus:,} in {r.records:,} records" for r in s.size_table().itertuples()
                              if r.msus)
            contributions = s.attribute_contributions()
            rows += [("SUDA2", f"{int((s.score > 0).sum()):,} records with a minimal sample unique (MSUs of at most "
                               f"{s.max_size} keys; {int(s.msu_counts.sum()):,} MSUs)"),
                     ("", f"MSUs by size: {sizes or 'none'}"),
                     ("", f"DIS {s.dis:.4g} (sampling fraction {s.dis_fraction:g}); DIS-SUDA score above "
                          f"{DIS_HIGH}: {high:,} records, max {s.dis_score.max():.4g}"),
                     ("", "DIS-SUDA scores (as sdcMicro's print.suda2): "
                          + ", ".join(f"{r.interval} {r.records:,}" for r in s.dis_table().itertuples())),
                     ("", "key contributions: " + (", ".join(f"{k} {v:.1f} %" for k, v in contributions.items())
                                                   if s.score.sum() > 0 else "none (no MSU)"))]
        if self.household is not None:
            h = self.household
            rows += [("household risk", f"{h.households:,} households; expected re-identifications "
                                        f"{h.expected_reidentifications:,.2f} ({100 * h.hierarchical_risk:.2f} % of "
                                        "the records: sdcMicro's hierarchical risk)"),
                     ("", f"expected households re-identified {h.expected_households:,.2f}; max household risk "
                          f"{h.by_household.max():.4g} (1 - prod(1 - r) over its members)")]
        if self.violations is not None:
            lines = self.violations.lines()
            rows += [("k per key combination", lines[0])] + [("", line.strip()) for line in lines[1:]]
        return rows

    def to_dict(self, level: float | None = None) -> dict:
        """JSON-ready: the frequency risk (``level``: its risk level, default sdcMicro's main
        level) and each requested measure."""
        out = {"frequency": self.frequency.to_dict(level=level), "main_risk_level": main_risk_level(self.frequency.risk),
               "records_above_main_level": self.above_main_level()}
        if self.suda is not None:
            out["suda2"] = {**self.suda.to_dict(), "dis_high": DIS_HIGH,
                            "records_dis_above_high": int((self.suda.dis_score > DIS_HIGH).sum())}
        if self.household is not None:
            out["household_risk"] = self.household.to_dict()
        if self.violations is not None:
            out["k_violations"] = self.violations.to_dict()
        return out


def key_risk(table: pd.DataFrame, keys, *, weights=None, suda: bool = False, suda_max_size: int | None = None,
             dis_fraction: float = DIS_FRACTION, household: str | None = None, households=None,
             combinations: int | None = None, k: int = COMBINATION_K, by_combination: bool = False,
             progress=None) -> KeyRisk:
    """The risk measures of ``table``'s ``keys`` (module docstring): the frequency risk with
    sampling ``weights`` (a column or values); ``suda``: SUDA2 with MSUs of at most
    ``suda_max_size`` keys and ``dis_fraction``; ``household`` (a column of ``table``) or
    ``households`` (one id per record): the household risk from the individual risk;
    ``by_combination``: the records below ``k`` per combination of at most ``combinations`` keys
    (None: all keys together)."""
    keys = [keys] if isinstance(keys, str) else list(keys)
    if household is not None:
        if household not in table.columns:
            raise InputError(f"the household column {household!r} is not in the table")
        if household in keys:
            raise InputError(f"the household id {household!r} is also a key")
        households = table[household]
    frequency = frequency_risk(table, keys, weights)
    found = KeyRisk(frequency=frequency)
    if by_combination:
        found.violations = combination_violations(table, keys, k, combinations)
    if households is not None:
        found.household = household_risk(frequency.risk, households, name=household or "household")
    if suda:
        found.suda = suda2(table, keys, max_size=suda_max_size, dis_fraction=dis_fraction, progress=progress)
    return found


__all__ = ["COMBINATION_K", "KeyRisk", "combination_violations", "key_risk"]

"""Metrics of a release: utility (information loss, moment differences), anonymity (k) and
disclosure risk (record linkage, interval disclosure, re-identification tests, frequency-based
risk of categorical keys as sdcMicro's ``measure_risk``), attribute disclosure (the shares of
people whose released group pins a confidential value, :mod:`.attribute`), and around categorical
keys SUDA2 (:mod:`.suda`), household risk (:mod:`.household`), all of them in one call
(:func:`.key_risk.key_risk`).

>>> from probanon.metrics import information_loss, utility_report, k_achieved, record_linkage
"""

from .anonymity import equivalence_class_sizes, k_achieved
from .attribute import PinnedShares, pinned_shares
from .frequency import FrequencyRisk, frequency_risk
from .household import HouseholdRisk, hierarchical_risk, household_risk
from .key_risk import KeyRisk, key_risk
from .risk import (
    ReidentificationTest,
    interval_disclosure,
    linkage_probabilities,
    mechanism_reidentification_test,
    record_linkage,
    reidentification_test,
)
from .suda import SudaResult, suda2
from .utility import UtilityReport, format_information_loss, information_loss, utility_report

__all__ = [
    "information_loss",
    "format_information_loss",
    "utility_report",
    "UtilityReport",
    "k_achieved",
    "equivalence_class_sizes",
    "record_linkage",
    "linkage_probabilities",
    "interval_disclosure",
    "reidentification_test",
    "mechanism_reidentification_test",
    "ReidentificationTest",
    "frequency_risk",
    "FrequencyRisk",
    "pinned_shares",
    "PinnedShares",
    "suda2",
    "SudaResult",
    "household_risk",
    "hierarchical_risk",
    "HouseholdRisk",
    "key_risk",
    "KeyRisk",
]

from .._validation import guard_public  # noqa: E402

guard_public(globals(), __all__)  # calls that do not fit a signature: our error


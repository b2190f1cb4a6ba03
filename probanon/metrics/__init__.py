"""Metrics of a release: utility (information loss, moment differences) and anonymity (k).

>>> from probanon.metrics import information_loss, utility_report, k_achieved
"""

from .anonymity import equivalence_class_sizes, k_achieved
from .utility import UtilityReport, information_loss, utility_report

__all__ = [
    "information_loss",
    "utility_report",
    "UtilityReport",
    "k_achieved",
    "equivalence_class_sizes",
]

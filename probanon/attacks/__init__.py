"""Honest guarantees: the strongest intruders we can build, run against a release, and a pre-release
audit of the original.

>>> from probanon.attacks import attack, audit
"""

from .audit import AuditFinding, AuditResult, audit
from .scope import GUARANTEES, Guarantee, guarantee
from .setting import MECHANISMS, AttackData, attack_data, rebuild_groups
from .suite import INTRUDERS, AttackReport, attack
from .linkage import linkage_test
from .uniqueness import attack_km_files, uniqueness_attack

__all__ = ["attack", "audit", "uniqueness_attack", "attack_km_files", "linkage_test", "AuditResult", "AuditFinding", "AttackReport", "INTRUDERS", "MECHANISMS", "GUARANTEES", "Guarantee", "guarantee",
           "AttackData", "attack_data", "rebuild_groups"]

from .._validation import guard_public  # noqa: E402

guard_public(globals(), __all__)  # calls that do not fit a signature: our error


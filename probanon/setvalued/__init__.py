"""Probabilistic k^m-anonymity for set-valued data (paper 5: probabilistic-km-anonymity.txt).

Core: CSR records (:mod:`.data`), supports of generalized itemsets with early exit
(:mod:`.support`), uniform samplers of distinct l-itemsets (:mod:`.sampling`), the
sample sizes gamma(sigma) and uniqueness estimates (:mod:`.sample_size`), generalization
constraints (:mod:`.constraints`), Algorithm 2 (:mod:`.generalize`), an independent checker
(:mod:`.check`) and a synthetic CDR generator (:mod:`.cdr`).
"""

from .check import CheckResult, check_release
from .data import (
    SetData,
    from_iterables,
    from_pairs,
    load_records,
    read_fimi,
    read_pairs,
)
from .enumeration import Enumeration, enumerate_distinct, enumerate_itemsets
from .generalize import Generalization, LevelReport, anonymize, release_data, release_records
from .sample_size import (
    SampleSize,
    SampleSizePlan,
    UniquenessEstimate,
    estimate_uniqueness,
    sample_size,
    sample_size_plan,
    uniqueness_from_supports,
    uniqueness_sample_size,
)
from .sampling import ItemsetSample, geweke_z, sample_itemsets
from .support import (
    PartIndex,
    generalized_support,
    identity_index,
    itemset_support,
    part_index,
)

__all__ = [
    "CheckResult",
    "Enumeration",
    "Generalization",
    "ItemsetSample",
    "LevelReport",
    "PartIndex",
    "SampleSize",
    "SampleSizePlan",
    "SetData",
    "UniquenessEstimate",
    "anonymize",
    "check_release",
    "enumerate_distinct",
    "enumerate_itemsets",
    "estimate_uniqueness",
    "from_iterables",
    "from_pairs",
    "generalized_support",
    "geweke_z",
    "identity_index",
    "itemset_support",
    "load_records",
    "part_index",
    "read_fimi",
    "read_pairs",
    "release_data",
    "release_records",
    "sample_itemsets",
    "sample_size",
    "sample_size_plan",
    "uniqueness_from_supports",
    "uniqueness_sample_size",
]

from .._validation import guard_public  # noqa: E402

guard_public(globals(), __all__)  # calls that do not fit a signature: our error


from . import cdr, constraints  # noqa: F401

"""Probabilistic k^m-anonymity for set-valued data (paper 5: probabilistic-km-anonymity.txt).

Core: CSR records (:mod:`.data`), supports of generalized itemsets with early exit
(:mod:`.support`), uniform samplers of distinct l-itemsets (:mod:`.sampling`) and the
sample sizes gamma(sigma) and uniqueness estimates (:mod:`.sample_size`).
"""

from .data import (
    SetData,
    from_iterables,
    from_pairs,
    load_records,
    read_fimi,
    read_pairs,
)
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
from .sampling import ItemsetSample, enumerate_itemsets, geweke_z, sample_itemsets
from .support import (
    PartIndex,
    generalized_support,
    identity_index,
    itemset_support,
    part_index,
)

__all__ = [
    "ItemsetSample",
    "PartIndex",
    "SampleSize",
    "SampleSizePlan",
    "SetData",
    "UniquenessEstimate",
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
    "sample_itemsets",
    "sample_size",
    "sample_size_plan",
    "uniqueness_from_supports",
    "uniqueness_sample_size",
]

# The generalization (Algorithm 2) lives in modules that may be added separately.
try:  # pragma: no cover - depends on which modules are present
    from . import cdr, constraints  # noqa: F401
except ImportError:
    pass

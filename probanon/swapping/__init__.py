"""Probabilistic k-anonymity by within-group swapping (paper 2: Soria-Comas & Domingo-Ferrer).

Partition the records into groups of at least k, then permute attributes inside each group
with a uniformly random permutation: for the intruder of the paper's proofs (who links by the
attributes it knows and nothing else) the probability of linking a record correctly is at most
1/k (Sec. IV), while every column keeps its values. The bound does not cover an intruder who
learns from the release how the swapped and kept columns relate, nor keys determined by
confidential columns: see :mod:`probanon.attacks` (scope of each method's guarantee in
:data:`probanon.attacks.GUARANTEES`, measured by :func:`probanon.attacks.attack`). Methods: MDAV-ID (the k-anonymous
baseline), MDAV-SWAP (uninformed and informed intruders) and IR-SWAP; utility measured by
the correlation differences of Tables X and XI.

>>> from probanon.swapping import ir_swap, correlation_difference_runs
"""

from .correlation import (
    CorrelationDifference,
    confidential_pairs,
    correlation_difference_runs,
    correlation_differences,
    pearson_correlations,
)
from .groups import (
    METHODS,
    Grouping,
    informed_groups,
    mdav_groups,
    quasi_identifier_groups,
    ranking_groups,
    swap_groups,
)
from .release import (
    Swapper,
    SwapResult,
    ir_swap,
    mdav_id,
    mdav_swap,
    mdav_swap_informed,
    permutation_within_groups,
    swap,
)

__all__ = [
    "METHODS", "Grouping", "SwapResult", "Swapper", "CorrelationDifference",
    "swap", "mdav_id", "mdav_swap", "mdav_swap_informed", "ir_swap",
    "swap_groups", "mdav_groups", "quasi_identifier_groups", "informed_groups", "ranking_groups",
    "permutation_within_groups", "confidential_pairs", "pearson_correlations", "correlation_differences",
    "correlation_difference_runs",
]

from .._validation import guard_public  # noqa: E402

guard_public(globals(), __all__)  # calls that do not fit a signature: our error


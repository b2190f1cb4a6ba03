"""Paper 1: p-probabilistic k-anonymous microaggregation for surveys with uncertain participation."""

from .anonymity import (
    CellFailure,
    EffectiveAnonymity,
    cell_failure,
    effective_anonymity,
    n_min,
    table_failure,
    table_sizes,
)
from .simulation import SimulationResult, simulate_cells, simulate_table

__all__ = ["SimulationResult", "simulate_cells", "simulate_table", "CellFailure", "EffectiveAnonymity", "cell_failure", "effective_anonymity", "n_min", "table_failure", "table_sizes"]

from .._validation import guard_public  # noqa: E402

guard_public(globals(), __all__)  # calls that do not fit a signature: our error


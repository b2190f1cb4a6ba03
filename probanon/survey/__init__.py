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

"""Paper 1: p-probabilistic k-anonymous microaggregation for surveys with uncertain participation."""

from .anonymity import (
    CellFailure,
    EffectiveAnonymity,
    cell_failure,
    effective_anonymity,
    n_min,
    table_failure,
)

__all__ = ["CellFailure", "EffectiveAnonymity", "cell_failure", "effective_anonymity", "n_min", "table_failure"]

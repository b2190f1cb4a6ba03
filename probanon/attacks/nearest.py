"""Nearest-record linkage (distance-based record linkage, :func:`probanon.metrics.record_linkage`).

Knows: the target's original key values and the release. Does: links to the released row whose
keys are nearest (Euclidean on keys z-scored with the original's mean and sd; categorical keys in
the release's encoding, within the target's stratum, on the keys observed in both:
:meth:`probanon.attacks.setting.KeySpace.nearest`), uniformly among ties. Against centroid replacement it succeeds with probability 1/|G| when the nearest centroid
is the target's own.
"""

from __future__ import annotations

import numpy as np

from ..metrics.risk import _Blocks
from .setting import AttackData

NAME = "nearest record"
KNOWS = "the target's original keys; links to the released row with the nearest keys (z-scores), uniformly among ties"


class NearestRecord:
    name, knows = NAME, KNOWS

    def __init__(self, data: AttackData):
        self.first, self.tied = data.space.nearest()
        _, row_tuple, n_tuples = data.space.tuples()
        self.blocks = _Blocks(row_tuple, n_tuples)
        self.note = ""

    def links(self, rng: np.random.Generator) -> np.ndarray:
        """One row of the nearest tuples per target, uniformly (as :class:`probanon.metrics.risk._NearestCandidates`)."""
        chosen = self.blocks.uniform_member(self.first, rng)
        for i, tuples in self.tied.items():
            rows = np.concatenate([self.blocks.members(t) for t in tuples])
            chosen[i] = rows[rng.integers(rows.size)]
        return chosen

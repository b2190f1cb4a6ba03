"""Nearest-record linkage (distance-based record linkage, :func:`probanon.metrics.record_linkage`).

Knows: the target's original key values and the release. Does: links to the released row whose
keys are nearest (Euclidean on keys z-scored with the original's mean and sd), uniformly among
ties. Against centroid replacement it succeeds with probability 1/|G| when the nearest centroid
is the target's own.
"""

from __future__ import annotations

import numpy as np

from ..data import Standardizer
from ..metrics.risk import _NearestCandidates
from .setting import AttackData

NAME = "nearest record"
KNOWS = "the target's original keys; links to the released row with the nearest keys (z-scores), uniformly among ties"


class NearestRecord:
    name, knows = NAME, KNOWS

    def __init__(self, data: AttackData):
        scaler = Standardizer.fit(data.known)
        self.candidates = _NearestCandidates(scaler.transform(data.known), scaler.transform(data.released_known))
        self.note = ""

    def links(self, rng: np.random.Generator) -> np.ndarray:
        return self.candidates.choose(rng)

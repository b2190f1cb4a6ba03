"""Exact tuple matching: the intruder of the proofs of paper 2 (Sec. IV-A).

Knows: the target's original key values and the release. Does: picks, uniformly, one of the
released rows whose key tuple equals the target's exactly (categorical keys by their values as
released, missing values equal, strata included: :class:`probanon.attacks.setting.KeySpace`); no
link when no released tuple does (e.g. after microaggregation, whose released keys are centroids). Against MDAV-SWAP this succeeds
with probability 1/|G| <= 1/k, which is what the paper proves.
"""

from __future__ import annotations

import numpy as np

from .setting import AttackData

NAME = "exact tuple"
KNOWS = ("the target's original keys; links to a released row with exactly the same key tuple, uniformly "
         "among several")


class ExactTuple:
    name, knows = NAME, KNOWS

    def __init__(self, data: AttackData):
        # the target's tuple of values (stratum included, missing values equal) in the release, if any
        self.match, row_tuple, n_tuples = data.space.tuples()
        self.rows_of_tuple = np.argsort(row_tuple, kind="stable")
        self.counts = np.bincount(row_tuple, minlength=n_tuples)
        self.starts = np.concatenate(([0], np.cumsum(self.counts)[:-1]))
        found = int((self.match >= 0).sum())
        self.note = f"{found:,} of {data.n:,} targets' key tuples appear in the release"

    def links(self, rng: np.random.Generator) -> np.ndarray:
        out = np.full(self.match.size, -1, dtype=np.int64)
        has = self.match >= 0
        t = self.match[has]
        offset = np.floor(rng.random(t.size) * self.counts[t]).astype(np.int64)
        out[has] = self.rows_of_tuple[self.starts[t] + offset]
        return out

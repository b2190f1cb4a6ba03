"""SUDA: special uniques of categorical keys, their SUDA and DIS-SUDA scores and the keys'
contributions, as sdcMicro's ``suda2`` (R/suda2.R, src/Suda2.h).

For a file of n records and M keys:

- a *minimal sample unique* (MSU) of record i is a set S of keys on which i's values are shared
  by no other record while on every proper subset of S they are shared (Elliot et al. 2002;
  Manning, Haglin and Keane 2008, "A recursive search algorithm for statistical disclosure
  assessment", Data Min. Knowl. Disc. 16:165-196). As sdcMicro: a missing value is a category
  of its own when values are compared, and no MSU contains a key that is missing for the
  record (sdcMicro drops the items of its ``missing`` code). Only MSUs of at most ``max_size``
  keys (m, default M) are sought.
- SUDA score of record i (sdcMicro's ``original_scores = TRUE``, Elliot et al.): the sum over its
  MSUs S of

      w(|S|) = prod_{t=|S|}^{m-1} (M - t)          (= (M - |S|)! when m = M, as sdcMicro);

- the file's DIS (Skinner and Elliot 2002, the probability that a unique match is correct,
  sampling fraction f = ``dis_fraction``, sdcMicro's ``DisFraction`` 0.01):

      DIS = U f / (U f + P (1 - f)),

  U the records unique on all keys, P the records in pairs (key combinations shared by exactly
  two records), missing values a category of their own;
- DIS-SUDA score of a record with score s > 0 (0 for s = 0), Q = 1 + (8 - M)/20:

      dis(s) = 1 / (1 + (U / DIS - U) / (s^Q A)),   A = sum over records with s > 0 of s^-Q;

- contribution of key j to record i (sdcMicro's ``contributionPercent``): the sum of w(|S|)
  over i's MSUs S that contain j, divided by i's score (0 when the score is 0); a key's
  contribution to the file (``attribute_contributions``): 100 sum_i contribution_ij score_i /
  sum_i score_i.

Where we differ from sdcMicro, on purpose: sdcMicro counts a full-key unique in U only when it
is alone in its 16-bit hash bucket (in Suda2.h ``k == g_NbPerHash[i]`` never holds in a bucket
of several records), so on large files its U (and DIS) falls towards 0; we count every unique.
With 1 or 2 keys sdcMicro appends constant dummy keys (its M becomes 3); we keep M. When items
are "correlated" (two values held by exactly the same records) sdcMicro credits the expanded
MSUs' weight to the wrong keys; we credit each MSU to its own keys.

The search: the subsets of at most m keys in order of size; for each, the group size of every
record (numba, a mixed-radix code counted directly or by hashing: O(n |S|)); a record unique on
S is given S as an MSU unless an MSU already found for it lies inside S (uniqueness is inherited
by supersets, so the minimal ones come first). Only the records unique on all keys are
candidates. Cost O(n sum_{s<=m} C(M, s) s): 10^6 records, 8 keys in seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from math import comb

import numpy as np
import pandas as pd

from ..errors import InputError
from ..progress import quiet
from . import _suda_kernel as kernel

#: sdcMicro's ``DisFraction`` default
DIS_FRACTION = 0.01
#: the intervals of sdcMicro's ``print.suda2`` table of DIS-SUDA scores (upper bounds; "> 0.7" last)
DIS_BREAKS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7)
#: most key subsets searched (choose a smaller ``max_size`` beyond)
MAX_SUBSETS = 1 << 16
#: memory for the bitsets of covered key subsets (beyond it, the slower MSU lists)
BITSET_BYTES = 1 << 29


def msu_weights(n_keys: int, max_size: int) -> np.ndarray:
    """w(s) = prod_{t=s}^{m-1} (M - t) for s = 1..m (module docstring; sdcMicro's ``g_ab``)."""
    return np.array([float(np.prod([n_keys - t for t in range(s, max_size)])) for s in range(1, max_size + 1)])


def dis_measure(uniques: int, pair_records: int, fraction: float) -> float:
    """DIS = U f / (U f + P (1 - f)) (Skinner and Elliot 2002; Suda2.h); 0 when U = 0."""
    if uniques == 0:
        return 0.0
    return uniques * fraction / (uniques * fraction + pair_records * (1.0 - fraction))


def dis_scores(score, n_keys: int, uniques: int, dis: float) -> np.ndarray:
    """DIS-SUDA of each record: 1 / (1 + (U/DIS - U) / (s^Q A)), Q = 1 + (8 - M)/20,
    A = sum_{s>0} s^-Q; 0 where s = 0 (module docstring; Suda2.h)."""
    s = np.asarray(score, dtype=np.float64)
    out = np.zeros_like(s)
    positive = s > 0
    if not positive.any():
        return out
    q = 1.0 + (8.0 - n_keys) / 20.0
    powered = s[positive] ** q
    adjust = float(np.sum(1.0 / powered))
    out[positive] = 1.0 / (1.0 + (uniques / dis - uniques) / (powered * adjust))
    return out


@dataclass
class SudaResult:
    """SUDA2 of one file (module docstring). Per record: ``score``, ``dis_score``, ``msu_counts``
    (records x sizes 1..max_size), ``contributions`` (records x keys, sdcMicro's
    ``contributionPercent``); the file's ``dis``, ``uniques`` (U), ``pair_records`` (P); the MSUs
    themselves as ``msu_record`` / ``msu_mask`` (bit j: key j)."""

    keys: list
    max_size: int
    dis_fraction: float
    score: np.ndarray
    dis_score: np.ndarray
    msu_counts: np.ndarray
    contributions: pd.DataFrame
    dis: float
    uniques: int
    pair_records: int
    msu_record: np.ndarray = field(repr=False)
    msu_mask: np.ndarray = field(repr=False)

    @property
    def n(self) -> int:
        return int(self.score.size)

    def attribute_contributions(self) -> pd.Series:
        """Each key's share (percent) of the total SUDA score (sdcMicro's
        ``attribute_contributions``); NaN when no record has an MSU."""
        total = float(self.score.sum())
        raw = self.contributions.to_numpy() * self.score[:, None]
        values = 100.0 * raw.sum(axis=0) / total if total > 0 else np.full(len(self.keys), np.nan)
        return pd.Series(values, index=list(self.keys), name="contribution")

    def msus(self) -> list:
        """The MSUs as (record, tuple of key names), by record then size."""
        order = np.lexsort((np.array([bin(int(m)).count("1") for m in self.msu_mask]), self.msu_record))
        return [(int(self.msu_record[i]), tuple(k for j, k in enumerate(self.keys) if int(self.msu_mask[i]) >> j & 1))
                for i in order]

    def dis_table(self) -> pd.DataFrame:
        """Records per interval of the DIS-SUDA score, as sdcMicro's ``print.suda2``: "== 0",
        (0, 0.1], ..., (0.6, 0.7], "> 0.7"."""
        eps = np.finfo(float).eps
        edges = np.concatenate([[-1.0], np.asarray(DIS_BREAKS) + eps, [np.inf]])
        where = np.searchsorted(edges, self.dis_score, side="left") - 1  # (a, b] as R's cut()
        counts = np.bincount(where, minlength=edges.size - 1)
        labels = ["== 0"] + [f"({a:.1f}, {b:.1f}]" for a, b in zip(DIS_BREAKS[:-1], DIS_BREAKS[1:])] + [f"> {DIS_BREAKS[-1]:.1f}"]
        return pd.DataFrame({"interval": labels, "records": counts.astype(int)})

    def size_table(self) -> pd.DataFrame:
        """Per MSU size: the MSUs found and the records with at least one."""
        sizes = np.arange(1, self.max_size + 1)
        return pd.DataFrame({"size": sizes, "msus": self.msu_counts.sum(axis=0).astype(int),
                             "records": (self.msu_counts > 0).sum(axis=0).astype(int)})

    def to_dict(self) -> dict:
        """JSON-ready summary."""
        contributions = self.attribute_contributions()
        return {"keys": list(self.keys), "max_size": self.max_size, "dis_fraction": self.dis_fraction,
                "records": self.n, "records_with_msu": int((self.score > 0).sum()),
                "msus": int(self.msu_counts.sum()), "uniques": self.uniques, "pair_records": self.pair_records,
                "dis": self.dis, "max_score": float(self.score.max()) if self.n else 0.0,
                "max_dis_score": float(self.dis_score.max()) if self.n else 0.0,
                "msu_sizes": self.size_table().to_dict(orient="records"),
                "dis_scores": self.dis_table().to_dict(orient="records"),
                "attribute_contributions": {k: (None if np.isnan(v) else float(v)) for k, v in contributions.items()}}


def _key_codes(frame: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes keys x records, radix per key, missing bitmask per record): a key's values coded
    0..c-1, a missing value coded c (a category of its own)."""
    n, m = frame.shape
    codes = np.empty((m, n), dtype=np.int64)
    radix = np.empty(m, dtype=np.int64)
    missing = np.zeros(n, dtype=np.int64)
    for j, column in enumerate(frame.columns):
        c, uniques = pd.factorize(frame[column], use_na_sentinel=True)
        absent = c < 0
        c = c.astype(np.int64)
        c[absent] = len(uniques)
        codes[j], radix[j] = c, len(uniques) + 1
        missing |= absent.astype(np.int64) << j
    return codes, radix, missing


def suda2(table: pd.DataFrame, keys, *, max_size: int | None = None, dis_fraction: float = DIS_FRACTION,
          progress=None) -> SudaResult:
    """SUDA2 of the ``keys`` of ``table`` (module docstring: sdcMicro's ``suda2`` with
    ``original_scores = TRUE``): minimal sample uniques of at most ``max_size`` keys (None: all),
    SUDA and DIS-SUDA scores, per-key contributions. ``progress(stage, done, total)``: the key
    subsets searched."""
    keys = [keys] if isinstance(keys, str) else list(keys)
    absent = [c for c in keys if c not in table.columns]
    if not keys or absent:
        raise InputError(f"column {absent[0]!r} is not in the table" if absent else "no key column")
    if len(set(keys)) != len(keys):
        raise InputError("a key is named twice")
    if len(table) == 0:
        raise InputError("the table has no records")
    n_keys = len(keys)
    if n_keys > 62:
        raise InputError(f"SUDA2 takes at most 62 keys, not {n_keys}")
    m = n_keys if max_size is None else max_size
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= m <= n_keys:
        raise InputError(f"max_size must be an integer from 1 to the number of keys ({n_keys}), not {max_size!r}")
    m = int(m)
    if not isinstance(dis_fraction, (int, float)) or isinstance(dis_fraction, bool) or not 0.0 < dis_fraction < 1.0:
        raise InputError(f"dis_fraction (the sampling fraction) must be between 0 and 1, not {dis_fraction!r}")
    n_subsets = sum(comb(n_keys, s) for s in range(1, m + 1))
    if n_subsets > MAX_SUBSETS:
        raise InputError(f"{n_keys} keys with MSUs up to size {m} are {n_subsets} key subsets (at most "
                         f"{MAX_SUBSETS}): choose a smaller maximum size")
    progress = quiet if progress is None else progress
    progress("SUDA2", 0, n_subsets)

    codes, radix, missing = _key_codes(table[keys])
    n = codes.shape[1]
    bits = max(4, int(np.ceil(np.log2(2 * n))))
    table_ = np.empty(1 << bits, dtype=np.int64)
    counts = np.empty(1 << bits, dtype=np.int64)
    slot = np.empty(n, dtype=np.int64)
    sizes = np.empty(n, dtype=np.int64)

    def count(subset):
        kernel.group_sizes(codes, radix, np.asarray(subset, dtype=np.int64), table_, slot, counts, sizes,
                           1 << bits, bits)
        return sizes

    full = count(range(n_keys))
    cand = np.flatnonzero(full == 1).astype(np.int64)
    uniques, pair_records = int(cand.size), int((full == 2).sum())
    cand_missing = missing[cand]
    weights = msu_weights(n_keys, m)

    head = np.full(cand.size, -1, dtype=np.int64)
    capacity = max(16, 2 * cand.size)
    msu_mask = np.empty(capacity, dtype=np.int64)
    msu_next = np.empty(capacity, dtype=np.int64)
    msu_owner = np.empty(capacity, dtype=np.int64)
    n_msu = np.zeros((cand.size, m), dtype=np.int64)
    score_c = np.zeros(cand.size)
    contrib_c = np.zeros((cand.size, n_keys))
    # covered subsets as a bitset per candidate when it fits in BITSET_BYTES, else MSU lists
    words = (1 << n_keys) // 64 + 1 if cand.size * ((1 << n_keys) // 8 + 8) <= BITSET_BYTES else 0
    covered = np.zeros((cand.size, words), dtype=np.uint64)
    full_mask = np.int64((1 << n_keys) - 1)
    used, done = 0, 0
    for size in range(1, m + 1):
        for subset in combinations(range(n_keys), size):
            done += 1
            if cand.size == 0:
                continue
            if capacity - used < cand.size:  # room for one new MSU per candidate
                capacity = 2 * capacity + cand.size
                msu_mask, msu_next, msu_owner = (np.resize(a, capacity) for a in (msu_mask, msu_next, msu_owner))
            mask = sum(1 << j for j in subset)
            count(subset)
            used = kernel.record_msus(np.int64(mask), np.asarray(subset, dtype=np.int64), float(weights[size - 1]),
                                      sizes, cand, cand_missing, head, msu_mask, msu_next, msu_owner, used, n_msu,
                                      score_c, contrib_c, covered, full_mask)
            progress("SUDA2", done, n_subsets)
    progress("SUDA2", n_subsets, n_subsets)

    score = np.zeros(n)
    score[cand] = score_c
    msu_counts = np.zeros((n, m), dtype=np.int64)
    msu_counts[cand] = n_msu
    share = np.zeros((n, n_keys))
    share[cand] = np.divide(contrib_c, score_c[:, None], out=np.zeros_like(contrib_c), where=score_c[:, None] > 0)
    dis = dis_measure(uniques, pair_records, float(dis_fraction))
    return SudaResult(keys=keys, max_size=m, dis_fraction=float(dis_fraction), score=score,
                      dis_score=dis_scores(score, n_keys, uniques, dis), msu_counts=msu_counts,
                      contributions=pd.DataFrame(share, columns=keys, index=table.index), dis=dis,
                      uniques=uniques, pair_records=pair_records, msu_record=cand[msu_owner[:used]],
                      msu_mask=msu_mask[:used].copy())


__all__ = ["SudaResult", "suda2", "msu_weights", "dis_measure", "dis_scores", "DIS_FRACTION"]

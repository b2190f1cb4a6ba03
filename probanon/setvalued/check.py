"""Independent checker of sigma-k^m-anonymity (paper 5, Definition 1; issue 7 item 7).

For every l <= m, by exact enumeration of the DISTINCT l-itemsets x of the original records,

    fraction_l = |{x : supp({R(i) : i in x}, <R, D>) >= k}| / |{x : supp(x, D) >= 1}|,

where record u supports the generalized itemset when its generalized record {R(i) : i in D_u}
contains every part. Written with plain Python sets only (no CSR, no numba, nothing from
``support.py``) so that it can catch bugs in the fast path. Small data only.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from .._validation import check_k
from ..errors import InputError, ParameterError


@dataclass(frozen=True)
class CheckResult:
    """Per level l = 1..m: number of distinct l-itemsets, how many are k-anonymous after
    generalization, and their fraction (1.0 when no record has l items: vacuously true)."""

    k: int
    levels: tuple
    n_itemsets: tuple
    n_anonymous: tuple
    fractions: tuple

    def satisfies(self, sigma: float) -> bool:
        """Definition 1: fraction_l >= sigma for every l."""
        return all(f >= sigma for f in self.fractions)

    def to_dict(self) -> dict:
        return {"k": self.k, "levels": [
            {"l": l, "itemsets": n, "anonymous": a, "fraction": f}
            for l, n, a, f in zip(self.levels, self.n_itemsets, self.n_anonymous, self.fractions)]}


def check_release(records, partition: dict, k, m) -> CheckResult:
    """Exact per-l fractions of k-anonymous l-itemsets (see the module docstring).

    ``records``: iterable of collections of item labels; ``partition``: item label -> part id
    (labels compared as strings). An item without a part is an :class:`InputError`.
    """
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ParameterError(f"m must be an integer >= 1, got {m!r}")
    recs = [frozenset(str(i) for i in r) for r in records]
    if not recs:
        raise InputError("the data set has no records")
    k = check_k(k, len(recs))
    part = {str(key): value for key, value in partition.items()}
    for r in recs:
        for i in r:
            if i not in part:
                raise InputError(f"item {i!r} has no part in the partition")
    holders: dict = {}  # part -> set of records whose generalized record contains it
    for u, r in enumerate(recs):
        for i in r:
            holders.setdefault(part[i], set()).add(u)
    levels, counts, anon, fracs = [], [], [], []
    for l in range(1, m + 1):
        distinct = set()
        for r in recs:
            distinct.update(itertools.combinations(sorted(r), l))
        cache: dict = {}
        good = 0
        for x in distinct:
            g = frozenset(part[i] for i in x)
            if g not in cache:
                cache[g] = len(set.intersection(*(holders[p] for p in g)))
            good += cache[g] >= k
        levels.append(l)
        counts.append(len(distinct))
        anon.append(good)
        fracs.append(good / len(distinct) if distinct else 1.0)
    return CheckResult(k, tuple(levels), tuple(counts), tuple(anon), tuple(fracs))

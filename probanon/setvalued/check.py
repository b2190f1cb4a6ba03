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

import numpy as np

from .._validation import check_k
from ..errors import InputError, ParameterError


@dataclass(frozen=True)
class CheckResult:
    """Per level l = 1..m: number of distinct l-itemsets, how many are k-anonymous after
    generalization, and their fraction (1.0 when no record has l items: vacuously true).
    ``k`` is an int, or the tuple (k_l) when it varies with the level."""

    k: int | tuple
    levels: tuple
    n_itemsets: tuple
    n_anonymous: tuple
    fractions: tuple

    def satisfies(self, sigma) -> bool:
        """Definition 1: fraction_l >= sigma_l for every l (``sigma`` a number or one per level)."""
        return all(f >= s for f, s in zip(self.fractions, _per_level(sigma, len(self.levels), "sigma")))

    def to_dict(self) -> dict:
        ks = _per_level(self.k, len(self.levels), "k")
        return {"k": self.k if isinstance(self.k, int) else list(self.k), "levels": [
            {"l": l, "k": k, "itemsets": n, "anonymous": a, "fraction": f}
            for l, k, n, a, f in zip(self.levels, ks, self.n_itemsets, self.n_anonymous, self.fractions)]}


def _per_level(value, m: int, name: str) -> tuple:
    """A scalar broadcast to m levels, or a sequence of exactly m values."""
    if isinstance(value, (list, tuple, np.ndarray)):
        if len(value) != m:
            raise ParameterError(f"{name} has {len(value)} values for m = {m} levels")
        return tuple(value)
    return (value,) * m


def check_release(records, partition: dict, k, m, progress=None) -> CheckResult:
    """Exact per-l fractions of k-anonymous l-itemsets (see the module docstring).

    ``records``: iterable of collections of item labels; ``partition``: item label -> part id
    (labels compared as strings). An item without a part is an :class:`InputError`. ``k`` is
    an int or one k_l per level l = 1..m. ``progress("records", done, m n)``
    (:mod:`probanon.progress`), if given, is called as the n records are done at each level.
    """
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ParameterError(f"m must be an integer >= 1, got {m!r}")
    recs = [tuple(sorted({str(i) for i in r})) for r in records]
    if not recs:
        raise InputError("the data set has no records")
    ks = tuple(check_k(x, len(recs)) for x in _per_level(k, m, "k"))
    part = {str(key): value for key, value in partition.items()}
    for r in recs:
        for i in r:
            if i not in part:
                raise InputError(f"item {i!r} has no part in the partition")
    holders: dict = {}  # part -> set of records whose generalized record contains it
    for u, r in enumerate(recs):
        for i in r:
            holders.setdefault(part[i], set()).add(u)
    support: dict = {}  # generalized itemset -> its support
    levels, counts, anon, fracs = [], [], [], []
    n = len(recs)
    if progress is not None:
        progress("records", 0, m * n)
    for l, k_l in zip(range(1, m + 1), ks):
        distinct, good = set(), 0
        for done, r in enumerate(recs, 1):
            for x in itertools.combinations(r, l):
                if x in distinct:
                    continue
                distinct.add(x)
                g = frozenset(part[i] for i in x)
                if g not in support:
                    support[g] = len(set.intersection(*(holders[p] for p in g)))
                good += support[g] >= k_l
            if progress is not None and done % 1024 == 0:
                progress("records", (l - 1) * n + done, m * n)
        if progress is not None and n % 1024:
            progress("records", l * n, m * n)
        levels.append(l)
        counts.append(len(distinct))
        anon.append(good)
        fracs.append(good / len(distinct) if distinct else 1.0)
    k_out = ks if isinstance(k, (list, tuple, np.ndarray)) else ks[0]
    return CheckResult(k_out, tuple(levels), tuple(counts), tuple(anon), tuple(fracs))

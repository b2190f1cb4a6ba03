"""The counting core of k-anonymity over combinations of categorical keys (issue 43), with both
missing-value rules.

For record i and a set of keys K, its **count** f(i) is the number of records j (i itself
included) that share i's values on K:

``missing="any"``       a missing value matches any value (sdcMicro's ``freqCalc``, its default
                        ``alpha = 1``): j counts for i when they agree on every key of K that both
                        have. A suppressed value can only add matches.
``missing="category"``  a missing value is a category of its own (sdcMicro's ``alpha = 0``): j
                        counts for i when their values on K are equal, missing equal to missing.

``strata``: counts within each stratum (records of different strata never match; a missing stratum
is a stratum of its own). The sum of sampling weights over the same records is F(i)
(:func:`match_counts`, the estimated population frequency of :mod:`probanon.metrics.frequency`).

k-anonymity over combinations (:func:`k_violations`): ``combinations=None``, all keys together;
``combinations=m``, every subset of at most m keys. Both rules are monotone (a record matching i on
K matches it on every subset of K), so all keys together implies every subset, and a record
violating some subset of at most m keys violates a subset of exactly min(m, |K|) keys: the
record-level total is counted on those, the table lists every subset.

Counting under ``"any"`` goes by missing patterns: records are grouped by which keys they miss;
for each pair of patterns (p, q) the records of q are grouped on the keys both observe and looked
up for those of p (``np.unique``/``bincount`` on integer codes), so the cost is about
patterns^2 * n, not n^2.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations as subsets_of

import numpy as np
import pandas as pd

from .errors import InputError

#: the missing-value rules (module docstring)
MISSING_RULES = ("any", "category")
#: a group id product above this is renumbered before more columns are combined (int64 stays exact)
_ID_LIMIT = 1 << 62


def key_codes(frame: pd.DataFrame, keys) -> np.ndarray:
    """Each key's values as integer codes 0..c-1 (n x len(keys), int64), -1 for a missing value."""
    if not len(keys):
        return np.zeros((len(frame), 0), dtype=np.int64)
    return np.column_stack([pd.factorize(frame[c], use_na_sentinel=True)[0] for c in keys]).astype(np.int64)


def stratum_codes(frame: pd.DataFrame, strata) -> np.ndarray | None:
    """One code per record for the strata columns together (a missing value a stratum value of its
    own), or None without strata."""
    strata = [strata] if isinstance(strata, str) else list(strata or [])
    if not strata:
        return None
    codes = key_codes(frame, strata)
    return row_ids(np.where(codes < 0, codes.max(axis=0, initial=0) + 1, codes))


def row_ids(codes: np.ndarray) -> np.ndarray:
    """Dense ids 0..g-1 of the distinct rows of a non-negative integer matrix (mixed-radix codes,
    renumbered whenever the product of the radices would leave int64)."""
    n = codes.shape[0]
    ids = np.zeros(n, dtype=np.int64)
    size = 1
    for c in range(codes.shape[1]):
        column = codes[:, c]
        radix = int(column.max(initial=-1)) + 1
        if size * max(radix, 1) >= _ID_LIMIT:
            _, ids = np.unique(ids, return_inverse=True)
            ids = ids.ravel().astype(np.int64)
            size = int(ids.max(initial=-1)) + 1
        ids = ids * radix + column
        size *= max(radix, 1)
    if codes.shape[1] == 0:
        return ids
    _, ids = np.unique(ids, return_inverse=True)
    return ids.ravel().astype(np.int64)


def match_counts(codes: np.ndarray, *, missing: str = "any", strata=None, weights=None):
    """(f, F): per record the number of records matching it (module docstring) and the sum of
    their weights (F is None without ``weights``). ``codes``: n x m integer codes, -1 missing;
    ``strata``: None or one code per record (non-negative)."""
    codes = np.asarray(codes, dtype=np.int64)
    n, m = codes.shape
    w = None if weights is None else np.asarray(weights, dtype=np.float64)
    absent = codes < 0
    if missing == "category" or not absent.any():
        ids = _group_ids(codes + 1 if strata is None else np.column_stack([strata, codes + 1]))
        f = np.bincount(ids)[ids]
        return f.astype(np.int64), (None if w is None else np.bincount(ids, weights=w)[ids])
    radix = codes.max(axis=0) + 2  # the digit radix - 1 is "missing"
    s = np.zeros(n, dtype=np.int64) if strata is None else np.asarray(strata, dtype=np.int64)
    span = int(np.prod(radix.astype(object)))
    if m <= 62 and (int(s.max()) + 1) * span < _ID_LIMIT:
        return _match_counts_kernel(codes, absent, radix, span, s, w)
    return _match_counts_by_pairs(codes, absent, s if strata is not None else None, w)


def _group_ids(codes: np.ndarray) -> np.ndarray:
    """Ids of the distinct rows of a non-negative integer matrix, not necessarily dense but below
    max(4n, 2^24) (mixed-radix codes when their range is that small, else :func:`row_ids`)."""
    n = codes.shape[0]
    radix = codes.max(axis=0, initial=0) + 1 if codes.shape[1] else np.zeros(0, dtype=np.int64)
    span = int(np.prod(radix.astype(object)))
    if span <= max(4 * n, 1 << 24):
        ids = np.zeros(n, dtype=np.int64)
        for c in range(codes.shape[1]):
            ids = ids * int(radix[c]) + codes[:, c]
        return ids
    return row_ids(codes)


def _match_counts_kernel(codes, absent, radix, span, s, w):
    """Rule "any" with the numba kernel (:mod:`probanon._frequency_kernel`) on the distinct tuples:
    one hash table per set of observed keys present."""
    from ._frequency_kernel import count_observed_set

    n, m = codes.shape
    digits = np.where(absent, radix - 1, codes)
    place = np.concatenate([[1], np.cumprod(radix)[:-1]]).astype(np.int64)
    _, first, tuple_of = np.unique(s * span + digits @ place, return_index=True, return_inverse=True)
    tuple_of = tuple_of.ravel()
    U = first.size
    c = np.bincount(tuple_of, minlength=U).astype(np.int64)
    weights = c.astype(np.float64) if w is None else np.bincount(tuple_of, weights=w, minlength=U)
    digits = np.ascontiguousarray(digits[first])
    pattern = ((digits == radix - 1).astype(np.int64) << np.arange(m, dtype=np.int64)).sum(axis=1)
    patterns = np.unique(pattern)
    full = (1 << m) - 1
    capacity = 1 << int(np.ceil(np.log2(max(16, 2 * U))))
    keys = np.empty(capacity, dtype=np.int64)
    counts = np.empty(capacity, dtype=np.int64)
    wsums = np.empty(capacity, dtype=np.float64)
    f = np.zeros(U, dtype=np.int64)
    F = np.zeros(U)
    for P in patterns:
        queries = np.flatnonzero(pattern == P)
        count_observed_set(digits, s[first] * span, c, weights, radix, place, full & ~int(P), queries, patterns, keys,
                           counts, wsums, f, F)
    return f[tuple_of], (None if w is None else F[tuple_of])


def _match_counts_by_pairs(codes, absent, strata, w):
    """Rule "any" in NumPy, pattern by pattern (for key codes too wide for the kernel's int64)."""
    n = codes.shape[0]
    if strata is not None:
        codes = np.column_stack([strata, codes])
        absent = np.column_stack([np.zeros(n, dtype=bool), absent])
    first, pattern_of = _first_and_ids(row_ids(absent.astype(np.int64)))
    patterns = absent[first]
    members = [np.flatnonzero(pattern_of == p) for p in range(len(patterns))]
    f = np.zeros(n, dtype=np.int64)
    F = None if w is None else np.zeros(n)
    for p, rows in enumerate(members):
        for q, others in enumerate(members):
            both = ~(patterns[p] | patterns[q])
            if not both.any():  # nothing to compare: every record of q matches
                f[rows] += others.size
                if F is not None:
                    F[rows] += w[others].sum()
                continue
            ids = row_ids(np.concatenate([codes[rows][:, both], codes[others][:, both]]))
            theirs = ids[rows.size:]
            f[rows] += np.bincount(theirs, minlength=ids.max() + 1)[ids[:rows.size]]
            if F is not None:
                F[rows] += np.bincount(theirs, weights=w[others], minlength=ids.max() + 1)[ids[:rows.size]]
    return f, F


def _first_and_ids(ids: np.ndarray):
    """The first row of each distinct id and the ids renumbered 0..g-1."""
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    return first, inverse.ravel()


def key_sets(n_keys: int, combinations: int | None) -> list:
    """The key sets (tuples of key positions) k-anonymity is asked on: all keys together
    (``combinations=None`` or >= n_keys), else every subset of 1..combinations keys."""
    if combinations is None or combinations >= n_keys:
        return [tuple(range(n_keys))]
    return [s for size in range(1, combinations + 1) for s in subsets_of(range(n_keys), size)]


def check_rule(missing: str) -> str:
    if missing not in MISSING_RULES:
        raise InputError(f"missing must be one of {', '.join(MISSING_RULES)}, got {missing!r}")
    return missing


def check_combinations(combinations, n_keys: int) -> int | None:
    if combinations is None:
        return None
    if isinstance(combinations, bool) or not isinstance(combinations, (int, np.integer)) or combinations < 1:
        raise InputError(f"combinations must be a positive whole number of keys or None, got {combinations!r}")
    return None if combinations >= n_keys else int(combinations)


@dataclass(frozen=True)
class KViolations:
    """k-anonymity violations per key combination: ``combinations`` (tuples of key names),
    ``records`` (per combination, records whose count is below k), ``classes`` (per combination,
    distinct value combinations, missing values as they are, whose count is below k), ``total``
    (records below k on at least one combination), ``k``, ``missing``, ``n`` (records)."""

    k: int
    missing: str
    combinations: tuple
    records: tuple
    classes: tuple
    total: int
    n: int
    violating: np.ndarray  # per record: below k on some combination

    def table(self) -> pd.DataFrame:
        """One row per combination: its keys, its size, records and classes below k."""
        return pd.DataFrame({"combination": [", ".join(map(str, c)) for c in self.combinations],
                             "keys": [len(c) for c in self.combinations],
                             "records_below_k": list(self.records), "classes_below_k": list(self.classes)})

    def lines(self, limit: int = 10) -> list:
        """Short text: the total, then the combinations with violations (at most ``limit``)."""
        rule = "a missing value matches any value" if self.missing == "any" else "a missing value is a category"
        out = [f"{self.total:,} of {self.n:,} records below k = {self.k} on some key combination ({rule})"]
        bad = sorted((r, c, s) for c, r, s in zip(self.combinations, self.records, self.classes) if r)[::-1]
        for r, c, s in bad[:limit]:
            out.append(f"  {', '.join(map(str, c))}: {r:,} records in {s:,} classes")
        if len(bad) > limit:
            out.append(f"  ... and {len(bad) - limit} more combinations with violations")
        return out

    def to_dict(self) -> dict:
        return {"k": self.k, "missing": self.missing, "records": self.n, "violating_records": self.total,
                "combinations": [{"keys": list(c), "records_below_k": r, "classes_below_k": s}
                                 for c, r, s in zip(self.combinations, self.records, self.classes)]}


def k_violations(data: pd.DataFrame, keys, k: int, *, combinations: int | None = None, missing: str = "any",
                 strata=None) -> KViolations:
    """k-anonymity violations of ``data`` on ``keys`` (module docstring): per combination of keys
    (all together, or every subset of at most ``combinations`` keys) the records and the classes
    whose count is below ``k``, counted with the ``missing`` rule within ``strata`` (column names)."""
    keys = [keys] if isinstance(keys, str) else list(keys)
    absent = [c for c in keys + ([strata] if isinstance(strata, str) else list(strata or [])) if c not in data.columns]
    if not keys or absent:
        raise InputError(f"column {absent[0]!r} is not in the table" if absent else "no key column")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise InputError(f"k must be a positive whole number, got {k!r}")
    check_rule(missing)
    combinations = check_combinations(combinations, len(keys))
    codes, stratum = key_codes(data, keys), stratum_codes(data, strata)
    return violations_of_codes(codes, keys, int(k), combinations=combinations, missing=missing, strata=stratum)


def violations_of_codes(codes: np.ndarray, names, k: int, *, combinations=None, missing="any",
                        strata=None) -> KViolations:
    """:func:`k_violations` on integer codes (-1 missing) with ``names`` for the keys; ``strata``
    one code per record or None (inputs assumed valid). The largest combinations are counted
    first: when none of them has a violation, no smaller one has (monotone counts) and they are
    not counted again."""
    n, m = codes.shape
    sets = key_sets(m, combinations)
    largest = max(len(s) for s in sets)
    violating = np.zeros(n, dtype=bool)
    found = {}
    for s in sorted(sets, key=len, reverse=True):
        if len(s) < largest and not violating.any():
            found[s] = (0, 0)
            continue
        sub = codes[:, list(s)]
        f, _ = match_counts(sub, missing=missing, strata=strata)
        below = f < k
        classes = 0
        if below.any():
            rows = sub[below] if strata is None else np.column_stack([strata[below], sub[below]])
            classes = int(row_ids(rows + 1).max()) + 1
        found[s] = (int(below.sum()), classes)
        if len(s) == largest:
            violating |= below
    return KViolations(k=k, missing=missing, combinations=tuple(tuple(names[i] for i in s) for s in sets),
                       records=tuple(found[s][0] for s in sets), classes=tuple(found[s][1] for s in sets),
                       total=int(violating.sum()), n=n, violating=violating)


__all__ = ["KViolations", "MISSING_RULES", "k_violations", "key_codes", "key_sets", "match_counts", "row_ids",
           "stratum_codes", "violations_of_codes"]

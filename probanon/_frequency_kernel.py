"""numba kernel of the counting core (:mod:`probanon.frequencies`) under the rule "a missing value
matches any value": for one set R of observed keys, the records observing exactly R look up, in a
hash table of every record's values on R (a missing value a digit of its own), the entries of
each missing pattern present restricted to R: one table per observed set, n entries each."""

from __future__ import annotations

import numpy as np
from numba import njit

EMPTY = -1


@njit(cache=True)
def _slot(keys, key):
    mask = keys.size - 1
    i = ((key * 0x9E3779B97F4A7C15) >> 17) & mask
    while keys[i] != EMPTY and keys[i] != key:
        i = (i + 1) & mask
    return i


@njit(cache=True)
def count_observed_set(digits, stratum, c, weights, radix, place, R, queries, patterns, keys, counts, wsums, f, F):
    """Add to f (and F) of the records ``queries`` (those observing exactly the keys of mask R)
    the records (weights) matching them: every tuple j (``c[j]`` records of weight ``weights[j]``)
    is entered once under its values on R
    (its missing keys the digit radix - 1), then each query sums the entries of its values on R
    with the keys of A = P & R missing, for each distinct A among the missing ``patterns`` P."""
    n, q = digits.shape
    keys[:] = EMPTY
    counts[:] = 0
    wsums[:] = 0.0
    for j in range(n):
        code = stratum[j]
        for x in range(q):
            if (R >> x) & 1:
                code += digits[j, x] * place[x]
        i = _slot(keys, code)
        keys[i] = code
        counts[i] += c[j]
        wsums[i] += weights[j]
    masks = np.empty(patterns.size, dtype=np.int64)
    m = 0
    for p in range(patterns.size):
        A = patterns[p] & R
        seen = False
        for t in range(m):
            if masks[t] == A:
                seen = True
                break
        if not seen:
            masks[m] = A
            m += 1
    for a in range(queries.size):
        j = queries[a]
        for t in range(m):
            A = masks[t]
            code = stratum[j]
            for x in range(q):
                if (R >> x) & 1:
                    d = radix[x] - 1 if (A >> x) & 1 else digits[j, x]
                    code += d * place[x]
            i = _slot(keys, code)
            if keys[i] == code:
                f[j] += counts[i]
                F[j] += wsums[i]

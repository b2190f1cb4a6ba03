"""numba kernels of the fast local suppression (:mod:`probanon.categorical.suppression`).

One block of q keys (all keys together, or one combination) is solved on its distinct tuples
(stratum + key digits, a missing value being the digit ``radix - 1`` of its key). A hash table
(open addressing) holds, for every kept-key set R (a bit mask of the q keys) and every tuple j,
the entry (R, j's digits on R) with j's record count and weight sum; under the rule "a missing
value matches any value" the records compatible with tuple t on R are then the sum, over the
missing patterns A present among the tuples (restricted to R), of the entries (R, t's digits on
R \\ A, missing digits on A): 2^q entries per tuple, a few lookups per query. Under "a missing value
is a category" only R = all keys is stored: a class is one entry.
"""

from __future__ import annotations

import numpy as np
from numba import njit

EMPTY = -1


@njit(cache=True)
def _slot(keys, key):
    mask = keys.size - 1
    h = (key * 0x9E3779B97F4A7C15) & 0x7FFFFFFFFFFFFFFF
    i = (h >> 17) & mask
    while keys[i] != EMPTY and keys[i] != key:
        i = (i + 1) & mask
    return i


@njit(cache=True)
def _add(keys, counts, wsums, key, c, w):
    i = _slot(keys, key)
    if keys[i] == EMPTY:
        keys[i] = key
    counts[i] += c
    wsums[i] += w


@njit(cache=True)
def _get(keys, counts, wsums, key):
    i = _slot(keys, key)
    if keys[i] == EMPTY:
        return 0, 0.0
    return counts[i], wsums[i]


@njit(cache=True)
def _code(digits, stratum, place, radix, R, A, q, stride):
    """Key of (R, digits on R with the keys of A missing)."""
    code = stratum
    for x in range(q):
        if (R >> x) & 1:
            d = radix[x] - 1 if (A >> x) & 1 else digits[x]
            code += d * place[x]
    return code * stride + R


@njit(cache=True)
def _pattern(digits, radix, q):
    P = 0
    for x in range(q):
        if digits[x] == radix[x] - 1:
            P |= 1 << x
    return P


@njit(cache=True)
def _insert(keys, counts, wsums, digits, stratum, place, radix, q, stride, c, w, category):
    full = (1 << q) - 1
    P = _pattern(digits, radix, q)
    if category:
        _add(keys, counts, wsums, _code(digits, stratum, place, radix, full, P, q, stride), c, w)
        return
    for R in range(1 << q):
        _add(keys, counts, wsums, _code(digits, stratum, place, radix, R, P & R, q, stride), c, w)


@njit(cache=True)
def _query(keys, counts, wsums, digits, stratum, place, radix, q, stride, R, S, present, stamp, tick, category):
    """(records, weight) compatible with the tuple ``digits`` once the keys of S are suppressed:
    under "any" on the kept keys R (observed and not in S), under "category" the class of equal
    digits."""
    if category:
        P = _pattern(digits, radix, q) | S
        return _get(keys, counts, wsums, _code(digits, stratum, place, radix, (1 << q) - 1, P, q, stride))
    f, F = 0, 0.0
    for P in range(1 << q):
        if present[P] == 0:
            continue
        A = P & R
        if stamp[A] == tick:
            continue
        stamp[A] = tick
        c, w = _get(keys, counts, wsums, _code(digits, stratum, place, radix, R, A, q, stride))
        f += c
        F += w
    return f, F


@njit(cache=True)
def _risk(f, F):
    """Individual risk of :func:`probanon.metrics.frequency.individual_risk` (the formulas of its
    docstring) for one record."""
    if F < f:
        F = float(f)
    p = f / F
    u = (F - f) / F
    if u <= 0.0:
        return 1.0 / f
    qq = p / u
    lg = -np.log1p(-u)
    if f == 1:
        return qq * lg
    if f == 2:
        if u >= 0.01:
            return qq - qq * qq * lg
        s = 0.0
        for j in range(9):
            s += u ** j / (j + 2)
        return p - p * p * s
    return p / (f - u)


@njit(cache=True)
def _safe(f, F, k, threshold):
    if threshold > 0.0:
        return _risk(f, F) < threshold
    return f >= k


@njit(cache=True)
def suppress_block(digits, strata, counts_t, wsum_t, radix, place, tie, candidates, k, threshold, capacity):
    """Greedy suppression on the distinct tuples of one block.

    ``digits``: U x q tuple digits (modified in place: suppressed keys get the missing digit);
    ``strata``: stratum code per tuple (already multiplied into the code space: the offset of its
    stratum); ``counts_t``/``wsum_t``: records and weights per tuple; ``tie``: a rank per tuple
    breaking ties of the order; ``candidates``: suppression masks by increasing cost. The unsafe
    tuples are taken by increasing count (then ``tie``); each one still unsafe when its turn comes
    gets the cheapest candidate whose count (or risk) is safe in the current state (rule "a
    missing value matches any value"). Returns (the mask of keys suppressed per tuple, the unsafe
    tuples in the order taken)."""
    category = False
    U, q = digits.shape
    stride = 1 << q
    full = stride - 1
    keys = np.full(capacity, EMPTY, dtype=np.int64)
    counts = np.zeros(capacity, dtype=np.int64)
    wsums = np.zeros(capacity, dtype=np.float64)
    present = np.zeros(stride, dtype=np.int64)
    stamp = np.zeros(stride, dtype=np.int64)
    tick = 0
    for t in range(U):
        _insert(keys, counts, wsums, digits[t], strata[t], place, radix, q, stride, counts_t[t], wsum_t[t], category)
        present[_pattern(digits[t], radix, q)] += 1
    rank = np.empty(U, dtype=np.int64)
    bad = np.empty(U, dtype=np.int64)
    n_bad = 0
    for t in range(U):
        tick += 1
        f, F = _query(keys, counts, wsums, digits[t], strata[t], place, radix, q, stride,
                      full & ~_pattern(digits[t], radix, q), 0, present, stamp, tick, category)
        if not _safe(f, F, k, threshold):
            rank[n_bad] = f * U + tie[t]
            bad[n_bad] = t
            n_bad += 1
    order = bad[:n_bad][np.argsort(rank[:n_bad])]
    added = np.zeros(U, dtype=np.int64)
    for i in range(order.size):
        t = order[i]
        P = _pattern(digits[t], radix, q)
        obs = full & ~P
        tick += 1
        f, F = _query(keys, counts, wsums, digits[t], strata[t], place, radix, q, stride, obs, 0, present, stamp,
                      tick, category)
        if _safe(f, F, k, threshold):
            continue
        best = obs
        for j in range(candidates.size):
            S = candidates[j]
            if S & P or S == 0:
                continue
            tick += 1
            f, F = _query(keys, counts, wsums, digits[t], strata[t], place, radix, q, stride, obs & ~S, S, present,
                          stamp, tick, category)
            if _safe(f, F, k, threshold):
                best = S
                break
        _move(keys, counts, wsums, digits[t], strata[t], place, radix, q, stride, counts_t[t], wsum_t[t], best,
              present, category, True)
        added[t] |= best
    return added, order


@njit(cache=True)
def cleanup_block(digits, orig, strata, counts_t, wsum_t, radix, place, moved, added, k, threshold, category,
                  capacity):
    """Clean-up of one block: ``digits`` the tuples after suppression (modified in place),
    ``orig`` before, ``moved`` the suppressed tuples in the order they were suppressed, ``added``
    their masks (updated in place): each suppressed value, the latest tuples first and the most
    important keys first, is restored where the tuple and every tuple losing its match stay safe."""
    U, q = digits.shape
    stride = 1 << q
    keys = np.full(capacity, EMPTY, dtype=np.int64)
    counts = np.zeros(capacity, dtype=np.int64)
    wsums = np.zeros(capacity, dtype=np.float64)
    present = np.zeros(stride, dtype=np.int64)
    stamp = np.zeros(stride, dtype=np.int64)
    for t in range(U):
        _insert(keys, counts, wsums, digits[t], strata[t], place, radix, q, stride, counts_t[t], wsum_t[t], category)
        present[_pattern(digits[t], radix, q)] += 1
    _restore(keys, counts, wsums, digits, orig, strata, counts_t, wsum_t, radix, place, moved, added, k, threshold,
             category, present, stamp, 0)


@njit(cache=True)
def _move(keys, counts, wsums, d, stratum, place, radix, q, stride, c, w, S, present, category, suppress):
    """Take a tuple out of the table, suppress (or restore) the keys of S, put it back."""
    present[_pattern(d, radix, q)] -= 1
    _insert(keys, counts, wsums, d, stratum, place, radix, q, stride, -c, -w, category)
    for x in range(q):
        if (S >> x) & 1:
            d[x] = radix[x] - 1 if suppress else d[x]
    _insert(keys, counts, wsums, d, stratum, place, radix, q, stride, c, w, category)
    present[_pattern(d, radix, q)] += 1


@njit(cache=True)
def _compatible(a, b, radix, q):
    for x in range(q):
        if a[x] != b[x] and a[x] != radix[x] - 1 and b[x] != radix[x] - 1:
            return False
    return True


@njit(cache=True)
def _restore(keys, counts, wsums, digits, orig, strata, counts_t, wsum_t, radix, place, moved, added, k, threshold,
             category, present, stamp, tick):
    """Clean-up: restore a suppressed value where the tuple and every tuple losing its match stay
    safe (a scan of the tuples per trial: for the blocks where moved x tuples is small)."""
    U, q = digits.shape
    stride = 1 << q
    full = stride - 1
    original = np.empty(q, dtype=np.int64)
    for i in range(moved.size - 1, -1, -1):
        t = moved[i]
        for x in range(q):  # keys are ordered most important first by the caller: restored first
            if not (added[t] >> x) & 1:
                continue
            # the tuple's digits once x is restored
            for y in range(q):
                original[y] = digits[t, y]
            original[x] = orig[t, x]
            P_new = _pattern(original, radix, q)
            ok = True
            if category:
                f, F = _get(keys, counts, wsums, _code(original, strata[t], place, radix, full, P_new, q, stride))
                ok = _safe(f + counts_t[t], F + wsum_t[t], k, threshold)
                if ok:
                    P_old = _pattern(digits[t], radix, q)
                    f, F = _get(keys, counts, wsums, _code(digits[t], strata[t], place, radix, full, P_old, q,
                                                           stride))
                    rest = f - counts_t[t]
                    ok = rest == 0 or _safe(rest, F - wsum_t[t], k, threshold)
            else:
                tick += 1
                f, F = _query(keys, counts, wsums, original, strata[t], place, radix, q, stride, full & ~P_new, 0,
                              present, stamp, tick, category)
                # the tuple itself is counted in the table in its suppressed state: it stays compatible
                ok = _safe(f, F, k, threshold)
                if ok:
                    for j in range(U):
                        if j == t or strata[j] != strata[t]:
                            continue
                        if _compatible(digits[t], digits[j], radix, q) and not _compatible(original, digits[j], radix, q):
                            tick += 1
                            Pj = _pattern(digits[j], radix, q)
                            fj, Fj = _query(keys, counts, wsums, digits[j], strata[j], place, radix, q, stride,
                                            full & ~Pj, 0, present, stamp, tick, category)
                            if not _safe(fj - counts_t[t], Fj - wsum_t[t], k, threshold):
                                ok = False
                                break
            if ok:
                present[_pattern(digits[t], radix, q)] -= 1
                _insert(keys, counts, wsums, digits[t], strata[t], place, radix, q, stride, -counts_t[t], -wsum_t[t],
                        category)
                digits[t, x] = original[x]
                _insert(keys, counts, wsums, digits[t], strata[t], place, radix, q, stride, counts_t[t], wsum_t[t],
                        category)
                present[_pattern(digits[t], radix, q)] += 1
                added[t] &= ~(1 << x)
    return tick

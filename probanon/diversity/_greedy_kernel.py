"""Numba kernels of Greedy-Generalize (l-delta-diversity.txt, Algorithm 2, corrected as in
NOTES.md Sec. 4) and of the class masses of a contiguous partition.

Sums are compensated (Neumaier), so a class mass ``P(qbar, s)`` is accurate to a few ulps
whatever the number of QI values in the class; the caller folds the comparison tolerance into
``cut`` (a class holds s when its mass is >= cut).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _lth_largest(values, l):
    v = np.sort(values)
    return v[v.shape[0] - l]


@njit(cache=True)
def _count_at_least(values, x):
    c = 0
    for j in range(values.shape[0]):
        if values[j] >= x:
            c += 1
    return c


@njit(cache=True)
def greedy_kernel(P, cut, l):
    """Scan the rows of ``P`` in order and close a class as soon as at least ``l`` of its
    sensitive masses are >= ``cut``; an inadmissible tail joins the last class.

    Returns (labels, number of classes R, bottleneck) where the bottleneck is the smallest,
    over the classes, l-th largest class mass. R = 0 (labels all 0) when not even the whole
    domain is admissible.
    """
    nq, ns = P.shape
    labels = np.zeros(nq, np.int64)
    acc = np.zeros(ns)
    comp = np.zeros(ns)
    held = np.zeros(ns, np.bool_)
    last = np.zeros(ns)
    count = 0
    R = 0
    start = 0
    bottleneck = np.inf
    for i in range(nq):
        for s in range(ns):
            x = P[i, s]
            if x != 0.0:
                a = acc[s]
                t = a + x
                if abs(a) >= abs(x):
                    comp[s] += (a - t) + x
                else:
                    comp[s] += (x - t) + a
                acc[s] = t
                if not held[s] and t + comp[s] >= cut:
                    held[s] = True
                    count += 1
        labels[i] = R
        if count >= l:
            if R > 0 and _count_at_least(last, bottleneck) < l:
                # the previous class is final (no tail will join it): its mass counts
                bottleneck = _lth_largest(last, l)
            for s in range(ns):
                last[s] = acc[s] + comp[s]
                acc[s] = 0.0
                comp[s] = 0.0
                held[s] = False
            count = 0
            R += 1
            start = i + 1
    if R == 0:
        return labels, 0, 0.0
    if start < nq:
        for i in range(start, nq):
            labels[i] = R - 1
        for s in range(ns):
            last[s] += acc[s] + comp[s]
    if _count_at_least(last, bottleneck) < l:
        bottleneck = _lth_largest(last, l)
    return labels, R, bottleneck


@njit(cache=True)
def class_sums_kernel(P, labels, R):
    """``P(qbar, s)`` for every class id 0..R-1 (compensated sums), shape (R, |S|)."""
    nq, ns = P.shape
    acc = np.zeros((R, ns))
    comp = np.zeros((R, ns))
    for i in range(nq):
        c = labels[i]
        for s in range(ns):
            x = P[i, s]
            a = acc[c, s]
            t = a + x
            if abs(a) >= abs(x):
                comp[c, s] += (a - t) + x
            else:
                comp[c, s] += (x - t) + a
            acc[c, s] = t
    return acc + comp

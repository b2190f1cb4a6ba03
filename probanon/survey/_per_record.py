"""numba kernel of the per-record survey design (paper 1, Sec. V-VI with per-record pi_j;
the rules are in :mod:`probanon.survey.design`): O(n d) memory, about three passes over the
remaining records per pair of cells, so a 10^6-record frame takes minutes, not days.

The passes are MDAV's (:mod:`probanon.microagg._mdav_kernel`, reused, not copied): float32,
column-major, compacted copies of the remaining records only *collect candidates*, and every
decision (the farthest record, the key order around a reference) is taken on distances
recomputed in float64 with the reference arithmetic, so the partition is the one of the
straightforward definition bit for bit. What differs from MDAV:

* a cell is not k records but the shortest prefix of the key order that Algorithm A accepts
  (plus the copies of its last tuple). Its length is unknown before the pass, so the pass
  keeps the M smallest keys, M a guess (twice the previous cell); a cell that needs more
  than M records repeats the pass with 2M;
* "the rest is itself a safe cell" is decided first by a Chernoff bound,
  P{0 < K < k} <= P{K <= k - 1} <= exp(-mu) (e mu / (k - 1))^(k - 1) for mu = sum pi_j > k - 1
  (Chernoff 1952; any sum of independent Bernoulli variables), checked with a margin far above
  rounding; only when the bound does not decide (the last few cells) does Algorithm A scan
  the rest (in row order, as the reference does).

The kernel runs in slices of at most ``max_groups`` cells and keeps its state in arrays, so
the caller can report progress between slices.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..microagg._mdav_kernel import (
    CAP,
    _compact,
    _farthest,
    _gather,
    _nearest,
    _pass_far,
    _pass_near,
    _same_tuple,
    _sqdist64,
)
from .anonymity import _scan

# slots of the integer state
M_, ALIVE, GROUPS, USE_R, REF, SWAPPED, GUESS, DONE = range(8)
BOUND_SLACK = 1e-6  # the Chernoff bound must clear log pbar by this much (rounding is ~1e-10)


def new_state(Z: np.ndarray, pis: np.ndarray, k: int) -> dict:
    """The state of a fresh run on the standardised rows Z (C-contiguous float64): the
    keyword arguments of :func:`run`."""
    n, d = Z.shape
    M = float(np.abs(Z).max()) * (1.0 + 1e-9)
    u = 2.0**-24
    # the float32 filter's error bound, doubled (see probanon.microagg._mdav_kernel)
    margin = np.float32(2.0 * 2.0 * u * M * M * (20.0 * d + 4.0 * d * d) + d * 1e-37)
    st = np.zeros(8, np.int64)
    st[[M_, ALIVE, USE_R, REF, GUESS]] = n, n, 1, -1, 4 * k
    return {
        "A0": np.ascontiguousarray(Z.T, dtype=np.float32), "B0": np.empty((d, n), np.float32),
        "i0": np.arange(n), "i1": np.empty(n, np.int64), "dead": np.zeros(n, np.uint8),
        "labels": np.full(n, -1, np.int64), "refs": np.full(n + 1, -1, np.int64), "rad2": np.full(n + 1, np.inf),
        "bnds": np.full(n + 1, -1, np.int64), "sums": _row_sums(Z), "mu": np.array([float(pis.sum())]), "st": st,
        "margin": margin,
    }


@njit(cache=True)
def _row_sums(Z):
    """Column sums, rows added in row order (the reference's running sum starts so)."""
    sums = np.zeros(Z.shape[1])
    for i in range(Z.shape[0]):
        for c in range(Z.shape[1]):
            sums[c] += Z[i, c]
    return sums


@njit(cache=True)
def _chernoff_safe(mu, k, log_pbar):
    """True when P{K <= k - 1} <= exp(-mu) (e mu / (k - 1))^(k - 1) is below pbar with slack."""
    a = k - 1.0
    mu = mu * (1.0 - 1e-9)  # the running sum of pi_j may be off in its last bits
    if a == 0.0:
        return True
    if mu <= a:
        return False
    return -mu + a + a * math.log(mu / a) <= log_pbar - BOUND_SLACK


@njit(cache=True)
def _grow(Z, idx, members, M, alive, pis, k, log_pbar, point, dist, buf):
    """Length of the shortest safe prefix of members[:M] (key order) that keeps the copies of
    its last tuple; -1 when no prefix of all the remaining records is safe; -2 when M records
    do not decide (more are needed)."""
    for j in range(M):
        buf[j] = pis[idx[members[j]]]
        dist[j] = _sqdist64(Z, idx[members[j]], point)
    start = k
    while True:
        if start > M:
            return -1 if M == alive else -2
        n, lt, _ = _scan(buf[:M], False, k, log_pbar, M, start)
        if not (n >= k and n >= start and lt <= log_pbar):
            return -1 if M == alive else -2
        end = n
        last = idx[members[n - 1]]
        while end < M and dist[end] == dist[n - 1] and _same_tuple(Z, idx[members[end]], last):
            end += 1
        if end == M and M < alive:
            return -2  # the last tuple may have more copies beyond M
        if end == n or _scan(buf[:end], False, k, -np.inf, end, 1)[1] <= log_pbar:
            return end
        start = end + 1


@njit(cache=True)
def _rest_safe(dead, m, idx, pis, rest, mu_rest, k, log_pbar, buf):
    """Is the rest (alive records with dead == 0, the cell's members being marked 2) a safe
    cell? The Chernoff bound first, Algorithm A on the rest in row order otherwise."""
    if rest < k:
        return False
    if _chernoff_safe(mu_rest, k, log_pbar):
        return True
    c = 0
    for i in range(m):
        if dead[i] == 0:
            buf[c] = pis[idx[i]]
            c += 1
    return _scan(buf[:c], False, k, -np.inf, c, 1)[1] <= log_pbar


@njit(cache=True)
def run(Z, pis, k, log_pbar, A0, B0, i0, i1, dead, labels, refs, rad2, bnds, sums, mu, st, margin,
        nchunks, max_groups):
    """Form up to max_groups cells (or finish); the state lives in the arguments. Returns the
    number of records placed by this call."""
    d = Z.shape[1]
    if st[SWAPPED] == 0:
        A, B, idx, idx2 = A0, B0, i0, i1
    else:
        A, B, idx, idx2 = B0, A0, i1, i0
    m, alive, g, ref = st[M_], st[ALIVE], st[GROUPS], st[REF]
    d32 = np.empty(m, np.float32)
    cand = np.empty((nchunks, CAP), np.int64)
    ccnt = np.zeros(nchunks, np.int64)
    fcand = np.empty((nchunks, CAP), np.int64)
    fcnt = np.zeros(nchunks, np.int64)
    fmax = np.empty(nchunks, np.float32)
    pos = np.empty(m, np.int64)
    members = np.empty(m, np.int64)
    cdist = np.empty(m)
    buf = np.empty(m)
    point = np.empty(d)
    p32 = np.empty(d, np.float32)
    placed = 0
    formed = 0
    while formed < max_groups:
        if 8 * (m - alive) > m:  # compact once dead records pass 1/8 of the array
            m = _compact(A, B, idx, idx2, dead, m, nchunks)
            A, B = B, A
            idx, idx2 = idx2, idx
            st[SWAPPED] = 1 - st[SWAPPED]
        use_r = st[USE_R] == 1
        if use_r:  # r: the farthest record from the centroid (first row on ties)
            for c in range(d):
                point[c] = sums[c] / alive
                p32[c] = point[c]
            _pass_far(A, p32, m, d32, margin, nchunks, cand, ccnt, fmax)
            nc = _gather(d32, dead, m, fmax.max() - margin, np.float32(np.inf), cand, ccnt, pos)
            for j in range(nc):
                pos[j] = idx[pos[j]]
            ref = _farthest(Z, pos, nc, point)
        for c in range(d):
            point[c] = Z[ref, c]
            p32[c] = point[c]
        M = min(alive, st[GUESS])
        while True:  # the M smallest keys around ref; more when the cell needs more
            ckth = np.empty((nchunks, M + 1), np.float32)
            _pass_near(A, p32, m, d32, M, margin, nchunks, cand, ccnt, ckth, use_r, fcand, fcnt, fmax)
            allk = np.sort(ckth.ravel())
            npos = _gather(d32, dead, m, np.float32(-np.inf), allk[M] + margin, cand, ccnt, pos)
            _nearest(Z, idx, pos, npos, point, M, False, members, cdist)
            size = _grow(Z, idx, members, M, alive, pis, k, log_pbar, point, cdist, buf)
            if size != -2:
                break
            M = min(alive, 2 * M)
        safe = False
        if size > 0:
            gsum = 0.0
            for j in range(size):
                dead[members[j]] = 2
                gsum += pis[idx[members[j]]]
            safe = _rest_safe(dead, m, idx, pis, alive - size, mu[0] - gsum, k, log_pbar, buf)
            for j in range(size):
                dead[members[j]] = 0
        if size < 0 or not safe:  # everything left is the last cell
            for i in range(m):
                if dead[i] == 0:
                    labels[idx[i]] = g
            placed += alive
            refs[g], rad2[g], bnds[g] = -1, np.inf, -1
            st[GROUPS] = g + 1
            st[DONE] = 1
            return placed
        for j in range(size):  # commit, in key order (the running sums subtract in this order)
            i = members[j]
            o = idx[i]
            dead[i] = 1
            A[0, i] = np.nan  # every later float32 distance of i is NaN
            labels[o] = g
            mu[0] -= pis[o]
            for c in range(d):
                sums[c] -= Z[o, c]
        refs[g] = ref
        rad2[g] = _sqdist64(Z, idx[members[size - 1]], point)
        bnds[g] = idx[members[size - 1]]
        g += 1
        formed += 1
        alive -= size
        placed += size
        st[GUESS] = max(2 * k, 2 * size)
        if use_r:
            # s: farthest from r among the remaining records; d32 holds the distances to r.
            # The far list covers everything within margin of the overall max; if that max
            # fell into r's cell, the list may miss some: scan instead (as MDAV does).
            second = np.float32(-1.0)
            full = fcnt.max() > CAP
            if not full:
                for t in range(nchunks):
                    for j in range(fcnt[t]):
                        if dead[fcand[t, j]] == 0:
                            second = max(second, d32[fcand[t, j]])
                full = second < fmax.max()
            if full:
                second = np.float32(-1.0)
                for i in range(m):
                    if dead[i] == 0:
                        second = max(second, d32[i])
                fcnt[0] = CAP + 1  # forces _gather to scan
            nc = _gather(d32, dead, m, second - margin, np.float32(np.inf), fcand, fcnt, pos)
            for j in range(nc):
                pos[j] = idx[pos[j]]
            ref = _farthest(Z, pos, nc, point)
        st[USE_R] = 0 if use_r else 1
        st[M_], st[ALIVE], st[GROUPS], st[REF] = m, alive, g, ref
    return placed

"""Uniform sampling of distinct l-itemsets (paper 5, Section IV-B, Algorithm 1).

Omega^l is the set of DISTINCT l-itemsets occurring in at least one record; the
adversary's knowledge B_l is uniform over it. Both samplers use the proposal

    Q(x) = sum_{u : x ⊆ D_u} [C(|D_u|, l) / Z] * [1 / C(|D_u|, l)] = supp(x) / Z,
    Z = sum_u C(|D_u|, l),

i.e. a record drawn with probability proportional to C(|D_u|, l), then a uniform
l-subset of it. Then

* ``"rejection"`` (exact): accept x with probability 1/supp(x); accepted draws are
  i.i.d. uniform on Omega^l since Q(x)/supp(x) = 1/Z is constant. The test
  U * supp(x) < 1 needs supp only up to ceil(1/U), so the intersection exits early.
* ``"mcmc"``: the independence Metropolis-Hastings chain of Algorithm 1 with target
  pi uniform: move S -> C with probability min(1, pi(C)Q(S) / (pi(S)Q(C)))
  = min(1, supp(S)/supp(C)). (Algorithm 1 proposes a uniform record, giving
  q(x) = sum_{u ⊇ x} 1/C(|D_u|, l) in place of supp(x); the stationary law is the
  same.) Burn-in ends when the Geweke z of the support trace (first 10% against
  last 50%, appendix of the paper) lies in [-1, 1].
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numba
import numpy as np
from scipy.special import comb

from .._validation import check_random_state
from ..errors import InputError, ParameterError
from .data import SetData
from .support import intersection_count

METHODS = ("rejection", "mcmc")
_CHUNK = 1 << 16  # proposals drawn per kernel call


@dataclass(frozen=True)
class ItemsetSample:
    """A sample of l-itemsets (rows of item codes, sorted) with their exact supports.

    ``n_proposals`` counts proposals drawn (burn-in included); ``acceptance_rate``
    is accepted/proposed; ``burn_in`` and ``geweke_z`` are those of the MCMC chain
    (0 and NaN for rejection sampling).
    """

    itemsets: np.ndarray
    supports: np.ndarray
    l: int
    method: str
    n_proposals: int
    acceptance_rate: float
    burn_in: int
    geweke_z: float


@numba.njit(cache=True, nogil=True)
def _propose(record_indptr, record_items, cumw, l, u, pos, out):
    """Write into ``out`` an l-subset of a record drawn with probability ∝ C(|D_u|, l).

    ``u`` holds l + 1 uniforms: u[0] picks the record, u[1..l] a partial Fisher-Yates shuffle.
    """
    r = np.searchsorted(cumw, u[0] * cumw[-1], side="right")
    if r >= len(cumw):  # u[0] * total rounded up to total: take the last record of positive weight
        r = len(cumw) - 1
        while r > 0 and cumw[r] == cumw[r - 1]:
            r -= 1
    start = record_indptr[r]
    s = record_indptr[r + 1] - start
    for j in range(s):
        pos[j] = j
    for j in range(l):
        t = j + int(u[1 + j] * (s - j))
        if t >= s:
            t = s - 1
        tmp = pos[j]
        pos[j] = pos[t]
        pos[t] = tmp
    chosen = np.sort(pos[:l])
    for j in range(l):
        out[j] = record_items[start + chosen[j]]


@numba.njit(cache=True, nogil=True)
def _rejection_kernel(record_indptr, record_items, item_indptr, item_records, cumw, l, U,
                      out_items, out_supp, n_done):
    """Run the proposals in U (rows of l + 2 uniforms); accept x iff U_acc * supp(x) < 1.

    Fills out_items/out_supp from row n_done on; returns (new number of samples, rows used).
    """
    pos = np.empty(int(np.max(record_indptr[1:] - record_indptr[:-1])), dtype=np.int64)
    cand = np.empty(l, dtype=np.int32)
    n = n_done
    cap_max = 1 << 62
    used = 0
    for b in range(U.shape[0]):
        if n >= out_items.shape[0]:
            break
        used += 1
        _propose(record_indptr, record_items, cumw, l, U[b], pos, cand)
        ua = U[b, l + 1]
        inv = 1.0 / ua if ua > 0.0 else 4.0e18
        cap = cap_max if inv >= 4.0e18 else np.int64(math.ceil(inv))
        supp = intersection_count(item_indptr, item_records, cand, cap)
        if supp < cap:  # supp < ceil(1/U)  <=>  U * supp < 1
            for j in range(l):
                out_items[n, j] = cand[j]
            out_supp[n] = supp
            n += 1
    return n, used


@numba.njit(cache=True, nogil=True)
def _mcmc_kernel(record_indptr, record_items, item_indptr, item_records, cumw, l, U,
                 state, state_supp, thin, phase, out_items, out_supp, n_done, trace):
    """Run the chain for the proposals in U (rows of l + 2 uniforms) from ``state``.

    Move S -> C with probability min(1, supp(S)/supp(C)). trace[t] is supp of the
    state after step t; every ``thin``-th step (counted by ``phase``) the state is
    stored in out_items/out_supp from row n_done on. Returns
    (state supp, accepted moves, new n_done, new phase); ``state`` is updated in place.
    """
    pos = np.empty(int(np.max(record_indptr[1:] - record_indptr[:-1])), dtype=np.int64)
    cand = np.empty(l, dtype=np.int32)
    accepted = 0
    n = n_done
    for t in range(U.shape[0]):
        _propose(record_indptr, record_items, cumw, l, U[t], pos, cand)
        supp = intersection_count(item_indptr, item_records, cand, 0)
        if U[t, l + 1] * supp < state_supp:  # U < supp(S)/supp(C)
            for j in range(l):
                state[j] = cand[j]
            state_supp = supp
            accepted += 1
        trace[t] = state_supp
        phase += 1
        if phase >= thin and n < out_items.shape[0]:
            phase = 0
            for j in range(l):
                out_items[n, j] = state[j]
            out_supp[n] = state_supp
            n += 1
    return state_supp, accepted, n, phase


def geweke_z(trace, first: float = 0.1, last: float = 0.5) -> float:
    """Geweke diagnostic (appendix of paper 5): z = (mean_a - mean_b) / sqrt(V_a + V_b).

    a is the first 10% and b the last 50% of the trace; V is the variance of each
    segment's mean, estimated by batch means (20 batches) so that autocorrelation
    of the chain is accounted for. Constant segments give z = 0 when equal, inf otherwise.
    """
    x = np.asarray(trace, dtype=np.float64)
    na, nb = int(len(x) * first), int(len(x) * last)
    if na < 2 or nb < 2:
        raise ParameterError("the trace is too short for the Geweke diagnostic")
    a, b = x[:na], x[len(x) - nb:]
    diff = a.mean() - b.mean()
    var = _mean_variance(a) + _mean_variance(b)
    if var == 0.0:
        return 0.0 if diff == 0.0 else math.inf
    return float(diff / math.sqrt(var))


def _mean_variance(x: np.ndarray, batches: int = 20) -> float:
    nb = min(batches, len(x))
    size = len(x) // nb
    means = x[: nb * size].reshape(nb, size).mean(axis=1)
    return float(means.var(ddof=1) / nb) if nb > 1 else 0.0


def check_level(l, data: SetData) -> int:
    """Validate the itemset size l: an integer with 1 <= l <= the largest record."""
    if isinstance(l, (bool, np.bool_)) or not isinstance(l, (int, np.integer)) or l < 1:
        raise ParameterError(f"l must be a positive integer, got {l!r}")
    biggest = int(data.record_sizes.max())
    if l > biggest:
        raise ParameterError(f"no record has {l} items (the largest has {biggest})")
    return int(l)


def proposal_weights(data: SetData, l: int) -> np.ndarray:
    """Cumulative proposal weights sum_{v <= u} C(|D_v|, l) (float64)."""
    return np.cumsum(comb(data.record_sizes, l, exact=False))


def sample_itemsets(data: SetData, l: int, n_samples: int, method: str = "rejection",
                    random_state=None, thin: int = 1, max_burn_in: int | None = None) -> ItemsetSample:
    """Draw ``n_samples`` l-itemsets uniformly from the distinct l-itemsets of ``data``.

    ``method="rejection"`` gives i.i.d. exact samples; ``"mcmc"`` runs Algorithm 1 with
    Geweke burn-in (at most ``max_burn_in`` steps, default 20 |D|; an
    :class:`InputError` if it does not converge) and keeps every ``thin``-th state.
    """
    l = check_level(l, data)
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ParameterError(f"n_samples must be a positive integer, got {n_samples!r}")
    if method not in METHODS:
        raise ParameterError(f"unknown sampling method {method!r} (use {' or '.join(METHODS)})")
    if isinstance(thin, bool) or not isinstance(thin, (int, np.integer)) or thin < 1:
        raise ParameterError(f"thin must be a positive integer, got {thin!r}")
    rng = check_random_state(random_state)
    cumw = proposal_weights(data, l)
    out_items = np.empty((int(n_samples), l), dtype=np.int32)
    out_supp = np.empty(int(n_samples), dtype=np.int64)
    args = (data.record_indptr, data.record_items, data.item_indptr, data.item_records, cumw, l)
    if method == "rejection":
        n, proposals = 0, 0
        while n < n_samples:
            U = rng.random((_CHUNK, l + 2))
            n, used = _rejection_kernel(*args, U, out_items, out_supp, n)
            proposals += used
        return ItemsetSample(out_items, out_supp, l, method, proposals, n_samples / proposals, 0, math.nan)
    return _mcmc(args, l, int(n_samples), rng, int(thin), max_burn_in, data.n_records,
                 out_items, out_supp)


def _mcmc(args, l, n_samples, rng, thin, max_burn_in, n_records, out_items, out_supp) -> ItemsetSample:
    state = np.empty(l, dtype=np.int32)
    none_items = np.empty((0, l), dtype=np.int32)
    none_supp = np.empty(0, dtype=np.int64)
    # arbitrary start in Omega^l: the first proposal (always accepted: state_supp = inf)
    U = rng.random((1, l + 2))
    trace1 = np.empty(1, dtype=np.int64)
    state_supp, _, _, _ = _mcmc_kernel(*args, U, state, np.int64(1 << 62), 1, 0, none_items, none_supp, 0, trace1)
    limit = 20 * n_records if max_burn_in is None else int(max_burn_in)
    trace = np.empty(0, dtype=np.int64)
    steps, accepted = 1, 1
    block = max(200, min(n_records, 10_000))
    z = math.inf
    while True:
        U = rng.random((block, l + 2))
        tr = np.empty(block, dtype=np.int64)
        state_supp, acc, _, _ = _mcmc_kernel(*args, U, state, state_supp, 1, 0, none_items, none_supp, 0, tr)
        trace = np.concatenate([trace, tr])
        steps += block
        accepted += acc
        z = geweke_z(trace)
        if abs(z) <= 1.0:
            break
        if steps >= limit:
            raise InputError(f"the sampling chain did not converge in {steps} steps (Geweke z = {z:.2f})")
        block = len(trace)  # double the run
    burn_in = steps
    n, phase = 0, 0
    while n < n_samples:
        rows = min(_CHUNK, (n_samples - n) * thin - phase)
        U = rng.random((rows, l + 2))
        tr = np.empty(rows, dtype=np.int64)
        state_supp, acc, n, phase = _mcmc_kernel(*args, U, state, state_supp, thin, phase,
                                                 out_items, out_supp, n, tr)
        steps += rows
        accepted += acc
    return ItemsetSample(out_items, out_supp, l, "mcmc", steps, accepted / steps, burn_in, float(z))


def enumerate_itemsets(data: SetData, l: int):
    """All distinct l-itemsets of ``data`` (rows of sorted item codes, lexicographic) and
    their supports, by explicit enumeration of every record's l-subsets (small data only)."""
    l = check_level(l, data)
    counts: dict = {}
    for u in range(data.n_records):
        for x in itertools.combinations(data.record(u).tolist(), l):
            counts[x] = counts.get(x, 0) + 1
    keys = sorted(counts)
    return np.asarray(keys, dtype=np.int32).reshape(len(keys), l), np.asarray([counts[x] for x in keys], dtype=np.int64)

"""Uniform sampling of distinct l-itemsets (paper 5, Section IV-B, Algorithm 1).

Omega^l is the set of DISTINCT l-itemsets occurring in at least one record; the
adversary's knowledge B_l is uniform over it. Both samplers use the proposal

    Q(x) = sum_{u : x ⊆ D_u} [C(|D_u|, l) / Z] * [1 / C(|D_u|, l)] = supp(x) / Z,
    Z = sum_u C(|D_u|, l),

i.e. a record drawn with probability proportional to C(|D_u|, l), then a uniform
l-subset of it. Then

* ``"rejection"`` (exact): accept the proposal (u, x) iff u is the first record (lowest
  index) containing x. Every pair (u, x) with x ⊆ D_u is proposed with probability 1/Z and
  exactly one of them per x is accepted, so accepted draws are i.i.d. uniform on Omega^l
  (acceptance |Omega^l| / Z). A rejection stops at the first supporter below u, which
  for a frequent x is found after a few steps of the intersection; an accepted x has its
  support counted by the same walk. The distinct items (l = 1), and with a pair index the
  distinct pairs (l = 2), are known and drawn directly.
* ``"mcmc"``: the independence Metropolis-Hastings chain of Algorithm 1 with target
  pi uniform: move S -> C with probability min(1, pi(C)Q(S) / (pi(S)Q(C)))
  = min(1, supp(S)/supp(C)). (Algorithm 1 proposes a uniform record, giving
  q(x) = sum_{u ⊇ x} 1/C(|D_u|, l) in place of supp(x); the stationary law is the
  same.) Burn-in ends when the Geweke z of the support trace (first 10% against
  last 50%, appendix of the paper) lies in [-1, 1].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from scipy.special import comb

from .._validation import check_random_state
from ..errors import InputError, ParameterError
from .data import SetData, size_limits
from .pairs import PairIndex, count_unless_below, no_pair_index

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


@dataclass(frozen=True)
class Proposal:
    """The proposal of level l in O(1) per draw: a record size s with probability
    N_s C(s, l) / Z (``cum`` over the distinct ``sizes``), then a uniform record among the N_s
    of that size (``by_size[start[j]:start[j + 1]]``), so record u has probability C(|D_u|, l) / Z."""

    sizes: np.ndarray
    cum: np.ndarray
    start: np.ndarray
    by_size: np.ndarray
    total: float

    def arrays(self):
        return self.sizes, self.cum, self.start, self.by_size


def proposal(data: SetData, l: int) -> Proposal:
    """The :class:`Proposal` of level l (records with fewer than l items have weight 0)."""
    return proposal_of_sizes(data.record_sizes, l)


def proposal_of_sizes(record_sizes: np.ndarray, l: int) -> Proposal:
    """:func:`proposal` from the record sizes alone (a sharded data set's coordinator has no records)."""
    by_size = np.argsort(record_sizes, kind="stable").astype(np.int32)
    sizes, counts = np.unique(record_sizes, return_counts=True)
    start = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    cum = np.cumsum(counts * comb(sizes, l, exact=False))
    return Proposal(sizes.astype(np.int64), cum, start, by_size, float(cum[-1]))


@numba.njit(cache=True, nogil=True)
def _propose(record_indptr, record_items, prop, l, u, out):
    """Write into ``out`` an l-subset of a record drawn with probability ∝ C(|D_u|, l); return
    the record (:func:`propose_positions`, then the items at those positions)."""
    r = propose_positions(prop, l, u, out)
    base = record_indptr[r]
    for q in range(l):
        out[q] = record_items[base + out[q]]
    return r


@numba.njit(cache=True, nogil=True)
def propose_positions(prop, l, u, out):
    """The record r drawn with probability ∝ C(|D_r|, l) and, in ``out``, the sorted positions
    in D_r of a uniform l-subset. ``u`` holds l + 2 uniforms: u[0] picks the size, u[1] the
    record, u[2..] the subset (Floyd's algorithm: uniform over the C(s, l) subsets in O(l^2)).
    """
    sizes, cum, start, by_size = prop
    j = np.searchsorted(cum, u[0] * cum[-1], side="right")
    if j >= len(cum):  # u[0] * total rounded up to total: the last size of positive weight
        j = len(cum) - 1
        while j > 0 and cum[j] == cum[j - 1]:
            j -= 1
    n_j = start[j + 1] - start[j]
    r = by_size[start[j] + min(int(u[1] * n_j), n_j - 1)]
    s = sizes[j]
    for n in range(l):  # Floyd: add a uniform index of 0..t, or t itself if taken
        t = s - l + n
        x = min(int(u[2 + n] * (t + 1)), t)
        for q in range(n):
            if out[q] == x:
                x = t
                break
        out[n] = x
    out.sort()
    return r


@numba.njit(cache=True, nogil=True)
def _rejection_kernel(record_indptr, record_items, item_indptr, item_records, pairs, prop, l, limit, cap, U,
                      out_items, out_supp, n_done):
    """Run the proposals in U (rows of l + 2 uniforms); accept (u, x) iff no record before u
    contains x. Fills out_items/out_supp from row n_done on; returns (new number of samples,
    rows used).
    """
    cand = np.empty(l, dtype=np.int32)
    n = n_done
    used = 0
    for b in range(U.shape[0]):
        if n >= out_items.shape[0]:
            break
        used += 1
        r = _propose(record_indptr, record_items, prop, l, U[b], cand)
        supp = count_unless_below(record_indptr, record_items, item_indptr, item_records, pairs, cand, r, cap, limit)
        if supp >= 0:
            for j in range(l):
                out_items[n, j] = cand[j]
            out_supp[n] = supp
            n += 1
    return n, used


@numba.njit(cache=True, nogil=True)
def _mcmc_kernel(record_indptr, record_items, item_indptr, item_records, pairs, prop, l, limit, U,
                 state, state_supp, thin, phase, out_items, out_supp, n_done, trace):
    """Run the chain for the proposals in U (rows of l + 3 uniforms) from ``state``.

    Move S -> C with probability min(1, supp(S)/supp(C)). trace[t] is supp of the
    state after step t; every ``thin``-th step (counted by ``phase``) the state is
    stored in out_items/out_supp from row n_done on. Returns
    (state supp, accepted moves, new n_done, new phase); ``state`` is updated in place.
    """
    cand = np.empty(l, dtype=np.int32)
    accepted = 0
    n = n_done
    for t in range(U.shape[0]):
        _propose(record_indptr, record_items, prop, l, U[t], cand)
        supp = count_unless_below(record_indptr, record_items, item_indptr, item_records, pairs, cand, -1, 0, limit)
        if U[t, l + 2] * supp < state_supp:  # U < supp(S)/supp(C)
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


def sample_itemsets(data: SetData, l: int, n_samples: int, method: str = "rejection",
                    random_state=None, thin: int = 1, max_burn_in: int | None = None,
                    pairs: PairIndex | None = None, prop: Proposal | None = None,
                    support_cap: int | None = None) -> ItemsetSample:
    """Draw ``n_samples`` l-itemsets uniformly from the distinct l-itemsets of ``data``.

    ``method="rejection"`` gives i.i.d. exact samples; ``"mcmc"`` runs Algorithm 1 with
    Geweke burn-in (at most ``max_burn_in`` steps, default 20 |D|; an
    :class:`InputError` if it does not converge) and keeps every ``thin``-th state.
    ``pairs`` (:func:`.pairs.build_pair_index` of ``data``) speeds up the supports;
    ``prop`` may pass :func:`proposal` ``(data, l)`` computed once for many calls. With
    ``support_cap`` c the rejection sampler reports min(supp, c) (enough for "supp >= k" or
    "unique"; the MCMC chain needs exact supports and ignores it).
    """
    l = check_level(l, data)
    if isinstance(n_samples, bool) or not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ParameterError(f"n_samples must be a positive integer, got {n_samples!r}")
    if method not in METHODS:
        raise ParameterError(f"unknown sampling method {method!r} (use {' or '.join(METHODS)})")
    if isinstance(thin, bool) or not isinstance(thin, (int, np.integer)) or thin < 1:
        raise ParameterError(f"thin must be a positive integer, got {thin!r}")
    rng = check_random_state(random_state)
    prop = proposal(data, l) if prop is None else prop
    out_items = np.empty((int(n_samples), l), dtype=np.int32)
    out_supp = np.empty(int(n_samples), dtype=np.int64)
    pair_arrays = no_pair_index() if pairs is None else pairs.arrays()
    args = (data.record_indptr, data.record_items, data.item_indptr, data.item_records, pair_arrays,
            prop.arrays(), l, size_limits(data)[l])
    if method == "rejection":
        cap = 0 if support_cap is None else int(support_cap)
        if l == 1:
            return _distinct_items(data.item_counts, int(n_samples), rng, cap)
        if l == 2 and pairs is not None:
            return _distinct_pairs(pairs.counts, int(n_samples), rng, cap)
        return rejection_draws(lambda U, n: _rejection_kernel(*args, cap, U, out_items, out_supp, n),
                               out_items, out_supp, data.n_records, prop.total, rng)
    return _mcmc(args, l, int(n_samples), rng, int(thin), max_burn_in, data.n_records,
                 out_items, out_supp)


def rejection_draws(kernel, out_items, out_supp, n_records: int, total: float, rng) -> ItemsetSample:
    """Fill out_items/out_supp by the rejection sampler: ``kernel(U, n)`` runs the proposals of
    U (rows of l + 2 uniforms, drawn here from ``rng``) as :func:`_rejection_kernel` does and
    returns (new number of samples, rows used); ``total`` is the proposal's Z."""
    n_samples, l = out_items.shape
    n, proposals = 0, 0
    while n < n_samples:  # proposals per call: about twice the expected need, at most _CHUNK
        rate = n / proposals if n else n_records / max(total, 1.0)
        U = rng.random((int(min(_CHUNK, max(256, 2 * (n_samples - n) / max(rate, 1e-9)))), l + 2))
        n, used = kernel(U, n)
        proposals += used
    return ItemsetSample(out_items, out_supp, l, "rejection", proposals, n_samples / proposals, 0, math.nan)


def _distinct_items(item_counts: np.ndarray, n_samples: int, rng, cap: int) -> ItemsetSample:
    """i.i.d. uniform draws from the items that occur (the distinct 1-itemsets)."""
    present = np.flatnonzero(item_counts > 0)
    pick = present[rng.integers(0, len(present), size=n_samples)]
    supports = item_counts[pick].astype(np.int64)
    if cap > 0:
        np.minimum(supports, cap, out=supports)
    return ItemsetSample(pick.astype(np.int32)[:, None], supports, 1, "rejection", n_samples, 1.0, 0, math.nan)


def _distinct_pairs(counts: np.ndarray, n_samples: int, rng, cap: int) -> ItemsetSample:
    """i.i.d. uniform draws from the distinct pairs, all known to the pair index (``counts``:
    its matrix of pair supports)."""
    a, b = np.nonzero(np.triu(counts, 1))
    pick = rng.integers(0, len(a), size=n_samples)
    items = np.column_stack([a[pick], b[pick]]).astype(np.int32)
    supports = counts[a[pick], b[pick]].astype(np.int64)
    if cap > 0:
        np.minimum(supports, cap, out=supports)
    return ItemsetSample(items, supports, 2, "rejection",
                         n_samples, 1.0, 0, math.nan)


def _mcmc(args, l, n_samples, rng, thin, max_burn_in, n_records, out_items, out_supp) -> ItemsetSample:
    state = np.empty(l, dtype=np.int32)
    none_items = np.empty((0, l), dtype=np.int32)
    none_supp = np.empty(0, dtype=np.int64)
    # arbitrary start in Omega^l: the first proposal (always accepted: state_supp = inf)
    U = rng.random((1, l + 3))
    trace1 = np.empty(1, dtype=np.int64)
    state_supp, _, _, _ = _mcmc_kernel(*args, U, state, np.int64(1 << 62), 1, 0, none_items, none_supp, 0, trace1)
    limit = 20 * n_records if max_burn_in is None else int(max_burn_in)
    trace = np.empty(0, dtype=np.int64)
    steps, accepted = 1, 1
    block = max(200, min(n_records, 10_000))
    z = math.inf
    while True:
        U = rng.random((block, l + 3))
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
        U = rng.random((rows, l + 3))
        tr = np.empty(rows, dtype=np.int64)
        state_supp, acc, n, phase = _mcmc_kernel(*args, U, state, state_supp, thin, phase,
                                                 out_items, out_supp, n, tr)
        steps += rows
        accepted += acc
    return ItemsetSample(out_items, out_supp, l, "mcmc", steps, accepted / steps, burn_in, float(z))

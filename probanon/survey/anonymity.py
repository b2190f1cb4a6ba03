"""Effective anonymity under uncertain participation (paper 1, Sec. VI.A, Algorithm A).

Each of the n records of a cell participates independently, I_j ~ Bernoulli(pi_j). With
K_n = sum_j I_j the number of active records, a cell FAILS when 0 < K_n < k (an empty cell
is safe). Algorithm A runs the recursion on the vector p_n = (P{K_n = 0}, ..., P{K_n = k-1}):

    p_n = (1 - pi_n) p_{n-1} + pi_n ShiftDown(p_{n-1}),   p_0 = (1, 0, ..., 0)

and from it

    cell failure        qbar = P{0 < K_n < k} = sum_{i=1}^{k-1} p_n(i)
    mean unprotected    u    = E[K_n | 0 < K_n < k] = sum_i i p_n(i) / qbar
    record failure      rbar = (1/n) sum_j P{I_j = 1, 0 < K_n < k} = sum_i i p_n(i) / n
    given participation rbar' = (1/n) sum_j P{0 < K_n < k | I_j = 1}  (= rbar / pi for constant pi)
    effective anonymity n_min = min{n >= k : qbar(n) <= pbar}

qbar is computed as a SUM of the pmf (the paper's subtraction P_n(k-1) - p_n(0) loses all
precision below ~1e-15), and the vector is kept with a separate log scale factor, so every
quantity stays accurate down to pbar = 1e-300 and beyond (``log_cell_failure``).

qbar(n) is not monotone in n for small pi (pi = 0.01, k = 2: qbar(2) = 0.0198 but
qbar(10) = 0.091): n_min is the FIRST size that works, and larger cells must be checked on
their own (:func:`cell_failure`).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass

import numpy as np
from numba import njit

from .._validation import check_k
from ..errors import ParameterError

RESCALE = 1e-250  # rescale the pmf vector when its largest entry falls below this
MAX_CONSTANT_SEARCH = 10**7  # largest cell Algorithm A tries for a constant pi (about a second)


# --------------------------------------------------------------------------- checks


def check_participation(pi, name: str = "participation") -> float:
    """A participation probability in (0, 1]."""
    if isinstance(pi, bool) or not isinstance(pi, numbers.Real) or not (0.0 < float(pi) <= 1.0):
        raise ParameterError(f"{name} must be a probability in (0, 1], got {pi!r}")
    return float(pi)


def check_participations(pis, name: str = "participation") -> np.ndarray:
    """Per-record participation probabilities, each in (0, 1]."""
    try:
        a = np.asarray(pis, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be numbers in (0, 1]") from None
    if a.size == 0:
        raise ParameterError(f"{name}: no records")
    bad = ~((a > 0.0) & (a <= 1.0))
    if bad.any():
        raise ParameterError(f"{name} must be probabilities in (0, 1], got {a[bad][0]!r} (record {np.flatnonzero(bad)[0]})")
    return a


def check_risk(pbar, name: str = "risk") -> float:
    """An acceptable failure probability pbar in (0, 1)."""
    if isinstance(pbar, bool) or not isinstance(pbar, numbers.Real) or not (0.0 < float(pbar) < 1.0):
        raise ParameterError(f"{name} (acceptable cell failure) must be in (0, 1), got {pbar!r}")
    return float(pbar)


# --------------------------------------------------------------------------- kernel


@njit(cache=True)
def _step(v, pi):
    """p_n = (1 - pi) p_{n-1} + pi ShiftDown(p_{n-1}) on the scaled vector; returns the
    log of the factor divided out (0 when no rescaling was needed)."""
    k = v.size
    for i in range(k - 1, 0, -1):
        v[i] = (1.0 - pi) * v[i] + pi * v[i - 1]
    v[0] = (1.0 - pi) * v[0]
    top = v.max()
    if 0.0 < top < RESCALE:
        for i in range(k):
            v[i] /= top
        return math.log(top)
    return 0.0


@njit(cache=True)
def _log_tail(v, scale):
    """log sum_{i>=1} p(i) and log sum_i i p(i) (-inf when zero)."""
    tail = 0.0
    moment = 0.0
    for i in range(1, v.size):
        tail += v[i]
        moment += i * v[i]
    lt = math.log(tail) + scale if tail > 0.0 else -np.inf
    lm = math.log(moment) + scale if moment > 0.0 else -np.inf
    return lt, lm


@njit(cache=True)
def _scan(pis, constant, k, log_pbar, nmax, start):
    """Algorithm A: grow the cell one record at a time (pis[0], pis[1], ..., or the constant
    pis[0]) until n >= max(k, start) and log qbar <= log_pbar, or n = nmax (<= pis.size
    unless constant). Returns (n, log qbar, log sum_i i p(i))."""
    v = np.zeros(k)
    v[0] = 1.0
    scale = 0.0
    n = 0
    lt = -np.inf
    lm = -np.inf
    while n < nmax:
        pi = pis[0] if constant else pis[n]
        scale += _step(v, pi)
        n += 1
        if n >= k and n >= start:
            lt, lm = _log_tail(v, scale)
            if lt <= log_pbar:
                break
    if n < k or n < start:
        lt, lm = _log_tail(v, scale)
    return n, lt, lm


@njit(cache=True)
def _log_failure_given_active(pis, k):
    """log of (1/n) sum_j P{0 < K < k | I_j = 1} = (1/n) sum_j P{K_{-j} <= k - 2}, by
    recomputing the distribution without record j (O(n^2 k))."""
    n = pis.size
    acc = 0.0  # sum_j of exp(log term - ref) with a common reference
    logs = np.empty(n)
    for j in range(n):
        v = np.zeros(k)
        v[0] = 1.0
        scale = 0.0
        for i in range(n):
            if i != j:
                scale += _step(v, pis[i])
        head = 0.0
        for i in range(k - 1):
            head += v[i]
        logs[j] = math.log(head) + scale if head > 0.0 else -np.inf
    ref = logs.max()
    if ref == -np.inf:
        return -np.inf
    for j in range(n):
        acc += math.exp(logs[j] - ref)
    return ref + math.log(acc / n)


# --------------------------------------------------------------------------- API


@dataclass(frozen=True)
class CellFailure:
    """Failure indicators of one cell (Algorithm A, steps 6 and 8)."""

    n: int
    cell_failure: float  # qbar = P{0 < K < k}
    log_cell_failure: float
    mean_unprotected: float  # u = E[K | 0 < K < k]  (NaN when qbar = 0)
    record_failure: float  # rbar
    record_failure_participant: float  # rbar'

    def to_dict(self) -> dict:
        d = asdict(self)
        return {key: (None if isinstance(v, float) and not math.isfinite(v) else v) for key, v in d.items()}


@dataclass(frozen=True)
class EffectiveAnonymity(CellFailure):
    """Algorithm A's output: n_min and the failure indicators of a cell of that size."""

    k: int = 0
    risk: float = 0.0
    feasible: bool = True  # False when max_records was reached before qbar <= pbar

    @property
    def n_min(self) -> int:
        return self.n


def _participation_vector(participation) -> tuple[np.ndarray, bool]:
    """(pi array, constant?) from a scalar pi or per-record pi_j; anything else is refused."""
    if isinstance(participation, np.ndarray) and participation.ndim == 0:
        participation = participation.item()
    if isinstance(participation, (bool, np.bool_, str, bytes)) or participation is None:
        raise ParameterError(f"participation must be a probability in (0, 1] or one per record, got {participation!r}")
    if isinstance(participation, numbers.Real):
        return np.array([check_participation(participation)]), True
    return check_participations(participation), False


def _indicators(n, k, lt, lm, pis, constant) -> dict:
    q = math.exp(lt)
    u = math.exp(lm - lt) if lt > -math.inf else math.nan
    lr = lm - math.log(n) if n > 0 else -math.inf
    if constant:
        lrp = lr - math.log(pis[0])
    else:
        cell = pis[:n]
        lrp = _log_failure_given_active(cell, k) if k > 1 else -math.inf
    return dict(n=int(n), cell_failure=q, log_cell_failure=lt, mean_unprotected=u,
                record_failure=math.exp(lr), record_failure_participant=math.exp(lrp))


def cell_failure(n: int, k: int, participation) -> CellFailure:
    """Failure indicators of a cell of ``n`` records (constant pi), or of the records whose
    participation probabilities are given (``n`` must equal their count).

    >>> round(cell_failure(48, 20, 0.5).cell_failure, 5)   # Table II
    0.09671
    """
    k = check_k(k)
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ParameterError(f"cell size must be a positive integer, got {n!r}")
    pis, constant = _participation_vector(participation)
    if not constant and pis.size != n:
        raise ParameterError(f"{pis.size} participation probabilities for a cell of {n} records")
    _, lt, lm = _scan(pis, constant, k, -np.inf, int(n), 1)  # log_pbar = -inf: no early stop
    return CellFailure(**_indicators(int(n), k, lt, lm, pis, constant))


def effective_anonymity(k: int, participation, risk: float, max_records: int | None = None) -> EffectiveAnonymity:
    """Algorithm A: the effective anonymity n_min = min{n >= k : qbar(n) <= pbar} and the
    failure indicators of a cell of that size.

    ``participation`` is a constant pi in (0, 1] or the per-record pi_j in the predefined
    order in which records join the cell. ``max_records`` caps the search (never beyond the
    number of pi_j; 10^7 for constant pi); if it is reached first, ``feasible`` is False
    (:func:`required_anonymity` raises instead).
    ``record_failure_participant`` is the paper's plain average (1/n) sum_j
    P{0 < K < k | I_j = 1}.
    Check values (Table III): k = 10, pi = .75, pbar = 1e-4 -> n_min = 25, qbar = 4.31e-5.
    """
    k = check_k(k)
    pbar = check_risk(risk)
    pis, constant = _participation_vector(participation)
    nmax = MAX_CONSTANT_SEARCH if constant else pis.size
    if max_records is not None:
        if isinstance(max_records, bool) or not isinstance(max_records, numbers.Integral) or max_records < 1:
            raise ParameterError(f"max_records must be a positive integer, got {max_records!r}")
        nmax = min(nmax, int(max_records))
    n, lt, lm = _scan(pis, constant, k, math.log(pbar), int(nmax), 1)
    ind = _indicators(n, k, lt, lm, pis, constant)
    return EffectiveAnonymity(**ind, k=k, risk=pbar, feasible=bool(n >= k and lt <= math.log(pbar)))


def required_anonymity(k: int, participation, risk: float, max_records: int | None = None) -> EffectiveAnonymity:
    """:func:`effective_anonymity`, raising :class:`ParameterError` when no cell within
    ``max_records`` reaches the risk."""
    eff = effective_anonymity(k, participation, risk, max_records)
    if not eff.feasible:
        raise ParameterError(f"no cell of up to {eff.n} records keeps the failure below {eff.risk} "
                             f"(k = {eff.k}): raise the participation or the risk")
    return eff


def n_min(k: int, participation: float, risk: float) -> int:
    """Effective anonymity n_min (constant participation)."""
    return required_anonymity(k, participation, risk).n


def log_cell_failure(k: int, participation) -> float:
    """log qbar of the cell formed by the records with these pi_j: O(n k), without the
    O(n^2 k) participant-conditional failure of :func:`cell_failure`."""
    pis = check_participations(participation)
    return float(_scan(pis, False, check_k(k), -np.inf, pis.size, 1)[1])


@njit(cache=True)
def prefix_log_failures(pis, k):
    """log qbar of every prefix of the records in the order given: out[s - 1] for the cell of
    pis[0..s-1], s = 1..n (Algorithm A grown one record at a time, one O(n k) scan; 0, i.e.
    qbar = 1, for s < k: no prefix shorter than k is a cell)."""
    v = np.zeros(k)
    v[0] = 1.0
    scale = 0.0
    out = np.empty(pis.size)
    for s in range(pis.size):
        scale += _step(v, pis[s])
        out[s] = _log_tail(v, scale)[0] if s + 1 >= k else 0.0
    return out


@njit(cache=True)
def _cells_log_failure(pis, ends, k):
    out = np.empty(ends.size)
    start = 0
    for c in range(ends.size):
        out[c] = _scan(pis[start:ends[c]], False, k, -np.inf, ends[c] - start, 1)[1]
        start = ends[c]
    return out


def cells_log_failure(k: int, participation, sizes) -> np.ndarray:
    """log qbar of many cells at once: cell c holds the next sizes[c] values of
    ``participation`` (concatenated cell after cell). One O(N k) kernel call, the same
    arithmetic as :func:`log_cell_failure` on each cell."""
    pis = check_participations(participation)
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.ndim != 1 or (sizes < 1).any() or sizes.sum() != pis.size:
        raise ParameterError(f"cell sizes must be positive and add up to the {pis.size} participation values")
    return _cells_log_failure(pis, np.cumsum(sizes), check_k(k))


def table_sizes(records: int, k: int, participation: float, risk: float) -> list[int]:
    """Cell sizes of a table of N records with constant pi (Sec. VI.A): |C| = floor(N / n_min)
    cells, |C| - 1 of n_min records and the last of n' = N - (|C| - 1) n_min (one cell of N
    records when N < n_min)."""
    if isinstance(records, (bool, np.bool_)) or not isinstance(records, numbers.Integral) or records < 1:
        raise ParameterError(f"records must be a positive integer, got {records!r}")
    if not _participation_vector(participation)[1]:
        raise ParameterError("a table takes a constant participation pi (per-record cells: simulate_cells)")
    n = required_anonymity(k, participation, risk).n
    cells = int(records) // n
    if cells == 0:
        return [int(records)]
    return [n] * (cells - 1) + [int(records) - (cells - 1) * n]


def table_failure(records: int, k: int, participation: float, risk: float) -> float:
    """Probability that the table of :func:`table_sizes` has at least one failing cell:
    1 - q^(|C|-1) q' (Sec. VI.A, exact product form, computed with log1p/expm1)."""
    sizes = table_sizes(records, k, participation, risk)
    log_success = sum(sizes.count(n) * math.log1p(-cell_failure(n, k, participation).cell_failure)
                      for n in set(sizes))
    return -math.expm1(log_success)

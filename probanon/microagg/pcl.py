"""k-anonymous Lloyd: probability-constrained quantisation (paper 3, Sec. 6, "PCL").

Optimality conditions (Theorems 1 and 4): centroids are the means of their cells, and cells
are a power diagram q(x) = argmin_q ||x - xhat_q||^2 + c_q whose offsets c_q make every cell
hold at least k points. This implementation alternates the two conditions exactly:

1. Initialise the centroids from MDAV (|Q| = number of MDAV groups).
2. Assignment: for fixed centroids, the optimal assignment with |cell| >= k is a
   transportation problem, solved exactly by HiGHS (:mod:`.transport`); its duals are the
   offsets c_q. Centroid update: cell means (speed factor s, paper: s = 1/2; s = 1 here by
   default, since the exact assignment needs no slowdown). Repeat while the SSE decreases.
3. Exact-gain moves and swaps (:mod:`.local_search`) escape the local minima of step 2;
   alternate with step 2 while the SSE decreases.
4. Publish: one last transportation step gives centroids and offsets; the labels are the
   power diagram's own assignment of the data (ties resolved by lowering, by a rounding-level
   step, the offsets of cells that would otherwise fall below k), so the published function
   reproduces ``labels_`` exactly. Where the optimum splits identical records between cells
   (ties no offset can break), the optimal labels are kept and ``function_mismatches_``
   counts the fitted records the function assigns elsewhere. Centroids are the cell means.

Cells of at least 256 records (the paper needs ~100-500 per cell for smooth counts) use the
paper's own steps instead: offsets by Levenberg-Marquardt (Appendix A, :mod:`.offsets`) for
the MDAV sizes, damped centroid updates (s = 1/2) while the SSE falls by 0.02% per
iteration, then an exact LP on the points nearest the boundaries and the tie settlement of
step 4. If that fails, the exact path above is used.
"""

from __future__ import annotations

import numpy as np

from .._validation import check_random_state
from ..errors import ParameterError
from .base import Microaggregator, group_means
from .function import _assign_power
from .local_search import local_search
from .mdav import mdav_partition
from .offsets import _assign, boundary_offsets, lm_offsets
from .transport import squared_distances, transport_assign


def _sse(Z, labels, Q) -> float:
    return float(((Z - group_means(Z, labels, Q)[labels]) ** 2).sum())


def power_labels(Z, centers, offsets, k, max_rounds: int = 20):
    """Labels of the power diagram (centers, offsets) with every cell >= k (an int, or one
    minimum per cell), lowering the
    offsets of deficient cells by a rounding-level step until their ties go their way.
    Returns (labels, offsets), or None when ties cannot be resolved this way (typically
    identical records that the optimum splits between cells: no function of the
    quasi-identifiers can separate them)."""
    offsets = np.array(offsets, dtype=np.float64)
    step = 1e-10 * (1.0 + float(np.abs(offsets).max()) + float((centers**2).sum(1).max()))
    Q = centers.shape[0]
    for _ in range(max_rounds):
        labels = _assign_power(Z, centers, offsets)
        deficient = np.bincount(labels, minlength=Q) < k
        if not deficient.any():
            return labels, offsets
        offsets[deficient] -= step
        step *= 2.0
    return None


def _alternate(Z, labels, k, Q, max_iter, neighbours):
    """Exact-gain moves/swaps <-> exact assignment, while the SSE decreases."""
    best, best_sse = labels, _sse(Z, labels, Q)
    for _ in range(max_iter):
        moved = local_search(Z, best, k, neighbours=neighbours)
        r = transport_assign(Z, group_means(Z, moved, Q), k)
        sse, labels = min([(_sse(Z, moved, Q), moved), (_sse(Z, r.labels, Q), r.labels)], key=lambda t: t[0])
        if sse < best_sse * (1 - 1e-12):
            best, best_sse = labels, sse
        else:
            break
    return best, best_sse


def _lloyd(Z, labels, k, Q, max_iter, speed):
    """Exact assignment <-> (damped) centroid update, while the SSE decreases."""
    best, best_sse = labels, _sse(Z, labels, Q)
    centers = group_means(Z, labels, Q)
    for _ in range(max_iter):
        r = transport_assign(Z, centers, k)
        sse = _sse(Z, r.labels, Q)
        centers = speed * group_means(Z, r.labels, Q) + (1.0 - speed) * centers
        if sse < best_sse * (1 - 1e-12):
            best, best_sse = r.labels, sse
        elif speed == 1.0:
            break
    return best


SMOOTH_MIN_K = 256  # cells at least this large: Levenberg-Marquardt offsets (Appendix A)


def _pcl_smooth(Z, start, speed, max_iter):
    """Large cells: offsets by LM for the MDAV sizes, damped centroid updates, then the
    boundary LP and the tie settlement. Returns (labels, centers, offsets) or None."""
    Q = int(start.max()) + 1
    targets = np.bincount(start, minlength=Q)
    centers = group_means(Z, start, Q)
    offsets = np.zeros(Q)
    previous = np.inf
    for _ in range(max_iter):
        D = squared_distances(Z, centers)
        offsets = lm_offsets(D, targets, offsets)
        own = _assign(D, offsets)[0]
        means = group_means(Z, own, Q)
        sse = float(((Z - means[own]) ** 2).sum())
        centers = speed * means + (1.0 - speed) * centers
        if sse > previous * (1.0 - 2e-4):
            break
        previous = sse
    D = squared_distances(Z, centers)
    offsets = boundary_offsets(D, lm_offsets(D, targets, offsets), targets)
    if offsets is None:
        return None
    power = power_labels(Z, centers, offsets, targets)
    return None if power is None else (power[0], centers, power[1])


def pcl_partition(Z, k, max_iter: int = 40, speed: float = 1.0, neighbours: int = 6):
    """PCL on standardised data Z: returns (labels, centers, offsets) in z units.

    Steps 2 and 3 of the module docstring are run in both orders from the MDAV start
    (Lloyd first, then moves; moves first), and the lower SSE is kept."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    start = mdav_partition(Z, k).labels
    Q = int(start.max()) + 1
    if Q == 1:
        return start, Z.mean(axis=0, keepdims=True), np.zeros(1)
    if k >= SMOOTH_MIN_K:
        smooth = _pcl_smooth(Z, start, 0.5 if speed == 1.0 else speed, max_iter)
        if smooth is not None:
            return smooth
    runs = [_alternate(Z, _lloyd(Z, start, k, Q, max_iter, speed), k, Q, max_iter, neighbours),
            _alternate(Z, start, k, Q, max_iter, neighbours)]
    best = min(runs, key=lambda t: t[1])[0]
    centers = group_means(Z, best, Q)  # step 4: publishable power diagram
    r = transport_assign(Z, centers, k)
    power = power_labels(Z, centers, r.offsets, k)
    if power is None:  # keep the optimal labels; the function differs on tied records only
        return r.labels, centers, r.offsets
    return power[0], centers, power[1]


class PCL(Microaggregator):
    """PCL estimator (k-anonymous Lloyd). Fitted function: kind "power-diagram"
    (centers + cost offsets), which reproduces ``labels_`` on the fitted data.

    ``init`` must be "mdav" (the paper's choice); ``speed`` is the centroid speed factor s;
    ``random_state`` is accepted for the estimator contract (the method is deterministic).
    """

    _param_names = ("k", "init", "speed", "random_state")

    def __init__(self, k: int = 3, *, init: str = "mdav", speed: float = 1.0, random_state=None):
        self.k = k
        self.init = init
        self.speed = speed
        self.random_state = random_state

    def _partition(self, Z, X):
        if self.init != "mdav":
            raise ParameterError(f"unknown init {self.init!r} (use 'mdav')")
        if not 0.0 < float(self.speed) <= 1.0:
            raise ParameterError(f"speed must be in (0, 1], got {self.speed!r}")
        check_random_state(self.random_state)
        labels, centers, offsets = pcl_partition(Z, self.k_, speed=float(self.speed))
        self.function_mismatches_ = int((_assign_power(Z, centers, offsets) != labels).sum())
        return labels, "power-diagram", {"centers": np.ascontiguousarray(centers), "offsets": np.ascontiguousarray(offsets)}

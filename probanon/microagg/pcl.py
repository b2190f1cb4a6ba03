"""k-anonymous Lloyd: probability-constrained quantisation (paper 3, Sec. 6, "PCL").

Optimality conditions (Theorems 1 and 4): centroids are the means of their cells, and cells
are a power diagram q(x) = argmin_q ||x - xhat_q||^2 + c_q whose offsets c_q make every cell
hold at least k points. This implementation alternates the two conditions exactly:

1. Initialise the centroids from MDAV (|Q| = number of MDAV groups = floor(n/k)), and, for
   cells of at least 256 records, also from a principal-direction bisection into the same
   sizes (:mod:`.bisection`) and from KMEANS_PLUSPLUS_STARTS k-means++ seedings (seeded by
   ``random_state``): steps 2-4 run from each start and the lowest SSE is kept.
   Across 2-D Gaussian samples (n = 2^16, |Q| = 16) MDAV and bisection each win about half
   the time; the better of the two is 0.1-0.5 points further below MDAV on average.
2. Assignment: for fixed centroids, the optimal assignment with |cell| >= k is a
   transportation problem, a min-cost flow (:mod:`.transport`, OR-Tools); its duals are the
   offsets c_q. Along the run each record's candidate cells are the pool of its own cell
   (the cells that were candidates of the cell's records in the previous assignment,
   :func:`.candidates.pooled_cells`; the first pools: the cell and the 15 cells whose means
   are nearest, approximately),
   so an iteration costs O(n L d) and no n x |Q| matrix exists; the own cell is always a
   candidate, so the SSE never rises. Centroid update: cell means (speed factor s, paper:
   s = 1/2; s = 1 here by default, since the exact assignment needs no slowdown). With damped
   steps (s < 1) this Lloyd phase runs first, ``max_iter`` iterations, and keeps the partition
   of lowest SSE. With s = 1 step 3 starts at once: its alternation's exact
   assignment to the cell means is this step (10^5 x 10, k = 5: a Lloyd phase of two
   iterations first took 3.5 s, and the final SSE was 0.04% lower with it).
3. Exact-gain moves and swaps between neighbouring cells (:mod:`.local_search`) escape the
   local minima of step 2; alternate with step 2 while the SSE decreases (by ``RTOL``). Then iterated
   local search (random kicks kept only when they lower the SSE, seeded by
   ``random_state``) and step 3 again. Free sizes (issue 16.4, default): right after the
   first round, a second round of kicks (``FREE_KICKS_PER_CELL``) that may also dissolve a
   cell or split one of >= 2k records, so the number of cells and their sizes (>= k) are
   optimised too, then step 3 (``free_sizes=False``: MDAV's floor(n/k) cells). The free-size
   kicks keep only what lowers the SSE; up to FROM_FIXED_MAX cells steps 3 and 4 run between
   the two rounds too, so the free-size round starts from the fixed-size result of the same
   seed and its SSE is never higher, to rounding (tarragona, k = 10, seed 0: IL 30.253 with
   fixed sizes, 30.258 with free sizes before, as the last exact assignment gained more on
   the fixed-size partition; 30.250 now). Beyond that, step 3 is not run between the rounds
   (it saved 4 s of 54 at 10^5 records, 10-D; the SSE moved by under 0.15% either way on
   10^4 - 10^5-record Gaussians). The records are first put in cell order, the cells in
   spatial order (:func:`_locality`), for cache reuse.
4. Publish: one last assignment, exact over all cells (pricing of the excluded pairs cell by
   cell with a triangle-inequality bound, :func:`.candidates.improving_cells`), gives the
   labels (up to FROM_FIXED_MAX cells: moves and swaps and the exact assignment to the new
   means again, while the SSE falls; with free sizes the fixed-size round ends this way too,
   so that the free-size round starts from the fixed-size result); its degenerate duals are
   turned into strict offsets (:mod:`.potentials`: shortest-path potentials with a margin),
   so the power diagram (centres, offsets)
   reproduces ``labels_`` exactly. Where the optimum splits identical records between cells
   (ties no offset can break), the diagram is settled on the records (:mod:`.settle`): the
   release is the diagram's own cells, each of at least k records, and
   ``records_settled_`` counts the records that moved. Centroids are the cell means.

Cells of at least 256 records (the paper needs ~100-500 per cell for smooth counts) use the
paper's own steps instead, per iteration: offsets by Levenberg-Marquardt (Appendix A,
:mod:`.offsets`) for the MDAV sizes, started from the previous iteration's exact offsets;
the remaining stragglers reassigned optimally by successive shortest paths
(:func:`.offsets.fill_deficits`, exact sizes); a centroid step with speed s (default 1.8,
see ``OVER_RELAXED``; the paper's damping is s = 1/2). It stops when the SSE has not fallen by
0.02% for 10 iterations, then publishes the best iterate with the strict offsets of step 4.
If that fails, the exact path above is used.
"""

from __future__ import annotations

import numpy as np
from scipy.spatial import cKDTree

from .._validation import (BOOLEAN, NONE, RANDOM_STATE, Constraint, check_k, check_matrix, check_random_state,
                           integer, real)
from ..errors import ParameterError
from . import memory
from .base import CONSTRAINTS, Microaggregator, _quiet, group_means
from .bisection import principal_bisection
from .candidates import pooled_cells
from .local_search import CellLists, _neighbour_lists, iterated_local_search, local_search, searches
from .mdav import _mdav_partition
from .offsets import _assign, fill_deficits, lm_offsets
from .potentials import strict_offsets
from .transport import squared_distances, transport_assign
from .univariate import _optimal_univariate


def _sse(Z, labels, Q=None) -> float:
    """SSE of the partition (Q: number of cells, default labels.max() + 1)."""
    Q = int(labels.max()) + 1 if Q is None else Q
    return float(((Z - group_means(Z, labels, Q)[labels]) ** 2).sum())


#: candidate cells per record in the assignments along the run, and cells in the first pools
CANDIDATES, POOL = 8, 16


def _first_candidates(Z, labels, Q):
    """Each record's first candidates: its own cell and the POOL - 1 cells whose means are
    nearest to that cell's mean, from the local search's approximate query
    (:func:`.local_search._neighbour_lists`; no n |Q| pairs). 20,000 cells in 10-D: 0.5 s
    against 1.8 s for the exact query, 97% of the 15 nearest cells the same."""
    counts = np.bincount(labels, minlength=Q).astype(np.float64)
    nearest = _neighbour_lists(group_means(Z, labels, Q), counts, POOL - 1)
    return np.column_stack([np.arange(Q), nearest])[labels]


def _reassign(Z, labels, k, Q, near, centers=None):
    """Size-constrained assignment to ``centers`` (default: the cell means, and ``labels`` its
    start, see :func:`.transport.transport_assign`) over the pooled candidates of the previous
    one (:func:`.candidates.pooled_cells`): optimal over them and, the own cell being one, never
    costlier than ``labels``. Returns (labels, candidates)."""
    start = labels if centers is None else None  # Lloyd's moved centres: many records move, a flow
    centers = group_means(Z, labels, Q) if centers is None else centers
    pooled = pooled_cells(Z, centers, np.zeros(Q), labels, near, CANDIDATES)
    r = transport_assign(Z, centers, k, near=pooled, exact=False, labels=start)
    return r.labels, r.candidates


#: the alternations stop when an iteration lowered the SSE by less than this fraction (10^5 x 10,
#: k = 5: Lloyd's third and fourth iterations gained 1.8e-4 and 2e-5 of the SSE, a second local
#: search 1e-4, for 1-2 s each; the kicks that follow gain 1-2%)
RTOL = 1e-3


def _step(best_sse, sse):
    """(better, go on): whether ``sse`` improves on ``best_sse`` (beyond rounding) and whether it
    does so by at least the fraction RTOL, worth another iteration."""
    return sse < best_sse * (1 - 1e-12), sse < best_sse * (1 - RTOL)


def _alternate(Z, labels, k, Q, max_iter, neighbours, near, lists, progress=_quiet):
    """Exact-gain moves/swaps <-> size-constrained assignment, while the SSE decreases by at
    least the fraction RTOL per iteration (``lists``: the cells' candidate lists, carried)."""
    best, best_sse = labels, _sse(Z, labels, Q)
    for step in range(max_iter):
        progress("local search", step, max_iter)
        moved = local_search(Z, best, k, neighbours=neighbours, lists=lists)
        if step:  # the exact assignment after the first search: no change on 10^5 10-D records
            sse, labels = _sse(Z, moved, Q), moved
        else:
            assigned, near = _reassign(Z, moved, k, Q, near)
            sse, labels = min([(_sse(Z, moved, Q), moved), (_sse(Z, assigned, Q), assigned)], key=lambda t: t[0])
        better, go_on = _step(best_sse, sse)
        if better:
            best, best_sse = labels, sse
        if not go_on:
            break
    progress("local search", max_iter, max_iter)
    return best, near


def _lloyd(Z, labels, k, Q, max_iter, speed, near, progress=_quiet):
    """Size-constrained assignment <-> damped centroid update (s < 1), ``max_iter`` iterations;
    the partition of lowest SSE is kept."""
    best, best_sse = labels, _sse(Z, labels, Q)
    centers = group_means(Z, labels, Q)
    for step in range(max_iter):
        progress("Lloyd", step, max_iter)
        assigned, near = _reassign(Z, best, k, Q, near, centers)
        sse = _sse(Z, assigned, Q)
        centers = speed * group_means(Z, assigned, Q) + (1.0 - speed) * centers
        if _step(best_sse, sse)[0]:
            best, best_sse = assigned, sse
    progress("Lloyd", max_iter, max_iter)
    return best, near


SMOOTH_MIN_K = memory.SMOOTH_MIN_K  # cells at least this large: Levenberg-Marquardt offsets (Appendix A)
#: default centroid speed of the large-cell path: xhat <- xhat + s (mean - xhat) with s = 1.8
#: over-relaxes the step; on Adult (k = 500..4000) and 2-D Gaussians it reached fixed points
#: as good or better (Adult k = 2000: 33.0% below MDAV, against 31.5% at s = 1) in fewer
#: iterations than the paper's damping s = 1/2 (available as ``speed=0.5``).
OVER_RELAXED = 1.8


def _pcl_smooth(Z, start, speed, max_iter, lm_iter=5, patience=10, progress=_quiet):
    """Large cells: offsets by LM for the MDAV sizes (to within 0.5% of a cell, at most
    ``lm_iter`` steps from the previous exact offsets), exact sizes by successive shortest
    paths, centroid updates with speed s until the SSE has not fallen by 0.02% for
    ``patience`` iterations; then strict offsets. Returns (labels, centers, offsets, strict)
    or None (``strict``: whether the offsets are strict, see :func:`_pcl`)."""
    Q = int(start.max()) + 1
    targets = np.bincount(start, minlength=Q)
    tolerance = max(1.0, 0.005 * targets.min())
    centers = group_means(Z, start, Q)
    offsets = np.zeros(Q)
    best, best_sse, best_centers, stale = start, _sse(Z, start, Q), centers, 0
    for step in range(max_iter):
        progress("offsets", step, max_iter)
        D = squared_distances(Z, centers)
        offsets = lm_offsets(D, targets, offsets, tolerance=tolerance, max_iter=lm_iter)
        exact = fill_deficits(D, _assign(D, offsets)[0], targets, offsets)
        if exact is None:  # rounding broke the shortest paths: keep the best so far
            break
        labels, offsets = exact
        means = group_means(Z, labels, Q)
        sse = float(((Z - means[labels]) ** 2).sum())
        stale = 0 if sse < best_sse * (1.0 - 2e-4) else stale + 1
        if sse < best_sse:
            best, best_sse, best_centers, best_offsets = labels, sse, centers, offsets
        if stale >= patience:
            break
        centers = centers + speed * (means - centers)
    progress("offsets", max_iter, max_iter)
    if best is start:
        return None
    progress("publish", 0, 1)
    strict = strict_offsets(Z, best_centers, best, best_offsets)
    progress("publish", 1, 1)
    if strict is None:  # ties that no margin separates: publish the potentials of fill_deficits
        return best, best_centers, best_offsets, False
    return strict[0], best_centers, strict[1], True


#: default kicks per cell of the fixed-size and the free-size round, at most KICKS_MAX a round
#: (10-D Gaussians, k = 5, four samples of 10,000-20,000 records, one thread: SSE/n 1.5977 /
#: 1.5896 / 1.5825 on average with at most 10,000 / 15,000 / 20,000). A free-size kick
#: (dissolves, splits) costs several fixed-size ones: on the CASC files (census, tarragona; k =
#: 3, 5, 10; seeds 0-5) 75 + 12.5 kicks per cell gave the same mean IL as 50 + 50 (within
#: 0.01-0.04, either way) in 65-85% of the time. Since a kick's descent tries the kicked records
#: last (:func:`.local_search._kicked_last`) a kick gains more and costs about twice as much:
#: 40 kicks per cell then gave a lower mean IL than 75 did before on 5 of those 6 cases, in
#: about the same time; from |Q| = 1,600 cells (8,000 records at k = 5) both rounds run
#: KICKS_MAX (the free-size round then gains as much as the other). From HALVES_MIN cells the
#: kicks run on two halves of the cells at once (:mod:`.local_search`), each with at most
#: KICKS_MAX
KICKS_PER_CELL, FREE_KICKS_PER_CELL, KICKS_MAX = 40, 12.5, 20_000

#: up to this many cells, the free-size round starts from the fixed-size round's result and
#: step 4 repeats while the SSE falls (module docstring); beyond, step 3 runs once, after the
#: free-size round (10^5 records: 4 s of 30 saved), and step 4 once. The blocks of automatic
#: blocked PCL (>= 19,531 records) stay beyond it for k <= 9
FROM_FIXED_MAX = 2_000

#: up to FROM_FIXED_MAX cells each round of kicks runs RESTARTS independent searches from the
#: same start (own seeds; two at once on two threads) and keeps the best
#: (:func:`.local_search.iterated_local_search`). CASC census / tarragona, k = 3, 5, 10, seeds
#: 0-5: mean IL lower on all six cases (tarragona k = 5: 20.380 -> 20.333), same wall time
RESTARTS = 2

#: starts: MDAV (the paper's), principal-direction bisection, and k-means++ centres
#: (:func:`kmeans_plusplus`, cells of >= SMOOTH_MIN_K records only)
STARTS = ("mdav", "pca", "k-means++")
#: k-means++ starts that "auto" adds to MDAV and bisection for cells of >= SMOOTH_MIN_K records:
#: their Lloyd iterations end in the basin of their start, and 16 cells in 2-D have many
#: basins. 2-D Gaussian, n = 2^16, k = 4096, rho = 0 (the sample of benchmarks/scale.py
#: peer): IL 11.979 from MDAV, 12.036 from bisection, 11.879-12.030 from eight k-means++
#: starts (five below the 11.899 of k-means-constrained, which keeps the best of ten). Over
#: the 14 Gaussian samples of benchmarks/pcl.py and Adult (k = 4000, 2000, jittered or not),
#: SSE below the better of MDAV and bisection with 2 / 4 / 6 such starts: 0.26% / 0.29% / 0.29%
#: (pcl.py's sample, rho = 0), up to 0.57% / 0.78% / 0.83%, Adult k = 4000 0.41%, none on 6 of
#: 18 cases; each start costs about as much as MDAV's (0.6-1.2 s at 2^16 records here), and
#: pcl.py's limit for a Gaussian fit is 10 s (8.6 s with 6)
KMEANS_PLUSPLUS_STARTS = 4


def _init_ok(init, params) -> bool:
    """Whether ``init`` names starts (:func:`_starts`) that PCL with ``params["k"]`` can run."""
    try:
        _starts(init, int(params["k"]))
    except ParameterError:
        return False
    return True


def _starts(init, k):
    """The starts that ``init`` names: "auto" is MDAV, bisection and KMEANS_PLUSPLUS_STARTS
    k-means++ starts for cells of >= SMOOTH_MIN_K records (their Lloyd iterations stay in the
    basin of their start; each start costs seconds) and MDAV alone for smaller cells (iterated
    local search explores from one start)."""
    if isinstance(init, str):
        large = ("mdav", "pca") + ("k-means++",) * KMEANS_PLUSPLUS_STARTS
        names = (large if k >= SMOOTH_MIN_K else ("mdav",)) if init == "auto" else (init,)
    else:
        names = tuple(init) if isinstance(init, (list, tuple)) else ()
    if not names or any(not isinstance(name, str) or name not in STARTS for name in names):
        raise ParameterError(f"init must be 'auto', 'mdav', 'pca', 'k-means++' or a sequence of them, got {init!r}")
    if "k-means++" in names and k < SMOOTH_MIN_K:
        raise ParameterError(f"init 'k-means++' is for cells of at least {SMOOTH_MIN_K} records (k = {k})")
    return names


def kmeans_plusplus(Z, Q: int, rng) -> np.ndarray:
    """Q centres drawn by k-means++ seeding (Arthur & Vassilvitskii 2007): the first a
    uniformly random record, each next one a record drawn with probability D(x)^2 / sum D^2,
    D(x) the distance of x to the nearest centre drawn so far (a record already drawn has
    D = 0). O(n Q d) time; ``rng`` a NumPy Generator."""
    n = Z.shape[0]
    chosen = [int(rng.integers(n))]
    d2 = ((Z - Z[chosen[0]]) ** 2).sum(1)
    for _ in range(Q - 1):
        total = d2.sum()
        chosen.append(int(rng.choice(n, p=d2 / total)) if total > 0.0 else int(rng.integers(n)))
        d2 = np.minimum(d2, ((Z - Z[chosen[-1]]) ** 2).sum(1))
    return Z[chosen].copy()


def _kmeans_plusplus_start(Z, sizes, rng, lm_iter: int = 20):
    """A start of exactly ``sizes`` from k-means++ centres (:func:`kmeans_plusplus`): the
    large-cell path's assignment (LM offsets, here up to ``lm_iter`` steps from 0, then
    successive shortest paths), the centres then moving to the cell means (over-relaxing the
    first step from centres this far from their means made the next assignments move a
    third of the records one at a time). None when the shortest paths fail (ties)."""
    Q = sizes.size
    D = squared_distances(Z, kmeans_plusplus(Z, Q, rng))
    offsets = lm_offsets(D, sizes, np.zeros(Q), tolerance=max(1.0, 0.005 * sizes.min()), max_iter=lm_iter)
    exact = fill_deficits(D, _assign(D, offsets)[0], sizes, offsets)
    return None if exact is None else exact[0]


def _locality(Z, labels):
    """(perm, labels of Z[perm]): the records grouped by cell, the cells in the leaf order of a
    k-d tree over their means (renumbered in that order). The local search, the kicks and the
    pricing visit a cell's members and its neighbours' one after another: in this order they
    share cache lines (10^5 x 10, k = 5: a local search from MDAV 9.1 -> 3.9 s, SSE equal to
    0.02%)."""
    Q = int(labels.max()) + 1
    rank = np.empty(Q, np.int64)
    rank[cKDTree(group_means(Z, labels, Q), leafsize=8).indices] = np.arange(Q)
    renumbered = rank[labels]
    perm = np.argsort(renumbered, kind="stable")
    return perm, renumbered[perm]


def _from_start(Z, start, k, max_iter, speed, neighbours, kicks, rng, progress=_quiet, free_sizes=True):
    """PCL from one starting partition: (labels, centers, offsets, strict)."""
    if k >= SMOOTH_MIN_K:
        smooth = _pcl_smooth(Z, start, OVER_RELAXED if speed is None else speed, max_iter, progress=progress)
        if smooth is not None:
            return smooth
    perm, start = _locality(Z, start)
    labels, centers, offsets, strict = _small_cells(np.ascontiguousarray(Z[perm]), start, k, max_iter, speed,
                                                    neighbours, kicks, rng, progress, free_sizes)
    back = np.empty_like(labels)
    back[perm] = labels
    return back, centers, offsets, strict


def _exact(Z, labels, k, Q, near, neighbours, max_iter):
    """The exact size-constrained assignment to the cell means (over all cells, from
    ``labels``; ``near``: the last candidates, pooled): (centres, its
    :class:`.transport.TransportAssignment`). Up to FROM_FIXED_MAX cells, then moves and swaps
    and the exact assignment again, while the SSE falls."""
    best = None
    for step in range(max_iter if Q <= FROM_FIXED_MAX else 1):
        if step:
            labels, near = local_search(Z, best[2].labels, k, neighbours=neighbours), best[2].candidates
        centers = group_means(Z, labels, Q)
        r = transport_assign(Z, centers, k, near=pooled_cells(Z, centers, np.zeros(Q), labels, near, CANDIDATES),
                             pricing=8, labels=labels)
        if Q > FROM_FIXED_MAX:  # one assignment: no SSE to compare
            return centers, r
        sse = _sse(Z, r.labels, Q)
        if best is not None and not _step(best[0], sse)[0]:
            break
        best = (sse, centers, r)
    return best[1:]


def _small_cells(Z, start, k, max_iter, speed, neighbours, kicks, rng, progress, free_sizes):
    """Steps 2-4 of the module docstring for cells of < SMOOTH_MIN_K records (or where the
    large-cell path failed): (labels, centers, offsets, strict)."""
    Q = int(start.max()) + 1
    speed = 1.0 if speed is None else min(1.0, speed)
    most = KICKS_MAX * searches(Q)  # KICKS_MAX per independent search (two halves of the cells from HALVES_MIN)
    free_kicks = min(int(FREE_KICKS_PER_CELL * Q), most) if kicks is None else kicks
    kicks = min(KICKS_PER_CELL * Q, most) if kicks is None else kicks
    labels, near = start, _first_candidates(Z, start, Q)
    if speed < 1.0:  # damped centroid steps (the paper's s = 1/2) first; with s = 1 see the docstring
        labels, near = _lloyd(Z, labels, k, Q, max_iter, speed, near, progress)
    lists = CellLists()
    labels, near = _alternate(Z, labels, k, Q, max_iter, neighbours, near, lists, progress)
    progress("kicks", 0, kicks)  # one numba call: no finer steps without changing its random stream
    restarts = RESTARTS if Q <= FROM_FIXED_MAX else 1
    labels = iterated_local_search(Z, labels, k, kicks, rng, neighbours=neighbours, lists=lists, restarts=restarts)
    progress("kicks", kicks, kicks)
    if not free_sizes or Q <= FROM_FIXED_MAX:  # else the alternation after the free-size kicks serves both
        labels, near = _alternate(Z, labels, k, Q, max_iter, neighbours, near, lists, progress)
        if free_sizes:  # the free-size round starts from the fixed-size result: step 4's labels
            labels = _exact(Z, labels, k, Q, near, neighbours, max_iter)[1].labels
    if free_sizes:  # more kicks that may also dissolve and split cells
        progress("free-size kicks", 0, free_kicks)
        labels = iterated_local_search(Z, labels, k, free_kicks, rng, neighbours=neighbours, free_sizes=True,
                                       lists=lists, restarts=restarts)
        progress("free-size kicks", free_kicks, free_kicks)
        if int(labels.max()) + 1 != Q or lists.nbr is None:  # cells renumbered: candidates anew
            Q = int(labels.max()) + 1
            near = _first_candidates(Z, labels, Q)
        labels, near = _alternate(Z, labels, k, Q, max_iter, neighbours, near, lists, progress)
    progress("publish", 0, 1)
    centers, r = _exact(Z, labels, k, Q, near, neighbours, max_iter)  # step 4: publishable power diagram
    strict = strict_offsets(Z, centers, r.labels, r.offsets, near=r.candidates, margin=r.margin)
    progress("publish", 1, 1)
    return (r.labels, centers, r.offsets, False) if strict is None else (strict[0], centers, strict[1], True)


def pcl_partition(Z, k, max_iter: int = 40, speed=None, neighbours: int = 6, kicks=None, random_state=None,
                  init="auto", progress=None, free_sizes: bool = True):
    """PCL on standardised data Z: returns (labels, centers, offsets, start) in z units.

    From each start that ``init`` names (see :func:`_starts`): MDAV's partition, or the
    principal-direction bisection (:mod:`.bisection`) into MDAV's group sizes (|Q| = floor(n/k)
    cells, all of k records but the last); then the steps of the module docstring (small
    cells: steps 2 and 3, ``kicks`` kicks of iterated local search per round, default
    min(40 |Q|, 20000 h) and, with ``free_sizes``, min(12.5 |Q|, 20000 h) free-size kicks (h = 2
    halves of the cells from 8,000 cells, else 1), seeded
    by ``random_state``, and steps 3 and 4 again). The result of
    lowest SSE is returned, with the name of its start. One column (d = 1): the optimal
    partition itself (:func:`.univariate.optimal_univariate`, groups of k..2k-1 records, start
    "optimal univariate"), with strict offsets. Fewer than 2k records, or all identical (every
    partition has SSE 0): one cell. ``free_sizes`` (cells of < 256 records): the
    kicks may also dissolve cells and split cells of >= 2k records (issue 16.4: the number of
    cells and their sizes are optimised, every cell >= k); False keeps MDAV's |Q| cells.

    ``progress(stage, done, total)``, if given, is called before each start (stage "mdav
    start" or "pca start", before any numba compilation) and along each start's stages
    ("Lloyd" with damped steps only, "local search", "kicks", "free-size kicks", "offsets",
    "publish"), with ``done`` of ``total``
    units of that stage; a stage that converges early ends with done == total."""
    Z = check_matrix(Z, "Z")
    return _pcl(Z, check_k(k, Z.shape[0]), max_iter, speed, neighbours, kicks, random_state, init, progress,
                free_sizes)[:4]


def _constant_columns_back(Z, constant, result):
    """:func:`_pcl`'s ``result`` on the columns of Z that are not ``constant``, with the centres
    completed by the constant columns' value. No distance depends on a column where every
    record holds the same value, so PCL runs without them: the same cells, and each record's
    costs under the diagram the same bit for bit (its value minus the centre's is 0 there).
    With them, a column the standardiser centred but left at a last-bit offset (7e300 in
    every record: 1.2e285) overflowed the squared distances."""
    labels, centers, offsets, start, strict = result
    full = np.repeat(Z[:1], centers.shape[0], axis=0)
    full[:, ~constant] = centers
    return labels, full, offsets, start, strict


def _pcl(Z, k, max_iter: int = 40, speed=None, neighbours: int = 6, kicks=None, random_state=None, init="auto",
         progress=None, free_sizes: bool = True):
    """:func:`pcl_partition`'s result and whether the offsets are strict: then the published
    rule assigns every record its label but those with an identical twin in another cell
    (:func:`.potentials.strict_offsets`)."""
    Z = np.ascontiguousarray(Z, dtype=np.float64)
    names = _starts(init, k)
    progress = _quiet if progress is None else progress
    n = Z.shape[0]
    Q = n // k
    constant = (Z == Z[:1]).all(axis=0)
    if Q == 1 or constant.all():  # one cell; or identical records, for which every partition has SSE 0: one
        progress("publish", 1, 1)
        centre = np.where(constant, Z[0], Z.mean(axis=0))[None, :]
        return np.zeros(n, dtype=np.int64), centre, np.zeros(1), names[0], True
    if constant.any():
        return _constant_columns_back(Z, constant, _pcl(np.ascontiguousarray(Z[:, ~constant]), k, max_iter, speed,
                                                        neighbours, kicks, random_state, init, progress, free_sizes))
    rng = check_random_state(random_state)
    if Z.shape[1] == 1:  # one column: the optimum itself, sizes free in k..2k-1 (Hansen & Mukherjee 2003)
        progress("optimal univariate", 0, 1)
        labels = _optimal_univariate(Z[:, 0], k)
        centers = group_means(Z, labels, int(labels.max()) + 1)
        strict = strict_offsets(Z, centers, labels)
        progress("optimal univariate", 1, 1)
        offsets = np.zeros(len(centers)) if strict is None else strict[1]
        # the offsets certify strict[0]: flagged strict only if polishing moved no record
        return labels, centers, offsets, "optimal univariate", strict is not None and np.array_equal(strict[0], labels)
    best = None
    sizes = np.r_[np.full(Q - 1, k), n - (Q - 1) * k]  # MDAV's
    for number, name in enumerate(names):
        progress(f"{name} start", number, len(names))
        if name == "k-means++":  # only for large cells (_starts); where its path fails the other starts decide
            start = _kmeans_plusplus_start(Z, sizes, rng)
            result = None if start is None else _pcl_smooth(Z, start, OVER_RELAXED if speed is None else speed,
                                                            max_iter, progress=progress)
            if result is None:
                continue
        else:
            start = _mdav_partition(Z, k).labels if name == "mdav" else principal_bisection(Z, sizes)
            result = _from_start(Z, start, k, max_iter, speed, neighbours, kicks, rng, progress, free_sizes)
        sse = _sse(Z, result[0])
        if best is None or sse < best[0]:
            best = (sse, *result[:3], name, result[3])
    if best is None:  # only k-means++ starts, none of which reached exact sizes
        result = _from_start(Z, _mdav_partition(Z, k).labels, k, max_iter, speed, neighbours, kicks, rng, progress,
                             free_sizes)
        best = (0.0, *result[:3], "mdav", result[3])
    return best[1:]


class PCL(Microaggregator):
    """PCL estimator (k-anonymous Lloyd). Fitted function: kind "power-diagram"
    (centers + cost offsets), which reproduces ``labels_`` on the fitted data.

    ``init`` names the starts: "mdav" (the paper's choice), "pca" (principal-direction
    bisection, :mod:`.bisection`), "k-means++" (centres seeded by k-means++, cells of >= 256
    records only), a sequence of them (PCL runs from each and keeps the lowest SSE), or
    "auto" (default: for cells of >= 256 records MDAV, bisection and
    KMEANS_PLUSPLUS_STARTS = 4 k-means++ starts, "mdav" for smaller ones); ``speed`` is the
    centroid speed factor s in (0, 2) (None: 1 for
    small cells, 1.8 for cells of >= 256 records; the paper damps with s = 1/2); ``kicks`` is
    the number of iterated-local-search kicks for cells of < 256 records (None:
    min(40 |Q|, 20000 h), and min(12.5 |Q|, 20000 h) in the free-size round, h = 2 from 8,000
    cells, else 1; 0 turns it off);
    ``random_state`` seeds those kicks and the k-means++ starts. Fitted ``start_``: the
    start that gave the result.

    ``fit(X, progress=None)``: ``progress(stage, done, total)`` follows the run (see
    :func:`pcl_partition`; first called before any numba compilation). A fit whose estimated
    peak memory (:mod:`.memory`: O(n d) for cells of < 256 records, n x |Q| arrays for larger
    ones) exceeds half of the available memory is refused with
    a :class:`ParameterError` before any work.
    """

    _parameter_constraints = {
        **CONSTRAINTS,
        "init": [Constraint(f"'auto', 'mdav', 'pca', 'k-means++' (cells of at least {SMOOTH_MIN_K} records: k >= "
                            f"{SMOOTH_MIN_K}) or a sequence of them", _init_ok)],
        "speed": [NONE, real(0, 2, closed="neither")],
        "kicks": [NONE, integer(0)],
        "free_sizes": [BOOLEAN],
        "random_state": RANDOM_STATE,
    }
    _blockable = True
    #: automatic blocks of PCL (from 200,000 records): at most 32,000 records, i.e. 8 blocks of
    #: 25,000 at 200,000 records, 32 of 31,250 at 10^6 and 512 of 19,531 at 10^7 (fits of seconds)
    _default_block_size = 32_000

    def __init__(self, k: int = 3, *, init="auto", speed=None, kicks=None, free_sizes=True, random_state=None,
                 block_size=None, n_jobs=None, nominal=(), ordinal=(), missing="raise", merge_small_strata=False):
        self.k = k
        self.free_sizes = free_sizes
        self.init = init
        self.speed = speed
        self.kicks = kicks
        self.random_state = random_state
        self.block_size = block_size  # blocks for large files: see Microaggregator (per-block seeds)
        self.n_jobs = n_jobs
        self.nominal = nominal  # options of every microaggregator: see Microaggregator
        self.ordinal = ordinal
        self.missing = missing
        self.merge_small_strata = merge_small_strata

    def _sites_are_group_means(self) -> bool:
        """Small cells: the sites are the cell means of the last exact assignment's start; large
        cells (k >= SMOOTH_MIN_K): Levenberg-Marquardt's over-relaxed centres, means of no group,
        whose offsets are tuned to them (moving them to the means unbalanced the cells)."""
        return self.k_ < SMOOTH_MIN_K

    def _partition(self, Z, X, progress):
        rng = check_random_state(self.random_state)
        memory.check_pcl_memory(Z.shape[0], self.k_)
        speed = None if self.speed is None else float(self.speed)
        labels, centers, offsets, self.start_, _ = _pcl(Z, self.k_, speed=speed, kicks=self.kicks, random_state=rng,
                                                        init=self.init, progress=progress,
                                                        free_sizes=bool(self.free_sizes))
        return labels, "power-diagram", {"centers": np.ascontiguousarray(centers), "offsets": np.ascontiguousarray(offsets)}

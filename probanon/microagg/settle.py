"""Settling a power diagram on the fitted records: the published function's own cells, each of
at least k records (issue 39.1).

A published function is applied to a record's key values alone, so it cannot split identical
records: whatever partition a method found, the release must be the partition the function
itself makes of the fitted records, or ``transform(X)`` and the release disagree and a cell
the function makes may hold fewer than k records. :func:`settle_power` turns a power diagram
(centres c_g, offsets w_g; a record z goes to argmin_g ||z - c_g||^2 + w_g, ties to the lowest
g, :mod:`.function`) into one whose cells on the fitted records all hold at least k of them:

1. the records are reduced to their distinct tuples u with multiplicities m_u; each tuple takes
   its cell under the diagram (the function's own arithmetic: squared differences summed
   column by column, then the offset);
2. a cell g with 0 < |g| < k lowers its offset, as a bidder in an auction (Bertsekas 1988):
   by just more than the m-th smallest gap (||u - c_g||^2 + w_g) - (||u - c_u||^2 + w_u) over
   the tuples u outside g, m the fewest tuples whose multiplicities cover the deficit, so that
   exactly the tuples of smallest gap join g (and any tied with the last of them); a cell that
   lost records below k bids in turn;
3. a cell still short after ``RAISES_MAX`` bids, and every empty cell, is removed from the
   diagram: its tuples go to their best remaining cell and no other cell loses a record;
4. the remaining cells are renumbered in their order (so the lowest-index tie rule is kept).

Every step only lowers an offset or removes a cell, so each tuple's cell is argmin over the
remaining cells with the current offsets, computed with the function's arithmetic: the labels
returned are those the published rule gives, bit for bit (checked against the rule's own
kernel before returning). A diagram whose cells already hold k records each is returned as it
is (PCL's strict offsets, on data where no identical records were split).

The sites must then be the released values themselves (:func:`settle_sites`): a site that is
the mean of a set of records other than its cell's, published beside the cell's released mean
and size, gives away the records in which the two sets differ ((|G| +- 1) c_g - |G| xbar_g is
the one record a cell gained or lost). So the sites move to the settled cells' means and the
diagram is settled again, until the cells no longer change: a fixed point of Lloyd's two
conditions with cells of at least k records, whose sites are exactly the cell means
(:func:`settle_sites`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .means import group_means

#: bids a short cell makes before it is removed from the diagram
RAISES_MAX = 8
#: rounds of (bids, check against the rule's kernel) before giving up
ROUNDS_MAX = 5
#: rounds of (sites to the cell means, strict offsets, settle) before giving up (:func:`settle_sites`)
#: rounds of (sites to the cell means, settle) before giving up
SITE_ROUNDS_MAX = 200


@dataclass(frozen=True)
class SettledDiagram:
    """Result of :func:`settle_power`: ``labels`` (n,) each fitted record's cell under the
    diagram (``centers``, ``offsets``), every cell holding at least k records; ``kept`` the
    indices of the input cells that remain (in order); ``moved`` the number of records whose
    cell differs from the partition given; ``removed`` the number of cells removed."""

    labels: np.ndarray
    centers: np.ndarray
    offsets: np.ndarray
    kept: np.ndarray
    moved: int
    removed: int


@njit(cache=True)
def _costs(U, center, offset, out):
    """||u - center||^2 + offset for every row u of U, summed as the published rule sums
    (:func:`.function._power_rows`)."""
    for i in range(U.shape[0]):
        acc = 0.0
        for c in range(U.shape[1]):
            t = U[i, c] - center[c]
            acc += t * t
        out[i] = acc + offset


def _distinct(Z):
    """(tuples U, inverse: the tuple of each record, multiplicities)."""
    U, inverse, counts = np.unique(Z, axis=0, return_inverse=True, return_counts=True)
    return np.ascontiguousarray(U), inverse.ravel(), counts.astype(np.int64)


def _bid(U, counts, g, k, centers, offsets, lab, own, sizes):
    """Cell g lowers its offset so that the tuples of smallest gap cover its deficit (module
    docstring, step 2); updates ``lab``, ``own``, ``sizes`` in place. Returns the cells that
    lost records."""
    cost = np.empty(U.shape[0])
    _costs(U, centers[g], offsets[g], cost)
    outside = np.flatnonzero(lab != g)
    gap = cost[outside] - own[outside]
    deficit = int(k - sizes[g])
    take = min(deficit, outside.size)
    if take == 0:
        return np.empty(0, np.int64)
    first = np.argpartition(gap, take - 1)[:take] if take < gap.size else np.arange(gap.size)
    first = first[np.argsort(gap[first], kind="stable")]
    covered = np.cumsum(counts[outside[first]])
    m = int(np.searchsorted(covered, deficit))  # the m-th smallest gap covers the deficit
    last = gap[first[min(m, first.size - 1)]]
    above = gap[gap > last]
    step = last + (0.5 * (above.min() - last) if above.size else max(1e-12, 1e-9 * abs(last)))
    offsets[g] -= max(step, 0.0)
    _costs(U, centers[g], offsets[g], cost)  # the rule's arithmetic decides who joins
    inside = lab == g
    own[inside] = cost[inside]
    joins = outside[(cost[outside] < own[outside]) | ((cost[outside] == own[outside]) & (g < lab[outside]))]
    losers = np.unique(lab[joins])
    np.subtract.at(sizes, lab[joins], counts[joins])
    sizes[g] += counts[joins].sum()
    lab[joins] = g
    own[joins] = cost[joins]
    return losers


def settle_power(Z, centers, offsets, k: int, labels=None, failing=None) -> SettledDiagram:
    """The power diagram (``centers``, ``offsets``; standardised units) settled on the records
    Z: module docstring. ``labels``: the partition the method found (only to count the records
    moved; None: the diagram's own). ``failing(labels, sizes)``, optional: a boolean mask of
    cells that fail a further condition (the survey design's Algorithm A); such cells are
    removed, the one of fewest records first (and cells short of k are removed too, without
    bids). Raises :class:`Unsettled` when no cell can be kept, RuntimeError if the bids do
    not settle (never observed: the rule's kernel disagreeing with this module's arithmetic)."""
    from .rule_kernels import _assign_power

    Z = np.ascontiguousarray(Z, dtype=np.float64)
    centers = np.ascontiguousarray(centers, dtype=np.float64)
    offsets = np.array(offsets, dtype=np.float64)
    U, inverse, counts = _distinct(Z)
    Q = centers.shape[0]
    active = np.ones(Q, bool)
    lab = _assign_power(U, centers, offsets)
    for _ in range(ROUNDS_MAX):
        own = np.empty(U.shape[0])
        for g in np.unique(lab):  # each tuple's cost in its own cell
            rows = np.flatnonzero(lab == g)
            cost = np.empty(rows.size)
            _costs(U[rows], centers[g], offsets[g], cost)
            own[rows] = cost
        sizes = np.bincount(lab, weights=counts, minlength=Q).astype(np.int64)
        _settle(U, counts, k, centers, offsets, active, lab, own, sizes, failing, inverse)
        kept = np.flatnonzero(active)
        check = _assign_power(U, centers[kept], offsets[kept])
        renumber = np.full(Q, -1)
        renumber[kept] = np.arange(kept.size)
        if np.array_equal(check, renumber[lab]):
            out = check[inverse]
            moved = 0 if labels is None else _moved(labels, out)
            return SettledDiagram(out, centers[kept], offsets[kept], kept, moved, Q - kept.size)
        lab = kept[check]  # the kernel is the rule: start again from its cells
    raise RuntimeError("the power diagram did not settle on the fitted records")


class Unsettled(RuntimeError):
    """No cell of the diagram can be kept: all the records together are short of k (or fail
    the further condition)."""


def _settle(U, counts, k, centers, offsets, active, lab, own, sizes, failing, inverse):
    """Bids and removals (module docstring, steps 2-3) until every active cell holds >= k
    records and passes ``failing``."""
    raises = np.zeros(centers.shape[0], np.int64)
    while True:
        short = active & (sizes < k)
        active[np.flatnonzero(short & (sizes == 0))] = False  # empty cells: removed
        short &= active
        if failing is not None and not short.any():
            bad = np.zeros_like(short)
            full = np.flatnonzero(active)
            bad[full] = failing(lab[inverse], sizes)[full]
            short = bad
        if not short.any():
            return
        if active.sum() == 1:
            raise Unsettled("the records are not even one cell that can be kept")
        candidates = np.flatnonzero(short)
        if failing is not None:  # the survey design: removals only, the cell of fewest records first
            _remove(U, centers, offsets, active, lab, own, sizes, counts, int(candidates[np.argmin(sizes[candidates])]))
            continue
        g = int(candidates[np.argmax(sizes[candidates])])  # the closest to k bids first
        if raises[g] >= RAISES_MAX:
            _remove(U, centers, offsets, active, lab, own, sizes, counts, g)
            continue
        raises[g] += 1
        _bid(U, counts, g, k, centers, offsets, lab, own, sizes)


def _remove(U, centers, offsets, active, lab, own, sizes, counts, g):
    """Cell g leaves the diagram; its tuples go to their best remaining cell (step 3), by the
    published rule's own kernel over the remaining cells (lowest index on ties, as there)."""
    from .rule_kernels import _power_rows

    active[g] = False
    rows = np.flatnonzero(lab == g)
    kept = np.flatnonzero(active)
    best = np.empty(rows.size, np.int64)
    _power_rows(np.ascontiguousarray(U[rows]), 0, rows.size, centers[kept], offsets[kept], best)
    lab[rows] = kept[best]
    for cell in np.unique(lab[rows]):  # their costs in their new cells
        moved = rows[lab[rows] == cell]
        cost = np.empty(moved.size)
        _costs(U[moved], centers[cell], offsets[cell], cost)
        own[moved] = cost
    np.add.at(sizes, lab[rows], counts[rows])
    sizes[g] = 0


def _moved(before, after) -> int:
    """Records whose cell changed between two partitions numbered independently: a record
    stays when its new cell is the one most of its old cell's records went to."""
    pairs, inverse, counts = np.unique(np.column_stack([before, after]), axis=0, return_inverse=True,
                                       return_counts=True)
    best = np.zeros(int(before.max()) + 1, np.int64)
    np.maximum.at(best, pairs[:, 0], counts)
    return int(before.size - best.sum())


def _means(Z, labels, Q):
    """Each cell's mean (Z units), as the fit computes the released centroids."""

    return group_means(Z, labels, Q)


def settle_sites(Z, centers, offsets, k: int, labels) -> SettledDiagram:
    """:func:`settle_power`, then sites moved to the cell means until the cells no longer change
    (module docstring): the returned diagram's ``centers`` are its cells' means exactly, so it
    publishes nothing beyond the release. The rounds keep the offsets of the last settling (PCL's
    optimised offsets; its cells rarely move) while the number of cells whose mean is not their
    site falls; from the first round where it does not, they start from zero offsets: Lloyd's
    nearest-site cells, the short ones settled by bids (offsets carried over many rounds only
    fall, and cells with very low offsets swallowed their neighbours: V-MDAV on 6,000 Adult
    records grew cells of 2,000 records in 30 rounds; from zero offsets it reached a fixed point
    in 5). ``moved`` counts the records whose cell differs from ``labels``. RuntimeError after
    SITE_ROUNDS_MAX rounds (never observed)."""
    given = np.asarray(labels)
    current, astray_before, keep = given, np.inf, True
    for _ in range(SITE_ROUNDS_MAX):
        settled = settle_power(Z, centers, offsets, k, current)
        means = _means(Z, settled.labels, settled.centers.shape[0])
        astray = int((means != settled.centers).any(axis=1).sum())
        if astray == 0:
            return SettledDiagram(settled.labels, settled.centers, settled.offsets, settled.kept,
                                  _moved(given, settled.labels), _removed(given, settled.labels))
        keep = keep and astray < astray_before
        centers, current, astray_before = means, settled.labels, astray
        offsets = settled.offsets if keep else np.zeros(means.shape[0])
    raise RuntimeError(f"the power diagram's sites did not reach the cell means in {SITE_ROUNDS_MAX} rounds")


def _removed(before, after) -> int:
    """Cells of ``before`` beyond those of ``after`` (the difference of their numbers)."""
    return int(np.unique(before).size - np.unique(after).size)

"""What a level of the generalization check found (:class:`LevelReport`), reported by the greedy
generalization (:mod:`.generalize`) and by the cut search (:mod:`.cuts`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LevelReport:
    """What happened at itemset size l.

    ``method`` is "sampled" (Algorithm 2 with gamma = ``gamma``), "exact" (enumeration) or
    "empty" (no record has l items). ``n_checked`` itemsets (samples or distinct itemsets) were
    checked, ``n_merges`` merges made. ``fraction`` is the share of the checked itemsets that are
    k-anonymous under the FINAL partition. It is 1 when the level is ``satisfied`` (each checked
    itemset passed or was merged until it did, and merges never lower a support); otherwise
    it is counted, and for "sampled" it estimates the share over all distinct l-itemsets.
    ``satisfied`` is False when a failing itemset admitted no permitted merge. ``k`` and
    ``sigma`` are the level's k_l and sigma_l.
    """

    l: int
    method: str
    gamma: int | None
    n_checked: int
    n_merges: int
    fraction: float
    satisfied: bool
    k: int | None = None
    sigma: float | None = None

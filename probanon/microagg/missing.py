"""Missing key values (issue 17, point 3): the policy ``missing="pattern"``.

The default, ``"raise"``, refuses a key with a missing value and names this policy. With
``"pattern"``:

1. Records are grouped by their pattern of missing keys (the set of keys they lack).
2. A set of fewer than k records is merged into the nearest compatible set: the one whose
   commonly observed keys differ from its own in the fewest keys (the symmetric difference),
   among the sets that share at least one observed key with it; ties go to the larger set,
   then to the first in sorted order. Repeat until every set holds k records. Records that lack
   every key have no compatible set: fewer than k of them is an error.
3. Each set is microaggregated on the keys all its records observe (z-scores of the observed
   values of the whole file), as a stratum (:mod:`.strata`).
4. Released values: in each group, a key that every member observes is replaced by the group
   mean; a key that some member lacks is missing for the whole group (a missing value stays
   missing; a merged record may lose a value, which the release counts as suppressed). So the
   members of a group agree on every released key value: k-anonymity holds with missing values
   compared as equal, and a fortiori as sdcMicro counts them (a missing value matches any value).

No published function for such a fit: the cells depend on which keys a record lacks.

Categorical keys (:mod:`.mixed`) follow the same steps: a record's pattern counts the nominal and
ordinal keys it lacks too, a set is microaggregated on the embedded columns of the keys all its
records observe, and a group releases a category only when every member has one (else that key is
missing for the whole group, as a number would be). With strata (:mod:`.strata`), the small strata
are merged first (or refused) as without missing values; then the patterns are formed and merged
within each stratum, never across strata, so every group lies within one stratum and k-anonymity
with missing values compared as equal holds on the keys and the strata columns together.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import AdjustmentWarning, InputError

#: the values of the estimators' parameter ``missing``
POLICIES = ("raise", "pattern")


def pattern_sets(lacking: np.ndarray, k: int, names=None) -> tuple[np.ndarray, list[np.ndarray], list[str]]:
    """(set of each record, the keys observed by every record of each set, merge statements
    naming the keys by ``names``) for the boolean matrix ``lacking`` (records x keys, True where
    missing); module docstring, steps 1-2."""
    names = [str(j) for j in range(lacking.shape[1])] if names is None else [str(c) for c in names]
    patterns, which = np.unique(lacking, axis=0, return_inverse=True)
    which = which.ravel()
    sets = [[p] for p in range(len(patterns))]
    counts = list(np.bincount(which, minlength=len(patterns)))
    observed = [~patterns[p] for p in range(len(patterns))]
    notes = []
    while True:
        small = [s for s in range(len(sets)) if counts[s] < k]
        if not small:
            break
        s = min(small, key=lambda t: (counts[t], t))
        candidates = [t for t in range(len(sets)) if t != s and (observed[t] & observed[s]).any()]
        if not candidates:
            what = "lack every key" if not observed[s].any() else "share no observed key with any other records"
            raise InputError(f"{counts[s]} records {what}: fewer than k = {k}, they cannot be released k-anonymously "
                             "(drop or impute them)")
        t = min(candidates, key=lambda t: (int((observed[t] ^ observed[s]).sum()), -counts[t], t))
        notes.append(f"{counts[s]} records missing {_names(~observed[s], names)} merged with {counts[t]} records "
                     f"missing {_names(~observed[t], names)}")
        sets[t] += sets[s]
        counts[t] += counts[s]
        observed[t] = observed[t] & observed[s]
        del sets[s], counts[s], observed[s]
    member = np.empty(len(patterns), np.int64)
    for s, group in enumerate(sets):
        member[group] = s
    return member[which], observed, notes


def pattern_sets_within(lacking: np.ndarray, stratum: np.ndarray, k: int, names=None,
                        strata_names=None) -> tuple[np.ndarray, list[np.ndarray], list[str]]:
    """:func:`pattern_sets` within each stratum (``stratum``: the stratum index of each record,
    0..S-1): (set of each record, numbered across the strata, the keys observed by each set,
    merge statements naming the stratum by ``strata_names`` when there are several), each
    statement also issued as an :class:`AdjustmentWarning` once every set holds k records."""
    which = np.empty(lacking.shape[0], np.int64)
    observed, notes = [], []
    n_strata = int(stratum.max()) + 1
    for s in range(n_strata):
        rows = np.flatnonzero(stratum == s)
        where = f"stratum {strata_names[s] if strata_names is not None else s}"
        try:
            local, seen, said = pattern_sets(lacking[rows], k, names)
        except InputError as exc:
            raise InputError(f"{where}: {exc}" if n_strata > 1 else str(exc)) from None
        which[rows] = len(observed) + local
        observed += seen
        notes += [f"{where}: {note}" if n_strata > 1 else note for note in said]
    for note in notes:
        warnings.warn(note, AdjustmentWarning, stacklevel=2)
    return which, observed, notes


def _names(mask, names) -> str:
    positions = np.flatnonzero(mask)
    return "no key" if positions.size == 0 else ",".join(names[p] for p in positions)


__all__ = ["POLICIES", "pattern_sets", "pattern_sets_within"]

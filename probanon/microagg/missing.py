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
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError

POLICIES = ("raise", "pattern")


def check_policy(missing) -> str:
    if missing not in POLICIES:
        raise InputError(f"missing must be one of {', '.join(POLICIES)}, got {missing!r}")
    return missing


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


def _names(mask, names) -> str:
    positions = np.flatnonzero(mask)
    return "no key" if positions.size == 0 else ",".join(names[p] for p in positions)


def released_means(X: np.ndarray, labels: np.ndarray, weights=None) -> np.ndarray:
    """(groups x keys) the released values of each group: the (weighted) mean of a key every
    member observes, NaN for a key some member lacks (module docstring, step 4)."""
    from .base import group_means

    n_groups = int(labels.max()) + 1
    lacking = np.isnan(X)
    out = group_means(np.where(lacking, 0.0, X), labels, n_groups, weights)
    out[group_means(lacking.astype(np.float64), labels, n_groups) > 0] = np.nan
    return out


def observed_standardizer(X: np.ndarray, weights=None):
    """The :class:`~probanon.data.Standardizer` of each column's observed values (NaN skipped)."""
    from ..data import Standardizer

    parts = []
    for j in range(X.shape[1]):
        seen = ~np.isnan(X[:, j])
        if not seen.any():
            raise InputError(f"key {j} has no observed value")
        parts.append(Standardizer.fit(X[seen, j:j + 1], None if weights is None else np.asarray(weights)[seen]))
    return Standardizer(mean_=np.concatenate([p.mean_ for p in parts]), scale_=np.concatenate([p.scale_ for p in parts]))


__all__ = ["POLICIES", "check_policy", "observed_standardizer", "pattern_sets", "released_means"]

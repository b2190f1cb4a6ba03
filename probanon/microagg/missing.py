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
import pandas as pd

from ..errors import AdjustmentWarning, InputError
from .means import group_means, observed_standardizer, released_means  # noqa: F401 - named here too

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


def fit_numeric(model, X: np.ndarray, weights, strata, merge: bool, progress):
    """``fit`` of ``model`` (MDAV, V-MDAV, PCL) on numeric keys ``X`` with missing values (NaN),
    policy "pattern" (module docstring); ``weights`` checked, ``strata`` and ``merge`` as for
    ``fit``. Sets what ``fit`` sets; ``function_`` is None (no published function)."""
    model.n_features_in_ = X.shape[1]
    standardizer = observed_standardizer(X)  # unweighted: the groups do not depend on the weights
    lacking = np.isnan(X)
    labels = _pattern_partition(model, X, lacking, np.ones(X.shape[1], np.int64), standardizer, strata, merge,
                                progress)
    return _fitted(model, standardizer, labels, released_means(X, labels, weights), lacking)


def fit_mixed(model, frame, weights, strata, merge: bool, nominal, ordinal, progress):
    """``fit`` of ``model`` on the DataFrame of numeric and categorical keys ``frame``
    (:mod:`.mixed`) with missing values, policy "pattern" (module docstring)."""
    from .._validation import check_weights
    from .mixed import Encoding

    model.__dict__.pop("feature_names_in_", None)
    encoding = Encoding.fit(frame, nominal, ordinal, missing=True)
    V = encoding.values(frame, missing=True)
    E = encoding.embed_values(V)
    w = None if weights is None else check_weights(weights, E.shape[0], "weights", weights)
    model.n_features_in_ = len(encoding.columns)
    model.feature_names_in_ = list(encoding.columns)
    standardizer = encoding.standardizer(E)  # observed numbers and ordinal ranks z-scored; indicators as they are
    lacking = np.isnan(V)
    labels = _pattern_partition(model, E, lacking, encoding.widths(), standardizer, strata, merge, progress)
    return _fitted(model, standardizer, labels, encoding.released(frame, labels, w), lacking)


def _fitted(model, standardizer, labels, centroids, lacking):
    """The fitted attributes; the key values kept missing (``lacking``: records x keys) and
    those the release suppresses (module docstring, step 4) issued as an :class:`AdjustmentWarning`."""
    model.standardizer_, model.labels_, model.centroids_ = standardizer, labels, centroids
    model.sizes_ = np.bincount(labels)
    model.function_ = None
    model.unpublished_ = "a fit with missing='pattern' publishes no function"
    suppressed = int((pd.isna(centroids)[labels] & ~lacking).sum())
    warnings.warn(f"missing key values: {int(lacking.sum())} kept missing, {suppressed} more suppressed so that "
                  "every group agrees on each released value", AdjustmentWarning, stacklevel=3)
    return model


def _pattern_partition(model, E: np.ndarray, lacking: np.ndarray, widths, standardizer, strata, merge: bool,
                       progress) -> np.ndarray:
    """The labels of a "pattern" fit (module docstring, steps 1-3): ``E`` the keys as embedded
    (numeric keys: themselves), NaN where missing, z-scored by ``standardizer``; ``lacking``
    (records x keys) the keys each record lacks; ``widths`` the embedded columns of each key.
    Sets ``k_``, ``missing_patterns_``, ``missing_merged_``, ``blocks_`` and, with strata,
    ``strata_`` and ``strata_merged_``; each set is fitted by ``model._partition_subsets``."""
    from .._validation import check_k
    from .strata import group_strata, stratum_label, strata_of

    model.k_ = check_k(model.k, E.shape[0])
    model._check_params()
    if strata is None:
        stratum, groups = np.zeros(E.shape[0], np.int64), None
    else:
        stratum, groups, model.strata_merged_ = group_strata(strata_of(strata, E.shape[0])[1], model.k_, merge)
        model.strata_ = groups
    which, observed, model.missing_merged_ = pattern_sets_within(
        lacking, stratum, model.k_, getattr(model, "feature_names_in_", None),
        None if groups is None else [stratum_label(g) for g in groups])
    columns = [np.repeat(seen, widths) for seen in observed]
    labels, _ = model._partition_subsets(standardizer.transform(E), E, which, columns, "missing-value pattern",
                                         progress)
    model.missing_patterns_ = len(observed)
    model.blocks_ = ("" if groups is None else f"{len(groups)} strata, ") + f"{len(observed)} missing-value patterns"
    return labels


def _names(mask, names) -> str:
    positions = np.flatnonzero(mask)
    return "no key" if positions.size == 0 else ",".join(names[p] for p in positions)


__all__ = ["POLICIES", "check_policy", "fit_mixed", "fit_numeric", "observed_standardizer", "pattern_sets",
           "pattern_sets_within", "released_means"]

"""What every intruder of the attack suite is given, and the groups it can rebuild.

The intruder of the suite (issue "honest guarantees"; the intruder of paper 2, Sec. III) knows

* the original key (quasi-identifier) values of every target person (external data ``E``),
* the whole release (every released column, in the release's own record order),
* the mechanism and its parameters (method, k), but not its random choices (permutations,
  record order, seed).

It does not know the targets' confidential values. A link of target ``i`` to released row ``j``
is correct when row ``j`` is the released record of ``i`` (``truth[i] == j``: the row that
carries ``i``'s confidential values). The truth comes from the private link file; the intruder
never sees it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import spatial

from .._validation import check_k
from ..data import Standardizer, quasi_identifiers
from ..errors import InputError, ParameterError

#: Mechanisms the suite knows: how the released keys relate to the original ones.
#: ``aggregated``: keys replaced by a group or cell centroid (rows of a group share their key
#: tuple); ``swapped``: key tuples permuted inside MDAV groups (each released tuple is an original
#: one); ``column-wise``: each confidential column permuted inside its own groups, keys unchanged.
MECHANISMS = {
    "microaggregation": "aggregated",   # probanon microaggregate / apply (MDAV, V-MDAV, PCL)
    "survey": "aggregated",             # probanon survey assign (cells of the published function)
    "mdav-id": "aggregated",            # swap --method mdav-id (every attribute aggregated)
    "mdav-swap": "swapped",             # swap --method mdav-swap
    "mdav-swap-informed": "column-wise",
    "ir-swap": "column-wise",
    "unknown": "unknown",               # any other release: no groups to rebuild
}


def check_mechanism(mechanism) -> str:
    if mechanism is None:
        return "unknown"
    if mechanism not in MECHANISMS:
        raise ParameterError(f"unknown mechanism {mechanism!r} (use one of {', '.join(MECHANISMS)})")
    return mechanism


@dataclass
class AttackData:
    """The intruder's material for one attack, as float matrices.

    ``known`` (n, p): the targets' original values of the attributes the intruder knows;
    ``released_known`` (n, p): the same columns in the release; ``released_confidential`` (n, q):
    the confidential columns of the release (what the intruder wants to attach to a person);
    ``truth`` (n,): released row of each target (never shown to an intruder); ``target_group``,
    ``row_group``: the groups the intruder rebuilt (``None`` when it cannot), numbered alike.
    """

    known: np.ndarray
    released_known: np.ndarray
    released_confidential: np.ndarray
    known_names: list
    confidential_names: list
    truth: np.ndarray
    target_group: np.ndarray | None = None
    row_group: np.ndarray | None = None
    groups_note: str = "no groups: the intruder links against the whole release"

    @property
    def n(self) -> int:
        return int(self.known.shape[0])

    def group_blocks(self):
        """(target rows, released rows) of every rebuilt group, groups with both."""
        if self.target_group is None:
            return []
        n_groups = int(max(self.target_group.max(), self.row_group.max())) + 1
        t_order = np.argsort(self.target_group, kind="stable")
        r_order = np.argsort(self.row_group, kind="stable")
        t_split = np.cumsum(np.bincount(self.target_group, minlength=n_groups))[:-1]
        r_split = np.cumsum(np.bincount(self.row_group, minlength=n_groups))[:-1]
        return [(t, r) for t, r in zip(np.split(t_order, t_split), np.split(r_order, r_split)) if t.size and r.size]


def _matrix(frame: pd.DataFrame, columns: list, name: str) -> np.ndarray:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"the {name} table has no column {missing[0]!r}")
    if not columns:
        return np.empty((len(frame), 0))
    return quasi_identifiers(frame, columns)[0]


def attack_data(original: pd.DataFrame, released: pd.DataFrame, keys, confidential=(), link=None) -> AttackData:
    """Checked matrices of one attack. ``link[i]`` is the released row of original record ``i``
    (default: the same row)."""
    if not isinstance(original, pd.DataFrame) or not isinstance(released, pd.DataFrame):
        raise InputError("original and released must be DataFrames (columns are matched by name)")
    keys, confidential = list(keys), list(confidential)
    if not keys:
        raise ParameterError("name the keys the intruder knows")
    both = set(keys) & set(confidential)
    if both:
        raise ParameterError(f"column {sorted(both)[0]!r} is both a key and confidential")
    if len(original) != len(released):
        raise InputError(f"the tables have different numbers of records ({len(original)} and {len(released)})")
    if len(original) < 2:
        raise InputError("an attack needs at least 2 records")
    n = len(original)
    if link is None:
        truth = np.arange(n)
    else:
        truth = np.asarray(link)
        if truth.shape != (n,) or not np.issubdtype(truth.dtype, np.integer) or \
                not np.array_equal(np.sort(truth), np.arange(n)):
            raise InputError(f"link must give every original record its released row (a permutation of 0..{n - 1})")
    return AttackData(
        known=_matrix(original, keys, "original"), released_known=_matrix(released, keys, "released"),
        released_confidential=_matrix(released, confidential, "released"),
        known_names=keys, confidential_names=confidential, truth=truth.astype(np.int64))


class TupleIndex:
    """Distinct released key tuples, for finding the rows whose tuple is (nearest to) a target's.

    Distances are Euclidean on keys z-scored with the original's mean and sd (the intruder's
    external data), as in :func:`probanon.metrics.record_linkage`."""

    def __init__(self, known: np.ndarray, released_known: np.ndarray):
        self.scaler = scaler = Standardizer.fit(known)
        self.Zx, Zy = scaler.transform(known), scaler.transform(released_known)
        self.tuples, inverse = np.unique(Zy, axis=0, return_inverse=True)
        self.row_tuple = inverse.reshape(-1)
        self.tree = spatial.cKDTree(self.tuples)

    def nearest(self, Z=None) -> tuple[np.ndarray, np.ndarray]:
        """Distance to, and index of, the nearest distinct released tuple of every target."""
        dist, idx = self.tree.query(self.Zx if Z is None else Z, k=1, workers=-1)
        return dist, idx.astype(np.int64)


def rebuild_groups(data: AttackData, mechanism: str, k=None, standardize: bool = True) -> AttackData:
    """Set the groups the intruder can rebuild from what it knows (see :data:`MECHANISMS`).

    * aggregated: the released rows sharing a key tuple form a group; each target goes to the
      group whose tuple is nearest to its original keys (an intruder who could rerun the exact
      partition would do at least as well at group borders).
    * swapped (MDAV-SWAP): the released key tuples are the original ones permuted inside the
      MDAV groups of the keys, so MDAV rerun on the released keys (same multiset) gives the
      groups; each target goes to the group of the released row holding its own tuple.
    * column-wise and unknown: no groups (column-wise mechanisms are attacked per confidential
      column by :mod:`probanon.attacks.suite`, which sets their groups).
    """
    kind = MECHANISMS[check_mechanism(mechanism)]
    if kind in ("unknown", "column-wise"):
        return data
    index = TupleIndex(data.known, data.released_known)
    _, target_tuple = index.nearest()
    if kind == "aggregated":
        data.row_group = index.row_tuple
        data.target_group = target_tuple
        data.groups_note = (f"{index.tuples.shape[0]:,} groups of identical released key tuples; each target in the "
                            "group of the tuple nearest to its keys")
        return data
    if k is None:
        raise ParameterError(f"the {mechanism} intruder needs k (it reruns MDAV)")
    from ..microagg.mdav import mdav_partition

    k = check_k(k, data.n)
    Z = Standardizer.fit(data.released_known).transform(data.released_known) if standardize else data.released_known
    labels = mdav_partition(np.ascontiguousarray(Z), k).labels
    # each distinct tuple -> the group of a row holding it
    tuple_group = np.empty(index.tuples.shape[0], dtype=np.int64)
    tuple_group[index.row_tuple] = labels
    data.row_group = labels.astype(np.int64)
    data.target_group = tuple_group[target_tuple]
    data.groups_note = (f"{int(labels.max()) + 1:,} MDAV groups (k = {k}) rebuilt from the released keys; each target "
                        "in the group of the released row holding its own key tuple")
    return data


def uniform_in_group(data: AttackData, targets: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A released row of each target's rebuilt group, uniformly (-1, no link, without groups):
    what an intruder who learned nothing else can do."""
    out = np.full(targets.size, -1, dtype=np.int64)
    if data.row_group is None or targets.size == 0:
        return out
    order = np.argsort(data.row_group, kind="stable")
    counts = np.bincount(data.row_group, minlength=int(data.target_group.max()) + 1)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    groups = data.target_group[targets]
    has = counts[groups] > 0
    offset = np.floor(rng.random(int(has.sum())) * counts[groups[has]]).astype(np.int64)
    out[has] = order[starts[groups[has]] + offset]
    return out


def column_data(original, released, keys, column, rows, mechanism, k, standardize, confidential) -> AttackData:
    """The attack on one confidential column of a column-wise release (``mdav-swap-informed``,
    ``ir-swap``): the keys are released unchanged, so each target's row is the one holding its
    keys; the groups are the blocks ``column`` was permuted in, rebuilt as the intruder can."""
    data = attack_data(original, released, keys, [column], link=rows)
    index = TupleIndex(data.known, data.released_known)  # keys are released unchanged
    dist, target_tuple = index.nearest()
    # the released row holding the target's keys: equal tuples matched one to one (keys are released unchanged)
    target_row = np.empty(data.n, dtype=np.int64)
    target_row[np.argsort(target_tuple, kind="stable")] = np.argsort(index.row_tuple, kind="stable")
    if mechanism == "ir-swap":
        from ..microagg.ranking import individual_ranking_partition

        row_group = individual_ranking_partition(-data.released_confidential, k, keep_ties=False)[:, 0]
        data.row_group, data.target_group = row_group.astype(np.int64), row_group[target_row].astype(np.int64)
        data.groups_note = f"rank blocks of k = {k} consecutive released values of each confidential column"
    else:
        from ..microagg.mdav import mdav_partition

        others = [c for c in original.columns if c in keys or (c in confidential and c != column)]
        X = attack_data(original, original, others).known
        Z = Standardizer.fit(X).transform(X) if standardize else X
        labels = mdav_partition(np.ascontiguousarray(Z), k).labels.astype(np.int64)
        data.target_group = labels
        row_group = np.empty(data.n, dtype=np.int64)
        row_group[target_row] = labels  # the row holding person i's keys is in i's group
        data.row_group = row_group
        data.groups_note = f"MDAV groups (k = {k}) of all other attributes, rerun on the original (informed intruder)"
    return data

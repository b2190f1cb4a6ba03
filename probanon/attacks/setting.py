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

Releases of every kind (issue 42, point 4): the intruder compares keys as the release did, told
how the release command was told (``probanon microaggregate --nominal/--ordinal/--strata/--missing
pattern/--weights``).

* Categorical and mixed keys (``nominal``, ``ordinal``): the release's own embedding
  (:class:`probanon.microagg.mixed.Encoding`, fitted on the original keys): numbers and ordinal
  ranks z-scored with the original's mean and sd, each nominal key as its category indicators
  scaled by 1/sqrt(2) (two categories differ by 1). A released nominal key is its group's mode,
  an ordinal one its lower median level: each is a category of the original, compared in the same
  embedding. Exact matching compares the tuples of values as released.
* Strata (``strata``): the strata columns are released unchanged (merged strata recoded "W+X",
  :func:`probanon.microagg.strata.recode_merged`); no group crosses strata and the intruder knows
  each target's stratum, so it compares a target with the released rows of its stratum only (a
  recoded label holds every stratum merged into it) and rebuilds the groups within strata.
* Missing values by pattern (``missing="pattern"``): a group releases a key only when every member
  has it, so the released tuple of a person's group lacks at least the keys that person lacks. The
  intruder knows which keys a target lacks; it compares the target with the released tuples
  lacking at least those keys, the ones lacking the fewest more first (a value is suppressed only
  where a pattern of fewer than k records was merged into another), on the keys observed in both;
  exact matching wants the same tuple, missing values included.
* Weights (``weights``): the weight column is released per record, unchanged (``probanon
  microaggregate --weights`` releases it beside the confidential columns; the weighted means change
  the released keys, not the groups). A person's sampling weight is a design variable, not the
  external data an intruder holds, so the intruder does not know it: it is one more released column
  attached to a person, which the intruders that learn from the confidential columns (learned
  likelihood, deterministic relations) learn from as from them; a weight that depends on the keys
  (post-stratified cells) then links a person to a row as such a column would. An office that
  holds its intruder to know the weights names the column as a key: released unchanged, it is then
  matched exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import spatial

from .._validation import check_k
from ..data import Standardizer
from ..errors import InputError, ParameterError
from ..metrics.risk import TIE_TOLERANCE
from ..microagg.mixed import Encoding
from ..microagg.strata import strata_of

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


#: The values of ``missing`` (as the estimators' parameter, :mod:`probanon.microagg.missing`).
MISSING_POLICIES = ("raise", "pattern")


@dataclass(frozen=True)
class KeyTypes:
    """How the release treated its keys (module docstring): ``nominal`` key names, ``ordinal``
    ({name: levels in order, or None}), ``strata`` column names, ``missing`` ("raise" or "pattern")
    and the ``weights`` column (or None)."""

    nominal: tuple = ()
    ordinal: tuple = ()  # ((name, levels or None), ...)
    strata: tuple = ()
    missing: str = "raise"
    weights: str | None = None

    @classmethod
    def of(cls, nominal=(), ordinal=(), strata=(), missing="raise", weights=None) -> "KeyTypes":
        """Checked: column names as lists, ``ordinal`` names or {name: levels}."""
        if missing not in MISSING_POLICIES:
            raise ParameterError(f"missing must be one of {', '.join(MISSING_POLICIES)}, got {missing!r}")
        ordinal = dict(ordinal) if isinstance(ordinal, dict) else {c: None for c in ordinal}
        return cls(tuple(nominal), tuple((c, None if v is None else tuple(v)) for c, v in ordinal.items()),
                   tuple(strata), missing, weights)

    @property
    def kwargs(self) -> dict:
        """The keyword arguments of :func:`attack_data` (and :func:`probanon.attacks.attack`)."""
        return {"nominal": list(self.nominal), "ordinal": {c: None if v is None else list(v) for c, v in self.ordinal},
                "strata": list(self.strata), "missing": self.missing, "weights": self.weights}

    @property
    def plain(self) -> bool:
        """Numeric keys, complete, no strata (weights change nothing the swaps need)."""
        return not (self.nominal or self.ordinal or self.strata or self.missing == "pattern")


@dataclass
class KeySpace:
    """The intruder's comparison of a target's original keys with a released row's keys (module
    docstring). ``known_values``, ``released_values`` (n, p): each key's number, or its
    category's position among the key's levels (:meth:`Encoding.values`), NaN where missing;
    ``Zx``, ``Zy`` (n, w): the same in the embedding, z-scored (NaN where missing); ``key_of``
    (w,): the key of each embedded column; ``target_stratum``, ``row_stratum``: stratum numbers
    (the released stratum that holds each target's; all 0 without strata)."""

    encoding: Encoding
    known_values: np.ndarray
    released_values: np.ndarray
    Zx: np.ndarray
    Zy: np.ndarray
    key_of: np.ndarray
    target_stratum: np.ndarray
    row_stratum: np.ndarray
    _tuples: tuple | None = None
    _nearest: tuple | None = None

    def tuples(self) -> tuple[np.ndarray, np.ndarray, int]:
        """``(target_tuple, row_tuple, T)``: the distinct released tuples of values (stratum
        included, missing values equal) numbered 0..T-1, that of each released row, and that of
        each target's own values (-1 when no released row holds them)."""
        if self._tuples is None:
            n = self.known_values.shape[0]
            both = np.vstack([self.known_values, self.released_values])
            codes = [pd.factorize(both[:, j])[0] for j in range(both.shape[1])]  # NaN: -1 (missing values equal)
            codes.append(np.concatenate([self.target_stratum, self.row_stratum]))
            _, joint = np.unique(np.column_stack(codes), axis=0, return_inverse=True)
            joint = joint.reshape(-1)
            present, row_tuple = np.unique(joint[n:], return_inverse=True)
            position = np.searchsorted(present, joint[:n])
            inside = position < present.size
            inside[inside] = present[position[inside]] == joint[:n][inside]
            self._tuples = (np.where(inside, position, -1).astype(np.int64), row_tuple.reshape(-1).astype(np.int64),
                            int(present.size))
        return self._tuples

    def representatives(self) -> np.ndarray:
        """A released row holding each distinct tuple (the first)."""
        _, row_tuple, T = self.tuples()
        rep = np.empty(T, dtype=np.int64)
        rep[row_tuple[::-1]] = np.arange(row_tuple.size)[::-1]
        return rep

    def nearest(self) -> tuple[np.ndarray, dict]:
        """``(first, tied)``: for every target, the distinct released tuple nearest to its keys
        among those it can be (same stratum; lacking at least the keys the target lacks, the
        fewest more), on the keys observed in both; ``tied[i]``, only where several tuples are at
        the minimal distance (to :data:`probanon.metrics.risk.TIE_TOLERANCE`), all of them."""
        if self._nearest is None:
            self._nearest = self._search()
        return self._nearest

    def _search(self) -> tuple[np.ndarray, dict]:
        n = self.known_values.shape[0]
        rep = self.representatives()
        tZ, t_stratum, t_lack = self.Zy[rep], self.row_stratum[rep], np.isnan(self.released_values[rep])
        x_lack = np.isnan(self.known_values)
        first, tied = np.full(n, -1, dtype=np.int64), {}
        blocks, which = np.unique(np.column_stack([self.target_stratum, x_lack]), axis=0, return_inverse=True)
        which = which.reshape(-1)
        for b in range(blocks.shape[0]):
            idx = np.flatnonzero(which == b)
            stratum, lacks = self.target_stratum[idx[0]], x_lack[idx[0]]
            cand = np.flatnonzero((t_stratum == stratum) & (t_lack | ~lacks).all(axis=1))
            if cand.size == 0:
                where = " in its stratum" if self.row_stratum.max() > 0 else ""
                lacking = [c for c, m in zip(self.encoding.columns, lacks) if m]
                need = f" lacking {', '.join(lacking)} as it does" if lacking else ""
                raise InputError(f"original record {idx[0] + 1}: no released row{where}{need} (is this the release of "
                                 "that file, made with these options?)")
            extra = (t_lack[cand] & ~lacks).sum(axis=1)
            cand = cand[extra == extra.min()]
            patterns, of = np.unique(t_lack[cand], axis=0, return_inverse=True)
            found = [_candidates(tZ[cand[of.reshape(-1) == q]][:, ~patterns[q][self.key_of]],
                                 self.Zx[idx][:, ~patterns[q][self.key_of]]) + (cand[of.reshape(-1) == q],)
                     for q in range(patterns.shape[0])]
            dist = np.column_stack([d for d, _, _, _ in found])
            best = dist.min(axis=1)
            within = dist <= (best + TIE_TOLERANCE * np.maximum(1.0, best))[:, None]
            choice = np.argmax(within, axis=1)
            for q, (_, near, _, tq) in enumerate(found):
                mine = choice == q
                first[idx[mine]] = tq[near[mine]]
            several = set(np.flatnonzero(within.sum(axis=1) > 1).tolist())
            several.update(i for q, (_, _, ties, _) in enumerate(found) for i in ties if within[i, q])
            for i in sorted(several):
                tuples = [tq[ties[i]] if i in ties else tq[near[i:i + 1]]
                          for q, (_, near, ties, tq) in enumerate(found) if within[i, q]]
                tied[int(idx[i])] = np.sort(np.concatenate(tuples))
        return first, dict(sorted(tied.items()))


def _candidates(points: np.ndarray, queries: np.ndarray) -> tuple[np.ndarray, np.ndarray, dict]:
    """``(dist, nearest, ties)``: the distance to and index of the nearest of ``points`` for every
    query, and ``ties[i]`` the indices of all points at that distance where there are several
    (to ``TIE_TOLERANCE``), as :class:`probanon.metrics.risk._NearestCandidates`; no column:
    every point at distance 0."""
    m = queries.shape[0]
    if points.shape[1] == 0:
        everyone = np.arange(points.shape[0])
        return np.zeros(m), np.zeros(m, dtype=np.int64), ({i: everyone for i in range(m)} if everyone.size > 1 else {})
    tree = spatial.cKDTree(points)
    if points.shape[0] == 1:
        dist, nearest = tree.query(queries, k=1, workers=-1)
        return dist, nearest.astype(np.int64), {}
    dist, nearest = tree.query(queries, k=2, workers=-1)
    radius = dist[:, 0] + TIE_TOLERANCE * np.maximum(1.0, dist[:, 0])
    rows = np.flatnonzero(dist[:, 1] <= radius)
    balls = tree.query_ball_point(queries[rows], radius[rows]) if rows.size else []
    return dist[:, 0], nearest[:, 0].astype(np.int64), {int(i): np.asarray(sorted(b), dtype=np.int64)
                                                       for i, b in zip(rows, balls)}


@dataclass
class AttackData:
    """The intruder's material for one attack, as float matrices.

    ``known`` (n, w): the targets' original values of the keys the intruder knows, in the
    release's embedding before z-scoring (numbers, ordinal ranks, nominal indicators scaled by
    1/sqrt(2); NaN where missing; the key values themselves when every key is a number);
    ``released_known`` (n, w): the same of the release; ``released_confidential`` (n, q'): the
    columns the release attaches to a person (confidential columns, the weight column): a number
    as it is (NaN where missing), a text column as one indicator per category;
    ``confidential_of`` (q',): the column (of ``confidential_names``) of each; ``space``: how the
    intruder compares keys (:class:`KeySpace`); ``truth`` (n,): released row of each target (never
    shown to an intruder); ``target_group``, ``row_group``: the groups the intruder rebuilt
    (``None`` when it cannot), numbered alike.
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
    space: KeySpace | None = None
    confidential_of: np.ndarray | None = None
    confidential_numeric: list | None = None
    types: KeyTypes = KeyTypes()

    @property
    def n(self) -> int:
        return int(self.known.shape[0])

    def numeric_keys(self) -> tuple[list, list]:
        """(embedded columns, names) of the numeric keys: every key without categorical ones."""
        if self.space is None:
            return list(range(self.known.shape[1])), list(self.known_names)
        enc = self.space.encoding
        cols = [j for j, key in enumerate(self.space.key_of) if enc.levels(enc.columns[key]) is None]
        return cols, [enc.columns[self.space.key_of[j]] for j in cols]

    def numeric_confidential(self) -> tuple[list, list]:
        """(matrix columns, names) of the numeric confidential columns (a text column's indicators left out)."""
        of = np.arange(len(self.confidential_names)) if self.confidential_of is None else self.confidential_of
        counts = np.bincount(of, minlength=len(self.confidential_names))
        numeric = self.confidential_numeric or [True] * len(self.confidential_names)
        cols = [j for j, c in enumerate(of) if counts[c] == 1 and numeric[c]]
        return cols, [self.confidential_names[of[j]] for j in cols]

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


def _check_columns(frame: pd.DataFrame, columns: list, name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise InputError(f"the {name} table has no column {missing[0]!r}")


def _confidential(released: pd.DataFrame, columns: list) -> tuple[np.ndarray, np.ndarray, list]:
    """(matrix, column of each matrix column, numeric per column): a number as it is (NaN where
    missing, an infinite value refused), any other column as one indicator per category (the
    categories of the release, compared as text; a missing value: no indicator set)."""
    parts, of, numeric = [np.empty((len(released), 0))], [], []
    for j, c in enumerate(columns):
        column = released[c]
        if pd.api.types.is_numeric_dtype(column):
            values = pd.to_numeric(column).to_numpy(np.float64, na_value=np.nan)
            if np.isinf(values).any():
                raise InputError(f"confidential column {c!r} has an infinite value")
            parts.append(values[:, None])
            of.append(j)
            numeric.append(True)
            continue
        present = column.notna().to_numpy()
        text = column.astype(str).to_numpy()
        categories = np.unique(text[present])
        indicators = np.zeros((len(released), categories.size))
        indicators[np.flatnonzero(present), np.searchsorted(categories, text[present])] = 1.0
        parts.append(indicators)
        of += [j] * categories.size
        numeric.append(False)
    return np.hstack(parts), np.asarray(of, dtype=np.int64), numeric


def _strata_numbers(original: pd.DataFrame, released: pd.DataFrame, strata: list) -> tuple[np.ndarray, np.ndarray]:
    """(stratum of each target, of each released row): the released strata values numbered; a
    target's is the released one equal to its own, or the recoded label of merged strata
    ("W+X") that holds it."""
    n = len(original)
    if not strata:
        return np.zeros(n, dtype=np.int64), np.zeros(len(released), dtype=np.int64)
    _, mine = strata_of(original[strata], n)
    _, theirs = strata_of(released[strata], len(released))
    labels = sorted(set(theirs), key=lambda v: tuple(str(x) for x in v))
    number = {v: i for i, v in enumerate(labels)}
    row = np.fromiter((number[v] for v in theirs), np.int64, len(theirs))
    text = {tuple(str(x) for x in v): i for v, i in number.items()}
    parts = [[set(str(x).split("+")) for x in v] for v in labels]
    target = np.empty(n, dtype=np.int64)
    for value in set(mine):
        plain = tuple(str(x) for x in value)
        found = text.get(plain)
        if found is None:
            holders = [i for i, p in enumerate(parts) if all(x in s for x, s in zip(plain, p))]
            if len(holders) != 1:
                raise InputError(f"the stratum {', '.join(plain)} of the original is not in the release "
                                 f"({'no' if not holders else 'more than one'} released stratum holds it)")
            found = holders[0]
        target[[i for i, v in enumerate(mine) if v == value]] = found
    return target, row


def key_space(original: pd.DataFrame, released: pd.DataFrame, keys: list, types: KeyTypes,
              like: KeySpace | None = None) -> KeySpace:
    """The :class:`KeySpace` of an attack: the release's encoding fitted on the original keys
    (``like``: the encoding and scaling of that attack's space instead, for other people of the
    same population, e.g. records held out of the release)."""
    missing = types.missing == "pattern"
    encoding = Encoding.fit(original[keys], types.nominal, dict(types.ordinal), missing) if like is None \
        else like.encoding
    known_values, released_values = encoding.values(original, missing), encoding.values(released, missing)
    known, rows = encoding.embed_values(known_values), encoding.embed_values(released_values)
    scaler = encoding.standardizer(known if like is None else encoding.embed_values(like.known_values))
    key_of = np.repeat(np.arange(len(keys)), encoding.widths())
    target_stratum, row_stratum = _strata_numbers(original, released, list(types.strata))
    return KeySpace(encoding, known_values, released_values, scaler.transform(known), scaler.transform(rows), key_of,
                    target_stratum, row_stratum)


def attack_data(original: pd.DataFrame, released: pd.DataFrame, keys, confidential=(), link=None, *, nominal=(),
                ordinal=(), strata=(), missing="raise", weights=None) -> AttackData:
    """Checked matrices of one attack. ``link[i]`` is the released row of original record ``i``
    (default: the same row). ``nominal``, ``ordinal``, ``strata``, ``missing``, ``weights``: how
    the release treated its keys (module docstring; as :class:`probanon.microagg.MDAV` takes
    them): the weight column is attached to a person as a confidential column is."""
    if not isinstance(original, pd.DataFrame) or not isinstance(released, pd.DataFrame):
        raise InputError("original and released must be DataFrames (columns are matched by name)")
    types = KeyTypes.of(column_list_of(nominal), ordinal, column_list_of(strata), missing, weights)
    keys, confidential = list(keys), list(confidential)
    if not keys:
        raise ParameterError("name the keys the intruder knows")
    both = set(keys) & set(confidential)
    if both:
        raise ParameterError(f"column {sorted(both)[0]!r} is both a key and confidential")
    clash = set(types.strata) & set(keys + confidential)
    if clash:
        raise ParameterError(f"column {sorted(clash)[0]!r} is both a stratum and a key or confidential column")
    if weights is not None and weights not in keys:  # a key the intruder knows, else attached to a person
        if weights in types.strata:
            raise ParameterError(f"the weight column {weights!r} is also a stratum")
        if weights not in confidential:
            confidential.append(weights)
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
    for frame, name in ((original, "original"), (released, "released")):
        _check_columns(frame, keys + list(types.strata), name)
    _check_columns(released, confidential, "released")
    space = key_space(original, released, keys, types)
    C, of, numeric = _confidential(released, confidential)
    data = AttackData(known=space.encoding.embed_values(space.known_values),
                      released_known=space.encoding.embed_values(space.released_values), released_confidential=C,
                      known_names=keys, confidential_names=confidential, truth=truth.astype(np.int64), space=space,
                      confidential_of=of, confidential_numeric=numeric, types=types)
    return data


def column_list_of(columns) -> list:
    """Column names given as a list (or one name)."""
    return [columns] if isinstance(columns, str) else list(columns or ())


def rebuild_groups(data: AttackData, mechanism: str, k=None, standardize: bool = True) -> AttackData:
    """Set the groups the intruder can rebuild from what it knows (see :data:`MECHANISMS`).

    * aggregated: the released rows sharing a key tuple (and stratum) form a group; each target
      goes to the group whose tuple is nearest to its original keys among those it can be in
      (:meth:`KeySpace.nearest`: its stratum, its missing keys; an intruder who could rerun the
      exact partition would do at least as well at group borders).
    * swapped (MDAV-SWAP): the released key tuples are the original ones permuted inside the
      MDAV groups of the keys (within each stratum), so MDAV rerun on the released keys (same
      multiset) gives the groups; each target goes to the group of the released row holding its
      own tuple.
    * column-wise and unknown: no groups (column-wise mechanisms are attacked per confidential
      column by :mod:`probanon.attacks.suite`, which sets their groups).
    """
    kind = MECHANISMS[check_mechanism(mechanism)]
    if kind in ("unknown", "column-wise"):
        return data
    space = data.space
    nearest, _ = space.nearest()
    _, row_tuple, n_tuples = space.tuples()
    strata = " within strata" if data.types.strata else ""
    if kind == "aggregated":
        data.row_group = row_tuple
        data.target_group = nearest
        data.groups_note = (f"{n_tuples:,} groups of identical released key tuples{strata}; each target in the "
                            "group of the tuple nearest to its keys" + _among(data.types))
        return data
    if k is None:
        raise ParameterError(f"the {mechanism} intruder needs k (it reruns MDAV)")
    if data.types.missing == "pattern":
        raise ParameterError(f"the {mechanism} intruder reruns MDAV on complete keys (no --missing pattern)")
    from ..microagg.mdav import mdav_partition

    k = check_k(k, data.n)
    labels = np.empty(data.n, dtype=np.int64)
    offset = 0
    for stratum in np.unique(space.row_stratum):  # each stratum grouped as a file of its own (swap --strata)
        rows = np.flatnonzero(space.row_stratum == stratum)
        Z = data.released_known[rows]  # z-scored on its own (nominal indicators never are), as the swap did
        Z = space.encoding.standardizer(Z).transform(Z) if standardize else Z
        labels[rows] = mdav_partition(np.ascontiguousarray(Z), check_k(k, rows.size)).labels + offset
        offset = int(labels[rows].max()) + 1
    # each distinct tuple -> the group of a row holding it
    tuple_group = np.empty(n_tuples, dtype=np.int64)
    tuple_group[row_tuple] = labels
    data.row_group = labels
    data.target_group = tuple_group[nearest]
    data.groups_note = (f"{offset:,} MDAV groups (k = {k}) rebuilt from the released keys{strata}; each target "
                        "in the group of the released row holding its own key tuple")
    return data


def _among(types: KeyTypes) -> str:
    """What the intruder restricts a target's candidate tuples to (the groups note)."""
    parts = (["in its stratum"] if types.strata else []) + \
        (["lacking at least the keys it lacks, the fewest more, compared on the keys observed in both"]
         if types.missing == "pattern" else [])
    if types.nominal:
        parts.append(f"{', '.join(types.nominal)} compared as categories (distance 1 when they differ)")
    if types.ordinal:
        parts.append(f"{', '.join(c for c, _ in types.ordinal)} compared by z-scored rank")
    return (" (" + "; ".join(parts) + ")") if parts else ""


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


def column_data(original, released, keys, column, rows, mechanism, k, standardize, confidential,
                 strata=()) -> AttackData:
    """The attack on one confidential column of a column-wise release (``mdav-swap-informed``,
    ``ir-swap``; with ``strata``: each stratum grouped as a file of its own, as ``probanon swap
    --strata`` groups it): the keys are released unchanged, so each target's row is the one holding
    its keys; the groups are the blocks ``column`` was permuted in, rebuilt as the intruder can."""
    data = attack_data(original, released, keys, [column], link=rows, strata=strata)
    space = data.space
    nearest, _ = space.nearest()  # keys are released unchanged: each target's own tuple, in its stratum
    _, row_tuple, _ = space.tuples()
    # the released row holding the target's keys: equal tuples matched one to one (keys are released unchanged)
    target_row = np.empty(data.n, dtype=np.int64)
    target_row[np.argsort(nearest, kind="stable")] = np.argsort(row_tuple, kind="stable")
    within = " within strata" if strata else ""
    if mechanism == "ir-swap":
        from ..microagg.ranking import individual_ranking_partition

        row_group = _by_stratum(space.row_stratum, lambda r: individual_ranking_partition(
            -data.released_confidential[r], k, keep_ties=False)[:, 0])
        data.row_group, data.target_group = row_group, row_group[target_row]
        data.groups_note = f"rank blocks of k = {k} consecutive released values of each confidential column{within}"
    else:
        from ..microagg.mdav import mdav_partition

        others = [c for c in original.columns if c in keys or (c in confidential and c != column)]
        X = attack_data(original, original, others).known

        def groups(r):
            Z = Standardizer.fit(X[r]).transform(X[r]) if standardize else X[r]
            return mdav_partition(np.ascontiguousarray(Z), k).labels

        labels = _by_stratum(space.target_stratum, groups)
        data.target_group = labels
        row_group = np.empty(data.n, dtype=np.int64)
        row_group[target_row] = labels  # the row holding person i's keys is in i's group
        data.row_group = row_group
        data.groups_note = (f"MDAV groups (k = {k}) of all other attributes{within}, rerun on the original "
                            "(informed intruder)")
    return data


def _by_stratum(stratum: np.ndarray, partition) -> np.ndarray:
    """Group labels of every record, ``partition(rows)`` run on the rows of each stratum and
    numbered across strata."""
    labels = np.empty(stratum.size, dtype=np.int64)
    offset = 0
    for s in np.unique(stratum):
        rows = np.flatnonzero(stratum == s)
        labels[rows] = np.asarray(partition(rows), dtype=np.int64) + offset
        offset = int(labels[rows].max()) + 1
    return labels

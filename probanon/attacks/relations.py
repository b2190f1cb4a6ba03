"""Deterministic relations between keys and confidential columns, and the intruder who links through
them.

A relation is an equation with small integer coefficients between a few key columns and a few
confidential columns,

.. math::

    \\sum_{a \\in S_x} \\alpha_a x_a \\;=\\; \\sum_{b \\in S_c} \\beta_b c_b, \\qquad
    \\alpha_a, \\beta_b \\in \\{\\pm 1, \\dots, \\pm m\\},\\; |S_x| + |S_c| \\le 3,

normalised so that the first key coefficient is positive (e.g. the CASC census's
``PTOTVAL = PEARNVAL + POTHVAL``). Both sides are compared with the tolerance
``tolerance * max(1, max |value|)`` (exact relations up to rounding; a larger tolerance finds
near-exact ones, e.g. amounts rounded to hundreds).

When such a relation holds, anyone who knows a person's keys computes the left side and finds the
released row whose confidential columns give the same right side, whatever was done to the
keys: neither centroid replacement nor swapping the keys touches the confidential columns.

* :func:`relations_in` searches one table (the audit: do keys and confidential columns of the
  same record satisfy a relation?).
* :class:`RelationLinkage` is the intruder: it searches relations between the targets' keys and
  the released confidential columns without knowing who is who, keeps the most selective one
  that matches most released rows, and links through it.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .setting import AttackData, uniform_in_group

NAME = "deterministic relation"
KNOWS = ("the target's original keys; searches sums and differences of up to 3 key and confidential columns "
         "that agree between the targets and the released rows, and links through the most selective one")
TOLERANCE = 1e-9
MAX_TERMS = 3
CHUNK = 8192


@dataclass(frozen=True)
class Relation:
    """``sum(keys[a] * coef) == sum(confidential[b] * coef)`` for the terms of each side."""

    key_terms: tuple        # ((name, coefficient), ...)
    confidential_terms: tuple

    def __str__(self) -> str:
        return f"{_side(self.key_terms)} = {_side(self.confidential_terms)}"


def _side(terms) -> str:
    out = ""
    for i, (name, coef) in enumerate(terms):
        sign = "-" if coef < 0 else "+"
        size = "" if abs(coef) == 1 else f"{abs(coef)} "
        out += (("-" if coef < 0 else "") if i == 0 else f" {sign} ") + f"{size}{name}"
    return out


def candidate_relations(key_names: list, confidential_names: list, max_terms: int = MAX_TERMS,
                        max_coefficient: int = 1):
    """Every relation with at least one term per side and at most ``max_terms`` terms, as
    ``(key positions, key coefficients, confidential positions, confidential coefficients)``."""
    coefs = [c for m in range(1, max_coefficient + 1) for c in (m, -m)]
    positive = list(range(1, max_coefficient + 1))
    for a in range(1, max_terms):
        for b in range(1, max_terms - a + 1):
            for ka in itertools.combinations(range(len(key_names)), a):
                for cb in itertools.combinations(range(len(confidential_names)), b):
                    for first in positive:
                        for rest in itertools.product(coefs, repeat=a - 1):
                            alpha = (first, *rest)
                            for beta in itertools.product(coefs, repeat=b):
                                yield ka, alpha, cb, beta


def _relation(key_names, confidential_names, ka, alpha, cb, beta) -> Relation:
    return Relation(tuple((key_names[a], int(c)) for a, c in zip(ka, alpha)),
                    tuple((confidential_names[b], int(c)) for b, c in zip(cb, beta)))


def _sides(X, C, ka, alpha, cb, beta) -> tuple[np.ndarray, np.ndarray]:
    return X[:, list(ka)] @ np.asarray(alpha, float), C[:, list(cb)] @ np.asarray(beta, float)


def _match_ranges(values: np.ndarray, sorted_targets: np.ndarray, tol: float) -> tuple[np.ndarray, np.ndarray]:
    """For every value, the range [lo, hi) of ``sorted_targets`` within ``tol`` of it."""
    return (np.searchsorted(sorted_targets, values - tol, side="left"),
            np.searchsorted(sorted_targets, values + tol, side="right"))


class _Sides:
    """The sides ``M[:, cols] @ coefs`` of candidate relations (sorted when ``sort``) with their
    smallest and largest values, each computed once while they fit in ``budget`` bytes (a side
    recurs in many candidates), else again."""

    def __init__(self, M: np.ndarray, sort: bool, budget: int = 2 ** 27):
        self.M, self.sort, self.cache, self.left = M, sort, {}, budget

    def __call__(self, cols: tuple, coefs: tuple) -> tuple[np.ndarray, float, float]:
        key = (cols, coefs)
        if key in self.cache:
            return self.cache[key]
        side = self.M[:, list(cols)] @ np.asarray(coefs, float)
        if self.sort:
            side = np.sort(side)
            out = side, float(side[0]), float(side[-1])
        else:
            out = side, float(side.min()), float(side.max())
        if side.nbytes <= self.left:
            self.cache[key], self.left = out, self.left - side.nbytes
        return out


def _side_tol(tolerance: float, u_min: float, u_max: float, w_min: float, w_max: float) -> float:
    """``tolerance * max(1, max |value|)`` over both sides, from their extremes."""
    return tolerance * max(1.0, abs(u_min), abs(u_max), abs(w_min), abs(w_max))


def _matched_share(sorted_u: np.ndarray, sorted_w: np.ndarray, tol: float, min_share: float) -> float | None:
    """Share of the values ``w`` within ``tol`` of some value ``u`` (both sorted: the first ``u``
    at or above ``w - tol`` is at most ``w + tol``), or None as soon as it cannot reach
    ``min_share`` (``w`` taken in chunks)."""
    n, matched = sorted_w.size, 0
    for start in range(0, n, CHUNK):
        w = sorted_w[start:start + CHUNK]
        first = np.searchsorted(sorted_u, w - tol, side="left")
        inside = first < sorted_u.size
        inside[inside] = sorted_u[first[inside]] <= w[inside] + tol
        matched += int(np.count_nonzero(inside))
        if (matched + n - start - w.size) / n < min_share:
            return None
    return matched / n


@dataclass(frozen=True)
class RelationFound:
    """A relation that holds in one table (the audit's finding).

    ``holds``: records on which both sides agree; ``n``: records; ``singles_out``: records on
    which it holds and whose left side matches the right side of no other record (linking through
    the relation finds them with certainty)."""

    relation: Relation
    holds: int
    n: int
    singles_out: int

    def __str__(self) -> str:
        return (f"{self.relation} on {self.holds:,}/{self.n:,} rows (singles out {self.singles_out:,} records "
                "by value)")


def relations_in(X: np.ndarray, C: np.ndarray, key_names: list, confidential_names: list, *,
                 min_share: float = 0.95, tolerance: float = TOLERANCE, max_terms: int = MAX_TERMS,
                 max_coefficient: int = 1) -> list[RelationFound]:
    """Relations holding, record by record, on at least ``min_share`` of the rows of one table
    (keys ``X``, confidential ``C``) and singling out at least one record; sides that are constant
    are skipped. The strongest (most records singled out) first; a relation whose columns contain
    those of one already listed (e.g. a term added to it) is dropped."""
    n = X.shape[0]
    found = []
    key_side, confidential_side = _Sides(X, sort=False), _Sides(C, sort=False)
    for ka, alpha, cb, beta in candidate_relations(key_names, confidential_names, max_terms, max_coefficient):
        (u, u_min, u_max), (w, w_min, w_max) = key_side(ka, alpha), confidential_side(cb, beta)
        if u_min == u_max or w_min == w_max:  # a constant side
            continue
        tol = _side_tol(tolerance, u_min, u_max, w_min, w_max)
        holds = np.abs(u - w) <= tol
        if holds.sum() < min_share * n:
            continue
        order = np.sort(w)
        lo, hi = _match_ranges(u, order, tol)
        singles = int((holds & (hi - lo == 1)).sum())
        if singles:
            found.append(RelationFound(_relation(key_names, confidential_names, ka, alpha, cb, beta),
                                       int(holds.sum()), n, singles))
    found.sort(key=lambda f: (-f.singles_out, -f.holds, len(f.relation.key_terms) + len(f.relation.confidential_terms)))
    return _drop_implied(found)


def _drop_implied(found: list[RelationFound]) -> list[RelationFound]:
    """Drop a relation whose columns contain those of a stronger-or-equal one already kept."""
    kept = []
    for f in found:
        cols = {name for name, _ in f.relation.key_terms + f.relation.confidential_terms}
        if any({name for name, _ in g.relation.key_terms + g.relation.confidential_terms} <= cols for g in kept):
            continue
        kept.append(f)
    return kept


def numeric_columns(data: AttackData) -> tuple[np.ndarray, list, np.ndarray, list, str]:
    """``(X, key names, C, confidential names, note)``: the numeric keys of the targets and the
    numeric confidential columns of the release that no record lacks, the only ones a relation
    between amounts can hold on; ``note`` names the columns left out, and why ("" when none)."""
    key_cols, key_names = data.numeric_keys()
    conf_cols, conf_names = data.numeric_confidential()
    X, C = data.known[:, key_cols], data.released_confidential[:, conf_cols]
    complete_x, complete_c = ~np.isnan(X).any(axis=0), ~np.isnan(C).any(axis=0)
    categorical = [c for c in data.known_names if c not in key_names] + \
        [c for c in data.confidential_names if c not in conf_names]
    lacking = [c for c, ok in zip(key_names, complete_x) if not ok] + [c for c, ok in zip(conf_names, complete_c) if not ok]
    parts = ([f"{', '.join(categorical)} (not numeric)"] if categorical else []) + \
        ([f"{', '.join(lacking)} (missing values)"] if lacking else [])
    note = f"; numeric columns only: left out {' and '.join(parts)}" if parts else ""
    return (X[:, complete_x], [c for c, ok in zip(key_names, complete_x) if ok], C[:, complete_c],
            [c for c, ok in zip(conf_names, complete_c) if ok], note)


class RelationLinkage:
    """The intruder. For every candidate relation it computes the left side for every target
    (``u_i``) and the right side for every released row (``w_j``) and measures, without the
    truth, ``matched`` = share of released rows whose ``w_j`` equals some ``u_i`` and
    ``selectivity`` = mean over targets of 1/#{j : w_j = u_i} (0 without a match): the success it
    expects when linking uniformly among the matching rows. It keeps the most selective relation
    with ``matched >= min_share``; a target links uniformly to a matching row of its rebuilt group
    (or of the whole release when none there matches), and without a matching row uniformly inside
    its group (no link without groups). Without a relation it is the uniform guess in the group.
    Relations are sums of amounts: it searches the numeric keys and confidential columns that no
    record lacks, and its note names the columns it left out (:func:`numeric_columns`)."""

    name, knows = NAME, KNOWS

    def __init__(self, data: AttackData, *, min_share: float = 0.9, tolerance: float = TOLERANCE,
                 max_terms: int = MAX_TERMS, max_coefficient: int = 1):
        self.data = data
        self.relation, best = None, None
        X, key_names, C, confidential_names, skipped = numeric_columns(data)
        key_side, confidential_side = _Sides(X, sort=True), _Sides(C, sort=True)
        for ka, alpha, cb, beta in candidate_relations(key_names, confidential_names, max_terms, max_coefficient):
            (su, u_min, u_max), (sw, w_min, w_max) = key_side(ka, alpha), confidential_side(cb, beta)
            if u_min == u_max or w_min == w_max:  # a constant side
                continue
            tol = _side_tol(tolerance, u_min, u_max, w_min, w_max)
            matched = _matched_share(su, sw, tol, min_share)
            if matched is None:  # below min_share
                continue
            u, w = _sides(X, C, ka, alpha, cb, beta)
            order = np.argsort(w, kind="stable")
            lo, hi = _match_ranges(u, w[order], tol)
            count = hi - lo
            selectivity = float(np.mean(np.where(count > 0, 1.0 / np.maximum(count, 1), 0.0)))
            if best is None or selectivity > best[0]:
                best = (selectivity, matched, ka, alpha, cb, beta, order, lo, hi)
        if best is None:
            self.note = "no relation matches the release" + skipped
            return
        selectivity, matched, ka, alpha, cb, beta, self.order, self.lo, self.hi = best
        self.by_group = (None if data.row_group is None else
                         np.sort(data.row_group[self.order].astype(np.int64) * data.n + np.arange(data.n)))
        self.relation = _relation(key_names, confidential_names, ka, alpha, cb, beta)
        self.note = (f"links through {self.relation} (matches {matched:.1%} of the released rows; expected "
                     f"success by value alone {selectivity:.3f})" + skipped)

    def links(self, rng: np.random.Generator) -> np.ndarray:
        data = self.data
        out = uniform_in_group(data, np.arange(data.n), rng)
        if self.relation is None:
            return out
        count = self.hi - self.lo
        single = count == 1
        out[single] = self.order[self.lo[single]]
        many = np.flatnonzero(count > 1)
        if many.size == 0:
            return out
        # target i's matching rows are order[lo_i:hi_i]; those of its group g_i are order[p] for the
        # entries g_i n + p of by_group (group n + position, sorted) in [g_i n + lo_i, g_i n + hi_i)
        lo, size = self.lo[many], count[many]
        inside = np.zeros(many.size, dtype=bool)
        if self.by_group is not None:
            base = data.target_group[many].astype(np.int64) * data.n
            first = np.searchsorted(self.by_group, base + lo)
            in_group = np.searchsorted(self.by_group, base + self.hi[many]) - first
            inside = in_group > 0
            size = np.where(inside, in_group, size)
        pick = rng.integers(size)  # the same draws as rng.integers(size_i) for each target in turn
        position = lo + pick
        if inside.any():
            position[inside] = self.by_group[first[inside] + pick[inside]] - base[inside]
        out[many] = self.order[position]
        return out

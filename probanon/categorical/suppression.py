"""Local suppression to k-anonymity over combinations of categorical keys (issue 43, point 2), as
sdcMicro's ``localSuppression`` (R/localSuppression.R) and ``localSupp`` (its risk-threshold
variant), with the fewest suppressed values we can find.

**Problem.** Set key values to missing so that every record's count (:mod:`probanon.frequencies`:
the records sharing its values, with the ``missing`` rule, within ``strata``) is at least ``k`` on
every combination of keys asked (``combinations=None``: all keys together, which implies every
subset; ``m``: every subset of at most m keys). With ``weights`` and ``risk_threshold`` the
condition is instead an individual risk (:func:`probanon.metrics.frequency.individual_risk`, from
the count and the sum of the sampling weights of the matching records) strictly below the
threshold, on each combination. (sdcMicro's ``localSupp`` suppresses one named key in every
record whose risk is at or above the threshold, once; here the same greedy as for k chooses the
cheapest keys per record, and the risk is checked again after.)

**Cost.** Each suppressed value costs its key's weight. ``importance``: a list of the keys, most
important first: every value costs about 1 (the fewest suppressed values), ties between equally
few values broken towards suppressing the less important keys (weights 1 + 0.001 * rank);
``{key: weight}``: the weights themselves. Default (as sdcMicro): keys with fewer categories are
more important, so keys with more categories are suppressed first among equally few values.

**Fast method** (``method="fast"``). Only records that violate are ever suppressed (under
``missing="any"`` a suppression only adds matches, so a record whose class already has k records
stays safe). Per block of keys (all keys, or each combination of exactly m keys: the monotone
counts make the smaller ones follow) the records are taken as distinct tuples with counts, the
unsafe tuples in increasing order of their count (the rarest first, so that a singleton that
suppresses one key to join a class of k - 1 makes that class safe too); each tuple still unsafe
when its turn comes gets the cheapest set of its keys whose suppression makes it safe in the
current state (counted with a hash table of the counts of every kept-key set, numba); then,
with all keys together, a clean-up restores every suppressed value whose restoration keeps every
count safe. The result is checked with the counting core; anything left (none seen, but the
check decides) gets every key suppressed, and under ``missing="category"`` a class of fully
suppressed records too small is completed with records whose classes stay safe. Under
``"category"`` a class is formed by tuples that take the same mask together: the masks go by
levels of equal cost, and within a level the classes that would be safe are taken first where a
member has the fewest such options; a suppression moves a record out of its class, which can
break a combination solved before, so the blocks are passed again until none is violated.

**Exact method** (``method="exact"``, :mod:`probanon.categorical.exact`): an integer program
(HiGHS) for small problems; ``optimal`` and ``lower_bound`` say what it proved.

Note on the rule "a missing value matches any value": a record with all keys suppressed matches
every record, so suppressing all keys of k - 1 violating records makes every record's count
reach k at a cost of (k - 1) * (number of keys) values; the exact program finds such "wildcard"
solutions and the fast method, which suppresses each violating record for its own sake, does not
seek them. Counting a missing value as a category of its own has no such degeneracy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._validation import check_k, check_random_state, check_weights, weights_of
from ..errors import InputError, ParameterError
from ..frequencies import (KViolations, check_combinations, check_rule, key_codes, key_sets, match_counts, row_ids,
                           stratum_codes, violations_of_codes)
from ..metrics.frequency import individual_risk
from ..progress import quiet

#: the methods of :func:`local_suppression`
METHODS = ("fast", "exact")
#: the tie-break step between the weights of an importance list
TIE_STEP = 1e-3
#: clean-up is skipped in a block where (suppressed tuples) x (tuples) exceeds this (its scan)
CLEANUP_LIMIT = 2 * 10 ** 9


@dataclass
class SuppressionResult:
    """What :func:`local_suppression` did: ``data`` (a copy of the input, suppressed key values
    missing), ``suppressed`` (bool DataFrame, one row per record, one column per key: the values
    suppressed; both None from :func:`probanon.distributed.suppression.suppress_parquet`, whose
    records stay on the workers), ``n_suppressed`` ({key: count}), ``total``, ``violations_before`` /
    ``violations_after`` (:class:`probanon.frequencies.KViolations`; with a risk threshold the
    records at or above it), ``k``, ``combinations``, ``missing``, ``method``, ``optimal`` (exact:
    whether HiGHS proved the optimum; fast: None), ``lower_bound`` (exact: HiGHS's bound on the
    weighted cost, else None), ``cost`` (the weighted cost: sum of the key weights of the
    suppressed values), ``weights_per_key``, ``risk_threshold``."""

    data: pd.DataFrame
    suppressed: pd.DataFrame
    n_suppressed: dict
    total: int
    violations_before: KViolations
    violations_after: KViolations
    k: int
    combinations: int | None
    missing: str
    method: str
    optimal: bool | None
    lower_bound: float | None
    cost: float
    weights_per_key: dict
    risk_threshold: float | None = None

    def lines(self) -> list:
        """Short text: what was suppressed and the violations before and after."""
        per_key = ", ".join(f"{c} {n:,}" for c, n in self.n_suppressed.items())
        out = [f"{self.total:,} key values suppressed ({per_key}) by the {self.method} method",
               f"violating records: {self.violations_before.total:,} before, {self.violations_after.total:,} after"]
        if self.optimal is not None:
            out.append("the optimum (proved)" if self.optimal else
                       f"not proved optimal; lower bound on the cost {self.lower_bound:,.2f}")
        return out


def key_weights(data: pd.DataFrame, keys: list, importance) -> np.ndarray:
    """The cost of suppressing one value of each key (module docstring, "Cost")."""
    cards = None if importance is not None else [data[c].nunique(dropna=True) for c in keys]
    return weights_for(keys, importance, cards)


def weights_for(keys: list, importance, categories) -> np.ndarray:
    """:func:`key_weights` from the keys' numbers of ``categories`` (used only without ``importance``)."""
    m = len(keys)
    if isinstance(importance, dict):
        unknown = [c for c in importance if c not in keys]
        if unknown or set(importance) != set(keys):
            raise InputError(f"importance: {unknown[0]!r} is not a key" if unknown else
                             f"importance: give a weight for every key (missing {sorted(set(keys) - set(importance))})")
        w = np.array([importance[c] for c in keys], dtype=object)
        try:
            w = w.astype(np.float64)
        except (TypeError, ValueError):
            raise InputError("importance: every weight must be a number > 0") from None
        if not (np.isfinite(w) & (w > 0)).all():
            raise InputError("importance: every weight must be a number > 0")
        return w
    if importance is None:  # sdcMicro: fewer categories = more important
        ranked = sorted(range(m), key=lambda i: (categories[i], i))
    else:
        order = [importance] if isinstance(importance, str) else list(importance)
        if sorted(map(str, order)) != sorted(map(str, keys)) or len(set(order)) != len(order):
            raise InputError("importance: list every key once, most important first")
        ranked = [keys.index(c) for c in order]
    w = np.empty(m)
    for rank, i in enumerate(ranked):
        w[i] = 1.0 + TIE_STEP * (m - 1 - rank)  # the most important costs most
    return w


def _candidates(weights: np.ndarray) -> np.ndarray:
    """Every non-empty mask of the block's keys, by increasing cost (then fewer keys)."""
    q = weights.size
    masks = np.arange(1, 1 << q, dtype=np.int64)
    bits = (masks[:, None] >> np.arange(q)) & 1
    cost = bits @ weights
    return masks[np.lexsort((bits.sum(axis=1), cost))]


def _unsafe(f, F, k, threshold):
    if threshold is None:
        return f < k
    return individual_risk(f, F) >= threshold


def layout(cards, block, n_strata: int):
    """The mixed-radix code of a record's tuple on ``block`` (positions of keys) with its stratum:
    stratum * span + sum of digit * place, a key's digit its code, a missing value the digit
    radix - 1. Returns (radix, place, span); a code range that int64 cannot hold (with the room
    the kernel's table needs for the kept-key sets) is an :class:`InputError`."""
    radix = np.asarray([cards[b] + 1 for b in block], dtype=np.int64)
    span = int(np.prod(radix.astype(object)))
    if n_strata * span * (1 << len(block)) >= 1 << 62:
        raise InputError("too many combinations of key values to index in one block; ask for k-anonymity on "
                         "smaller combinations (combinations=) or recode the keys first")
    place = np.concatenate([[1], np.cumprod(radix)[:-1]]).astype(np.int64)
    return radix, place, span


def tuple_codes(codes, block, stratum, radix, place, span) -> np.ndarray:
    """Per record the int64 code of its tuple on ``block`` (:func:`layout`); ``stratum`` None or
    one code per record."""
    code = np.zeros(codes.shape[0], dtype=np.int64) if stratum is None else np.asarray(stratum, dtype=np.int64) * span
    for j, key in enumerate(block):
        column = codes[:, key].astype(np.int64)
        column[column < 0] = radix[j] - 1
        code += column * place[j]
    return code


def solve_block(code_t, counts_t, wsum_t, radix, place, span, weights, k, threshold, category, cleanup, rng):
    """The greedy of one block (module docstring, "Fast method") on its distinct tuples: their
    codes (:func:`tuple_codes`) in order of first appearance, their record counts and weight sums
    (zeros without a risk threshold); ``weights`` the block's key weights. Returns per tuple the
    mask of the block's keys it suppresses (bit j: the block's j-th key), or None when the block
    has no unsafe tuple. Only tuples are seen here, never records: the records can be anywhere
    (in this process, or on Dask workers: :mod:`probanon.distributed.suppression`)."""
    from ._suppression_kernel import cleanup_block, suppress_block

    U = code_t.size
    strata_t = (code_t // span) * span
    digits = np.ascontiguousarray(((code_t - strata_t)[:, None] // place) % radix)
    orig = digits.copy()
    tie = (rng.permutation(U) if rng is not None else np.arange(U)).astype(np.int64)
    candidates = _candidates(weights)
    thr = 0.0 if threshold is None else float(threshold)
    if category:  # distinct tuples are the classes
        unsafe = np.flatnonzero(_unsafe(counts_t, wsum_t, k, threshold))
        if not unsafe.size:
            return None
        order = unsafe[np.lexsort((tie[unsafe], counts_t[unsafe]))]
        added, moved = _category_block(digits, strata_t, counts_t, wsum_t, radix, order, candidates,
                                       _mask_costs(candidates, weights), k, threshold)
        capacity = _capacity(2 * U)
    else:
        n_strata = int(code_t.max()) // span + 1
        capacity = _capacity(_entries(radix, n_strata, 2 * U))
        added, order = suppress_block(digits, strata_t, counts_t, wsum_t, radix, place, tie, candidates, k, thr,
                                      capacity)
        if not order.size:
            return None
        moved = order[added[order] != 0]
    if cleanup and moved.size and moved.size * U <= CLEANUP_LIMIT:
        cleanup_block(digits, orig, strata_t, counts_t, wsum_t, radix, place, moved, added, k, thr, category,
                      capacity)
    return added


def mask_bits(added, q: int) -> np.ndarray:
    """The bool matrix (rows x q) of the masks ``added``."""
    return ((added[:, None] >> np.arange(q)) & 1).astype(bool)


def _entries(radix, n_strata, tuples):
    """A bound on the entries of the kernel's table: per kept-key set R, at most the tuples, at
    most the value combinations of R (missing included) times the strata."""
    q = radix.size
    total = 0
    for R in range(1 << q):
        span = n_strata
        for x in range(q):
            if (R >> x) & 1:
                span *= int(radix[x])
                if span > tuples:
                    break
        total += min(span, tuples)
    return total


def _capacity(entries):
    return 1 << int(np.ceil(np.log2(max(16, entries * 1.6))))


def _category_block(digits, strata_t, counts_t, wsum_t, radix, order, candidates, cost, k, threshold):
    """The greedy of one block under "a missing value is a category". The suppression masks are
    taken by levels of equal cost (rounded to 0.1: with an importance list, the masks of one size);
    within a level, the classes the unsafe tuples would form (or join) with each mask are listed,
    those that would be safe are taken first where a member has the fewest such options (then the
    cheaper mask, then the larger class), each with its members not yet taken when they still
    make it safe; the level is repeated until it takes none. Returns (mask per tuple, tuples moved
    in order)."""
    U, q = digits.shape
    added = np.zeros(U, dtype=np.int64)
    waiting = np.zeros(U, dtype=bool)
    waiting[order] = True
    moved = []
    levels = np.round(cost, 1)
    for level in np.unique(levels):
        masks = candidates[levels == level]
        while waiting.any():
            taken = _category_level(digits, strata_t, counts_t, wsum_t, radix, waiting, masks, k, threshold)
            if not taken:
                break
            for S, go in taken:
                new = digits[go].copy()
                bits = ((S >> np.arange(q)) & 1).astype(bool)
                new[:, bits] = radix[bits] - 1
                changed = (digits[go] != new).any(axis=1)
                added[go] |= np.where(changed, S & ~_masks(digits[go], radix), 0)
                digits[go] = new
                waiting[go] = False
                moved.append(go[changed])
    return added, (np.concatenate(moved) if moved else np.zeros(0, dtype=np.int64)).astype(np.int64)


def _category_level(digits, strata_t, counts_t, wsum_t, radix, waiting, masks, k, threshold):
    """One pass of a level of :func:`_category_block`: [(mask, tuples taking it)]."""
    q = digits.shape[1]
    idx = np.flatnonzero(waiting)
    rest = np.flatnonzero(~waiting)
    groups = []  # per mask: class id of each waiting tuple, existing records and weight per class, feasible
    feasible = np.zeros((masks.size, idx.size), dtype=bool)
    for a, S in enumerate(masks):
        bits = ((S >> np.arange(q)) & 1).astype(bool)
        new = digits[idx].copy()
        new[:, bits] = radix[bits] - 1
        ids = _ids(np.column_stack([np.concatenate([strata_t[idx], strata_t[rest]]),
                                    np.concatenate([new, digits[rest]])]))
        g = int(ids.max()) + 1
        c_all = np.concatenate([counts_t[idx], counts_t[rest]])
        w_all = np.concatenate([wsum_t[idx], wsum_t[rest]])
        total = np.bincount(ids, weights=c_all, minlength=g)
        weight = np.bincount(ids, weights=w_all, minlength=g)
        mine = ids[:idx.size]
        feasible[a] = ~_unsafe(total[mine].astype(np.int64), weight[mine], k, threshold)
        existing = total - np.bincount(mine, weights=counts_t[idx], minlength=g)
        existing_w = weight - np.bincount(mine, weights=wsum_t[idx], minlength=g)
        groups.append((mine, existing, existing_w))
    if not feasible.any():
        return []
    options = feasible.sum(axis=0)
    rows = []  # (priority, mask position, -size, class, members)
    for a in range(masks.size):
        mine, existing, _ = groups[a]
        members = np.flatnonzero(feasible[a])
        if not members.size:
            continue
        cls = mine[members]
        sort = np.argsort(cls, kind="stable")
        cls, members = cls[sort], members[sort]
        cuts = np.flatnonzero(np.diff(cls)) + 1
        for part in np.split(np.arange(members.size), cuts):
            who = members[part]
            rows.append((int(options[who].min()), a, -int(counts_t[idx[who]].sum()), int(cls[part[0]]), who))
    rows.sort(key=lambda r: r[:3])
    free = np.ones(idx.size, dtype=bool)
    taken = []
    for _, a, _, c, who in rows:
        who = who[free[who]]
        if not who.size:
            continue
        _, existing, existing_w = groups[a]
        f = int(existing[c] + counts_t[idx[who]].sum())
        F = float(existing_w[c] + wsum_t[idx[who]].sum())
        if _unsafe(np.array([f]), np.array([F]), k, threshold)[0]:
            continue
        free[who] = False
        taken.append((int(masks[a]), idx[who]))
    return taken


def _mask_costs(masks, weights):
    return ((masks[:, None] >> np.arange(weights.size)) & 1) @ weights


def _masks(digits, radix):
    """The mask of missing keys of each tuple."""
    return (((digits == radix - 1).astype(np.int64)) << np.arange(digits.shape[1])).sum(axis=1)


def _ids(rows):
    return row_ids(rows)


class _Records:
    """The records of :func:`local_suppression` in this process, for :func:`greedy`: their
    current codes and what is suppressed."""

    def __init__(self, codes, stratum, w):
        self.codes, self.stratum, self.w = codes.copy(), stratum, w
        self.suppressed = np.zeros(codes.shape, dtype=bool)

    def step(self, block, lay, weights, k, threshold, category, cleanup, rng) -> bool:
        """One block of the greedy: the distinct tuples of ``block`` (layout ``lay``) in order of
        first appearance with their counts, :func:`solve_block`, every record suppressing its
        tuple's mask; False when the block had no unsafe tuple."""
        from .._frequency_kernel import distinct

        code = tuple_codes(self.codes, block, self.stratum, *lay)
        first, of = distinct(code)
        U = first.size
        counts = np.bincount(of, minlength=U).astype(np.int64)
        wsum = np.bincount(of, weights=self.w, minlength=U) if threshold is not None else np.zeros(U)
        added = solve_block(code[first], counts, wsum, *lay, weights, k, threshold, category, cleanup, rng)
        if added is None:
            return False
        bits = mask_bits(added, len(block))[of]
        for j, key in enumerate(block):
            self.suppressed[:, key] |= bits[:, j]
            self.codes[bits[:, j], key] = -1
        return True


def greedy(records, cards, weights, k, combinations, category, n_strata, threshold, rng, progress):
    """The fast method (module docstring) block after block on ``records``: :class:`_Records`, or
    the partitions on Dask workers (:mod:`probanon.distributed.suppression`), anything with
    ``step`` (one block: its tables, :func:`solve_block` with the generator ``rng``, the masks
    applied; whether the block had an unsafe tuple)."""
    m = len(cards)
    order = np.argsort(-weights, kind="stable")  # most important first inside a block
    sets = key_sets(m, combinations)
    largest = max(len(x) for x in sets)
    blocks = [sorted(x, key=lambda i: int(np.flatnonzero(order == i)[0])) for x in sets if len(x) == largest]
    passes = 1 if not category or len(blocks) == 1 else 6
    for p in range(passes):
        changed = False
        for b, block in enumerate(blocks):
            progress("local suppression", p * len(blocks) + b, passes * len(blocks))
            changed |= records.step(block, layout(cards, block, n_strata), weights[block], k, threshold, category,
                                    len(blocks) == 1, rng)
        if not changed:
            break
    progress("local suppression", passes * len(blocks), passes * len(blocks))


def _fast(codes, cards, weights, k, combinations, category, stratum, w, threshold, rng, progress):
    """The fast method on integer codes: returns the bool matrix of suppressed values."""
    records = _Records(codes, stratum, w)
    n_strata = 1 if stratum is None else int(stratum.max()) + 1
    greedy(records, cards, weights, k, combinations, category, n_strata, threshold, rng, progress)
    return records.suppressed


def _left(codes, k, combinations, missing, stratum, w, threshold):
    """Per record: still unsafe on some combination."""
    if threshold is None:
        return violations_of_codes(codes, list(range(codes.shape[1])), k, combinations=combinations,
                                   missing=missing, strata=stratum).violating
    bad = np.zeros(codes.shape[0], dtype=bool)
    for s in key_sets(codes.shape[1], combinations):
        f, F = match_counts(codes[:, list(s)], missing=missing, strata=stratum, weights=w)
        bad |= _unsafe(f, F, k, threshold)
    return bad


def _fall_back(codes, suppressed, k, combinations, missing, stratum, w, threshold):
    """Suppress every key of the records still unsafe (the check decides); under "category"
    complete a too small class of fully suppressed records with records whose classes stay safe."""
    for _ in range(codes.shape[0] + 1):
        bad = _left(codes, k, combinations, missing, stratum, w, threshold)
        if not bad.any():
            return
        if missing == "any" or threshold is not None:
            fresh = bad & (codes >= 0).any(axis=1)
            if not fresh.any():
                break
            suppressed[fresh] |= codes[fresh] >= 0
            codes[fresh] = -1
            continue
        # "category": the fully suppressed records are one class per stratum
        empty = (codes < 0).all(axis=1)
        target = bad & ~empty
        if target.any():
            suppressed[target] |= codes[target] >= 0
            codes[target] = -1
            continue
        # a class of fully suppressed records below k: add the record of its stratum with most slack
        row = int(np.flatnonzero(bad)[0])
        pool = ~empty if stratum is None else (~empty & (stratum == stratum[row]))
        slack = np.full(codes.shape[0], np.iinfo(np.int64).max)
        for s in key_sets(codes.shape[1], combinations):
            f, _ = match_counts(codes[:, list(s)], missing=missing, strata=stratum)
            slack = np.minimum(slack, f)
        slack[~pool] = -1
        if not pool.any():
            break
        pick = int(np.argmax(slack))  # the safest record; one it breaks is suppressed in its turn
        suppressed[pick] |= codes[pick] >= 0
        codes[pick] = -1
    raise InputError("the condition cannot be reached even with every key value suppressed "
                     + ("(the risk threshold is below what a fully suppressed record has)" if threshold is not None
                        else "(a stratum with fewer than k records?)"))


def local_suppression(data: pd.DataFrame, keys: list, k: int = 3, *, combinations: int | None = None,
                      importance=None, strata=None, missing: str = "any", weights=None,
                      risk_threshold: float | None = None, method: str = "fast", random_state=None,
                      progress=None) -> SuppressionResult:
    """Suppress key values of ``data`` so that every record is k-anonymous on ``keys`` (module
    docstring: the problem, the cost, the methods, the missing-value rule).

    ``combinations``: None (all keys together) or m (every subset of at most m keys);
    ``importance``: list of keys most important first, or {key: weight}; ``strata``: column names,
    k within each stratum; ``missing``: "any" (sdcMicro's counting) or "category"; ``weights``
    (a column name or n values) with ``risk_threshold``: the individual risk below the threshold
    instead of k; ``method``: "fast" or "exact"; ``random_state``: breaks ties of the fast method's
    order (None: the order of the records); ``progress``: the progress callback."""
    if not isinstance(data, pd.DataFrame):
        raise InputError("data must be a pandas DataFrame")
    keys = [keys] if isinstance(keys, str) else list(keys)
    strata_list = [strata] if isinstance(strata, str) else list(strata or [])
    absent = [c for c in keys + strata_list if c not in data.columns]
    if not keys or absent:
        raise InputError(f"column {absent[0]!r} is not in the table" if absent else "no key column")
    if len(set(keys)) != len(keys) or set(keys) & set(strata_list):
        raise InputError("a key is named twice (or is also a stratum)")
    if len(data) == 0:
        raise InputError("the table has no records")
    k = check_k(k, len(data))
    check_rule(missing)
    combinations = check_combinations(combinations, len(keys))
    if method not in METHODS:
        raise ParameterError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if method == "exact" and weights is not None:
        raise ParameterError("the exact method takes k, not a risk threshold")
    if (weights is None) != (risk_threshold is None):
        raise ParameterError("weights and risk_threshold go together (the individual risk needs both)")
    w = None
    if weights is not None:
        w = weights_of(data, weights) if isinstance(weights, str) else check_weights(weights, len(data))
        if isinstance(risk_threshold, bool) or not isinstance(risk_threshold, (int, float)) \
                or not 0 < risk_threshold <= 1:
            raise ParameterError(f"risk_threshold must be a number in (0, 1], got {risk_threshold!r}")
        risk_threshold = float(risk_threshold)
    cost = key_weights(data, keys, importance)
    rng = None if random_state is None else check_random_state(random_state)
    stratum = stratum_codes(data, strata_list)
    if stratum is not None and risk_threshold is None:
        small = np.bincount(stratum) < k
        if small.any():
            raise InputError(f"a stratum holds fewer than k = {k} records: k-anonymity cannot be reached in it")
    progress = quiet if progress is None else progress
    codes = key_codes(data, keys)
    cards = [int(codes[:, i].max(initial=-1)) + 1 for i in range(len(keys))]
    before = _report(codes, keys, k, combinations, missing, stratum, w, risk_threshold)
    progress("local suppression", 0, None)
    optimal = lower = None
    if method == "exact":
        from .exact import exact_suppression

        suppressed, optimal, lower = exact_suppression(codes, cost, k, combinations=combinations, missing=missing,
                                                       strata=stratum)
    else:
        suppressed = _fast(codes, cards, cost, k, combinations, missing == "category", stratum, w, risk_threshold,
                           rng, progress)
    final = codes.copy()
    final[suppressed] = -1
    after = _report(final, keys, k, combinations, missing, stratum, w, risk_threshold)
    if method == "fast" and after.total:
        _fall_back(final, suppressed, k, combinations, missing, stratum, w, risk_threshold)
        after = _report(final, keys, k, combinations, missing, stratum, w, risk_threshold)
    out = suppressed_frame(data, keys, suppressed)
    frame = pd.DataFrame(suppressed, index=data.index, columns=keys)
    return SuppressionResult(data=out, suppressed=frame, n_suppressed={c: int(suppressed[:, i].sum())
                                                                        for i, c in enumerate(keys)},
                             total=int(suppressed.sum()), violations_before=before, violations_after=after, k=k,
                             combinations=combinations, missing=missing, method=method, optimal=optimal,
                             lower_bound=lower, cost=float((suppressed * cost).sum()),
                             weights_per_key=dict(zip(keys, map(float, cost))), risk_threshold=risk_threshold)


def suppressed_frame(data: pd.DataFrame, keys: list, suppressed: np.ndarray) -> pd.DataFrame:
    """A copy of ``data`` with the values ``suppressed`` (bool, one column per key) missing, set
    by position (an index with repeated labels changes only those records); integer and boolean
    keys with a suppressed value become pandas' nullable types."""
    out = data.copy()
    for i, c in enumerate(keys):
        rows = np.flatnonzero(suppressed[:, i])
        if rows.size:
            kind = out[c].dtype.kind
            if kind in "iub":
                out[c] = out[c].astype("boolean" if kind == "b" else "Int64")
            out.iloc[rows, out.columns.get_loc(c)] = pd.NA if kind in "iub" else np.nan
    return out


def suppression_promise(k: int, keys: list, strata, combinations, missing: str):
    """What a local suppression promises (``suppress``, one process or Dask): k-anonymity over
    every combination of at most ``combinations`` keys (None: all keys together, which implies
    every subset) with the ``missing`` rule, within the released ``strata``
    (:func:`probanon.release.combination_promise`)."""
    from ..release import combination_promise

    size = len(keys) if combinations is None else min(int(combinations), len(keys))
    mechanism = f"local suppression (k = {k}, " + (f"every combination of up to {size} keys" if size < len(keys)
                                                  else "all keys") + f", a missing value {RULES[missing]})"
    return combination_promise(k, keys, combinations, mechanism, missing=missing, strata=strata)


#: the missing-value rules in words
RULES = {"any": "matching any value", "category": "a category of its own"}


def _report(codes, keys, k, combinations, missing, stratum, w, threshold) -> KViolations:
    """The violations (k), or with a risk threshold the records at or above it per combination
    (in the same :class:`KViolations` form, ``records`` counting them)."""
    if threshold is None:
        return violations_of_codes(codes, keys, k, combinations=combinations, missing=missing, strata=stratum)
    sets = key_sets(len(keys), combinations)
    records, classes = [], []
    violating = np.zeros(codes.shape[0], dtype=bool)
    for s in sets:
        sub = codes[:, list(s)]
        f, F = match_counts(sub, missing=missing, strata=stratum, weights=w)
        bad = _unsafe(f, F, k, threshold)
        records.append(int(bad.sum()))
        classes.append(int(row_ids(sub[bad] + 1).max()) + 1 if bad.any() else 0)
        violating |= bad
    return KViolations(k=k, missing=missing, combinations=tuple(tuple(keys[i] for i in s) for s in sets),
                       records=tuple(records), classes=tuple(classes), total=int(violating.sum()),
                       n=codes.shape[0], violating=violating)


__all__ = ["METHODS", "SuppressionResult", "greedy", "key_weights", "layout", "local_suppression", "mask_bits",
           "solve_block", "suppressed_frame", "suppression_promise", "tuple_codes", "weights_for"]

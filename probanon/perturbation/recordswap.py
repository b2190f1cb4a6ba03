"""Targeted record swapping of households between geographic areas, the method of the 2021 EU
census, as sdcMicro's ``recordSwap`` (R/recordSwap.R, src/recordSwap/recordSwap.cpp,
``recordSwap``, ``setRisk``, ``setLevels``, ``distributeDraws``, ``randSample``, ``sampleDonor``).

``hierarchy`` lists the geographic levels from the top (e.g. NUTS1 > NUTS2 > NUTS3). For level h
a record's cell is its values of ``risk_variables`` and of the levels 0..h; its risk is 1 / the
number of records of its cell, and a household's risk at h is the largest of its members'
(``setRisk``). A household is **risky at level h** when that count is below ``k`` at h and at
no level above (``setLevels``, threshold 1/k; k = 0: none is risky).

1. The swap budget: ``H * swaprate / 2`` swaps (pairs; rounded up or down by a fair coin when not
   whole), shared among the areas of the lowest level in proportion to their households (the
   fractional parts given, one each, to areas drawn at random; ``distributeDraws``).
2. Levels from the top down; at level h, per area: the households risky at h that are not yet
   swapped; at the lowest level also, beyond them, a sample of the area's budget minus the swaps
   its households already started (weighted by their risk at the lowest level, without
   replacement, the exponential-key method of ``randSample``).
3. Each such household takes as donor the household, not yet swapped, of **another area of level
   h** that has its values of the first similarity profile (e.g. household size) and the highest
   key risk_h / Exp(1) (``sampleDonor``: risky households are likelier donors); when none has, the
   next profile; when no profile finds one, the household stays (counted in ``unmatched``).
4. The two households exchange their geography (every level) and the ``carry_along`` columns,
   member by member; households swap as wholes.

What it keeps (checked before a release is written): every household keeps its members and
its members one geography; the number of households of every area at every level (each swap
gives an area one household for one); the similarity profile's values of every household
(donor and receiver share them), so with household size in every profile also the number of
records of every area. The geography-by-profile table of households is kept at the levels
above the one where each swap was made.

Households are the ``household`` column's (:func:`probanon.release.household_codes`); the
geography and carry-along columns must be constant within a household (sdcMicro warns and
takes the first member's; here refused).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from numba import njit

from .._validation import check_random_state
from ..errors import GuaranteeError, InputError, ParameterError
from ..release import column_list, household_codes


@dataclass(frozen=True)
class RecordSwapResult:
    """A record swap. ``released`` the table (input's columns, rows and index) with the geography
    and carry-along columns swapped; ``partner`` (H,) the household each household was swapped with
    (itself when not swapped; households numbered as :func:`probanon.release.household_codes`);
    ``swap_level`` (H,) the level at which it was swapped (-1: not); ``target_pairs`` the budget of
    swaps, ``pairs`` the swaps made, ``households``/``households_swapped``/``records_swapped``;
    ``risky_before``/``risky_after`` the households risky at some level in the input and the
    release; ``unmatched`` households that needed a swap and found no donor; ``shortfall`` swaps
    of the budget that areas could not start (too few households left)."""

    released: pd.DataFrame
    partner: np.ndarray
    swap_level: np.ndarray
    hierarchy: list
    carry_along: list
    swaprate: float
    k: int
    target_pairs: int
    pairs: int
    households: int
    households_swapped: int
    records_swapped: int
    risky_before: int
    risky_after: int
    unmatched: int
    shortfall: int

    @property
    def rate(self) -> float:
        """The share of households swapped."""
        return self.households_swapped / self.households if self.households else 0.0


def _codes(frame: pd.DataFrame, columns: list) -> np.ndarray:
    """One integer code per distinct combination of ``columns`` (missing values a value)."""
    if not columns:
        return np.zeros(len(frame), np.int64)
    return frame.groupby(columns, dropna=False, sort=True, observed=True).ngroup().to_numpy(np.int64)


def household_risk(frame: pd.DataFrame, hh: np.ndarray, n_households: int, hierarchy: list,
                   risk_variables: list) -> np.ndarray:
    """(H, levels) the risk of each household at each level: the largest 1 / count of its members'
    cells (risk variables and levels 0..h; ``setRisk``)."""
    risk = np.zeros((n_households, len(hierarchy)))
    for h in range(len(hierarchy)):
        counts = frame.groupby(risk_variables + hierarchy[:h + 1], dropna=False, sort=False,
                               observed=True)[hierarchy[0]].transform("size").to_numpy(np.float64)
        np.maximum.at(risk[:, h], hh, 1.0 / counts)
    return risk


def risky_levels(risk: np.ndarray, k: int) -> np.ndarray:
    """The level each household must be swapped across (the first level whose count is below k),
    or the number of levels when none (``setLevels`` with threshold 1/k; k = 0: none)."""
    levels = np.full(risk.shape[0], risk.shape[1], np.int64)
    if k <= 0:
        return levels
    over = risk > 1.0 / k
    first = over.argmax(axis=1)
    levels[over.any(axis=1)] = first[over.any(axis=1)]
    return levels


@njit(cache=True)
def _donor(s, area, used, gid, order, end, ptr):
    """The donor of household s: the first household of its profile group (``order`` sorted by
    decreasing key within a group; profiles tried in turn, ``gid[p, s]`` the group of s in profile
    p, ``ptr``/``end`` the group's first household not known used and its end) not yet used and
    not of s's area; -1 when none."""
    for p in range(gid.shape[0]):
        g = gid[p, s]
        while ptr[g] < end[g] and used[order[ptr[g]]]:
            ptr[g] += 1
        i = ptr[g]
        while i < end[g]:
            c = order[i]
            if not used[c] and area[c] != area[s]:
                return c
            i += 1
    return -1


@njit(cache=True)
def _swap_areas(cand, area_start, budget, must, area, used, failed, gid, order, end, ptr, partner, level,
                initiator, h):
    """Area by area (``cand[area_start[a]:area_start[a + 1]]`` its households in sampling order):
    every household of ``must`` not yet used seeks a donor, then the others in order until the
    area has started ``budget[a]`` swaps (``randSample`` then ``sampleDonor``, the sample drawn
    among the households still free when the area's turn comes). Returns the budget left
    unmet."""
    short = 0
    for a in range(area_start.size - 1):
        made = 0
        for risky in (True, False):  # the risky households first, then the others up to the budget
            for i in range(area_start[a], area_start[a + 1]):
                if not risky and made >= budget[a]:
                    break
                s = cand[i]
                if must[s] != risky or used[s] or failed[s]:
                    continue
                d = _donor(s, area, used, gid, order, end, ptr)
                if d < 0:
                    failed[s] = True
                    continue
                used[s] = True
                used[d] = True
                partner[s] = d
                partner[d] = s
                level[s] = h
                level[d] = h
                initiator[s] = True
                made += 1
        if made < budget[a]:
            short += budget[a] - made
    return short


def _budget(areas_size: np.ndarray, total: int, rng) -> np.ndarray:
    """``total`` swaps shared among areas in proportion to their sizes: floors, then one more to
    round(sum of the fractions) areas drawn at random among those with a fraction
    (``distributeDraws``)."""
    share = areas_size / areas_size.sum() * total
    draws = np.floor(share).astype(np.int64)
    frac = share - draws
    extra = int(round(frac.sum()))
    if extra:
        candidates = np.flatnonzero(frac > 0)
        draws[rng.choice(candidates, size=min(extra, candidates.size), replace=False)] += 1
    return draws


def _constant_within(frame: pd.DataFrame, hh: np.ndarray, columns: list, what: str) -> None:
    for c in columns:
        codes = pd.factorize(frame[c], use_na_sentinel=False)[0]
        first = np.full(hh.max() + 1, -1, np.int64)
        first[hh[::-1]] = codes[::-1]
        bad = first[hh] != codes
        if bad.any():
            raise InputError(f"{what} column {c!r} differs within a household ({frame.index[int(bad.argmax())]!r} "
                             "and another member of its household): it must hold one value per household")


def record_swap(data: pd.DataFrame, household: str, hierarchy, *, similar=(), swaprate: float = 0.05,
                k: int = 3, risk_variables=(), carry_along=(), random_state=None, progress=None) -> RecordSwapResult:
    """Targeted record swapping of ``data``'s households (see the module docstring).

    ``household``: the household-id column; ``hierarchy``: geographic columns from the top level;
    ``similar``: similarity profiles, a list of lists of household-level columns (one list: one
    profile; empty: any household can be a donor); ``swaprate`` in [0, 1]: the share of households
    to swap (each swap moves two); ``k``: households whose cell (risk variables and geography) at
    some level holds fewer than k records are swapped first, across that level (0: none);
    ``carry_along``: columns that move with the geography; ``random_state``: seed or Generator;
    ``progress``: ``progress(stage, done, total)`` per level."""
    if not isinstance(data, pd.DataFrame):
        raise InputError("record swapping needs a table (DataFrame) with the household and geography columns")
    hierarchy, risk_variables = column_list(hierarchy), column_list(risk_variables)
    carry_along = [c for c in column_list(carry_along) if c not in hierarchy]
    profiles = [column_list(p) for p in (similar if similar and not isinstance(similar[0], str) else [similar])]
    profiles = [p for p in profiles if p] or [[]]
    if not hierarchy:
        raise ParameterError("name at least one geographic level (hierarchy)")
    for c in [household] + hierarchy + risk_variables + carry_along + [c for p in profiles for c in p]:
        if c not in data.columns:
            raise InputError(f"column {c!r} is not in the table")
    if len(set(hierarchy)) != len(hierarchy):
        raise ParameterError("a geographic level is named twice")
    if household in hierarchy + carry_along + risk_variables:
        raise ParameterError(f"the household column {household!r} cannot also be swapped or a risk variable")
    if isinstance(swaprate, bool) or not isinstance(swaprate, (int, float, np.floating)) or not 0 <= swaprate <= 1:
        raise ParameterError(f"swaprate must be a share in 0..1, got {swaprate!r}")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 0:
        raise ParameterError(f"k must be an integer >= 0, got {k!r}")
    for c in hierarchy:
        if data[c].isna().any():
            raise InputError(f"the geographic column {c!r} has a missing value at {data.index[int(data[c].isna().to_numpy().argmax())]!r}")
    hh = household_codes(data[household], name=household)
    H = int(hh.max()) + 1
    _constant_within(data, hh, hierarchy, "geographic")
    _constant_within(data, hh, carry_along, "carry-along")
    _constant_within(data, hh, sorted({c for p in profiles for c in p}), "similarity")
    rng = check_random_state(random_state)
    progress = progress or (lambda stage, done, total: None)
    frame = data.reset_index(drop=True)
    rep = np.full(H, -1, np.int64)
    rep[hh[::-1]] = np.arange(len(frame))[::-1]  # first member of each household
    heads = frame.iloc[rep].reset_index(drop=True)
    risk = household_risk(frame, hh, H, hierarchy, risk_variables)
    levels = risky_levels(risk, k)
    L = len(hierarchy)
    area = np.stack([_codes(heads, hierarchy[:h + 1]) for h in range(L)])
    lowest = area[L - 1]
    n_lowest = int(lowest.max()) + 1
    target = int(np.ceil(H * swaprate / 2) if rng.integers(2) == 0 else np.floor(H * swaprate / 2))
    draws = _budget(np.bincount(lowest, minlength=n_lowest).astype(np.float64), target, rng)
    # profile groups: one global group id per (profile, profile values)
    gid = np.empty((len(profiles), H), np.int64)
    offset = 0
    for p, cols in enumerate(profiles):
        codes = _codes(heads, cols)
        gid[p] = codes + offset
        offset += int(codes.max()) + 1
    used, failed = np.zeros(H, np.bool_), np.zeros(H, np.bool_)
    partner, level = np.arange(H, dtype=np.int64), np.full(H, -1, np.int64)
    initiator = np.zeros(H, np.bool_)  # the household of a pair that sought the donor
    started = np.zeros(n_lowest, np.int64)  # swaps started by each lowest area's households
    shortfall = 0
    for h in range(L):
        progress("levels", h, L)
        key = risk[:, h] / rng.exponential(size=H)
        # donors of level h: within each profile group, by decreasing key
        orders, starts, ends = [], np.zeros(offset, np.int64), np.zeros(offset, np.int64)
        base = 0
        for p in range(len(profiles)):
            o = np.lexsort((-key, gid[p]))
            g = gid[p][o]
            first = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
            starts[g[first]] = base + first
            ends[g[first]] = base + np.r_[first[1:], H]
            orders.append(o)
            base += H
        order = np.concatenate(orders)
        must = (levels == h) & ~used & ~failed
        sample_key = risk[:, L - 1] / rng.exponential(size=H) if h == L - 1 else key
        cand = np.flatnonzero(~used & ~failed)
        cand = cand[np.lexsort((-sample_key[cand], area[h][cand]))]  # area by area, then by key
        n_areas = int(area[h].max()) + 1
        area_start = np.searchsorted(area[h][cand], np.arange(n_areas + 1))
        # upper levels: only the households risky there; the lowest: the budget left by the swaps
        # its households started above, the risky ones included (randSample's N - z)
        budget = np.zeros(n_areas, np.int64) if h < L - 1 else np.maximum(draws - started, 0)
        short = _swap_areas(cand, area_start, budget, must, area[h], used, failed, gid, order, ends, starts.copy(),
                            partner, level, initiator, h)
        started = np.bincount(lowest[initiator], minlength=n_lowest)
        if h == L - 1:
            shortfall = int(short)
    progress("levels", L, L)
    perm = partner  # household -> household whose geography it receives
    released = data.copy()
    for c in hierarchy + carry_along:
        values = data[c].to_numpy()
        released[c] = values[rep[perm[hh]]]
    pairs = int((partner != np.arange(H)).sum()) // 2
    sizes = np.bincount(hh, minlength=H)
    after = risky_levels(household_risk(released.reset_index(drop=True), hh, H, hierarchy, risk_variables), k)
    return RecordSwapResult(released, partner, level, hierarchy, carry_along, float(swaprate), int(k), target, pairs,
                            H, 2 * pairs, int(sizes[partner != np.arange(H)].sum()), int((levels < L).sum()),
                            int((after < L).sum()), int(failed.sum()), shortfall)


@dataclass
class RecordSwapPromise:
    """What a record swap promises (checked on the released records before anything is
    written): every household's members share one value of every geographic and carry-along
    column; the households of every area at every level are as many as in the input; the
    households whose geography changed are the ``households_swapped`` the result states; at
    least ``2 * target_pairs`` households are swapped (the swap rate), unless the result says
    why not (then refused). ``original``: the input in released order (its household column
    gives the households)."""

    original: pd.DataFrame
    result: RecordSwapResult
    household: str
    columns: tuple = ()
    mechanism: str = "targeted record swapping"

    def check(self, data: pd.DataFrame) -> None:
        r = self.result
        hh = pd.factorize(self.original[self.household])[0]
        H = int(hh.max()) + 1
        rep = np.full(H, -1, np.int64)
        rep[hh[::-1]] = np.arange(hh.size)[::-1]
        changed = np.zeros(H, bool)
        for c in r.hierarchy + r.carry_along:
            codes = pd.factorize(data[c].reset_index(drop=True), use_na_sentinel=False)[0]
            if (codes != codes[rep][hh]).any():
                raise GuaranteeError(f"a household's members would be released with different {c!r}; nothing written")
        for c in r.hierarchy:
            before, after = self.original[c].to_numpy()[rep], data[c].to_numpy()[rep]
            changed |= pd.Series(before).ne(pd.Series(after)).to_numpy()
        for h in range(len(r.hierarchy)):
            cols = r.hierarchy[:h + 1]
            a = self.original.iloc[rep].groupby(cols, dropna=False).size()
            b = data.iloc[rep].groupby(cols, dropna=False).size()
            if not a.sort_index().equals(b.reindex(a.index).sort_index()) or len(a) != len(b):
                raise GuaranteeError(f"the households per area of {', '.join(cols)} would change; nothing written")
        if int(changed.sum()) != r.households_swapped:
            raise GuaranteeError(f"{int(changed.sum())} households change geography, not the {r.households_swapped} "
                                 "stated; nothing written")
        if r.households_swapped < 2 * r.target_pairs:
            raise GuaranteeError(
                f"swap rate {r.swaprate:g} not reached: {r.households_swapped} of {r.households} households swapped "
                f"(target {2 * r.target_pairs}; {r.unmatched} found no donor with the same similarity profile, "
                f"{r.shortfall} swaps lacked households in their area); loosen the similarity profile or lower the "
                "rate; nothing written")

"""Census-like records with categorical keys, and an independent k-anonymity count (for
``benchmarks/categorical.py``; no probanon import here).

:func:`census_like` draws ``n`` people in households (ids ``hid`` 0..H-1, members consecutive,
the head first) with 8 categorical keys coded as small integers:

============ ======= ================================================================
key          levels  how it is drawn
============ ======= ================================================================
age          0-99    head 18 + Gamma(3, 10) (alone: 18 + Gamma(2.5, 15)), over 99 redrawn in 60-99; spouse = head's +-4;
                     children 18-42 years younger; in large households a grandparent
sex          2       head male 60%, spouse the other sex (2% the same), others 51% male
region       50      per household, Zipf-like populations (weight 1 / rank^0.9)
marital      6       children single; head and spouse married (5% registered partners);
                     other adults by age band (single / divorced / widowed ...)
education    15      by age for the young (0-6: none, pre-school, school years), adults
                     skewed over 5-14 (lower for the old)
occupation   40      0 not in the labour force (children, most over 66), 1 unemployed
                     (7%), 2-39 Zipf-like, shifted by education
citizenship  20      0 national; foreign households 3-18% by region (larger in the big
                     regions), nationality Zipf-like over 1-19, shared by the household
                     (10% of members national)
hhsize       10      the household's size, 1-10 (30% 1, 31% 2, 15% 3, 13% 4 ...)
============ ======= ================================================================

plus ``weight``: a sampling weight (a 1% sample: 100 x region factor x lognormal(0, 0.1),
constant within the household). Correlated and skewed like a census: rare combinations come from
old ages, large households, foreign citizenships and small regions.

:func:`violations` counts, for every combination of keys, the records whose class (records equal on
the combination's keys, a missing value matching any value: sdcMicro's ``alpha = 1``) has fewer than
k records, by its own counting (pairs of missing-value patterns, a mixed-radix code and a bincount).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

KEYS8 = ["age", "sex", "region", "marital", "education", "occupation", "citizenship", "hhsize"]
SIZE_P = np.array([.30, .31, .15, .13, .06, .025, .012, .007, .004, .002])


def _zipf(rng, levels: int, size: int, s: float = 1.0) -> np.ndarray:
    p = 1.0 / np.arange(1, levels + 1) ** s
    return rng.choice(levels, size=size, p=p / p.sum())


def census_like(n: int, seed: int = 2026) -> pd.DataFrame:
    """``n`` census-like records (module docstring): hid, the 8 keys (int16 codes), weight."""
    rng = np.random.default_rng(seed)
    p = SIZE_P / SIZE_P.sum()
    sizes = rng.choice(np.arange(1, 11), size=int(n / (np.arange(1, 11) @ p) * 1.1) + 20, p=p)
    cum = np.cumsum(sizes)
    H = int(np.searchsorted(cum, n)) + 1
    sizes = sizes[:H].copy()
    sizes[-1] -= int(cum[H - 1] - n)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    hid = np.repeat(np.arange(H), sizes)
    pos = np.arange(n) - np.repeat(start, sizes)
    hhsize = np.repeat(sizes, sizes)

    region_h = _zipf(rng, 50, H, 0.9)
    foreign_share = 0.03 + 0.15 * (1 - np.arange(50) / 49) ** 2
    foreign_h = rng.random(H) < foreign_share[region_h]
    nation_h = np.where(foreign_h, 1 + _zipf(rng, 19, H, 1.1), 0)
    alone = sizes == 1
    head_age_h = 18 + np.round(np.where(alone, rng.gamma(2.5, 15, H), rng.gamma(3.0, 10, H)))
    head_age_h = np.where(head_age_h > 99, rng.integers(60, 100, H), head_age_h)
    head_male_h = rng.random(H) < 0.6
    has_spouse_h = (sizes >= 2) & (rng.random(H) < 0.75)
    grand_h = (sizes >= 5) & (rng.random(H) < 0.3)

    head_age = head_age_h[hid]
    spouse = (pos == 1) & has_spouse_h[hid]
    grand = (pos == hhsize - 1) & grand_h[hid] & (pos >= 2)
    child = (pos >= 1) & ~spouse & ~grand
    age = head_age.copy()
    age[spouse] = np.clip(head_age[spouse] + np.round(rng.normal(-2, 4, spouse.sum())), 18, 99)
    gap = rng.integers(18, 43, child.sum())
    a = head_age[child] - gap
    age[child] = np.where(a >= 0, a, rng.integers(0, 18, child.sum()))
    g = head_age[grand] + rng.integers(20, 36, grand.sum())
    age[grand] = np.where(g > 99, rng.integers(60, 100, grand.sum()), g)
    age = age.astype(np.int16)

    male = rng.random(n) < 0.51
    head = pos == 0
    male[head] = head_male_h[hid[head]]
    same = rng.random(n) < 0.02
    male[spouse] = np.where(same[spouse], head_male_h[hid[spouse]], ~head_male_h[hid[spouse]])

    marital = np.zeros(n, np.int16)  # 0 single 1 married 2 widowed 3 divorced 4 separated 5 partnership
    couple = (head & has_spouse_h[hid]) | spouse
    couple_partner = rng.random(H) < 0.05
    marital[couple] = np.where(couple_partner[hid[couple]], 5, 1)
    other = ~couple & (age >= 16)
    bands = [(16, 30, [.85, .07, .005, .05, .02, .005]), (30, 60, [.35, .2, .04, .3, .1, .01]),
             (60, 100, [.15, .12, .5, .2, .02, .01])]
    for lo, hi, pr in bands:
        sel = other & (age >= lo) & (age < hi)
        pr = np.array(pr) / np.sum(pr)
        marital[sel] = rng.choice(6, size=sel.sum(), p=pr)

    education = np.zeros(n, np.int16)
    education[(age >= 3) & (age < 6)] = 1
    school = (age >= 6) & (age < 16)
    education[school] = 2 + (age[school] - 6) // 2
    adult = age >= 16
    base = 5 + rng.choice(10, size=adult.sum(), p=np.array([8, 10, 18, 20, 12, 10, 9, 7, 4, 2]) / 100)
    old = age[adult] > 65
    base = np.where(old, base - rng.binomial(3, 0.5, adult.sum()), base)
    education[adult] = np.clip(base, 5, 14)

    occupation = np.zeros(n, np.int16)
    work = (age >= 15) & (age <= 66)
    late = (age > 66) & (rng.random(n) < 0.1)
    labour = work | late
    occ = 2 + (_zipf(rng, 38, n, 0.8) + 2 * (education - 5).clip(0)) % 38
    occupation[labour] = occ[labour]
    unemployed = labour & (rng.random(n) < 0.07)
    occupation[unemployed] = 1

    citizenship = nation_h[hid].astype(np.int16)
    born_here = (citizenship > 0) & (rng.random(n) < 0.1)
    citizenship[born_here] = 0

    region_factor = 0.7 + 0.8 * rng.random(50)
    weight_h = 100 * region_factor[region_h] * np.exp(rng.normal(0, 0.1, H))
    return pd.DataFrame({
        "hid": hid.astype(np.int64), "age": age, "sex": (~male).astype(np.int16),
        "region": region_h[hid].astype(np.int16), "marital": marital, "education": education,
        "occupation": occupation, "citizenship": citizenship, "hhsize": (hhsize - 1).astype(np.int16),
        "weight": weight_h[hid],
    })


def codes(frame: pd.DataFrame, keys) -> np.ndarray:
    """The keys as integer codes 0..L-1 per column, -1 where missing."""
    X = np.empty((len(frame), len(keys)), dtype=np.int64)
    for j, c in enumerate(keys):
        X[:, j] = pd.factorize(frame[c], use_na_sentinel=True)[0]
    return X


def _class_sizes(sub: np.ndarray) -> np.ndarray:
    """fk of every record on the columns of ``sub`` (codes, -1 missing; a missing value matches
    any value, the record's own too): the sum over pairs of missing-value patterns (P of the
    record, Q of the others) of the records with pattern Q equal to it on the columns present in
    both."""
    n, m = sub.shape
    card = sub.max(axis=0) + 1 if n else np.zeros(m, np.int64)
    miss = sub < 0
    pattern = (miss * (1 << np.arange(m))).sum(axis=1)
    groups = {int(P): np.flatnonzero(pattern == P) for P in np.unique(pattern)}
    fk = np.zeros(n, np.int64)
    for Q, q in groups.items():
        sq = sub[q]
        for P, rows in groups.items():
            cols = [j for j in range(m) if not ((P | Q) >> j) & 1]
            if not cols:
                fk[rows] += len(q)
                continue
            cq, cp, r = np.zeros(len(q), np.int64), np.zeros(len(rows), np.int64), 1
            for j in cols:
                cq += sq[:, j] * r
                cp += sub[rows, j] * r
                r *= int(card[j])
            space = int(np.prod(card[cols].astype(float)))
            if space <= 1 << 25:
                fk[rows] += np.bincount(cq, minlength=space)[cp]
            else:
                u, c = np.unique(cq, return_counts=True)
                i = np.minimum(np.searchsorted(u, cp), len(u) - 1)
                fk[rows] += np.where(u[i] == cp, c[i], 0)
    return fk


def violations(X: np.ndarray, k: int, max_size: int | None = None) -> tuple[int, int, int]:
    """(records below k in at least one combination, combinations with a record below k, number of
    combinations) over every combination of at most ``max_size`` keys (all sizes if None)."""
    n, K = X.shape
    below = np.zeros(n, bool)
    bad = total = 0
    for m in range(1, (max_size or K) + 1):
        for S in combinations(range(K), m):
            b = _class_sizes(X[:, list(S)]) < k
            below |= b
            bad += bool(b.any())
            total += 1
    return int(below.sum()), bad, total

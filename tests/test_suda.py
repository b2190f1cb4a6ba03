"""SUDA2 (probanon.metrics.suda) against a brute-force enumeration of minimal sample uniques, the
scores by their formulas written here, and sdcMicro's test expectations (tests/testthat/test_suda2.R)."""

from collections import Counter
from itertools import combinations
from math import prod

import numpy as np
import pandas as pd
import pytest

from probanon.errors import InputError
from probanon.metrics.suda import suda2


def brute_msus(frame, max_size):
    """Every (record, key subset) with the record's values unique on the subset, none missing, and
    no proper subset unique: all subsets enumerated, missing values a category of their own."""
    keys = list(frame.columns)
    rows = [tuple("<NA>" if pd.isna(v) else v for v in row) for row in frame.itertuples(index=False)]
    unique = {}
    for size in range(1, len(keys) + 1):
        for subset in combinations(range(len(keys)), size):
            counts = Counter(tuple(r[j] for j in subset) for r in rows)
            for i, r in enumerate(rows):
                unique[i, subset] = counts[tuple(r[j] for j in subset)] == 1
    found = set()
    for i, r in enumerate(rows):
        for size in range(1, max_size + 1):
            for subset in combinations(range(len(keys)), size):
                if any(r[j] == "<NA>" for j in subset) or not unique[i, subset]:
                    continue
                proper = [s for t in range(1, size) for s in combinations(subset, t)]
                if not any(unique[i, s] for s in proper):
                    found.add((i, tuple(keys[j] for j in subset)))
    return found


def random_file(seed, n, cards, missing=0.0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({f"k{j}": rng.integers(0, c, n).astype(float) for j, c in enumerate(cards)})
    if missing:
        frame = frame.mask(rng.random(frame.shape) < missing)
    return frame


CASES = [(1, 40, (3, 2, 4, 3), 0.0, None), (2, 60, (2, 3, 2, 5, 2), 0.0, None), (3, 50, (3, 3, 2, 4), 0.1, None),
         (4, 80, (4, 2, 3, 3, 2), 0.05, 3), (5, 30, (5, 4, 6), 0.0, 2), (6, 25, (2, 2, 2, 2, 2, 2), 0.0, None)]


@pytest.mark.parametrize("seed,n,cards,missing,max_size", CASES)
def test_msus_equal_brute_force_and_scores_follow_the_formulas(seed, n, cards, missing, max_size):
    frame = random_file(seed, n, cards, missing)
    keys = list(frame.columns)
    m_keys, m = len(keys), max_size or len(keys)
    result = suda2(frame, keys, max_size=max_size)
    truth = brute_msus(frame, m)
    assert set(result.msus()) == truth and len(result.msus()) == len(truth)

    weight = {s: prod(m_keys - t for t in range(s, m)) for s in range(1, m + 1)}
    score = np.zeros(n)
    raw = np.zeros((n, m_keys))
    for i, subset in truth:
        score[i] += weight[len(subset)]
        for k in subset:
            raw[i, keys.index(k)] += weight[len(subset)]
    np.testing.assert_allclose(result.score, score)
    share = np.divide(raw, score[:, None], out=np.zeros_like(raw), where=score[:, None] > 0)
    np.testing.assert_allclose(result.contributions.to_numpy(), share)
    np.testing.assert_allclose(result.attribute_contributions().to_numpy(), 100 * raw.sum(axis=0) / score.sum())
    for s in range(1, m + 1):
        per_record = np.bincount([i for i, sub in truth if len(sub) == s], minlength=n)
        np.testing.assert_array_equal(result.msu_counts[:, s - 1], per_record)

    # DIS: U records unique on all keys, P records in pairs (missing a category of its own)
    rows = Counter(tuple("<NA>" if pd.isna(v) else v for v in r) for r in frame.itertuples(index=False))
    whole = [rows[tuple("<NA>" if pd.isna(v) else v for v in r)] for r in frame.itertuples(index=False)]
    U, P, f = whole.count(1), whole.count(2), 0.01
    assert (result.uniques, result.pair_records) == (U, P)
    dis = U * f / (U * f + P * (1 - f))
    assert result.dis == pytest.approx(dis)
    q = 1 + (8 - m_keys) / 20
    adjust = sum(s ** -q for s in score if s > 0)
    expected = [1 / (1 + (U / dis - U) / (s ** q * adjust)) if s > 0 else 0.0 for s in score]
    np.testing.assert_allclose(result.dis_score, expected)


def test_sdcmicro_book_example():
    # test_suda2.R "suda2 book example": su$score[5:8] == c(4, 2, 6, 8)
    tab = pd.DataFrame({"age": ["20s"] * 7 + ["60s"], "gender": ["male"] * 4 + ["female"] * 3 + ["male"],
                        "income": ["50k+", "50k+"] + ["50k-"] * 6,
                        "education": ["highschool"] * 4 + ["university", "highschool", "middleschool", "university"]})
    assert suda2(tab, list(tab.columns)).score[4:8].tolist() == [4, 2, 6, 8]


def test_sdcmicro_guideline_example():
    # test_suda2.R "suda2 sdc guideline": score == c(0, 0, 6, 0, 12, 0, 6, 10, 0, 0)
    tab = pd.DataFrame({
        "Residence": ["Urban", "Urban", "Urban", "Urban", "Rural", "Urban", "Urban", "Urban", "Urban", "Urban"],
        "Gender": ["Female", "Female", "Female", "Male", "Female", "Male", "Female", "Male", "Female", "Female"],
        "Education": ["Secondary incomplete", "Secondary incomplete", "Primary incomplete", "Secondary complete",
                      "Secondary complete", "Secondary complete", "Primary complete", "Post-secondary",
                      "Secondary incomplete", "Secondary incomplete"],
        "Labor": ["Employed", "Employed", "Non-LF", "Employed", "Unemployed", "Employed", "Non-LF", "Unemployed",
                  "Non-LF", "Non-LF"]})
    assert suda2(tab, list(tab.columns)).score.tolist() == [0, 0, 6, 0, 12, 0, 6, 10, 0, 0]


@pytest.mark.parametrize("order,expected", [("abc", [50, 37.5, 37.5]), ("acb", [50, 37.5, 37.5]),
                                            ("cab", [37.5, 50, 37.5]), ("cba", [37.5, 37.5, 50])])
def test_sdcmicro_attribute_contributions(order, expected):
    # test_suda2.R "suda2 simple example contrubtion" 1-4
    columns = {"a": [2, 1, 1], "b": [0, 3, 0], "c": [0, 6, 0]}
    frame = pd.DataFrame({k: columns[k] for k in order})
    assert suda2(frame, list(order)).attribute_contributions().tolist() == expected


def test_dis_table_intervals_as_print_suda2():
    frame = random_file(7, 60, (3, 4, 2, 3))
    result = suda2(frame, list(frame.columns))
    edges = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7]
    d = result.dis_score
    expected = [int((d == 0).sum())] + [int(((d > a) & (d <= b)).sum()) for a, b in zip(edges[:-1], edges[1:])]
    expected.append(int((d > 0.7).sum()))
    table = result.dis_table()
    assert table["records"].tolist() == expected and table["interval"].iloc[-1] == "> 0.7"
    assert result.size_table()["msus"].sum() == len(result.msus())


def test_no_uniques_gives_zero_scores():
    frame = pd.DataFrame({"a": [1, 1, 2, 2], "b": [3, 3, 4, 4], "c": [5, 5, 6, 6]})
    result = suda2(frame, ["a", "b", "c"])
    assert result.score.tolist() == [0] * 4 and result.dis_score.tolist() == [0] * 4 and result.dis == 0.0


@pytest.mark.parametrize("kwargs,message", [({"keys": ["zz"]}, "not in the table"), ({"keys": []}, "no key"),
                                            ({"keys": ["a", "a"]}, "twice"), ({"max_size": 4}, "max_size"),
                                            ({"max_size": 0}, "max_size"), ({"dis_fraction": 1.0}, "dis_fraction")])
def test_bad_input_is_one_clear_error(kwargs, message):
    frame = pd.DataFrame({"a": [1, 2], "b": [1, 1], "c": [2, 2]})
    args = {"keys": ["a", "b", "c"], **kwargs}
    with pytest.raises(InputError, match=message):
        suda2(frame, **args)


def test_msu_lists_when_the_bitsets_do_not_fit(monkeypatch):
    import probanon.metrics.suda as suda

    frame = random_file(8, 50, (3, 2, 3, 4, 2), 0.05)
    monkeypatch.setattr(suda, "BITSET_BYTES", 0)
    assert set(suda.suda2(frame, list(frame.columns)).msus()) == brute_msus(frame, 5)

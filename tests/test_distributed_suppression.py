"""Local suppression of a directory of Parquet files on Dask (issue 43, "and on Dask beyond"):
the release one process makes of the files' rows concatenated, bit for bit, and k over every
combination counted independently on what was written."""

from itertools import combinations as subsets

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from probanon.categorical import local_suppression  # noqa: E402
from probanon.distributed import suppression as dsup  # noqa: E402
from probanon.distributed.suppression import suppress_parquet  # noqa: E402
from probanon.errors import GuaranteeError, InputError  # noqa: E402
from dask_support import client  # noqa: E402,F401 (client: a fixture)

KEYS = ["age", "region", "sex", "job"]


def _frame(n=2400, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "age": rng.integers(15, 70, n),
        "region": rng.choice([f"r{i}" for i in range(12)], n, p=np.r_[[0.3, 0.2], np.full(10, 0.05)]),
        "sex": rng.choice(["f", "m"], n),
        "job": rng.choice(["a", "b", "c", "d", "e", None], n, p=[0.4, 0.3, 0.1, 0.1, 0.05, 0.05]),
        "area": rng.choice(["north", "south", None], n, p=[0.6, 0.38, 0.02]),
        "income": rng.lognormal(10, 1, n).round(2),
    })
    return frame


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Four files of uneven sizes, one of them empty, keys with missing values."""
    root = tmp_path_factory.mktemp("suppress")
    parts = root / "parts"
    parts.mkdir()
    frame = _frame()
    for i, (a, b) in enumerate([(0, 900), (900, 900), (900, 1700), (1700, 2400)]):
        frame.iloc[a:b].to_parquet(parts / f"part-{i}.parquet", index=False)
    return parts


def _concatenated(folder):
    return pd.concat([pd.read_parquet(f) for f in sorted(folder.glob("*.parquet"))], ignore_index=True)


def _counts(frame, columns, strata, missing):
    """Each record's count of matching records on ``columns`` (pairwise, within strata): the
    independent check."""
    values = frame[columns].astype(object).where(frame[columns].notna(), None).to_numpy()
    same_stratum = np.ones((len(frame), len(frame)), dtype=bool)
    for c in strata:
        s = frame[c].astype(object).where(frame[c].notna(), "<NA>").to_numpy()
        same_stratum &= s[:, None] == s[None, :]
    match = same_stratum.copy()
    for j in range(len(columns)):
        v = values[:, j]
        absent = np.array([x is None for x in v])
        equal = v[:, None] == v[None, :]
        if missing == "any":
            match &= equal | absent[:, None] | absent[None, :]
        else:
            match &= equal | (absent[:, None] & absent[None, :])
    return match.sum(axis=1)


CASES = [
    dict(missing="any", combinations=None, strata=None, random_state=1),
    dict(missing="category", combinations=None, strata=None, random_state=2),
    dict(missing="any", combinations=2, strata=["area"], random_state=None, importance=["sex", "region", "job", "age"]),
    dict(missing="category", combinations=3, strata=["area"], random_state=5),
    dict(missing="category", combinations=2, strata=None, random_state=7, importance={"age": 1, "region": 2,
                                                                                      "sex": 5, "job": 1.5}),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['missing']}-{c['combinations']}-{bool(c['strata'])}"
                                             for c in CASES])
def test_same_release_as_one_process_and_k_holds(client, folder, tmp_path, case):
    k = 3
    whole = _concatenated(folder)
    one = local_suppression(whole, KEYS, k, **case)
    out = tmp_path / "out.parquet"
    result = suppress_parquet(client, folder, KEYS, k, output=out, keep_order=True, **case)
    written = sorted(out.glob("*.parquet"))
    assert [f.name for f in written] == [f"part-{i:05d}.parquet" for i in range(4)]
    released = pd.concat([pd.read_parquet(f) for f in written], ignore_index=True)
    # bit for bit: the same values suppressed, everything else as read
    assert (released[KEYS].isna().to_numpy() == one.data[KEYS].isna().to_numpy()).all()
    pd.testing.assert_frame_equal(released.drop(columns=KEYS), whole.drop(columns=KEYS))
    kept = released[KEYS].notna().to_numpy()
    assert (released[KEYS].astype(object).to_numpy()[kept] == whole[KEYS].astype(object).to_numpy()[kept]).all()
    assert result.n_suppressed == one.n_suppressed and result.total == one.total > 0
    assert result.violations_before.records == one.violations_before.records
    assert result.violations_before.total == one.violations_before.total > 0
    assert result.violations_after.total == 0 and result.data is None
    # k on every combination asked, counted pairwise on what was written
    strata = case["strata"] or []
    size = case["combinations"] or len(KEYS)
    for columns in subsets(KEYS, size):
        assert _counts(released, list(columns), strata, case["missing"]).min() >= k


def test_records_shuffled_within_each_file_by_the_seed(client, folder, tmp_path):
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    suppress_parquet(client, folder, KEYS, 3, random_state=1, output=a, random_state_output=11)
    suppress_parquet(client, folder, KEYS, 3, random_state=1, output=b, random_state_output=11)
    for fa, fb, source in zip(sorted(a.glob("*")), sorted(b.glob("*")), sorted(folder.glob("*"))):
        x, y, original = pd.read_parquet(fa), pd.read_parquet(fb), pd.read_parquet(source)
        pd.testing.assert_frame_equal(x, y)
        assert len(x) == len(original)
        assert sorted(x["income"]) == sorted(original["income"])
    moved = pd.read_parquet(sorted(a.glob("*"))[0])["income"].to_numpy()
    assert (moved != pd.read_parquet(sorted(folder.glob("*"))[0])["income"].to_numpy()).any()


def test_the_fall_back_completes_a_class_of_fully_suppressed_records(client, tmp_path):
    """Under "category" the greedy can leave a class of fully suppressed records below k; the
    single machine adds the record with the most room, and so do the workers."""
    from probanon.datasets import load

    adult = load("adult")[["age", "sex", "race", "marital-status", "education"]]
    parts = tmp_path / "adult"
    parts.mkdir()
    for i, rows in enumerate(np.array_split(np.arange(len(adult)), 3)):
        adult.iloc[rows].to_parquet(parts / f"p{i}.parquet", index=False)
    keys = list(adult.columns)
    one = local_suppression(adult, keys, 3, missing="category", random_state=2)
    result = suppress_parquet(client, parts, keys, 3, missing="category", random_state=2)
    # the fall-back ran: fully suppressed records beyond what the greedy left
    assert result.n_suppressed == one.n_suppressed and result.violations_after.total == 0


def test_bad_input_is_one_error_and_nothing_is_written(client, folder, tmp_path, monkeypatch):
    out = tmp_path / "out.parquet"
    with pytest.raises(InputError, match="'salary' is not in the files"):
        suppress_parquet(client, folder, ["age", "salary"], 3, output=out)
    with pytest.raises(InputError, match="a stratum holds fewer than k"):
        suppress_parquet(client, folder, KEYS, 200, strata=["area"], output=out)
    out.mkdir()
    with pytest.raises(InputError, match="exists"):
        suppress_parquet(client, folder, KEYS, 3, output=out)
    out.rmdir()
    # the promise is checked on what is about to be written: a greedy that suppresses nothing and
    # no fall-back leave violations, and nothing is written
    monkeypatch.setattr("probanon.categorical.suppression.greedy", lambda *a, **kw: None)
    monkeypatch.setattr(dsup, "_fall_back", lambda client, records, rows, after, report: after)
    with pytest.raises(GuaranteeError, match="promises 3-anonymity on age, region, sex, job.*nothing written"):
        suppress_parquet(client, folder, KEYS, 3, output=out)
    assert list(tmp_path.iterdir()) == []


def test_cli_folder_in_folder_out(folder, tmp_path, capsys):
    from probanon.cli import main

    out = tmp_path / "released.parquet"
    code = main(["suppress", str(folder), "-o", str(out), "-k", "3", "--keys", ",".join(KEYS), "--drop", "income",
                 "--keep-other", "--strata", "area", "--combinations", "2", "--seed", "4", "--workers", "2",
                 "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "wrote" in err and "violations after 0" in err and "on Dask" in err
    released = pd.concat([pd.read_parquet(f) for f in sorted(out.glob("*.parquet"))], ignore_index=True)
    assert "income" not in released and len(released) == 2400
    for columns in subsets(KEYS, 2):
        assert _counts(released, list(columns), ["area"], "any").min() >= 3
    # a single file is suppressed in this process; options the folder path does not have are refused
    single = tmp_path / "one.csv"
    _frame(200).to_csv(single, index=False)
    for argv, message in [([str(single), "-o", str(tmp_path / "x.csv"), "--workers", "2"], "a single file is suppressed"),
                          ([str(folder), "-o", str(tmp_path / "y.parquet"), "--workers", "2", "--intervals",
                            "age=width:5"], "recoding options is not available"),
                          ([str(folder), "-o", str(tmp_path / "z.csv"), "--workers", "2"], "name it NAME.parquet"),
                          ([str(folder), "-o", str(tmp_path / "w.parquet")], "give --workers N")]:
        code = main(["suppress", *argv, "-k", "3", "--keys", ",".join(KEYS), "--keep-other"])
        assert code == 2 and message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.csv", "released.parquet"]


def test_an_index_with_repeated_labels_a_generator_and_one_type_per_column(client, tmp_path):
    """A file whose stored index repeats its labels changes only the records suppressed (in one
    process too); a Generator as random_state ends where one process leaves it; a column of two
    types across the files is refused before any work."""
    frame = _frame(600, seed=3)
    parts = tmp_path / "parts"
    parts.mkdir()
    pd.concat([frame.iloc[:300], frame.iloc[300:].set_axis(range(300))]).to_parquet(parts / "a.parquet")
    whole = pd.read_parquet(parts / "a.parquet")
    assert not whole.index.is_unique
    mine, theirs = np.random.default_rng(9), np.random.default_rng(9)
    one = local_suppression(whole, KEYS, 3, missing="category", random_state=mine)
    missing = whole[KEYS].isna().to_numpy() | one.suppressed.to_numpy()
    assert (one.data[KEYS].isna().to_numpy() == missing).all()  # only the suppressed ones
    out = tmp_path / "out.parquet"
    result = suppress_parquet(client, parts, KEYS, 3, missing="category", random_state=theirs, output=out,
                              keep_order=True)
    released = pd.read_parquet(out / "part-00000.parquet")
    assert (released[KEYS].isna().to_numpy() == missing).all()
    assert result.n_suppressed == one.n_suppressed
    assert mine.integers(2 ** 62) == theirs.integers(2 ** 62)
    frame.iloc[:300].assign(age=frame["age"].iloc[:300].astype(float)).set_axis(np.arange(300)[::-1]).to_parquet(
        parts / "b.parquet")
    with pytest.raises(InputError, match="column 'age' is int64 in .*a.parquet but float64 in .*b.parquet"):
        suppress_parquet(client, parts, KEYS, 3, output=tmp_path / "never.parquet")
    assert not (tmp_path / "never.parquet").exists()


def test_the_any_rule_promise_holds_on_an_empty_release():
    from probanon.release import combination_promise

    combination_promise(3, ["a", "b"], None, "test", missing="any").check(pd.DataFrame({"a": [], "b": []}))

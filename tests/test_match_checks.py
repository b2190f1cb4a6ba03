"""Issue 39, point 2: every match of an original and its release (--link, --id, --by-position) is
checked before anything is computed: the columns released unchanged agree under it, and the
information loss of a group-mean release is at most 100%."""

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main


def _frame(n=90, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.integers(18, 90, n), "income": rng.normal(3e4, 8e3, n).round(2),
                         "hours": rng.integers(10, 60, n), "secret": rng.normal(size=n).round(6)})


def _release(tmp_path, src, name, seed, extra):
    out, link = tmp_path / f"{name}.csv", tmp_path / f"{name}.link.csv"
    assert main(["microaggregate", str(src), "-o", str(out), "-k", "3", "--seed", str(seed), "--link", str(link),
                 "--quiet", *extra]) == 0
    return out, link


def _wrong_loss(original, released, link, keys):
    """IL = 100 SSE/SST of the records matched by ``link`` (z-scores with the original's mean and
    population sd), computed here from the files."""
    table = pd.read_csv(link)
    rows = np.empty(len(table), dtype=np.int64)
    rows[table["original_row"].to_numpy() - 1] = table["released_row"].to_numpy() - 1
    X = original[keys].to_numpy(float)
    Y = released[keys].to_numpy(float)[rows]
    mean, sd = X.mean(axis=0), X.std(axis=0)
    return 100 * (((X - Y) / sd) ** 2).sum() / (((X - mean) / sd) ** 2).sum()


def _one_error_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_another_releases_link_is_refused_by_its_information_loss(tmp_path, capsys):
    """Every column a key: nothing released unchanged to check, but 194%-like losses are impossible."""
    df = _frame()
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    keys = "age,income,hours,secret"
    first, link1 = _release(tmp_path, src, "first", 1, ["--keys", keys])
    _, link2 = _release(tmp_path, src, "second", 2, ["--keys", keys])
    wrong = _wrong_loss(df, pd.read_csv(first), link2, keys.split(","))
    assert wrong > 100  # the symptom, computed independently: 194.5% on census
    assert _wrong_loss(df, pd.read_csv(first), link1, keys.split(",")) < 100
    capsys.readouterr()
    base = ["evaluate", str(src), str(first), "--keys", keys, "--risk"]
    assert main(base + ["--link", str(link1)]) == 0
    capsys.readouterr()
    assert main(base + ["--link", str(link2)]) == 2
    line = _one_error_line(capsys)
    assert f"information loss {wrong:.1f}% > 100%" in line and "matched wrongly" in line
    out = tmp_path / "report"
    assert main(["report", str(src), str(first), "--keys", keys, "--link", str(link2), "-o", str(out)]) == 2
    assert "> 100%" in _one_error_line(capsys) and not out.exists()
    assert main(["report", str(src), str(first), "--keys", keys, "--link", str(link1), "-o", str(out),
                 "--compare", f"other={first},{link2}"]) == 2
    assert "--compare other" in _one_error_line(capsys) and not out.exists()


def test_a_column_released_unchanged_checks_link_and_id(tmp_path, capsys):
    df = _frame()
    df.insert(0, "rid", np.arange(500, 500 + len(df)))
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    keys = "age,income,hours"
    first, link1 = _release(tmp_path, src, "first", 1, ["--keys", keys, "--confidential", "secret", "--keep-other"])
    _, link2 = _release(tmp_path, src, "second", 2, ["--keys", keys, "--confidential", "secret", "--keep-other"])
    released = pd.read_csv(first)
    table = pd.read_csv(link2)  # the wrong link: where it sends each original record
    moved = released.iloc[table.sort_values("original_row")["released_row"].to_numpy() - 1].reset_index(drop=True)
    differ = int((moved["rid"] != df["rid"]).sum())  # rid comes first in the table: it is named
    assert differ > 0
    capsys.readouterr()
    base = ["evaluate", str(src), str(first), "--keys", keys]
    for how in (["--link", str(link1)], ["--id", "rid"]):
        assert main(base + how) == 0, how
    capsys.readouterr()
    assert main(base + ["--link", str(link2)]) == 2
    line = _one_error_line(capsys)
    assert f"column 'rid', released unchanged, differs on {differ:,} of {len(df):,} records" in line
    # an id that does not identify the released records: the other column released unchanged disagrees
    bad = released.assign(rid=released["rid"].sample(frac=1, random_state=3).to_numpy())
    bad_path = tmp_path / "bad_id.csv"
    bad.to_csv(bad_path, index=False)
    position = pd.Index(bad["rid"]).get_indexer(df["rid"])
    differ = int((bad["secret"].to_numpy()[position] != df["secret"].to_numpy()).sum())
    assert main(["evaluate", str(src), str(bad_path), "--keys", keys, "--id", "rid"]) == 2
    assert f"--id rid does not match these files: column 'secret', released unchanged, differs on {differ:,}" in \
        _one_error_line(capsys)
    # the attack suite matches the same way
    assert main(["attack", str(src), str(first), "--keys", keys, "--confidential", "secret", "--mechanism",
                 "microaggregation", "-k", "3", "--link", str(link2), "--runs", "1", "--quiet"]) == 2
    assert "does not match these files" in _one_error_line(capsys)


def test_column_wise_swap_links_are_checked_column_by_column(tmp_path, capsys):
    df = _frame(120)
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    common = ["-k", "5", "--method", "ir-swap", "--keys", "age,income,hours", "--confidential", "secret",
              "--accept-risk"]
    outs = {}
    for seed in (1, 2):
        out, link = tmp_path / f"s{seed}.csv", tmp_path / f"s{seed}.link.csv"
        assert main(["swap", str(src), "-o", str(out), *common, "--seed", str(seed), "--link", str(link)]) == 0
        outs[seed] = (out, link)
    capsys.readouterr()
    attack = ["attack", str(src), str(outs[1][0]), "--keys", "age,income,hours", "--confidential", "secret",
              "--mechanism", "ir-swap", "-k", "5", "--runs", "1", "--quiet", "--json"]
    assert main(attack + ["--link", str(outs[1][1])]) in (0, 1)
    capsys.readouterr()
    assert main(attack + ["--link", str(outs[2][1])]) == 2
    assert "does not match these files" in _one_error_line(capsys)
    # the report of a swap: its confidential columns may be swapped, the keys are checked
    report = ["report", str(src), str(outs[1][0]), "--keys", "age,income,hours", "--confidential", "secret",
              "-k", "5", "--probabilistic"]
    assert main(report + ["--link", str(outs[1][1]), "-o", str(tmp_path / "r1")]) == 0
    capsys.readouterr()
    assert main(report + ["--link", str(outs[2][1]), "-o", str(tmp_path / "r2")]) == 2
    line = _one_error_line(capsys)
    assert "information loss" in line and "'secret'" not in line  # the swapped column is not the evidence
    assert not (tmp_path / "r2").exists()


@pytest.mark.parametrize("released_as", [int, float, str])
def test_an_unchanged_column_agrees_whatever_its_written_type(released_as):
    from probanon.release import differing

    a = pd.Series([1, 2, np.nan, 4])
    b = pd.Series([1, 2, np.nan, 5]).astype(float)
    b = b if released_as is float else b.map(lambda v: v if pd.isna(v) else released_as(int(v)))
    assert differing(a, b).tolist() == [False, False, False, True]

"""Issue 13: releases that cannot destroy the original or mislead their user (the shared writer,
roles, record order, evaluation matching), and input files as offices have them."""

import gzip
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from probanon import InputError, ParameterError, ProbanonError
from probanon._validation import check_random_state
from probanon.cli import main
from probanon.data import read_table
from probanon.microagg import MDAV, PCL
from probanon.release import assign_roles, make_release

PROBANON = [sys.executable, "-m", "probanon.cli"]


def _frame(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"name": [f"p{i}" for i in range(n)], "age": rng.integers(18, 90, n),
                         "income": rng.normal(3e4, 8e3, n).round(2), "secret": rng.normal(size=n).round(6)})


# ------------------------------------------------------------------------------------------- roles

def test_roles_every_column_once():
    cols = ["name", "age", "income", "secret"]
    assert assign_roles(cols, ["age", "income"], "secret", "name") == {
        "name": "drop", "age": "key", "income": "key", "secret": "confidential"}
    with pytest.raises(InputError, match="columns without a role: name, secret"):
        assign_roles(cols, ["age", "income"])
    assert assign_roles(cols, ["age"], keep_other=True)["secret"] == "other"
    with pytest.raises(InputError, match="no key variables"):
        assign_roles(cols, [], keep_other=True)
    with pytest.raises(InputError, match="'age' is named both key and drop"):
        assign_roles(cols, "age", drop=["age", "name"], keep_other=True)
    with pytest.raises(InputError, match="drop column 'id' is not in the table"):
        assign_roles(cols, "age", drop="id", keep_other=True)


def test_make_release_drops_shuffles_and_links():
    df = _frame()
    roles = assign_roles(df.columns, ["age", "income"], "secret", "name")
    masked = {"age": np.zeros(len(df)), "income": np.ones(len(df))}
    rel = make_release(df, roles, replaced=masked, random_state=3)
    assert list(rel.data.columns) == ["age", "income", "secret"]
    assert list(rel.data.index) == list(range(len(df)))  # no index carried over
    # released row r holds original record order[r]: the link inverts it exactly
    back = rel.data.iloc[rel.link["released_row"] - 1]["secret"].to_numpy()
    np.testing.assert_array_equal(back, df["secret"].to_numpy())
    assert not np.array_equal(rel.data["secret"].to_numpy(), df["secret"].to_numpy())
    same = make_release(df, roles, replaced=masked, random_state=3)
    pd.testing.assert_frame_equal(rel.data, same.data)
    kept = make_release(df, roles, replaced=masked, keep_order=True)
    np.testing.assert_array_equal(kept.data["secret"], df["secret"])
    assert (kept.link["original_row"] == kept.link["released_row"]).all()
    assert rel.actions["name"] == "removed (--drop)"  # removed, whatever the column was (issue 39.15)


# ---------------------------------------------------------------------------------------- evaluate

def test_evaluate_matches_records_by_link_id_or_checked_position(tmp_path, capsys):
    df = _frame(60)
    df.insert(0, "rid", np.arange(100, 160))
    src = tmp_path / "in.csv"
    df.to_csv(src, index=False)
    common = ["-k", "3", "--keys", "age,income", "--confidential", "secret", "--drop", "name", "--seed", "4"]
    assert main(["microaggregate", str(src), "-o", str(tmp_path / "ordered.csv"), *common, "--keep-order",
                 "--keep-other"]) == 0
    assert main(["microaggregate", str(src), "-o", str(tmp_path / "shuffled.csv"), *common, "--keep-other",
                 "--link", str(tmp_path / "link.csv")]) == 0
    capsys.readouterr()
    keys = ["--keys", "age,income", "--risk", "--json"]
    results = {}
    for name, release, how in [("position", "ordered.csv", ["--by-position"]),
                               ("link", "shuffled.csv", ["--link", str(tmp_path / "link.csv")]),
                               ("id", "shuffled.csv", ["--id", "rid"])]:
        assert main(["evaluate", str(src), str(tmp_path / release), *keys, *how]) == 0
        results[name] = json.loads(capsys.readouterr().out)
    assert results["position"] == results["link"] == results["id"]
    assert results["link"]["record_linkage"] > 0.05  # the real risk, not a shuffled 1/n
    # a shuffled release never matched by position: refused, nothing computed
    for how, fragment in [([], "--link FILE, --id COLUMN or --by-position"),
                          (["--by-position"], "not aligned")]:
        assert main(["evaluate", str(src), str(tmp_path / "shuffled.csv"), *keys, *how]) == 2
        err = capsys.readouterr().err.strip()
        assert fragment in err and len(err.splitlines()) == 1
    # by position with nothing to check alignment on
    only_keys = tmp_path / "only_keys.csv"
    pd.read_csv(tmp_path / "ordered.csv")[["age", "income"]].to_csv(only_keys, index=False)
    assert main(["evaluate", str(src), str(only_keys), *keys, "--by-position"]) == 2
    assert "share no column" in capsys.readouterr().err


def test_evaluate_gates_on_k(tmp_path, capsys):
    df = _frame(60)
    src, out, link = tmp_path / "in.csv", tmp_path / "out.csv", tmp_path / "link.csv"
    df.to_csv(src, index=False)
    assert main(["microaggregate", str(src), "-o", str(out), "-k", "4", "--keys", "age,income",
                 "--keep-other", "--link", str(link)]) == 0
    sizes = pd.read_csv(out).groupby(["age", "income"]).size()  # independent k achieved
    base = ["evaluate", str(src), str(out), "--keys", "age,income", "--link", str(link)]
    assert main(base + ["-k", str(sizes.min())]) == 0
    assert main(base + ["-k", str(sizes.min() + 1)]) == 1
    assert "FAILS" in capsys.readouterr().out


# ------------------------------------------------------------------------------------- input files

def test_separator_encoding_gzip_and_duplicate_names(tmp_path, capsys):
    df = _frame(30)
    df.loc[3, "name"] = "Müller"
    semi = tmp_path / "semi.csv"
    df.to_csv(semi, sep=";", index=False)
    with pytest.raises(InputError, match=r"looks ';'-separated: give --sep ';'"):
        read_table(semi)
    pd.testing.assert_frame_equal(read_table(semi, sep=";"), df)
    latin = tmp_path / "latin.csv"
    df.to_csv(latin, index=False, encoding="latin-1")
    with pytest.raises(InputError, match="not utf-8 text .*--encoding"):
        read_table(latin)
    assert read_table(latin, encoding="latin-1").loc[3, "name"] == "Müller"
    gz = tmp_path / "data.csv.gz"
    with gzip.open(gz, "wt") as fh:
        df.to_csv(fh, index=False)
    pd.testing.assert_frame_equal(read_table(gz), df)
    dup = tmp_path / "dup.csv"
    dup.write_text("a,b,a\n1,2,3\n4,5,6\n")
    with pytest.raises(InputError, match="'a' appears twice"):
        read_table(dup)
    # the CLI: --sep, --encoding, .csv.gz in and out
    out = tmp_path / "out.csv.gz"
    assert main(["microaggregate", str(latin), "-o", str(out), "-k", "3", "--keys", "age,income",
                 "--keep-other", "--encoding", "latin-1", "--keep-order"]) == 0
    with gzip.open(out, "rt") as fh:
        assert pd.read_csv(fh)["name"][3] == "Müller"
    assert main(["microaggregate", str(semi), "-o", str(tmp_path / "o2.csv"), "-k", "3", "--keys", "age,income",
                 "--keep-other", "--sep", ";"]) == 0
    assert main(["microaggregate", str(semi), "-o", str(tmp_path / "o3.csv"), "-k", "3", "--keys", "age,income",
                 "--keep-other"]) == 2
    assert "--sep ';'" in capsys.readouterr().err


def test_messages_give_file_line_numbers(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,2\n3,4\n5,\n7,8\n")  # the missing value is on line 4 of the file
    frame = read_table(path)
    from probanon.data import quasi_identifiers

    with pytest.raises(InputError, match=r"line 4, column 'b'"):
        quasi_identifiers(frame, ["a", "b"])
    path.write_text("a,b\n1,2\n3,4\n5,6\n7,x\n9,1\n")
    with pytest.raises(InputError, match=r"line 5: 'x'"):
        quasi_identifiers(read_table(path), ["a", "b"])
    # an in-memory frame still says "row" (counted from 0)
    with pytest.raises(InputError, match=r"row 2, column 'b'"):
        quasi_identifiers(pd.DataFrame({"a": [1.0, 2, 3], "b": [1.0, 2, np.nan]}), ["a", "b"])


# ------------------------------------------------------------------------------------ seeds, errors

def test_seeds_and_error_types():
    assert issubclass(ProbanonError, ValueError)
    for bad in (-1, 2**63, 2**64, True, 1.5, "3"):
        with pytest.raises(ParameterError):
            check_random_state(bad)
    X = np.random.default_rng(0).normal(size=(40, 2))
    with pytest.raises(ParameterError, match="random_state"):
        PCL(k=5, random_state=-3).fit(X)
    assert check_random_state(2**63 - 1).integers(10) == np.random.default_rng(2**63 - 1).integers(10)
    with pytest.raises(ValueError):  # scikit-learn's convention: bad input is a ValueError
        MDAV(k=0).fit(X)


@pytest.mark.parametrize("seed", ["-1", str(2**64), "x"])
def test_bad_seed_is_one_line(tmp_path, seed):
    path = tmp_path / "in.csv"
    _frame().to_csv(path, index=False)
    run = subprocess.run(PROBANON + ["microaggregate", str(path), "-o", str(tmp_path / "o.csv"), "-k", "3",
                                     "--keys", "age", "--keep-other", "--seed", seed], capture_output=True, text=True)
    assert run.returncode == 2 and not (tmp_path / "o.csv").exists()
    assert run.stderr.startswith("probanon: error: argument --seed") and len(run.stderr.splitlines()) == 1


def test_closed_stdout_ends_quietly(tmp_path):
    path = tmp_path / "in.csv"
    _frame(200).to_csv(path, index=False)
    proc = subprocess.Popen(PROBANON + ["evaluate", str(path), str(path), "--keys", "age,income", "--by-position",
                                        "--json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # like `| head` ending before the command writes
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) != 0
    assert err == ""


def test_output_folders_checked_before_work(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for argv in (["reproduce", "km", "--quick", "--output-dir", str(a_file)],
                 ["demo", "--output-dir", str(a_file)]):
        assert main(argv) == 2
        assert "is a file, not a folder" in capsys.readouterr().err
    assert a_file.read_text() == "x"


def test_km_release_is_shuffled_and_linked(tmp_path, capsys):
    rng = np.random.default_rng(2)
    records = [sorted(set(rng.choice(12, size=rng.integers(1, 4), replace=False).tolist())) for _ in range(80)]
    src = tmp_path / "records.txt"
    src.write_text("".join(" ".join(map(str, r)) + "\n" for r in records))
    out, link = tmp_path / "rel.txt", tmp_path / "link.csv"
    assert main(["km", "anonymize", str(src), "-k", "2", "-m", "2", "--sigma", "1", "--seed", "3", "-o", str(out),
                 "--link", str(link), "--quiet"]) == 0
    assert "never publish" in capsys.readouterr().err
    partition = json.loads((tmp_path / "rel.txt.partition.json").read_text())["partition"]
    released = [sorted(map(int, line.split())) for line in out.read_text().splitlines()]
    expected = [sorted({partition[str(i)] for i in r}) for r in records]
    position = pd.read_csv(link)["released_row"].to_numpy() - 1
    assert [released[p] for p in position] == expected  # the link maps every record to its release
    assert sorted(position) == list(range(len(records))) and list(position) != list(range(len(records)))
    assert main(["km", "anonymize", str(src), "-k", "2", "-m", "2", "--sigma", "1", "--seed", "3",
                 "-o", str(src), "--quiet"]) == 2  # never over its input


def test_microaggregate_says_something_first_and_quiet_silences(tmp_path, capsys):
    path = tmp_path / "in.csv"
    _frame(300).to_csv(path, index=False)
    base = ["microaggregate", str(path), "-k", "5", "--keys", "age,income", "--keep-other", "--method", "pcl",
            "--seed", "1"]
    assert main(base + ["-o", str(tmp_path / "a.csv")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("PCL: 300 records, 2 keys, k = 5\n")  # before the fit (and any compilation)
    # then a line per stage (stderr is not a terminal here; a terminal gets a bar: test_progress.py)
    assert "\npcl: mdav start ...\n" in err and "\npcl: done in " in err
    assert main(base + ["-o", str(tmp_path / "b.csv"), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "PCL: 300" not in err and "pcl: mdav start" not in err and "pcl: done" not in err


def test_eia_identifiers_never_go_out_unassigned(tmp_path, capsys, shared_data):
    """The issue's case: on EIA the company names and states went out verbatim, and the default
    "all numeric columns" averaged the utility ids and months."""
    src = shared_data / "casc" / "eia.csv"
    keys = "RESREVENUE,RESSALES,COMREVENUE,COMSALES,INDREVENUE,INDSALES,OTHREVENUE,OTHRSALES,TOTREVENUE,TOTSALES"
    out = tmp_path / "eia.csv"
    assert main(["microaggregate", str(src), "-o", str(out), "-k", "5", "--keys", keys]) == 2
    assert "columns without a role: UTILITYID, UTILNAME, STATE, YEAR, MONTH" in capsys.readouterr().err
    assert main(["microaggregate", str(src), "-o", str(out), "-k", "5"]) == 2  # no default keys
    assert not out.exists()
    assert main(["microaggregate", str(src), "-o", str(out), "-k", "5", "--keys", keys,
                 "--drop", "UTILITYID,UTILNAME", "--confidential", "STATE,YEAR,MONTH", "--seed", "1"]) == 0
    rel = pd.read_csv(out)
    assert "UTILNAME" not in rel.columns and "UTILITYID" not in rel.columns
    original = pd.read_csv(src)
    assert sorted(rel["MONTH"]) == sorted(original["MONTH"])  # codes kept, never averaged


def test_the_library_takes_lists_the_command_line_splits():
    """Issue 41.1: the library takes lists of column names (one name may be a string, never a
    comma-separated list); the command line splits its comma-separated options once, as it parses."""
    from probanon.cli import build_parser

    cols = ["age", "income", "secret", "name"]
    with pytest.raises(InputError, match="key column 'age,income' is not in the table"):
        assign_roles(cols, "age,income", "secret", "name")
    assert assign_roles(cols, "age", ["secret", "income"], "name") == {
        "age": "key", "income": "confidential", "secret": "confidential", "name": "drop"}
    args = build_parser().parse_args(["microaggregate", "in.csv", "-o", "out.csv", "-k", "3", "--keys", "age, income",
                                      "--confidential", "secret", "--strata", "region,,sex", "--nominal", "sex"])
    assert (args.keys, args.confidential, args.strata, args.nominal) == (["age", "income"], ["secret"],
                                                                          ["region", "sex"], ["sex"])
    times = "2027-01-10T00:00:00Z,2027-02-10T00:00:00Z"
    args = build_parser().parse_args(["collector", "publish", "https://x.example", "--spec", "s.json", "--answers",
                                      "a.json", "--title", "T", "--opens", "2027-01-01T00:00:00Z", "--closes",
                                      "2027-03-01T00:00:00Z", "--interim", times])
    assert args.interim == times.split(",")
    args = build_parser().parse_args(["attack", "o.csv", "r.csv", "--mechanism", "microaggregation", "--keys", "a",
                                      "--intruders", "exact,nearest"])
    assert args.intruders == ["exact", "nearest"]

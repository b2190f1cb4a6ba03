"""Streaming input (issue 16.6): ``probanon apply`` and ``probanon survey assign`` of a file larger
than ``--chunk-size`` records, read, checked and released chunk by chunk. The release equals the
whole-file path's (a file of at most one chunk takes today's path), a bad value in a later chunk
gives the whole-file path's error, and nothing is left behind."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from probanon.cli import main
from probanon.data import read_chunks, read_table, table_dtypes
from probanon.microagg import MDAV
from probanon.outputs import OrderedTableWriter, TableWriter

N = 203  # not a multiple of the chunk sizes below: the last chunk is short


def _table(n=N, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "id": np.arange(1, n + 1),
        "age": rng.integers(18, 90, n),
        "income": np.round(rng.lognormal(10, 0.5, n), 2),
        "spend": np.round(rng.normal(100, 30, n), 3),
        "visits": rng.integers(0, 20, n),
        "region": rng.choice(["north", "south", "east, west"], n),  # a comma: quoted in CSV
    })


@pytest.fixture
def files(tmp_path):
    """A published MDAV function on (age, income) and the table to apply it to."""
    frame = _table()
    model = MDAV(5).fit(frame[["age", "income"]].to_numpy(float))
    model.function_.columns = ["age", "income"]
    func = tmp_path / "f.json"
    func.write_text(model.function_.to_json())
    return func, frame


ROLES = ["--confidential", "spend,visits", "--drop", "id", "--keep-other"]


def _write(frame, path: Path) -> Path:
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False)
    return path


def _read(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)


def _leftovers(folder: Path, *keep) -> list:
    """Files of ``folder`` other than ``keep``: outputs, temporaries or bucket folders."""
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".csv.gz"])
@pytest.mark.parametrize("order", [[], ["--keep-order"]])
def test_chunked_release_equals_the_whole_file_release(tmp_path, files, suffix, order, capsys):
    func, frame = files
    source = _write(frame, tmp_path / ("in" + (".parquet" if suffix == ".parquet" else ".csv")))
    runs = {}
    for name, chunk in (("whole", []), ("chunked", ["--chunk-size", "7"]), ("two", ["--chunk-size", "200"])):
        out, link = tmp_path / f"{name}{suffix}", tmp_path / f"{name}_link.csv"
        assert main(["apply", str(func), str(source), "-o", str(out), "--link", str(link), "--seed", "5",
                     *ROLES, *order, *chunk]) == 0
        runs[name] = (out, link)
        err = capsys.readouterr().err
        assert ("chunks of" in err) == bool(chunk)
    whole_out, whole_link = runs["whole"]
    for name in ("chunked", "two"):
        out, link = runs[name]
        assert link.read_bytes() == whole_link.read_bytes()
        if suffix == ".csv":
            assert out.read_bytes() == whole_out.read_bytes()
        elif suffix == ".csv.gz":
            assert gzip.decompress(out.read_bytes()) == gzip.decompress(whole_out.read_bytes())
        else:
            pd.testing.assert_frame_equal(_read(out), _read(whole_out), check_exact=True)
    # independently: the release is the input's records in the link's order, keys replaced by
    # the function's centroids, the direct identifier removed
    released = pd.read_csv(runs["chunked"][0]) if suffix != ".parquet" else _read(runs["chunked"][0])
    link = pd.read_csv(runs["chunked"][1])
    original = frame.iloc[link.sort_values("released_row")["original_row"].to_numpy() - 1].reset_index(drop=True)
    assert list(released.columns) == ["age", "income", "spend", "visits", "region", "cell"]
    pd.testing.assert_frame_equal(released[["spend", "visits", "region"]], original[["spend", "visits", "region"]],
                                  check_exact=True)
    from probanon.microagg import function_from_json

    function = function_from_json(func)
    expected = np.asarray(function.centroids)[function.assign(original[["age", "income"]].to_numpy(float))]
    np.testing.assert_array_equal(released[["age", "income"]].to_numpy(), expected)
    assert not order or (link["original_row"] == link["released_row"]).all()
    assert _leftovers(tmp_path, source.name, func.name, *[p.name for r in runs.values() for p in r]) == []


def test_chunked_release_keeps_the_whole_file_column_types(tmp_path, files):
    """A column read as integers in some chunks and as floats in another, and one of numbers in
    some chunks and text in another, are written as the whole file's columns are (3.0, not 3)."""
    func, frame = files
    frame = frame.astype({"visits": float})
    frame.loc[150, "visits"] = 2.5
    frame["region"] = frame["region"].where(frame.index < 180, "17")
    frame.loc[190, "region"] = "not a number"
    source = _write(frame, tmp_path / "in.csv")
    for name, chunk in (("whole", []), ("chunked", ["--chunk-size", "10"])):
        assert main(["apply", str(func), str(source), "-o", str(tmp_path / f"{name}.csv"), "--seed", "1", "--quiet",
                     *ROLES, *chunk]) == 0
    assert (tmp_path / "chunked.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
    assert pd.read_csv(tmp_path / "whole.csv", dtype=str)["visits"].str.endswith(".0").sum() == len(frame) - 1


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
@pytest.mark.parametrize("bad", ["missing", "text", "confidential"])
def test_bad_value_in_a_later_chunk(tmp_path, files, capsys, suffix, bad):
    func, frame = files
    record = 150  # in the 22nd chunk of 7
    if bad == "missing":
        frame = frame.astype({"income": float})
        frame.loc[record, "income"] = np.nan
    elif bad == "text":
        frame = frame.astype({"income": object})
        frame.loc[record, "income"] = "12x"
    else:  # the audit checks the numeric confidential columns (a missing value there is released as it is)
        frame = frame.astype({"spend": float})
        frame.loc[record, "spend"] = np.inf
    if suffix == ".parquet" and bad == "text":
        frame["income"] = frame["income"].astype(str)
    source = _write(frame, tmp_path / f"in{suffix}")
    errors = []
    for chunk in ([], ["--chunk-size", "7"]):
        out = tmp_path / f"out{suffix}"
        assert main(["apply", str(func), str(source), "-o", str(out), "--link", str(tmp_path / "link.csv"),
                     *ROLES, *chunk]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        errors.append(err[-1])
        assert err[-1].startswith("probanon: error: ")
        assert _leftovers(tmp_path, source.name, func.name) == []
    assert errors[0] == errors[1]
    # the record's place in the file: CSV line (header = line 1), Parquet row (from 0)
    where = f"line {record + 2}" if suffix == ".csv" else f"row {record}"
    assert where in errors[1]


def test_a_file_of_one_chunk_takes_the_whole_file_path(tmp_path, files, capsys):
    func, frame = files
    source = _write(frame, tmp_path / "in.csv")
    assert main(["apply", str(func), str(source), "-o", str(tmp_path / "out.csv"), *ROLES,
                 "--chunk-size", str(N)]) == 0
    err = capsys.readouterr().err
    assert "chunks of" not in err and "apply:" not in err and f"({N} records, records in random order" in err


def test_progress_bar_in_the_cli_and_quiet_library(tmp_path, files, capsys):
    func, frame = files
    source = _write(frame, tmp_path / "in.csv")
    assert main(["apply", str(func), str(source), "-o", str(tmp_path / "a.csv"), *ROLES, "--chunk-size", "50"]) == 0
    err = capsys.readouterr().err
    for stage in ("reading", "applying", "writing"):
        assert f"apply: {stage}" in err
    assert "\napply: done in " in err and "records in 5 chunks" in err  # not a terminal: a line per stage
    assert main(["apply", str(func), str(source), "-o", str(tmp_path / "b.csv"), *ROLES, "--chunk-size", "50",
                 "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "apply: " not in err and "%|" not in err
    # the library: reading and writing in chunks print nothing
    chunks = list(read_chunks(source, 50))
    writer = TableWriter(tmp_path / "c.csv")
    for chunk in chunks:
        writer.append(chunk)
    writer.close()
    ordered = OrderedTableWriter(tmp_path / "d.parquet", N, 50)
    for i, chunk in enumerate(chunks):
        ordered.place(chunk, N - 1 - np.arange(i * 50, i * 50 + len(chunk)))
    ordered.close()
    assert capsys.readouterr() == ("", "")
    assert writer.tmp.read_bytes() == source.read_bytes()
    pd.testing.assert_frame_equal(pd.read_parquet(ordered.tmp), read_table(source).iloc[::-1].reset_index(drop=True))
    ordered.discard()
    writer.discard()
    assert _leftovers(tmp_path, source.name, func.name, "a.csv", "b.csv") == []


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_chunks_are_the_whole_table(tmp_path, suffix):
    frame = _table()
    frame["visits"] = frame["visits"].astype(float).where(frame.index != 120)  # floats in one chunk only
    source = _write(frame, tmp_path / f"in{suffix}")
    whole = read_table(source)
    assert len(list(read_chunks(source, 7))) == -(-N // 7)
    one = next(read_chunks(source, 10**6))
    pd.testing.assert_frame_equal(one, whole)
    assert one.attrs.get("first_line") == whole.attrs.get("first_line")
    types = table_dtypes([c.dtypes.to_dict() for c in read_chunks(source, 7)])
    chunks = list(read_chunks(source, 7, dtypes=types))
    assert [c.attrs for c in chunks] == [{"first_line": 2 + 7 * i} if suffix == ".csv" else {"first_row": 7 * i}
                                         for i in range(len(chunks))]
    pd.testing.assert_frame_equal(pd.concat(chunks, ignore_index=True), whole, check_exact=True)


def test_survey_assign_in_chunks(tmp_path, capsys):
    from probanon.survey.design import design
    from probanon.survey.spec import build_spec
    import json

    frame = _table(300, seed=3)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(build_spec(design(frame[["age", "income"]], 3, 0.8, 0.05))))
    source = _write(frame, tmp_path / "responses.csv")
    for name, chunk in (("whole", []), ("chunked", ["--chunk-size", "16"])):
        assert main(["survey", "assign", str(spec), str(source), "-o", str(tmp_path / f"{name}.csv"), "--seed", "2",
                     *ROLES, *chunk]) == 0
    assert "chunks of 16" in capsys.readouterr().err
    assert (tmp_path / "chunked.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()


MEASURE = """
import sys, tracemalloc
from probanon.cli import build_parser, main
build_parser(sys.argv[2:])  # the command's modules imported before the measure, as 'import probanon.cli' once did
tracemalloc.start()
code = main(sys.argv[2:])
peak = tracemalloc.get_traced_memory()[1]
print(peak)
sys.exit(3 if peak > int(sys.argv[1]) else code)
"""


def test_memory_stays_bounded(tmp_path):
    """The apply runs in a subprocess that refuses (exit 3) a peak of traced allocations above
    the size of the file's values as one float64 array: reading the file at once exceeds it,
    chunks of 10,000 records stay below (the audit's sample: 2 keys and 1 confidential column)."""
    n, d = 150_000, 40
    rng = np.random.default_rng(7)
    frame = pd.DataFrame(np.round(rng.normal(size=(n, d)), 4), columns=[f"x{j}" for j in range(d)])
    model = MDAV(50).fit(frame[["x0", "x1"]].iloc[:5000].to_numpy())
    model.function_.columns = ["x0", "x1"]
    func = tmp_path / "f.json"
    func.write_text(model.function_.to_json())
    source = _write(frame, tmp_path / "big.csv")
    limit = n * d * 8
    command = [sys.executable, "-c", MEASURE, str(limit), "apply", str(func), str(source), "--confidential", "x2",
               "--drop", ",".join(f"x{j}" for j in range(3, d)), "--quiet", "-o"]
    chunked = subprocess.run(command + [str(tmp_path / "chunked.csv"), "--chunk-size", "10000"],
                             capture_output=True, text=True, timeout=600)
    assert chunked.returncode == 0, chunked.stderr
    assert int(chunked.stdout) < limit
    whole = subprocess.run(command + [str(tmp_path / "whole.csv")], capture_output=True, text=True, timeout=600)
    assert whole.returncode == 3 and int(whole.stdout) > limit
    assert len(pd.read_csv(tmp_path / "chunked.csv", usecols=["x0"])) == n


def test_audit_of_a_chunked_file(tmp_path, files, capsys):
    """A confidential column determined by a key stops the release as on the whole file (the
    audit's sample holds every record of a file of fewer than 100,000), and --accept-risk
    publishes it with the same warning."""
    func, frame = files
    frame["spend"] = 2 * frame["income"] + 1
    source = _write(frame, tmp_path / "in.csv")
    outputs = []
    for extra in ([], ["--accept-risk"]):
        lines = []
        for name, chunk in (("whole", []), ("chunked", ["--chunk-size", "20"])):
            out = tmp_path / f"{name}.csv"
            assert main(["apply", str(func), str(source), "-o", str(out), "--seed", "4", "--quiet", *ROLES, *extra,
                         *chunk]) == (0 if extra else 2)
            lines.append([line for line in capsys.readouterr().err.splitlines() if line.startswith("probanon:")])
            outputs.append(out.read_bytes() if extra else out.exists())
        assert lines[0] == lines[1] and len(lines[0]) == 1 and "spend" in lines[0][0]
    assert outputs[:2] == [False, False] and outputs[2] == outputs[3]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_chunked_apply_of_a_stratified_function(tmp_path, suffix, capsys):
    """A function fitted within strata (a text and a numeric strata column, a small stratum
    merged) is applied chunk by chunk as to the whole file: the chunks' audit sample holds the
    strata columns the release publishes (the whole file's audit reads them too)."""
    frame = _table().assign(sex=lambda f: 1 + np.arange(len(f)) % 2)
    frame.loc[[10, 100, 200], "region"] = "islands"  # 3 records: merged into a neighbour (k = 5)
    source = _write(frame, tmp_path / f"in{suffix}")
    func = tmp_path / "f.json"
    assert main(["microaggregate", str(source), "-o", str(tmp_path / f"fit{suffix}"), "--keys", "age,income",
                 "--strata", "region,sex", "--merge-small-strata", "--function", str(func), "-k", "5",
                 "--seed", "1", "--quiet", *ROLES]) == 0
    for name, chunk in (("whole", []), ("chunked", ["--chunk-size", "50"])):
        assert main(["apply", str(func), str(source), "-o", str(tmp_path / f"{name}{suffix}"), "--link",
                     str(tmp_path / f"{name}_link.csv"), "--seed", "5", "--quiet", *ROLES, *chunk]) == 0
    assert "records in 5 chunks" in capsys.readouterr().err
    whole, chunked = tmp_path / f"whole{suffix}", tmp_path / f"chunked{suffix}"
    if suffix == ".csv":
        assert chunked.read_bytes() == whole.read_bytes()
    else:
        pd.testing.assert_frame_equal(_read(chunked), _read(whole), check_exact=True)
    assert (tmp_path / "chunked_link.csv").read_bytes() == (tmp_path / "whole_link.csv").read_bytes()
    # independently: the strata columns released as they are, but the merged strata: the islands
    # (all of sex 1) and the next stratum in sorted order, (north, 1), recoded as one
    released, link = _read(chunked), pd.read_csv(tmp_path / "chunked_link.csv")
    original = frame.iloc[link.sort_values("released_row")["original_row"].to_numpy() - 1].reset_index(drop=True)
    assert list(released.columns) == ["age", "income", "spend", "visits", "region", "sex", "cell"]
    assert (released["sex"] == original["sex"]).all()
    merged = original["region"].isin(["islands", "north"]) & (original["sex"] == 1)
    assert (released["region"][~merged] == original["region"][~merged]).all()
    assert (released["region"][merged] == "islands+north").all()


def _digit_like_regions(n=N, seed=4) -> pd.DataFrame:
    """A nominal key whose values look like numbers in the first 150 records ('2', '3', '5') and
    not in the others ('2', 'A', '3'): a chunk of the first records alone reads as integers."""
    frame = _table(n, seed)
    rng = np.random.default_rng(seed)
    frame["region"] = np.where(np.arange(n) < 150, rng.choice(["2", "3", "5"], n), rng.choice(["2", "A", "3"], n))
    return frame


def test_chunked_apply_of_a_nominal_key_that_looks_numeric(tmp_path, capsys):
    """A nominal key is read as text in every chunk, as the whole file reads it (a chunk of
    '2', '3' and '5' alone would read as integers, which are no fitted category)."""
    frame = _digit_like_regions()
    source = _write(frame, tmp_path / "in.csv")
    func = tmp_path / "f.json"
    assert main(["microaggregate", str(source), "-o", str(tmp_path / "fit.csv"), "--keys", "age,income",
                 "--nominal", "region", "--function", str(func), "-k", "5", "--seed", "1", "--quiet", *ROLES]) == 0
    for name, chunk in (("whole", []), ("chunked", ["--chunk-size", "50"])):
        assert main(["apply", str(func), str(source), "-o", str(tmp_path / f"{name}.csv"), "--link",
                     str(tmp_path / f"{name}_link.csv"), "--seed", "5", "--quiet", *ROLES, *chunk]) == 0
    assert "records in 5 chunks" in capsys.readouterr().err
    assert (tmp_path / "chunked.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
    assert (tmp_path / "chunked_link.csv").read_bytes() == (tmp_path / "whole_link.csv").read_bytes()
    # independently: each record's region is its cell's (the function's) category, as text
    from probanon.microagg import function_from_json

    released = pd.read_csv(tmp_path / "chunked.csv", dtype={"region": str})
    centroids = np.asarray(function_from_json(func).centroids, dtype=object)
    assert released["region"].tolist() == [str(v) for v in centroids[released["cell"], 2]]
    assert set(released["region"]) <= {"2", "3", "5", "A"}


def test_chunked_survey_assign_of_a_nominal_key_that_looks_numeric(tmp_path, capsys):
    """'survey assign' reads a tree design's nominal key as text in every chunk too."""
    from probanon.survey.design import design
    from probanon.survey.spec import build_spec, verify
    import json

    frame = _digit_like_regions(300, seed=6)
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(build_spec(design(frame[["age", "income", "region"]], 3, 0.8, 0.05, method="tree",
                                                 nominal=["region"]))))
    source = _write(frame, tmp_path / "responses.csv")
    for name, chunk in (("whole", []), ("chunked", ["--chunk-size", "50"])):
        assert main(["survey", "assign", str(spec), str(source), "-o", str(tmp_path / f"{name}.csv"), "--seed", "2",
                     "--keep-order", *ROLES, *chunk]) == 0
    assert "chunks of 50" in capsys.readouterr().err
    assert (tmp_path / "chunked.csv").read_bytes() == (tmp_path / "whole.csv").read_bytes()
    # independently: the cells are the specification's, from the keys read as text
    assigned = pd.read_csv(tmp_path / "chunked.csv")
    expected = verify(str(spec)).function.assign(frame[["age", "income", "region"]])
    assert assigned["cell"].tolist() == expected.tolist()

"""Blocked microaggregation of a Parquet directory on Dask (issue 19.2,
probanon.distributed.partitioned): the data stay on a 2-worker LocalCluster, and the fit is the
one-process blocked fit of the concatenated files, bit for bit; the release is written one file
per input file, all or nothing."""

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from probanon.distributed.partitioned import _cut_in_window, audit_files, fit_parquet, parquet_files  # noqa: E402
from probanon.errors import InputError, ParameterError  # noqa: E402
from probanon.microagg import MDAV, PCL  # noqa: E402
from probanon.microagg.blocks import _cut_position  # noqa: E402
from dask_support import client, survive_a_killed_worker  # noqa: E402,F401 (client: a fixture)

KEYS = ["a", "b", "c"]


def test_a_window_decides_only_what_the_whole_decides():
    rng = np.random.default_rng(0)
    decided = 0
    for _ in range(3000):
        m, k = int(rng.integers(6, 80)), int(rng.integers(1, 6))
        s = np.sort(rng.integers(0, int(rng.integers(1, 30)), m)).astype(float)  # many ties
        target = k * round(m / 2 / k)
        start = int(rng.integers(0, m))
        stop = int(rng.integers(start + 1, m + 1))
        found = _cut_in_window(*np.unique(s[start:stop], return_counts=True), start, m, k, target)
        whole = _cut_position(s, k, target)
        if found[0] == "cut":
            decided += 1
            assert found[1] == whole and (found[2], found[3]) == (s[whole - 1], s[whole])
        elif found[0] == "none":
            assert whole is None and (start, stop) == (0, m)
        if (start, stop) == (0, m):
            assert found[0] != "wider"
    assert decided > 500


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """3,000 rows in five files of uneven size (one empty), a key with ties, two other columns."""
    rng = np.random.default_rng(3)
    n = 3000
    X = rng.normal(size=(n, 3)) @ rng.normal(size=(3, 3))
    X[:, 2] = np.round(X[:, 2])
    frame = pd.DataFrame(X, columns=KEYS).assign(id=np.arange(n), town=rng.choice(["x", "y"], n))
    path = tmp_path_factory.mktemp("parquet") / "in"
    path.mkdir()
    cuts = [0, 700, 700, 1900, 2500, n]
    for p in range(len(cuts) - 1):
        frame.iloc[cuts[p]:cuts[p + 1]].to_parquet(path / f"part{p}.parquet", index=False)
    return path, frame, np.diff(cuts)


@pytest.mark.parametrize("cls, params", [(MDAV, {"block_size": 400}), (PCL, {"block_size": 700, "random_state": 7})])
def test_same_fit_and_release_as_one_process(client, folder, tmp_path, cls, params):
    path, frame, sizes = folder
    local = cls(k=4, **params).fit(frame[KEYS])
    remote = fit_parquet(client, cls(k=4, **params), path, keys=KEYS, output=tmp_path / "out")
    assert remote.n_blocks_ == local.n_blocks_ >= 4
    np.testing.assert_array_equal(remote.labels_, local.labels_)
    assert remote.function_.to_json() == local.function_.to_json()
    np.testing.assert_array_equal(remote.centroids_, local.centroids_)
    files = sorted((tmp_path / "out").iterdir())
    assert [f.name for f in files] == [f"part-{p:05d}.parquet" for p in range(5)]
    released = [pd.read_parquet(f) for f in files]
    assert [len(r) for r in released] == list(sizes)
    for r, start in zip(released, np.concatenate([[0], np.cumsum(sizes)[:-1]])):  # each file's own rows
        assert set(r["id"]) == set(range(start, start + len(r)))
    out = pd.concat(released).sort_values("id")
    np.testing.assert_array_equal(out[KEYS].to_numpy(), local.centroids_[local.labels_])
    np.testing.assert_array_equal(out["town"].to_numpy(), frame["town"].to_numpy())
    assert not (released[2]["id"].to_numpy() == np.arange(700, 1900)).all()  # rows in random order


def test_bad_input_is_one_error_and_writes_nothing(client, folder, tmp_path):
    path, frame, _ = folder
    out = tmp_path / "out"
    with pytest.raises(InputError, match="not a directory"):
        fit_parquet(client, MDAV(k=3, block_size=100), tmp_path / "nothing", output=out)
    with pytest.raises(InputError, match="no .parquet file"):
        fit_parquet(client, MDAV(k=3, block_size=100), tmp_path, output=out)
    odd = tmp_path / "odd"
    odd.mkdir()
    frame.iloc[:100].to_parquet(odd / "1.parquet", index=False)
    frame.iloc[100:200].assign(c=frame["town"].iloc[100:200]).to_parquet(odd / "2.parquet", index=False)
    with pytest.raises(InputError, match="'c' is not numeric"):
        fit_parquet(client, MDAV(k=3, block_size=50), odd, keys=KEYS, output=out)
    (odd / "2.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match="2.parquet: cannot be read as Parquet"):
        fit_parquet(client, MDAV(k=3, block_size=50), odd, keys=KEYS, output=out)
    frame.iloc[100:200].drop(columns="c").to_parquet(odd / "2.parquet", index=False)
    with pytest.raises(InputError, match="2.parquet: its columns differ"):
        fit_parquet(client, MDAV(k=3, block_size=50), odd, keys=KEYS, output=out)
    (odd / "2.parquet").write_bytes(b"not parquet")
    with pytest.raises(InputError, match="2.parquet: cannot be read as Parquet"):
        fit_parquet(client, MDAV(k=3, block_size=50), odd, keys=KEYS, output=out)
    frame.iloc[100:200].to_parquet(odd / "2.parquet", index=False)
    with pytest.raises(InputError, match="key column 'q' is not in the files$"):
        fit_parquet(client, MDAV(k=3, block_size=50), odd, keys=["a", "q"], output=out)
    frame.iloc[100:200].assign(ssn=1).to_parquet(odd / "2.parquet", index=False)
    with pytest.raises(InputError, match="2.parquet: its columns differ from those of .*1.parquet \\(column 'ssn'\\)$"):
        fit_parquet(client, MDAV(k=3, block_size=50), odd, keys=KEYS, output=out)
    with pytest.raises(ParameterError, match="block_size"):
        fit_parquet(client, MDAV(k=3), path, keys=KEYS, output=out)
    (tmp_path / "taken").mkdir()
    with pytest.raises(InputError, match="already exists"):
        fit_parquet(client, MDAV(k=3, block_size=100), path, keys=KEYS, output=tmp_path / "taken")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["odd", "taken"]


def test_a_worker_killed_in_the_middle_is_survived(client, folder):
    path, frame, _ = folder
    expected = PCL(k=4, block_size=200, random_state=3).fit(frame[KEYS])
    result = {"fit": survive_a_killed_worker(
        client, lambda: fit_parquet(client, PCL(k=4, block_size=200, random_state=3), path, keys=KEYS))}
    np.testing.assert_array_equal(result["fit"].labels_, expected.labels_)
    assert result["fit"].function_.to_json() == expected.function_.to_json()


def test_audit_sees_a_regression_that_no_file_shows(client, tmp_path):
    rng = np.random.default_rng(5)
    a = np.sort(rng.uniform(0, 100, 4000))  # files cut along the key: within a file R^2 ~ 0.93
    frame = pd.DataFrame({"a": a, "b": rng.normal(size=4000), "inc": 3 * a + rng.normal(0, 3, 4000)})
    for p in range(8):
        frame.iloc[p * 500:(p + 1) * 500].to_parquet(tmp_path / f"{p}.parquet", index=False)
    frame.iloc[:0].to_parquet(tmp_path / "9-empty.parquet", index=False)
    files = parquet_files(tmp_path)
    findings = audit_files(client, files, ["a", "b"], ["inc"])
    assert [where for where, _ in findings] == ["all the files"]
    assert {f.column for f in findings[0][1].findings} <= {"a", "inc"}


def test_ties_travel_once_with_their_count():
    from probanon.distributed.partitioned import _query

    Z = np.repeat([[0.0, 1.0], [2.0, 1.0], [5.0, 0.0]], [700, 200, 100], axis=0)
    start, values, counts = _query(Z, {}, {0: ("window", np.array([1.0, 0.0]), -np.inf, np.inf)})[0]
    assert start == 0 and list(values) == [0.0, 2.0, 5.0] and list(counts) == [700, 200, 100]


def _sorted_rows(A):
    return A[np.lexsort(A.T[::-1])]


def test_cli_folder_in_folder_out(folder, tmp_path, capsys):
    from probanon.cli import main
    from probanon.metrics import information_loss

    path, frame, sizes = folder
    out, func = tmp_path / "out.parquet", tmp_path / "f.json"
    base = ["microaggregate", str(path), "-o", str(out), "-k", "4", "--keys", "a,b,c", "--confidential", "town",
            "--drop", "id", "--block-size", "400", "--seed", "3", "--quiet"]
    assert main(base) != 0
    err = capsys.readouterr().err.strip()
    assert "give --workers N" in err and len(err.splitlines()) == 1 and not out.exists()
    assert main(base + ["--workers", "2", "--function", str(func)]) == 0
    err = capsys.readouterr().err
    local = MDAV(k=4, block_size=400).fit(frame[KEYS])
    assert func.read_text() == local.function_.to_json(indent=1)
    released = [pd.read_parquet(f) for f in sorted(out.iterdir())]
    assert [len(r) for r in released] == list(sizes) and list(released[0].columns) == KEYS + ["town"]
    want = local.centroids_[local.labels_]
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    for r, a, b in zip(released, bounds, bounds[1:]):  # each file holds its own rows' group means
        np.testing.assert_array_equal(_sorted_rows(r[KEYS].to_numpy()), _sorted_rows(want[a:b]))
    il = information_loss(frame[KEYS].to_numpy(), want)
    assert f"information loss = {il:.2f} %" in err and "Dask: 2 workers" in err
    relation = tmp_path / "rel"
    relation.mkdir()
    frame.assign(total=frame["a"] + frame["b"]).to_parquet(relation / "1.parquet", index=False)
    out2 = tmp_path / "out2.parquet"
    assert main(["microaggregate", str(relation), "-o", str(out2), "-k", "4", "--keys", "a,b,c", "--confidential",
                 "total", "--keep-other", "--block-size", "400", "--workers", "2", "--quiet"]) != 0
    assert "pre-release audit found in" in capsys.readouterr().err and not out2.exists()

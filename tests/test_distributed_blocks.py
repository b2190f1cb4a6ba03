"""Blocked microaggregation on Dask (issue 19.2): a 2-worker LocalCluster on 127.0.0.1 gives the
single-machine blocked result for the same seed, survives a worker killed in the middle of a run,
and an unreachable scheduler is a one-line error within seconds."""

import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from probanon.cli import main  # noqa: E402
from probanon.distributed import ClusterError, dask_client, describe, on_dask  # noqa: E402
from probanon.microagg import MDAV, PCL, VMDAV  # noqa: E402
from dask_support import client, survive_a_killed_worker  # noqa: E402,F401 (client: a fixture)


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(3)
    return rng.normal(size=(6000, 4)) * [1.0, 3.0, 0.5, 2.0]


@pytest.mark.parametrize("cls, params", [(MDAV, {}), (VMDAV, {}), (PCL, {"random_state": 7})])
def test_same_result_as_local_blocks(client, data, cls, params):
    local = cls(k=5, block_size=1000, n_jobs=1, **params).fit(data)
    with on_dask(client):
        remote = cls(k=5, block_size=1000, **params).fit(data)
    assert remote.n_blocks_ == local.n_blocks_ == 8
    np.testing.assert_array_equal(remote.labels_, local.labels_)
    assert remote.function_.to_json() == local.function_.to_json()
    np.testing.assert_array_equal(remote.transform(data), local.transform(data))


def test_describe_names_the_workers(client):
    line = describe(client)
    assert line.startswith("Dask: 2 workers, scheduler tcp://127.0.0.1:")


def test_a_worker_killed_in_the_middle_is_survived(client, data):
    X = np.vstack([data, data[:, ::-1] + 0.1])  # 12,000 records: 16 PCL blocks of 750
    expected = PCL(k=5, block_size=750, n_jobs=1, random_state=3).fit(X)

    def fit():
        with on_dask(client):
            return PCL(k=5, block_size=750, random_state=3).fit(X)

    result = {"fit": survive_a_killed_worker(client, fit)}
    np.testing.assert_array_equal(result["fit"].labels_, expected.labels_)
    assert result["fit"].function_.to_json() == expected.function_.to_json()


def test_unreachable_scheduler_is_a_one_line_error_within_seconds(tmp_path, capsys):
    start = time.monotonic()
    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler at 'tcp://127.0.0.1:1'"):
        with dask_client("tcp://127.0.0.1:1", timeout=2):
            pass
    assert time.monotonic() - start < 15
    path, out = tmp_path / "x.csv", tmp_path / "out.csv"
    pd.DataFrame(np.random.default_rng(0).normal(size=(200, 2)), columns=["a", "b"]).to_csv(path, index=False)
    capsys.readouterr()
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "3", "--keys", "a,b", "--block-size", "50",
                 "--scheduler", "tcp://127.0.0.1:1", "--quiet"]) != 0
    err = capsys.readouterr().err.strip()
    assert "cannot reach the Dask scheduler" in err and len(err.splitlines()) == 1 and not out.exists()
    assert main(["microaggregate", str(path), "-o", str(out), "-k", "3", "--keys", "a,b", "--method", "ranking",
                 "--workers", "2", "--quiet"]) != 0
    assert "not ranking" in capsys.readouterr().err and not out.exists()


def test_cli_workers_give_the_local_release(tmp_path, capsys):
    rng = np.random.default_rng(1)
    frame = pd.DataFrame(rng.normal(size=(3000, 3)), columns=["a", "b", "c"]).assign(y=rng.integers(0, 9, 3000))
    path = tmp_path / "x.csv"
    frame.to_csv(path, index=False)
    outs = []
    for extra in ([], ["--workers", "2"]):
        out = tmp_path / f"out{len(outs)}.csv"
        assert main(["microaggregate", str(path), "-o", str(out), "-k", "4", "--keys", "a,b,c", "--confidential", "y",
                     "--method", "pcl", "--block-size", "800", "--seed", "5", "--quiet", *extra]) == 0
        outs.append(out.read_bytes())
    assert "Dask: 2 workers" in capsys.readouterr().err
    assert outs[0] == outs[1]

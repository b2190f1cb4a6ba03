"""k^m-anonymity on Dask (issue 19.1): a 2-worker LocalCluster on 127.0.0.1 gives the
single-machine release for the same seed, with the r runs as tasks and with the records sharded
over the workers; a worker killed in the middle of a sharded run is survived (its shard is read
again by another worker and the run's merges replayed); an unreachable scheduler is a one-line
error within seconds."""

import json
import threading
import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from probanon.cli import main  # noqa: E402
from probanon.distributed.km import ShardedRecords, _range_lines, _ShardedState, runs_on_dask  # noqa: E402
from probanon.errors import InputError, ParameterError  # noqa: E402
from probanon.setvalued import anonymize, read_fimi, release_records  # noqa: E402
from probanon.setvalued.constraints import constraints_from_coordinates  # noqa: E402
from dask_support import client, kill_worker  # noqa: E402,F401 (client: a fixture)


def _fimi(path, n, m, seed):
    """n records over m items with Zipf-like popularity (rare itemsets: Algorithm 2 must merge)."""
    rng = np.random.default_rng(seed)
    w = 1.0 / np.arange(1, m + 1) ** 0.8
    lines = [" ".join(map(str, sorted(rng.choice(m, size=min(m, 1 + rng.poisson(3)), replace=False, p=w / w.sum()))))
             for _ in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("km")
    rng = np.random.default_rng(2)
    coords = root / "items.csv"
    pd.DataFrame({"item": np.arange(60), "x": rng.uniform(0, 1e4, 60), "y": rng.uniform(0, 1e4, 60)}).to_csv(
        coords, index=False)
    return _fimi(root / "records.txt", 2500, 60, 1), coords


def _same(a, b):
    """Two Generalizations are the same release: partition, errors of every run, seed, levels, merges."""
    np.testing.assert_array_equal(a.partition, b.partition)
    assert (a.err, a.run_errors, a.seed, a.levels) == (b.err, b.run_errors, b.seed, b.levels)
    assert len(a.merges) == len(b.merges) and all(np.array_equal(x, y) for x, y in zip(a.merges, b.merges))


def test_runs_as_tasks_give_the_local_result(client, files):
    path, coords = files
    data = read_fimi(path)
    local = anonymize(data, 5, 3, 0.9, constraints_from_coordinates(coords), runs=3, random_state=4, n_jobs=1)
    assert local.n_parts < data.n_items and len(set(local.run_errors)) == 3  # merges made, runs differ
    with runs_on_dask(client):
        remote = anonymize(data, 5, 3, 0.9, constraints_from_coordinates(coords), runs=3, random_state=4)
    _same(remote, local)


@pytest.mark.parametrize("case", ["coordinates", "no-constraint-no-pair-index"])
def test_sharded_records_give_the_local_release(client, files, case):
    path, coords = files
    data = read_fimi(path)
    cons = (lambda: constraints_from_coordinates(coords)) if case == "coordinates" else (lambda: None)
    budget = {"pair_budget": 0} if case != "coordinates" else {}
    k, sigma = (5, 0.9) if case == "coordinates" else ((4, 6, 8), (0.9, 0.95, 0.9))
    local = anonymize(data, k, 3, sigma, cons(), runs=2, random_state=7, n_jobs=1, **budget)
    assert sum(lv.n_merges for lv in local.levels) > 5
    with ShardedRecords(client, path, shards=3, **budget) as records:  # more shards than workers
        assert (records.n_records, records.n_items) == (data.n_records, data.n_items)
        sharded = records.anonymize(k, 3, sigma, cons(), runs=2, random_state=7)
        text = records.released(sharded)
    _same(sharded, local)
    expected = "".join(" ".join(map(str, r)) + "\n" for r in release_records(data, local))
    assert text.decode("ascii") == expected


def test_small_windows_give_the_local_release(client, files, monkeypatch):
    """Windows of 7 rows: the samples of a level span many round trips, fixes land on window
    boundaries and the rows tested after a merge run past the window of the first failure."""
    path, coords = files
    local = anonymize(read_fimi(path), 5, 3, 0.9, constraints_from_coordinates(coords), runs=2, random_state=5,
                      n_jobs=1)
    monkeypatch.setattr(_ShardedState, "WINDOW", 7)
    with ShardedRecords(client, path) as records:
        sharded = records.anonymize(5, 3, 0.9, constraints_from_coordinates(coords), runs=2, random_state=5,
                                    at_once=1)  # the runs one after the other
    _same(sharded, local)


def test_levels_of_the_runs_are_counted_in_the_one_progress_form(client, files):
    """Issue 41.5: r = 2 runs of m = 3 levels report progress("levels", done, 6), done growing to 6,
    whether the runs are tasks or their records shards (then the levels of runs made at once)."""
    path, coords = files
    data = read_fimi(path)
    for where in ("tasks", "shards"):
        calls = []
        with runs_on_dask(client) if where == "tasks" else ShardedRecords(client, path) as records:
            if where == "tasks":
                anonymize(data, 5, 3, 0.9, constraints_from_coordinates(coords), runs=2, random_state=3,
                          progress=lambda *call: calls.append(call))
            else:
                records.anonymize(5, 3, 0.9, constraints_from_coordinates(coords), runs=2, random_state=3,
                                  progress=lambda *call: calls.append(call))
        done = [d for _, d, _ in calls]
        assert {(stage, total) for stage, _, total in calls} == {("levels", 6)}, where
        assert done == sorted(done) and done[-1] == 6, (where, done)


@pytest.mark.parametrize("count", [1, 2, 3, 5])
def test_byte_ranges_split_the_lines(tmp_path, count):
    """Every line lies in exactly one range, whole, in order, whatever the read size (down to 1 byte)."""
    path = tmp_path / "lines.txt"
    path.write_bytes(b"1 2 3\n44\n\n5 66 7\n8\n999 1\n2")  # a blank line, no final newline
    expected = path.read_bytes().split(b"\n")
    for chunk in (1, 2, 3, 5, 8, 1 << 20):
        got = [line for j in range(count) for lines in _range_lines(path, j, count, chunk) for line in lines]
        assert got == expected, (chunk, got)


def test_a_worker_killed_in_a_sharded_run_is_survived(client, files):
    path, coords = files
    expected = anonymize(read_fimi(path), 5, 3, 0.9, constraints_from_coordinates(coords), runs=3, random_state=11,
                         n_jobs=1)
    result, errors = {}, []
    with ShardedRecords(client, path) as records:
        def run():
            try:
                result["g"] = records.anonymize(5, 3, 0.9, constraints_from_coordinates(coords), runs=3,
                                                random_state=11)  # two runs at once: both replayed
            except Exception as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        deadline = time.monotonic() + 60
        while not any(len(s.log) >= 3 for s in list(records.runs.values())) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert records.runs, "the run did not start"
        victim = records.actors[0]._address
        kill_worker(client, victim)
        thread.join(timeout=120)
        assert not thread.is_alive() and not errors, errors
        assert records.actors[0]._address != victim  # shard 0 was read again elsewhere
    _same(result["g"], expected)


def test_a_shard_behind_the_merges_sent_gets_the_rest(client, files, monkeypatch):
    """A revived shard may have applied fewer merges than the client counts as sent (the replay
    took a snapshot of the log while the run went on): it answers with how many it has and gets
    the rest. Here the client always believes shard 0 up to date, so every query takes that path."""
    path, coords = files
    local = anonymize(read_fimi(path), 5, 3, 0.9, constraints_from_coordinates(coords), runs=2, random_state=6,
                      n_jobs=1)
    counts, behind = _ShardedState.counts, []

    def believed_up_to_date(self, parts, lens, k):
        behind.append(len(self.log) - self.sent[0])
        self.sent[0] = len(self.log)
        return counts(self, parts, lens, k)

    monkeypatch.setattr(_ShardedState, "counts", believed_up_to_date)
    with ShardedRecords(client, path) as records:
        sharded = records.anonymize(5, 3, 0.9, constraints_from_coordinates(coords), runs=2, random_state=6)
    assert max(behind) > 0  # merges were withheld from shard 0, and sent when it said so
    _same(sharded, local)


def test_a_failing_run_stops_the_others(client, files, monkeypatch):
    """The first run to fail ends the call with its own error; the runs in progress stop at their
    next query and the queued ones never start (before, every other run went on to its end)."""
    path, coords = files
    first_failure, finished = _ShardedState.first_failure, []

    def fails_in_run_1(self, itemsets, supports, start):
        if self.run == 1:
            raise ValueError("run 1 broke")
        return first_failure(self, itemsets, supports, start)

    run = ShardedRecords._run

    def counted(self, j, *args):
        result = run(self, j, *args)
        finished.append(j)
        return result

    monkeypatch.setattr(_ShardedState, "first_failure", fails_in_run_1)
    monkeypatch.setattr(ShardedRecords, "_run", counted)
    with ShardedRecords(client, path) as records:
        with pytest.raises(ValueError, match="run 1 broke"):
            records.anonymize(5, 3, 0.9, constraints_from_coordinates(coords), runs=6, random_state=6)
        assert not records.runs  # every run that started has ended on the shards
    assert len(finished) <= 1, finished  # run 0 at most (it may end before run 1 fails); 2..5 stopped


def test_sharded_input_errors_are_those_of_one_machine(client, tmp_path):
    blank = tmp_path / "blank.txt"
    blank.write_text("1 2\n3\n\n" + "4 5\n" * 40)
    comma = tmp_path / "comma.txt"
    comma.write_text("1 2\n" * 30 + "3,4\n" + "5\n" * 30)
    for path in (blank, comma):
        with pytest.raises(InputError) as local:
            read_fimi(path)
        with pytest.raises(InputError) as sharded:
            ShardedRecords(client, path, shards=3)
        assert str(sharded.value) == str(local.value)
    ok = _fimi(tmp_path / "ok.txt", 200, 10, 0)
    with ShardedRecords(client, ok) as records:
        with pytest.raises(ParameterError, match="deterministic phase"):
            records.anonymize(3, 2, 1.0)


def _run_cli(args, capsys):
    code = main(args)
    return code, capsys.readouterr().err


def test_cli_workers_give_the_local_release(client, files, tmp_path, capsys):
    path, coords = files
    outs = []
    for extra in ([], ["--workers", "2"]):
        out = tmp_path / f"out{len(outs)}.txt"
        code, err = _run_cli(["km", "anonymize", str(path), "-k", "5", "-m", "3", "--sigma", "0.9", "--runs", "2",
                              "--coordinates", str(coords), "--seed", "3", "-o", str(out), "--quiet", *extra], capsys)
        assert code == 0, err
        outs.append((out.read_bytes(), json.loads((tmp_path / f"{out.name}.partition.json").read_text())))
        if extra:
            assert "Dask: 2 workers" in err
    assert outs[0] == outs[1]


def test_unreachable_scheduler_is_a_one_line_error(files, tmp_path, capsys):
    path, _ = files
    out = tmp_path / "never.txt"
    start = time.monotonic()
    code, err = _run_cli(["km", "anonymize", str(path), "-k", "5", "-m", "2", "--sigma", "0.9", "-o", str(out),
                          "--scheduler", "tcp://127.0.0.1:1", "--quiet"], capsys)
    assert code != 0 and time.monotonic() - start < 15
    assert "cannot reach the Dask scheduler" in err and len(err.strip().splitlines()) == 1
    assert not out.exists()

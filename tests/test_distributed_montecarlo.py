"""Monte Carlo on Dask (issue 19.3): ``survey simulate`` and the (l, delta) Monte Carlo as seeded
batches give, on a 2-worker LocalCluster on 127.0.0.1, the single-process result for the same
seed; a worker killed in the middle of a run is survived with the same result; an unreachable
scheduler is a one-line error within seconds.

The batch structure is checked against a from-scratch computation with NumPy: batch b of a run
draws from ``default_rng(SeedSequence(seed).spawn(batches)[b])``."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("distributed")

from probanon.cli import main
from probanon.distributed import ClusterError, batches_on_dask, dask_client
from probanon.diversity import attack as diversity_attack
from probanon.diversity.attack import linkage_monte_carlo
from probanon.survey import simulation
from probanon.survey.design import design
from probanon.survey.simulation import simulate_cells, simulate_spec
from probanon.survey.spec import build_spec
from dask_support import client  # noqa: E402,F401 (a fixture)

BAD = "tcp://127.0.0.1:1"  # nothing listens on port 1


@pytest.fixture(scope="module")
def survey(tmp_path_factory):
    """A population of 240 records, its constant-pi specification and both as files."""
    rng = np.random.default_rng(13)
    frame = pd.DataFrame(rng.normal(size=(240, 2)) * [10.0, 3.0] + [40.0, 12.0], columns=["age", "hours"])
    spec = build_spec(design(frame, 3, 0.6, 0.01, columns=["age", "hours"]))
    folder = tmp_path_factory.mktemp("survey")
    frame.to_csv(folder / "pop.csv", index=False)
    (folder / "spec.json").write_text(json.dumps(spec))
    return frame, spec, str(folder / "spec.json"), str(folder / "pop.csv")


@pytest.fixture(scope="module")
def plan_files(tmp_path_factory):
    """A uniform 4-valued distribution and its (4, 0.3) plan for t = 2, as files."""
    from probanon.diversity import distribution_from_array

    folder = tmp_path_factory.mktemp("ldelta")
    dist = distribution_from_array(np.full((1, 4), 0.25), sensitive_values=["a", "b", "c", "d"])
    dist.to_frame().to_csv(folder / "dist.csv", index=False)
    assert main(["diversity", "plan", "--distribution", str(folder / "dist.csv"), "-l", "4", "--delta", "0.3",
                 "--datasets", "2", "-o", str(folder / "plan.json"), "--quiet"]) == 0
    return str(folder / "dist.csv"), str(folder / "plan.json")


def _address(client):
    return client.scheduler_info()["address"]


def _cli(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


# ----------------------------------------------------------------- the batches, from scratch


def test_survey_batches_are_spawned_seed_sequences():
    """failing pairs, failing runs and active records of 250 runs (batches of 100, 100, 50)."""
    cells = [np.full(6, 0.5), np.linspace(0.2, 0.9, 5), np.full(4, 0.7)]
    k, runs, seed = 3, 250, 11
    p, owner = np.concatenate(cells), np.repeat(np.arange(3), [c.size for c in cells])
    per = simulation.RUNS_PER_BATCH
    sizes = [min(per, runs - s) for s in range(0, runs, per)]
    failing = failing_runs = active = 0
    for m, child in zip(sizes, np.random.SeedSequence(seed).spawn(len(sizes))):
        on = np.random.default_rng(child).random((m, p.size)) < p
        K = np.stack([on[:, owner == c].sum(axis=1) for c in range(3)], axis=1)
        fail = (K > 0) & (K < k)
        failing, failing_runs, active = failing + fail.sum(), failing_runs + fail.any(axis=1).sum(), active + K.sum()
    res = simulate_cells(cells, k, runs, random_state=seed)
    assert (res.failing_cells, res.failing_runs, res.active_records) == (failing, failing_runs, active)


def test_linkage_batches_are_spawned_seed_sequences():
    pmf, n, l, t, runs, seed = np.full((2, 3), 1 / 6), 5, 3, 2, 600, 4
    per = diversity_attack.RUNS_PER_BATCH
    sizes = [min(per, runs - s) for s in range(0, runs, per)]
    release = linked = 0
    for m, child in zip(sizes, np.random.SeedSequence(seed).spawn(len(sizes))):
        counts = np.random.default_rng(child).multinomial(n, pmf.ravel(), size=(m, t)).reshape(m, t, 2, 3)
        for run in counts:
            release += sum(any(0 < (c > 0).sum() < l for c in table) for table in run)
            linked += any(all(table[q].sum() > 0 for table in run) and (run[:, q].min(axis=0) > 0).sum() < l
                          for q in range(2))
    mc = linkage_monte_carlo(pmf, [0, 1], n, l, t=t, runs=runs, random_state=seed)
    assert (mc.release_failures, mc.linked_failures) == (release, linked)


# ----------------------------------------------------------------- the same result on the cluster


def test_survey_simulate_same_result_on_the_cluster(client, survey, capsys):
    frame, spec, spec_path, pop_path = survey
    local = simulate_spec(spec, frame, 450, random_state=5)
    steps = []
    remote = simulate_spec(spec, frame, 450, random_state=5, runner=batches_on_dask(client),
                           progress=lambda *a: steps.append(a))
    assert remote == local
    assert steps[0] == ("batches", 0, 5) and steps[-1] == ("batches", 5, 5) and len(steps) == 6
    argv = ["survey", "simulate", spec_path, pop_path, "--runs", "450", "--seed", "5", "--json"]
    code, out, _ = _cli(capsys, argv + ["--quiet"])
    assert code == 0 and json.loads(out) == local.to_dict()
    code, out, err = _cli(capsys, argv + ["--scheduler", _address(client)])
    assert code == 0 and json.loads(out) == local.to_dict()
    assert err.startswith("Dask: 2 workers") and "batches" in err


def test_cell_blocks_same_result_on_the_cluster(client, monkeypatch):
    """Cells drawn in blocks (fewer uniforms at once than records): still the same result."""
    cells = [np.full(48, 0.5)] * 20 + [np.linspace(0.2, 1.0, 33)]
    monkeypatch.setattr(simulation, "MAX_BATCH_ELEMENTS", 100)
    assert simulate_cells(cells, 20, 230, random_state=8, runner=batches_on_dask(client)) == simulate_cells(cells, 20, 230,
                                                                                             random_state=8)


def test_linkage_monte_carlo_same_result_on_the_cluster(client, plan_files, capsys):
    pmf = np.full((3, 4), 1 / 12)
    local = linkage_monte_carlo(pmf, [0, 0, 1], 30, 4, t=3, runs=1100, delta=0.05, random_state=2)
    remote = linkage_monte_carlo(pmf, [0, 0, 1], 30, 4, t=3, runs=1100, delta=0.05, random_state=2, runner=batches_on_dask(client))
    assert remote == local and local.release_failures > 0
    dist, plan = plan_files
    argv = ["attack", dist, "--mechanism", "l-delta", "--plan", plan, "--runs", "700", "--seed", "3", "--json"]
    code, out, _ = _cli(capsys, argv)
    code_remote, out_remote, err = _cli(capsys, argv + ["--scheduler", _address(client)])
    assert code == code_remote == 0 and json.loads(out_remote) == json.loads(out)
    assert err.startswith("Dask: 2 workers")
    code, _, err = _cli(capsys, ["attack", dist, dist, "--keys", "a", "--workers", "2"])
    assert code == 2 and "--workers applies to --mechanism l-delta only" in err


# ----------------------------------------------------------------- a worker dies


def test_a_worker_killed_in_the_middle_is_survived(client):
    """After the first batch completes, SIGKILL a worker that is running one: Dask reruns its
    batches elsewhere (the nanny restarts the worker) and the counts are the same."""
    cells = [np.full(48, 0.5)] * 1500
    expected = simulate_cells(cells, 20, 1200, random_state=9)
    before = set(client.scheduler_info()["workers"])
    killed = []

    def progress(stage, done, total):
        if done == 1 and not killed:
            busy = [w for w, keys in client.processing().items() if keys]
            assert busy, "no batch running when the first one completed"
            pid = client.run(os.getpid, workers=[busy[0]])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(busy[0])

    assert simulate_cells(cells, 20, 1200, random_state=9, runner=batches_on_dask(client), progress=progress) == expected
    assert killed and killed[0] not in client.scheduler_info()["workers"]
    assert killed[0] in before
    client.wait_for_workers(2, timeout=60)  # the nanny's new worker, for the tests after this one


# ----------------------------------------------------------------- an unreachable scheduler


def test_bad_scheduler_is_a_one_line_error_within_seconds(survey, plan_files, capsys):
    _, _, spec_path, pop_path = survey
    start = time.monotonic()
    with pytest.raises(ClusterError) as info, dask_client(BAD):
        pass
    assert time.monotonic() - start < 10 and "\n" not in str(info.value) and BAD in str(info.value)
    dist, plan = plan_files
    for argv in (["survey", "simulate", spec_path, pop_path, "--runs", "100", "--scheduler", BAD],
                 ["attack", dist, "--mechanism", "l-delta", "--plan", plan, "--scheduler", BAD]):
        start = time.monotonic()
        code, out, err = _cli(capsys, argv)
        assert time.monotonic() - start < 10
        assert code == 2 and out == "" and err.startswith("probanon: error: ") and err.count("\n") == 1
        assert BAD in err


def test_without_the_options_dask_is_not_imported(survey):
    _, _, spec_path, pop_path = survey
    code = ("import sys; from probanon.cli import main; "
            f"assert main(['survey', 'simulate', {spec_path!r}, {pop_path!r}, '--runs', '200', '--quiet', '--json']) == 0; "
            "assert not {'dask', 'distributed'} & set(sys.modules), 'dask imported'")
    done = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["runs"] == 200

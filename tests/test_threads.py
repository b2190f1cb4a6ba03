"""Parallel kernels under contention (probanon._threads): the same results whatever the
thread count or the serial/parallel choice, the governor's rule, the wait policy."""

import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from probanon import _threads
from probanon._threads import GAP0, GAP_MAX, choose, governor, parallel_worth, preferred, record
from probanon.microagg import function as F
from probanon.microagg.mdav import mdav_partition
from probanon.microagg.offsets import _assign, _assign_kernel, _assign_serial


@pytest.fixture
def mode():
    """Set _threads.MODE and the numba thread count for one test; restored afterwards."""
    threads = numba.get_num_threads()

    def set_mode(m, n_threads=threads):
        _threads.MODE = m
        numba.set_num_threads(n_threads)

    yield set_mode
    _threads.MODE = _threads.AUTO
    numba.set_num_threads(threads)


def _mdav_outputs(Z, k, keep_duplicates=False):
    p = mdav_partition(Z, k, keep_duplicates)
    return p.labels, p.references, p.radius2, p.boundary


@pytest.mark.parametrize("ties", [False, True])
def test_mdav_same_partition_serial_parallel_auto(mode, ties):
    # 45,000 records: the first ~5,000 groups are formed with >= PARALLEL_MIN records left,
    # the passes there go through the governor; with ties the key order decides
    rng = np.random.default_rng(5)
    Z = rng.integers(0, 6, (45000, 3)).astype(float) if ties else rng.standard_normal((45000, 4))
    runs = {}
    for name, m, t in [("serial", _threads.SERIAL, 2), ("parallel", _threads.PARALLEL, 2),
                       ("auto", _threads.AUTO, 2), ("one thread", _threads.AUTO, 1)]:
        mode(m, t)
        runs[name] = _mdav_outputs(Z, 7, keep_duplicates=ties)
    for name, out in runs.items():
        for a, b in zip(runs["serial"], out):
            assert np.array_equal(a, b), name


def test_published_functions_same_serial_parallel(mode):
    rng = np.random.default_rng(6)
    Z = rng.standard_normal((6000, 3))
    centers = rng.standard_normal((40, 3))
    offsets = rng.random(40)
    # independent: the power rule by NumPy (argmin takes the first cell on ties)
    cost = ((Z[:, None, :] - centers[None]) ** 2).sum(axis=2) + offsets
    expected = np.argmin(cost, axis=1)
    refs, rad2 = Z[:30], np.full(30, 0.5)
    bounds = np.full((30, 3), np.inf)  # no ties at exactly the radius: plain balls
    d2 = ((Z[:, None, :] - refs[None]) ** 2).sum(axis=2)
    inside = d2 < rad2
    balls = np.where(inside.any(axis=1), np.argmax(inside, axis=1), 30)
    for m in (_threads.SERIAL, _threads.PARALLEL):
        mode(m, 2)
        assert np.array_equal(F._assign_power(Z, centers, offsets), expected)
        assert np.array_equal(F._assign_balls(Z, refs, rad2, bounds), balls)


def test_offsets_assign_kernels_agree():
    rng = np.random.default_rng(7)
    D = rng.integers(0, 4, (3000, 9)).astype(float)  # many ties: the first cell wins
    c = np.zeros(9)
    order = np.argsort(D + c, axis=1, kind="stable")
    outs = []
    for kernel in (_assign_kernel, _assign_serial):
        own, second, margin = np.empty(3000, np.int64), np.empty(3000, np.int64), np.empty(3000)
        kernel(D, c, own, margin, second)
        outs.append((own, second, margin))
    for own, second, margin in outs:
        assert np.array_equal(own, order[:, 0])
        assert np.array_equal(second, order[:, 1])
        assert np.array_equal(margin, np.take_along_axis(D, order[:, 1:2], 1)[:, 0] - D.min(axis=1))
    own, margin, second = _assign(D, c)
    assert np.array_equal(own, order[:, 0]) and np.array_equal(second, order[:, 1])


def test_parallel_worth(mode):
    mode(_threads.AUTO, 2)
    assert not parallel_worth(_threads.WORK_MIN - 1) and parallel_worth(_threads.WORK_MIN)
    mode(_threads.PARALLEL, 2)
    assert parallel_worth(1)
    mode(_threads.SERIAL, 2)
    assert not parallel_worth(10 * _threads.WORK_MIN)
    mode(_threads.AUTO, 1)
    assert not parallel_worth(10 * _threads.WORK_MIN)


def _drive(st, cost_par, cost_ser, steps, work=1000.0):
    modes = []
    for _ in range(steps):
        par = choose(st)
        modes.append(par)
        record(st, par, (cost_par if par else cost_ser) * work, work)
    return np.array(modes)


def test_governor_retries_with_doubling_gaps():
    st = governor(_threads.AUTO)
    modes = _drive(st, 1.0, 2.0, 3000)
    # parallel twice (the first region wakes the workers: not a measure), serial once,
    # then parallel; serial retried after gaps GAP0, 2 GAP0, ... capped at GAP_MAX, plus the
    # uncounted region after each serial one (it wakes the workers, the next one is measured)
    assert modes[0] and modes[1] and not modes[2]
    expected, pos, gap = [2], 2, GAP0
    while True:
        pos += gap + 1
        if pos >= 3000:
            break
        expected.append(pos)
        gap = min(2 * gap, GAP_MAX)
    assert list(np.flatnonzero(~modes)) == expected
    assert preferred(st)


def test_governor_follows_a_change_and_restarts_its_gaps():
    st = governor(_threads.AUTO)
    _drive(st, 1.0, 2.0, 200)
    # contention: parallel regions now cost 10 per unit, serial 1. The moving average of the
    # parallel rate after one sample: 1 + (10 - 1) * RATE > 2 = the serial average: flips.
    modes = _drive(st, 10.0, 1.0, 400)
    assert modes[0] and not modes[1] and not preferred(st)
    retries = np.flatnonzero(modes[1:]) + 1
    assert retries[0] == GAP0  # GAP0 regions after the flip: the gap restarted
    # each retry of the parallel mode is a wake-up region and a measured one
    assert np.array_equal(retries[1::2], retries[::2] + 1)
    assert np.all(np.diff(retries[::2]) >= GAP0) and retries.size <= 2 * (1 + np.log2(400 / GAP0))


def test_governor_forced_modes():
    for m, want in ((_threads.PARALLEL, True), (_threads.SERIAL, False)):
        st = governor(m)
        assert all(choose(st) == want for _ in range(20)) and preferred(st) == want
    assert not choose(governor(_threads.AUTO, threads=1))


@pytest.mark.parametrize("preset", [None, "ACTIVE"])
def test_wait_policy_set_unless_given(preset):
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "KMP_BLOCKTIME")}
    if preset:
        env["OMP_WAIT_POLICY"] = preset
    code = "import os, probanon.microagg.mdav as m; print(os.environ.get('GOMP_SPINCOUNT'), os.environ['KMP_BLOCKTIME'])"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["None" if preset else "20000", "0"]

"""Parallel kernels under contention (probanon._threads): the same results whatever the
thread count or the serial/parallel choice, the governor's rule, the wait policy."""

import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from probanon import _threads
from probanon._threads import GAP0, GAP_MAX, RETRY_COST, choose, governor, parallel_worth, preferred, record
from probanon.microagg import rule_kernels as F
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
    # dynamic chunks of 7 rows (the last one short) on two threads, and the serial loop
    for kernel, extra in ((_assign_kernel, (2, 7, np.zeros(1, np.int64))), (_assign_serial, ())):
        own, second, margin = np.full(3000, -1), np.full(3000, -1), np.full(3000, np.nan)
        kernel(D, c, own, margin, second, *extra)
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
    # then parallel; serial retried after gaps GAP0, then doubling up to GAP_MAX but at least
    # extra / (RETRY_COST win): a retry costs the serial region (2 - 1 above the parallel
    # rate) and a wake-up region (parallel, 1: no extra), so extra = 1, win = 1; plus the
    # uncounted region after each serial one (it wakes the workers, the next one is measured)
    assert modes[0] and modes[1] and not modes[2]
    expected, pos, gap = [2], 2, GAP0
    while True:
        pos += gap + 1
        if pos >= 3000:
            break
        expected.append(pos)
        gap = max(min(2 * gap, GAP_MAX), int(np.ceil(1.0 / RETRY_COST)))
    assert list(np.flatnonzero(~modes)) == expected
    assert preferred(st)


def test_governor_follows_a_change_and_restarts_its_gaps():
    st = governor(_threads.AUTO)
    _drive(st, 1.0, 2.0, 200)
    # contention: parallel regions now cost 10 per unit, serial 1. The parallel rate is the
    # median of its last three regions: 1 after one such region, 10 after two, > 2 (serial's): flips.
    modes = _drive(st, 10.0, 1.0, 400)
    assert modes[0] and modes[1] and not modes[2] and not preferred(st)
    retries = np.flatnonzero(modes[2:]) + 2
    assert retries[0] == 1 + GAP0  # GAP0 regions after the flip: the gap restarted
    # each retry of the parallel mode is a wake-up region and a measured one
    assert np.array_equal(retries[1::2], retries[::2] + 1)
    assert np.all(np.diff(retries[::2]) >= GAP0) and retries.size <= 2 * (1 + np.log2(400 / GAP0))


def test_governor_ignores_isolated_slow_regions():
    # an idle machine where every 40th region is delayed 20 x (an interrupt, another
    # process's time slice): parallel (1 per unit) stays the choice over serial (2); a moving
    # average flipped to serial at each delay and kept it for its doubling gaps
    st = governor(_threads.AUTO)
    modes = []
    for i in range(4000):
        par = choose(st)
        modes.append(par)
        cost = (1.0 if par else 2.0) * (20.0 if i % 40 == 39 else 1.0)
        record(st, par, cost * 1000.0, 1000.0)
    serial = np.flatnonzero(~np.array(modes))
    # only the scheduled retries: at 2 and then after gaps of at least GAP0
    assert serial[0] == 2 and np.all(np.diff(serial) > GAP0) and serial.size <= 12


def test_governor_retries_cost_at_most_their_share():
    # contention as measured on MDAV 50,000 x 10: a parallel region costs 25 per unit of
    # work, a serial one 1. After the flip, the retries (a wake-up and a measured parallel
    # region, 2 x 24 above the serial rate each) must cost at most about RETRY_COST of the
    # time; doubling gaps capped at GAP_MAX alone would give 48 / GAP_MAX = 9%.
    st = governor(_threads.AUTO)
    _drive(st, 1.0, 2.0, 200)
    steps = 40_000
    modes = _drive(st, 25.0, 1.0, steps)
    late = modes[steps // 4:]  # once the moving averages have caught up
    overhead = late.sum() * 24.0 / late.size
    assert 0.0 < overhead <= 1.25 * RETRY_COST
    assert 48.0 / GAP_MAX > 4 * RETRY_COST


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

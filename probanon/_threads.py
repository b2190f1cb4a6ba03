"""Parallel numba kernels that stay fast when another process competes for the cores
(issue 16, point 5).

Two measures, both measured in ``benchmarks/contention.py``:

1. **No spinning.** After a parallel region libgomp (numba's "omp" layer) spins about
   300,000 iterations (~3 ms) before its workers sleep. With one competing CPU-bound process
   on two cores the spinning worker steals the time slice of the thread that still works, and
   every barrier waits for a descheduled thread: ``MDAV(k=5).fit`` of 50,000 x 10 took 29 s
   instead of 0.54 s single-threaded. ``GOMP_SPINCOUNT=20000`` (GNU: ~0.1 ms, long enough to
   bridge the few microseconds between two MDAV passes; sleeping at once, PASSIVE, made idle
   MDAV 50,000 x 10 2.5 x slower: 1.17 s against 0.45 s) and ``KMP_BLOCKTIME=0`` (Intel)
   make idle workers sleep soon. They are read when the OpenMP runtime loads (the
   first parallel call), so they are set here, at import, unless the user set them; if the
   runtime was loaded before probanon was imported, they come too late and the governor
   below still keeps MDAV off the spinning threads.
2. **An adaptive choice per region** (:func:`choose` / :func:`record`): the work per unit
   time of serial and parallel regions is measured as the kernel runs (moving averages of
   nanoseconds and units of work); the cheaper mode runs, the other one is tried again after
   ``gap`` regions (``gap`` doubles while the choice stands, up to GAP_MAX, and falls back to
   GAP0 when it flips). Under contention this finds the serial path, on an idle machine the
   parallel one. Both modes compute the same thing: results do not depend on the choice.

Kernels that open one region per call (the published functions' assignment, the offsets'
assignment) need no governor: :func:`parallel_worth` keeps small regions serial.

``MODE`` forces a mode for every kernel (tests): AUTO, PARALLEL (parallel whenever the
kernel's size threshold allows) or SERIAL.
"""

from __future__ import annotations

import os
import sys
import time

import numba
import numpy as np
from llvmlite import ir
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

WAIT_POLICY = {"GOMP_SPINCOUNT": "20000", "KMP_BLOCKTIME": "0"}
SET_HERE = [key for key in WAIT_POLICY if key not in os.environ]  # what this module set
if "OMP_WAIT_POLICY" in os.environ and "GOMP_SPINCOUNT" in SET_HERE:  # the user's policy rules
    SET_HERE.remove("GOMP_SPINCOUNT")
for _key in SET_HERE:
    os.environ[_key] = WAIT_POLICY[_key]

AUTO, PARALLEL, SERIAL = 0, 1, 2
MODE = AUTO
GAP0 = 8  # regions before the first retry of the other mode
GAP_MAX = 512  # longest run without a retry
RATE = 0.125  # weight of a new sample in the moving averages
WORK_MIN = 1 << 21  # multiply-adds (~1 ms) below which a one-region kernel runs serially

# state layout (one float64 array per kernel call, see governor())
_PNS, _PW, _SNS, _SW, _COUNT, _GAP, _BEST, _MODE, _LAST, _AGAIN = range(10)

_CLOCK = int(getattr(time, "CLOCK_MONOTONIC", 1))


@intrinsic
def _clock_ns(typingctx):
    """clock_gettime(CLOCK_MONOTONIC) in nanoseconds, callable from nopython code (~50 ns;
    a named libc symbol, so the kernels that use it stay cacheable)."""

    def codegen(context, builder, sig, args):
        i32, i64 = ir.IntType(32), ir.IntType(64)
        if sys.platform == "win32":  # no clock_gettime: every region costs 0, parallel wins
            return ir.Constant(i64, 0)
        ts = cgutils.alloca_once(builder, ir.ArrayType(i64, 2))
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(i32, [i32, ts.type]), "clock_gettime")
        builder.call(fn, [ir.Constant(i32, _CLOCK), ts])
        sec = builder.load(builder.gep(ts, [ir.Constant(i32, 0), ir.Constant(i32, 0)]))
        nsec = builder.load(builder.gep(ts, [ir.Constant(i32, 0), ir.Constant(i32, 1)]))
        return builder.add(builder.mul(sec, ir.Constant(i64, 1_000_000_000)), nsec)

    return types.int64(), codegen


@njit(cache=True)
def clock_ns():
    return _clock_ns()


def governor(mode=None, threads=2):
    """Fresh state for one kernel: ``mode`` defaults to :data:`MODE`; one thread is SERIAL."""
    st = np.zeros(10)
    st[_LAST] = -1.0
    st[_COUNT] = st[_GAP] = GAP0
    st[_BEST] = 1.0
    st[_MODE] = SERIAL if threads < 2 else (MODE if mode is None else mode)
    return st


@njit(cache=True)
def preferred(st):
    """The mode that measured cheaper so far (parallel until both are measured); no retry."""
    if st[_MODE] != AUTO:
        return st[_MODE] == PARALLEL
    return st[_BEST] > 0.5


@njit(cache=True)
def choose(st):
    """Parallel (True) or serial for the next timed region: the cheaper one, or the other one
    when its retry is due. Time the region and pass it to :func:`record`."""
    if st[_MODE] != AUTO:
        return st[_MODE] == PARALLEL
    if st[_AGAIN] == 1.0:  # the previous region woke the workers: measure this one
        st[_AGAIN] = 0.0
        return True
    if st[_PW] == 0.0:
        return True
    if st[_SW] == 0.0:
        return False
    st[_COUNT] -= 1.0
    best = st[_BEST] > 0.5
    return (not best) if st[_COUNT] <= 0.0 else best


@njit(cache=True)
def record(st, parallel, ns, work):
    """Add one region (``ns`` nanoseconds for ``work`` units) to the averages of its mode."""
    if st[_MODE] != AUTO:
        return
    cold = parallel and st[_LAST] != 1.0
    st[_LAST] = 1.0 if parallel else 0.0
    if cold:  # the workers slept (after serial regions): a wake-up, not a measure
        st[_AGAIN] = 1.0
        return
    j = _PNS if parallel else _SNS
    if st[j + 1] == 0.0:
        st[j] = ns
        st[j + 1] = work
    else:
        st[j] += RATE * (ns - st[j])
        st[j + 1] += RATE * (work - st[j + 1])
    if st[_PW] == 0.0 or st[_SW] == 0.0:
        return
    best = st[_PNS] / st[_PW] <= st[_SNS] / st[_SW]
    flipped = best != (st[_BEST] > 0.5)
    if flipped:
        st[_GAP] = GAP0
        st[_COUNT] = GAP0
    elif st[_COUNT] <= 0.0:  # a retry that did not change the choice: wait longer
        st[_GAP] = min(2.0 * st[_GAP], GAP_MAX)
        st[_COUNT] = st[_GAP]
    st[_BEST] = 1.0 if best else 0.0


def parallel_worth(work) -> bool:
    """Whether a kernel that opens ONE parallel region for ``work`` multiply-adds should run
    it in parallel: with idle workers asleep (above) a large region is never slower than the
    serial loop, also with a competing process (the thread that finishes first sleeps and
    leaves its core to the other); a small one would mostly pay the wake-up."""
    if MODE == SERIAL or numba.get_num_threads() < 2:
        return False
    return MODE == PARALLEL or work >= WORK_MIN

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
2. **An adaptive choice per region** (:func:`choose` / :func:`record`): the time per unit
   of work of serial and parallel regions is measured as the kernel runs (the median of each
   mode's last three regions, :func:`rate`); the cheaper mode runs, the other one is tried again after
   ``gap`` regions (``gap`` doubles while the choice stands, up to GAP_MAX, and falls back to
   GAP0 when it flips). Under contention this finds the serial path, on an idle machine the
   parallel one. Both modes compute the same thing: results do not depend on the choice.
   A retry costs what its regions (the retried one and the wake-up of the workers around it)
   cost above the chosen mode's rate; the gap is also at least that extra cost over
   RETRY_COST times the chosen mode's cost per region, so that retries take at most
   RETRY_COST of the time. Under contention a parallel region of MDAV cost 10-25 x its serial
   rate (a worker that shares its core with the competitor); with doubling gaps alone the
   retries took 8-12% of MDAV 50,000 x 10 (``benchmarks/contention.py``: 1.11-1.12 x the
   single-thread run, against a target of 1.10).

Kernels that open one region per call (the published functions' assignment, the offsets'
assignment) need no governor: :func:`parallel_worth` keeps small regions serial, and
:func:`next_chunk` schedules the rows dynamically, so that a worker the competitor slows down
does not hold the region back (numba splits a ``prange`` statically).

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

def one_thread(function):
    """``function`` with the BLAS/LAPACK and OpenMP thread pools of the libraries it calls
    limited to one thread (threadpoolctl). For the attacks' many small fits (scikit-learn's
    histogram gradient boosting, least squares on a few columns): their idle OpenMP and OpenBLAS
    threads busy-wait, and with other processes on the cores the README's ``probanon attack`` of
    census_k5 took 45 s (44 s of CPU) instead of 7.8 s with one thread (6.9 s on an idle machine)."""
    import functools

    @functools.wraps(function)
    def serial(*args, **kwargs):
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1):
            return function(*args, **kwargs)

    return serial


AUTO, PARALLEL, SERIAL = 0, 1, 2
MODE = AUTO
GAP0 = 8  # regions before the first retry of the other mode
GAP_MAX = 512  # longest run without a retry, unless retries cost more than RETRY_COST
GAP_LONG = 1 << 16  # longest run without a retry in any case
RETRY_COST = 0.02  # share of a kernel's time that retries of the other mode may take
SAMPLES = 3  # regions per mode whose median is the mode's rate
WORK_MIN = 1 << 21  # multiply-adds (~1 ms) below which a one-region kernel runs serially

# state layout (one float64 array per kernel call, see governor()): counters, then the last
# SAMPLES rates (ns per unit of work) of each mode, in rings
_PN, _SN, _COUNT, _GAP, _BEST, _MODE, _LAST, _AGAIN, _COLD = range(9)
_PR, _SR = 9, 9 + SAMPLES
_SIZE = 9 + 2 * SAMPLES

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


@intrinsic
def _fetch_add(typingctx, counter, index):
    """Atomically add 1 to ``counter[index]`` (an int64 array) and return its old value
    (LLVM ``atomicrmw add``, sequentially consistent)."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
        return None
    sig = types.int64(counter, index)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]])
        return builder.atomic_rmw("add", ptr, ir.Constant(ir.IntType(64), 1), "seq_cst")

    return sig, codegen


@njit(cache=True, inline="always")
def next_chunk(counter, n, per):
    """Rows ``lo, hi`` of the next chunk of ``per`` rows out of ``n`` (``lo >= hi``: none
    left). Dynamic scheduling for a ``prange`` over the threads (:func:`chunk_plan`): each
    thread takes chunks from the shared ``counter`` until none is left, so a thread that
    the operating system deschedules (a competing process) leaves its share to the others
    instead of holding the whole region back, as numba's static split of a ``prange`` does.
    Each row is computed by one thread, so results do not depend on the split."""
    lo = _fetch_add(counter, 0) * per
    return lo, min(n, lo + per)


def chunk_plan(n, chunks_per_thread=16, per_min=64):
    """(threads, per, counter) for a dynamically scheduled region over ``n`` rows: one
    ``prange`` iteration per numba thread, chunks of ``per`` rows (about
    ``chunks_per_thread`` per thread, at least ``per_min`` rows) and a fresh counter."""
    threads = numba.get_num_threads()
    per = max(per_min, -(-n // (chunks_per_thread * threads)))
    return threads, per, np.zeros(1, np.int64)


def governor(mode=None, threads=2):
    """Fresh state for one kernel: ``mode`` defaults to :data:`MODE`; one thread is SERIAL."""
    st = np.zeros(_SIZE)
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
    if st[_PN] == 0.0:
        return True
    if st[_SN] == 0.0:
        return False
    st[_COUNT] -= 1.0
    best = st[_BEST] > 0.5
    return (not best) if st[_COUNT] <= 0.0 else best


@njit(cache=True)
def rate(st, parallel):
    """A mode's nanoseconds per unit of work: the median of its last SAMPLES regions (of
    fewer while it has fewer; 0 before any). A median, not a mean: on a shared machine a
    region is now and then delayed many times over (an interrupt, another process's time
    slice); a moving average took that for a change and ran half of an idle MDAV 100,000 x 10
    serially, 1.2-1.35 x the time of the always-parallel code."""
    base = _PR if parallel else _SR
    n = int(min(st[_PN if parallel else _SN], SAMPLES))
    if n == 0:
        return 0.0
    if n == 1:
        return st[base]
    if n == 2:
        return 0.5 * (st[base] + st[base + 1])
    a, b, c = st[base], st[base + 1], st[base + 2]
    return max(min(a, b), min(max(a, b), c))


@njit(cache=True)
def record(st, parallel, ns, work):
    """Add one region (``ns`` nanoseconds for ``work`` units) to the samples of its mode."""
    if st[_MODE] != AUTO:
        return
    cold = parallel and st[_LAST] != 1.0
    st[_LAST] = 1.0 if parallel else 0.0
    if cold:  # the workers slept (after serial regions): a wake-up, not a measure
        st[_AGAIN] = 1.0
        st[_COLD] = ns / max(work, 1.0)
        return
    j = _PN if parallel else _SN
    st[(_PR if parallel else _SR) + int(st[j]) % SAMPLES] = ns / max(work, 1.0)
    st[j] += 1.0
    if st[_PN] == 0.0 or st[_SN] == 0.0:
        return
    best = rate(st, True) <= rate(st, False)
    flipped = best != (st[_BEST] > 0.5)
    if flipped:
        st[_GAP] = GAP0
        st[_COUNT] = GAP0
    elif st[_COUNT] <= 0.0:  # a retry that did not change the choice: wait longer
        st[_GAP] = max(min(2.0 * st[_GAP], GAP_MAX), retry_gap(st, best))
        st[_COUNT] = st[_GAP]
    st[_BEST] = 1.0 if best else 0.0


@njit(cache=True)
def retry_gap(st, best):
    """Regions to run in the chosen mode (parallel if ``best``) before the next retry, so
    that retries take at most RETRY_COST of the time::

        gap = ceil(extra / (RETRY_COST * win)),
        extra = max(0, lose - win) + max(0, cold - win)

    with ``win`` and ``lose`` the chosen and the other mode's nanoseconds per unit of work
    (:func:`rate`) and ``cold`` that of the last wake-up region (a retry brings one: the
    parallel region after a serial one); capped at GAP_LONG."""
    par, ser = rate(st, True), rate(st, False)
    win, lose = (par, ser) if best else (ser, par)
    if win <= 0.0:
        return float(GAP_LONG)
    extra = max(0.0, lose - win) + max(0.0, st[_COLD] - win)
    return min(float(GAP_LONG), np.ceil(extra / (RETRY_COST * win)))


def parallel_worth(work) -> bool:
    """Whether a kernel that opens ONE parallel region for ``work`` multiply-adds should run
    it in parallel: with idle workers asleep (above) a large region is never slower than the
    serial loop, also with a competing process (the thread that finishes first sleeps and
    leaves its core to the other); a small one would mostly pay the wake-up."""
    if MODE == SERIAL or numba.get_num_threads() < 2:
        return False
    return MODE == PARALLEL or work >= WORK_MIN

"""Blocked microaggregation (issue 16, point 2): MDAV, V-MDAV or PCL on files of 10^6 - 10^7
records, block by block.

1. Cut tree. The standardised records are split recursively: a node of m > B records is cut
   by a threshold on the projection z . a (:func:`.rule_kernels.project_rows`, the one projection
   the published function uses too) onto its principal axis a (the eigenvector of the largest
   eigenvalue of the node's scatter matrix, as in principal-direction divisive partitioning,
   Boley 1998), at the median rounded to a multiple of k (bisection: the blocks of a file
   all lie at the same depth, log2 of their number, so no record is behind more cuts than
   the others; the size of a block is n / 2^depth <= B). A cut never
   separates equal projections (a function of the published values cannot): records with
   projection <= threshold go left, and the cut moves to the nearest position with a gap in
   the sorted projections, a multiple of k if there is one, leaving at least k records on
   each side. A node without any such gap on its principal axis tries the coordinate axes;
   a node whose records tie on all of them (identical records) stays one block. Every block
   holds k..B records.
2. Per block, the estimator's own partition (MDAV, V-MDAV, PCL) on the block's rows of the
   global z-scores (so each block's rule is in the same standardised units), blocks in
   parallel processes (each with one numba thread; the same result for any number of
   workers). Randomised methods get per-block seeds ``SeedSequence(random_state).spawn``
   by block index.
3. The function: kind "blocked" (:class:`.rules.Blocked`): the cut tree, and per leaf the block's
   rule with the offset of its first cell; cell = offset + the block's cell.

Memory: the cut holds O(n) indices and projections besides Z; each worker holds one block.

Choice of axis, measured (``benchmarks/scale_blocks.py``; 200,000 x 10 Gaussian, k = 5, MDAV
in 4 blocks of 50,000): IL 11.419 cutting along principal axes, 11.423 along the widest
coordinate axis (unblocked MDAV: 10.900). On isotropic data the two agree; on correlated data
only the principal axis follows the data's shape, so it is the default (``axis="widest"``
remains for comparison).
"""

from __future__ import annotations

import contextvars
import numbers
import os
import subprocess
import sys
from multiprocessing.connection import Connection, wait

import numpy as np

from ..errors import ParameterError
from ..progress import quiet as _quiet
from .rule_kernels import project_rows
from .rules import rule_of

#: automatic blocking (block_size=None): not below this many records
AUTO_MIN = 200_000
#: automatic block size (the estimator's ``_default_block_size`` may be smaller). Each level of
#: cuts costs MDAV about 2.4% of its IL (10-D Gaussian, k = 5, 200,000 records: 1.024 x the
#: unblocked IL in 2 blocks, 1.048 in 4); 500,000 keeps 10^6 records in one level (2 blocks,
#: 1.019 x) and 10^7 in 32 blocks of 312,500, whose MDAV fits take minutes
DEFAULT_BLOCK = 500_000
#: rows per chunk when the column sums of a node are accumulated (no n x d copy of Z)
CHUNK = 1 << 20
AXES = ("principal", "widest")


def check_block_size(block_size, k: int, n: int, default: int = DEFAULT_BLOCK) -> int:
    """The block size B to use (0: no blocks). ``block_size``: None (automatic: ``default``
    from AUTO_MIN records on, none below), 0 (never), or an integer B >= 2k. B >= n means
    one block, i.e. none."""
    if block_size is not None:
        if isinstance(block_size, (bool, np.bool_)) or not isinstance(block_size, numbers.Integral):
            raise ParameterError(f"block_size must be None, 0 or an integer >= 2k, got {block_size!r}")
        if block_size != 0 and block_size < 2 * k:
            raise ParameterError(f"block_size must be 0 (no blocks) or at least 2k = {2 * k}, got {int(block_size)}")
    return block_size_for(block_size, k, n, default)


def block_size_for(block_size, k: int, n: int, default: int = DEFAULT_BLOCK) -> int:
    """:func:`check_block_size` of a ``block_size`` already checked (the estimators declare it
    in their constraint table)."""
    B = (max(default, 2 * k) if n >= AUTO_MIN else 0) if block_size is None else int(block_size)
    return 0 if B >= n else B


def check_jobs(n_jobs) -> int:
    """Worker processes: None = the cores this process may use, else a positive integer."""
    if n_jobs is None:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral) or n_jobs < 1:
        raise ParameterError(f"n_jobs must be None or a positive integer, got {n_jobs!r}")
    return int(n_jobs)


def node_moments(Z, rows):
    """(count, exact column sums, exact sums of z_a z_b for a <= b) of the rows ``rows`` of Z:
    :class:`probanon.exactsum.ExactSum` states, so the moments of a node whose rows lie in
    several pieces (the partitions of :mod:`probanon.distributed.partitioned`) are the sums of
    the pieces' moments, bit for bit."""
    from ..exactsum import ExactSum

    rows = np.asarray(rows, dtype=np.int64)
    sums = ExactSum.zeros(Z.shape[1])
    for a in range(0, rows.size, CHUNK):  # no copy of more than CHUNK rows
        sums = sums + ExactSum.of(Z[rows[a:a + CHUNK]])
    return rows.size, sums, ExactSum.of_products(Z, rows)


def directions(moments, axis: str):
    """Candidate cut directions of a node from its :func:`node_moments`: its principal axis first
    ("principal": the eigenvector of the largest eigenvalue of the scatter matrix), then the
    coordinate axes by decreasing variance."""
    count, sums, products = moments
    total = sums.values()
    d = total.size
    scatter = np.zeros((d, d))
    scatter[np.triu_indices(d)] = products.values()
    scatter = np.triu(scatter) + np.triu(scatter, 1).T
    mean = total / count
    scatter -= count * np.outer(mean, mean)
    eye = np.eye(d)
    coordinates = [eye[j] for j in np.argsort(-np.diag(scatter), kind="stable")]
    if axis == "widest":
        return coordinates
    v = np.linalg.eigh(scatter)[1][:, -1]
    v = v if v[np.flatnonzero(v)[0]] > 0 else -v  # sign fixed: first non-zero component positive
    return [np.ascontiguousarray(v)] + coordinates


def _cut_position(s, k: int, target: int):
    """Number L of records left of the cut in the sorted projections s: k <= L <= m - k,
    s[L-1] < s[L] (no tie split), a multiple of k if possible, nearest to ``target``; None
    if no such L exists."""
    m = s.size
    L = np.flatnonzero(s[k - 1:m - k] < s[k:m - k + 1]) + k
    if L.size == 0:
        return None
    multiples = L[L % k == 0]
    pool = multiples if multiples.size else L
    return int(pool[np.argmin(np.abs(pool - target))])


def _cut(Z, rows, k: int, axis: str):
    """(axis vector, threshold, left mask) of the cut of a node at its median, or None when no
    direction separates its records (module docstring, step 1)."""
    m = rows.size
    target = k * round(m / 2 / k)
    for v in directions(node_moments(Z, rows), axis):
        p = project_rows(Z, rows, v)
        s = np.sort(p)
        L = _cut_position(s, k, target)
        if L is None:
            continue
        a, b = s[L - 1], s[L]
        t = a + 0.5 * (b - a)  # midway; a itself if rounding reaches b
        t = t if t < b else a
        return v, float(t), p <= t
    return None


def cut_tree(Z, k: int, B: int, axis: str = "principal"):
    """The cut tree of the rows of Z into blocks of k..B records (module docstring): (nodes,
    blocks) with nodes a list whose entry 0 is the root, split nodes {"axis", "threshold",
    "left", "right"} (children after their parent) and leaves {"block": j}; blocks[j] the
    increasing rows of block j, numbered left to right."""
    if axis not in AXES:
        raise ParameterError(f"axis must be one of {AXES}, got {axis!r}")
    nodes, blocks = [None], []
    stack = [(0, np.arange(Z.shape[0]))]
    while stack:
        i, rows = stack.pop()
        cut = _cut(Z, rows, k, axis) if rows.size > B else None
        if cut is None:
            nodes[i] = {"block": len(blocks)}
            blocks.append(rows)
            continue
        v, t, left = cut
        a = len(nodes)
        nodes += [None, None]
        nodes[i] = {"axis": v, "threshold": t, "left": a, "right": a + 1}
        stack += [(a + 1, rows[~left]), (a, rows[left])]  # left first: blocks numbered left to right
    return nodes, blocks


#: fitted attributes of a block's estimator that the blocked fit combines over the blocks
BLOCK_ATTRIBUTES = {"records_settled_": sum, "start_": list}


def _fit_block(cls, params: dict, k: int, Zb, seed):
    """One block: the estimator's partition of Zb (its rows of the global z-scores) with
    ``k`` and, for a randomised method, a generator from ``seed``. Returns (labels, kind,
    rule, {attribute: value})."""

    if "random_state" in params:
        params = dict(params, random_state=np.random.default_rng(seed))
    est = cls(**params)
    est.k_ = k
    labels, kind, rule = est._settled_partition(Zb, None, _quiet)
    return labels, kind, rule, {a: getattr(est, a) for a in BLOCK_ATTRIBUTES if hasattr(est, a)}


def _serve(inbox_fd: int, outbox_fd: int) -> None:
    """A worker process's loop: receive (arguments of _fit_block), send ("ok", result) or
    ("error", exception), until the parent closes the pipe."""
    inbox, outbox = Connection(inbox_fd, writable=False), Connection(outbox_fd, readable=False)
    while True:
        try:
            task = inbox.recv()
        except EOFError:
            return
        try:
            outbox.send(("ok", _fit_block(*task)))
        except Exception as exc:  # noqa: BLE001 - handed to the parent, which raises it
            outbox.send(("error", exc))


#: the command of a worker process (its pipes' descriptors follow)
WORKER = "import sys; from probanon.microagg.blocks import _serve; _serve(int(sys.argv[1]), int(sys.argv[2]))"


def _start_worker():
    """A fresh Python process running :func:`_serve` with one numba thread, and the parent's
    ends of its two pipes. (Not multiprocessing: fork is unsafe once numba's OpenMP threads
    have run, and spawn re-runs the caller's main script, which fails without a main guard.)"""
    task_r, task_w = os.pipe()
    result_r, result_w = os.pipe()
    env = dict(os.environ, NUMBA_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.Popen([sys.executable, "-c", WORKER, str(task_r), str(result_w)], pass_fds=(task_r, result_w),
                            env=env, stdin=subprocess.DEVNULL)
    os.close(task_r)
    os.close(result_w)
    return proc, Connection(task_w, readable=False), Connection(result_r, writable=False)


#: how blocks run elsewhere than in this machine's processes: None, or a callable
#: runner(function, count, tasks, progress) yielding (j, function(*tasks(j))) as they complete
#: (:func:`probanon.distributed.blocks.on_dask` sets a Dask cluster's)
BLOCK_RUNNER: contextvars.ContextVar = contextvars.ContextVar("block_runner", default=None)


def _results(tasks, count: int, workers: int, progress):
    """Yield (j, result of _fit_block) for the ``count`` tasks (tasks(j) -> arguments), in
    this process (one worker) or in ``workers`` worker processes, one block each at a time;
    ``progress("blocks", done, count)`` after each block. The workers are stopped on return
    or on any error (which is raised here)."""
    runner = BLOCK_RUNNER.get()
    if runner is not None:
        yield from runner(_fit_block, count, tasks, progress)
        return
    progress("blocks", 0, count)
    if workers == 1:
        for j in range(count):
            yield j, _fit_block(*tasks(j))
            progress("blocks", j + 1, count)
        return
    pool = [_start_worker() for _ in range(workers)]
    try:
        idle, busy, submitted, done = list(pool), {}, 0, 0
        while done < count:
            while idle and submitted < count:
                worker = idle.pop()
                worker[1].send(tasks(submitted))
                busy[worker[2]] = worker, submitted
                submitted += 1
            for reader in wait(list(busy)):
                worker, j = busy.pop(reader)
                try:
                    status, result = reader.recv()
                except EOFError:
                    raise RuntimeError(f"a block worker process stopped (exit status {worker[0].wait()})") from None
                if status == "error":
                    raise result
                idle.append(worker)
                done += 1
                yield j, result
                progress("blocks", done, count)
    finally:
        for proc, writer, reader in pool:
            writer.close()
            reader.close()
        for proc, _, _ in pool:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _seeds(random_state, count: int):
    """Per-block seeds: SeedSequence(random_state).spawn(count); a Generator gives the entropy
    of one draw, None fresh entropy."""
    if isinstance(random_state, np.random.Generator):
        random_state = int(random_state.integers(2**63))
    return np.random.SeedSequence(random_state).spawn(count)


def fit_blocks(estimator, Z, B: int, progress, n_jobs=None, axis: str = "principal"):
    """Blocked fit of ``estimator`` (MDAV, VMDAV or PCL with ``k_`` set) on the z-scores Z:
    (labels, rule of kind "blocked", sizes of the blocks, {attribute: value combined over the
    blocks by BLOCK_ATTRIBUTES})."""
    k = estimator.k_
    progress("cut", 0, 1)
    nodes, blocks = cut_tree(Z, k, B, axis)
    progress("cut", 1, 1)
    params = dict(estimator.get_params(), block_size=0, n_jobs=1)
    seeds = _seeds(params.get("random_state"), len(blocks))
    leaf_of = {node["block"]: i for i, node in enumerate(nodes) if "block" in node}
    labels = np.empty(Z.shape[0], np.int64)
    leaves, collected = [None] * len(blocks), [None] * len(blocks)
    workers = min(check_jobs(n_jobs), len(blocks))
    tasks = lambda j: (type(estimator), params, k, np.ascontiguousarray(Z[blocks[j]]), seeds[j])  # noqa: E731
    for j, (local, kind, rule, attributes) in _results(tasks, len(blocks), workers, progress):
        labels[blocks[j]] = local  # made global below, once every block's cell count is known
        leaves[j], collected[j] = (kind, rule), attributes
    offset = 0
    for j, (kind, rule) in enumerate(leaves):
        labels[blocks[j]] += offset
        nodes[leaf_of[j]] = {"kind": kind, "rule": rule, "offset": offset}
        offset += rule_of(kind, rule).n_cells
    attributes = {a: combine([c[a] for c in collected]) for a, combine in BLOCK_ATTRIBUTES.items() if a in collected[0]}
    return labels, {"nodes": nodes}, np.array([b.size for b in blocks]), attributes


def blocks_note(n_blocks: int, block_size: int, sizes) -> str:
    """One line stating how a fit was blocked."""
    if n_blocks <= 1:
        return "not blocked (one block)"
    return (f"blocked: {n_blocks} blocks of at most {block_size:,} records ({int(np.min(sizes)):,}.."
            f"{int(np.max(sizes)):,}), cut along principal axes")


__all__ = ["AUTO_MIN", "DEFAULT_BLOCK", "check_block_size", "cut_tree", "fit_blocks", "blocks_note"]

"""Probabilistic k^m-anonymity on Dask (issue 19.1): Algorithm 2 of paper 5 with A^(r) (see
:mod:`probanon.setvalued.generalize`), in two ways that give the single-machine release for the
same seed.

* :func:`runs_on_dask`: the r independent runs of A^(r) as tasks (data in this process, sent
  once to every worker); each run is seeded as on one machine, so the best run is the same.
* :class:`ShardedRecords`: the records of a FIMI file sharded by record id (shard j = the lines
  starting in the j-th of J equal byte ranges), each shard read by a Dask actor on a worker
  (never through this process, which holds only the item labels, the item counts, the record
  size histogram and, for the sampler, one byte per record naming its shard). With the records
  renumbered by decreasing size as on one machine (:func:`.setvalued.data.by_decreasing_size`;
  a shard's records keep their relative order, so the global id of each is known from the
  shards' size histograms):

  - the uniform sampler of distinct l-itemsets (rejection, :mod:`.setvalued.sampling`) draws
    its uniforms here; a proposal (record r, positions in D_r) is made here, its items read by
    r's shard, and it is accepted iff no shard has a record below r holding it; its support is
    the sum of the shard supports (each capped at k);
  - supp({R(i) : i in s}) >= k (line 10) is decided by the sum over the shards of
    |∩_P R_j(P)| (each shard's count stopped at k), for the distinct generalized itemsets of a
    window of samples at a time (one round trip). What can be decided here is: a sample of
    support >= k, or whose generalized itemset passed before (merges only enlarge parts, so a
    sample that passed stays passed: a status per sample row and a pass cache by part ids);
    a sample whose items are each alone in their part fails (its support is known); a sample
    that failed after merge v fails still if none of its parts has grown since merge v. After a
    merge, the re-test of the sample being fixed carries the next window: a fix costs one round
    trip per merge;
  - the merges (lines 13-14) are chosen here (they need only the item counts and the
    constraints) and sent to the shards with the next query, numbered, so that a query that is
    retried never applies a merge twice;
  - up to ``at_once`` runs are made at the same time (threads here; each shard keeps the record
    lists of each run): one run's work here overlaps another's on the shards.

  A shard whose worker dies is read again from its byte range by an actor on another worker,
  and the merges of the runs in progress are replayed on it; the queries then run again.

The deterministic phase (``exact_upto``), hierarchies (their level cuts are certified on the
whole data) and the MCMC sampler are not distributed: use the runs as tasks for them.
"""

from __future__ import annotations

import contextlib
import os
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import replace

import numba
import numpy as np

from .._validation import check_k, check_random_state, check_runs
from ..errors import InputError, ParameterError, ProbanonError
from ..setvalued.cdr import _fimi_bytes
from ..setvalued.data import _sorted_labels, by_decreasing_size, from_pairs, size_limits
from ..setvalued.gencheck import parts_of
from ..setvalued.generalize import (
    RUNS_RUNNER,
    _best,
    _check_m,
    _RecordIndex,
    _released_csr,
    _run,
    _State,
    align_items,
    complete_constraints,
    run_levels,
)
from ..setvalued.pairs import (
    DEFAULT_BUDGET,
    MAX_ITEMS,
    _pair_counts,
    build_pair_index,
    count_unless_below,
    no_pair_index,
)
from ..setvalued.passcache import PassCache
from ..setvalued.passcache import contains as cache_contains
from ..setvalued.passcache import insert as cache_insert
from ..setvalued.sample_size import sample_size_plan
from ..setvalued.sampling import (
    _distinct_items,
    _distinct_pairs,
    proposal_of_sizes,
    propose_positions,
    rejection_draws,
)
from ..setvalued.support import span_count_unless_below
from .cluster import ClusterError, run_tasks

# ---------------------------------------------------------------- the r runs of A^(r) as tasks


def _run_shared(args, seed, method, also):
    """One run of Algorithm 2 on a worker (``args``: the runs' shared arguments, sent once)."""
    return _run(*args, seed, method, None, also)


@contextlib.contextmanager
def runs_on_dask(client):
    """Inside this context, :func:`probanon.setvalued.anonymize` with r > 1 runs its r runs as
    tasks of ``client``'s cluster (the data is sent once to every worker); same seed, same result."""
    def runner(args, seeds, method, progress, also):
        [shared] = client.scatter([args], broadcast=True, hash=False)
        levels = len(args[3].levels)
        tick = None if progress is None else (lambda stage, done, count: progress("levels", done * levels,
                                                                                  count * levels))
        results = [None] * len(seeds)
        try:
            for j, result in run_tasks(client, _run_shared, len(seeds), lambda j: (shared, seeds[j], method, also),
                                       tick, stage="km-runs"):
                results[j] = result
        finally:
            shared.release()
        return results

    token = RUNS_RUNNER.set(runner)
    try:
        yield client
    finally:
        RUNS_RUNNER.reset(token)


# ---------------------------------------------------------------- one shard, on a worker


def _range_lines(path, j: int, count: int, chunk: int = 1 << 25):
    """The lines of ``path`` that start in the j-th of ``count`` equal byte ranges, in lists of
    the lines of about ``chunk`` bytes at a time."""
    size = os.path.getsize(path)
    a, b = j * size // count, (j + 1) * size // count
    with open(path, "rb") as fh:
        if a > 0:
            fh.seek(a - 1)
            if fh.read(1) != b"\n":
                fh.readline()  # the line that started before a belongs to the previous range
        pos = fh.tell()
        while pos < b:
            text = fh.read(min(chunk, b - pos))
            if not text:  # the file shrank since its size was read
                return
            if not text.endswith(b"\n"):
                text += fh.readline()  # the line that starts before b is this range's
            pos += len(text)
            lines = text.split(b"\n")
            yield lines[:-1] if lines[-1] == b"" else lines


@numba.njit(cache=True, nogil=True)
def _unless_below(rec_indptr, rec_items, item_indptr, item_records, pairs, cands, below, cap, limit):
    """:func:`.setvalued.pairs.count_unless_below` of every row of ``cands`` (row b: -1 if one of
    the first below[b] records holds it)."""
    out = np.empty(cands.shape[0], dtype=np.int64)
    for b in range(cands.shape[0]):
        out[b] = count_unless_below(rec_indptr, rec_items, item_indptr, item_records, pairs, cands[b], below[b],
                                    cap, limit)
    return out


@numba.njit(cache=True, nogil=True)
def _part_counts(first, last, records, parts, lens, k, limits):
    """min(|∩_{P in row b} R(P)|, k) for every row b of ``parts`` (its first lens[b] entries)."""
    out = np.empty(lens.shape[0], dtype=np.int64)
    for b in range(lens.shape[0]):
        n = lens[b]
        out[b] = span_count_unless_below(first, last, records, parts[b, :n], -1, k, limits[min(n, len(limits) - 1)])
    return out


class Shard:
    """The records of one byte range of a FIMI file, on the worker that reads them (a Dask actor).

    After :meth:`build`: ``data`` (the shard's records by decreasing size, global item codes),
    ``gid`` (their global ids, increasing), ``order`` (sorted position -> line in the range),
    the shard's pair index, and per run the record lists of the parts (:class:`_RecordIndex`).
    """

    def __init__(self, path, j: int, count: int):
        self.path = str(path)
        diag = {"lines": 0, "first_blank": -1, "last_record": -1, "comma": -1, "utf8": True}
        codes, rec, items, u, t = {}, [], [], 0, 0
        for lines in _range_lines(self.path, j, count):
            sizes, chunk = [], []
            for line in lines:
                try:
                    text = line.decode("utf-8")
                except UnicodeDecodeError:
                    diag["utf8"] = False
                    break
                tokens = text.split()
                if not tokens:
                    if diag["first_blank"] < 0:
                        diag["first_blank"] = t
                elif "," in text and diag["comma"] < 0:
                    diag["comma"] = t
                if tokens:
                    diag["last_record"] = t
                    sizes.append(len(tokens))
                    chunk.extend(codes.setdefault(x, len(codes)) for x in tokens)
                t += 1
            rec.append(np.repeat(np.arange(u, u + len(sizes), dtype=np.int32), sizes))
            items.append(np.asarray(chunk, dtype=np.int32))
            u += len(sizes)
            if not diag["utf8"]:
                break
        diag["lines"] = t
        self.diag, self.tokens = diag, list(codes)
        self.pairs_in = (np.concatenate(rec), np.concatenate(items)) if rec else None
        self.data = None
        self.runs = {}

    def summary(self):
        """(diagnostics, distinct tokens, record sizes (distinct, counts)) of the range."""
        if not self.tokens:
            return self.diag, [], (np.empty(0, np.int64), np.empty(0, np.int64))
        rec, items = self.pairs_in
        local = from_pairs(rec, items, np.arange(len(self.tokens)))  # duplicates dropped as on one machine
        sizes, counts = np.unique(local.record_sizes, return_counts=True)
        return self.diag, self.tokens, (sizes, counts)

    def build(self, codes, n_items: int, first_of_size, pair_budget: int, pair_counts: bool):
        """Recode the items (``codes[local token] = global item``), sort the records by decreasing
        size and number them (``first_of_size[s]``: global id of this shard's first record of
        size s). Returns the shard's item counts and, if asked, its pair counts (m x m)."""
        self.runs = {}
        if not self.tokens:
            self.data = None
            return np.zeros(n_items, np.int64), (np.zeros((n_items, n_items), np.int32) if pair_counts else None)
        rec, items = self.pairs_in
        self.pairs_in = None  # built once (a lost shard is read again by a new actor)
        data = from_pairs(rec, np.asarray(codes, dtype=np.int32)[items], np.arange(n_items))
        del rec, items
        sizes = data.record_sizes
        self.order = np.argsort(-sizes, kind="stable")
        self.data = by_decreasing_size(data)
        del data
        ss = sizes[self.order]
        self.gid = np.asarray(first_of_size, dtype=np.int64)[ss] + np.arange(len(ss)) - np.searchsorted(-ss, -ss)
        self.limits = size_limits(self.data)
        index = build_pair_index(self.data, int(pair_budget)) if pair_budget else None
        self.pairs = no_pair_index() if index is None else index.arrays()
        counts = None
        if pair_counts:
            counts = index.counts if index is not None else _pair_counts(
                self.data.record_indptr, self.data.record_items, n_items)
        return self.data.item_counts, counts

    def items_at(self, records, positions):
        """The items of the proposals (global record id, sorted positions in it) of this shard."""
        local = np.searchsorted(self.gid, records)
        at = self.data.record_indptr[local][:, None] + positions
        return self.data.record_items[at]

    def unless_below(self, cands, records, cap: int):
        """Per row: -1 if a record of this shard with a global id below records[b] holds it,
        else its support here (capped at ``cap`` > 0)."""
        if self.data is None:
            return np.zeros(len(cands), np.int64)
        d = self.data
        below = np.searchsorted(self.gid, records).astype(np.int64)
        l = cands.shape[1]
        return _unless_below(d.record_indptr, d.record_items, d.item_indptr, d.item_records, self.pairs,
                             np.ascontiguousarray(cands, dtype=np.int32), below, int(cap),
                             self.limits[min(l, len(self.limits) - 1)])

    def start_run(self, run, align, n: int):
        """Run ``run`` starts from the identity partition of the n constraint items."""
        if self.data is not None:
            self.runs[run] = [_RecordIndex(self.data, np.asarray(align), n), set(range(n)), 0]
        return True

    def end_run(self, run):
        self.runs.pop(run, None)
        return True

    def part_counts(self, run, first: int, merges, parts, lens, k: int):
        """Apply the merges numbered first, first + 1, ... not yet applied, then the capped
        supports here of the generalized itemsets ``parts`` (rows of part ids, lens[b] of them).
        A shard that has applied fewer than ``first`` merges (an actor revived while the merges of
        this run were being sent) answers with that number instead: send it the merges from there."""
        if self.data is None:
            return np.zeros(len(lens), np.int64)
        index, live, applied = self.runs[run]
        if applied < first:
            return applied
        for parts_q, items in merges[applied - first:]:
            index.merge(parts_q, items, live)
            live.difference_update(parts_q[1:])
        self.runs[run][2] = first + len(merges)
        return _part_counts(index.first, index.last, index.records, np.ascontiguousarray(parts, dtype=np.int32),
                            np.asarray(lens, dtype=np.int64), int(k), self.limits)

    def released(self, data_partition, n_parts: int) -> bytes:
        """<R, D> of this range's records, in file order, as FIMI lines (part ids)."""
        if self.data is None:
            return b""
        d = self.data
        indptr, parts = _released_csr(d.record_indptr, d.record_items, np.asarray(data_partition, np.int32),
                                      int(n_parts))
        back = np.empty_like(self.order)
        back[self.order] = np.arange(len(self.order))  # file position -> sorted position
        sizes = np.diff(indptr)[back]
        out_indptr = np.zeros(len(sizes) + 1, np.int64)
        np.cumsum(sizes, out=out_indptr[1:])
        take = np.repeat(indptr[:-1][back] - out_indptr[:-1], sizes) + np.arange(out_indptr[-1])
        return _fimi_bytes(out_indptr, parts[take]).tobytes()


# ---------------------------------------------------------------- the shards, seen from here


class ShardedRecords:
    """A FIMI file's records held by Dask actors on the cluster's workers (see the module
    docstring). ``path`` must be readable by the workers (a shared filesystem). Use as a context
    manager (the actors are released on exit)::

        with dask_client(workers=2) as client, ShardedRecords(client, "records.txt") as records:
            result = records.anonymize(k=20, m=4, sigma=0.99, runs=10, random_state=1)
            lines = records.released(result)
    """

    def __init__(self, client, path, shards: int | None = None, pair_budget: int = DEFAULT_BUDGET):
        self.client, self.path = client, str(path)
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise ClusterError("the Dask cluster has no workers")
        count = len(workers) if shards is None else shards
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ParameterError(f"shards must be a positive integer, got {shards!r}")
        if isinstance(pair_budget, bool) or not isinstance(pair_budget, int) or pair_budget < 0:
            raise ParameterError(f"pair_budget must be an integer >= 0, got {pair_budget!r}")
        self.count, self.workers, self.pair_budget = count, workers, pair_budget
        self.futures, self.actors = [None] * count, [None] * count
        self.builds = [None] * count
        self.runs = {}  # run id -> its state (for a lost shard's replay)
        self.generation = [0] * count  # times each shard was revived
        self._lock, self._proposal_lock, self._stop = threading.Lock(), threading.Lock(), threading.Event()
        try:
            for j in range(count):
                self.futures[j], self.actors[j] = self._place(j, [workers[j % len(workers)]])
            self._index(self._call(lambda j: self.actors[j].summary(), rebuild=False))
        except BaseException:
            self.close()
            raise

    # -- setup

    def _index(self, summaries):
        """Global item codes, global record ids and the first read of the file's diagnostics."""
        path, offset, first_blank, last_record = self.path, 0, None, -1
        union = {}
        for diag, tokens, _ in summaries:
            if not diag["utf8"]:
                raise InputError(f"{path}: is not UTF-8 text")
            if diag["comma"] >= 0:
                raise InputError(f"{path}: line {offset + diag['comma'] + 1} has a comma; FIMI items are separated by "
                                 f"whitespace (a table of (record, item) pairs needs a .csv name)")
            if diag["first_blank"] >= 0 and first_blank is None:
                first_blank = offset + diag["first_blank"]
            if diag["last_record"] >= 0:
                last_record = offset + diag["last_record"]
            offset += diag["lines"]
            for t in tokens:
                union.setdefault(t, len(union))
        if last_record < 0:
            raise InputError(f"{path}: the file has no records")
        if first_blank is not None and first_blank < last_record:
            raise InputError(f"{path}: line {first_blank + 1} is an empty record")
        self.item_labels, perm = _sorted_labels(union)
        self.n_items = len(self.item_labels)
        biggest = max(int(s.max()) for _, _, (s, _) in summaries if len(s))
        hist = np.zeros((self.count, biggest + 1), dtype=np.int64)  # records of each size per shard
        for j, (_, _, (sizes, counts)) in enumerate(summaries):
            hist[j, sizes] = counts
        total = hist.sum(0)
        above = np.concatenate((np.cumsum(total[::-1])[::-1][1:], [0]))  # records with more items
        first = above[None, :] + np.cumsum(hist, axis=0) - hist  # shard j's first id of each size
        self.n_records, self.biggest = int(total.sum()), biggest
        self.sizes = np.repeat(np.arange(biggest, -1, -1), total[::-1])  # by decreasing size, as renumbered
        self.owner = np.repeat(np.tile(np.arange(self.count, dtype=np.int16), biggest + 1),
                               hist[:, ::-1].T.ravel())
        self.builds = [(perm[[union[t] for t in tokens]], self.n_items, first[j]) for j, (_, tokens, _) in
                       enumerate(summaries)]
        self.item_counts, self.pair_counts = None, None
        self._proposals = {}

    def _build(self, actor, j, pairs: bool):
        codes, n_items, first = self.builds[j]
        return actor.build(codes, n_items, first, self.pair_budget // self.count, pairs)

    def _prepare(self):
        """Build the shards (once): the item counts and, when the sampler of one machine would
        have a pair index (:func:`.setvalued.pairs.build_pair_index`), the pair counts."""
        if self.item_counts is not None:
            return
        pairs = self.pair_budget > 0 and 2 <= self.n_items <= MAX_ITEMS
        built = self._call(lambda j: self._build(self.actors[j], j, pairs), rebuild=False)
        self.item_counts = np.sum([c for c, _ in built], axis=0)
        if pairs:
            total = np.sum([p for _, p in built], axis=0)
            self.pair_counts = total if np.triu(total, 1).any() else None

    # -- calls to the shards, surviving a lost worker

    def _call(self, task, rebuild=True, shards=None):
        """[task(j)] for the shards j (all by default), each ``task(j)`` an actor call; a shard
        whose worker is lost is read again elsewhere (and its runs replayed) and the call retried.
        Safe from concurrent runs: a shard lost under several of them is revived once."""
        shards = range(self.count) if shards is None else shards
        results = {}
        for _ in range(4):
            calls, lost = {}, []
            for j in shards:
                if j not in results:
                    generation = self.generation[j]
                    try:
                        calls[j] = task(j), generation
                    except Exception as exc:  # noqa: BLE001 - "Worker holding Actor was lost"
                        lost.append((j, generation, exc))
            for j, (call, generation) in calls.items():
                try:
                    results[j] = call.result()
                except ProbanonError:
                    raise
                except Exception as exc:  # noqa: BLE001 - a lost worker shows as various errors
                    lost.append((j, generation, exc))
            if not lost:
                return [results[j] for j in shards]
            for j, generation, exc in lost:
                self._revive(j, generation, exc, rebuild)
        raise ClusterError(f"shard {lost[0][0]} of {self.path} was lost 4 times ({lost[0][2]})")

    def _revive(self, j, generation, exc, rebuild=True):
        """Shard j (whose call failed with ``exc`` while it was at ``generation``) read again by an
        actor on another live worker, built and its runs replayed, unless another run did it
        meanwhile; ``exc`` is raised if the actor still answers (an error, not a lost worker)."""
        with self._lock:
            if self.generation[j] != generation:
                return
            old = self.actors[j]._address
            if self.futures[j].status == "finished" and _answers(self.actors[j]):
                raise exc
            others = [w for w in self.client.scheduler_info()["workers"] if w != old]
            future, actor = self._place(j, others or None)
            try:
                if rebuild and self.item_counts is not None:
                    self._build(actor, j, False).result()
                    for run, state in list(self.runs.items()):  # a run that ends meanwhile leaves its index there until close()
                        actor.start_run(run, state.align, state.c.n_items).result()
                        actor.part_counts(run, 0, list(state.log), np.zeros((0, 1), np.int32), np.zeros(0), 1).result()
            except BaseException:
                future.release()
                raise
            self.futures[j].release()
            self.futures[j], self.actors[j] = future, actor
            self.generation[j] += 1

    def _place(self, j, workers):
        """(future, actor): a new actor reading shard j, on one of ``workers`` (else anywhere)."""
        where = {} if workers is None else {"workers": workers, "allow_other_workers": True}
        future = self.client.submit(Shard, self.path, j, self.count, actor=True, pure=False, **where)
        with self.client.as_current():  # binds the actor's calls to this client (not necessarily the default)
            return future, future.result()

    def close(self):
        """Release the actors (and the shards they hold)."""
        for future in self.futures:
            if future is not None:
                future.release()
        self.futures, self.actors = [None] * self.count, [None] * self.count

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- sampling (Algorithm 1's proposal, rejection: :func:`.setvalued.sampling.sample_itemsets`)

    def proposal(self, l):
        with self._proposal_lock:  # the runs in progress share them
            if l not in self._proposals:
                prop = proposal_of_sizes(self.sizes, l)
                if self._proposals:  # the same records by size at every l: held once
                    prop = replace(prop, by_size=next(iter(self._proposals.values())).by_size)
                self._proposals[l] = prop
            return self._proposals[l]

    def check_stop(self):
        """Raised in a run when another run has failed (or the wait for them was interrupted)."""
        if self._stop.is_set():
            raise _Stopped

    def sample(self, l, n, rng, cap, pairs, prop):
        """What :func:`.setvalued.sampling.sample_itemsets` (rejection) draws from the whole data."""
        if l == 1:
            return _distinct_items(self.item_counts, n, rng, cap)
        if l == 2 and pairs is not None:
            return _distinct_pairs(pairs, n, rng, cap)
        out_items = np.empty((n, l), dtype=np.int32)
        out_supp = np.empty(n, dtype=np.int64)

        seen = [0, 0]  # proposals tested, accepted

        def kernel(U, done):
            """The proposals of U, tested by the shards in pieces of about the expected need (U
            holds twice that; the rows past the n-th acceptance are never used)."""
            pos = used = 0
            while pos < len(U) and done < n:
                rate = seen[1] / seen[0] if seen[1] else self.n_records / max(prop.total, 1.0)
                size = min(len(U) - pos, int(1.25 * (n - done) / max(rate, 1e-9)) + 256)
                cands, supp = self._proposed(prop, l, U[pos:pos + size], cap)
                take = np.flatnonzero(supp >= 0)[:n - done]
                out_items[done:done + len(take)] = cands[take]
                out_supp[done:done + len(take)] = supp[take]
                seen[0], seen[1] = seen[0] + size, seen[1] + int((supp >= 0).sum())
                done += len(take)
                used = pos + (int(take[-1]) + 1 if done == n else size)
                pos += size
            return done, used

        return rejection_draws(kernel, out_items, out_supp, self.n_records, prop.total, rng)

    def _proposed(self, prop, l, U, cap):
        """(items, support) of the proposals of the rows of U: support -1 if a record before the
        proposing one holds the items (rejected), else the sum of the shard supports (capped)."""
        self.check_stop()
        records, positions = _positions(prop.arrays(), l, U)
        owner = self.owner[records]
        cands = np.empty((len(U), l), dtype=np.int32)
        mine = [np.flatnonzero(owner == j) for j in range(self.count)]
        have = [j for j in range(self.count) if len(mine[j])]
        found = self._call(lambda j: self.actors[j].items_at(records[mine[j]], positions[mine[j]]), shards=have)
        for j, items in zip(have, found):
            cands[mine[j]] = items
        counts = np.array(self._call(lambda j: self.actors[j].unless_below(cands, records, cap)))
        rejected = (counts < 0).any(axis=0)
        supp = counts.sum(axis=0) if cap <= 0 else np.minimum(counts.sum(axis=0), cap)
        supp[rejected] = -1
        return cands, supp

    # -- Algorithm 2 / A^(r)

    def anonymize(self, k, m, sigma, constraints=None, runs: int = 1, random_state=None, progress=None,
                  bound: str = "two-sided", at_once: int = 2):
        """:func:`probanon.setvalued.anonymize` (rejection sampling, exact_upto = 0, no
        hierarchy) on the sharded records: the same :class:`.setvalued.Generalization` for the same
        seed. Up to ``at_once`` of the r runs are made at the same time (each uses every shard and
        holds its record lists there): while one waits for the shards, another works here."""
        m = _check_m(m)
        plan = sample_size_plan(sigma, k, m, bound)
        for k_l in plan.k:
            check_k(int(k_l), self.n_records)
        if any(g is None for g in plan.gamma):
            raise ParameterError("sigma = 1 (the deterministic phase) is not distributed: run the r runs as tasks "
                                 "on records loaded here")
        runs = check_runs(runs)
        if isinstance(at_once, bool) or not isinstance(at_once, int) or at_once < 1:
            raise ParameterError(f"at_once must be a positive integer, got {at_once!r}")
        if constraints is None:
            constraints = complete_constraints(self.item_labels)
        if constraints.kind == "hierarchy":
            raise ParameterError("hierarchy constraints are not distributed over shards (their level cuts are "
                                 "certified on the whole data): run the r runs as tasks on records loaded here")
        align = align_items(self, constraints)
        rng = check_random_state(random_state)
        seeds = [int(s) for s in rng.integers(0, 2**63 - 1, size=runs)]
        self._prepare()
        pairs = self.pair_counts
        if progress is not None:  # each run reports its own levels, from its thread: counted together
            lock, report, done = threading.Lock(), progress, [0]

            def progress(stage, level, levels):
                with lock:
                    done[0] += 1
                    report(stage, done[0], runs * levels)

        def run(j):
            return self._run(j, seeds[j], constraints, align, plan, pairs, progress)[m]

        self._stop.clear()
        with ThreadPoolExecutor(min(at_once, runs)) as pool:
            futures = [pool.submit(run, j) for j in range(runs)]
            try:
                wait(futures, return_when=FIRST_EXCEPTION)
                for f in futures:
                    if f.done() and f.exception() is not None:
                        raise f.exception()
                results = [f.result() for f in futures]
            except BaseException:  # the first failure (or Ctrl-C) stops the other runs at their next query
                self._stop.set()
                for f in futures:
                    f.cancel()
                raise
        return _best(constraints, align, plan, m, results, seeds)

    def _run(self, run, seed, constraints, align, plan, pairs, progress):
        """One run of Algorithm 2 (:func:`.setvalued.generalize.run_levels`) on the shards."""
        state = _ShardedState(self, run, constraints, align, int(plan.k[0]), len(plan.levels))
        self.runs[run] = state
        try:
            self._call(lambda j: self.actors[j].start_run(run, align, constraints.n_items))
            return run_levels(state, self.biggest, plan, 0, pairs, seed, "rejection", progress)
        finally:
            del self.runs[run]
            self._call(lambda j: self.actors[j].end_run(run))

    def released(self, result) -> bytes:
        """<R, D> as FIMI text (part ids), records in file order: what
        ``_fimi_bytes`` of :func:`.setvalued.release_data` writes on one machine."""
        return b"".join(self._call(lambda j: self.actors[j].released(result.data_partition, result.n_parts)))


class _Stopped(Exception):
    """A run stopped because another one failed (never seen outside :meth:`ShardedRecords.anonymize`)."""


def _answers(actor) -> bool:
    """Whether a shard's actor still answers (within 10 s)."""
    try:
        actor.end_run(-1).result(timeout=10)
    except Exception:  # noqa: BLE001 - no answer: its worker is lost
        return False
    return True


def _positions(prop, l, U):
    """(records, sorted positions) of the proposals of the rows of U."""
    records = np.empty(len(U), dtype=np.int64)
    positions = np.empty((len(U), l), dtype=np.int64)
    _fill_positions(prop, l, U, records, positions)
    return records, positions


@numba.njit(cache=True, nogil=True)
def _fill_positions(prop, l, U, records, positions):
    for b in range(U.shape[0]):
        records[b] = propose_positions(prop, l, U[b], positions[b])


class _MergeLog(list):
    """The part index of :class:`_State` for records on shards: (parts, items) of every merge
    of the run, in order (a merge's number is its position)."""

    def merge(self, parts, items, live):
        self.append((list(parts), np.asarray(items, dtype=np.int64)))


PASSED = -2  # a row's status: known to pass (for good: merges only enlarge parts)


@numba.njit(cache=True, nogil=True)
def _to_test(part_of_item, n_data, grown, itemsets, supports, k, lo, hi, status, version, keys, lens, out_parts,
             out_lens, out_rows):
    """Rows lo..hi-1 of a sample whose test needs the shards: (their generalized itemsets into
    out_parts/out_lens (padded with -1), their rows into out_rows; returns how many). The others
    are decided here: status[s] = PASSED when supports[s] >= k (merges never lower a support)
    or the generalized itemset is in the pass cache ``keys``/``lens``; status[s] = ``version``
    (fails under the current partition) when every item is alone in its part (the generalized
    itemset is s itself, of support supports[s] < k: :mod:`.setvalued.gencheck`, way 1), or when
    s failed after merge v = status[s] and none of its parts has grown since (grown[P]: the
    number of the last merge into part P): the same parts, the same records."""
    buf = np.empty(itemsets.shape[1], dtype=np.int32)
    t = 0
    for s in range(lo, hi):
        if status[s] == PASSED or status[s] == version:
            continue
        if supports[s] >= k:
            status[s] = PASSED
            continue
        n = parts_of(part_of_item, itemsets[s], buf)
        if cache_contains(keys, lens, buf, n):
            status[s] = PASSED
            continue
        same = status[s] >= 0
        for j in range(n):
            same = same and grown[buf[j]] <= status[s]
        if same:
            status[s] = version
            continue
        alone = n == itemsets.shape[1]
        for j in range(n):
            alone = alone and n_data[buf[j]] == 1
        if alone:
            status[s] = version
            continue
        out_parts[t, :n] = buf[:n]
        out_parts[t, n:] = -1
        out_lens[t] = n
        out_rows[t] = s
        t += 1
    return t


@numba.njit(cache=True, nogil=True)
def _remember(keys, lens, parts, plens, ok):
    """Add the generalized itemsets found to pass to the pass cache; returns how many were new."""
    added = 0
    for b in range(parts.shape[0]):
        if ok[b]:
            added += cache_insert(keys, lens, parts[b], plens[b])
    return added


class _ShardedState(_State):
    """Algorithm 2's state (:class:`.setvalued.generalize._State`) with the records on the
    shards: the partition and the merge choice here, the supports summed over the shards.

    The rows of the current sample carry a status: known to pass (for good), failing under the
    partition after v merges (v), or unknown. One round trip tests the unknown rows of a window
    (their distinct generalized itemsets); after a merge, the test of the itemset being fixed
    carries the next window too, so that a fix costs one round trip per merge and the rows
    found to pass are never tested again."""

    WINDOW = 4096  # sample rows looked at per round trip

    def __init__(self, records, run, constraints, align, k, m):
        self.records, self.run = records, run
        self.cache = PassCache(m)
        self.start(constraints, align, records.item_counts, k, False)
        self.log = self.index = _MergeLog()  # the shards apply the merges with the next query
        self.sent = [0] * records.count  # merges each shard has been sent
        self.grown = np.zeros(constraints.n_items, dtype=np.int64)  # part id -> number of its last merge
        self._sample, self._status, self._row, self._at = None, None, -1, -1

    def proposal(self, l):
        return self.records.proposal(l)

    def sample(self, l, n, rng, method, pairs, prop):
        return self.records.sample(l, n, rng, self.k, pairs, prop)

    def merge(self, parts, node) -> None:
        super().merge(parts, node)
        self.grown[parts[0]] = len(self.log)

    def counts(self, parts, lens, k):
        """sum over the shards of min(|∩ R_j(P)|, k) for every generalized itemset (row)."""
        records, run = self.records, self.run
        records.check_stop()
        first, found, todo = list(self.sent), {}, list(range(records.count))
        while todo:
            got = records._call(lambda j: records.actors[j].part_counts(run, first[j], self.log[first[j]:], parts,
                                                                           lens, k), shards=todo)
            behind = []
            for j, c in zip(todo, got):
                if isinstance(c, int):  # a revived shard with c merges: send it the rest
                    first[j] = c
                    behind.append(j)
                else:
                    found[j] = c
            todo = behind
        self.sent = [len(self.log)] * records.count
        return np.sum([found[j] for j in range(records.count)], axis=0)

    def _parts_of_items(self):
        """(part of each data item, data items per part) under the current partition."""
        if self._at != len(self.log):
            self._at = len(self.log)
            self._pof = self.part[self.align].astype(np.int32)
            self._n_data = np.bincount(self._pof, minlength=self.c.n_items).astype(np.int32)
        return self._pof, self._n_data

    def _use(self, itemsets, supports):
        """Make ``itemsets`` the current sample (its rows' statuses start unknown)."""
        if itemsets is not self._sample or self._sample_k != self.k:
            self._sample, self._supports, self._sample_k = itemsets, np.asarray(supports), self.k
            self._status = np.full(len(itemsets), -1, dtype=np.int64)

    def _test(self, lo, hi):
        """Decide rows lo..hi-1 of the current sample (at most one round trip)."""
        pof, n_data = self._parts_of_items()
        l = self._sample.shape[1]
        parts = np.empty((hi - lo, l), dtype=np.int32)
        lens, rows = np.empty(hi - lo, dtype=np.int64), np.empty(hi - lo, dtype=np.int64)
        t = _to_test(pof, n_data, self.grown, self._sample, self._supports, self.k, lo, hi, self._status, len(self.log),
                     self.cache.keys, self.cache.lens, parts, lens, rows)
        if t == 0:
            return
        distinct, inverse = np.unique(parts[:t], axis=0, return_inverse=True)
        plens = (distinct >= 0).sum(axis=1)
        ok = self.counts(distinct, plens, self.k) >= self.k
        self._status[rows[:t]] = np.where(ok[inverse.ravel()], PASSED, len(self.log))
        self.cache.reserve(int(ok.sum()))
        self.cache.size += int(_remember(self.cache.keys, self.cache.lens, distinct, plens, ok))

    def first_failure(self, itemsets, supports, start: int) -> int:
        """The first row from ``start`` that is not k-anonymous (or len(itemsets))."""
        self._use(itemsets, supports)
        pos, n = start, len(itemsets)
        while pos < n:
            end = min(pos + self.WINDOW, n)
            self._test(pos, end)
            failing = np.flatnonzero(self._status[pos:end] == len(self.log))
            if len(failing):
                self._row = pos + int(failing[0])
                return self._row
            pos = end
        return n

    def anonymous(self, items) -> bool:
        """Line 10 for ``items``; for the row being fixed (:meth:`first_failure` just returned
        it) the test also covers the next window of the sample."""
        row = self._row
        if self._sample is None or not 0 <= row < len(self._sample) or not np.array_equal(items, self._sample[row]):
            parts, lens = self._generalized(np.asarray(items)[None, :])
            return bool(self.counts(parts, lens, self.k)[0] >= self.k)
        if self._status[row] != len(self.log):  # not already known to fail: test it and the rows after it
            self._test(row, min(row + 1 + self.WINDOW, len(self._sample)))
        return bool(self._status[row] == PASSED)

    def _generalized(self, itemsets):
        """Rows of distinct sorted part ids (padded with -1) and their lengths."""
        parts = np.sort(self.part[self.align[np.asarray(itemsets, dtype=np.int64)]], axis=1)
        repeat = np.zeros(parts.shape, dtype=bool)
        repeat[:, 1:] = parts[:, 1:] == parts[:, :-1]
        parts[repeat] = np.iinfo(np.int64).max
        parts.sort(axis=1)
        lens = (~repeat).sum(axis=1)
        parts[parts == np.iinfo(np.int64).max] = -1
        return parts.astype(np.int32), lens

    def count_anonymous(self, itemsets, supports, k) -> int:
        low = np.flatnonzero(np.asarray(supports) < k)
        if len(low) == 0:
            return len(itemsets)
        parts, lens = self._generalized(np.asarray(itemsets)[low])
        return int(len(itemsets) - len(low) + (self.counts(parts, lens, k) >= k).sum())


__all__ = ["Shard", "ShardedRecords", "runs_on_dask"]

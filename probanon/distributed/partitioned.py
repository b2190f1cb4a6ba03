"""Blocked microaggregation of a Parquet directory on Dask (issue 19.2): the data stay on the
workers, as Dask partitions (one per file), from reading to writing.

The result is the one of a blocked fit in one process (:mod:`probanon.microagg.blocks`) on the
files' rows concatenated in file-name order, bit for bit: the same labels, function and
centroids for the same seed. Every number the single-machine fit takes from all the rows is
rebuilt here from per-partition pieces that add up exactly:

1. The z-scores. The files are read by the workers (one task per file, kept in memory as a
   future). Column sums, extremes and sums of squared scaled deviations are exact
   (:class:`probanon.exactsum.ExactSum`), so :class:`probanon.data.Standardizer` is the one of
   ``Standardizer.fit`` on all the rows.
2. The cut tree, one level at a time, every open node of the level in the same rounds:
   (a) the node's exact moments -> its principal axis (:func:`.microagg.blocks.directions`);
   (b) every partition's projections of the node's rows (:func:`.microagg.rule_kernels.project_rows`,
   as in one process), sorted, one in ``STRIDE``-ths -> a bracket [lo, hi] of values that must
   hold the ranks around the median; (c) the projections within the bracket and the count below
   it -> the exact sorted projections s[R0 .. R0 + len) around the median, in which the cut
   position of :func:`.microagg.blocks._cut_position` is found when the window settles it
   (:func:`_cut_in_window`), else the window is widened. So a node is cut where it is cut in
   one process, and the nodes are numbered as there (:func:`_numbered`).
3. The blocks: each partition splits its rows by block (a task per partition), each block's
   task gathers its pieces from the partitions (worker to worker, in partition order, so its
   rows are in the single-machine order), z-scores them and runs MDAV / V-MDAV / PCL with the
   block's seed (``SeedSequence(random_state).spawn``), and returns its labels, rule and group
   means (:func:`.microagg.base.group_means` on the block's rows: the same sums, in the same
   order, as on the whole file).
4. With ``output``: each partition's task reads its file again, replaces the keys by the means of
   their groups, puts the rows in a random order (its own generator, spawned from the seed) and
   writes ``part-NNNNN.parquet``: one output file per input file, written into a temporary
   folder that becomes ``output`` only when every file is written.

The client holds the tree, the rules and the group means (and, unless ``labels=False``, the
labels of every row: 8 bytes each); no partition passes through it.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from .._validation import check_k, check_matrix
from ..data import Standardizer, is_constant
from ..errors import InputError, ParameterError
from ..exactsum import ExactSum
from ..microagg.base import group_means
from ..microagg.blocks import (
    BLOCK_ATTRIBUTES,
    _fit_block,
    _seeds,
    block_size_for,
    blocks_note,
    directions,
    node_moments,
)
from ..microagg.function import publish_function
from ..microagg.rule_kernels import project_rows
from ..microagg.rules import rule_of

#: projections a partition sends per node to bracket its median: one in every STRIDE-th of them
SAMPLES = 256
#: first half-width of the window of exact ranks around the median (in units of k)
WINDOW_K = 8

# ---------------------------------------------------------------- tasks (on the workers)


def parquet_files(source) -> list[str]:
    """The partitions of ``source``: its ``*.parquet`` files in the order of their names in the
    folder (a directory; a symbolic link counts by its own name), or the given list of files in
    its order; as absolute paths (the workers' working folder is not ours)."""
    if isinstance(source, (list, tuple)):
        files = [str(Path(p).resolve()) for p in source]
    else:
        folder = Path(source)
        if not folder.is_dir():
            raise InputError(f"{source}: not a directory of Parquet files")
        files = [str(p.resolve()) for p in sorted(folder.glob("*.parquet"), key=lambda p: p.name) if p.is_file()]
    if not files:
        raise InputError(f"{source}: no .parquet file")
    return files


def _schema(path: str):
    """(column names, rows) of one file, from its Parquet footer."""
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(path)
        return meta.schema.to_arrow_schema().names, meta.num_rows
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: cannot be read as Parquet ({str(exc).splitlines()[0]})") from None


def parquet_schema(client, files):
    """(column names, rows of each file): every file read by a worker, and every file must have
    the first file's columns, in the same order."""
    schemas = client.gather([client.submit(_schema, f, pure=False) for f in files])
    names = schemas[0][0]
    for f, (other, _) in zip(files, schemas):
        if other != names:
            extra = [c for c in other if c not in names] or [c for c in names if c not in other]
            raise InputError(f"{f}: its columns differ from those of {files[0]}"
                             + (f" (column {extra[0]!r})" if extra else " (their order)"))
    return names, [rows for _, rows in schemas]


def _load(path: str, keys):
    """The key columns of one file: (column names, n x d float64)."""
    import pandas as pd

    from ..data import select_columns

    frame = pd.read_parquet(path, columns=list(keys) if keys else None)
    columns = select_columns(frame, list(keys) if keys else None)
    X = check_matrix(frame[columns], name=path) if len(frame) else np.empty((0, len(columns)))
    return columns, np.ascontiguousarray(X, dtype=np.float64)


def _columns_of(part):
    return part[0]


def _matrix_of(part):
    return part[1]


def _first_moments(X):
    """(rows, exact column sums, column minima, column maxima or None when empty)."""
    if X.shape[0] == 0:
        return 0, ExactSum.zeros(X.shape[1]), None, None
    return X.shape[0], ExactSum.of(X), X.min(axis=0), X.max(axis=0)


def _square_sums(X, mean, unit):
    return ExactSum.of(((X - mean) / unit) ** 2)


def _zscores(X, standardizer):
    return np.ascontiguousarray(standardizer.transform(X))


def _route(Z, splits):
    """{open node (not in ``splits``): its rows, increasing} for the rows of Z, down the splits
    made so far ({node: (axis, threshold, left, right)}, from node 0)."""
    out, todo = {}, [(0, np.arange(Z.shape[0]))]
    while todo:
        i, rows = todo.pop()
        if i not in splits:
            out[i] = rows
            continue
        axis, t, left, right = splits[i]
        yes = project_rows(Z, rows, axis) <= t
        todo += [(left, rows[yes]), (right, rows[~yes])]
    return out


def _query(Z, splits, queries):
    """One round of the cut of the open nodes, on one partition (module docstring, step 2):
    {node: answer} for {node: ("moments",) | ("sample", axis) | ("window", axis, lo, hi)}."""
    at = _route(Z, splits)
    out = {}
    for node, query in queries.items():
        rows = at.get(node, np.empty(0, np.int64))
        if query[0] == "moments":
            out[node] = node_moments(Z, rows)
            continue
        p = np.sort(project_rows(Z, rows, query[1]))
        if query[0] == "sample":
            stride = max(1, -(-p.size // SAMPLES))
            out[node] = (p.size, stride, p[::stride])
        else:
            lo, hi = query[2], query[3]
            a, b = np.searchsorted(p, lo, "left"), np.searchsorted(p, hi, "right")
            out[node] = (int(a), *np.unique(p[a:b], return_counts=True))  # ties sent once, with their count
    return out


def _split(X, Z, splits, leaves):
    """The rows of one partition by block: [X rows of block j] (``leaves``: node -> block)."""
    at = _route(Z, splits)
    pieces = [None] * len(leaves)
    for node, j in leaves.items():
        pieces[j] = X[at.get(node, np.empty(0, np.int64))]
    return pieces


def _piece(split, j):
    return split[j]


def _piece_sizes(split):
    return np.array([len(piece) for piece in split], np.int64)


def _fit_pieces(cls, params, k, seed, standardizer, *pieces):
    """One block: its rows gathered in partition order, z-scored, partitioned by the method
    (:func:`.microagg.blocks._fit_block`); (labels, kind, rule, attributes, group means, sizes,
    the exact SSE of the z-scores against their group means')."""
    X = np.concatenate(pieces)
    Z = _zscores(X, standardizer)
    labels, kind, rule, attributes = _fit_block(cls, params, k, Z, seed)
    cells = rule_of(kind, rule).n_cells
    means = group_means(X, labels, cells)
    sse = ExactSum.of(((Z - standardizer.transform(means)[labels]) ** 2).ravel())
    by_piece = np.split(labels, np.cumsum([len(piece) for piece in pieces])[:-1])  # the labels of each partition
    return by_piece, kind, rule, attributes, means, np.bincount(labels, minlength=cells), sse


def _piece_labels(result, p):
    return result[0][p]


def _summary(result):
    return result[1:]


def _partition_labels(Z, splits, leaves, offsets, *piece_labels):
    """The global labels of one partition's rows (in file order): its rows of block j take
    ``piece_labels[j]`` (their labels in the block) plus the block's first cell ``offsets[j]``."""
    at = _route(Z, splits)
    out = np.empty(Z.shape[0], np.int64)
    for node, j in leaves.items():
        if node in at:
            out[at[node]] = piece_labels[j] + offsets[j]
    return out


def _write(path, target, columns, labels, centroids, seed, keep):
    """The release of one file: its columns ``keep``, the keys (``columns``) replaced by their
    group means, rows in the order of a permutation drawn from ``seed`` (None: file order),
    written to ``target`` (Parquet)."""
    import pandas as pd

    frame = pd.read_parquet(path, columns=list(keep))
    for c, values in zip(columns, centroids[labels].T):
        frame[c] = values
    if seed is not None:
        frame = frame.iloc[np.random.default_rng(seed).permutation(len(frame))].reset_index(drop=True)
    frame.to_parquet(target, index=False)
    return len(frame)


#: rows of all the files drawn for the pre-release audit of the whole
AUDIT_SAMPLE = 200_000


def _audit(path, keys, published, take, seed):
    """(the audit of one file, or None when it is empty; ``take`` of its rows drawn without
    replacement from ``seed``)."""
    import pandas as pd

    from ..attacks.audit import audit

    frame = pd.read_parquet(path, columns=list(keys) + list(published))
    result = audit(frame, keys, published) if len(frame) else None
    rows = np.sort(np.random.default_rng(seed).choice(len(frame), size=min(take, len(frame)), replace=False))
    return result, frame.iloc[rows]


def audit_files(client, files, keys, published) -> list:
    """The pre-release audit (:func:`probanon.attacks.audit.audit`) of every file, each on a
    worker, and of a sample of ``AUDIT_SAMPLE`` rows of all the files (each file's share in
    proportion to its rows; every row when there are fewer), in this process: [(where, result)]
    for those with a finding. A relation that holds on a share s of all the rows holds on at least
    that share of some file, so no relation of the whole is missed; a regression over all the
    rows shows in the sample (files cut along a key can each hide it)."""
    import pandas as pd

    from ..attacks.audit import audit

    _, rows = parquet_schema(client, files)
    n = sum(rows)
    take = [r if n <= AUDIT_SAMPLE else -(-r * AUDIT_SAMPLE // n) for r in rows]
    seeds = np.random.SeedSequence(0).spawn(len(files))
    results = client.gather([client.submit(_audit, f, keys, published, t, s, pure=False)
                             for f, t, s in zip(files, take, seeds)])
    found = [(f, r) for f, (r, _) in zip(files, results) if r is not None and not r.passed]
    sample = pd.concat([frame for _, frame in results], ignore_index=True)
    whole = audit(sample, keys, published)
    where = "all the files" if n <= AUDIT_SAMPLE else f"a sample of {len(sample):,} rows of all the files"
    return ([(where, whole)] if not whole.passed else []) + found


# ---------------------------------------------------------------- the cut (on the client)


def _bracket(samples, below_rank: int, above_rank: int):
    """(lo, hi) such that at most ``below_rank`` values are < lo and more than ``above_rank``
    values are < hi (or -inf / +inf), from every partition's (count, stride, sorted values one in
    stride). When c of a partition's samples are below v, its count below v is between
    (c - 1) stride + 1 (0 if c = 0) and min(c stride, count): each sample passed adds to the two
    bounds, so one sort of all the samples and cumulative sums give them for every candidate."""
    values = np.concatenate([s for _, _, s in samples])
    up = np.concatenate([np.diff(np.minimum(np.arange(len(s) + 1) * stride, count)) for count, stride, s in samples])
    low = np.concatenate([np.where(np.arange(len(s)) == 0, 1, stride) for _, stride, s in samples])
    order = np.argsort(values, kind="stable")
    values = values[order]
    upper = np.concatenate([[0], np.cumsum(up[order])])
    lower = np.concatenate([[0], np.cumsum(low[order])])
    candidates = np.unique(values)
    below = np.searchsorted(values, candidates, "left")  # samples < candidate
    ok_lo = np.flatnonzero(upper[below] <= below_rank)
    ok_hi = np.flatnonzero(lower[below] >= above_rank + 1)
    lo = candidates[ok_lo[-1]] if ok_lo.size else -np.inf
    hi = candidates[ok_hi[0]] if ok_hi.size else np.inf
    return lo, hi


def _cut_in_window(values, counts, start: int, m: int, k: int, target: int):
    """What :func:`.microagg.blocks._cut_position` returns on all m sorted projections s, given
    s[start .. start + sum(counts)) as its distinct ``values`` (increasing) and their ``counts``:
    ("cut", L, s[L-1], s[L]), ("none",) (no valid cut in the whole node) or ("wider",) when
    positions outside the window could still win. The known gaps (s[L-1] < s[L]) are the ends of
    the runs of equal values but the last; positions outside [start + 1, end - 1] are unknown."""
    ends = start + np.cumsum(counts)
    end = int(ends[-1])
    whole = start == 0 and end == m
    gaps = ends[:-1]
    valid = np.flatnonzero((gaps >= k) & (gaps <= m - k))
    multiples = valid[gaps[valid] % k == 0]
    pool = multiples if multiples.size or not whole else valid  # a multiple of k if there is one
    if pool.size == 0:
        return ("none",) if whole else ("wider",)
    i = int(pool[np.argmin(np.abs(gaps[pool] - target))])
    L = int(gaps[i])
    d = abs(L - target)
    if whole or start + 1 <= max(target - d, k) and min(target + d, m - k) <= end - 1:
        return "cut", L, values[i], values[i + 1]
    return ("wider",)  # a multiple nearer to the target may lie outside


def _numbered(splits, sizes):
    """The tree in the numbering of :func:`.microagg.blocks.cut_tree` (depth first, left before
    right): (nodes with {"axis", "threshold", "left", "right"} or {"block": j}, leaves {our node:
    block}, block sizes)."""
    nodes, leaves, block_sizes = [None], {}, []
    stack = [(0, 0)]
    while stack:
        i, ours = stack.pop()
        if ours not in splits:
            nodes[i] = {"block": len(block_sizes)}
            leaves[ours] = len(block_sizes)
            block_sizes.append(sizes[ours])
            continue
        axis, t, left, right = splits[ours]
        a = len(nodes)
        nodes += [None, None]
        nodes[i] = {"axis": axis, "threshold": t, "left": a, "right": a + 1}
        stack += [(a + 1, right), (a, left)]
    return nodes, leaves, np.array(block_sizes)


class _Partitions:
    """The z-scored partitions (futures) and the rounds of queries on them."""

    def __init__(self, client, zparts):
        self.client, self.zparts = client, zparts

    def ask(self, splits, queries):
        """[answer of each partition] for the queries (one round trip)."""
        futures = [self.client.submit(_query, z, splits, queries, pure=False) for z in self.zparts]
        return self.client.gather(futures)


def _cut_level(parts, splits, open_nodes, sizes, k, axis):
    """Cut every node of ``open_nodes`` (module docstring, step 2); returns {node: cut or None}."""
    moments = parts.ask(splits, {node: ("moments",) for node in open_nodes})
    state = {}
    for node in open_nodes:
        total = moments[0][node]
        for answer in moments[1:]:
            count, sums, products = answer[node]
            total = (total[0] + count, total[1] + sums, total[2] + products)
        m = sizes[node]
        state[node] = {"dirs": directions(total, axis), "dir": 0, "half": WINDOW_K * k, "samples": None,
                       "target": k * round(m / 2 / k)}
    cuts = {}
    while state:
        queries = {}
        for node, st in state.items():
            v = st["dirs"][st["dir"]]
            if st["samples"] is None:
                queries[node] = ("sample", v)
            else:
                lo, hi = _bracket(st["samples"], st["target"] - st["half"], st["target"] + st["half"])
                queries[node] = ("window", v, lo, hi)
        answers = parts.ask(splits, queries)
        for node in list(state):
            st = state[node]
            if queries[node][0] == "sample":
                st["samples"] = [a[node] for a in answers]
                continue
            start = sum(a[node][0] for a in answers)
            values, where = np.unique(np.concatenate([a[node][1] for a in answers]), return_inverse=True)
            counts = np.zeros(values.size, np.int64)
            np.add.at(counts, where, np.concatenate([a[node][2] for a in answers]))
            found = _cut_in_window(values, counts, start, sizes[node], k, st["target"])
            if found[0] == "cut":
                _, L, a, b = found
                t = a + 0.5 * (b - a)  # as in _cut
                cuts[node] = (st["dirs"][st["dir"]], float(t if t < b else a), L)
            elif found[0] == "none":
                st["dir"] += 1
                st["samples"], st["half"] = None, WINDOW_K * k
                if st["dir"] == len(st["dirs"]):
                    cuts[node] = None
            else:
                st["half"] *= 8
            if node in cuts:
                del state[node]
    return cuts


def _cut_tree(parts, n, k, B, axis, progress):
    """The cut tree of all the rows (as :func:`.microagg.blocks.cut_tree`): (splits, sizes)."""
    splits, sizes, next_id = {}, {0: n}, 1
    open_nodes = [0] if n > B else []
    level, levels = 0, max(1, int(np.ceil(np.log2(n / B))))
    while open_nodes:
        progress("cut", level, levels)
        cuts = _cut_level(parts, splits, open_nodes, sizes, k, axis)
        following = []
        for node in open_nodes:
            if cuts[node] is None:
                continue
            v, t, L = cuts[node]
            left, right = next_id, next_id + 1
            next_id += 2
            splits[node] = (v, t, left, right)
            sizes[left], sizes[right] = L, sizes[node] - L
            following += [c for c in (left, right) if sizes[c] > B]
        open_nodes, level = following, level + 1
    progress("cut", levels, levels)
    return splits, sizes


# ---------------------------------------------------------------- the fit


def fit_parquet(client, estimator, source, keys=None, output=None, *, labels: bool = True, axis: str = "principal",
                random_state_output=None, drop=(), keep_order: bool = False, progress=None):
    """Fit ``estimator`` (MDAV, VMDAV or PCL, blocked: ``block_size`` an integer, or None with at
    least 200,000 rows) on the Parquet files of ``source`` (a directory, files in name order, or
    a list of paths every worker can read) with the data kept on ``client``'s workers (module
    docstring). ``keys``: the key columns (default: every numeric column). With ``output`` (a
    directory that must not exist), the release is written there, one file per input file,
    without the columns ``drop``, rows in an order drawn from ``random_state_output`` (default:
    the estimator's ``random_state``, else fresh entropy) unless ``keep_order``. Returns the
    fitted estimator: the attributes of ``estimator.fit`` on the concatenated rows (``labels_``
    only with ``labels=True``), same seed, same values, and ``information_loss_``: 100 SSE/SST
    of :func:`probanon.metrics.information_loss` (z-scores, SST = n per non-constant column)."""
    from distributed import as_completed

    from ..progress import quiet
    from ..release import Promise, shuffle_stream

    say = progress or quiet
    if not estimator._blockable:
        raise ParameterError(f"fit_parquet fits MDAV, V-MDAV or PCL in blocks, not {type(estimator).__name__}")
    if len(estimator.nominal) or len(estimator.ordinal) or estimator.missing != "raise":
        raise ParameterError("fit_parquet fits numeric keys without missing values: categorical keys (nominal=, "
                             "ordinal=) and missing='pattern' are not available for Parquet files")
    if output is not None and os.path.exists(output):
        raise InputError(f"{output}: already exists (a directory release is never overwritten: remove it first)")
    files = parquet_files(source)
    say("read", 0, len(files))
    every, _ = parquet_schema(client, files)
    lacking = [c for c in keys or () if c not in every]
    if lacking:
        raise InputError(f"{files[0]}: key column {lacking[0]!r} is not in the files")
    drop = list(drop)
    loaded = [client.submit(_load, f, keys, pure=False) for f in files]
    names = client.gather([client.submit(_columns_of, part) for part in loaded])
    columns = names[0]
    for f, other in zip(files, names):
        if other != columns:
            raise InputError(f"{f}: its key columns {other} differ from those of {files[0]} ({columns})")
    xparts = [client.submit(_matrix_of, part, pure=False) for part in loaded]
    del loaded
    first = client.gather([client.submit(_first_moments, x) for x in xparts])
    say("read", len(files), len(files))
    n = sum(f[0] for f in first)
    k = estimator.k_ = check_k(estimator.k, n)
    estimator._validate_params()
    B = block_size_for(estimator.block_size, k, n, estimator._default_block_size)
    if B == 0:
        raise ParameterError(f"fit_parquet fits in blocks: {n:,} rows need block_size (an integer < n), or at least "
                             "200,000 rows for the automatic blocks")
    total = first[0][1]
    for f in first[1:]:
        total = total + f[1]
    mean = total.values() / n
    low = np.min([f[2] for f in first if f[0]], axis=0)
    high = np.max([f[3] for f in first if f[0]], axis=0)
    unit = Standardizer.unit(mean, low, high)
    squares = client.gather([client.submit(_square_sums, x, mean, unit) for x in xparts])
    square = squares[0]
    for s in squares[1:]:
        square = square + s
    standardizer = Standardizer.from_moments(mean, unit, square.values() / n)
    zparts = [client.submit(_zscores, x, standardizer, pure=False) for x in xparts]

    splits, sizes = _cut_tree(_Partitions(client, zparts), n, k, B, axis, say)
    nodes, leaves, block_sizes = _numbered(splits, sizes)
    count = len(block_sizes)

    split_parts = [client.submit(_split, x, z, splits, leaves, pure=False) for x, z in zip(xparts, zparts)]
    del xparts  # the blocks' rows are in split_parts now
    pieces = [[client.submit(_piece, s, j, pure=False) for s in split_parts] for j in range(count)]
    params = dict(estimator.get_params(), block_size=0, n_jobs=1)
    seeds = _seeds(params.get("random_state"), count)
    fits = [client.submit(_fit_pieces, type(estimator), params, k, seeds[j], standardizer, *pieces[j], pure=False)
            for j in range(count)]
    del split_parts, pieces
    say("blocks", 0, count)
    summaries = [None] * count
    summary_futures = [client.submit(_summary, f) for f in fits]
    index = {f.key: j for j, f in enumerate(summary_futures)}
    for done, (future, summary) in enumerate(as_completed(summary_futures, with_results=True, loop=client.loop), 1):
        summaries[index[future.key]] = summary
        say("blocks", done, count)
    offsets, offset = np.zeros(count, np.int64), 0
    for j, (kind, rule, *_) in enumerate(summaries):
        offsets[j] = offset
        nodes[[i for i, node in enumerate(nodes) if node.get("block") == j][0]] = {"kind": kind, "rule": rule,
                                                                                    "offset": offset}
        offset += rule_of(kind, rule).n_cells
    part_labels = [client.submit(_partition_labels, z, splits, leaves, offsets,
                                 *[client.submit(_piece_labels, f, p) for f in fits], pure=False)
                   for p, z in enumerate(zparts)]  # each partition receives only its rows' labels
    del fits

    centroids = np.concatenate([s[3] for s in summaries])
    estimator.k_, estimator.n_features_in_, estimator.standardizer_ = k, len(columns), standardizer
    estimator.feature_names_in_ = list(columns)
    for stale in ("strata_", "strata_merged_", "missing_merged_", "missing_patterns_", "partition_"):
        estimator.__dict__.pop(stale, None)
    estimator.block_size_, estimator.n_blocks_, estimator.block_sizes_ = B, count, block_sizes
    estimator.blocks_ = blocks_note(count, B, block_sizes)
    estimator.__dict__.update({a: combine([s[2][a] for s in summaries]) for a, combine in BLOCK_ATTRIBUTES.items()
                               if a in summaries[0][2]})
    estimator.centroids_ = centroids
    estimator.sizes_ = np.concatenate([s[4] for s in summaries])
    sse = summaries[0][5]
    for s in summaries[1:]:
        sse = sse + s[5]
    varying = int(np.sum(~is_constant(mean, unit * np.sqrt(square.values() / n))))
    estimator.information_loss_ = 100 * float(sse.values()[0]) / (n * varying) if varying else 0.0
    estimator.function_ = publish_function(
        "blocked", {"nodes": nodes}, standardizer=standardizer, centroids=centroids, sizes=estimator.sizes_,
        columns=columns,
        meta={"method": type(estimator).__name__, "k": k, "n_records": int(n), "weighted": False,
              "blocks": count, "block_size": B})
    if labels:
        estimator.labels_ = np.concatenate(client.gather(part_labels))
    else:
        estimator.__dict__.pop("labels_", None)
    if output is not None:  # the promise checked before any worker writes (issue 39.1)
        Promise(k, (tuple(columns),), f"{type(estimator).__name__} (k = {k})").check_sizes(estimator.sizes_, columns)
        seed = shuffle_stream(params.get("random_state")) if random_state_output is None else random_state_output
        _write_all(client, files, output, columns, part_labels, centroids, seed,
                   [c for c in every if c not in drop], keep_order, say)
    return estimator


def _write_all(client, files, output, columns, part_labels, centroids, seed, keep, keep_order, say):
    """Write the release (module docstring, step 4), all files or none."""
    if isinstance(seed, np.random.Generator):
        seed = int(seed.integers(2**63))
    seeds = np.random.SeedSequence(seed).spawn(len(files))

    def submit(tmp):
        [cents] = client.scatter([centroids], broadcast=True, hash=False)
        return [client.submit(_write, f, str(tmp / f"part-{p:05d}.parquet"), columns, labels, cents,
                              None if keep_order else seeds[p], keep, pure=False)
                for p, (f, labels) in enumerate(zip(files, part_labels))]

    from .cluster import write_folder

    write_folder(client, output, submit, len(files), say)


__all__ = ["audit_files", "fit_parquet", "parquet_files"]

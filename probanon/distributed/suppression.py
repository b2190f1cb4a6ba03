"""Local suppression of a directory of Parquet files on Dask (issue 43, "10^7 ... and on Dask
beyond"): the records stay on the workers, one Dask partition per file, from reading to writing.

The result is the one of :func:`probanon.categorical.local_suppression` (the fast method) on the
files' rows concatenated in file-name order, bit for bit: the same values suppressed for the same
``random_state``. The fast method never looks at a record, only at the distinct tuples of a block
of keys with their record counts (:func:`probanon.categorical.suppression.solve_block`), so:

1. The codes. Each worker reads its file's keys and strata; every key's values are numbered in
   order of first appearance over the files in order (``pd.factorize`` of the whole column), the
   strata by the rank of their values (:func:`probanon.frequencies.stratum_codes`). The client
   holds these dictionaries only.
2. Each block (all keys together, or each combination of m keys): every partition counts its
   distinct tuples (code, records, first row); the tables are merged in a tree on the workers
   (counts added, the first row the smallest) into the block's distinct tuples, which one worker
   puts in order of first appearance, as in one process, and solves with the block's greedy (the
   same tie order: the generator travels from block to block with the tasks, and the caller's
   ends where one process leaves it); the tuples that suppress keys go with their masks to every
   partition, which applies them to its records. The client waits for one flag per block.
3. The check, on what is about to be written: each partition's release (its file's published
   columns, the suppressed key values missing, its rows in a random order from its own seed) is
   built and kept on its worker; its keys and strata are coded again from the release itself, the
   per-tuple counts merged as in 2 and, under "a missing value matches any value", each tuple's
   count of matching records found on the merged table (:func:`probanon.frequencies.match_counts`
   weighted by the tuples' record counts); the promise (:func:`probanon.release.combination_promise`)
   is checked on these counts before any file is written. Then every worker writes its file into
   a temporary folder that becomes ``output`` only when every file is written.

The client holds the dictionaries (sent once to every worker) and, for the violations before and
after, one flag per record each; never a table or a record. The worker that solves a block holds
its merged table and the kernel's hash table (at most the block's distinct tuples: about 24 bytes
each, times the 2^m kept-key sets under "any"). The files must give each key one type (a column
int64 in one file and double in another is refused: one process would read the files as one
table, with one type per column).
The fall-back of the single machine (a record still below k loses every key value; under "a
missing value is a category" a class of fully suppressed records below k is completed with the
record whose classes have the most room) runs here step for step on the workers. Not here: the
exact method and the risk-threshold variant (weights).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._validation import check_k, check_random_state
from ..errors import InputError
from ..frequencies import KViolations, check_combinations, check_rule, key_sets, match_counts
from ..progress import quiet

# ---------------------------------------------------------------- tasks (on the workers)


class _Part:
    """One partition's records: key codes (n x m, -1 missing), stratum ids (or None), the values
    suppressed so far, and the row number of its first record among all the files."""

    def __init__(self, codes, stratum, suppressed, offset):
        self.codes, self.stratum, self.suppressed, self.offset = codes, stratum, suppressed, offset


def _values(path, columns):
    """(per column the distinct non-missing values in order of first appearance, rows, per column
    its type)."""
    import pandas as pd

    frame = pd.read_parquet(path, columns=list(columns))
    return [frame[c].dropna().unique() for c in columns], len(frame), [str(frame[c].dtype) for c in columns]


def _coded(frame, keys, strata, dictionaries, strata_radix):
    """(key codes n x m int32, the strata's values as one int64 per record (lexicographic order
    kept) or None)."""
    import pandas as pd

    wide = max((len(dictionaries[c]) for c in keys), default=0) >= 2 ** 31
    codes = np.empty((len(frame), len(keys)), dtype=np.int64 if wide else np.int32)
    for j, c in enumerate(keys):
        codes[:, j] = pd.Index(dictionaries[c]).get_indexer(frame[c])
    if not strata:
        return codes, None
    value = np.zeros(len(frame), dtype=np.int64)
    for c, radix in zip(strata, strata_radix):
        s = pd.Index(dictionaries[c]).get_indexer(frame[c]).astype(np.int64)
        value = value * radix + np.where(s < 0, radix - 1, s)  # missing: a stratum value of its own, last
    return codes, value


def _read_part(path, keys, strata, dictionaries, strata_radix, offset):
    import pandas as pd

    frame = pd.read_parquet(path, columns=list(dict.fromkeys([*keys, *strata])))
    codes, value = _coded(frame, keys, strata, dictionaries, strata_radix)
    return _Part(codes, value, np.zeros(codes.shape, dtype=bool), offset)


def _strata_values(part):
    return np.unique(part.stratum)


def _with_strata(part, levels):
    """The part with its strata numbered by rank among every file's (``levels``, sorted)."""
    return _Part(part.codes, np.searchsorted(levels, part.stratum).astype(np.int64), part.suppressed, part.offset)


def _stratum_sizes(part, count):
    return np.bincount(part.stratum, minlength=count)


def _table(part, block, radix, place, span):
    """The part's distinct tuples on ``block``, sorted by code: (codes, record counts, first row
    among all files)."""
    from .._frequency_kernel import distinct
    from ..categorical.suppression import tuple_codes

    code = tuple_codes(part.codes, list(block), part.stratum, radix, place, span)
    first, of = distinct(code)
    counts = np.bincount(of, minlength=first.size).astype(np.int64)
    order = np.argsort(code[first])
    return code[first][order], counts[order], first[order] + part.offset


def _merge(a, b):
    """Two tables sorted by code as one: counts added, the first row the smaller (a stable sort
    of two sorted runs: timsort merges them in linear time)."""
    code = np.concatenate([a[0], b[0]])
    if not code.size:
        return a
    order = np.argsort(code, kind="stable")
    code = code[order]
    starts = np.flatnonzero(np.concatenate([[True], code[1:] != code[:-1]]))
    counts = np.add.reduceat(np.concatenate([a[1], b[1]])[order], starts)
    first = np.minimum.reduceat(np.concatenate([a[2], b[2]])[order], starts)
    return code[starts], counts, first


def _suppress(part, block, radix, place, span, codes, masks):
    """The part with the masks of the tuples ``codes`` (sorted) applied to its records."""
    from ..categorical.suppression import mask_bits, tuple_codes

    if not codes.size:
        return part
    code = tuple_codes(part.codes, list(block), part.stratum, radix, place, span)
    at = np.minimum(np.searchsorted(codes, code), codes.size - 1)
    hit = codes[at] == code
    if not hit.any():
        return part
    bits = mask_bits(np.where(hit, masks[at], 0), len(block))
    new, suppressed = part.codes.copy(), part.suppressed.copy()
    for j, key in enumerate(block):
        suppressed[:, key] |= bits[:, j]
        new[bits[:, j], key] = -1
    return _Part(new, part.stratum, suppressed, part.offset)


def _violating(part, found):
    """Per record: in a tuple below k on some combination (``found``: [(block, layout, codes below
    k sorted)])."""
    from ..categorical.suppression import tuple_codes

    bad = np.zeros(part.codes.shape[0], dtype=bool)
    for block, lay, below in found:
        if below.size:
            bad |= np.isin(tuple_codes(part.codes, list(block), part.stratum, *lay), below)
    return bad


def _fresh(part, bad):
    """Records of ``bad`` with a key value left."""
    return int((bad & (part.codes >= 0).any(axis=1)).sum())


def _stratum_of(part, row):
    return None if part.stratum is None else int(part.stratum[row])


def _safest(part, stratum, specs, *tables):
    """(the largest count, over the records of ``stratum`` with a key value left, of their
    smallest count on the merged ``tables`` of ``specs`` ([(block, layout)])), its first row among
    all files), or None when the part has no such record."""
    from ..categorical.suppression import tuple_codes

    pool = (part.codes >= 0).any(axis=1)
    if stratum is not None:
        pool &= part.stratum == stratum
    if not pool.any():
        return None
    slack = np.full(part.codes.shape[0], np.iinfo(np.int64).max)
    for (block, lay), (codes, counts, _) in zip(specs, tables):
        code = tuple_codes(part.codes, list(block), part.stratum, *lay)
        slack = np.minimum(slack, counts[np.searchsorted(codes, code)])
    slack[~pool] = -1
    row = int(np.argmax(slack))
    return int(slack[row]), row + part.offset


def _suppress_row(part, row):
    """Every key of the record ``row`` (among all files) suppressed, when it is this part's."""
    local = row - part.offset
    if not 0 <= local < part.codes.shape[0]:
        return part
    bad = np.zeros(part.codes.shape[0], dtype=bool)
    bad[local] = True
    return _suppress_rows(part, bad)


def _suppressed_per_key(part):
    return part.suppressed.sum(axis=0)


def _suppress_rows(part, bad):
    """Every key of the records ``bad`` suppressed (the fall-back of the fast method)."""
    codes, suppressed = part.codes.copy(), part.suppressed.copy()
    suppressed[bad] |= codes[bad] >= 0
    codes[bad] = -1
    return _Part(codes, part.stratum, suppressed, part.offset)


def _release(path, keep, keys, part, seed):
    """One file's release: its columns ``keep``, the suppressed key values missing
    (:func:`probanon.categorical.suppression.suppressed_frame`: by position), the rows in the order
    of a permutation drawn from ``seed`` (None: file order)."""
    import pandas as pd

    from ..categorical.suppression import suppressed_frame

    frame = suppressed_frame(pd.read_parquet(path, columns=list(keep)), keys, part.suppressed)
    if seed is not None:
        frame = frame.iloc[np.random.default_rng(seed).permutation(len(frame))]
    return frame.reset_index(drop=True)


def _recoded(frame, keys, strata, dictionaries, strata_radix, levels):
    """A release's keys and strata coded again from its values (for the check)."""
    codes, value = _coded(frame, keys, strata, dictionaries, strata_radix)
    part = _Part(codes, value, None, 0)
    return part if value is None else _with_strata(part, levels)


def _write(frame, target):
    frame.to_parquet(target, index=False)
    return len(frame)


# ---------------------------------------------------------------- on the client


def _solve(table, lay, weights, k, category, cleanup, rng):
    """One block's greedy on its merged table (:func:`probanon.categorical.suppression.solve_block`,
    the tuples in order of first appearance): (codes of the tuples that suppress keys, sorted;
    their masks; the generator after its draw; whether the block had an unsafe tuple)."""
    import copy

    from ..categorical.suppression import solve_block

    rng = copy.deepcopy(rng)  # the input stays as it was (a task run again draws the same)
    code, counts, first = table
    order = np.argsort(first, kind="stable")
    code_t, counts_t = code[order], counts[order]
    added = solve_block(code_t, counts_t, np.zeros(code_t.size), *lay, weights, k, None, category, cleanup, rng)
    if added is None:
        return code[:0], code[:0], rng, False
    changed = added != 0
    sort = np.argsort(code_t[changed], kind="stable")
    return code_t[changed][sort], added[changed][sort], rng, True


def _count(table, lay, missing, k):
    """The counts of one combination on its merged table: ({records below k, classes below k,
    smallest count of matching records, sizes of the classes below k}, codes below k sorted).
    Under "any" a tuple's count is its matching records: :func:`probanon.frequencies.match_counts`
    on the distinct tuples weighted by their records."""
    radix, place, span = lay
    code, counts, _ = table
    matched = counts
    strata = code // span
    digits = ((code - strata * span)[:, None] // place) % radix
    if missing == "any" and (digits == radix - 1).any():
        _, matched = match_counts(np.where(digits == radix - 1, -1, digits), missing="any", strata=strata,
                                  weights=counts)
        matched = np.rint(matched).astype(np.int64)
    short = matched < k
    summary = {"records": int(counts[short].sum()), "classes": int(short.sum()),
               "smallest": int(matched.min()) if matched.size else k, "sizes": counts[short]}
    return summary, code[short]  # sorted: the table is


def _item(pair, i):
    return pair[i]


class _OnWorkers:
    """The partitions for :func:`probanon.categorical.suppression.greedy`: each block's tables
    merged on the workers, solved on a worker (the generator travels from block to block with
    the tasks), the masks applied by every partition; the client waits for one flag per block."""

    def __init__(self, client, parts):
        self.client, self.parts = client, parts
        self.rng = None

    def submit(self, function, *args):
        return self.client.submit(function, *args, pure=False)

    def merged(self, block, lay):
        """A future of the block's distinct tuples over every partition: (codes, counts, first
        rows), by code (partition tables merged in a tree)."""
        tables = [self.submit(_table, p, tuple(block), *lay) for p in self.parts]
        while len(tables) > 1:
            tables = [self.submit(_merge, tables[i], tables[i + 1]) if i + 1 < len(tables) else tables[i]
                      for i in range(0, len(tables), 2)]
        return tables[0]

    def step(self, block, lay, weights, k, threshold, category, cleanup, rng) -> bool:
        if self.rng is None:
            self.rng = rng
        out = self.submit(_solve, self.merged(block, lay), lay, weights, k, category, cleanup, self.rng)
        self.rng = self.submit(_item, out, 2)
        codes, masks = self.submit(_item, out, 0), self.submit(_item, out, 1)
        self.parts = [self.submit(_suppress, p, tuple(block), *lay, codes, masks) for p in self.parts]
        return bool(self.submit(_item, out, 3).result())

    def each(self, function, *args) -> list:
        return self.client.gather([self.submit(function, p, *args) for p in self.parts])


def violations_on_workers(records, names, cards, n_strata, k, combinations, missing, n, promise=None):
    """:func:`probanon.frequencies.violations_of_codes` of the partitions of ``records``
    (:class:`_OnWorkers`), every combination counted on its merged table on a worker (all
    submitted at once; the client receives the figures); with ``promise``
    (:class:`probanon.release.Promise` of these keys): :class:`GuaranteeError` unless it holds."""
    from ..categorical.suppression import layout

    sets = key_sets(len(names), combinations)
    largest = max(len(s) for s in sets)

    def counted(group):
        lays = [layout(cards, list(s), n_strata) for s in group]
        pairs = [records.submit(_count, records.merged(s, lay), lay, missing, k) for s, lay in zip(group, lays)]
        summaries = records.client.gather([records.submit(_item, pair, 0) for pair in pairs])
        return lays, pairs, summaries

    top = [s for s in sets if len(s) == largest]
    lays, pairs, summaries = counted(top)
    found = dict(zip(top, summaries))
    if promise is not None:
        for s, summary in zip(top, summaries):
            columns = tuple(names[i] for i in s) + tuple(promise.strata)
            if missing == "any":
                promise.check_matched(columns, summary["smallest"], summary["records"])
            else:
                promise.check_sizes(summary["sizes"], columns)
    rest = [s for s in sets if len(s) < largest]
    if rest and any(x["records"] for x in summaries):  # else no smaller one has a violation (monotone counts)
        found.update(zip(rest, counted(rest)[2]))
    bad = [(tuple(s), lay, records.submit(_item, pair, 1)) for s, lay, pair, x in zip(top, lays, pairs, summaries)
           if x["records"]]
    violating = (np.concatenate(records.client.gather([records.submit(_violating, p, bad) for p in records.parts]))
                 if bad else np.zeros(n, dtype=bool))
    empty = {"records": 0, "classes": 0}
    return KViolations(k=k, missing=missing, combinations=tuple(tuple(names[i] for i in s) for s in sets),
                       records=tuple(found.get(s, empty)["records"] for s in sets),
                       classes=tuple(found.get(s, empty)["classes"] for s in sets),
                       total=int(violating.sum()), n=n, violating=violating)


def _fall_back(client, records, rows, after, report):
    """:func:`probanon.categorical.suppression._fall_back` on the workers, step for step: every
    key of the records still below k; under "category", a class of fully suppressed records
    below k completed with the record of its stratum whose smallest count is largest."""
    from ..categorical.suppression import layout

    cuts = np.cumsum(rows)[:-1]
    for _ in range(report["n"] + 1):
        if not after.total:
            return after
        flags = np.split(after.violating, cuts)
        fresh = sum(client.gather([client.submit(_fresh, p, b, pure=False) for p, b in zip(records.parts, flags)]))
        if fresh:
            records.parts = [client.submit(_suppress_rows, p, b, pure=False) for p, b in zip(records.parts, flags)]
        elif report["missing"] == "any":
            break
        else:
            first = int(np.flatnonzero(after.violating)[0])
            p = int(np.searchsorted(cuts, first, side="right"))
            stratum = client.submit(_stratum_of, records.parts[p], first - int(np.r_[0, cuts][p]), pure=False).result()
            specs, tables = [], []
            for s in key_sets(len(report["names"]), report["combinations"]):
                lay = layout(report["cards"], list(s), report["n_strata"])
                specs.append((tuple(s), lay))
                tables.append(records.merged(list(s), lay))
            best = [b for b in records.each(_safest, stratum, specs, *tables) if b is not None]
            if not best:
                break
            top = max(b[0] for b in best)
            row = min(r for value, r in best if value == top)  # the first of the largest, as np.argmax
            records.parts = [client.submit(_suppress_row, p, row, pure=False) for p in records.parts]
        after = violations_on_workers(records, **report)
    raise InputError("the condition cannot be reached even with every key value suppressed "
                     "(a stratum with fewer than k records?)")


def _dictionaries(client, files, columns):
    """Per column its distinct values in order of first appearance over the files in order; the
    rows of each file."""
    import pandas as pd

    found = client.gather([client.submit(_values, f, list(columns), pure=False) for f in files])
    out = {}
    for j, c in enumerate(columns):
        # one type per column: one process reads the files as one table, whose column has one type
        # (int64 and float64 files would be float64 there, merging integers above 2^53)
        types = {t[j] for (v, rows, t) in found if rows}
        if len(types) > 1:
            where = [(f, t[j]) for f, (_, rows, t) in zip(files, found) if rows]
            first = next(x for x in where if x[1] != where[0][1])
            raise InputError(f"column {c!r} is {where[0][1]} in {where[0][0]} but {first[1]} in {first[0]}: give "
                             "the files one type per column")
        values = [v[j] for v, _, _ in found if len(v[j])]
        out[c] = pd.Series(np.concatenate([np.asarray(v, dtype=object) for v in values]) if values else [],
                           dtype=object).drop_duplicates().to_numpy() if values else np.zeros(0, dtype=object)
    return out, [rows for _, rows, _ in found]


def suppress_parquet(client, source, keys, k: int = 3, *, combinations: int | None = None, importance=None,
                     strata=None, missing: str = "any", random_state=None, output=None, keep=None,
                     keep_order: bool = False, random_state_output=None, progress=None):
    """Local suppression (the fast method) of the Parquet files of ``source`` (a directory, its
    ``*.parquet`` in name order, or a list of files) on the cluster of ``client`` (module
    docstring): the values :func:`probanon.categorical.local_suppression` suppresses in the files'
    rows concatenated, for the same ``keys``, ``k``, ``combinations``, ``importance``, ``strata``,
    ``missing`` and ``random_state``.

    With ``output`` (a new directory ``NAME.parquet``): the release is written there, one file per
    input file (its columns ``keep``, default all; the keys' suppressed values missing; rows in a
    random order within the file from ``random_state_output`` unless ``keep_order``), after the
    promise (:func:`probanon.categorical.suppression.suppression_promise`: k on every combination
    with the rule, within the strata) is checked on what is about to be written (:class:`GuaranteeError` and nothing
    written otherwise). Returns a :class:`probanon.categorical.SuppressionResult` whose ``data``
    and ``suppressed`` are None (the records stay on the workers)."""
    from ..categorical.suppression import SuppressionResult, greedy, suppression_promise, weights_for
    from ..release import shuffle_stream
    from .partitioned import parquet_files, parquet_schema

    keys = [keys] if isinstance(keys, str) else list(keys)
    strata = [strata] if isinstance(strata, str) else list(strata or [])
    files = parquet_files(source)
    columns, rows = parquet_schema(client, files)
    absent = [c for c in keys + strata if c not in columns]
    if not keys or absent:
        raise InputError(f"column {absent[0]!r} is not in the files" if absent else "no key column")
    if len(set(keys)) != len(keys) or set(keys) & set(strata):
        raise InputError("a key is named twice (or is also a stratum)")
    n = sum(rows)
    if n == 0:
        raise InputError("the files have no records")
    k = check_k(k, n)
    check_rule(missing)
    combinations = check_combinations(combinations, len(keys))
    keep = list(columns) if keep is None else list(keep)
    rng = None if random_state is None else check_random_state(random_state)
    if output is not None:
        unknown = [c for c in keep if c not in columns]
        if unknown:
            raise InputError(f"column {unknown[0]!r} to keep is not in the files")
        if [c for c in keys + strata if c not in keep]:
            raise InputError("the keys and strata are released: keep them")
        if Path(output).exists():
            raise InputError(f"{output}: exists (a release is never written over an existing path)")
        if random_state_output is None and not keep_order and not isinstance(random_state, np.random.Generator):
            random_state_output = shuffle_stream(random_state)  # an int seed checked before any work
    progress = quiet if progress is None else progress

    progress("read", 0, len(files))
    dictionaries, _ = _dictionaries(client, files, keys + strata)
    cards = [len(dictionaries[c]) for c in keys]
    cost = weights_for(keys, importance, cards)
    strata_radix = [len(dictionaries[c]) + 1 for c in strata]
    if strata and float(np.prod(np.asarray(strata_radix, dtype=float))) >= 2.0 ** 62:
        raise InputError("too many strata values to number (recode or combine the strata columns)")
    offsets = np.concatenate([[0], np.cumsum(rows)[:-1]]).astype(np.int64)
    [dictionaries_f] = client.scatter([dictionaries], broadcast=True, hash=False)  # sent to each worker once
    records = _OnWorkers(client, [client.submit(_read_part, f, keys, strata, dictionaries_f, strata_radix, int(o),
                                                pure=False) for f, o in zip(files, offsets)])
    levels, n_strata = None, 1
    if strata:
        levels = np.unique(np.concatenate(records.each(_strata_values)))
        [levels_f] = client.scatter([levels], broadcast=True, hash=False)
        records.parts = [client.submit(_with_strata, p, levels_f, pure=False) for p in records.parts]
        n_strata = int(levels.size)
        sizes = np.sum(records.each(_stratum_sizes, n_strata), axis=0)
        if (sizes < k).any():
            raise InputError(f"a stratum holds fewer than k = {k} records: k-anonymity cannot be reached in it")
    progress("read", len(files), len(files))

    report = dict(names=keys, cards=cards, n_strata=n_strata, k=k, combinations=combinations, missing=missing, n=n)
    before = violations_on_workers(records, **report)
    greedy(records, cards, cost, k, combinations, missing == "category", n_strata, None, rng, progress)
    if rng is not None and records.rng is not None and records.rng is not rng:
        # the caller's generator ends where one process leaves it (the draws were made on the workers)
        rng.bit_generator.state = records.rng.result().bit_generator.state
    after = violations_on_workers(records, **report)
    if after.total:
        after = _fall_back(client, records, rows, after, report)
    per_key = np.sum(records.each(_suppressed_per_key), axis=0).astype(np.int64)
    if output is not None:
        promise = suppression_promise(k, keys, strata, combinations, missing)
        seeds = [None] * len(files)
        if not keep_order:
            seed = rng if random_state_output is None else random_state_output  # a Generator: drawn after the greedy
            if isinstance(seed, np.random.Generator):
                seed = int(seed.integers(2 ** 63))
            seeds = np.random.SeedSequence(seed).spawn(len(files))
        frames = [client.submit(_release, f, keep, keys, p, seeds[i], pure=False)
                  for i, (f, p) in enumerate(zip(files, records.parts))]
        if strata:
            [levels_f] = client.scatter([levels], broadcast=True, hash=False)
        checked = _OnWorkers(client, [client.submit(_recoded, fr, keys, strata, dictionaries_f, strata_radix,
                                                    levels_f if strata else None, pure=False) for fr in frames])
        progress("check", 0, 1)
        violations_on_workers(checked, **report, promise=promise)  # raises before anything is written
        progress("check", 1, 1)
        _write_all(client, frames, output, progress)
    return SuppressionResult(data=None, suppressed=None, n_suppressed=dict(zip(keys, map(int, per_key))),
                             total=int(per_key.sum()), violations_before=before, violations_after=after, k=k,
                             combinations=combinations, missing=missing, method="fast", optimal=None,
                             lower_bound=None, cost=float(per_key @ cost),
                             weights_per_key=dict(zip(keys, map(float, cost))))


def _write_all(client, frames, output, progress):
    """Every release file into a temporary folder that becomes ``output`` when all are written."""
    from .cluster import write_folder

    write_folder(client, output, lambda tmp: [client.submit(_write, fr, str(tmp / f"part-{p:05d}.parquet"), pure=False)
                                              for p, fr in enumerate(frames)], len(frames), progress)


__all__ = ["suppress_parquet", "violations_on_workers"]

"""``probanon apply``: a published function applied to a file, in memory or in chunks (also
``survey assign``), the release written after its promise is checked."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from .options import (PER_RECORD, say_unaudited, add_chunk_options, add_decimals_option, add_household_option, add_input,
                      add_output, add_release_options, check_categorical_keys, example, function_promise,
                      households_kept, pre_release_audit, release_roles, rounded, seed, write_release)
from .parser import command
from .._validation import is_numeric_column
from ..data import quasi_identifiers, read_chunks
from ..errors import InputError
from .progress import Progress
from ..microagg import function_from_json
from ..microagg.strata import recode_merged
from ..release import column_list, columns_with, make_release, shuffle_stream


def cmd_apply(args) -> int:
    function = function_from_json(args.function)
    keys = column_list(args.keys)
    if function.columns and keys and keys != list(function.columns):
        raise InputError(f"--keys {','.join(keys)} differ from the function's columns {','.join(function.columns)}")

    # categorical keys: read as they are, the function embeds them
    categorical = function.encoding.categorical() if function.encoding is not None else ()
    strata = None
    if function.kind == "stratified":
        if function.rule.columns is None:
            raise InputError("the function's strata have no column names (fitted on an array): assign through the "
                             "API with strata=")
        strata = function.rule.columns  # the strata columns: read, and released unchanged

    columns = list(function.columns or keys)
    numeric = [j for j, c in enumerate(columns) if c not in categorical]
    digits = _function_decimals(args, function, [columns[j] for j in numeric])

    def centroids(X, frame):
        if function.kind == "stratified":  # merged strata recoded as in the fit's release
            strata = frame[function.rule.columns]
            labels = function.assign(X, strata=strata)
            recoded = recode_merged([s["values"] for s in function.rule.strata], strata)
            return np.asarray(function.centroids, dtype=object if function.encoding else None)[labels], \
                {"cell": labels}, recoded
        labels = function.assign(X)
        if labels.ndim == 1:
            return np.asarray(function.centroids)[labels], {"cell": labels}, {}
        return np.column_stack([function.centroids[j][labels[:, j]] for j in range(labels.shape[1])]), None, {}

    def cells(X, frame):  # the numeric keys rounded as the fit's release was
        values, added, recoded = centroids(X, frame)
        if numeric:
            values = values.copy()
            values[:, numeric] = rounded(values[:, numeric].astype(np.float64), digits)
        return values, added, recoded

    return apply_to_file(args, args.input, columns, cells, categorical=categorical, strata=strata,
                         means={columns[j]: d for j, d in zip(numeric, digits)},
                         promise=lambda roles: function_promise(function, columns, roles, strata))


def _function_decimals(args, function, numeric) -> list:
    """The decimals ``apply`` rounds each numeric key to: ``--decimals``, else those the fit
    recorded in the function's ``meta`` (a function without them: not rounded)."""
    from ..errors import SpecificationError
    from ..precision import MAX_DECIMALS

    if args.decimals is not None:
        return [args.decimals] * len(numeric)
    recorded = function.meta.get("decimals") or {}
    ok = isinstance(recorded, dict) and all(d is None or (type(d) is int and 0 <= d <= MAX_DECIMALS)
                                            for d in recorded.values())
    if not ok:
        raise SpecificationError(f"function: 'meta.decimals' must map key columns to 0..{MAX_DECIMALS} decimals")
    return [recorded.get(c) for c in numeric]



def _key_values(frame, keys, categorical):
    """The keys of ``frame`` for a published function: the checked numeric matrix, or, for a
    function with ``categorical`` keys, the key columns themselves (its encoding checks them)."""
    if categorical:
        absent = [c for c in keys if c not in frame.columns]
        if absent:
            raise InputError(f"the table has no key column {absent[0]!r}")
        numeric = [c for c in keys if c not in categorical]
        if numeric:
            quasi_identifiers(frame, numeric)  # checked, messages naming the file's line
        return frame[list(keys)], list(keys)
    return quasi_identifiers(frame, list(keys))


def apply_to_file(args, source, keys, cells, categorical=(), strata=None, promise=None,
                  means: dict | None = None) -> int:
    """Release the file ``source`` with its ``keys`` replaced through ``cells`` (a published
    function: (X, the records' table) -> (the keys' new values, added columns or None,
    {column: values} of other columns it recodes, e.g. merged strata)); ``categorical``: the keys
    read as categories; ``strata``: the strata columns (released unchanged; default ``--strata``).
    The release's options (roles, order, link, output) are the command's ``args``. ``promise``: None, or
    roles -> the :class:`probanon.release.Promise` checked before anything is written;
    ``means``: {key: decimals} of the keys it replaces by group means, see
    :func:`probanon.release.make_release`. A file of at most ``args.chunk_size`` records is read
    at once; a larger one chunk by chunk
    (:func:`apply_in_chunks`), with the same release."""
    chunks = read_chunks(source, args.chunk_size)
    frame = next(chunks)
    household = getattr(args, "household", None)
    if next(chunks, None) is not None:
        chunks.close()
        if household is not None:
            raise InputError(f"--household: {source} is applied in chunks, and a household may span two of them; give "
                             "a --chunk-size of at least its number of records")
        return apply_in_chunks(args, source, keys, cells, categorical, strata, promise, means)
    roles = release_roles(args, frame, keys=keys, strata=strata)
    X, columns = _key_values(frame, keys, categorical)  # in the function's order
    if household is not None:  # the keys household-level: every member in their household's cell
        from ..households import by_household

        by_household(frame[list(columns)], frame[household], strata=None if strata is None else frame[list(strata)])
    values, added, recoded = cells(X, frame)
    replaced = {**dict(zip(columns, values.T)), **recoded}
    check_categorical_keys(args, frame, frame.assign(**{c: replaced[c] for c in (*categorical, *recoded)}), roles,
                           categorical)
    release = make_release(frame, roles, replaced=replaced, added=added,
                           actions=APPLY_ACTIONS, keep_order=args.keep_order, random_state=shuffle_stream(args.seed),
                           promise=households_kept(None if promise is None else promise(roles), household, roles,
                                                   frame.assign(**replaced, **(added or {})),
                                                   accept_risk=getattr(args, "accept_risk", False)), means=means)
    write_release(args, release, original=frame)
    return 0


#: the pre-release audit of a file read in chunks runs on at least this many records
AUDIT_SAMPLE = 100_000
APPLY_ACTIONS = {"key": "key: replaced by its cell's centroid", "cell": "added: the cell index"}


def apply_in_chunks(args, source, keys, cells, categorical=(), strata=None, promise=None,
                    means: dict | None = None) -> int:
    """:func:`apply_to_file` of a file larger than one chunk, in three passes over the file:
    (1) the number of records and the column types of the whole file (numeric keys with text
    refused); (2) each chunk, read with those types (every column, keys included: a categorical
    key is text in every chunk as in the whole file), checked as the whole file is (its line or
    row in the file named), its keys replaced and its records placed at their released positions
    (the same permutation as at once: :class:`probanon.outputs.OrderedTableWriter`); (3) the
    release written in order. The pre-release audit (:func:`probanon.cli.options.pre_release_audit`:
    the keys against the numeric columns released per record, strata and weights included, as on
    the whole file) runs on a systematic sample of max(``chunk_size``, :data:`AUDIT_SAMPLE`)
    records (evenly spaced in the file); the promise (as in :func:`apply_to_file`) is checked on
    the counts of the released combinations over all chunks before the file is written. Memory:
    a chunk, the sample, the counts and O(n) integers (the record order)."""
    from ..data import NumericColumns, in_file, table_dtypes
    from ..outputs import OrderedTableWriter, TableWriter
    from ..outputs import table_format
    from ..precision import integer_columns, whole_numbers
    from ..release import record_order

    size = args.chunk_size
    note = f"apply: {source}, chunks of {size:,} records"
    with Progress(note, quiet=args.quiet, desc="apply", unit="record") as progress:
        types, n, roles, numbers = [], 0, None, []
        for chunk in read_chunks(source, size):
            if roles is None:
                roles = release_roles(args, chunk.iloc[:0], keys=keys, audit=False, strata=strata)
                numeric_keys = NumericColumns([c for c in keys if c not in categorical])
            numeric_keys.add(chunk)
            types.append(chunk.dtypes.to_dict())
            numbers.append(whole_numbers(chunk))  # integer columns with empty cells, over the whole file
            n += len(chunk)
            progress("reading", n, None)
        numeric_keys.check()
        key_columns = columns_with(roles, "key")
        released = [c for c, role in roles.items() if role in PER_RECORD]  # as the whole file's audit reads them
        dtypes = table_dtypes(types)  # every chunk read as the whole file is: a categorical key as text throughout
        # the audit reads every column released per record, whatever its type (issue 42.3)
        audited_columns = key_columns + [c for c in released if c not in key_columns]
        link = record_order(n, keep_order=args.keep_order, random_state=shuffle_stream(args.seed))[1]
        position = link["released_row"].to_numpy() - 1
        link = link if args.link else None
        sampled = np.unique(np.linspace(0, n - 1, min(n, max(size, AUDIT_SAMPLE))).astype(np.int64))
        sample, done, counts = [], 0, None
        promised = None if promise is None else promise(roles)
        categorical = list(categorical)
        per_record = [c for c, role in roles.items() if role in PER_RECORD] if categorical else []
        pairs = []  # sampled (original, released) keys and columns released per record: categorical keys checked
        writer = TableWriter(args.output, n) if args.keep_order else OrderedTableWriter(args.output, n, size)
        with writer as table:
            integers = integer_columns(None, numbers) if table_format(source) == "csv" else []  # as read_table
            for chunk in read_chunks(source, size, dtypes=dtypes):
                first, done = done, done + len(chunk)
                chunk.attrs["integer_columns"] = integers
                numeric = [c for c in chunk.columns if is_numeric_column(chunk[c])]
                audited = [[c for c in key_columns if c in numeric], [c for c in released if c in numeric]]
                with in_file(chunk):  # the checks of the audit (numeric columns; confidential ones may lack values)
                    for group, lacking in zip(audited, (False, True)) if all(audited) else ():
                        quasi_identifiers(chunk, group, missing=lacking)
                    X, columns = _key_values(chunk, keys, categorical)
                values, added, recoded = cells(X, chunk)
                part = make_release(chunk, roles, replaced={**dict(zip(columns, values.T)), **recoded}, added=added,
                                    actions=APPLY_ACTIONS, keep_order=True, means=means)
                table.place(part.data, position[first:done])
                if promised is not None:
                    counts = promised.add(counts, promised.counts(part.data))
                inside = sampled[(sampled >= first) & (sampled < done)] - first
                sample.append(chunk[audited_columns].iloc[inside])
                if per_record:
                    pairs.append([t[categorical + per_record].iloc[inside] for t in (chunk, part.data)])
                progress("applying", done, n)
            sample = pd.concat(sample, ignore_index=True)
            sample.attrs.clear()
            # the audit: refuses, or warns (--accept-risk)
            pre_release_audit(args, sample, {c: roles[c] for c in audited_columns})
            del sample
            if pairs:
                check_categorical_keys(args, *(pd.concat(t, ignore_index=True) for t in zip(*pairs)), roles,
                                       categorical, where=f"a systematic sample of {len(sampled):,} records")
            if promised is not None:
                promised.check_counts(counts)
            table.progress = progress
            args.outputs.write({args.output: table, **({args.link: link} if args.link else {})})
    order_text = "input order kept" if args.keep_order else "records in random order"
    print(f"wrote {args.output} ({n} records in {-(-n // size)} chunks, {order_text}"
          + (f"; private link file {args.link}: never publish it" if args.link else "")
          + f"; pre-release audit on a systematic sample of {len(sampled):,} records); columns:\n"
          + part.summary(), file=sys.stderr)
    if any(role == "confidential" for role in roles.values()):
        print("attribute disclosure of the confidential columns: not measured on a release written in chunks ('probanon "
              "evaluate ORIGINAL RELEASE --risk --confidential ...' measures it on the whole file)", file=sys.stderr)
    say_unaudited(args)
    return 0



def add_parser(sub) -> None:
    a = command(sub, "apply", epilog=example(
        "# census_k5.json: written by 'probanon microaggregate ... --function census_k5.json'",
        "probanon apply census_k5.json census.csv -o applied.csv \\",
        "    --confidential PTOTVAL,TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL"))
    add_input(a, "function", metavar="FUNC.json", table=False,
              help="the published function (microaggregate --function, or a survey specification's)")
    add_input(a, "input", help="the records whose keys the function replaces (CSV, Parquet, SPSS, Stata)")
    add_output(a, "-o", "--output", required=True, table=True, help="the release (format by its ending)")
    add_release_options(a, keys_help="quasi-identifier columns, if the function does not name them", prepare=False)
    a.add_argument("--seed", type=seed, default=None, help="seed of the record order (default: fresh entropy)")
    add_decimals_option(a, "as the function's fit rounded them, which the function records")
    add_household_option(a, "the keys are household-level variables (each constant within every household, else "
                            "refused), so every member falls in their household's cell, and every cell must hold at "
                            "least k households, checked before anything is written (one chunk only)")
    add_chunk_options(a)
    a.set_defaults(func=cmd_apply)


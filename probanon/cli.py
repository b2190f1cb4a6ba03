"""The ``probanon`` command.

Every error on bad input is one line on stderr (``probanon: error: ...``) with exit status 2,
and no output file is left behind (outputs are written only after all work succeeded, each
atomically).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .cliargs import (
    PER_RECORD,
    Parser,
    add_input,
    add_match_options,
    add_output,
    add_decimals_option,
    add_release_options,
    add_strata_options,
    check_categorical_keys,
    ordinal_keys,
    positive_int,
    prepare_outputs,
    pre_release_audit,
    release_roles,
    example,
    seed,
    summary_lines,
    write_release,
)
from ._validation import is_numeric_column, weights_of
from .data import (MISSING_HINT, csv_options, input_decimals, quasi_identifiers, read_chunks, read_table,
                   synthetic_survey)
from .attacks import cli as attacks_cli
from .datasets import cli as datasets_cli
from .diversity import cli as diversity_cli
from .setvalued import cli as km_cli
from .errors import InputError, ProbanonError
from .metrics import format_information_loss, information_loss, k_achieved, utility_report
from .metrics.frequency import VIOLATION_KS, frequency_risk, main_risk_level
from .outputs import check_output_folder, write_outputs
from .progress import Progress, announce_compilation
from .microagg import METHODS, function_from_json
from .microagg.strata import recode_merged
from .release import Promise, align, assign_roles, column_list, columns_with, make_release, shuffle_stream
from .reproduce import cli as reproduce_cli
from .service import cli as service_cli
from .survey import cli as survey_cli
from .swapping import cli as swapping_cli


def _method(args):
    """The estimator ``--method`` names, with its options; it returns arrays (the command
    builds the release itself)."""
    return _estimator(args).set_output(transform="default")


def _estimator(args):
    cls = METHODS[args.method]
    blocks = {"block_size": args.block_size}
    if args.method == "mdav":
        return cls(args.k, keep_duplicates=not args.split_duplicates, **blocks)
    if args.split_duplicates:
        raise InputError(f"--split-duplicates applies to mdav, not {args.method} (its groups never split identical "
                         "key tuples)")
    if args.method == "vmdav":
        return cls(args.k, gamma=args.gamma, **blocks)
    if args.method == "pcl":
        return cls(args.k, init=args.init, random_state=args.seed, **blocks)
    if args.block_size is not None:
        raise InputError(f"--block-size applies to mdav, vmdav and pcl, not {args.method}")
    return cls(args.k)


@contextlib.contextmanager
def _blocks_on_cluster(args, model):
    """``--scheduler``/``--workers``: the blocks of a blocked fit as tasks on a Dask cluster
    (:mod:`probanon.distributed`); nothing else changes, the result included."""
    from .distributed.cluster import cluster_from_args

    if (args.scheduler is not None or args.workers is not None) and "block_size" not in model._param_names:
        raise InputError(f"--scheduler/--workers run the blocks of mdav, vmdav and pcl, not {args.method}")
    with cluster_from_args(args) as client:
        if client is None:
            yield
            return
        from .distributed.blocks import on_dask

        with on_dask(client):
            yield


METHOD_NAMES = {"mdav": "MDAV", "vmdav": "V-MDAV", "ranking": "individual ranking", "pcl": "PCL"}


def _microaggregate_folder(args) -> int:
    """``microaggregate`` of a directory of Parquet files: on Dask, the files read and the
    release written by the workers, one ``-o`` file per input file (``-o`` names the new
    directory); :func:`probanon.distributed.partitioned.fit_parquet`."""
    from .distributed.cluster import cluster_from_args
    from .cliargs import audit_verdict
    from .distributed.partitioned import audit_files, fit_parquet, parquet_files, parquet_schema
    from .outputs import table_format

    if args.scheduler is None and args.workers is None:
        raise InputError(f"{args.input}: a directory of Parquet files is read by Dask workers: give --workers N "
                         "(a local cluster) or --scheduler ADDRESS")
    unsupported = [name for name, given in (("--nominal", args.nominal), ("--ordinal", args.ordinal),
                                            ("--missing pattern", args.missing == "pattern"),
                                            ("--weights", args.weights), ("--strata", args.strata),
                                            ("--link", args.link)) if given]
    if unsupported:
        raise InputError(f"{args.input}: {unsupported[0]} is not available for a directory of Parquet files")
    if table_format(args.output, "output") != "parquet":
        raise InputError(f"{args.output}: a directory of Parquet files is released as one: name it NAME.parquet")
    files = parquet_files(args.input)
    model = _method(args)
    if "block_size" not in model._param_names:
        raise InputError(f"a directory of Parquet files is microaggregated in blocks by mdav, vmdav or pcl, "
                         f"not {args.method}")
    name = METHOD_NAMES[args.method]
    with cluster_from_args(args) as client:
        roles = assign_roles(parquet_schema(client, files)[0], args.keys, args.confidential, args.drop,
                             args.keep_other)
        keys, drop = columns_with(roles, "key"), columns_with(roles, "drop")
        published = [c for c, role in roles.items() if role in ("confidential", "other")]
        for where, result in audit_files(client, files, keys, published) if published else []:
            audit_verdict(args, result, where)
        with Progress(f"{name}: {len(files)} Parquet files, {len(keys)} keys, k = {args.k}", quiet=args.quiet,
                      desc=args.method) as progress:
            fitted = fit_parquet(client, model, files, keys=keys, output=args.output, labels=False, drop=drop,
                                 keep_order=args.keep_order, random_state_output=shuffle_stream(args.seed),
                                 progress=progress)
    if args.function:
        args.outputs.write({args.function: fitted.function_.to_json(indent=1)})
    n = int(fitted.sizes_.sum())
    print(f"wrote {args.output} ({len(files)} Parquet files, {n} records, "
          f"{'input order kept' if args.keep_order else 'records in random order within each file'})", file=sys.stderr)
    print(f"{args.method}: {n} records, {len(keys)} quasi-identifiers, k = {fitted.k_}, smallest group "
          f"{int(fitted.sizes_.min())}, information loss = {format_information_loss(fitted.information_loss_)}, "
          f"{fitted.blocks_}",
          file=sys.stderr)
    return 0


def cmd_microaggregate(args) -> int:
    if Path(args.input).is_dir():
        return _microaggregate_folder(args)
    frame = read_table(args.input)
    nominal, ordinal = column_list(args.nominal), ordinal_keys(args.ordinal)
    categorical = nominal + list(ordinal)
    roles = release_roles(args, frame, keys=column_list(args.keys) + categorical if categorical else None)
    keys = columns_with(roles, "key")
    numeric = [c for c in keys if c not in categorical]
    pattern = args.missing == "pattern"
    X, columns = quasi_identifiers(frame, numeric, pattern, MISSING_HINT) if numeric else \
        (np.empty((len(frame), 0)), [])
    lacking = bool(np.isnan(X).any()) or (pattern and bool(frame[categorical].isna().to_numpy().any()))
    if lacking and args.function:
        raise InputError("--function: a fit with missing key values (--missing pattern) publishes no function")
    weights = weights_of(frame, args.weights, f"{args.input}: ")
    digits = _released_decimals(args, frame, numeric)
    model = _method(args)
    name = METHOD_NAMES[args.method]
    note = f"{name}: {len(frame):,} records, {len(keys)} keys, k = {args.k}"
    strata = None if args.strata is None else frame[column_list(args.strata)]
    data = frame[keys] if categorical else pd.DataFrame(X, columns=columns) if lacking else X  # names: messages
    with _blocks_on_cluster(args, model), Progress(note, quiet=args.quiet, desc=args.method) as progress:
        released = model.fit_transform(data, weights=weights, strata=strata, merge_small_strata=args.merge_small_strata,
                                       missing=args.missing, nominal=nominal, ordinal=ordinal, progress=progress)
    values = dict(zip(keys, released.T))
    if categorical:  # the share of categorical values a group's level replaced (a suppressed one included)
        same = [(values[c] == frame[c].to_numpy()) | (pd.isna(values[c]) & frame[c].isna().to_numpy())
                for c in categorical]
        print(f"probanon: categorical keys: {100 * (1 - np.mean(same)):.2f}% of their values replaced by the group's "
              "mode (nominal) or median level (ordinal)", file=sys.stderr)
    released = _rounded(np.column_stack([values[c] for c in numeric]).astype(np.float64) if numeric else X,
                        [digits[c] for c in numeric])  # what is released: the information loss is computed on it
    values.update(zip(numeric, released.T))
    if getattr(model, "records_settled_", 0):
        print(f"probanon: {name}: {model.records_settled_:,} records moved from the method's groups to the cells of "
              "its published function (identical key tuples share a cell, every cell holds k; the function is the "
              "release)", file=sys.stderr)
    for line in getattr(model, "strata_merged_", []) + (getattr(model, "missing_merged_", []) if lacking else []):
        print(f"probanon: {line}", file=sys.stderr)
    if lacking:
        kept = int(np.isnan(X).sum()) + int(frame[categorical].isna().to_numpy().sum())
        suppressed = int((np.isnan(released) & ~np.isnan(X)).sum()) + sum(
            int((pd.isna(values[c]) & frame[c].notna().to_numpy()).sum()) for c in categorical)
        print(f"probanon: missing key values: {kept} kept missing, {suppressed} more suppressed so that every group "
              "agrees on each released value", file=sys.stderr)
        report = argparse.Namespace(information_loss=information_loss(X, released, weights=weights, missing=True)) \
            if numeric else None
    else:
        report = utility_report(X, released, weights=weights) if numeric else None
    recoded = {} if strata is None else recode_merged(model.strata_, strata)
    check_categorical_keys(args, frame, frame.assign(**{c: values[c] for c in categorical}, **recoded), roles,
                           categorical)
    group = f"{name} group {'weighted ' * (weights is not None)}"
    rounding = {c: f", rounded to {digits[c]} decimals" if digits[c] is not None else "" for c in numeric}
    release = make_release(frame, roles, replaced={**values, **recoded},
                           actions={**{c: f"key: replaced by its {group}mean{rounding[c]}" for c in numeric},
                                    **{c: f"key: replaced by its {group}mode" for c in nominal},
                                    **{c: f"key: replaced by its {group}median level" for c in ordinal},
                                    **{c: "stratum: released, merged strata recoded" for c in recoded}},
                           keep_order=args.keep_order, random_state=shuffle_stream(args.seed), means=digits,
                           promise=_promise(model.k_, keys, roles, args.strata, name, per_column=args.method == "ranking"))
    extra = {}
    if args.function:
        if model.function_ is None:
            raise InputError(f"--function: {model.unpublished_}; drop --split-duplicates to publish one")
        model.function_.columns = keys
        model.function_.meta["decimals"] = {c: digits[c] for c in numeric}  # apply rounds as this release did
        extra[args.function] = model.function_.to_json(indent=1)
    write_release(args, release, extra)
    loss = "no numeric key" if report is None else format_information_loss(report.information_loss)
    print(
        f"{args.method}: {len(frame)} records, {len(keys)} quasi-identifiers, k = {model.k_}, "
        f"k achieved = {k_achieved(release.data, keys + [c for c in column_list(args.strata) if c in release.data])}"
        ", "
        f"{'weighted ' * (weights is not None)}information loss{' of the numeric keys' * bool(categorical)} = {loss}"
        + (f", {model.blocks_}" if hasattr(model, "blocks_") else ""),
        file=sys.stderr,
    )
    return 0


def _promise(k: int, keys: list, roles: dict, strata, mechanism: str, per_column: bool = False) -> Promise:
    """The k-anonymity a microaggregation release promises: on its keys and released strata
    columns together, or on each key alone (individual ranking)."""
    released_strata = [c for c in column_list(strata) if roles.get(c) != "drop"]
    columns = tuple((c,) for c in keys) if per_column else (tuple(keys + released_strata),)
    return Promise(int(k), columns, mechanism)


def _function_promise(function, keys: list, roles: dict, strata) -> Promise:
    """The promise of a published function applied to a file: the k it was fitted with (its
    smallest declared cell where the function does not state k), on the keys, released strata
    and the ``cell`` column written beside them (two cells may release the same values: the cell
    number still tells them apart)."""
    sizes = function.sizes if function.kind != "intervals" else [min(s) for s in function.sizes]
    k = function.meta.get("k", int(np.min(sizes)))
    name = f"the published function ({function.meta.get('method', function.kind)}, k = {k})"
    if function.kind == "intervals":
        return _promise(k, keys, roles, strata, name, per_column=True)
    return _promise(k, keys + ["cell"], roles, strata, name)


def _released_decimals(args, frame, numeric) -> dict:
    """{numeric key: the decimals its released means are rounded to}: ``--decimals``, else the
    input's own (:func:`probanon.data.input_decimals`)."""
    if args.decimals is not None:
        return {c: args.decimals for c in numeric}
    return input_decimals(args.input, frame, numeric)


def _rounded(values: np.ndarray, digits) -> np.ndarray:
    """Released key values (records x numeric keys), column j rounded to ``digits[j]``
    decimals (None: as they are; :func:`probanon.precision.round_columns`)."""
    from .precision import round_columns

    return round_columns(values, digits) if values.shape[1] else values


def cmd_apply(args) -> int:
    function = function_from_json(args.function)
    keys = column_list(args.keys)
    if function.columns and keys and keys != list(function.columns):
        raise InputError(f"--keys {','.join(keys)} differ from the function's columns {','.join(function.columns)}")

    if function.encoding is not None:  # categorical keys: read as they are, the function embeds them
        args.categorical = function.encoding.categorical()
    if function.kind == "stratified":
        if function.rule.columns is None:
            raise InputError("the function's strata have no column names (fitted on an array): assign through the "
                             "API with strata=")
        args.strata = function.rule.columns  # the strata columns: read, and released unchanged

    columns = list(function.columns or keys)
    numeric = [j for j, c in enumerate(columns) if c not in getattr(args, "categorical", ())]
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
            values[:, numeric] = _rounded(values[:, numeric].astype(np.float64), digits)
        return values, added, recoded

    strata = function.rule.columns if function.kind == "stratified" else None
    return apply_to_file(args, columns, cells, means={columns[j]: d for j, d in zip(numeric, digits)},
                         promise=lambda roles: _function_promise(function, columns, roles, strata))


def _function_decimals(args, function, numeric) -> list:
    """The decimals ``apply`` rounds each numeric key to: ``--decimals``, else those the fit
    recorded in the function's ``meta`` (a function without them: not rounded)."""
    from .errors import SpecificationError
    from .precision import MAX_DECIMALS

    if args.decimals is not None:
        return [args.decimals] * len(numeric)
    recorded = function.meta.get("decimals") or {}
    ok = isinstance(recorded, dict) and all(d is None or (type(d) is int and 0 <= d <= MAX_DECIMALS)
                                            for d in recorded.values())
    if not ok:
        raise SpecificationError(f"function: 'meta.decimals' must map key columns to 0..{MAX_DECIMALS} decimals")
    return [recorded.get(c) for c in numeric]


CHUNK_SIZE = 1_000_000


def add_chunk_options(p) -> None:
    """``--chunk-size`` and ``--quiet`` of the commands that apply a function to a file."""
    p.add_argument("--chunk-size", type=positive_int, default=CHUNK_SIZE, metavar="ROWS",
                   help=f"a file of more records is read, checked and released chunk by chunk of ROWS records "
                        f"with bounded memory (default {CHUNK_SIZE:,}); the same release as at once")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _key_values(args, frame, keys):
    """The keys of ``frame`` for a published function: the checked numeric matrix, or, for a
    function with categorical keys (``args.categorical``), the key columns themselves (its
    encoding checks them)."""
    if getattr(args, "categorical", ()):
        absent = [c for c in keys if c not in frame.columns]
        if absent:
            raise InputError(f"the table has no key column {absent[0]!r}")
        numeric = [c for c in keys if c not in args.categorical]
        if numeric:
            quasi_identifiers(frame, numeric)  # checked, messages naming the file's line
        return frame[list(keys)], list(keys)
    return quasi_identifiers(frame, list(keys))


def apply_to_file(args, keys, cells, promise=None, means: dict | None = None) -> int:
    """Release ``args.input`` with its ``keys`` replaced through ``cells`` (a published
    function: (X, the records' table) -> (the keys' new values, added columns or None,
    {column: values} of other columns it recodes, e.g. merged strata)). ``promise``: None, or
    roles -> the :class:`probanon.release.Promise` checked before anything is written;
    ``means``: {key: decimals} of the keys it replaces by group means, see
    :func:`probanon.release.make_release`. A file of at most ``args.chunk_size`` records is read
    at once; a larger one chunk by chunk
    (:func:`apply_in_chunks`), with the same release."""
    chunks = read_chunks(args.input, args.chunk_size)
    frame = next(chunks)
    if next(chunks, None) is not None:
        chunks.close()
        return apply_in_chunks(args, keys, cells, promise, means)
    roles = release_roles(args, frame, keys=keys)
    X, columns = _key_values(args, frame, keys)  # in the function's order
    values, added, recoded = cells(X, frame)
    replaced = {**dict(zip(columns, values.T)), **recoded}
    categorical = getattr(args, "categorical", ())
    check_categorical_keys(args, frame, frame.assign(**{c: replaced[c] for c in (*categorical, *recoded)}), roles,
                           categorical)
    release = make_release(frame, roles, replaced=replaced, added=added,
                           actions=APPLY_ACTIONS, keep_order=args.keep_order, random_state=shuffle_stream(args.seed),
                           promise=None if promise is None else promise(roles), means=means)
    write_release(args, release)
    return 0


#: the pre-release audit of a file read in chunks runs on at least this many records
AUDIT_SAMPLE = 100_000
APPLY_ACTIONS = {"key": "key: replaced by its cell's centroid", "cell": "added: the cell index"}


def apply_in_chunks(args, keys, cells, promise=None, means: dict | None = None) -> int:
    """:func:`apply_to_file` of a file larger than one chunk, in three passes over the file:
    (1) the number of records and the column types of the whole file (numeric keys with text
    refused); (2) each chunk, read with those types (every column, keys included: a categorical
    key is text in every chunk as in the whole file), checked as the whole file is (its line or
    row in the file named), its keys replaced and its records placed at their released positions
    (the same permutation as at once: :class:`probanon.outputs.OrderedTableWriter`); (3) the
    release written in order. The pre-release audit (:func:`probanon.cliargs.pre_release_audit`:
    the keys against the numeric columns released per record, strata and weights included, as on
    the whole file) runs on a systematic sample of max(``chunk_size``, :data:`AUDIT_SAMPLE`)
    records (evenly spaced in the file); the promise (as in :func:`apply_to_file`) is checked on
    the counts of the released combinations over all chunks before the file is written. Memory:
    a chunk, the sample, the counts and O(n) integers (the record order)."""
    from .data import NumericColumns, in_file, table_dtypes
    from .outputs import OrderedTableWriter, TableWriter
    from .outputs import table_format
    from .precision import integer_columns, whole_numbers
    from .release import record_order

    size = args.chunk_size
    note = f"apply: {args.input}, chunks of {size:,} records"
    with Progress(note, quiet=args.quiet, desc="apply", unit="record") as progress:
        types, n, roles, numbers = [], 0, None, []
        for chunk in read_chunks(args.input, size):
            if roles is None:
                roles = release_roles(args, chunk.iloc[:0], keys=keys, audit=False)
                numeric_keys = NumericColumns([c for c in keys if c not in getattr(args, "categorical", ())])
            numeric_keys.add(chunk)
            types.append(chunk.dtypes.to_dict())
            numbers.append(whole_numbers(chunk))  # integer columns with empty cells, over the whole file
            n += len(chunk)
            progress("reading", n, None)
        numeric_keys.check()
        key_columns = columns_with(roles, "key")
        released = [c for c, role in roles.items() if role in PER_RECORD]  # as the whole file's audit reads them
        dtypes = table_dtypes(types)  # every chunk read as the whole file is: a categorical key as text throughout
        # the audit reads the numeric columns only (keys are, once checked)
        audited_columns = key_columns + [c for c in released if getattr(dtypes[c], "kind", "") in ("i", "u", "f")]
        link = record_order(n, keep_order=args.keep_order, random_state=shuffle_stream(args.seed))[1]
        position = link["released_row"].to_numpy() - 1
        link = link if args.link else None
        sampled = np.unique(np.linspace(0, n - 1, min(n, max(size, AUDIT_SAMPLE))).astype(np.int64))
        sample, done, counts = [], 0, None
        promised = None if promise is None else promise(roles)
        categorical = list(getattr(args, "categorical", ()))
        per_record = [c for c, role in roles.items() if role in PER_RECORD] if categorical else []
        pairs = []  # sampled (original, released) keys and columns released per record: categorical keys checked
        writer = TableWriter(args.output) if args.keep_order else OrderedTableWriter(args.output, n, size)
        with writer as table:
            integers = integer_columns(None, numbers) if table_format(args.input) == "csv" else []  # as read_table
            for chunk in read_chunks(args.input, size, dtypes=dtypes):
                first, done = done, done + len(chunk)
                chunk.attrs["integer_columns"] = integers
                numeric = [c for c in chunk.columns if is_numeric_column(chunk[c])]
                audited = [[c for c in key_columns if c in numeric], [c for c in released if c in numeric]]
                with in_file(chunk):  # the checks of the audit (numeric columns; confidential ones may lack values)
                    for group, lacking in zip(audited, (False, True)) if all(audited) else ():
                        quasi_identifiers(chunk, group, missing=lacking)
                    X, columns = _key_values(args, chunk, keys)
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
            table.progress = lambda done: progress("writing", done, n)
            args.outputs.write({args.output: table, **({args.link: link} if args.link else {})})
    order_text = "input order kept" if args.keep_order else "records in random order"
    print(f"wrote {args.output} ({n} records in {-(-n // size)} chunks, {order_text}"
          + (f"; private link file {args.link}: never publish it" if args.link else "")
          + f"; pre-release audit on a systematic sample of {len(sampled):,} records); columns:\n"
          + part.summary(), file=sys.stderr)
    return 0


def _aligned(args, original: pd.DataFrame, released: pd.DataFrame, keys: list, changed=()) -> pd.DataFrame:
    """``released`` reordered so that its row i is the release of ``original``'s row i, by
    ``--link``, ``--id`` or ``--by-position``, checked: the columns released unchanged (shared,
    not ``keys`` nor ``changed``) agree under the match (:func:`probanon.release.align`)."""
    position = align(original, released, keys, link=args.link, id=args.id, by_position=args.by_position,
                     changed=changed)
    return released.iloc[position].reset_index(drop=True)


def check_loss_of_match(X, Y, weights, missing: bool, how: str) -> None:
    """Refuse a match of original and release whose information loss exceeds 100%: a release
    that replaces each record's keys by its group's mean (microaggregation, individual ranking,
    cell centroids) loses at most SSE/SST = 1, since the mean minimises each group's sum of squares
    (SSE = the within-group sum <= the total SST, and a suppressed value counts as the overall mean),
    whereas the records matched to another release's rows lose about SST(original) + SST(release),
    up to 200%."""
    if X.shape[1] == 0 or X.shape[0] < 2:
        return
    loss = information_loss(X, Y, weights=weights, missing=missing)
    if loss > 100.0 * (1 + 1e-9):
        raise InputError(f"{how}: information loss {loss:.1f}% > 100% is impossible for a correct match (replacing "
                         "each record by its group's mean loses at most SSE/SST = 100%, as replacing every record "
                         "by the column means does): the records are matched wrongly (the link file of another "
                         "release?)")


def _match_name(args) -> str:
    return f"--link {args.link}" if args.link else f"--id {args.id}" if args.id else "--by-position"


def _key_names(args, tables: dict, numeric_required: bool = True) -> tuple[list, list]:
    """The numeric ``--keys`` and the ``--categorical-keys`` ({name: table} must all hold them):
    named once each, at least one (a numeric one when ``numeric_required``)."""
    keys, categorical = column_list(args.keys), column_list(args.categorical_keys)
    if not keys and (numeric_required or not categorical):
        raise InputError("name the quasi-identifiers with --keys" + " or --categorical-keys" * (not numeric_required))
    both = sorted(set(keys) & set(categorical))
    if both:
        raise InputError(f"{both[0]!r} is named by both --keys and --categorical-keys")
    for name, table in tables.items():
        absent = [c for c in keys + categorical if c not in table.columns]
        if absent:
            where = f"{name} has no column {absent[0]!r}" if len(tables) == 1 else \
                f"{name} table has no column {absent[0]!r}: the key {absent[0]!r} is not in both tables"
            raise InputError(where)
    return keys, categorical


def _matched_keys(args, lacking: bool = False, changed=()):
    """The tables of ``evaluate`` and ``report``, checked and matched: (original, released in
    the original's order, numeric key matrices X and Y, numeric keys, categorical keys,
    weights). ``--keys`` are numeric (``lacking``: missing values allowed), ``--categorical-keys``
    compared as categories; every key in both tables. The match is checked: the shared columns
    other than the keys and ``changed`` agree under it, and the information loss is <= 100%."""
    original, released = read_table(args.original), read_table(args.released)
    keys, categorical = _key_names(args, {"original": original, "released": released})
    X, numeric = quasi_identifiers(original, keys, lacking, MISSING_HINT if hasattr(args, "missing") else "")
    weights = weights_of(original, args.weights, f"{args.original}: ")
    quasi_identifiers(released, numeric, missing=lacking)  # checked in file order: a message names the line
    released = _aligned(args, original, released, numeric + categorical, changed)
    Y, _ = quasi_identifiers(released, numeric, missing=lacking)
    check_loss_of_match(X, Y, weights, lacking, _match_name(args))
    return original, released, X, Y, numeric, categorical, weights


def cmd_evaluate(args) -> int:
    lacking = args.missing == "pattern"
    original, released, X, Y, columns, categorical, weights = _matched_keys(args, lacking)
    every = columns + categorical
    if lacking and (np.isnan(X).any() or np.isnan(Y).any()):  # moments of incomplete columns: not reported
        result = {"information_loss": information_loss(X, Y, weights=weights, missing=True), "n_records": len(X),
                  "columns": columns, "correlation_difference_max": None,
                  "suppressed": int((np.isnan(Y) & ~np.isnan(X)).sum())}
    else:
        result = utility_report(pd.DataFrame(X, columns=columns), pd.DataFrame(Y, columns=columns),
                                weights=weights).to_dict()
    result["k_achieved"] = k_achieved(released, every)
    risk_before, risk_after = (frequency_risk(table, every, weights) for table in (original, released))
    result["frequency_risk"] = {"original": risk_before.to_dict(), "released": risk_after.to_dict()}
    if args.risk:
        from .metrics import interval_disclosure, record_linkage

        if lacking and (np.isnan(X).any() or np.isnan(Y).any()):
            raise InputError("--risk (record linkage, interval disclosure) needs keys without missing values")
        result["record_linkage"] = record_linkage(X, Y)
        result["interval_disclosure"] = interval_disclosure(X, Y)
    holds = None if args.k is None else result["k_achieved"] >= args.k
    if holds is not None:
        result["k"], result["holds"] = args.k, holds
    if args.json:
        print(json.dumps(result, allow_nan=False))
    else:
        print(f"records:            {result['n_records']}")
        print(f"quasi-identifiers:  {', '.join(columns)}")
        print(f"information loss:   {format_information_loss(result['information_loss'])}"
              + " (weighted)" * (weights is not None))
        print(f"k achieved:         {result['k_achieved']}"
              + ("" if holds is None else f" ({'holds' if holds else 'FAILS'}: k = {args.k} required)"))
        if result["correlation_difference_max"] is not None:
            print(f"max |corr diff|:    {result['correlation_difference_max']:.4f}")
        print(f"sample uniques:     {risk_before.sample_uniques} in the original, {risk_after.sample_uniques} released")
        print("records violating:  " + ", ".join(
            f"{k}-anonymity {risk_before.violations(k)} -> {risk_after.violations(k)}" for k in VIOLATION_KS))
        model = "weighted" if weights is not None else "no weights: the file is the population"
        print(f"expected re-identifications (individual risk, Benedetti-Franconi, {model}): "
              f"{risk_before.expected_reidentifications:.2f} ({100 * risk_before.global_risk:.2f} %) in the original, "
              f"{risk_after.expected_reidentifications:.2f} ({100 * risk_after.global_risk:.2f} %) released")
        if args.risk:
            print(f"record linkage:     {result['record_linkage']:.4f} (expected share re-identified, nearest neighbour)")
            print(f"interval disclosure: {result['interval_disclosure']:.4f} (sdcMicro dRisk, 5% of sd)")
    return 1 if holds is False else 0


RISK_MISSING_HINT = "; give --missing pattern to let a missing value match any value (sdcMicro's rule)"


def cmd_risk(args) -> int:
    """``probanon risk FILE``: the frequency-based risk profile of one file, as sdcMicro's
    ``print(sdc, "risk")`` and ``print(sdc, "kAnon")`` (:mod:`probanon.metrics.frequency`)."""
    frame = read_table(args.input)
    keys, categorical = _key_names(args, {args.input: frame}, numeric_required=False)
    if keys:  # numbers, checked with the line of a bad value; a missing value only with --missing pattern
        quasi_identifiers(frame, keys, args.missing == "pattern", RISK_MISSING_HINT)
    weights = weights_of(frame, args.weights, f"{args.input}: ")
    risk = frequency_risk(frame, keys + categorical, weights)
    above = risk.above(args.threshold)
    if args.output:
        clash = sorted(set(keys + categorical) & {"record", "fk", "Fk", "risk", "above_level"})
        if clash:
            raise InputError(f"-o: the key {clash[0]!r} has the name of a column of the risk file; rename it")
        table = frame[keys + categorical].reset_index(drop=True)
        table.insert(0, "record", np.arange(1, risk.n + 1))
        args.outputs.write({args.output: table.assign(fk=risk.fk, Fk=risk.Fk, risk=risk.risk, above_level=above)})
    result = risk.to_dict(level=args.threshold)
    result.update(numeric_keys=keys, categorical_keys=categorical, weights=args.weights,
                  risk_level_rule="--threshold" if args.threshold is not None else "max(0.1, median + 2 MAD)")
    if args.json:
        print(json.dumps(result, allow_nan=False))
    else:
        lacking = int(frame[keys + categorical].isna().any(axis=1).sum())
        print(_risk_summary(args, risk, keys, categorical, int(above.sum()), lacking))
    return 0


def _risk_summary(args, risk, keys: list, categorical: list, above: int, lacking: int) -> str:
    """The readable profile of :func:`cmd_risk` (sdcMicro's wording where it has one); ``above``:
    records above the risk level, ``lacking``: records with a missing key value."""
    n = risk.n
    share = lambda count: f"{count:,} ({100 * count / n:.3f} %)"  # noqa: E731
    q = risk.risk_summary()
    named = [f"{', '.join(names)} ({kind})" for names, kind in ((keys, "numeric"), (categorical, "categorical"))
             if names]
    population = (f"estimated from the weights in {args.weights!r} (F_k = sum of the weights sharing a record's keys)"
                  if args.weights else "no weights: the file is the population (F_k = f_k)")
    if args.threshold is None:
        level = (f"(risk > {main_risk_level(risk.risk):.4g} = max(0.1, median + 2 MAD): sdcMicro's \"higher risk "
                 "than the main part of the data\")")
    else:
        level = f"(risk > {args.threshold:g}, --threshold)"
    rows = [("records", f"{n:,}"), ("keys", "; ".join(named))]
    if lacking:
        rows.append(("", f"{share(lacking)} with a missing key value, which matches any value (sdcMicro's rule)"))
    rows += [("population frequencies", population),
            ("sample uniques", share(risk.sample_uniques) + " (f_k = 1: no other record shares their keys)")]
    rows += [("records violating" if i == 0 else "", f"{k}-anonymity: {share(risk.violations(k))}")
             for i, k in enumerate(VIOLATION_KS)]
    rows += [("individual risk", f"min {q['min']:.4g}, 25 % {q['q25']:.4g}, median {q['median']:.4g}, "
                                 f"75 % {q['q75']:.4g}, max {q['max']:.4g}, mean {q['mean']:.4g}"),
             ("", "(Benedetti-Franconi, as sdcMicro's measure_risk: the probability that an intruder who knows a "
                  "person's keys picks that person's record)"),
             ("expected re-identifications", f"{risk.expected_reidentifications:,.2f} "
                                             f"({100 * risk.global_risk:.2f} % of the records: the global risk)"),
             ("records above the risk level", share(above)), ("", level)]
    if args.output:
        rows.append(("per-record risk", f"written to {args.output} (record, keys, fk, Fk, risk, above_level)"))
    return summary_lines(rows)


def _risk_level(text: str) -> float:
    """argparse type of ``risk --threshold``: a probability in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a risk in (0, 1], got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a risk in (0, 1], got {text}")
    return value


def demo_release_reports(folder, data, qi, X, released, seed, release=None) -> None:
    """The demo's risk-utility reports (:mod:`probanon.release_report`) of its MDAV release at
    k = 5, with V-MDAV, PCL, individual ranking and MDAV-SWAP (informed) on its map; the
    external one lists the variables of ``release`` (:class:`probanon.release.Release`) with their treatment."""
    from .release_report import assess, external_report, internal_report
    from .swapping import swap

    keys = list(qi)
    others = {"V-MDAV": METHODS["vmdav"](5).fit_transform(X), "PCL": METHODS["pcl"](5, random_state=seed).fit_transform(X),
              "individual ranking": METHODS["ranking"](5).fit_transform(X),
              "MDAV-SWAP": swap(data[qi + ["health_spending"]], 5, "mdav-swap", ["health_spending"],
                                random_state=seed).released[qi].to_numpy()}
    compared = [assess(label, X, Y, pd.DataFrame(Y, columns=keys), keys, 5, probabilistic=label == "MDAV-SWAP")
                for label, Y in others.items()]
    confidential = ["health_spending", "savings"]
    original = data[keys + confidential]
    mine = original.assign(**dict(zip(keys, np.asarray(released).T)))
    method = "MDAV microaggregation of the quasi-identifiers, k = 5"
    internal_report(original, mine, keys, [], 5, method, compared=compared, label="MDAV (this release)",
                    mechanism="microaggregation", confidential=confidential).write(Path(folder) / "internal")
    external_report(original, mine, keys, [], 5, method, dataset="release_mdav_k5.csv", mechanism="microaggregation",
                    confidential=confidential, variables=None if release is None else release.actions,
                    ).write(Path(folder) / "external")


DEMO_FILES = ("index.html", "il_vs_k.png", "risk_vs_k.png", "release_mdav_k5.csv", "function_mdav_k5.json",
              "evaluation_mdav_k5.json", "attack_mdav_k5.json", "survey_spec.json", "survey_release.csv",
              "release_report/internal/index.html", "release_report/external/index.html",
              "survey_release_report.json")
SURVEY_DEMO = {"records": 600, "k": 5, "participation": 0.7, "risk": 0.05, "columns": ["age", "income"],
               "answers": ["health_spending", "savings"]}


def demo_survey(out_dir, rep, records: int, seed: int, quiet: bool = True) -> dict | None:
    """The demo's survey part (paper 1, Sec. III, locally trusted anonymisation): a specification
    designed on a synthetic model population (:data:`SURVEY_DEMO`, at most ``records`` records),
    published on a collector (a temporary SQLite database, a free loopback port), every person
    responding with probability pi through :func:`probanon.service.client.respond` (the cell is
    computed on the respondent's side), the survey closed and its release fetched by an analyst.
    Writes survey_spec.json, survey_release.csv and survey_release_report.json into ``out_dir``
    and adds a section to ``rep``; returns the release report (None without the service extra)."""
    import datetime as dt
    import tempfile

    from .attacks import GUARANTEES
    from .survey.design import design
    from .survey.spec import build_spec

    heading = "Survey with uncertain participation (paper 1): design, collector, release"
    from .service import client, missing_extra, office, server

    if missing_extra():
        rep.text(heading, f"Not run: the collector needs the service extra ({missing_extra()} is missing; "
                          "pip install 'probanon[service]').")
        return None

    c = SURVEY_DEMO
    k, pi, risk, qi, answered = c["k"], c["participation"], c["risk"], c["columns"], c["answers"]
    population = synthetic_survey(min(records, c["records"]), random_state=seed)
    d = design(population[qi], k, pi, risk)
    spec = build_spec(d)
    spec_text = json.dumps(spec, indent=1, allow_nan=False)
    now = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    answers = [{"name": a, "type": "number", "min": 0, "label": a.replace("_", " ")} for a in answered]
    opens, closes = (now - dt.timedelta(hours=1)).isoformat(), (now + dt.timedelta(days=1)).isoformat()
    questions = {"age": {"label": "Your age", "unit": "years"}, "income": {"label": "Your yearly income", "unit": None}}
    responds = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[2]).random(len(population)) < pi
    with tempfile.TemporaryDirectory(prefix="probanon-demo-") as tmp:
        database = str(Path(tmp) / "collector.db")
        admin = server.init_admin(database)
        with server.running(database) as base:
            created = office.publish(base, admin, spec_text, answers, opens, closes, "probanon demo survey",
                                     questions, open_survey=True)  # simulated respondents, no invitations
            sid = created["id"]
            with Progress(None, quiet=quiet, desc="respondents", total=int(responds.sum())) as bar:
                for i in bar.iterate(np.flatnonzero(responds)):
                    person = population.iloc[i]
                    client.respond(base, sid, {q: float(person[q]) for q in qi},
                                   {a: float(person[a]) for a in answered}, expected_digest=created["digest"])
            office.close(base, admin, sid, "demo: every respondent answered")
            released = office.release(base, office.analyst(base, admin, "demo analyst")["token"], sid)
    report = released["report"]
    release = pd.DataFrame.from_records(released["records"], columns=released["columns"])
    write_outputs({out_dir / "survey_spec.json": spec_text, out_dir / "survey_release.csv": release,
                   out_dir / "survey_release_report.json": json.dumps(report, indent=2, allow_nan=False)})

    failures, cells = report["failures"], report["cells"]
    rep.text(heading,
             f"{GUARANTEES['survey'].text()} A model population of {len(population)} synthetic records (seed {seed}; "
             f"quasi-identifiers {', '.join(qi)}) gives the design: k = {k}, participation pi = {pi}, acceptable cell "
             f"failure {risk}, so every cell holds n_min = {d.n_min} or more records ({len(d.sizes)} cells of "
             f"{d.sizes.min()}..{d.sizes.max()}), each failing (0 < responses < k) with probability <= {risk} "
             f"(Algorithm A). The specification (survey_spec.json, digest {spec['digest']}) was published on a "
             f"collector (probanon.service, a temporary SQLite database on 127.0.0.1); each person responded with "
             f"probability {pi}: {int(responds.sum())} respondents, each through probanon.service.client.respond, "
             "which verifies the survey document (everything asked, the specification's digest included) "
             "against the invitation's digest, computes the cell on the "
             f"respondent's side and sends only the cell and the answers ({', '.join(answered)}), never the "
             f"{', '.join(qi)}. The survey was closed, and an analyst fetched the release (survey_release.csv: "
             "each response as its cell's centroid and its answers, in random order; cells that ended with "
             f"0 < responses < k suppressed) and its report (survey_release_report.json).")
    from .report import shared_decimals

    roles = {"cell": "cell index", **{q: "cell centroid" for q in qi}, **{a: "answer" for a in answered}}
    summary = [{"column": col, "released as": roles.get(col, ""), "records": int(release[col].count()),
                "distinct values": int(release[col].nunique()),
                **shared_decimals({"mean": release[col].mean(), "min": release[col].min(), "max": release[col].max()})}
               for col in release.columns]
    rep.table([dict(row, mean="", min="", max="") if row["column"] == "cell" else row for row in summary])
    rep.text(None, "Cell failures predicted by the design against those observed in this collection, and the "
                   "release rule's outcome: a failed cell is suppressed, so every released cell holds >= k "
                   "responses whatever the participation was.")
    rep.table([
        {"quantity": "responses (participation)", "predicted": f"{pi * report['records']:.1f} ({pi})",
         "observed": f"{report['responses']} ({report['participation']['observed']:.3f})"},
        {"quantity": "failing cells (0 < responses < k)", "predicted": f"{failures['predicted_failing_cells']:.2f}",
         "observed": str(failures["observed_failing_cells"])},
        {"quantity": "some cell fails (table failure)", "predicted": f"{failures['predicted_table_failure']:.3f}",
         "observed": "yes" if failures["observed_failing_cells"] else "no"},
        {"quantity": "achieved k of the release", "predicted": f">= {k}", "observed": str(report["achieved_k"])},
        {"quantity": "suppressed records (cells)", "predicted": "",
         "observed": f"{report['suppressed_records']} ({report['suppressed_cells']})"},
        {"quantity": "released records", "predicted": "", "observed": str(report["released_records"])},
    ])
    failed = [c for c in cells if c["failed"]]
    if failed:
        rep.text(None, "The failed cells:")
        rep.table([{"cell": c["cell"], "records": c["size"], "responses": c["responses"],
                    "predicted failure": c["predicted_failure"], "released": "yes" if c["released"] else "no"}
                   for c in failed])
    return report


def cmd_demo(args) -> int:
    from .attacks import attack
    from .metrics import information_loss, record_linkage
    from .report import FLAG_MARK, Report, flag, line_figure

    out_dir = Path(args.output_dir)
    data = synthetic_survey(args.records, random_state=args.seed)
    qi = ["age", "income", "household", "hours"]
    X = data[qi].to_numpy(float)
    ks = [2, 3, 4, 5, 7, 10, 15, 20]
    methods = {"MDAV": "mdav", "V-MDAV": "vmdav", "PCL": "pcl", "individual ranking": "ranking"}
    rows, il_series, risk_series = [], {}, {}
    with Progress(None, quiet=args.quiet, desc="methods", total=len(methods)) as bar:
        for label, name in bar.iterate(methods.items()):
            ils, risks = [], []
            for k in ks:
                model = METHODS[name](k, random_state=args.seed) if name == "pcl" else METHODS[name](k)
                released = model.fit_transform(X)
                ils.append(information_loss(X, released))
                risks.append(record_linkage(X, released))
                achieved = k_achieved(pd.DataFrame(released))
                rows.append({"method": label, "k": k, "k-anonymous": "yes" if achieved >= k else "NO",
                             "k achieved": achieved, "information loss %": ils[-1],
                             "record linkage": risks[-1]})
            risk_series[label] = (ks, risks)
            if name != "ranking":  # not k-anonymous: its IL is not comparable with the others'
                il_series[label] = (ks, ils)
    main = METHODS["mdav"](5).set_output(transform="default")
    roles = assign_roles(data.columns, qi, ["health_spending", "savings"], ["id"])
    release = make_release(data, roles, replaced=dict(zip(qi, main.fit_transform(data[qi]).T)),
                           actions={"key": "key: replaced by its MDAV group mean (k = 5)"},
                           random_state=shuffle_stream(args.seed))
    evaluation = utility_report(data[qi], data[qi].assign(**dict(zip(qi, main.transform(data[qi]).T)))).to_dict()
    evaluation["k_achieved"] = k_achieved(release.data, qi)
    evaluation["record_linkage"] = record_linkage(X, main.transform(data[qi]))
    confidential = ["health_spending", "savings"]
    risk = attack(data, release.data, qi, confidential, mechanism="microaggregation", k=5, runs=1,
                  link=release.link["released_row"].to_numpy() - 1,
                  random_state=np.random.default_rng(np.random.SeedSequence(args.seed).spawn(2)[1]))
    out_dir.mkdir(parents=True, exist_ok=True)
    demo_release_reports(out_dir / "release_report", data, qi, X, main.transform(data[qi]), args.seed, release)
    write_outputs({
        out_dir / "release_mdav_k5.csv": release.data,
        out_dir / "function_mdav_k5.json": main.function_.to_json(indent=1),
        out_dir / "evaluation_mdav_k5.json": json.dumps(evaluation, indent=2, allow_nan=False),
        out_dir / "attack_mdav_k5.json": json.dumps(risk.to_dict(), indent=2, allow_nan=False),
    })

    rep = Report("probanon demo: microaggregation of a synthetic survey")
    rep.text("Data", f"{len(data)} synthetic records (seed {args.seed}); quasi-identifiers: {', '.join(qi)}; "
             "confidential: health_spending, savings; direct identifier: id (removed from the release). "
             "Information loss IL = 100 SSE/SST on z-scored data; record linkage = expected share of records "
             "an intruder who knows every original quasi-identifier re-identifies by nearest neighbour.")
    rep.figure("il_vs_k", line_figure(il_series, "k", "information loss (%)",
                                      "Information loss against k (k-anonymous methods)"),
               "Information loss against k for MDAV, V-MDAV and PCL (each group of at least k records)")
    rep.figure("risk_vs_k", line_figure(risk_series, "k", "record linkage (share re-identified)",
                                        "Disclosure risk against k"),
               "Record linkage against k, with individual ranking, whose low information loss comes from "
               "not being k-anonymous: each column is ranked alone, so records stay close to their originals "
               "and are re-identified far more often")
    mean_il = {label: float(np.mean(ils)) for label, (_, ils) in il_series.items()}
    best = min(mean_il, key=mean_il.get)
    ranking_k = sorted({r["k achieved"] for r in rows if r["method"] == "individual ranking"})
    rep.text("Risk beside utility", f"Individual ranking is not k-anonymous (k achieved: "
             f"{', '.join(map(str, ranking_k))} for k = {ks[0]}..{ks[-1]}): it is listed for its risk only, never "
             f"as a method to choose. Among the k-anonymous methods {best} has the lowest mean information loss "
             f"({mean_il[best]:.2f}% over these k).")
    rep.table(rows, decimals={"information loss %": 3, "record linkage": 4})
    rep.links("Risk-utility reports of the release at k = 5", "The office's internal report (risk before and "
              "after, utility, the risk-utility map, the attack suite) and the publishable one (dataset, variables, "
              "method, guarantee, aggregate utility), as 'probanon report' writes them:",
              {"internal report (for the office)": "release_report/internal/index.html",
               "external report (to publish with the data)": "release_report/external/index.html"})
    rep.text("Release at k = 5 (MDAV)", f"k achieved = {evaluation['k_achieved']}, IL = "
             f"{format_information_loss(evaluation['information_loss'])}, "
             f"record linkage = {evaluation['record_linkage']:.4f}, "
             f"max |correlation difference| = {evaluation['correlation_difference_max']:.4f}. Records in random "
             "order, id removed. Files: release_mdav_k5.csv, function_mdav_k5.json (the publishable "
             "microaggregation function), evaluation_mdav_k5.json, attack_mdav_k5.json (the attack suite).")
    above = (f"Above the claimed bound: {', '.join(risk.exceeded)}." if risk.exceeded else
             "No intruder's success is significantly above the claimed bound.")
    rep.text("Risk of the release at k = 5: the attack suite beside the claimed bound",
             f"{risk.guarantee.text()} Every intruder of the attack suite ('probanon attack') knows every person's "
             f"original {', '.join(qi)}, the release and the mechanism (microaggregation, k = 5), never the "
             f"confidential {', '.join(confidential)}; groups it rebuilds: {risk.groups_note}. Success = share of "
             f"the {risk.n_records} people linked to their own released record in one run (MDAV is deterministic: "
             "more runs on this release would repeat the links of the deterministic intruders, not add evidence), "
             f"with its {risk.results[0].confidence:.0%} Clopper-Pearson interval beside the claimed bound 1/5 = "
             f"{risk.bound:.2f}; a success whose interval lies entirely above the bound is marked {FLAG_MARK} (red). "
             + above)
    rep.table([dict(row, success=flag(row["success"], r.lower_exceeds_bound, limit=f"{r.bound:.4f}"))
               for row, r in zip(risk.rows(), risk.results)])
    rep.text(None, "What each intruder knows and does: " + "; ".join(f"{r.rule}: {r.knows}" for r in risk.results)
             + ".")
    demo_survey(out_dir, rep, args.records, args.seed, quiet=args.quiet)
    path = rep.write(out_dir)
    print(f"report written to {path}", file=sys.stderr)
    return 0


def cmd_report(args) -> int:
    """``probanon report ORIGINAL RELEASED``: the internal and external risk-utility reports
    (:mod:`probanon.release_report`)."""
    from .release_report import assess, report_contents

    from .attacks.setting import MECHANISMS

    column_wise = args.probabilistic or MECHANISMS.get(args.mechanism) == "column-wise"
    swapped = column_list(args.confidential) if column_wise else []  # may be swapped: not checked
    original, released, X, _, numeric, categorical, weights = _matched_keys(args, changed=swapped)
    compared = []
    for entry in args.compare or []:
        label, _, rest = entry.partition("=")
        path, _, link = rest.partition(",")
        if not label or not path:
            raise InputError(f"--compare {entry!r}: expected LABEL=RELEASED[,LINK]")
        other = read_table(path)
        other = other.iloc[align(original, other, numeric + categorical, link=link or None,
                                 by_position=not link, changed=swapped)].reset_index(drop=True)
        Y = quasi_identifiers(other, numeric)[0]
        check_loss_of_match(X, Y, weights, False, f"--compare {label}")
        compared.append(assess(label, X, Y, other, numeric + categorical, args.k, weights))
    out = Path(args.output_dir)
    confidential = column_list(args.confidential)
    if args.mechanism is not None:
        from .attacks.setting import check_mechanism

        check_mechanism(args.mechanism)
    args.outputs.write(report_contents(out, original, released, numeric, categorical, args.k, args.method, weights,
                                       compared, args.probabilistic, args.mechanism, confidential,
                                       dataset=Path(args.released).name))
    print(f"reports written to {out / 'internal' / 'index.html'} (for the office) and "
          f"{out / 'external' / 'index.html'} (publishable)", file=sys.stderr)
    return 0


def _recipe_reports(run, release) -> dict:
    """The reports of a recipe's release (``report = DIR``), computed before anything is written,
    so that they are written with the release, all or nothing."""
    from .release_report import report_contents

    original = read_table(run.input)
    order = release.link.sort_values("original_row")["released_row"].to_numpy() - 1
    released = release.data.iloc[order].reset_index(drop=True)
    categorical = column_list(getattr(run, "nominal", None)) + list(ordinal_keys(getattr(run, "ordinal", None)))
    numeric = [c for c in column_list(run.keys) if c not in categorical]
    weights = weights_of(original, getattr(run, "weights", None), f"{run.input}: ")
    mechanism = "microaggregation" if run.command == "microaggregate" else run.method
    return report_contents(run.report, original, released, numeric, categorical, run.k,
                           f"{run.command} --method {run.method}, k = {run.k}", weights,
                           probabilistic=run.command == "swap", mechanism=mechanism,
                           confidential=column_list(getattr(run, "confidential", None)),
                           dataset=Path(run.output).name, variables=release.actions)


def cmd_release(args) -> int:
    """``probanon release RECIPE.toml`` (:mod:`probanon.recipe`): the recipe's command, run with
    its outputs and the resolved recipe written together; a seed is drawn when the recipe has
    none and recorded, so that the release can be repeated."""
    import secrets

    from ._validation import MAX_SEED
    from .cliargs import prepare_outputs
    from .recipe import parse_recipe, read_recipe

    run, recipe_path, text = parse_recipe(args.recipe, args.force)
    made_by = read_recipe(args.recipe).get("probanon_version")
    if made_by not in (None, __version__):
        print(f"probanon: warning: {args.recipe} was resolved by probanon {made_by}, this is {__version__}: the release "
              "may differ from the one it made", file=sys.stderr)
    if getattr(run, "seed", None) is None:
        run.seed = secrets.randbelow(MAX_SEED + 1)
    run.quiet = args.quiet
    run.outputs = prepare_outputs(run)
    run.outputs.add(recipe_path)
    run.extra_outputs = {recipe_path: text()}
    if run.report:
        run.outputs.add_folder(check_output_folder(run.report, ("internal/index.html", "external/index.html"),
                                                   args.force))
        run.report_contents = lambda release: _recipe_reports(run, release)
    with csv_options(getattr(run, "sep", None), getattr(run, "encoding", None)):
        code = run.func(run)
    print(f"resolved recipe written to {recipe_path} (it holds the seed: keep it private, with the link file)",
          file=sys.stderr)
    return code


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="probanon", description="Probabilistic anonymity for microdata.", epilog=example(
        "probanon risk census.csv --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX       # the original's risk",
        "probanon microaggregate census.csv -o census_k5.csv -k 5 --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX \\",
        "    --confidential PTOTVAL,TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL --link census_k5.link.csv",
        "# every command's --help ends with an example: probanon microaggregate --help"))
    p.add_argument("--version", action="version", version=f"probanon {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    m = sub.add_parser("microaggregate", help="replace quasi-identifiers by group centroids", epilog=example(
        "# census.csv: the CASC census file (1,080 records, 13 numeric columns)",
        "probanon microaggregate census.csv -o census_k5.csv -k 5 --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX \\",
        "    --confidential PTOTVAL,TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL \\",
        "    --function census_k5.json --link census_k5.link.csv --seed 7"))
    add_input(m, "input", help="the table to release: CSV, .csv.gz, Parquet, SPSS .sav or Stata .dta (a folder of "
                               "Parquet files with --workers or --scheduler)")
    add_output(m, "-o", "--output", required=True, table=True,
               help="the release, in the format of its ending (.csv, .csv.gz, .parquet, .sav, .dta)")
    m.add_argument("-k", type=positive_int, required=True,
                   help="minimum group size: an intruder who links by the keys alone picks a person's row with "
                        "probability <= 1/k; linking through the confidential columns (released per record) is not "
                        "bounded ('probanon audit', 'probanon attack')")
    m.add_argument("--method", choices=sorted(METHODS), default="mdav",
                   help="mdav (default), vmdav (V-MDAV: groups of k..2k-1 records), pcl (k-anonymous Lloyd, paper 3: "
                        "lower information loss), ranking (individual ranking: each column alone, NOT k-anonymous)")
    add_release_options(m, keys_help="quasi-identifier columns (replaced by their group mean)")
    m.add_argument("--nominal", metavar="COLS",
                   help="mdav, vmdav, pcl: comma-separated nominal keys (categories, text or codes): distance 1 between "
                        "different categories (Gower-type, as sdcMicro's microaggrGower), each group's mode released")
    m.add_argument("--ordinal", metavar="COLS",
                   help="mdav, vmdav, pcl: comma-separated ordinal keys, NAME (levels in numeric, else text order) or "
                        "NAME=L1<L2<... (levels in that order): distance "
                        "on z-scored ranks, each group's median level released")
    m.add_argument("--missing", choices=("raise", "pattern"), default="raise",
                   help="missing key values: raise (default) refuses them; pattern (mdav, vmdav, pcl) groups the records "
                        "by the keys they lack, merges patterns of fewer than k records into the nearest, keeps a "
                        "missing value missing and suppresses a key some member of a group lacks (no --function)")
    add_strata_options(m, "mdav, vmdav, pcl: the records are microaggregated")
    from .distributed.cluster import add_cluster_options

    add_cluster_options(m, "the blocks of a blocked fit (mdav, vmdav, pcl; see --block-size)")
    m.add_argument("--weights", metavar="COL",
                   help="sampling weights (numbers > 0): each group's weighted mean is released, which keeps the "
                        "weighted totals; information loss and moments are weighted; the column is released "
                        "unchanged (or --drop it)")
    add_output(m, "--function", metavar="FUNC.json", help="also write the fitted, publishable function")
    m.add_argument("--seed", type=seed, default=None,
                   help="seed of the record order and of PCL's local search (default: fresh entropy; a "
                        "given seed makes the release reproducible: keep it secret, it undoes the order)")
    add_decimals_option(m, "as many as the input's values have: for a CSV file as written, e.g. 2 for 12.50")
    m.add_argument("--gamma", type=float, default=0.2, help="V-MDAV extension parameter")
    m.add_argument("--init", choices=("auto", "mdav", "pca"), default="auto",
                   help="PCL start: MDAV (the paper's), principal-direction bisection, or auto "
                        "(both for groups of >= 256 records, keeping the better; default)")
    m.add_argument("--split-duplicates", action="store_true",
                   help="MDAV: classical MDAV (as sdcMicro), which may put identical key tuples in different groups; "
                        "such a fit publishes no function (--function is refused). Default: identical tuples share "
                        "a group, so the published function reproduces the release")
    m.add_argument("--block-size", type=int, default=None, metavar="B",
                   help="mdav, vmdav, pcl: split the records along principal axes into blocks of k..B records "
                        "(B >= 2k) microaggregated separately, in parallel; 0: never (default: no blocks below "
                        "200,000 records, blocks of at most 500,000 above, 32,000 for pcl); the output says how the data "
                        "were blocked")
    m.add_argument("--quiet", action="store_true", help="no progress bar")
    m.set_defaults(func=cmd_microaggregate)

    a = sub.add_parser("apply", help="apply a published function to records", epilog=example(
        "# census_k5.json: written by 'probanon microaggregate ... --function census_k5.json'",
        "probanon apply census_k5.json census.csv -o applied.csv \\",
        "    --confidential PTOTVAL,TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL"))
    add_input(a, "function", metavar="FUNC.json", table=False,
              help="the published function (microaggregate --function, or a survey specification's)")
    add_input(a, "input", help="the records whose keys the function replaces (CSV, Parquet, SPSS, Stata)")
    add_output(a, "-o", "--output", required=True, table=True, help="the release (format by its ending)")
    add_release_options(a, keys_help="quasi-identifier columns, if the function does not name them")
    a.add_argument("--seed", type=seed, default=None, help="seed of the record order (default: fresh entropy)")
    add_decimals_option(a, "as the function's fit rounded them, which the function records")
    add_chunk_options(a)
    a.set_defaults(func=cmd_apply)

    e = sub.add_parser("evaluate", help="utility and anonymity of a release (exit 1 when -k fails)", epilog=example(
        "probanon evaluate census.csv census_k5.csv -k 5 --risk \\",
        "    --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX --link census_k5.link.csv"))
    add_input(e, "original", help="the original table")
    add_input(e, "released", help="its release (records matched by --link, --id or --by-position)")
    e.add_argument("--keys", "--columns", dest="keys", metavar="COLS", required=True,
                   help="comma-separated quasi-identifier columns (numeric)")
    e.add_argument("--missing", choices=("raise", "pattern"), default="raise",
                   help="pattern: keys may have missing values (a release of microaggregate --missing pattern); the "
                        "information loss counts a suppressed value as replaced by the mean")
    e.add_argument("--categorical-keys", metavar="COLS",
                   help="quasi-identifiers compared as categories only (text or codes; missing values match any "
                        "category, as in sdcMicro): counted in k achieved and the frequency risk, not in the "
                        "information loss")
    e.add_argument("--weights", metavar="COL",
                   help="sampling weights (a column of the original, numbers > 0): weighted information loss and "
                        "moments; population frequencies F_k and the individual risk estimated with them (default: "
                        "the file is the population)")
    add_match_options(e)
    e.add_argument("-k", type=positive_int, help="required k: exit 1 when the release's k achieved is smaller")
    e.add_argument("--json", action="store_true", help="one JSON object on stdout")
    e.add_argument("--risk", action="store_true",
                   help="also disclosure risk on the quasi-identifiers: record linkage and interval disclosure")
    e.set_defaults(func=cmd_evaluate)

    k = sub.add_parser("risk", help="risk profile of one file: sample uniques, k-anonymity violations, individual and "
                                    "global risk (as sdcMicro's print(sdc, \"risk\"))", epilog=example(
        "# adult.csv: UCI Adult (48,842 records); fnlwgt: its census weights",
        "probanon risk adult.csv --keys age --categorical-keys sex,race,workclass,education --weights fnlwgt",
        "probanon risk adult.csv --categorical-keys sex,race,occupation --threshold 0.2 -o adult_risk.csv"))
    add_input(k, "input", help="the original file (CSV, Parquet, SPSS, Stata)")
    k.add_argument("--keys", metavar="COLS",
                   help="comma-separated numeric quasi-identifiers (checked to be numbers; compared by exact value)")
    k.add_argument("--categorical-keys", metavar="COLS",
                   help="comma-separated quasi-identifiers compared as categories (text or codes)")
    k.add_argument("--weights", metavar="COL",
                   help="sampling weights (numbers > 0): the population frequency F_k of a record's keys is the sum "
                        "of the weights of the records sharing them (default: the file is the population)")
    k.add_argument("--missing", choices=("raise", "pattern"), default="raise",
                   help="a missing value of a numeric key: raise (default) refuses it, naming its line; pattern lets "
                        "it match any value, as a missing categorical value always does (sdcMicro's rule)")
    k.add_argument("--threshold", type=_risk_level, default=None, metavar="R",
                   help="count the records whose individual risk is above R, in (0, 1] (default: sdcMicro's level "
                        "max(0.1, median + 2 MAD) of print(sdc, \"risk\"))")
    add_output(k, "-o", "--output", table=True, metavar="FILE",
               help="also write every record's risk: record (from 1), the keys, fk, Fk, risk, above_level")
    k.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the summary")
    k.set_defaults(func=cmd_risk)

    rr = sub.add_parser("report", help="internal and publishable risk-utility reports of a release (HTML)",
                        epilog=example(
        "probanon report census.csv census_k5.csv -k 5 --method \"MDAV, k = 5\" \\",
        "    --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX --link census_k5.link.csv -o census_k5_report"))
    add_input(rr, "original", help="the original table")
    add_input(rr, "released", help="its release (records matched by --link, --id or --by-position)")
    rr.add_argument("--keys", metavar="COLS", help="comma-separated numeric quasi-identifiers")
    rr.add_argument("--categorical-keys", metavar="COLS", help="quasi-identifiers compared as categories only")
    rr.add_argument("--weights", metavar="COL", help="sampling weights (a column of the original)")
    rr.add_argument("-k", type=positive_int, default=2, help="the k the release must meet (default 2)")
    rr.add_argument("--method", default="method not stated",
                    help="the method and its parameters, as the reports state them (e.g. 'MDAV, k = 5')")
    rr.add_argument("--confidential", metavar="COLS",
                    help="comma-separated confidential columns the release attaches to each record (for the attack "
                         "suite)")
    rr.add_argument("--mechanism", metavar="NAME",
                    help="how the release was made (microaggregation, survey, mdav-id, mdav-swap, mdav-swap-informed, "
                         "ir-swap): the internal report adds the attack suite of that mechanism")
    rr.add_argument("--probabilistic", action="store_true",
                    help="the release is probabilistically k-anonymous (swap: values swapped within groups of k), "
                         "so its released tuples need not be shared by k records")
    rr.add_argument("--compare", action="append", metavar="LABEL=RELEASED[,LINK]",
                    help="another release of the same original for the risk-utility map (repeatable; matched by "
                         "its link file, or by position)")
    add_match_options(rr)
    add_output(rr, "-o", "--output-dir", required=True, metavar="DIR",
               folder=lambda args: ("internal/index.html", "external/index.html"),
               help="folder of the reports: DIR/internal/index.html (for the office) and DIR/external/index.html "
                    "(publishable); created if absent, in a folder that exists")
    rr.set_defaults(func=cmd_report)

    r = sub.add_parser("release", help="a whole release from a TOML recipe; writes the resolved recipe beside it",
                       epilog=example(
        "# census.toml, beside census.csv:",
        "#   command = \"microaggregate\"",
        "#   input = \"census.csv\"",
        "#   output = \"census_k5.csv\"",
        "#   report = \"census_k5_report\"",
        "#   [options]",
        "#   k = 5",
        "#   keys = [\"AFNLWGT\", \"AGI\", \"EMCONTRB\", \"FEDTAX\", \"STATETAX\"]",
        "#   confidential = [\"PTOTVAL\", \"TAXINC\", \"POTHVAL\", \"INTVAL\", \"PEARNVAL\", \"FICA\",",
        "#                   \"WSALVAL\", \"ERNVAL\"]",
        "#   link = \"census_k5.link.csv\"",
        "probanon release census.toml",
        "probanon release census_k5.csv.recipe.toml --force    # the resolved recipe: the same release, byte for byte"))
    add_input(r, "recipe", table=False, help="the recipe (see probanon.recipe): command, input, output, [options]")
    r.add_argument("--force", action="store_true", help="overwrite existing output files (an input is never overwritten)")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_release)

    d = sub.add_parser("demo", help="end-to-end run on built-in synthetic data, HTML report", epilog=example(
        "probanon demo --output-dir report      # then open report/index.html"))
    add_output(d, "--output-dir", default="report", folder=lambda args: DEMO_FILES, metavar="DIR",
               help="folder of the report and its files (default: report)")
    d.add_argument("--records", type=positive_int, default=2000, help="synthetic records (default 2000)")
    d.add_argument("--seed", type=seed, default=2026, help="seed of the synthetic data and the methods (default 2026)")
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.set_defaults(func=cmd_demo)

    survey_cli.add_parser(sub)
    reproduce_cli.add_parser(sub)
    swapping_cli.add_parser(sub)
    diversity_cli.add_parser(sub)
    km_cli.add_parser(sub)
    attacks_cli.add_parser(sub)
    service_cli.add_parser(sub)
    datasets_cli.add_parser(sub)
    return p


def main(argv=None) -> int:
    """Run ``probanon``; ``argv=None``: this process is the command (its arguments from
    ``sys.argv``), which also announces numba's first compilation (``progress.announce_compilation``)."""
    if argv is None:
        announce_compilation()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a usage error (one line, see Parser.error), --help or --version
        return exc.code if isinstance(exc.code, int) else 2
    try:
        try:
            args.outputs = prepare_outputs(args)  # every output checked before any work
            with csv_options(getattr(args, "sep", None), getattr(args, "encoding", None)):
                return args.func(args)
        finally:
            sys.stdout.flush()
    except ProbanonError as exc:
        print(f"probanon: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout went away (| head): end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("probanon: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

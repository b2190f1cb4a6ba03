"""Arguments every ``probanon`` subcommand shares, declared once.

A subcommand declares its files with :func:`add_input` and :func:`add_output`; ``probanon``'s
``main`` then checks every output against every input (:class:`probanon.outputs.Outputs`) before
the command does any work, and hands the command ``args.outputs`` to write with. Tables read by
a command take ``--sep`` and ``--encoding``; outputs take ``--force``; release commands take the
variable roles and the record-order options (:func:`add_release_options`).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from .._validation import MAX_SEED
from ..attacks.audit import audit as run_audit, contradictions
from ..distributed.cluster import ClusterError, dask_client, describe
from ..errors import InputError
from ..outputs import Outputs, check_output_folder
from ..release import Promise, column_list
from .parser import Parser, example  # noqa: F401  (re-exported: a command module takes every shared option from here)


@dataclass(frozen=True)
class _Output:
    dest: str
    table: bool = False
    derived: tuple = ()  # functions path -> another output path written beside it
    folder: Callable | None = None  # for a folder: args -> names of the files written into it


def _register(p, key: str, value) -> None:
    p.set_defaults(**{key: (*(p.get_default(key) or ()), value)})


def add_input(p, name: str, *, table: bool = True, **kwargs):
    """A file the command reads (positional ``name`` or an option); ``table``: a CSV/Parquet
    table, so ``--sep`` and ``--encoding`` apply."""
    action = p.add_argument(name, **kwargs)
    _register(p, "_inputs", action.dest)
    if table and not p.get_default("_csv_options"):
        p.set_defaults(_csv_options=True)
        p.add_argument("--sep", default=None, metavar="CHAR",
                       help="CSV separator (default ','); when no numeric column is found the message "
                            "names the separator the file seems to use")
        p.add_argument("--encoding", default=None, help="CSV text encoding (default utf-8), e.g. latin-1")
    return action


def add_output(p, *flags, table: bool = False, derived=(), folder: Callable | None = None, **kwargs):
    """A file (or, with ``folder``, a folder) the command writes; adds ``--force`` once."""
    action = p.add_argument(*flags, **kwargs)
    _register(p, "_outputs", _Output(action.dest, table, tuple(derived), folder))
    if p.get_default("force") is None:
        p.add_argument("--force", action="store_true", default=False,
                       help="overwrite existing output files (an input is never overwritten)")
    return action


def add_release_options(p, keys_help: str = "quasi-identifier columns (masked)",
                        confidential_help: str = "confidential columns (kept unchanged)", prepare: bool = True) -> None:
    """Variable roles (every column must have one), record order and the private link file;
    ``prepare``: the ``--prepare`` recoding read by :func:`read_input`."""
    if prepare:
        add_input(p, "--prepare", metavar="FILE.json", table=False,
                  help="recode the input as read before anything else (a JSON list of steps as --recode's, plus "
                       "{\"kind\": \"missing\", \"column\": C, \"values\": [...]} and {\"kind\": \"combine\", "
                       "\"column\": NEW, \"columns\": [...]}: a stratum made of columns); the file itself is never "
                       "changed. The workbench's data step writes it")
    p.add_argument("--keys", "--columns", dest="keys", metavar="COLS", type=column_names, help=f"comma-separated {keys_help}")
    p.add_argument("--confidential", metavar="COLS", type=column_names, help=f"comma-separated {confidential_help}")
    p.add_argument("--drop", metavar="COLS", type=column_names, help="comma-separated columns removed from the release: direct identifiers, or any column "
                        "not to publish")
    p.add_argument("--keep-other", action="store_true",
                   help="publish the columns without a role unchanged (default: refuse to run, listing them)")
    p.add_argument("--keep-order", action="store_true",
                   help="keep the input's record order (default: a random order, seeded by --seed)")
    add_output(p, "--link", metavar="FILE", table=True,
               help="also write the private link file original_row -> released_row (never publish it)")
    p.add_argument("--accept-risk", action="store_true",
                   help="publish even when the pre-release audit finds a key determined by confidential columns "
                        "(or the reverse), which voids the guarantee (see 'probanon audit')")


def read_input(args) -> pd.DataFrame:
    """The table of a release command: ``args.input`` read, then its ``--prepare`` recoding applied
    (in memory: the file is never changed)."""
    from ..categorical.recoding import recode, steps_from_file
    from ..data import read_table
    from ..errors import ParameterError

    frame = read_table(args.input)
    if getattr(args, "prepare", None):
        try:
            frame, _ = recode(frame, steps_from_file(args.prepare, "--prepare"))
        except ParameterError as exc:
            raise InputError(f"--prepare: {exc}") from None
        except InputError as exc:
            raise InputError(f"--prepare: {exc}" if not str(exc).startswith("--prepare") else str(exc)) from None
    return frame


def no_prepare(args, where: str) -> None:
    """Refuse ``--prepare`` where the input is not read whole (``where``: a directory, chunks)."""
    if getattr(args, "prepare", None):
        raise InputError(f"--prepare: not available for {where}; prepare the files first")


def add_strata_options(p, within: str) -> None:
    """``--strata`` and ``--merge-small-strata`` (:mod:`probanon.microagg.strata`); ``within``:
    what the command does within each stratum."""
    p.add_argument("--strata", metavar="COLS", type=column_names,
                   help=f"comma-separated strata columns: {within} within each stratum (no group mixes strata); the "
                        "strata columns are released unchanged")
    p.add_argument("--merge-small-strata", action="store_true",
                   help="merge a stratum of fewer than k records into its neighbour (the next in sorted order) and "
                        "recode the merged values in the release, as the output says (default: refuse, naming it)")


def add_household_option(p, together: str) -> None:
    """``--household COLUMN``: the household id (role ``household``, released renumbered);
    ``together``: what the command does with a household's members."""
    p.add_argument("--household", metavar="COLUMN",
                   help=f"the household-id column: {together}; released renumbered 1, 2, ... (drop it with --drop); "
                        "a household never straddles a stratum")


def add_match_options(p) -> None:
    """How the records of an original and its release match: ``--link``, ``--id`` or ``--by-position``
    (see :func:`probanon.release.align`)."""
    match = p.add_mutually_exclusive_group()
    add_input(match, "--link", metavar="FILE", help="link file written by the release command (--link)")
    match.add_argument("--id", metavar="COLUMN", help="a column identifying the records in both files")
    match.add_argument("--by-position", action="store_true",
                       help="row i of one file is row i of the other (checked: the non-key columns must agree)")


def release_roles(args, frame, keys=None, audit: bool = True, strata=None) -> dict:
    """The role of every column (``--keys`` or ``keys``, ``--confidential``, ``--drop``,
    ``--keep-other``, ``--strata`` or ``strata``), then the pre-release audit (:func:`probanon.attacks.audit.audit`) of the
    keys against the columns released per record (confidential and passed-through ones): a finding
    stops the command unless ``--accept-risk`` is given, when it is printed as a warning."""
    from ..labelled import check_names
    from ..release import assign_roles

    roles = assign_roles(frame.columns, keys if keys is not None else args.keys, args.confidential, args.drop,
                         args.keep_other, weights=getattr(args, "weights", None),
                         strata=strata if strata is not None else getattr(args, "strata", None),
                         household=getattr(args, "household", None))
    if getattr(args, "output", None) is not None:  # an SPSS/Stata output must hold the names: before any work
        check_names(args.output, [c for c, role in roles.items() if role != "drop"])
    if audit:
        pre_release_audit(args, frame, roles)
    return roles


def pre_release_audit(args, frame, roles: dict) -> None:
    """The pre-release audit (:func:`probanon.attacks.audit.audit`) of ``frame``'s keys against
    its columns released per record (:data:`PER_RECORD`; ``roles``: {column of ``frame``: role},
    as :func:`release_roles` gives them), whatever their type: a finding stops the command unless
    ``--accept-risk``, when it is printed as a warning (:func:`audit_verdict`); a column it cannot
    read is said in a warning once the release is written (:func:`say_unaudited`). Categorical keys (``--nominal``, ``--ordinal``) are read by their
    values, and so is every text key (whatever the command, it is released as a group's level); a
    column that partly pins one is counted on the release itself, after the fit
    (:func:`check_categorical_keys`: the records whose masked value it gives back)."""
    from ..release import columns_with

    published = [c for c, role in roles.items() if role in PER_RECORD]
    keys = columns_with(roles, "key")
    nominal = [c for c in column_list(getattr(args, "nominal", None)) if c in frame.columns]
    text = [c for c in keys if not pd.api.types.is_numeric_dtype(frame[c])]  # released by a group's level, whatever the command
    categorical = nominal + list(ordinal_keys(getattr(args, "ordinal", None))) + text
    result = run_audit(frame, keys, published, missing=getattr(args, "missing", "raise") == "pattern",
                       nominal=nominal, masked_by_level=[c for c in categorical if c in frame.columns])
    args.audit_unread = result.unaudited()  # said once the release is written (:func:`say_unaudited`)
    audit_verdict(args, result, say_unread=False)


def say_unaudited(args) -> None:
    """After a release is written: a warning naming the released columns the pre-release audit
    could not read, and why (:attr:`probanon.attacks.audit.AuditResult.not_audited`); nothing when
    it read them all. Said after the work, so that an input error stays the command's one line."""
    import warnings

    from ..errors import ProbanonWarning

    if getattr(args, "audit_unread", ""):
        warnings.warn(f"the pre-release audit could not read every released column: {args.audit_unread}",
                      ProbanonWarning, stacklevel=2)


#: the roles of the columns released per record, unchanged or recoded (strata)
PER_RECORD = ("confidential", "other", "weight", "stratum")


def check_categorical_keys(args, original, released, roles: dict, categorical, where: str = "") -> None:
    """Before a release is written: its ``categorical`` keys (replaced by a group's mode or median
    level) against every column released per record, :func:`probanon.attacks.audit.contradictions`
    (``original`` and ``released``: the records row by row, released holding the keys' released
    values and the columns as released). A release that gives back masked key values is refused
    as the audit refuses (:func:`audit_verdict`; ``where``: on what, e.g. a sample)."""

    per_record = [c for c, role in roles.items() if role in PER_RECORD]
    if not categorical or not per_record:
        return
    result = contradictions(original, released, list(categorical), per_record)
    if not result.passed:
        audit_verdict(args, result, where)


def audit_verdict(args, result, where: str = "", say_unread: bool = True) -> None:
    """A pre-release audit with a finding (``where``: on what, e.g. a file): an
    :class:`InputError` unless ``--accept-risk``, then a warning; with ``say_unread``, a warning
    naming the columns it could not read (:func:`probanon.attacks.audit.verdict`)."""
    from ..attacks.audit import verdict

    verdict(result, args.accept_risk, where, say_unread=say_unread)


def seed(text: str) -> int:
    """argparse type of ``--seed``: an integer in 0..2**63 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, got {text!r}") from None
    if not 0 <= value <= MAX_SEED:
        raise argparse.ArgumentTypeError(f"the seed must be between 0 and 2**63 - 1, got {value}")
    return value


def ordinal_keys(text) -> dict:
    """``--ordinal``: comma-separated ordinal keys, each NAME (levels in numeric, else text order)
    or NAME=L1<L2<... (its levels in that order; a level that reads as a number is one), as
    {name: levels or None}."""
    keys = {}
    for item in (text or "").split(","):
        name, sep, levels = item.strip().partition("=")
        if not name.strip():
            continue
        order = None
        if sep:
            order = [_number_or_text(v.strip()) for v in levels.split("<")]
            if len(order) < 2 or any(v == "" for v in order) or len(set(order)) != len(order):
                raise InputError(f"--ordinal: give the levels of {name.strip()!r} as NAME=L1<L2<... (two or more, "
                                 f"distinct), got {item.strip()!r}")
        keys[name.strip()] = order
    return keys


def _number_or_text(text: str):
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def column_names(text: str) -> list[str]:
    """argparse type of a comma-separated list of columns (``--keys A,B``): the list, split once
    here; the library takes lists."""
    return [c.strip() for c in text.split(",") if c.strip()]


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def number_in(what: str, low: float = -np.inf, high: float = np.inf, *, open_low: bool = False,
              open_high: bool = False, integer: bool = False) -> Callable[[str], float]:
    """An argparse type: a number (an integer with ``integer``) between ``low`` and ``high``
    (excluded when ``open_low`` / ``open_high``); ``what`` names it in the one-line error
    ("expected WHAT, got ...")."""
    def parse(text: str):
        try:
            value = int(text) if integer else float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
        above = value > low if open_low else value >= low
        below = value < high if open_high else value <= high
        if not (np.isfinite(value) and above and below):
            raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}")
        return value

    return parse


def decimals(text: str) -> int:
    """argparse type of ``--decimals``: an integer in 0..15."""
    from ..precision import MAX_DECIMALS

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of decimals, got {text!r}") from None
    if not 0 <= value <= MAX_DECIMALS:
        raise argparse.ArgumentTypeError(f"the number of decimals must be between 0 and {MAX_DECIMALS}, got {value}")
    return value


def add_decimals_option(p, default: str) -> None:
    """``--decimals N``: the released group means rounded to N decimals (:mod:`probanon.precision`);
    ``default`` says what happens without it."""
    p.add_argument("--decimals", type=decimals, default=None, metavar="N",
                   help=f"round the released group means of the numeric keys to N decimals (default: {default}); "
                        "identical means stay identical, so the groups stay k-anonymous")


def prepare_outputs(args) -> Outputs:
    """Check every output of the parsed command before any work (see the module docstring)."""
    inputs = []
    for dest in getattr(args, "_inputs", ()):
        value = getattr(args, dest, None)
        inputs.extend(value if isinstance(value, list) else [value])
    force = bool(getattr(args, "force", False))
    outputs = Outputs(inputs=inputs, force=force)
    for spec in getattr(args, "_outputs", ()):
        value = getattr(args, spec.dest, None)
        if value is None:
            continue
        if spec.folder is not None:
            outputs.add_folder(check_output_folder(value, spec.folder(args), force))
            continue
        outputs.add(value, table=spec.table)
        for derive in spec.derived:
            outputs.add(derive(value))
    return outputs


def write_release(args, release, extra: dict | None = None, groups=None, original=None) -> None:
    """Write a release (and its link file with ``--link``, and ``extra`` outputs) through the
    command's checked outputs, then print what happened to every column and the attribute
    disclosure of each confidential column (:func:`attribute_lines`; ``groups`` the release's
    groups, default the combinations of its promise's columns; ``original`` the input records). The release's promise
    (:class:`probanon.release.Promise`) is checked first: nothing is written if what would be
    released breaks it."""
    if release.promise is not None:
        release.promise.check(release.data)
    contents = {args.output: release.data, **(extra or {}), **getattr(args, "extra_outputs", {})}
    if getattr(args, "report_contents", None) is not None:  # a recipe's reports: written with the release
        contents.update(args.report_contents(release))
    if args.link:
        contents[args.link] = release.link
    args.outputs.write(contents)
    order = "input order kept" if args.keep_order else "records in random order"
    print(f"wrote {args.output} ({len(release.data)} records, {order}"
          + (f"; private link file {args.link}: never publish it" if args.link else "") + "); columns:\n"
          + release.summary(), file=sys.stderr)
    lines = attribute_lines(release, groups, original)
    if lines:
        print("attribute disclosure of the confidential columns (measured on the release's groups; bounded only where "
              "the mechanism states a bound):\n"
              + "\n".join(f"  {line}" for line in lines), file=sys.stderr)
    say_unaudited(args)


def attribute_lines(release, groups=None, original=None) -> list[str]:
    """One headline per confidential column of ``release`` (its columns described as
    confidential) and the records its confidential values single out
    (:func:`probanon.metrics.attribute.release_disclosure`): each person's value (from
    ``original``, the input, matched through the release's link) against their group's released
    values; a line saying why when there are no groups to measure by."""
    from ..metrics.attribute import release_disclosure

    confidential = [c for c, a in release.actions.items() if a.startswith("confidential") and c in release.data]
    if not confidential:
        return []
    if groups is None and release.promise is not None and len(release.promise.columns) == 1:
        groups = release.data[list(release.promise.columns[0])]
    if groups is None:
        return ["not measured: the release has no groups of records to measure by (a key masked alone, as individual "
                "ranking does, makes none); 'probanon attack --confidential ...' measures what the values give away"]
    aligned = None
    if original is not None:
        released_row = release.link["released_row"].to_numpy() - 1
        original_row = release.link["original_row"].to_numpy() - 1
        aligned = original.iloc[original_row[np.argsort(released_row)]].reset_index(drop=True)
    return release_disclosure(release.data, confidential, groups, original=aligned).lines()


#: the width summaries wrap their texts at
SUMMARY_WIDTH = 110


def summary_lines(rows) -> str:
    """A readable summary: one ``label:  text`` line per (label, text) row, the texts aligned and
    wrapped at :data:`SUMMARY_WIDTH` (a row with an empty label continues the one above); what
    commands print without ``--json``."""
    import textwrap

    width = max((len(label) for label, _ in rows if label), default=0) + 2
    lines = []
    for label, text in rows:
        wrapped = textwrap.wrap(text, max(40, SUMMARY_WIDTH - width), break_on_hyphens=False) or [""]
        lines += [f"{label + ':' if label and i == 0 else '':<{width}}{part}" for i, part in enumerate(wrapped)]
    return "\n".join(lines)


def promise_of(k: int, keys: list, roles: dict, strata, mechanism: str, per_column: bool = False) -> Promise:
    """The k-anonymity a microaggregation release promises: on its keys and released strata
    columns together, or on each key alone (individual ranking)."""
    released_strata = [c for c in column_list(strata) if roles.get(c) != "drop"]
    columns = tuple((c,) for c in keys) if per_column else (tuple(keys + released_strata),)
    return Promise(int(k), columns, mechanism)


def households_kept(promise: Promise | None, household, roles: dict, records: pd.DataFrame, *, k=None, groups=None,
                    accept_risk: bool = False) -> Promise | None:
    """With ``--household`` (issue 43.5): ``promise`` counted in distinct households. When the
    household column is published, the returned promise counts its (renumbered) ids on what is
    about to be written; when it is dropped, the count is checked here on ``records`` (the
    released values beside the original household ids, in input order) and the release keeps
    its promise on records. A published household id gives away each household's size: the
    households whose size fewer than k households of their group share (``groups``: label arrays,
    default the promise's combinations; ``k`` default the promise's) stop the command unless
    ``accept_risk``, then a warning (:func:`probanon.households.sizes_singled_out`)."""
    from dataclasses import replace

    if household is None:
        return promise
    if roles.get(household) != "drop":
        _household_sizes(records, household, promise, k, groups, accept_risk)
    if promise is None:
        return promise
    counted = replace(promise, household=household)
    if roles.get(household) == "drop":
        counted.check(records)
        return promise
    return counted


def _household_sizes(records, household, promise, k, groups, accept_risk: bool) -> None:
    """:func:`households_kept`'s check of the household sizes a published household id gives away."""
    import warnings

    from ..errors import ProbanonWarning
    from ..households import sizes_singled_out

    k = promise.k if k is None else k
    if groups is None:
        groups = [records.groupby(list(c), dropna=False, sort=False).ngroup().to_numpy() for c in promise.columns]
    households, members = sizes_singled_out(records[household], groups, k)
    if not households:
        return
    text = (f"the released household ids ({household}) give away each household's size: {households:,} households "
            f"({members:,} records) share their size with fewer than {k} households of their group; release within "
            "household sizes (a column of sizes in --strata), or --drop the household id")
    if not accept_risk:
        raise InputError(text + " (or --accept-risk)")
    warnings.warn(text, ProbanonWarning, stacklevel=2)


def function_promise(function, keys: list, roles: dict, strata) -> Promise:
    """The promise of a published function applied to a file: the k it was fitted with (its
    smallest declared cell where the function does not state k), on the keys, released strata
    and the ``cell`` column written beside them (two cells may release the same values: the cell
    number still tells them apart)."""
    sizes = function.sizes if function.kind != "intervals" else [min(s) for s in function.sizes]
    k = function.meta.get("k", int(np.min(sizes)))
    name = f"the published function ({function.meta.get('method', function.kind)}, k = {k})"
    if function.kind == "intervals":
        return promise_of(k, keys, roles, strata, name, per_column=True)
    return promise_of(k, keys + ["cell"], roles, strata, name)



def rounded(values: np.ndarray, digits) -> np.ndarray:
    """Released key values (records x numeric keys), column j rounded to ``digits[j]``
    decimals (None: as they are; :func:`probanon.precision.round_columns`)."""
    from ..precision import round_columns

    return round_columns(values, digits) if values.shape[1] else values



CHUNK_SIZE = 1_000_000


def add_chunk_options(p) -> None:
    """``--chunk-size`` and ``--quiet`` of the commands that apply a function to a file."""
    p.add_argument("--chunk-size", type=positive_int, default=CHUNK_SIZE, metavar="ROWS",
                   help=f"a file of more records is read, checked and released chunk by chunk of ROWS records "
                        f"with bounded memory (default {CHUNK_SIZE:,}); the same release as at once")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def add_cluster_options(parser, what: str) -> None:
    """``--scheduler ADDRESS`` and ``--workers N`` of a command that can run on Dask (``what``:
    what runs as tasks). Without either option the command runs in this process and nothing of
    Dask is imported (this module imports dask only inside its functions)."""
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help=f"run {what} as tasks on the Dask cluster of this scheduler (e.g. tcp://10.0.0.5:8786); "
                             "needs the distributed extra (pip install 'probanon[distributed]')")
    parser.add_argument("--workers", type=positive_int, metavar="N",
                        help=f"run {what} as tasks on a local Dask cluster of N worker processes (127.0.0.1 only)")


@contextlib.contextmanager
def cluster_from_args(args, stream=None):
    """The client the options of :func:`add_cluster_options` ask for (its one-line description
    written to ``stream``, default stderr), or None when neither is given."""
    if getattr(args, "scheduler", None) is None and getattr(args, "workers", None) is None:
        yield None
        return
    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ClusterError("--scheduler/--workers need Dask: pip install 'probanon[distributed]'") from None
    with dask_client(args.scheduler, args.workers) as client:
        print(describe(client), file=stream or sys.stderr)
        yield client


def parquet_folder(args, unsupported, hint: str = "") -> list:
    """A directory of Parquet files as a command's input (issues 19.2 and 43): read by Dask workers
    (``--workers``/``--scheduler`` required), the options ``unsupported`` ([(option, given)])
    refused, the release a new directory ``-o NAME.parquet``; returns its files in name order."""
    from ..distributed.partitioned import parquet_files
    from ..outputs import table_format

    if args.scheduler is None and args.workers is None:
        raise InputError(f"{args.input}: a directory of Parquet files is read by Dask workers: give --workers N "
                         "(a local cluster) or --scheduler ADDRESS")
    given = [name for name, value in unsupported if value]
    if given:
        raise InputError(f"{args.input}: {given[0]} is not available for a directory of Parquet files{hint}")
    if table_format(args.output, "output") != "parquet":
        raise InputError(f"{args.output}: a directory of Parquet files is released as one: name it NAME.parquet")
    return parquet_files(args.input)


def folder_roles(args, client, files, strata=()) -> dict:
    """The roles of a directory's columns (:func:`probanon.release.assign_roles` on the files'
    schema), then the pre-release audit of every file and of a sample of all
    (:func:`probanon.distributed.partitioned.audit_files`): a finding stops the command unless
    ``--accept-risk``."""
    from ..distributed.partitioned import audit_files, parquet_schema
    from ..release import assign_roles, columns_with

    roles = assign_roles(parquet_schema(client, files)[0], args.keys, args.confidential, args.drop,
                         args.keep_other, strata=strata)
    published = [c for c, role in roles.items() if role in ("confidential", "other")]
    for where, result in audit_files(client, files, columns_with(roles, "key"), published) if published else []:
        audit_verdict(args, result, where)
    return roles


def batch_runner(client):
    """Where a Monte Carlo's seeded batches run (:mod:`probanon.montecarlo`): here when
    ``client`` is None, else as tasks of its Dask cluster."""
    if client is None:
        return None
    from ..distributed.montecarlo import batches_on_dask

    return batches_on_dask(client)

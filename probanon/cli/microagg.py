"""``probanon microaggregate``: MDAV, V-MDAV, PCL and individual ranking on a file (or a directory of
Parquet files on Dask), the release written after its promise is checked; with ``--t-closeness`` /
``--l-diversity`` and ``--sensitive``, MDAV or PCL groups that are also t-close / l-diverse
(:mod:`probanon.diversity.microaggregation`), checked on the release before it is written."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .options import (no_prepare, read_input, add_cluster_options, number_in, column_names, add_decimals_option, add_household_option, add_input,
                      add_output, add_release_options, add_strata_options, check_categorical_keys, cluster_from_args, example,
                      households_kept, ordinal_keys, positive_int, promise_of, release_roles, rounded, seed,
                      write_release)
from .parser import command
from .findings import held, show
from .._validation import weights_of
from ..data import MISSING_HINT, input_decimals, quasi_identifiers
from ..errors import InputError
from ..metrics import format_information_loss, information_loss, k_achieved, utility_report
from .progress import Progress
from ..microagg import METHODS
from ..microagg.strata import recode_merged
from ..release import column_list, columns_with, make_release, shuffle_stream


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
    if (args.scheduler is not None or args.workers is not None) and not model._blockable:
        raise InputError(f"--scheduler/--workers run the blocks of mdav, vmdav and pcl, not {args.method}")
    with cluster_from_args(args) as client:
        if client is None:
            yield
            return
        from ..distributed.blocks import on_dask

        with on_dask(client):
            yield


METHOD_NAMES = {"mdav": "MDAV", "vmdav": "V-MDAV", "ranking": "individual ranking", "pcl": "PCL"}


def _microaggregate_folder(args) -> int:
    """``microaggregate`` of a directory of Parquet files: on Dask, the files read and the
    release written by the workers, one ``-o`` file per input file (``-o`` names the new
    directory); :func:`probanon.distributed.partitioned.fit_parquet`."""
    no_prepare(args, "a directory of Parquet files")
    from .options import folder_roles, parquet_folder
    from ..distributed.partitioned import fit_parquet

    files = parquet_folder(args, (("--nominal", args.nominal), ("--ordinal", args.ordinal),
                                  ("--missing pattern", args.missing == "pattern"), ("--weights", args.weights),
                                  ("--strata", args.strata), ("--household", args.household), ("--link", args.link)))
    model = _method(args)
    if not model._blockable:
        raise InputError(f"a directory of Parquet files is microaggregated in blocks by mdav, vmdav or pcl, "
                         f"not {args.method}")
    name = METHOD_NAMES[args.method]
    with cluster_from_args(args) as client:
        roles = folder_roles(args, client, files)
        keys, drop = columns_with(roles, "key"), columns_with(roles, "drop")
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
    sensitive = args.t_closeness is not None or args.l_diversity is not None
    if args.sensitive and not sensitive:
        raise InputError("--sensitive names the columns of --t-closeness or --l-diversity: give one of them")
    if not sensitive and (args.t_algorithm != "auto" or args.l_kind != "distinct"):
        raise InputError(f"{'--t-algorithm' if args.t_algorithm != 'auto' else '--l-kind'} applies to --t-closeness "
                         "or --l-diversity")
    if Path(args.input).is_dir():
        if sensitive:
            raise InputError("--t-closeness/--l-diversity: a directory of Parquet files is not available; give one file")
        return _microaggregate_folder(args)
    frame = read_input(args)
    if sensitive:
        return _microaggregate_sensitive(args, frame)
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
    model = _method(args).set_params(nominal=nominal, ordinal=ordinal, missing=args.missing,
                                     merge_small_strata=args.merge_small_strata)
    name = METHOD_NAMES[args.method]
    note = f"{name}: {len(frame):,} records, {len(keys)} keys, k = {args.k}"
    strata = None if args.strata is None else frame[column_list(args.strata)]
    households = None if args.household is None else frame[args.household]
    data = frame[keys] if categorical else pd.DataFrame(X, columns=columns) if lacking or households is not None else X
    if households is not None:
        data.attrs = dict(frame.attrs)  # messages name the file's lines
        note += " (household-level: one record per household)"
    with _blocks_on_cluster(args, model), Progress(note, quiet=args.quiet, desc=args.method) as progress, \
            held() as adjusted:  # strata and missing-value patterns merged, values suppressed: said below
        released = model.fit_transform(data, sample_weight=weights, strata=strata, progress=progress,
                                       households=households)
    values = dict(zip(keys, released.T))
    if categorical:  # the share of categorical values a group's level replaced (a suppressed one included)
        same = [(values[c] == frame[c].to_numpy()) | (pd.isna(values[c]) & frame[c].isna().to_numpy())
                for c in categorical]
        print(f"probanon: categorical keys: {100 * (1 - np.mean(same)):.2f}% of their values replaced by the group's "
              "mode (nominal) or median level (ordinal)", file=sys.stderr)
    released = rounded(np.column_stack([values[c] for c in numeric]).astype(np.float64) if numeric else X,
                        [digits[c] for c in numeric])  # what is released: the information loss is computed on it
    values.update(zip(numeric, released.T))
    if households is not None:
        print(f"probanon: --household {args.household}: {model.households_.n_households:,} households (the keys are "
              "household-level variables), every group holds at least k of them and every member their household's "
              "values", file=sys.stderr)
    if getattr(model, "records_settled_", 0):
        print(f"probanon: {name}: {model.records_settled_:,} {'households' if households is not None else 'records'} "
              "moved from the method's groups to the cells of "
              "its published function (identical key tuples share a cell, every cell holds k; the function is the "
              "release)", file=sys.stderr)
    show(adjusted)
    if lacking:
        loss = information_loss(X, released, weights=weights, missing=True) if numeric else None
    else:
        loss = utility_report(X, released, weights=weights).information_loss if numeric else None
    recoded = {} if strata is None else recode_merged(model.strata_, strata)
    check_categorical_keys(args, frame, frame.assign(**{c: values[c] for c in categorical}, **recoded), roles,
                           categorical)
    promise = households_kept(promise_of(model.k_, keys, roles, args.strata, name, per_column=args.method == "ranking"),
                              args.household, roles, frame.assign(**values, **recoded), accept_risk=args.accept_risk)
    group = f"{name} group {'weighted ' * (weights is not None)}"
    rounding = {c: f", rounded to {digits[c]} decimals" if digits[c] is not None else "" for c in numeric}
    release = make_release(frame, roles, replaced={**values, **recoded},
                           actions={**{c: f"key: replaced by its {group}mean{rounding[c]}" for c in numeric},
                                    **{c: f"key: replaced by its {group}mode" for c in nominal},
                                    **{c: f"key: replaced by its {group}median level" for c in ordinal},
                                    **{c: "stratum: released, merged strata recoded" for c in recoded}},
                           keep_order=args.keep_order, random_state=shuffle_stream(args.seed), means=digits,
                           promise=promise)
    extra = {}
    if args.function:
        if model.function_ is None:
            raise InputError(f"--function: {model.unpublished_}; drop --split-duplicates to publish one")
        model.function_.columns = keys
        model.function_.meta["decimals"] = {c: digits[c] for c in numeric}  # apply rounds as this release did
        extra[args.function] = model.function_.to_json(indent=1)
    write_release(args, release, extra, original=frame)
    loss = "no numeric key" if loss is None else format_information_loss(loss)
    combination = keys + [c for c in column_list(args.strata) if c in release.data]
    in_households = ""
    if households is not None:  # each household once per combination
        once = frame.assign(**values, **recoded)[combination + [args.household]].drop_duplicates()
        in_households = f" ({k_achieved(once, combination)} households)"
    print(
        f"{args.method}: {len(frame)} records, {len(keys)} quasi-identifiers, k = {model.k_}, "
        f"k achieved = {k_achieved(release.data, combination)}{in_households}"
        ", "
        f"{'weighted ' * (weights is not None)}information loss{' of the numeric keys' * bool(categorical)} = {loss}"
        + (f", {model.blocks_}" if hasattr(model, "blocks_") else ""),
        file=sys.stderr,
    )
    return 0



def _microaggregate_sensitive(args, frame) -> int:
    """``--t-closeness T`` / ``--l-diversity L`` with ``--sensitive COLS``
    (:class:`probanon.diversity.microaggregation.SensitiveMicroaggregation`): every released
    group t-close / l-diverse on each sensitive column, checked on what is about to be written
    (``diversity_report`` on the release's classes: EMD <= t, distinct or entropy l); prints the
    information loss beside plain MDAV/PCL at the same k."""
    from ..diversity import diversity_report
    from ..diversity.microaggregation import SensitiveMicroaggregation
    from ..errors import GuaranteeError
    from ..microagg.means import group_means

    given = [flag for flag, on in (("--nominal", args.nominal), ("--ordinal", args.ordinal),
                                   ("--missing pattern", args.missing == "pattern"), ("--weights", args.weights),
                                   ("--strata", args.strata), ("--block-size", args.block_size is not None),
                                   ("--split-duplicates", args.split_duplicates),
                                   ("--scheduler/--workers", args.scheduler is not None or args.workers is not None),
                                   ("--household", args.household))
             if on]
    if given:
        raise InputError(f"--t-closeness/--l-diversity: {given[0]} is not available with them (numeric keys, one file)")
    if args.method not in ("mdav", "pcl"):
        raise InputError(f"--t-closeness/--l-diversity: --method mdav or pcl, not {args.method}")
    sensitive = column_list(args.sensitive)
    if not sensitive:
        raise InputError("--t-closeness/--l-diversity: name the sensitive columns with --sensitive COLS")
    roles = release_roles(args, frame)
    keys = columns_with(roles, "key")
    for c in sensitive:
        if c not in frame.columns:
            raise InputError(f"--sensitive: column {c!r} is not in the table")
        if roles.get(c) not in ("confidential", "other"):
            raise InputError(f"--sensitive: column {c!r} is {roles.get(c)}, not released per record: name it in "
                             "--confidential")
    X, _ = quasi_identifiers(frame, keys, False, MISSING_HINT)
    digits = _released_decimals(args, frame, keys)
    model = SensitiveMicroaggregation(args.k, t=args.t_closeness, l=args.l_diversity, l_kind=args.l_kind,
                                      algorithm=args.t_algorithm, method=args.method,
                                      random_state=args.seed).set_output(transform="default")
    what = model._requirement_text()
    name = METHOD_NAMES[args.method]
    with Progress(f"{name} with {what} on {', '.join(sensitive)}: {len(frame):,} records, k = {args.k}",
                  quiet=args.quiet, desc=args.method) as progress:
        progress("fit", 0, 1)
        model.fit(X, sensitive=frame[sensitive])
        progress("fit", 1, 1)
    places = [digits[c] for c in keys]
    released = rounded(model.centroids_[model.labels_], places)
    loss = utility_report(X, released).information_loss
    plain = getattr(model, "base_labels_", None)
    if plain is None:
        plain = _estimator(args).set_params(k=model.k_).set_output(transform="default").fit(X).labels_
    plain_loss = utility_report(X, rounded(group_means(X, plain, int(plain.max()) + 1)[plain], places)).information_loss
    release = make_release(frame, roles, replaced=dict(zip(keys, released.T)),
                           actions={c: f"key: replaced by its {name} group mean ({what} on {', '.join(sensitive)})"
                                       + (f", rounded to {digits[c]} decimals" if digits[c] is not None else "")
                                    for c in keys},
                           keep_order=args.keep_order, random_state=shuffle_stream(args.seed), means=digits,
                           promise=promise_of(model.k_, keys, roles, None, name))
    found = []
    for c in sensitive:  # the property, on what is about to be written: the release's classes
        report = diversity_report(release.data, qi=keys, sensitive=c, t=args.t_closeness, l=args.l_diversity,
                                  sense=args.l_kind)
        if not report.holds:
            raise GuaranteeError(f"{name} with {what} promises it on {c}, but what is about to be released has "
                                 + "; ".join(r.describe() for r in report.requirements if not r.holds))
        found.append(f"{c}: largest EMD {report.t_closeness:.4f}, fewest distinct {report.l_distinct}, "
                     f"entropy l {report.l_entropy:.3g}")
    extra = {}
    if args.function:
        if model.function_ is None:
            raise InputError(f"--function: {model.unpublished_}")
        model.function_.columns = keys
        model.function_.meta["decimals"] = {c: digits[c] for c in keys}
        extra[args.function] = model.function_.to_json(indent=1)
    write_release(args, release, extra, original=frame)
    print(f"{args.method} with {what} ({model.algorithm_}"
          + (f", cluster size k' = {model.cluster_size_}" if model.algorithm_ == "t-closeness-first" else "")
          + f"): {len(frame)} records, {len(keys)} quasi-identifiers, k = {model.k_}, {model.sizes_.size} groups "
          f"(smallest {int(model.sizes_.min())}, largest {int(model.sizes_.max())}), {model.merges_} merged to meet it",
          file=sys.stderr)
    print("checked on the release: " + "; ".join(found), file=sys.stderr)
    print(f"information loss = {format_information_loss(loss)} (plain {name} at k = {model.k_}: "
          f"{format_information_loss(plain_loss)}): the price of {what}", file=sys.stderr)
    return 0


#: argparse type of t: a number in [0, 1]
_unit_interval = number_in("a number in [0, 1]", 0.0, 1.0)


def _released_decimals(args, frame, numeric) -> dict:
    """{numeric key: the decimals its released means are rounded to}: ``--decimals``, else the
    input's own (:func:`probanon.data.input_decimals`)."""
    if args.decimals is not None:
        return {c: args.decimals for c in numeric}
    return input_decimals(args.input, frame, numeric)



def add_parser(sub) -> None:
    m = command(sub, "microaggregate", epilog=example(
        "# census.csv: the CASC census file (1,080 records, 13 numeric columns)",
        "probanon microaggregate census.csv -o census_k5.csv -k 5 --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX \\",
        "    --confidential PTOTVAL,TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL \\",
        "    --function census_k5.json --link census_k5.link.csv --seed 7",
        "# every group also 0.2-close on TAXINC (t-closeness-first, Soria-Comas et al. 2015)",
        "probanon microaggregate census.csv -o census_t.csv -k 5 --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX \\",
        "    --confidential TAXINC --drop PTOTVAL,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL \\",
        "    --t-closeness 0.2 --sensitive TAXINC --seed 7",
        "# household-level keys (the same for every member): every group holds 5 households, members kept together,",
        "# within household sizes (the released ids count the members)",
        "probanon microaggregate survey.csv -o survey_k5.csv -k 5 --keys hh_income,rooms --household hh_id \\",
        "    --strata region,hh_size --merge-small-strata --confidential age,sex --seed 7"))
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
    m.add_argument("--nominal", metavar="COLS", type=column_names,
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
    add_household_option(m, "households kept together: the keys are household-level variables (each constant within "
                            "every household, else refused), the method runs on one record per household (--weights: "
                            "the household's weight, the same for every member), so every group holds at least k "
                            "households, and every member receives their household's values")
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
    m.add_argument("--t-closeness", metavar="T", type=_unit_interval, default=None,
                   help="mdav, pcl: every group also t-close on each --sensitive column (Earth Mover's distance of its "
                        "values from the whole file's <= T; ordered distance for numbers, equal for categories; "
                        "Soria-Comas et al. 2015), checked on the release before it is written")
    m.add_argument("--l-diversity", metavar="L", type=positive_int, default=None,
                   help="mdav, pcl: every group also l-diverse on each --sensitive column (--l-kind), checked on the "
                        "release before it is written")
    m.add_argument("--l-kind", choices=("distinct", "entropy"), default="distinct",
                   help="--l-diversity: at least L distinct values per group (default), or entropy >= ln L")
    m.add_argument("--sensitive", metavar="COLS", type=column_names,
                   help="comma-separated sensitive columns of --t-closeness / --l-diversity (released per record: "
                        "name them in --confidential)")
    m.add_argument("--t-algorithm", choices=("auto", "merge", "k-anonymity-first", "t-closeness-first"),
                   default="auto",
                   help="--t-closeness/--l-diversity: merge (plain groups merged until they comply; the only one "
                        "with --function), k-anonymity-first (MDAV groups grown until they comply), t-closeness-first "
                        "(groups of one record per sensitive-value bucket, improved by Lloyd rounds with pcl; --t-closeness); "
                        "auto (default): t-closeness-first with T; with L alone k-anonymity-first (mdav) or merge (pcl)")
    m.add_argument("--quiet", action="store_true", help="no progress bar")
    m.set_defaults(func=cmd_microaggregate)


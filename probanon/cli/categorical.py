"""``probanon recode`` (global recoding of the keys) and ``probanon suppress`` (local suppression
to k-anonymity, after an optional recoding: sdcMicro's ``kAnon``; ``--compare`` tabulates
candidate recodings on the risk-utility map), both release steps (issue 43, points 1-3).

The recoding options are declared once (:func:`add_recoding_options`) and read once
(:func:`recoding_steps`): the steps of ``--recode FILE.json`` first, then ``--top-code`` /
``--bottom-code``, ``--round``, ``--intervals``, ``--group`` and ``--hierarchy``, in that order
(a JSON file gives any other order).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path


from .findings import held, show
from .options import (
    no_prepare,
    read_input,
    add_cluster_options,
    add_input,
    add_output,
    add_release_options,
    column_names,
    example,
    release_roles,
    seed,
    write_release,
)
from .parser import command
from .progress import Progress
from ..categorical.recoding import BottomCode, Group, Hierarchy, Intervals, Round, TopCode, recode, steps_from_file, \
    steps_from_json
from ..categorical.suppression import suppression_promise
from ..errors import GuaranteeError, InputError, ParameterError
from ..frequencies import k_violations
from ..release import Promise, column_list, columns_with, make_release, shuffle_stream


def _spec(option: str, text: str) -> tuple[str, str]:
    column, sep, rest = text.partition("=")
    if not sep or not column.strip() or not rest.strip():
        raise InputError(f"{option}: expected COLUMN=SPEC, got {text!r} (see 'probanon recode --help')")
    return column.strip(), rest.strip()


def _number(option: str, text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{option}: {what} must be a number, got {text!r}") from None


def _intervals(text: str, label: str, closed: str) -> Intervals:
    column, spec = _spec("--intervals", text)
    how, _, value = spec.partition(":")
    if how == "width":
        return Intervals(column, width=_number("--intervals", value, "the width"), label=label, closed=closed)
    if how == "quantiles":
        if not value.strip().isdigit():
            raise InputError(f"--intervals: quantiles:N takes a whole number of intervals, got {spec!r}")
        return Intervals(column, quantiles=int(value), label=label, closed=closed)
    breaks = [_number("--intervals", b, "each break") for b in spec.split(":")]
    return Intervals(column, breaks=tuple(breaks), label=label, closed=closed)


def _group(text: str) -> Group:
    column, spec = _spec("--group", text)
    olds, sep, new = spec.rpartition(":")
    values = [v.strip() for v in olds.split(",") if v.strip()]
    if not sep or not new.strip() or not values:
        raise InputError(f"--group: expected COLUMN=OLD1,OLD2,...:NEW, got {text!r}")
    return Group(column, {v: new.strip() for v in values})


def _hierarchy(text: str) -> Hierarchy:
    column, spec = _spec("--hierarchy", text)
    path, sep, level = spec.rpartition(":")
    if not sep or not path or not level.strip().isdigit():
        raise InputError(f"--hierarchy: expected COLUMN=FILE.csv:LEVEL (LEVEL 1, 2, ...), got {text!r}")
    if not Path(path).is_file():
        raise InputError(f"--hierarchy: no hierarchy file {path}")
    return Hierarchy(column, path, int(level))


def _coding(option: str, cls, text: str):
    column, spec = _spec(option, text)
    at, _, by = spec.partition(":")
    where = {"quantile": _number(option, at[1:], "the quantile after q")} if at.startswith("q") else \
        {"threshold": _number(option, at, "the threshold (or qP, a quantile)")}
    replacement = None if not by else "mean" if by.strip() == "mean" else _number(option, by, "the replacement")
    return cls(column, replacement=replacement, **where)


def recoding_steps(args) -> list:
    """The recoding the options give, as a list of steps (module docstring); a bad spec is a
    one-line :class:`InputError` naming the option."""
    try:
        steps = steps_from_file(args.recode, "the recoding (--recode)") if args.recode else []
        steps += [_coding("--top-code", TopCode, t) for t in args.top_code or ()]
        steps += [_coding("--bottom-code", BottomCode, t) for t in args.bottom_code or ()]
        steps += [Round(c, _number("--round", b, "the base")) for c, b in
                  (_spec("--round", t) for t in args.round or ())]
        steps += [_intervals(t, args.interval_labels, args.closed) for t in args.intervals or ()]
        steps += [_group(t) for t in args.group or ()]
        steps += [_hierarchy(t) for t in args.hierarchy or ()]
    except ParameterError as exc:
        raise InputError(str(exc)) from None
    return steps


#: the roles of the columns a recoding may change (top-coding a confidential income is common)
RECODABLE = ("key", "confidential", "other")


def _check_columns(steps, roles: dict) -> None:
    for s in steps:
        if s.column not in roles:
            raise InputError(f"{s.kind} recoding: column {s.column!r} is not in the table")
        if roles[s.column] not in RECODABLE:
            raise InputError(f"{s.kind} recoding: column {s.column!r} is {roles[s.column]}, not a released key, "
                             "confidential or other column")


def _recoded(args, frame, roles: dict, weights):
    """(the recoded table, its report) of the command's recoding, checked to touch released
    keys, confidential or other columns only."""
    steps = recoding_steps(args)
    _check_columns(steps, roles)
    try:
        return recode(frame, steps, weights=weights)
    except ParameterError as exc:
        raise InputError(str(exc)) from None


def _weights(args, frame):
    from .._validation import weights_of

    return weights_of(frame, getattr(args, "weights", None), f"{args.input}: ")


def _released_strata(roles: dict) -> list:
    return [c for c in columns_with(roles, "stratum")]


def cmd_recode(args) -> int:
    frame = read_input(args)
    roles = release_roles(args, frame)
    keys = columns_with(roles, "key")
    if args.k is not None and args.k < 2:
        raise InputError("-k must be at least 2 (k = 1 promises nothing)")
    recoded, report = _recoded(args, frame, roles, _weights(args, frame))
    if not report.steps:
        raise InputError("no recoding given: use --intervals, --round, --group, --hierarchy, --top-code, "
                         "--bottom-code or --recode FILE.json")
    promise = None
    if args.k is not None:  # a missing value counted as a category, as Promise.check counts it
        strata = _released_strata(roles)
        left = k_violations(recoded, keys, args.k, missing="category", strata=strata)
        if left.total:
            raise GuaranteeError(
                f"the recoded file is not {args.k}-anonymous on {', '.join(keys)}" + " within strata" * bool(strata)
                + f": {left.total:,} records in {left.classes[0]:,} key combinations are shared by fewer than "
                f"{args.k}; recode further, or suppress the remaining values with 'probanon suppress' (same "
                f"recoding options, -k {args.k}); nothing written")
        promise = Promise(args.k, (tuple(keys + strata),), f"recode (k = {args.k})")
    actions = {c: report.action(c, roles[c]) for c in report.steps}
    actions.update({c: "key: released unchanged" for c in keys if c not in report.steps})
    release = make_release(recoded, roles, actions=actions, keep_order=args.keep_order,
                           random_state=shuffle_stream(args.seed), promise=promise)
    write_release(args, release, original=frame)
    print(f"recode: {len(frame):,} records, {sum(c in keys for c in report.steps)} of {len(keys)} keys recoded"
          + (f", {args.k}-anonymous on the keys" + (" and strata" if _released_strata(roles) else "")
             if args.k is not None else " (no k promised: give -k to check it)"), file=sys.stderr)
    return 0


def importance_of(text):
    """``--importance``: COLS (most important first) or COL=WEIGHT,... as a list or a dict."""
    if text is None:
        return None
    items = [t.strip() for t in text.split(",") if t.strip()]
    weighted = ["=" in t for t in items]
    if any(weighted) and not all(weighted):
        raise InputError(f"--importance: give COLS (most important first) or COL=WEIGHT pairs, not both: {text!r}")
    if not any(weighted):
        return items
    return {c.strip(): _number("--importance", w, f"the weight of {c.strip()!r}")
            for c, _, w in (t.partition("=") for t in items)}


def _check_risk(data, keys: list, strata: list, weights, threshold: float, combinations, missing: str) -> None:
    """The individual-risk variant's promise, on what is about to be written: on every combination
    of keys the release promises, every record's individual risk
    (:func:`probanon.metrics.frequency.individual_risk` of its matches, counted with the
    ``missing`` rule within ``strata``: :func:`probanon.frequencies.match_counts`) below ``threshold``."""
    from ..frequencies import key_codes, key_sets, match_counts, stratum_codes
    from ..metrics.frequency import individual_risk

    codes, stratum = key_codes(data, keys), stratum_codes(data, strata)
    for s in key_sets(len(keys), combinations):
        f, F = match_counts(codes[:, list(s)], missing=missing, strata=stratum, weights=weights)
        above = individual_risk(f, F) >= threshold
        if above.any():
            raise GuaranteeError(f"local suppression promises an individual risk below {threshold:g}, but "
                                 f"{int(above.sum()):,} records of what is about to be released reach it on "
                                 f"{', '.join(keys[i] for i in s)}; nothing written")


def _suppression_options(args, importance) -> dict:
    return dict(combinations=args.combinations, importance=importance,
                strata=column_list(args.strata) or None, missing=args.missing, risk_threshold=args.risk_threshold,
                method=args.method, random_state=args.seed)


def _check_suppress_args(args):
    """The options of ``suppress`` checked before any work; returns the parsed ``--importance``."""
    if args.k < 2:
        raise InputError("-k must be at least 2 (k = 1 promises nothing)")
    if args.combinations is not None and args.combinations < 1:
        raise InputError("--combinations must be at least 1")
    if args.risk_threshold is not None and (args.weights is None or not 0 < args.risk_threshold <= 1):
        raise InputError("--risk-threshold needs --weights and a threshold in (0, 1]")
    if args.compare is None and args.output is None:
        raise InputError("give the release's output (-o FILE), or --compare FILE.json to compare recodings")
    return importance_of(args.importance)


def _suppress_folder(args, importance) -> int:
    """``suppress`` of a directory of Parquet files: on Dask, the records read, suppressed, checked
    and written by the workers, one ``-o`` file per input file (``-o`` names the new directory):
    :func:`probanon.distributed.suppression.suppress_parquet`, the values the fast method suppresses
    in the files' rows concatenated in name order."""
    no_prepare(args, "a directory of Parquet files")
    from .options import cluster_from_args, folder_roles, parquet_folder
    from ..distributed.suppression import suppress_parquet

    files = parquet_folder(args, (("--compare", args.compare), ("--method exact", args.method == "exact"),
                                  ("--weights", args.weights), ("--risk-threshold", args.risk_threshold),
                                  ("--link", args.link), ("recoding options", recoding_steps(args))),
                           hint=" (recode the files first, or give one file)")
    strata = column_list(args.strata)
    with cluster_from_args(args) as client:
        roles = folder_roles(args, client, files, strata)
        keys = columns_with(roles, "key")
        started = time.perf_counter()
        with Progress(f"local suppression: {len(files)} Parquet files, {len(keys)} keys, k = {args.k}",
                      quiet=args.quiet, desc="suppress") as progress:
            result = suppress_parquet(client, files, keys, args.k, combinations=args.combinations,
                                      importance=importance, strata=strata, missing=args.missing,
                                      random_state=args.seed, output=args.output,
                                      keep=[c for c, role in roles.items() if role != "drop"],
                                      keep_order=args.keep_order, random_state_output=shuffle_stream(args.seed),
                                      progress=progress)
    elapsed = time.perf_counter() - started
    per_key = ", ".join(f"{c} {int(result.n_suppressed.get(c, 0)):,}" for c in keys)
    print(f"wrote {args.output} ({len(files)} Parquet files, {result.violations_before.n:,} records, "
          f"{'input order kept' if args.keep_order else 'records in random order within each file'})", file=sys.stderr)
    print(f"local suppression: violations before {result.violations_before.total:,}; suppressed per key: {per_key}; "
          f"total {result.total:,}; violations after {result.violations_after.total:,}; method fast, on Dask; "
          f"{elapsed:.2f} s", file=sys.stderr)
    return 0


def cmd_suppress(args) -> int:
    importance = _check_suppress_args(args)
    if Path(args.input).is_dir():
        return _suppress_folder(args, importance)
    if args.scheduler is not None or args.workers is not None:
        raise InputError("--scheduler/--workers run the local suppression of a directory of Parquet files (one "
                         "partition per file); a single file is suppressed in this process")
    frame = read_input(args)
    roles = release_roles(args, frame, audit=args.compare is None)
    keys = columns_with(roles, "key")
    weights = _weights(args, frame)
    if args.compare is not None:
        return _compare(args, frame, keys, weights, roles, importance)
    recoded, report = _recoded(args, frame, roles, weights)
    from ..categorical.suppression import local_suppression

    note = f"local suppression: {len(frame):,} records, {len(keys)} keys, k = {args.k}, method {args.method}"
    started = time.perf_counter()
    with Progress(note, quiet=args.quiet, desc="suppress") as progress, held() as adjusted:
        result = local_suppression(recoded, keys, args.k, progress=progress,
                                   weights=weights if args.risk_threshold is not None else None,
                                   **_suppression_options(args, importance))
    elapsed = time.perf_counter() - started
    show(adjusted)
    if args.risk_threshold is not None:
        _check_risk(result.data, keys, column_list(args.strata), weights, args.risk_threshold, args.combinations,
                    args.missing)
        promise = None
    else:
        promise = suppression_promise(args.k, keys, _released_strata(roles), args.combinations, args.missing)
    actions = {}
    for c in keys:
        n = int(result.n_suppressed.get(c, 0))
        done = ([report.action(c, "")] if c in report.steps else []) + \
            ([f"{n:,} values suppressed (set missing)"] if n else [])
        actions[c] = "key: " + ("; ".join(done) if done else "released unchanged")
    actions.update({c: report.action(c, roles[c]) for c in report.steps if c not in keys})
    release = make_release(result.data, roles, actions=actions, keep_order=args.keep_order,
                           random_state=shuffle_stream(args.seed), promise=promise)
    write_release(args, release, original=frame)
    per_key = ", ".join(f"{c} {int(result.n_suppressed.get(c, 0)):,}" for c in keys)
    optimal = {True: " (optimal)", False: " (not proven optimal)", None: ""}[result.optimal]
    bound = (f", weighted cost {result.cost:,.3f} against HiGHS's lower bound {result.lower_bound:,.3f}"
             if result.lower_bound is not None else "")
    print(f"local suppression: violations before {result.violations_before.total:,}; suppressed per key: {per_key}; "
          f"total {result.total:,}{optimal}{bound}; violations after {result.violations_after.total:,}; "
          f"method {result.method}; {elapsed:.2f} s", file=sys.stderr)
    return 0


def _compare(args, frame, keys, weights, roles, importance) -> int:
    """``--compare FILE.json``: the risk-utility map of the candidates (printed, nothing written)."""
    from .._validation import read_json_document
    from ..categorical.strategies import compare_strategies

    document = read_json_document(args.compare, "the candidate recodings (--compare)")
    if not isinstance(document, dict) or not document:
        raise InputError(f"{args.compare}: expected an object {{\"name\": [steps...], ...}}")
    candidates = {"suppression alone": []}
    try:
        for name, steps in document.items():
            candidates[str(name)] = [s for s in steps_from_json(steps)]
        options = recoding_steps(args)
    except ParameterError as exc:
        raise InputError(f"{args.compare}: {exc}") from None
    if options:
        candidates["the command line's recoding"] = options
    for steps in candidates.values():
        _check_columns(steps, roles)
    with Progress(f"comparing {len(candidates)} recodings", quiet=args.quiet, desc="compare") as progress:
        table = compare_strategies(frame, keys, args.k, candidates, weights=weights, progress=progress,
                                   **_suppression_options(args, importance))
    shown = table[["suppressed", *[f"suppressed_{c}" for c in keys], "records_changed",
                   *[f"information_loss_{c}" for c in keys], "information_loss"]].copy()
    for c in shown.columns:
        if c.startswith("information_loss"):
            shown[c] = (100 * shown[c]).map(lambda v: f"{v:.1f}%")
    shown.columns = [c.replace("information_loss", "loss").replace("suppressed_", "supp ") for c in shown.columns]
    print(f"local suppression to k = {args.k} after each recoding (information loss: the share of each key's "
          "entropy lost, H(X|Y)/H(X)); ordered by suppressions, then loss:")
    print(shown.to_string())
    return 0


def add_recoding_options(p) -> None:
    """The recoding options of ``recode`` and ``suppress`` (module docstring), declared once."""
    g = p.add_argument_group("recoding (applied in this order: --recode, --top-code/--bottom-code, --round, "
                             "--intervals, --group, --hierarchy)")
    add_input(g, "--recode", metavar="FILE.json", table=False,
              help="recoding steps as a JSON list, e.g. [{\"kind\": \"intervals\", \"column\": \"age\", \"width\": 5}] "
                   "(kinds: intervals, round, group, hierarchy, top, bottom; the library's Step.to_dict)")
    g.add_argument("--intervals", action="append", metavar="COL=SPEC",
                   help="a numeric key to intervals: COL=B1:B2:...:Bm (breaks), COL=width:W (bands of width W on "
                        "multiples of W) or COL=quantiles:N (N equal-frequency intervals); repeatable")
    g.add_argument("--interval-labels", choices=("interval", "lower", "code"), default="interval",
                   help="released intervals: their text, e.g. (20,25] as sdcMicro's globalRecode (the column becomes "
                        "text), their lower bound, or their number 1..m (both numeric, with the interval texts as "
                        "SPSS/Stata value labels); default interval")
    g.add_argument("--closed", choices=("right", "left"), default="right",
                   help="intervals closed on the right, (20,25] as R's cut (default), or on the left, [20,25)")
    g.add_argument("--round", action="append", metavar="COL=BASE",
                   help="a numeric key rounded to the nearest multiple of BASE (halves up); repeatable")
    g.add_argument("--group", action="append", metavar="COL=OLD1,OLD2,...:NEW",
                   help="categories OLD1, OLD2... released as NEW (an SPSS/Stata code may be named by its value "
                        "label; a coded column keeps codes: the group's smallest code, labelled NEW); repeatable, "
                        "one group each")
    g.add_argument("--hierarchy", action="append", metavar="COL=FILE.csv:LEVEL",
                   help="categories replaced by their value at LEVEL of an ARX hierarchy file (CSV, one column per "
                        "level, level 0 the original values; every value must be in it); repeatable")
    g.add_argument("--top-code", action="append", metavar="COL=T[:R]",
                   help="values above T (a number, or qP: the quantile P, e.g. q0.99) replaced by R (a number, or "
                        "mean: the tail's mean, weighted with --weights; default T itself); repeatable")
    g.add_argument("--bottom-code", action="append", metavar="COL=T[:R]",
                   help="values below T (a number or qP) replaced by R (a number, mean, default T); repeatable")


def _common(p, within: str) -> None:
    add_input(p, "input", help="the table to release (CSV, Parquet, SPSS, Stata)")
    add_release_options(p, keys_help="key (quasi-identifier) columns")
    p.add_argument("--seed", type=seed, default=None,
                   help=f"seed of the record order{within} (default: fresh entropy)")
    p.add_argument("--weights", metavar="COL",
                   help="sampling weights: the tail means of --top-code/--bottom-code ...:mean are weighted"
                        + (", and --risk-threshold uses them" if within else "") + "; released unchanged")
    add_recoding_options(p)


def add_parser(sub) -> None:
    r = command(sub, "recode", epilog=example(
        "probanon recode adult.csv -o adult_recoded.csv --keys age,sex,race,marital-status,education \\",
        "    --keep-other --intervals age=width:5 --group marital-status=Married-civ-spouse,Married-AF-spouse:Married \\",
        "    --top-code capital-gain=q0.99:mean --link adult_recoded.link.csv"))
    add_output(r, "-o", "--output", required=True, table=True, help="the release (format by its ending)")
    r.add_argument("-k", type=int, default=None,
                   help="promise k-anonymity on the recoded keys (and strata): refuse, writing nothing, when records "
                        "remain in combinations shared by fewer than k (a missing value counted as a category of its "
                        "own); then 'probanon suppress' removes them. Default: no promise")
    r.add_argument("--strata", metavar="COLS", type=column_names,
                   help="comma-separated strata columns, released unchanged (with -k, k-anonymity within each)")
    _common(r, "")
    r.set_defaults(func=cmd_recode)

    s = command(sub, "suppress", epilog=example(
        "probanon suppress adult.csv -o adult_k3.csv -k 3 --keys age,sex,race,marital-status,education \\",
        "    --keep-other --intervals age=width:5 --importance sex,race,age --link adult_k3.link.csv",
        "probanon suppress adult.csv -k 3 --keys age,sex,race,marital-status,education --keep-other \\",
        "    --compare candidates.json    # the risk-utility map of candidate recodings; nothing written"))
    add_output(s, "-o", "--output", table=True, help="the release (format by its ending); not with --compare")
    s.add_argument("-k", type=int, required=True,
                   help="every record shares its values of every combination of keys (up to --combinations) with at "
                        "least k-1 others")
    s.add_argument("--combinations", type=int, default=None, metavar="M",
                   help="k-anonymity over every combination of at most M keys (default: all keys together, which "
                        "implies every subset)")
    s.add_argument("--importance", metavar="COLS|COL=W,...",
                   help="keys most important first (suppressed last), or a weight per key (COL=W: a higher weight "
                        "is suppressed less)")
    s.add_argument("--missing", choices=("any", "category"), default="any",
                   help="how a missing (suppressed) value counts: it matches any value (as sdcMicro counts; default), "
                        "or it is a category of its own")
    s.add_argument("--risk-threshold", type=float, default=None, metavar="R",
                   help="with --weights: suppress until every record's individual risk (as 'probanon risk') is below "
                        "R, instead of k")
    s.add_argument("--strata", metavar="COLS", type=column_names,
                   help="comma-separated strata columns: k-anonymity within each stratum; released unchanged")
    s.add_argument("--method", choices=("fast", "exact"), default="fast",
                   help="fast: the heuristic for millions of records (default); exact: the fewest suppressions "
                        "by an integer program (HiGHS), for small files")
    add_input(s, "--compare", metavar="FILE.json", table=False,
              help="print the risk-utility map of candidate recodings, a JSON object {name: [steps...]}, beside "
                   "suppression alone (and the recoding options given); nothing is written")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    add_cluster_options(s, "the local suppression of a directory of Parquet files (INPUT a directory, one partition "
                           "per file; -o NAME.parquet the new directory, one file per input file)")
    _common(s, " and of the fast method's ties")
    s.set_defaults(func=cmd_suppress)


__all__ = ["add_parser", "add_recoding_options", "cmd_recode", "cmd_suppress", "importance_of", "recoding_steps"]

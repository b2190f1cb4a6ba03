"""``probanon attack`` (the attack suite against a release) and ``probanon audit`` (the pre-release
audit of an original)."""

from __future__ import annotations

import json

from .options import column_names, ordinal_keys
from .options import add_input, add_match_options, example, positive_int, seed
from .parser import command
from ..data import read_table
from ..errors import InputError
from .progress import Counting, Progress
from ..release import align, check_match, column_list, read_link
from ..attacks.setting import MECHANISMS


#: Releases that are not one table of keys -- set-valued records ('probanon km anonymize') and count
#: tables ('probanon diversity release') -- and what their intruders know.
CLAIMS = {"km": "m items of a person, the released records and the published recoding (the partition)",
          "l-delta": "a person's quasi-identifier, the plan's classes and the count tables"}
#: Options of one mechanism only: option -> mechanism.
_OPTION_OF = {"partition": "km", "m": "km", "sigma": "km", "targets": "km", "plan": "l-delta", "datasets": "l-delta",
              "scheduler": "l-delta", "workers": "l-delta"}


def _claim_report(args):
    """The km uniqueness attack or the (l, delta) linkage test, as the suite's report."""
    mechanism = args.mechanism
    unused = [flag for flag, v in (("--keys", args.keys), ("--confidential", args.confidential),
                                   ("--raw-distances", args.raw_distances), ("--nominal", args.nominal),
                                   ("--ordinal", args.ordinal), ("--strata", args.strata),
                                   ("--missing pattern", args.missing == "pattern"), ("--weights", args.weights),
                                   ("--control", args.control), ("--knows", args.knows)) if v]
    if unused:
        raise InputError(f"{unused[0]} does not apply to --mechanism {mechanism}")
    if mechanism == "km":
        from ..attacks.uniqueness import DRAWS, attack_km_files

        if len(args.released) != 1:
            raise InputError("--mechanism km attacks one released file")
        if args.id:
            raise InputError("--mechanism km matches the records by --link or --by-position, not --id")
        runs, intruders = args.runs or 10, column_list(args.intruders) or None
        with Progress(f"attack: set-valued release {args.released[0]}", quiet=args.quiet or args.json,
                      desc="intruder runs", total=runs * len(intruders or DRAWS)) as bar:
            return attack_km_files(args.original, args.released[0], partition=args.partition, link=args.link,
                                   by_position=args.by_position, m=args.m, k=args.k, sigma=args.sigma,
                                   intruders=intruders, runs=runs, targets=args.targets,
                                   confidence=args.confidence, random_state=args.seed, progress=Counting(bar))
    from ..attacks.linkage import linkage_test

    if not args.plan:
        raise InputError("--mechanism l-delta needs --plan (the plan the releases were made under)")
    unused = [flag for flag, v in (("--link", args.link), ("--id", args.id), ("--by-position", args.by_position),
                                   ("--intruders", args.intruders)) if v]
    if unused:
        raise InputError(f"{unused[0]} does not apply to --mechanism l-delta")
    from .options import batch_runner, cluster_from_args

    runs = args.runs or 2000
    with cluster_from_args(args) as client, Progress(f"attack: (l, delta) linkage, {runs:,} simulated sets of releases",
                                                     quiet=args.quiet or args.json, desc="l-delta") as bar:
        return linkage_test(args.plan, args.original, args.released, t=args.datasets, runs=runs,
                            confidence=args.confidence, random_state=args.seed, runner=batch_runner(client),
                            progress=bar)


def _print_report(report, confidence: float, knows: str) -> None:
    from ..report import text_table  # imports matplotlib: not at the CLI's start

    print(report.guarantee.text())
    print(f"Intruders know: {knows}; groups: {report.groups_note}.")
    rows = report.rows()
    headers = [c for c in rows[0] if c != "found"]
    print(text_table("", headers, [[row[c] for c in headers] for row in rows]))
    for r in report.results:
        print(f"  {r.rule}: {r.knows}" + (f". Found: {r.note}" if r.note else ""))
    if report.exceeded:
        print(f"ABOVE the claimed bound: {', '.join(report.exceeded)} (their {confidence:.0%} interval lies "
              "entirely above it)")
    found = getattr(report, "attribute", None)
    if found is not None:
        print(f"\nAttribute disclosure (no bound claimed; groups: {found.groups_note}):")
        rows = found.rows()
        print(text_table("", ["column", "measure", "released", "baseline"] + (["control"] if found.has_control else []),
                         [[row["column"], row["measure"], row["released"], row["baseline"]]
                          + ([row["control"]] if found.has_control else []) for row in rows]))
        print("\n".join(found.lines()))
        print("(baseline: the same guess without the release: groups of the same sizes drawn at random for what a "
              "group pins, the file's median or mode for a value read from the keys, a random row for the linker"
              + ("; control: the same attacks on the held-out records" if found.has_control else "") + ")")
    if hasattr(report, "verdict_line"):
        print(f"verdict: {report.verdict_line()}")


def _table_report(args):
    """The attack suite against one released table (:func:`probanon.attacks.attack`) and, when an
    intruder is above the bound, the office's options, each measured (:func:`probanon.attacks.remedies.remedies`)."""
    from ..attacks.remedies import remedies
    from ..attacks.suite import attack

    if len(args.released) != 1:
        raise InputError("give one released file" if not args.released else
                         f"--mechanism {args.mechanism} attacks one released file, not {len(args.released)}")
    original, released = read_table(args.original), read_table(args.released[0])
    nominal, ordinal, strata = column_list(args.nominal), ordinal_keys(args.ordinal), column_list(args.strata)
    keys = column_list(args.keys)
    keys += [c for c in nominal + list(ordinal) if c not in keys]  # as microaggregate: categorical keys are keys
    confidential = column_list(args.confidential)
    if not keys:
        raise InputError("name the keys the intruder knows with --keys")
    types = dict(nominal=nominal, ordinal=ordinal, strata=strata, missing=args.missing, weights=args.weights)
    column_rows = None
    if args.control is not None and not confidential:
        raise InputError("--control is the control of the attribute intruders: name the --confidential columns")
    if args.knows is not None and not confidential:
        raise InputError("--knows names confidential columns the linker knows: name the --confidential columns")
    if MECHANISMS.get(args.mechanism) == "column-wise":
        if not args.link:
            raise InputError(f"--mechanism {args.mechanism} needs the --link file of 'probanon swap' (it says where "
                             "each confidential value went)")
        position, column_rows = read_link(args.link, len(original), len(released), value_columns=confidential)
        how = f"--link {args.link}"  # checked: the columns kept, then each swapped one where its value went
        check_match(original, released, position, confidential, how)
        for c, rows in column_rows.items():
            check_match(original, released, rows, (), f"{how} (released_row_{c})", columns=[c])
    else:
        # merged strata are recoded in the release ("W+X"): not compared as released unchanged
        position = align(original, released, keys, link=args.link, id=args.id, by_position=args.by_position,
                         changed=strata)
    intruders = column_list(args.intruders) or None
    with Progress(f"attack: {len(original):,} records", quiet=args.quiet or args.json, desc="intruder runs") as bar:
        settings = dict(link=position, column_rows=column_rows, runs=args.runs or 10, confidence=args.confidence,
                        standardize=not args.raw_distances, random_state=args.seed, progress=Counting(bar))
        control = None if args.control is None else read_table(args.control)
        report = attack(original, released, keys, confidential, mechanism=args.mechanism, k=args.k,
                        intruders=intruders, attribute=bool(confidential), control=control, knows=args.knows,
                        **settings, **types)
        options = remedies(original, released, keys, confidential, report, **settings, **types)
    known = ", ".join(keys) + (f" and stratum ({', '.join(strata)})" if strata else "")
    return report, (f"every target's original {known}"
                    + (" (which keys it lacks included)" if args.missing == "pattern" else "")
                    + f", the release and the mechanism ({report.mechanism})"), options


def cmd_attack(args) -> int:
    wrong = [(n, m) for n, m in _OPTION_OF.items() if getattr(args, n) is not None and m != args.mechanism]
    if wrong:
        raise InputError(f"--{wrong[0][0]} applies to --mechanism {wrong[0][1]} only")
    options = None
    if args.mechanism in CLAIMS:
        report, knows = _claim_report(args), CLAIMS[args.mechanism]
    else:
        report, knows, options = _table_report(args)
    if args.json:
        print(json.dumps({**report.to_dict(), **({"options": options.to_dict()} if options else {})},
                         allow_nan=False))
    else:
        _print_report(report, args.confidence, knows)
        if options is not None:
            print("\n".join(options.lines()))
    return 1 if report.exceeded else 0


def cmd_audit(args) -> int:
    from ..attacks.audit import audit

    frame = read_table(args.input)
    keys, confidential, nominal = column_list(args.keys), column_list(args.confidential), column_list(args.nominal)
    if not keys or not confidential:
        raise InputError("name the keys (--keys) and the confidential columns (--confidential)")
    missing = [c for c in keys + confidential + nominal if c not in frame.columns]
    if missing:
        raise InputError(f"{args.input}: no column {missing[0]!r}")
    result = audit(frame, keys, confidential, r2_threshold=args.r2, min_share=args.min_share,
                   partial_share=args.partial_share, nominal=nominal)
    if args.json:
        print(json.dumps(result.to_dict(), allow_nan=False))
        return 0 if result.passed else 1
    if result.passed:
        print(result.summary().split("; ")[0])
    else:
        print(f"audit: {len(result.findings)} dependence(s) that void a guarantee on the keys:")
        for f in result.findings:
            print(f"  {f.direction}: {f.text}")
        print(f"remedy: {result.advice()}")
    for column, why in result.not_audited:
        print(f"not audited: {column}: {why}")
    return 0 if result.passed else 1


def add_parser(sub) -> None:
    a = command(sub, "attack", epilog=example(
        "probanon attack census.csv census_k5.csv --mechanism microaggregation -k 5 \\",
        "    --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX \\",
        "    --confidential PTOTVAL,TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL \\",
        "    --link census_k5.link.csv --seed 1"))
    add_input(a, "original", help="the original table (km: the original records, FIMI or (record, item) pairs; "
                                  "l-delta: the planned distribution, as given to 'diversity plan')")
    add_input(a, "released", nargs="*", help="the release (km: the released records; l-delta: zero or more count "
                                             "tables made under the plan)")
    a.add_argument("--keys", "--columns", dest="keys", metavar="COLS", type=column_names,
                   help="comma-separated keys: what the intruder knows of every person (table releases)")
    a.add_argument("--confidential", metavar="COLS", type=column_names, help="comma-separated confidential columns of the release")
    a.add_argument("--mechanism", choices=list(MECHANISMS) + list(CLAIMS), default="unknown",
                   help="how the release was made: sets the groups the intruders rebuild and the claimed bound "
                        "(km: the uniqueness attack on a set-valued release; l-delta: the linkage of count tables)")
    a.add_argument("-k", type=positive_int, help="the mechanism's k (claimed bound 1/k; km: default the recorded k)")
    add_input(a, "--partition", metavar="FILE", table=False,
              help="km: the partition JSON of the release (default RELEASED.partition.json)")
    a.add_argument("-m", type=positive_int, help="km: items the intruder knows (default the release's m)")
    a.add_argument("--sigma", type=float, help="km: the release's sigma (default the recorded one)")
    a.add_argument("--targets", type=positive_int,
                   help="km: attacks per run (default every record with at least m items)")
    add_input(a, "--plan", metavar="FILE", table=False, help="l-delta: the plan the releases were made under")
    a.add_argument("--datasets", type=positive_int, metavar="T",
                   help="l-delta: releases linked (default the plan's t)")
    add_match_options(a)
    add_input(a, "--control", metavar="FILE",
              help="records of the same population held out of the release (keys and confidential columns): the "
                   "attribute intruders' control")
    a.add_argument("--knows", metavar="COLS", type=column_names,
                   help="the confidential columns the attribute linker knows of a person when it looks for their row "
                        "(default all of them)")
    a.add_argument("--runs", type=positive_int, default=None,
                   help="runs of each intruder (default 10; l-delta: simulated sets of releases, default 2000)")
    a.add_argument("--confidence", type=float, default=0.99, help="level of the Clopper-Pearson intervals")
    a.add_argument("--intruders", metavar="NAMES", type=column_names, help="comma-separated subset of exact,nearest,likelihood,relations (km: itemset,person)")
    a.add_argument("--nominal", metavar="COLS", type=column_names,
                   help="comma-separated nominal keys, as the release was made with (microaggregate --nominal): "
                        "compared in the release's encoding (distance 1 between different categories), exactly as "
                        "released by the exact intruder")
    a.add_argument("--ordinal", metavar="COLS",
                   help="comma-separated ordinal keys, as the release was made with (microaggregate --ordinal): NAME "
                        "or NAME=L1<L2<...; compared on z-scored ranks")
    a.add_argument("--strata", metavar="COLS", type=column_names,
                   help="comma-separated strata columns of the release (microaggregate or swap --strata): the intruder "
                        "knows a person's stratum and rebuilds the groups within strata (merged strata recoded "
                        "\"W+X\" are understood)")
    a.add_argument("--missing", choices=("raise", "pattern"), default="raise",
                   help="missing key values: raise (default) refuses them; pattern: the release was made with "
                        "microaggregate --missing pattern (the intruder knows which keys a person lacks and compares "
                        "the keys observed in both)")
    a.add_argument("--weights", metavar="COL",
                   help="the release's weight column (microaggregate --weights), released per record: the intruder "
                        "does not know a person's weight, so it is attached to a person as the confidential columns "
                        "are (name it in --keys instead if the intruder knows it)")
    a.add_argument("--raw-distances", action="store_true", help="the release's MDAV ran on raw values (swap)")
    a.add_argument("--seed", type=seed, default=None, help="seed of the intruders' tie-breaking")
    a.add_argument("--json", action="store_true", help="one JSON object on stdout")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    from .options import add_cluster_options

    add_cluster_options(a, "l-delta: the seeded batches of simulated releases")
    a.set_defaults(func=cmd_attack)

    u = command(sub, "audit", epilog=example(
        "probanon audit census.csv --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,PTOTVAL,STATETAX \\",
        "    --confidential TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL   # exit 1: PTOTVAL = POTHVAL + PEARNVAL",
        "probanon audit adult.csv --keys age,education-num,hours-per-week,sex,race,marital-status \\",
        "    --confidential education   # exit 1: education determines education-num on 48,842/48,842 rows"))
    add_input(u, "input", help="the original table, before any release")
    u.add_argument("--keys", "--columns", dest="keys", metavar="COLS", type=column_names, required=True,
                   help="comma-separated keys, of any type (text columns are read as categories)")
    u.add_argument("--confidential", metavar="COLS", type=column_names, required=True,
                   help="comma-separated columns released per record (confidential, passed through), of any type")
    u.add_argument("--nominal", metavar="COLS", type=column_names,
                   help="comma-separated numeric columns that are codes of categories: read by their values only, "
                        "never in linear or monotone relations (text columns are categories without it)")
    u.add_argument("--r2", type=float, default=0.99,
                   help="flag regressions with adjusted R^2, and monotone pairs with Spearman rho^2, at least this")
    u.add_argument("--min-share", type=float, default=0.95,
                   help="flag relations holding on, and columns (or pairs) determining another on, at least this "
                        "share of the rows")
    u.add_argument("--partial-share", type=float, default=0.25,
                   help="flag a column whose values each pin another (99%% of >= 10 rows) on at least this share of "
                        "the rows ('largely determines')")
    u.add_argument("--json", action="store_true", help="one JSON object on stdout")
    u.set_defaults(func=cmd_audit)

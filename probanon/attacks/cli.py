"""``probanon attack`` (the attack suite against a release) and ``probanon audit`` (the pre-release
audit of an original)."""

from __future__ import annotations

import json

from ..cliargs import add_input, positive_int, seed
from ..data import read_table
from ..errors import InputError
from ..progress import Progress
from ..release import align, column_list, read_link
from .setting import MECHANISMS


def _print_table(rows: list[dict]) -> None:
    columns = list(rows[0])
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in columns[:-1]}
    print("  ".join(f"{c:<{widths[c]}}" for c in columns[:-1]) + "  " + columns[-1])
    for r in rows:
        print("  ".join(f"{str(r[c]):<{widths[c]}}" for c in columns[:-1]) + "  " + str(r[columns[-1]]))


def cmd_attack(args) -> int:
    from .suite import attack

    original, released = read_table(args.original), read_table(args.released)
    keys, confidential = column_list(args.keys), column_list(args.confidential)
    if not keys:
        raise InputError("name the keys the intruder knows with --keys")
    column_rows = None
    if MECHANISMS.get(args.mechanism) == "column-wise":
        if not args.link:
            raise InputError(f"--mechanism {args.mechanism} needs the --link file of 'probanon swap' (it says where "
                             "each confidential value went)")
        position, column_rows = read_link(args.link, len(original), len(released), value_columns=confidential)
    else:
        position = align(original, released, keys, link=args.link, id=args.id, by_position=args.by_position)
    intruders = column_list(args.intruders) or None
    with Progress(f"attack: {len(original):,} records", quiet=args.quiet or args.json, desc="intruder runs") as bar:
        report = attack(original, released, keys, confidential, mechanism=args.mechanism, k=args.k, link=position,
                        column_rows=column_rows, intruders=intruders, runs=args.runs, confidence=args.confidence,
                        standardize=not args.raw_distances, random_state=args.seed, progress=bar)
    if args.json:
        print(json.dumps(report.to_dict(), allow_nan=False))
    else:
        print(report.guarantee.text())
        print(f"Intruders know: every target's original {', '.join(keys)}, the release and the mechanism "
              f"({report.mechanism}); groups: {report.groups_note}.")
        _print_table(report.rows())
        for r in report.results:
            print(f"  {r.rule}: {r.knows}")
        if report.exceeded:
            print(f"ABOVE the claimed bound: {', '.join(report.exceeded)} (their {args.confidence:.0%} interval lies "
                  "entirely above 1/k)")
    return 1 if report.exceeded else 0


def cmd_audit(args) -> int:
    from .audit import audit

    frame = read_table(args.input)
    keys, confidential = column_list(args.keys), column_list(args.confidential)
    if not keys or not confidential:
        raise InputError("name the keys (--keys) and the confidential columns (--confidential)")
    missing = [c for c in keys + confidential if c not in frame.columns]
    if missing:
        raise InputError(f"{args.input}: no column {missing[0]!r}")
    result = audit(frame, keys, confidential, r2_threshold=args.r2)
    if args.json:
        print(json.dumps(result.to_dict(), allow_nan=False))
    elif result.passed:
        print(result.summary())
    else:
        print(f"audit: {len(result.findings)} dependence(s) that void a guarantee on the keys:")
        for f in result.findings:
            print(f"  {f.direction}: {f.text}")
        print(f"remedy: {result.advice()}")
    return 0 if result.passed else 1


def add_parser(sub) -> None:
    a = sub.add_parser("attack", help="run every applicable intruder against a release; success rates with "
                                      "intervals beside the claimed bound (exit 1 when one is above it)")
    add_input(a, "original")
    add_input(a, "released")
    a.add_argument("--keys", "--columns", dest="keys", metavar="COLS", required=True,
                   help="comma-separated keys: what the intruder knows of every person")
    a.add_argument("--confidential", metavar="COLS", help="comma-separated confidential columns of the release")
    a.add_argument("--mechanism", choices=list(MECHANISMS), default="unknown",
                   help="how the release was made: sets the groups the intruders rebuild and the claimed bound")
    a.add_argument("-k", type=positive_int, help="the mechanism's k (claimed bound 1/k)")
    match = a.add_mutually_exclusive_group()
    add_input(match, "--link", metavar="FILE", help="link file written by the release command (--link)")
    match.add_argument("--id", metavar="COLUMN", help="a column identifying the records in both files")
    match.add_argument("--by-position", action="store_true",
                       help="row i of one file is row i of the other (checked: the non-key columns must agree)")
    a.add_argument("--runs", type=positive_int, default=10, help="runs of each intruder (random tie-breaking)")
    a.add_argument("--confidence", type=float, default=0.99, help="level of the Clopper-Pearson intervals")
    a.add_argument("--intruders", metavar="NAMES", help="comma-separated subset of exact,nearest,likelihood,relations")
    a.add_argument("--raw-distances", action="store_true", help="the release's MDAV ran on raw values (swap)")
    a.add_argument("--seed", type=seed, default=None, help="seed of the intruders' tie-breaking")
    a.add_argument("--json", action="store_true", help="one JSON object on stdout")
    a.add_argument("--quiet", action="store_true", help="no progress bar")
    a.set_defaults(func=cmd_attack)

    u = sub.add_parser("audit", help="find keys determined by confidential columns (and the reverse) before a "
                                     "release (exit 1 when found)")
    add_input(u, "input")
    u.add_argument("--keys", "--columns", dest="keys", metavar="COLS", required=True, help="comma-separated keys")
    u.add_argument("--confidential", metavar="COLS", required=True, help="comma-separated confidential columns")
    u.add_argument("--r2", type=float, default=0.99, help="flag regressions with adjusted R^2 at least this")
    u.add_argument("--json", action="store_true", help="one JSON object on stdout")
    u.set_defaults(func=cmd_audit)

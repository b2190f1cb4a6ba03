"""``probanon diversity check`` and ``probanon diversity attack``.

``check RELEASED [--qi COLS --sensitive COL [--count COL]] [--c C] [-k K] [-l L [--sense S]] [-t T] [--distance D] [--json]``
    k-anonymity, distinct / entropy / recursive (c, l)-diversity and t-closeness of a released
    table (:func:`probanon.diversity.checks.diversity_report`). Without ``--qi`` RELEASED is a
    count table with columns ``class``, ``sensitive``, ``count`` (as ``diversity release``
    writes it); with ``--qi`` it is microdata, one record per row unless ``--count`` names a
    column of multiplicities. ``-k``, ``-l`` (in the ``--sense`` distinct, entropy or
    recursive, which needs ``--c``) and ``-t`` are requirements: exit status 0 when every one
    given holds, 1 when one fails (the failures are listed; ``holds``, ``failed`` and
    ``requirements`` in the JSON), 2 on an error. Without any, the command only reports (0).

``attack RELEASE [RELEASE ...] (--target C[,C...] | --qi-value V --plan PLAN [--plan PLAN ...]) [--json]``
    links count tables on one target (:func:`probanon.diversity.attack.linkage_attack`). The
    target is located either by its class in each release (``--target``: one class id for all
    releases, which suits releases of one plan, or one per release) or by its quasi-identifier
    value looked up in the ``class_of`` object of plan files (``diversity plan`` output; a
    multi-column QI value is written joined by ``|``): one plan for all releases or one per
    release. Class ids are compared as text.

Both print one JSON object with ``--json``, a short summary otherwise; errors are one line
(exit status 2 through ``probanon``'s main).
"""

from __future__ import annotations

import json

import numpy as np

from .._validation import read_json_document, row_label
from .options import column_names
from .options import add_input, example
from ..data import read_table
from ..errors import InputError, ParameterError, SpecificationError
from ..diversity.attack import linkage_attack
from ..diversity.checks import DISTANCES, SENSES, diversity_report


def _print_json(obj) -> None:
    print(json.dumps(obj, allow_nan=False))


def cmd_check(args) -> int:
    if args.qi is None and args.count is not None:
        raise InputError("--count applies to microdata: give --qi and --sensitive too")
    if args.qi is not None and args.sensitive is None:
        raise InputError("--qi needs --sensitive")
    if args.sense is not None and args.l is None:
        raise ParameterError("--sense says which l-diversity -l requires: give -l too")
    sense = args.sense or "distinct"
    if sense == "recursive" and args.c is None:
        raise ParameterError("--sense recursive needs --c (recursive (c, l)-diversity)")
    table = read_table(args.released)
    report = diversity_report(table, qi=args.qi, sensitive=args.sensitive, count=args.count,
                              c=args.c, l=args.l, distance=args.distance, k=args.k, t=args.t, sense=sense)
    status = 1 if report.holds is False else 0
    if args.json:
        _print_json(report.to_dict())
        return status
    r = report
    print(f"records:            {r.records} in {r.classes} classes"
          + (f" (+{r.empty_classes} empty)" if r.empty_classes else ""))
    print(f"k-anonymity:        {r.k}")
    print(f"l-diversity:        {r.l_distinct} (distinct)")
    print(f"entropy l:          {r.l_entropy:.4f} (exp of the smallest class entropy {r.entropy_min:.4f} nats)")
    if r.c is not None:
        print(f"recursive (c, l):   l = {r.l_recursive} for c = {r.c:g}")
    print(f"t-closeness:        {r.t_closeness:.4f} (EMD, {r.distance} distance)")
    for requirement in r.requirements:
        print(f"required:           {requirement.describe()}")
    if r.holds is not None:
        print("result:             " + ("every requirement holds" if r.holds else f"FAILS: {', '.join(r.failed)}"))
    return status


def _read_release(path):
    table = read_table(path)
    missing = [c for c in ("class", "sensitive", "count") if c not in table.columns]
    if missing:
        raise InputError(f"{path}: not a count table (no column {missing[0]!r})")
    if table["class"].isna().any():
        raise InputError(f"{path}: the class column has a missing value "
                         f"({row_label(table, int(np.argmax(table['class'].isna().to_numpy())))})")
    table["class"] = table["class"].astype(str)
    return table


def _class_of(path) -> dict:
    """The ``class_of`` object of a plan file; a document that declares itself a probanon plan
    (``format``) must be a valid one (an edited plan is refused, as by ``diversity release``)."""
    plan = read_json_document(path, "plan")
    if isinstance(plan, dict) and "format" in plan:
        from ..diversity.planning import DiversityPlan

        try:
            DiversityPlan.from_dict(plan)
        except SpecificationError as exc:
            raise SpecificationError(f"{path}: {exc}") from None
    class_of = plan.get("class_of") if isinstance(plan, dict) else None
    if not isinstance(class_of, dict) or not class_of:
        raise SpecificationError(f"plan {path} has no class_of object (QI value -> class id)")
    return {str(q): str(c) for q, c in class_of.items()}


def cmd_attack(args) -> int:
    releases = [_read_release(p) for p in args.releases]
    t = len(releases)
    if args.target is not None:
        if args.plan or args.qi_value is not None:
            raise InputError("give either --target or --qi-value with --plan, not both")
        target = [c.strip() for c in args.target.split(",")]
        if len(target) == 1:
            target = target * t
        if len(target) != t:
            raise InputError(f"--target gives {len(target)} classes for {t} releases (give one, or one per release)")
        result = linkage_attack(releases, target)
    else:
        if args.qi_value is None or not args.plan:
            raise InputError("locate the target with --target, or with --qi-value and --plan")
        plans = [_class_of(p) for p in args.plan]
        if len(plans) not in (1, t):
            raise InputError(f"{len(plans)} plans for {t} releases (give one, or one per release)")
        result = linkage_attack(releases, args.qi_value, class_of=plans[0] if len(plans) == 1 else plans)
    if args.json:
        _print_json(result.to_dict())
        return 0
    print(f"target classes:     {', '.join(str(c) for c in result.target_classes)}")
    print(f"l per release:      {', '.join(str(v) for v in result.l_releases)}")
    print(f"after linkage:      l = {result.l_linked} (worst case for such releases: {result.worst_case_l})")
    print("surviving values:   " + ", ".join(f"{s} ({n})" for s, n in result.surviving))
    return 0


def add_check_commands(subparsers) -> None:
    """Add ``check`` and ``attack`` to the ``probanon diversity`` subcommands."""
    c = subparsers.add_parser("check", help="k-anonymity, l-diversity (distinct, entropy, recursive), t-closeness",
                              epilog=example(
        "probanon diversity check counts.csv -k 20 -l 3          # exit 1 when a requirement fails",
        "probanon diversity check hospital.csv --qi zip,age --sensitive disease -l 2 --sense entropy -t 0.3"))
    add_input(c, "released", help="microdata (with --qi, --sensitive) or a count table class,sensitive,count")
    c.add_argument("--qi", type=column_names, help="comma-separated quasi-identifier columns (microdata)")
    c.add_argument("--sensitive", help="sensitive column (default 'sensitive' for a count table)")
    c.add_argument("--count", help="microdata: column of record multiplicities")
    c.add_argument("--c", type=float, help="c of recursive (c, l)-diversity: report the largest l")
    c.add_argument("-k", type=int, help="require k-anonymity of at least K (exit 1 otherwise)")
    c.add_argument("-l", type=int, help="require l-diversity of at least L in the --sense given (exit 1 otherwise)")
    c.add_argument("--sense", choices=SENSES, default=None,
                   help="the l-diversity -l requires: distinct (default), entropy, or recursive (needs --c)")
    c.add_argument("-t", type=float, help="require t-closeness of at most T, in [0, 1] (exit 1 otherwise)")
    c.add_argument("--distance", choices=DISTANCES, default="auto",
                   help="t-closeness ground distance (auto: ordered for numeric values, else equal)")
    c.add_argument("--json", action="store_true", help="one JSON object on stdout")
    c.set_defaults(func=cmd_check)

    a = subparsers.add_parser("attack", help="link released count tables on a target (per-class minimum)",
                              epilog=example(
        "probanon diversity attack counts_2026.csv counts_2027.csv --target 0",
        "probanon diversity attack counts_2026.csv counts_2027.csv --qi-value \"Female|White\" --plan plan.json"))
    add_input(a, "releases", nargs="+", metavar="RELEASE", help="count tables class,sensitive,count")
    a.add_argument("--target", help="the target's class id: one for all releases or one per release, comma-separated")
    a.add_argument("--qi-value", help="the target's QI value (columns joined by '|'), located with --plan")
    add_input(a, "--plan", table=False, action="append", default=[], help="plan JSON with class_of (once, or once per release)")
    a.add_argument("--json", action="store_true", help="one JSON object on stdout")
    a.set_defaults(func=cmd_attack)

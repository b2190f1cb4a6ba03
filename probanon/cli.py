"""The ``probanon`` command.

Every error on bad input is one line on stderr (``probanon: error: ...``) with exit status 2,
and no output file is left behind (outputs are written only after all work succeeded, each
atomically).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from . import __version__
from .data import quasi_identifiers, read_table, released_frame, synthetic_survey, write_outputs, write_table
from .diversity import cli as diversity_cli
from .setvalued import cli as km_cli
from .errors import InputError, ProbanonError
from .metrics import k_achieved, utility_report
from .microagg import METHODS, function_from_json
from .reproduce import cli as reproduce_cli
from .survey import cli as survey_cli
from .swapping import cli as swapping_cli


def _method(args):
    cls = METHODS[args.method]
    if args.method == "mdav":
        return cls(args.k, keep_duplicates=args.keep_duplicates)
    if args.method == "vmdav":
        return cls(args.k, gamma=args.gamma)
    if args.method == "pcl":
        return cls(args.k, init=args.init, random_state=args.seed)
    return cls(args.k)


def cmd_microaggregate(args) -> int:
    frame = read_table(args.input)
    X, columns = quasi_identifiers(frame, args.columns)
    model = _method(args)
    released = model.fit_transform(X)
    out = released_frame(frame, columns, released)
    report = utility_report(X, released)
    outputs = {args.output: out}
    if args.function:
        model.function_.columns = columns
        outputs[args.function] = model.function_.to_json(indent=1)
    write_outputs(outputs)
    print(
        f"{args.method}: {len(out)} records, {len(columns)} quasi-identifiers, k = {model.k_}, "
        f"k achieved = {k_achieved(out, columns)}, information loss = {report.information_loss:.2f}%",
        file=sys.stderr,
    )
    return 0


def cmd_apply(args) -> int:
    function = function_from_json(args.function)
    frame = read_table(args.input)
    columns = function.columns or args.columns
    X, columns = quasi_identifiers(frame, columns)
    labels = function.assign(X)
    if labels.ndim == 1:
        values = np.asarray(function.centroids)[labels]
    else:
        values = np.column_stack([function.centroids[j][labels[:, j]] for j in range(labels.shape[1])])
    out = released_frame(frame, columns, values)
    if labels.ndim == 1:
        out["cell"] = labels
    write_table(out, args.output)
    return 0


def cmd_evaluate(args) -> int:
    original = read_table(args.original)
    released = read_table(args.released)
    if len(original) != len(released):
        raise InputError(f"the tables have different numbers of records ({len(original)} and {len(released)})")
    X, columns = quasi_identifiers(original, args.columns)
    missing = [c for c in columns if c not in released.columns]
    if missing:
        raise InputError(f"released table has no column {missing[0]!r}")
    Y, _ = quasi_identifiers(released, columns)
    result = utility_report(pd.DataFrame(X, columns=columns), pd.DataFrame(Y, columns=columns)).to_dict()
    result["k_achieved"] = k_achieved(released, columns)
    if args.risk:
        from .metrics import interval_disclosure, record_linkage

        result["record_linkage"] = record_linkage(X, Y)
        result["interval_disclosure"] = interval_disclosure(X, Y)
    if args.json:
        print(json.dumps(result, allow_nan=False))
    else:
        print(f"records:            {result['n_records']}")
        print(f"quasi-identifiers:  {', '.join(columns)}")
        print(f"information loss:   {result['information_loss']:.4f} %")
        print(f"k achieved:         {result['k_achieved']}")
        if result["correlation_difference_max"] is not None:
            print(f"max |corr diff|:    {result['correlation_difference_max']:.4f}")
        if args.risk:
            print(f"record linkage:     {result['record_linkage']:.4f} (expected share re-identified, nearest neighbour)")
            print(f"interval disclosure: {result['interval_disclosure']:.4f} (sdcMicro dRisk, 5% of sd)")
    return 0


def cmd_demo(args) -> int:
    from tqdm import tqdm

    from .metrics import information_loss
    from .report import Report, line_figure

    out_dir = Path(args.output_dir)
    data = synthetic_survey(args.records, random_state=args.seed)
    qi = ["age", "income", "household", "hours"]
    X = data[qi].to_numpy(float)
    ks = [2, 3, 4, 5, 7, 10, 15, 20]
    methods = {"MDAV": "mdav", "V-MDAV": "vmdav", "individual ranking": "ranking", "PCL": "pcl"}
    rows, series = [], {}
    for label, name in tqdm(methods.items(), desc="methods", disable=args.quiet):
        ils = []
        for k in ks:
            model = METHODS[name](k, random_state=args.seed) if name == "pcl" else METHODS[name](k)
            released = model.fit_transform(X)
            il = information_loss(X, released)
            ils.append(il)
            rows.append({"method": label, "k": k, "information loss %": il,
                         "k achieved": k_achieved(pd.DataFrame(released)) if name != "ranking" else "per column"})
        series[label] = (ks, ils)
    main = METHODS["mdav"](5)
    release = released_frame(data, qi, main.fit_transform(data[qi]))
    evaluation = utility_report(data[qi], release[qi]).to_dict()
    evaluation["k_achieved"] = k_achieved(release, qi)
    out_dir.mkdir(parents=True, exist_ok=True)
    write_outputs({
        out_dir / "release_mdav_k5.csv": release,
        out_dir / "function_mdav_k5.json": main.function_.to_json(indent=1),
        out_dir / "evaluation_mdav_k5.json": json.dumps(evaluation, indent=2, allow_nan=False),
    })

    rep = Report("probanon demo: microaggregation of a synthetic survey")
    rep.text("Data", f"{len(data)} synthetic records (seed {args.seed}); quasi-identifiers: {', '.join(qi)}; "
             "confidential: health_spending, savings. Information loss IL = 100 SSE/SST on z-scored data.")
    rep.figure("il_vs_k", line_figure(series, "k", "information loss (%)", "Information loss against k"),
               "Information loss against k for MDAV, V-MDAV and individual ranking")
    rep.table(rows)
    rep.text("Release at k = 5 (MDAV)", f"k achieved = {evaluation['k_achieved']}, IL = "
             f"{evaluation['information_loss']:.2f}%, max |correlation difference| = "
             f"{evaluation['correlation_difference_max']:.4f}. Files: release_mdav_k5.csv, "
             "function_mdav_k5.json (the publishable microaggregation function), evaluation_mdav_k5.json.")
    path = rep.write(out_dir)
    print(f"report written to {path}", file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="probanon", description="Probabilistic anonymity for microdata.")
    p.add_argument("--version", action="version", version=f"probanon {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    m = sub.add_parser("microaggregate", help="replace quasi-identifiers by group centroids")
    m.add_argument("input")
    m.add_argument("-o", "--output", required=True)
    m.add_argument("-k", type=int, required=True, help="minimum group size")
    m.add_argument("--method", choices=sorted(METHODS), default="mdav")
    m.add_argument("--columns", help="comma-separated quasi-identifier columns (default: all numeric)")
    m.add_argument("--function", metavar="FUNC.json", help="also write the fitted, publishable function")
    m.add_argument("--seed", type=int, default=0,
                   help="seed of PCL's iterated local search (default 0; MDAV, V-MDAV and ranking are deterministic)")
    m.add_argument("--gamma", type=float, default=0.2, help="V-MDAV extension parameter")
    m.add_argument("--init", choices=("auto", "mdav", "pca"), default="auto",
                   help="PCL start: MDAV (the paper's), principal-direction bisection, or auto "
                        "(both for groups of >= 256 records, keeping the better; default)")
    m.add_argument("--keep-duplicates", action="store_true", help="MDAV: never split identical tuples")
    m.set_defaults(func=cmd_microaggregate)

    a = sub.add_parser("apply", help="apply a published function to records")
    a.add_argument("function", metavar="FUNC.json")
    a.add_argument("input")
    a.add_argument("-o", "--output", required=True)
    a.add_argument("--columns", help="quasi-identifier columns if the function does not name them")
    a.set_defaults(func=cmd_apply)

    e = sub.add_parser("evaluate", help="utility and anonymity of a release")
    e.add_argument("original")
    e.add_argument("released")
    e.add_argument("--columns")
    e.add_argument("--json", action="store_true", help="one JSON object on stdout")
    e.add_argument("--risk", action="store_true",
                   help="also disclosure risk on the quasi-identifiers: record linkage and interval disclosure")
    e.set_defaults(func=cmd_evaluate)

    d = sub.add_parser("demo", help="end-to-end run on built-in synthetic data, HTML report")
    d.add_argument("--output-dir", default="report")
    d.add_argument("--records", type=int, default=2000)
    d.add_argument("--seed", type=int, default=2026)
    d.add_argument("--quiet", action="store_true")
    d.set_defaults(func=cmd_demo)

    survey_cli.add_parser(sub)
    reproduce_cli.add_parser(sub)
    swapping_cli.add_parser(sub)
    diversity_cli.add_parser(sub)
    km_cli.add_parser(sub)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    k = getattr(args, "k", None)
    if k is not None and min(k if isinstance(k, tuple) else (k,)) < 1:
        parser.exit(2, f"probanon: error: k must be >= 1, got {args.k}\n")
    try:
        return args.func(args)
    except ProbanonError as exc:
        print(f"probanon: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("probanon: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

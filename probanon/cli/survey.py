"""``probanon survey ...``: plan, design, verify, assign, simulate (paper 1)."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

from .options import (
    SUMMARY_WIDTH,
    add_input,
    add_output,
    add_release_options,
    column_names,
    example,
    ordinal_keys,
    positive_int,
    seed,
    summary_lines,
)
from .parser import command
from ..data import read_table
from ..errors import ParameterError, SpecificationError
from ..labelled import labels_of
from ..survey.anonymity import required_anonymity, table_failure, table_sizes


def _print(obj) -> None:
    print(json.dumps(obj, allow_nan=False))


def _probability(p: float) -> str:
    """A probability for a reader: four significant digits, and ``1 - 7.18e-10`` rather than a
    rounded 1 when it is that close to one."""
    return f"1 - {1 - p:.3g}" if 0.9995 <= p < 1 else f"{p:.4g}"


def cmd_plan(args) -> int:
    eff = required_anonymity(args.k, args.participation, args.risk, args.max_records)
    out = {
        "k": eff.k, "participation": args.participation, "risk": eff.risk,
        "n_min": eff.n,
        "cell_failure": eff.cell_failure,
        "mean_unprotected": eff.mean_unprotected,
        "record_failure": eff.record_failure,
        "record_failure_participant": eff.record_failure_participant,
    }
    if args.records is not None:
        out["records"] = args.records
        out["table_failure"] = table_failure(args.records, args.k, args.participation, args.risk)
    if args.json:
        _print(out)
    else:
        print(_plan_summary(out))
    return 0


def _plan_summary(out: dict) -> str:
    """``survey plan`` in words (paper 1, Algorithm A): what each indicator is the probability of."""
    k, n = out["k"], out["n_min"]
    rows = [("survey plan", f"k = {k}, participation pi = {out['participation']:g}, acceptable cell failure "
                            f"{out['risk']:g} (paper 1, Algorithm A)"),
            ("effective anonymity n_min", f"{n:,} records per cell: the smallest cell that fails with probability "
                                          f"<= {out['risk']:g}"),
            ("cell failure qbar", f"{_probability(out['cell_failure'])}: probability that a cell of {n:,} records ends "
                                  f"with 0 < respondents < {k} (an empty cell is safe)"),
            ("mean unprotected u", f"{out['mean_unprotected']:.4g} respondents: how many a failing cell holds, "
                                   "on average"),
            ("record failure rbar", f"{_probability(out['record_failure'])}: probability that a record responds and "
                                    "lands in a failing cell"),
            ("given participation rbar'", f"{_probability(out['record_failure_participant'])}: probability that a "
                                          "respondent lands in a failing cell")]
    if "records" in out:
        sizes = table_sizes(out["records"], k, out["participation"], out["risk"])
        shape = (f"{len(sizes) - 1:,} cells of {n:,} and one of {sizes[-1]:,}" if len(sizes) > 1 else
                 f"one cell of {sizes[0]:,}")
        rows += [("table", f"{out['records']:,} records: {shape}"),
                 ("table failure tbar", f"{_probability(out['table_failure'])}: probability that at least one cell "
                                        "of the table fails")]
    return summary_lines(rows)


def _participation_model(args):
    """The logistic participation model of ``--previous-wave``, fitted."""
    from ..survey.participation import LogisticParticipation

    if args.covariates is None:
        raise ParameterError("--previous-wave needs --covariates (the columns of the participation model)")
    model = LogisticParticipation(args.covariates, responded=args.responded, confidence=args.robust,
                                  optimism=0.0 if args.optimism is None else args.optimism)
    return model.fit(read_table(args.previous_wave))


def cmd_design(args) -> int:
    from .progress import Counting, Progress
    from ..survey.design import METHODS, design
    from ..survey.spec import build_spec

    frame = read_table(args.population)
    participation = args.participation if args.participation_column is None else args.participation_column
    if args.previous_wave is not None:  # issue 18.3: a logistic model fitted on the previous wave
        participation = _participation_model(args)
    elif (args.covariates, args.robust, args.optimism) != (None, None, None):
        raise ParameterError("--covariates, --robust and --optimism need --previous-wave")
    note = f"survey design: {len(frame)} records into cells of k = {args.k} or more"
    with Progress(note, quiet=args.quiet, desc="survey design", total=len(frame), unit="record") as progress:
        d = design(frame, args.k, participation, args.risk, columns=args.columns, progress=Counting(progress),
                   weights=args.weights, method=args.method, nominal=args.nominal, ordinal=ordinal_keys(args.ordinal),
                   random_state=args.seed)
    spec = build_spec(d, participation_column=args.participation_column, labels=labels_of(frame))
    args.outputs.write({args.output: json.dumps(spec, indent=1, allow_nan=False)})
    sizes = d.sizes
    print(f"{METHODS[d.method]} design on the keys {', '.join(map(str, d.function.columns or []))}: "
          f"{len(sizes)} cells of {sizes.min()}..{sizes.max()} records (n_min = {d.n_min}), "
          f"largest cell failure {d.cell_failures.max():.3g} <= {d.risk}, distortion D = {d.distortion:.4f}",
          file=sys.stderr)
    _warn_length(spec, d.function)
    return 0


def _warn_length(spec: dict, function) -> None:
    """A tree design's questionnaire too long to print (:func:`.questionnaire.check_length`)."""
    from ..survey.questionnaire import check_length

    check_length(spec, function)


def cmd_questionnaire(args) -> int:
    """The printable questionnaire of a verified tree specification (issue 18.1)."""
    from ..survey.questionnaire import questionnaire_html
    from ..survey.spec import verify

    labels = {}
    for item in args.label or []:
        name, sep, text = item.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise ParameterError(f"--label must be NAME=TEXT, got {item!r}")
        labels[name.strip()] = text.strip()
    verified = verify(args.spec, expected_digest=args.digest)
    page = questionnaire_html(verified, labels=labels, title=args.title)
    args.outputs.write({args.output: page})
    print(f"questionnaire written to {args.output}", file=sys.stderr)
    _warn_length(verified.spec, verified.function)
    return 0


def cmd_verify(args) -> int:
    """Exit 0: valid (and, with --digest, the very specification published); 1: well-formed
    but not the published one or its guarantee fails; 2: malformed, unreadable or altered."""
    from ..survey.spec import GuaranteeError, verify

    try:
        v = verify(args.spec, expected_digest=args.digest)
    except GuaranteeError as exc:
        print(f"NOT valid: {exc}")
        print(f"digest: {exc.digest}")
        return 1
    g = v.guarantee
    print(f"valid: {len(v.spec['cells'])} cells, k = {g['k']}, every cell fails with probability <= {g['risk']}")
    print(f"digest: {v.digest}" + (" (equal to the digest given)" if v.digest_confirmed else
                                   " (not compared: pass the digest published elsewhere with --digest)"))
    return 0


def cmd_assign(args) -> int:
    from .apply import apply_to_file
    from ..release import column_list
    from ..survey.spec import assign, verify

    v = verify(args.spec)
    # categorical keys (a tree design's): read as they are
    categorical = v.function.encoding.categorical() if v.function.encoding is not None else ()

    def cells(X, frame):
        found, centroids = assign(v, X)
        return centroids, {"cell": found}, {}

    keys = list(v.function.columns or column_list(args.keys))
    means = {c: None for c in keys if c not in categorical}  # centroids: floats, not codes
    # read whole or in chunks (--chunk-size) as by 'probanon apply'
    return apply_to_file(args, args.responses, keys, cells, categorical=categorical, means=means)


def cmd_simulate(args) -> int:
    """Refuses (exit 2) a population that is not the one the specification declares. With
    --scheduler/--workers the seeded batches run as tasks on a Dask cluster (the same result)."""
    from .options import batch_runner, cluster_from_args
    from .progress import Progress
    from ..survey.simulation import simulate_spec
    from ..survey.spec import verify

    if args.runs < 1:
        raise ParameterError(f"runs must be >= 1, got {args.runs}")
    v = verify(args.spec)
    frame = read_table(args.population)
    note = f"survey simulate: {args.runs:,} runs of {len(frame):,} records"
    with cluster_from_args(args) as client, Progress(note, quiet=args.quiet, desc="survey simulate") as progress:
        result = simulate_spec(v, frame, args.runs, random_state=args.seed, runner=batch_runner(client),
                               progress=progress)
    if args.json:
        _print(result.to_dict())
    else:
        print(_simulation_summary(result))
    return 0


#: the indicators of a simulation: (field, name, what was counted)
SIMULATED = (("cell_failure", "cell failure qbar", "share of the (cell, run) pairs in which a cell ends with "
                                                   "0 < respondents < k"),
             ("mean_unprotected", "mean unprotected u", "respondents in a failing cell, on average"),
             ("record_failure", "record failure rbar", "share of all records that respond into a failing cell"),
             ("record_failure_participant", "given participation rbar'", "share of the respondents in a failing "
                                                                         "cell"),
             ("table_failure", "table failure tbar", "share of the runs in which at least one cell fails"))
#: fewer failing cells than this: the normal interval of a ratio (u, rbar, rbar') is not reliable
FEW_FAILURES = 30


def _simulation_summary(r) -> str:
    """``survey simulate`` in words: each indicator observed, its interval, Algorithm A's
    prediction and whether the prediction lies in the interval (``*_agrees``), and why not."""
    level = f"{100 * r.confidence:g} %"
    table = [("", "observed", f"{level} interval", "predicted", "agrees")]
    for field, name, _ in SIMULATED:
        interval, agrees = getattr(r, f"{field}_interval"), getattr(r, f"{field}_agrees")
        table.append((name, f"{getattr(r, f'observed_{field}'):.4g}",
                       "-" if interval is None else f"[{interval[0]:.4g}, {interval[1]:.4g}]",
                       f"{getattr(r, f'predicted_{field}'):.4g}", {True: "yes", False: "NO", None: "-"}[agrees]))
    widths = [max(len(row[j]) for row in table) for j in range(5)]
    lines = [f"survey simulate: {r.runs:,} runs of {r.records:,} records in {r.cells:,} cells, k = {r.k}; "
             f"{r.failing_cells:,} failing (cell, run) pairs of {r.cells * r.runs:,}"]
    lines += ["  " + "  ".join(text.ljust(w) for text, w in zip(row, widths)).rstrip() for row in table]
    lines += ["where"] + [f"  {name}: {what}" for _, name, what in SIMULATED]
    lines += textwrap.wrap("predicted: Algorithm A's value; agrees: the prediction lies in the interval (exact "
                           "Clopper-Pearson for the cell and table failures, approximate normal for the three ratios; "
                           "'-': fewer than two failing cells, no interval)", SUMMARY_WIDTH,
                           initial_indent="  ", subsequent_indent="    ")
    for field, name, _ in SIMULATED:
        if getattr(r, f"{field}_agrees") is False:
            lines += textwrap.wrap(_disagreement(r, field, name, level), SUMMARY_WIDTH, subsequent_indent="  ")
    missed = sum(getattr(r, f"{field}_agrees") is False for field, _, _ in SIMULATED)
    lines += textwrap.wrap("result: " + ("every prediction lies in its interval" if not missed else
                                         f"{missed} of {len(SIMULATED)} predictions outside their interval (each "
                                         f"misses with probability about {100 - 100 * r.confidence:g} % when the "
                                         "prediction is right)"), SUMMARY_WIDTH, subsequent_indent="  ")
    return "\n".join(lines)


def _disagreement(r, field: str, name: str, level: str) -> str:
    """Why one prediction lies outside its interval, in words."""
    low, high = getattr(r, f"{field}_interval")
    text = (f"{name} does not agree: Algorithm A predicts {getattr(r, f'predicted_{field}'):.4g}, outside the {level} "
            f"interval [{low:.4g}, {high:.4g}] of the observed {getattr(r, f'observed_{field}'):.4g}.")
    if field in ("cell_failure", "table_failure"):
        return text + (" The interval is exact: a difference that persists with another --seed points at the "
                       "design.")
    if low == high:
        text += (f" Every one of the {r.failing_cells:,} failing cells held the same number of respondents, so the "
                 "interval has no width at all.")
    if r.failing_cells < FEW_FAILURES:
        text += (f" The interval of a ratio is approximate and rests on {r.failing_cells:,} failing cells; below about "
                 f"{FEW_FAILURES} it cannot be trusted: repeat with more --runs.")
    return text


def cmd_respond(args) -> int:
    """Exit 0: stored (or already stored); 2: refused, unreachable or not verified (one line)."""
    from ..service.client import parse_pairs, respond

    if args.token_file == "-" and args.values_file == "-":
        raise ParameterError("--token-file and --values-file cannot both read standard input (-)")
    if args.values is not None:
        values = parse_pairs(args.values, "values")
    elif args.values_file is not None:
        values = parse_pairs(_read_secret(args.values_file, "--values-file"), "values-file", lines=True)
    else:
        values = _ask_values
    token = _ask_token if args.token_file is None else _first_line(_read_secret(args.token_file, "--token-file"))
    answers = parse_pairs(args.answers, "answers")
    # without --digest (an open survey): the library notes that the document was not checked against a letter
    r = respond(args.url, args.survey, values, answers, token=token, expected_digest=args.digest,
                show=_show_document)
    shown = dict(r.sent, token="(given)") if "token" in r.sent else r.sent
    print("sent: " + json.dumps(shown, allow_nan=False))
    print(f"collector: HTTP {r.status} " + json.dumps({k: v for k, v in r.reply.items() if k != "receipt"},
                                                     allow_nan=False))
    if r.receipt is not None:  # verified: the respondent keeps it to check the release report's chain
        print("receipt (verified; keep it): " + json.dumps(r.receipt, allow_nan=False))
    if r.note:
        print(f"probanon: note: {r.note}", file=sys.stderr)
    return 0 if r.stored else 2


def cmd_check_page(args) -> int:
    """Exit 0: every file the page loads and every file the survey document lists is served as the
    document says, and the document lists this machine's probanon page files (or
    --accept-other-version); 2: a file differs, is missing or is not listed, or the document's
    files are another version's (one line per file on stdout)."""
    from .. import __version__
    from ..service.pagecheck import Finding, check_page

    found = check_page(args.url, args.survey, expected_digest=args.digest)
    for finding in found:
        print(finding.line())
    findings = [f for f in found if isinstance(f, Finding)]
    other = [f for f in found if not isinstance(f, Finding)]
    bad = [f for f in findings if not f.ok]
    if bad:
        raise SpecificationError(f"{len(bad)} of {len(findings)} files of the page of survey {args.survey} are not "
                                 f"the ones its document lists ({bad[0].path} first): the page does not run what "
                                 "was published")
    if other and not args.accept_other_version:
        raise SpecificationError(f"the survey document lists {len(other)} page file(s) other than this machine's "
                                 f"probanon {__version__} has ({other[0].name} first): the collector runs another "
                                 "version of the page; read its files, then give --accept-other-version to accept it")
    print(f"the page of survey {args.survey} runs the {len(findings)} files its document lists" +
          (f"; {len(other)} of them are not this machine's probanon {__version__}'s (accepted: --accept-other-version)"
           if other else f", those of this machine's probanon {__version__}"))
    return 0


def _show_document(document: dict, spec: dict, digest: str | None = None) -> None:
    """What the verified survey document says (issue 40.4), ``document: ...`` lines on standard
    output (its digest first), before anything is asked or sent."""
    from ..service.document import summary

    for line in summary(document, spec, digest):
        print(f"document: {line}", flush=True)


def cmd_receipt(args) -> int:
    """Exit 0: the release report counts the receipt's row (and its chain is intact); 2: it does not
    (one line saying why)."""
    from ..errors import InputError
    from ..service.receipts import counted

    def load(path, option):
        try:
            return json.loads(_read_secret(path, option))
        except ValueError:
            raise InputError(f"{option}: {path} is not JSON") from None

    report = load(args.report, "--report")
    if isinstance(report, dict) and isinstance(report.get("report"), dict):  # the release in its JSON format
        report = report["report"]
    receipt = load(args.receipt, "--receipt")
    try:
        position = counted(report, receipt, args.key)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    chain = report["chain"]
    print(f"counted: your row (digest {receipt['row_digest']}) is row {position + 1} of {chain['rows']} in the "
          f"chain of release {report.get('release', {}).get('seq', '?')} of survey {report['survey']}, head "
          f"{chain['head']}" + ("; the receipt is the survey's signature" if args.key else
                                "; signature not checked (give --key, the survey's receipt_key)"))
    return 0


def _read_secret(path: str, option: str) -> str:
    """The text of ``path``, or of standard input for ``-``."""
    if path == "-":
        return sys.stdin.read()
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ParameterError(f"{option}: cannot read {path} ({getattr(exc, 'strerror', None) or exc})") from None


def _first_line(text: str) -> str:
    return next(iter(text.splitlines()), "").strip()


def _terminal(what: str, options: str) -> None:
    if not sys.stdin.isatty():
        raise ParameterError(f"{what}: give {options} (there is no terminal to ask at)")


def _ask_token() -> str:
    """The invitation code, typed at a hidden prompt (the survey takes one, none was given)."""
    import getpass

    _terminal("this survey takes your invitation code", "--token-file FILE, or --token-file - to read standard input")
    return getpass.getpass("your invitation code (not shown): ")


def _ask_values(columns: list, questions: dict) -> dict:
    """The quasi-identifiers, one prompt each (on standard error; they are never sent)."""
    _terminal("your quasi-identifiers", "--values-file FILE (or - for standard input) or --values")
    print("your answers to these questions stay on this machine: only the cell they fall in is sent",
          file=sys.stderr)
    out = {}
    for column in columns:
        q = questions.get(column) or {}
        unit = f" ({q['unit']})" if q.get("unit") else ""
        print(f"{q.get('label') or column}{unit}: ", end="", file=sys.stderr, flush=True)
        line = sys.stdin.readline()
        if not line:
            raise ParameterError(f"no value for {column!r}: standard input ended")
        out[column] = line.strip()
    return out


class _RefuseToken(argparse.Action):
    """``--token`` on the command line: refused (other users see it in the process list, and the
    shell keeps it in its history); the value is never echoed."""

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error("--token: an invitation code is never given on the command line (the process list and "
                     "the shell history keep it): use --token-file FILE, --token-file - (standard input) or "
                     "type it when asked")


def add_parser(sub) -> None:
    s = command(sub, "survey", epilog=example(
        "probanon survey plan -k 5 --participation 0.6 --risk 0.001",
        "probanon survey design census.csv -k 5 --participation 0.6 --risk 0.001 --columns AGI,FEDTAX -o spec.json",
        "probanon survey simulate spec.json census.csv --runs 2000 --seed 1"))
    ss = s.add_subparsers(dest="survey_command", required=True)

    p = ss.add_parser("plan", help="effective anonymity n_min and failure rates", epilog=example(
        "probanon survey plan -k 20 --participation 0.5 --risk 0.1 --records 10000   # n_min = 48 (paper 1, Table II)"))
    p.add_argument("-k", type=positive_int, required=True,
                   help="the k every cell must reach among its respondents (0 respondents is safe too)")
    p.add_argument("--participation", type=float, required=True, help="participation probability pi in (0, 1]")
    p.add_argument("--risk", type=float, required=True, help="acceptable cell failure pbar in (0, 1)")
    p.add_argument("--records", type=int, help="records N of the table, for the table failure")
    p.add_argument("--max-records", type=int, default=None, help="largest cell to try (default 10^7)")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the summary")
    p.set_defaults(func=cmd_plan)

    d = ss.add_parser("design", help="design and publish the microaggregation function", epilog=example(
        "# census.csv: a model population of the survey (here the CASC census file)",
        "probanon survey design census.csv -k 5 --participation 0.6 --risk 0.001 \\",
        "    --columns AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX -o spec.json"))
    add_input(d, "population", help="a model population: records like those the survey will reach, with the "
                                    "quasi-identifier columns")
    d.add_argument("-k", type=positive_int, required=True, help="the k every cell must reach among its respondents")
    g = d.add_mutually_exclusive_group(required=True)
    g.add_argument("--participation", type=float, help="one participation probability pi in (0, 1] for everyone")
    g.add_argument("--participation-column", metavar="COL",
                   help="a population column of per-record participation probabilities pi_j in (0, 1]")
    add_input(g, "--previous-wave", metavar="FILE",
              help="a previous wave of the same frame with a 0/1 --responded column: pi_j from a logistic "
                   "regression on --covariates, applied to the population (the model is published in the spec)")
    d.add_argument("--responded", default="responded", metavar="COL", help="the previous wave's 0/1 column")
    d.add_argument("--covariates", metavar="A,B,...", type=column_names, help="the covariates of the participation model")
    d.add_argument("--robust", type=float, metavar="CONF",
                   help="design with each pi_j's one-sided lower confidence bound at this level, in (0.5, 1)")
    d.add_argument("--optimism", type=float, metavar="F",
                   help="how much too high the model may be (e.g. 0.2): pi_j divided by 1 + F")
    d.add_argument("--risk", type=float, required=True,
                   help="acceptable cell failure pbar in (0, 1): each cell ends with 0 < respondents < k with "
                        "probability at most this")
    d.add_argument("--columns", metavar="COLS", type=column_names,
                   help="comma-separated quasi-identifier columns (default: every numeric column)")
    d.add_argument("--weights", metavar="COL",
                   help="design weights (a population column, numbers > 0): the centroids and the distortion D weight "
                        "each record by d_j pi_j; the cells do not change")
    d.add_argument("--method", choices=("mdav", "pcl", "tree"), default="mdav",
                   help="mdav (default, the paper's: respondents apply the published function on their device), pcl "
                        "(the same trust, PCL cells: lower distortion), tree (respondents who trust no software: "
                        "questions on one key each, followed on paper, see 'survey questionnaire')")
    d.add_argument("--nominal", metavar="COLS", type=column_names, help="tree: comma-separated nominal keys (questions on sets of categories)")
    d.add_argument("--ordinal", metavar="COLS", help="tree: comma-separated ordinal keys, NAME (levels in numeric, else "
                                                     "text order) or NAME=L1<L2<... (levels in that order)")
    d.add_argument("--seed", type=seed, default=None, help="pcl: seed of its random kicks (default: fresh entropy)")
    add_output(d, "-o", "--output", required=True, metavar="SPEC.json",
               help="the specification to publish (the function, the cells, the guarantee and its digest)")
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.set_defaults(func=cmd_design)

    q = ss.add_parser("questionnaire", help="the printable questions of a tree design (survey design --method tree)",
                      epilog=example(
        "probanon survey design census.csv -k 5 --participation 0.6 --risk 0.01 --columns AGI,FEDTAX \\",
        "    --method tree -o tree_spec.json",
        "probanon survey questionnaire tree_spec.json -o form.html --label AGI=\"adjusted gross income\""))
    add_input(q, "spec", table=False, help="a tree specification (survey design --method tree)")
    add_output(q, "-o", "--output", required=True, help="the HTML page (self-contained; print it from a browser)")
    q.add_argument("--digest", metavar="sha256:HEX", help="the digest the specification must have (see verify)")
    q.add_argument("--label", action="append", metavar="NAME=TEXT",
                   help="how a key is named in the questions (repeatable), e.g. --label age='age in years'")
    q.add_argument("--title", help="the page's title (default: 'Find your cell')")
    q.set_defaults(func=cmd_questionnaire)

    v = ss.add_parser("verify", help="check a published specification (exit 0 valid, 1 not, 2 malformed)",
                      epilog=example(
        "probanon survey verify spec.json     # prints its digest: compare it with the invitation's",
        "# or let the command compare it: the digest printed in the invitation letter",
        "probanon survey verify spec.json --digest sha256:"
        "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"))
    add_input(v, "spec", table=False, help="the specification (a file, as published by the office)")
    v.add_argument("--digest", metavar="sha256:HEX",
                   help="the digest published through another channel (e.g. the invitation letter): "
                        "the specification must have exactly this digest")
    v.set_defaults(func=cmd_verify)

    a = ss.add_parser("assign", help="respondent side: replace quasi-identifiers by the cell centroid",
                      epilog=example(
        "probanon survey assign spec.json my_answers.csv -o send.csv \\",
        "    --confidential PTOTVAL,TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL"))
    add_input(a, "spec", table=False, help="the verified specification")
    add_input(a, "responses", help="the responses: quasi-identifiers and answers, one record per respondent")
    add_output(a, "-o", "--output", required=True, table=True,
               help="what is sent: each record's cell, its centroid and the answers")
    add_release_options(a, keys_help="quasi-identifier columns, if the specification does not name them",
                        confidential_help="the answers (kept unchanged)", prepare=False)
    a.add_argument("--seed", type=seed, default=None, help="seed of the record order (default: fresh entropy)")
    from .apply import add_chunk_options

    add_chunk_options(a)
    a.set_defaults(func=cmd_assign)

    r = ss.add_parser("respond", help="respondent side: verify a collector's survey, compute your cell here and "
                                        "send only the cell and your answers", epilog=example(
        "# --digest: the digest printed in your invitation letter; your AGI and FEDTAX never leave this machine;",
        "# without --values or --values-file the command asks for them, and for the invitation code (hidden) without --token-file",
        "probanon survey respond https://survey.example.org --survey 1 --values-file my_values.txt \\",
        "    --answers satisfaction=7,tenure=owner --token-file invitation.txt --digest sha256:"
        "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"))
    r.add_argument("url", metavar="URL", help="the collector, e.g. https://survey.example.org")
    r.add_argument("--survey", type=positive_int, required=True, metavar="ID", help="the survey's number")
    v = r.add_mutually_exclusive_group()
    v.add_argument("--values-file", metavar="FILE",
                   help="your quasi-identifiers (every one the survey asks for), NAME=X one per line; - reads "
                        "standard input. Without it (or --values) the command asks for each. They never leave "
                        "this machine")
    v.add_argument("--values", metavar="NAME=X,...",
                   help="your quasi-identifiers on the command line (other users of this machine can see them in "
                        "the process list, and the shell history keeps them: prefer --values-file or the prompt)")
    r.add_argument("--answers", required=True, metavar="NAME=V,...", help="your answers (sent)")
    r.add_argument("--token-file", metavar="FILE",
                   help="your invitation code, for a survey that requires one: the first line of FILE; - reads "
                        "standard input. Without it the command asks for it (hidden). It is redeemed for a blind "
                        "token, which is what is sent with your answers: the collector cannot tell which code it "
                        "came from")
    r.add_argument("--token", nargs="?", action=_RefuseToken, metavar="TOKEN",
                   help="refused: the process list and the shell history would keep the code; use --token-file "
                        "or the prompt")
    r.add_argument("--digest", metavar="sha256:HEX",
                   help="the digest of your invitation letter: the survey document (everything you are asked) "
                        "must have exactly this digest. Required for a survey with invitations; an open survey "
                        "without it is checked against the digest the collector lists only (which proves less), "
                        "and the command says so")
    r.set_defaults(func=cmd_respond)

    c = ss.add_parser("check-page", help="anybody: check that the respondent page runs the files its survey "
                                         "document lists", epilog=example(
        "# downloads /respond/ID, every file it loads and every file the document lists; exit 2 on a difference,",
        "# or when the document lists other page files than this machine's probanon (--accept-other-version)",
        "probanon survey check-page https://survey.example.org --survey 1 --digest sha256:"
        "6b86b273ff34fce19d6b804eff5a3f5747ada4eaa22f1d49c01e52ddb7875b4b"))
    c.add_argument("url", metavar="URL", help="the collector, e.g. https://survey.example.org")
    c.add_argument("--survey", type=positive_int, required=True, metavar="ID", help="the survey's number")
    c.add_argument("--digest", metavar="sha256:HEX",
                   help="the digest of the invitation letters: the survey document must have exactly this digest "
                        "(default: the digest the collector lists, which proves less)")
    c.add_argument("--accept-other-version", action="store_true",
                   help="accept a survey document whose page files are not those of the probanon installed here "
                        "(the collector deliberately runs another version: read its files yourself); still listed "
                        "as OTHER lines. Default: such a difference is a finding (exit 2)")
    c.set_defaults(func=cmd_check_page)
    c = ss.add_parser("receipt", help="respondent side: check that a release report counts the row of your receipt",
                      epilog=example(
        "# receipt.json: the line 'receipt (verified; keep it): {...}' that survey respond printed, without its label",
        "probanon survey receipt --report release_report.json --receipt receipt.json --key=BASE64URL"))
    c.add_argument("--report", required=True, metavar="REPORT.json",
                   help="the release report the office published (or the release in its JSON format)")
    c.add_argument("--receipt", required=True, metavar="RECEIPT.json", help="your receipt (JSON); - reads standard input")
    c.add_argument("--key", metavar="BASE64URL",
                   help="the survey's receipt_key (its description or document): the receipt's signature is checked too; "
                        "write --key=KEY (a base64url key may begin with '-')")
    c.set_defaults(func=cmd_receipt)

    m = ss.add_parser("simulate", help="Monte Carlo check of the failure rates", epilog=example(
        "probanon survey simulate spec.json census.csv --runs 2000 --seed 1"))
    add_input(m, "spec", table=False, help="the specification")
    add_input(m, "population", help="the population it was designed on (checked: the same records and cells)")
    m.add_argument("--runs", type=positive_int, default=1000,
                   help="simulated participations (default 1000); more runs, more failing cells observed, tighter "
                        "intervals")
    m.add_argument("--seed", type=seed, default=None, help="seed of the simulated participations (default: fresh "
                                                           "entropy)")
    m.add_argument("--quiet", action="store_true", help="no progress bar")
    m.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the summary")
    from .options import add_cluster_options

    add_cluster_options(m, "the seeded batches of runs")
    m.set_defaults(func=cmd_simulate)

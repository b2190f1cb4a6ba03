"""``probanon survey ...``: plan, design, verify, assign, simulate (paper 1)."""

from __future__ import annotations

import json
import sys

from ..cliargs import add_input, add_output, add_release_options, ordinal_keys, positive_int, seed
from ..data import read_table
from ..errors import ParameterError
from .anonymity import required_anonymity, table_failure


def _print(obj) -> None:
    print(json.dumps(obj, allow_nan=False))


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
    _print(out)
    return 0


def _participation_model(args):
    """The logistic participation model of ``--previous-wave``, fitted."""
    from .participation import LogisticParticipation

    if args.covariates is None:
        raise ParameterError("--previous-wave needs --covariates (the columns of the participation model)")
    model = LogisticParticipation(args.covariates, responded=args.responded, confidence=args.robust,
                                  optimism=0.0 if args.optimism is None else args.optimism)
    return model.fit(read_table(args.previous_wave))


def cmd_design(args) -> int:
    from ..progress import Progress
    from .design import METHODS, design
    from .spec import build_spec

    frame = read_table(args.population)
    participation = args.participation if args.participation_column is None else args.participation_column
    if args.previous_wave is not None:  # issue 18.3: a logistic model fitted on the previous wave
        participation = _participation_model(args)
    elif (args.covariates, args.robust, args.optimism) != (None, None, None):
        raise ParameterError("--covariates, --robust and --optimism need --previous-wave")
    note = f"survey design: {len(frame)} records into cells of k = {args.k} or more"
    with Progress(note, quiet=args.quiet, desc="survey design", total=len(frame), unit="record") as progress:
        d = design(frame, args.k, participation, args.risk, columns=args.columns, progress=progress,
                   weights=args.weights, method=args.method, nominal=args.nominal, ordinal=ordinal_keys(args.ordinal),
                   random_state=args.seed)
    spec = build_spec(d, participation_column=args.participation_column)
    args.outputs.write({args.output: json.dumps(spec, indent=1, allow_nan=False)})
    sizes = d.sizes
    print(f"{METHODS[d.method]} design on the keys {', '.join(map(str, d.function.columns or []))}: "
          f"{len(sizes)} cells of {sizes.min()}..{sizes.max()} records (n_min = {d.n_min}), "
          f"largest cell failure {d.cell_failures.max():.3g} <= {d.risk}, distortion D = {d.distortion:.4f}",
          file=sys.stderr)
    return 0


def cmd_questionnaire(args) -> int:
    """The printable questionnaire of a verified tree specification (issue 18.1)."""
    from .questionnaire import questionnaire_html
    from .spec import verify

    labels = {}
    for item in args.label or []:
        name, sep, text = item.partition("=")
        if not sep or not name.strip() or not text.strip():
            raise ParameterError(f"--label must be NAME=TEXT, got {item!r}")
        labels[name.strip()] = text.strip()
    page = questionnaire_html(verify(args.spec, expected_digest=args.digest), labels=labels, title=args.title)
    args.outputs.write({args.output: page})
    print(f"questionnaire written to {args.output}", file=sys.stderr)
    return 0


def cmd_verify(args) -> int:
    """Exit 0: valid (and, with --digest, the very specification published); 1: well-formed
    but not the published one or its guarantee fails; 2: malformed, unreadable or altered."""
    from .spec import GuaranteeError, verify

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
    from ..cli import apply_to_file
    from ..release import column_list
    from .spec import assign, verify

    v = verify(args.spec)
    if v.function.encoding is not None:  # categorical keys (a tree design's): read as they are
        args.categorical = v.function.encoding.categorical()

    def cells(X, frame):
        found, centroids = assign(v, X)
        return centroids, {"cell": found}, {}

    args.input = args.responses  # read whole or in chunks (--chunk-size) as by 'probanon apply'
    return apply_to_file(args, list(v.function.columns or column_list(args.keys)), cells)


def cmd_simulate(args) -> int:
    """Refuses (exit 2) a population that is not the one the specification declares. With
    --scheduler/--workers the seeded batches run as tasks on a Dask cluster (the same result)."""
    from ..distributed.cluster import cluster_from_args
    from ..progress import Progress
    from .simulation import simulate_spec
    from .spec import verify

    if args.runs < 1:
        raise ParameterError(f"runs must be >= 1, got {args.runs}")
    v = verify(args.spec)
    frame = read_table(args.population)
    note = f"survey simulate: {args.runs:,} runs of {len(frame):,} records"
    with cluster_from_args(args) as client, Progress(note, quiet=args.quiet, desc="survey simulate") as progress:
        result = simulate_spec(v, frame, args.runs, random_state=args.seed, client=client, progress=progress)
    _print(result.to_dict())
    return 0


def cmd_respond(args) -> int:
    """Exit 0: stored (or already stored); 2: refused, unreachable or not verified (one line)."""
    from ..service.client import parse_pairs, respond

    values, answers = parse_pairs(args.values, "values"), parse_pairs(args.answers, "answers")
    r = respond(args.url, args.survey, values, answers, token=args.token, expected_digest=args.digest)
    shown = dict(r.sent, token="(given)") if "token" in r.sent else r.sent
    print("sent: " + json.dumps(shown, allow_nan=False))
    print(f"collector: HTTP {r.status} " + json.dumps(r.reply, allow_nan=False))
    return 0 if r.stored else 2


def add_parser(sub) -> None:
    s = sub.add_parser("survey", help="p-probabilistic k-anonymous survey design (paper 1)")
    ss = s.add_subparsers(dest="survey_command", required=True)

    p = ss.add_parser("plan", help="effective anonymity n_min and failure rates")
    p.add_argument("-k", type=positive_int, required=True)
    p.add_argument("--participation", type=float, required=True, help="participation probability pi in (0, 1]")
    p.add_argument("--risk", type=float, required=True, help="acceptable cell failure pbar in (0, 1)")
    p.add_argument("--records", type=int, help="records N of the table, for the table failure")
    p.add_argument("--max-records", type=int, default=None, help="largest cell to try (default 10^7)")
    p.set_defaults(func=cmd_plan)

    d = ss.add_parser("design", help="design and publish the microaggregation function")
    add_input(d, "population")
    d.add_argument("-k", type=positive_int, required=True)
    g = d.add_mutually_exclusive_group(required=True)
    g.add_argument("--participation", type=float)
    g.add_argument("--participation-column")
    add_input(g, "--previous-wave", metavar="FILE",
              help="a previous wave of the same frame with a 0/1 --responded column: pi_j from a logistic "
                   "regression on --covariates, applied to the population (the model is published in the spec)")
    d.add_argument("--responded", default="responded", metavar="COL", help="the previous wave's 0/1 column")
    d.add_argument("--covariates", metavar="A,B,...", help="the covariates of the participation model")
    d.add_argument("--robust", type=float, metavar="CONF",
                   help="design with each pi_j's one-sided lower confidence bound at this level, in (0.5, 1)")
    d.add_argument("--optimism", type=float, metavar="F",
                   help="how much too high the model may be (e.g. 0.2): pi_j divided by 1 + F")
    d.add_argument("--risk", type=float, required=True)
    d.add_argument("--columns")
    d.add_argument("--weights", metavar="COL",
                   help="design weights (a population column, numbers > 0): the centroids and the distortion D weight "
                        "each record by d_j pi_j; the cells do not change")
    d.add_argument("--method", choices=("mdav", "pcl", "tree"), default="mdav",
                   help="mdav (default, the paper's: respondents apply the published function on their device), pcl "
                        "(the same trust, PCL cells: lower distortion), tree (respondents who trust no software: "
                        "questions on one key each, followed on paper, see 'survey questionnaire')")
    d.add_argument("--nominal", metavar="COLS", help="tree: comma-separated nominal keys (questions on sets of categories)")
    d.add_argument("--ordinal", metavar="COLS", help="tree: comma-separated ordinal keys, NAME (levels in numeric, else "
                                                     "text order) or NAME=L1<L2<... (levels in that order)")
    d.add_argument("--seed", type=seed, default=None, help="pcl: seed of its random kicks (default: fresh entropy)")
    add_output(d, "-o", "--output", required=True)
    d.add_argument("--quiet", action="store_true", help="no progress bar")
    d.set_defaults(func=cmd_design)

    q = ss.add_parser("questionnaire", help="the printable questions of a tree design (survey design --method tree)")
    add_input(q, "spec", table=False)
    add_output(q, "-o", "--output", required=True, help="the HTML page (self-contained; print it from a browser)")
    q.add_argument("--digest", metavar="sha256:HEX", help="the digest the specification must have (see verify)")
    q.add_argument("--label", action="append", metavar="NAME=TEXT",
                   help="how a key is named in the questions (repeatable), e.g. --label age='age in years'")
    q.add_argument("--title", help="the page's title (default: 'Find your cell')")
    q.set_defaults(func=cmd_questionnaire)

    v = ss.add_parser("verify", help="check a published specification (exit 0 valid, 1 not, 2 malformed)")
    add_input(v, "spec", table=False)
    v.add_argument("--digest", metavar="sha256:HEX",
                   help="the digest published through another channel (e.g. the invitation letter): "
                        "the specification must have exactly this digest")
    v.set_defaults(func=cmd_verify)

    a = ss.add_parser("assign", help="respondent side: replace quasi-identifiers by the cell centroid")
    add_input(a, "spec", table=False)
    add_input(a, "responses")
    add_output(a, "-o", "--output", required=True, table=True)
    add_release_options(a, keys_help="quasi-identifier columns, if the specification does not name them",
                        confidential_help="the answers (kept unchanged)")
    a.add_argument("--seed", type=seed, default=None, help="seed of the record order (default: fresh entropy)")
    from ..cli import add_chunk_options

    add_chunk_options(a)
    a.set_defaults(func=cmd_assign)

    r = ss.add_parser("respond", help="respondent side: verify a collector's survey, compute your cell here and "
                                        "send only the cell and your answers")
    r.add_argument("url", metavar="URL", help="the collector, e.g. https://survey.example.org")
    r.add_argument("--survey", type=positive_int, required=True, metavar="ID", help="the survey's number")
    r.add_argument("--values", required=True, metavar="NAME=X,...",
                   help="your quasi-identifiers (every one the survey asks for); they never leave this machine")
    r.add_argument("--answers", required=True, metavar="NAME=V,...", help="your answers (sent)")
    r.add_argument("--token", help="your invitation token, for a survey that requires one")
    r.add_argument("--digest", metavar="sha256:HEX",
                   help="the digest of your invitation letter: the specification must have exactly this digest "
                        "(default: the digest the collector lists, which proves less)")
    r.set_defaults(func=cmd_respond)

    m = ss.add_parser("simulate", help="Monte Carlo check of the failure rates")
    add_input(m, "spec", table=False)
    add_input(m, "population")
    m.add_argument("--runs", type=positive_int, default=1000)
    m.add_argument("--seed", type=seed, default=None)
    m.add_argument("--quiet", action="store_true", help="no progress bar")
    from ..distributed.cluster import add_cluster_options

    add_cluster_options(m, "the seeded batches of runs")
    m.set_defaults(func=cmd_simulate)

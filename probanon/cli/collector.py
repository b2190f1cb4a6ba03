"""``probanon serve`` (the collector service, needs the ``service`` extra) and ``probanon collector
...`` (the office's client: publish, invite, analyst, close, release, audit; standard library only)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from .options import add_input, add_output, column_names, example, positive_int
from .parser import command
from ..release import column_list
from ..errors import ParameterError


def _port(text: str) -> int:
    import argparse

    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, got {text!r}")
    return int(text)


def _seconds(text: str) -> float:
    import argparse
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def cmd_serve(args) -> int:
    from ..service import missing_extra

    if missing_extra():
        raise ParameterError(f"the collector needs the service extra ({missing_extra()} is missing): "
                             "pip install 'probanon[service]'")
    from ..service import server

    if args.init_admin:
        token = server.init_admin(args.database)
        print(token)
        print("the admin token above is shown once and stored hashed; every earlier admin token is revoked",
              file=sys.stderr)
        return 0
    server.serve(args.database, host=args.host, port=args.port, allowed_hosts=args.allowed_host or (),
                 header_timeout=args.header_timeout, idle_timeout=args.idle_timeout,
                 max_connections=args.max_connections, announce=lambda line: print(line, file=sys.stderr, flush=True))
    return 0


def _office(args):
    from ..service import office

    return office, office.read_token(args.token_file)


def cmd_publish(args) -> int:
    office, token = _office(args)
    documents = {}
    for name in ("spec", "answers", "questions"):
        path = getattr(args, name)
        try:
            documents[name] = None if path is None else Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ParameterError(f"--{name}: cannot read {path} ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        answers, questions = (None if documents[n] is None else json.loads(documents[n]) for n in ("answers", "questions"))
    except ValueError as exc:
        raise ParameterError(f"--answers / --questions must be JSON ({exc})") from None
    out = office.publish(args.url, token, documents["spec"], answers, args.opens, args.closes, args.title,
                         questions, args.open, args.small_cells, column_list(args.interim), args.frame)
    print(f"survey {out['id']} published; digest {out['digest']}")
    print(f"the digest of the survey document (everything respondents are asked: GET /api/surveys/{out['id']}/document); "
          f"'collector invite --digest {out['digest']}' prints it in every letter with the address "
          f"{args.url.rstrip('/')}/respond/{out['id']}?digest={out['digest']} (or 'probanon survey respond --digest')")
    return 0


def cmd_invite(args) -> int:
    office, token = _office(args)
    head = office.letterhead(args.url, args.survey, args.digest,  # checked before any invitation is issued
                             other_version=args.accept_other_version)
    codes = office.invite(args.url, token, args.survey, args.count)
    letters = office.letters(args.url, head, codes)  # shuffled: never the order of issue
    text = office.letters_csv(letters) if args.format == "csv" else office.letters_text(args.url, letters)
    args.outputs.write({args.output: text})
    print(f"{len(letters)} invitation letters written to {args.output} in a random order, each with the survey's "
          f"title, its single-use invitation code, the digest {letters[0]['digest'] if letters else ''} and the "
          "page's address with ?digest= (the collector keeps only the codes' hashes)")
    return 0


def cmd_analyst(args) -> int:
    office, token = _office(args)
    issued = office.analyst(args.url, token, args.note, args.survey)
    print(issued["token"])
    scope = "every survey" if args.survey is None else f"survey {args.survey} only"
    print(f"analyst token {issued['id']} for {scope} (shown once; revoke it with 'probanon collector revoke URL "
          f"--id {issued['id']}')", file=sys.stderr)
    return 0


def cmd_revoke(args) -> int:
    office, token = _office(args)
    office.revoke(args.url, token, args.id, args.note)
    print(f"token {args.id} revoked")
    return 0


def cmd_close(args) -> int:
    office, token = _office(args)
    office.close(args.url, token, args.survey, args.note)
    print(f"survey {args.survey} closed")
    return 0


def cmd_release(args) -> int:
    office, token = _office(args)
    suffix = Path(args.output).suffix.lower().lstrip(".")
    if suffix not in office.FORMATS:
        raise ParameterError(f"-o: the release is written as .csv, .parquet or .json, not {args.output!r}")
    released = office.release(args.url, token, args.survey)  # records and report of the same moment
    rep = released["report"]
    if suffix == "json":
        data = json.dumps(released, indent=1, allow_nan=False)
    else:
        import pandas as pd

        data = pd.DataFrame.from_records(released["records"], columns=released["columns"])
    outputs = {args.output: data}
    if args.report:
        outputs[args.report] = json.dumps(rep, indent=1, allow_nan=False)
    args.outputs.write(outputs)
    failures = rep["failures"]
    print(f"{rep['released_records']} records released (achieved k = {rep['achieved_k']}, required {rep['k']}); "
          f"{rep['responses']} responses from {rep['records']} records; failing cells: "
          f"{failures['observed_failing_cells']} observed, {failures['predicted_failing_cells']:.3g} predicted; "
          f"{rep['suppressed_records']} records of {rep['suppressed_cells']} cells suppressed", file=sys.stderr)
    return 0


def cmd_audit(args) -> int:
    office, token = _office(args)
    for entry in office.audit_log(args.url, token):
        survey = "" if entry["survey_id"] is None else f" survey {entry['survey_id']}"
        print(f"{entry['at']} {entry['role']} {entry['actor']}: {entry['action']}{survey}"
              + (f" ({entry['note']})" if entry["note"] else ""))
    return 0


def _collector_parser(sub) -> None:
    c = command(sub, "collector", epilog=example(
        "probanon collector invite https://survey.example.org --survey 1 --count 100 -o letters.txt",
        "probanon collector close https://survey.example.org --survey 1",
        "probanon collector release https://survey.example.org --survey 1 -o release.csv"))
    cc = c.add_subparsers(dest="collector_command", required=True)

    def subcommand(name, help, func, survey=True, *lines):
        p = cc.add_parser(name, help=help, epilog=example(
            "# the token: PROBANON_TOKEN in the environment, or --token-file FILE (never on the command line)",
            *lines))
        p.add_argument("url", help="the collector's address, e.g. https://survey.example.org")
        if survey:
            p.add_argument("--survey", type=positive_int, required=True, help="the survey id")
        p.add_argument("--token-file", metavar="FILE",
                       help="file whose first line is the token (default: the PROBANON_TOKEN environment variable)")
        p.set_defaults(func=func)
        return p

    p = subcommand("publish", "publish a verified specification as a new survey (admin)", cmd_publish, False,
                "probanon collector publish https://survey.example.org --spec spec.json --answers answers.json \\",
                "    --title \"Household finances 2027\" --opens 2027-01-01T00:00:00Z --closes 2027-03-31T23:59:59Z --frame 5000")
    add_input(p, "--spec", required=True, table=False, help="the specification (probanon survey design)")
    add_input(p, "--answers", required=True, table=False, metavar="SCHEMA.json",
              help="the confidential answers: a JSON list of {name, type: number|integer|category, min, max, "
                   "categories, required, label}")
    add_input(p, "--questions", table=False, metavar="QUESTIONS.json",
              help="labels and units of the quasi-identifiers: {column: {label, unit}}")
    p.add_argument("--title", required=True, help="the survey's title, shown to respondents")
    p.add_argument("--opens", required=True, metavar="TIME", help="ISO 8601 with zone, e.g. 2027-01-01T00:00:00Z")
    p.add_argument("--closes", required=True, metavar="TIME",
                   help="when responses stop being accepted: ISO 8601 with zone, e.g. 2027-03-31T23:59:59Z")
    p.add_argument("--frame", type=positive_int, metavar="N",
                   help="how many people may be invited, at most (the invitations never exceed it; default and "
                        "upper bound: the design's population, the specification's records)")
    p.add_argument("--open", action="store_true",
                   help="no invitations: anyone may respond; the survey, its page and its release report then say "
                        "that it is NOT protected against ballot stuffing (default: one single-use invitation per "
                        "respondent, 'collector invite')")
    p.add_argument("--small-cells", choices=("suppress", "flag"), default="suppress",
                   help="a cell that ends with 0 < K < k responses: left out of the release (default) or released "
                        "flagged (not k-anonymous)")
    p.add_argument("--interim", metavar="TIMES", type=column_names,
                   help="comma-separated ISO 8601 times at which a release is allowed before the close (default: "
                        "none, nothing is released before the close); each is refused unless every cell changed by "
                        "0 or by at least k responses since the release before it")

    p = subcommand("invite", "issue single-use invitations and write the letters, in a random order (admin)",
                cmd_invite, True,
                "probanon collector invite https://survey.example.org --survey 1 --count 100 -o letters.txt \\",
                "    --digest sha256:<the digest 'collector publish' printed>")
    p.add_argument("--count", type=positive_int, required=True, help="how many invitations (one per letter)")
    add_output(p, "-o", "--output", required=True, metavar="LETTERS.txt",
               help="the letters, in a random order (never the order of issue): each with the survey's title, its "
                    "invitation code, the digest and the page's address with ?digest=")
    p.add_argument("--format", choices=("text", "csv"), default="text",
                   help="text: letters to print, each starting with a line of '=' (default); csv: one row per "
                        "letter (survey, title, code, digest, address) for a mail merge")
    p.add_argument("--digest", metavar="sha256:HEX",
                   help="the digest 'collector publish' printed: the letters are written only if the survey's "
                        "document still has it")
    p.add_argument("--accept-other-version", action="store_true",
                   help="write the letters although the survey document lists other respondent-page files than "
                        "the probanon installed here (the collector deliberately runs another version). Default: "
                        "refused, nothing issued")

    p = subcommand("analyst", "issue an analyst token (admin); printed once", cmd_analyst, False,
                "probanon collector analyst https://survey.example.org --survey 1 --note \"release team\" > analyst.token")
    p.add_argument("--survey", type=positive_int, help="the one survey whose release the token reads (default: "
                                                       "every survey's; a token for one survey gets 403 on the others)")
    p.add_argument("--note", help="who it is for (kept in the audit log)")

    p = subcommand("revoke", "revoke an admin or analyst token by its id (admin)", cmd_revoke, False,
                "probanon collector revoke https://survey.example.org --id 3f9a0c12b7e4 --note \"analyst left the team\"")
    p.add_argument("--id", required=True, help="the token's id (12 hexadecimal digits, printed when it was issued "
                                               "and beside its actions in the audit log)")
    p.add_argument("--note", help="why (kept in the audit log)")

    p = subcommand("close", "close a survey now (admin)", cmd_close, True,
                "probanon collector close https://survey.example.org --survey 1 --note \"enough responses\"")
    p.add_argument("--note", help="why (kept in the audit log)")

    p = subcommand("release", "download the release and its report (analyst)", cmd_release, True,
                "probanon collector release https://survey.example.org --survey 1 -o release.csv --report release_report.json")
    add_output(p, "-o", "--output", required=True, metavar="FILE", help=".csv, .parquet or .json")
    add_output(p, "--report", metavar="REPORT.json", help="participation per cell, achieved k, guarantee")

    subcommand("audit", "print the audit log (admin)", cmd_audit, False, "probanon collector audit https://survey.example.org")


def add_parser(sub) -> None:
    _collector_parser(sub)
    s = command(sub, "serve", epilog=example(
        "probanon serve --database collector.db --init-admin > admin.token     # once: the admin token",
        "probanon serve --database collector.db --port 8080"))
    s.add_argument("--database", required=True, metavar="URL",
                   help="a SQLite file path (created if absent) or postgresql://user:password@host/db")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; put a TLS "
                                                         "reverse proxy in front for anything else)")
    s.add_argument("--port", type=_port, default=8000, help="port to listen on (default 8000)")
    s.add_argument("--allowed-host", action="append", metavar="NAME",
                   help="a host name clients reach the collector by, e.g. survey.example.org behind a reverse proxy "
                        "(repeatable); requests with any other Host header get 400 (DNS rebinding). Always allowed: "
                        "the --host address, and localhost, 127.0.0.1 and ::1 when that is a loopback or wildcard "
                        "address")
    from ..service.limits import HEADER_SECONDS, IDLE_SECONDS, MAX_CONNECTIONS, RESERVED_DESCRIPTORS

    s.add_argument("--header-timeout", type=_seconds, default=HEADER_SECONDS, metavar="SECONDS",
                   help=f"a request's line and headers must arrive within this many seconds of the connection "
                        f"opening or of the previous response, else 408 and the connection is closed "
                        f"(default {HEADER_SECONDS:g})")
    s.add_argument("--idle-timeout", type=_seconds, default=IDLE_SECONDS, metavar="SECONDS",
                   help=f"a connection with no request in progress is closed after this many silent seconds "
                        f"(default {IDLE_SECONDS:g})")
    s.add_argument("--max-connections", type=positive_int, metavar="N",
                   help=f"open connections at most; beyond, a new one replaces the connection longest waiting for "
                        f"its request, or is answered 503 when all have one in progress (default: half of what "
                        f"ulimit -n leaves after {RESERVED_DESCRIPTORS} descriptors, at most {MAX_CONNECTIONS})")
    s.add_argument("--init-admin", action="store_true",
                   help="print a new admin token (shown once; earlier admin tokens are revoked) and exit")
    s.set_defaults(func=cmd_serve)

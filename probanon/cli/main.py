"""The ``probanon`` command.

Every error on bad input is one line on stderr (``probanon: error: ...``) with exit status 2,
and no output file is left behind (outputs are written only after all work succeeded, each
atomically).

Start-up (issue 41.7): ``probanon --help`` and ``--version`` import nothing but argparse and
:mod:`probanon.cli.parser`; the module of a command (and with it NumPy, pandas and the library)
is imported when that command runs.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys

from .. import __version__
from .parser import COMMANDS, Parser, example


def _command_of(argv: list) -> str | None:
    """The subcommand ``argv`` names (its first word that is not an option), if any."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _declare(sub, module: str) -> None:
    """Every command of ``probanon.cli.MODULE`` on ``sub``, with its options."""
    family = importlib.import_module(f"{__package__}.{module}")
    if module == "recipe":  # a recipe's command line is read by the whole parser
        family.add_parser(sub, build_parser)
    else:
        family.add_parser(sub)


@contextlib.contextmanager
def _starting(command: str, argv: list):
    """On a terminal, a first line while the command's module (and NumPy, pandas, the library,
    a second or two) is imported, erased once it is: the user sees at once that the command runs.
    Nothing in a file or a pipe, nor for --help."""
    shown = sys.stderr.isatty() and not {"-h", "--help"} & set(argv)
    if shown:
        sys.stderr.write(f"probanon {command}: starting ...")
        sys.stderr.flush()
    try:
        yield
    finally:
        if shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def build_parser(argv: list | None = None) -> Parser:
    """probanon's parser. With ``argv``, only the module of the command ``argv`` names declares
    its options; the other commands are named with their one-line help (what ``probanon --help``
    shows), so that the parser of one command imports that command's module only. Without
    ``argv``, every command with all its options (a recipe's command line, the tests)."""
    p = Parser(prog="probanon", description="Probabilistic anonymity for microdata.", epilog=example(
        "probanon risk census.csv --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX       # the original's risk",
        "probanon microaggregate census.csv -o census_k5.csv -k 5 --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX \\",
        "    --confidential PTOTVAL,TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL --link census_k5.link.csv",
        "# every command's --help ends with an example: probanon microaggregate --help"))
    p.add_argument("--version", action="version", version=f"probanon {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    if argv is None:
        for module in dict.fromkeys(c.module for c in COMMANDS.values()):
            _declare(sub, module)
    else:
        chosen = _command_of(argv)
        if chosen is not None:
            with _starting(chosen, argv):
                _declare(sub, COMMANDS[chosen].module)
        for name, command in COMMANDS.items():
            if name not in sub.choices:
                sub.add_parser(name, help=command.help)
    _in_order(sub)
    return p


def _in_order(sub) -> None:
    """The commands listed (usage, help, an invalid choice's message) in :data:`COMMANDS` order,
    whichever module declared them first."""
    order = list(COMMANDS)
    sub._choices_actions.sort(key=lambda action: order.index(action.dest))
    parsers = sorted(sub.choices.items(), key=lambda item: order.index(item[0]))
    sub.choices.clear()
    sub.choices.update(parsers)


def main(argv=None) -> int:
    """Run ``probanon``; ``argv=None``: this process is the command (its arguments from
    ``sys.argv``), which also announces numba's first compilation (``progress.announce_compilation``).
    The library's soft findings (:class:`probanon.errors.ProbanonWarning`) are printed on stderr
    as they are issued (:func:`.findings.shown`)."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words)
    try:
        args = parser.parse_args(words)
    except SystemExit as exc:  # a usage error (one line, see Parser.error), --help or --version
        return exc.code if isinstance(exc.code, int) else 2
    from ..data import csv_options
    from ..errors import ProbanonError
    from .findings import shown
    from .options import prepare_outputs

    if argv is None:
        from .progress import announce_compilation

        announce_compilation()
    try:
        try:
            args.outputs = prepare_outputs(args)  # every output checked before any work
            with csv_options(getattr(args, "sep", None), getattr(args, "encoding", None)), shown():
                return args.func(args)
        finally:
            sys.stdout.flush()
    except ProbanonError as exc:
        print(f"probanon: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader of stdout went away (| head): end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("probanon: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

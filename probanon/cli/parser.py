"""The parser of ``probanon``, light enough to start fast (issue 41.7): the one-line error
parser, the worked-example epilog and the table of subcommands (name, the module of
``probanon.cli`` that defines it, its one-line help). ``probanon --help`` needs nothing more;
a command's module, and with it NumPy, pandas and the library, is imported when that command
runs (:func:`probanon.cli.main.build_parser`)."""

from __future__ import annotations

import argparse
import contextlib
from typing import NamedTuple

from ..errors import InputError


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``probanon: error: <message> (see 'probanon ... --help')``;
    within :meth:`raising`, an :class:`InputError` instead (a command line made from a recipe).
    Descriptions and epilogs keep their lines (the worked example of :func:`example`)."""

    _prefix = None

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message):
        if Parser._prefix is not None:
            raise InputError(f"{Parser._prefix}{message}")
        self.exit(2, f"probanon: error: {message} (see '{self.prog} --help')\n")

    @staticmethod
    @contextlib.contextmanager
    def raising(prefix: str):
        """Usage errors raise ``InputError(prefix + message)`` within the block."""
        Parser._prefix = prefix
        try:
            yield
        finally:
            Parser._prefix = None


def example(*lines: str) -> str:
    """The epilog that ends a command's ``--help``: a worked example. ``lines``: command lines
    (``probanon ...``; a long one continued on the next line after `` \\``) and ``#`` comments."""
    return "example:\n" + "\n".join(f"  {line}" for line in lines)


class Command(NamedTuple):
    module: str  # the module of probanon.cli whose add_parser(sub) declares the command
    help: str  # the line of 'probanon --help'


#: every subcommand, in the order of ``probanon --help``
COMMANDS = {
    'microaggregate': Command('microagg', 'replace quasi-identifiers by group centroids'),
    'apply': Command('apply', 'apply a published function to records'),
    'evaluate': Command('report', 'utility and anonymity of a release (exit 1 when -k fails)'),
    'risk': Command('report', 'risk profile of one file: sample uniques, k-anonymity violations, individual and global risk (as sdcMicro\'s print(sdc, "risk"))'),
    'report': Command('report', 'internal and publishable risk-utility reports of a release (HTML)'),
    'release': Command('recipe', 'a whole release from a TOML recipe; writes the resolved recipe beside it'),
    'demo': Command('demo', 'end-to-end run on built-in synthetic data, HTML report'),
    'survey': Command('survey', 'p-probabilistic k-anonymous survey design (paper 1)'),
    'reproduce': Command('reproduce', "recompute a paper's tables and figures, ours beside the paper's"),
    'swap': Command('swapping', 'probabilistic k-anonymity by swapping inside groups (MDAV-SWAP, IR-SWAP)'),
    'pram': Command('categorical_pram', 'post-randomise categorical keys with an invariant transition matrix (PRAM), the matrix written beside the release'),
    'recode': Command('categorical', 'global recoding of the keys: intervals, rounding, grouped categories, ARX hierarchies, top/bottom coding (as sdcMicro\'s globalRecode)'),
    'suppress': Command('categorical', 'local suppression of key values to k-anonymity over key combinations, after an optional recoding (as sdcMicro\'s localSuppression, kAnon)'),
    'noise': Command('perturbation', "additive or correlated noise on numeric keys, the noise law published beside the release (as sdcMicro's addNoise)"),
    'rank-swap': Command('perturbation', "rank swapping of numeric keys within a window of ranks (as sdcMicro's rankSwap)"),
    'record-swap': Command('perturbation', "targeted record swapping of households between geographic areas, risky households first (as sdcMicro's recordSwap)"),
    'diversity': Command('diversity', '(l, delta)-diversity: plan, release, check, attack (paper 4)'),
    'km': Command('setvalued', 'probabilistic k^m-anonymity of set-valued data (paper 5)'),
    'attack': Command('attacks', 'run every applicable intruder against a release; success rates with intervals beside the claimed bound (exit 1 when one is above it)'),
    'audit': Command('attacks', 'find keys determined by confidential columns (and the reverse) before a release (exit 1 when found)'),
    'collector': Command('collector', "the office's side of the collector: publish, invite, close, release"),
    'serve': Command('collector', 'the survey collector service (HTTP API, respondent page)'),
    'workbench': Command('workbench', "the office's workbench in the browser: open, recode, set roles, see risk, treat, compare, export (sdcApp's workflow)"),
    'datasets': Command('datasets', 'the example data sets shipped with probanon: list them, or write them out'),
}


def command(sub, name: str, **kwargs) -> argparse.ArgumentParser:
    """The subparser of command ``name`` (its help from :data:`COMMANDS`)."""
    return sub.add_parser(name, help=COMMANDS[name].help, **kwargs)

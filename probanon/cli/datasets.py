"""``probanon datasets``: list the example data sets, or write them out as CSV files (``-o DIR``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .options import add_output, example
from .parser import command
from ..datasets import content, describe, file_name, names, path


def _name(text: str) -> str:
    if text not in names():
        raise argparse.ArgumentTypeError(f"unknown data set {text!r} (choose from {', '.join(names())})")
    return text


def _chosen(args) -> list[str]:
    return args.names or names()


def cmd_datasets(args) -> int:
    if args.output_dir is None:
        for name in _chosen(args):
            print(f"{name:<10} {file_name(name):<14} {describe(name)}")
        return 0
    folder = Path(args.output_dir)
    for name in _chosen(args):
        path(name)  # every data set present before anything is written
    args.outputs.write({folder / file_name(name): content(name) for name in _chosen(args)})
    print(f"wrote {', '.join(str(folder / file_name(n)) for n in _chosen(args))}", file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    p = command(sub, "datasets", epilog=example("probanon datasets                 # the names, files and origins",
                                      "probanon datasets census adult -o data   # data/census.csv, data/adult.csv"))
    p.add_argument("names", nargs="*", type=_name, metavar="NAME",
                   help=f"the data sets to list or write ({', '.join(names())}; default: all)")
    add_output(p, "-o", "--output-dir", metavar="DIR", folder=lambda args: [file_name(n) for n in _chosen(args)],
               help="write each data set into DIR as NAME.csv (created if needed), exactly as its reference file")
    p.set_defaults(func=cmd_datasets)

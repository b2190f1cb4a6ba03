"""``probanon pram``: invariant PRAM of categorical keys (issue 43, point 4), as sdcMicro's
``pram()``, with the transition matrices written beside the release."""

from __future__ import annotations

import argparse
import sys

import numpy as np

from .options import (
    read_input,
    add_household_option,
    add_input,
    add_output,
    add_release_options,
    column_names,
    example,
    release_roles,
    seed,
    write_release,
)
from .parser import command
from ..categorical.pram import DIAGONALS, PRAM
from ..categorical.pram_measure import PramPromise, matrix_table, pram_measure
from ..errors import InputError
from ..release import column_list, columns_with, make_release, shuffle_stream


def _share(low_open: bool, name: str):
    """argparse type of ``--pd`` (in (0, 1]) or ``--alpha`` (in [0, 1]): one number, or
    KEY=NUMBER pairs separated by commas (one per key), checked and kept as that text (a recipe
    records it so; :func:`_per_key` reads it)."""
    def parse(text: str):
        def number(word: str) -> float:
            try:
                value = float(word)
            except ValueError:
                raise argparse.ArgumentTypeError(f"expected a number or KEY=NUMBER,..., got {text!r}") from None
            inside = (0.0 < value <= 1.0) if low_open else (0.0 <= value <= 1.0)
            if not inside:
                raise argparse.ArgumentTypeError(f"{name} must be in {'(0, 1]' if low_open else '[0, 1]'}, got {word}")
            return value
        if "=" not in text:
            return number(text.strip())
        for item in text.split(","):
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise argparse.ArgumentTypeError(f"expected KEY=NUMBER,..., got {item.strip()!r}")
            number(value.strip())
        return text
    return parse


def _per_key(value):
    """A number as it is; KEY=NUMBER,... (checked by :func:`_share`) as {key: number}."""
    if not isinstance(value, str):
        return value
    return {key.strip(): float(number) for key, _, number in (item.partition("=") for item in value.split(","))}


def cmd_pram(args) -> int:
    frame = read_input(args)
    strata = column_list(args.strata)
    roles = release_roles(args, frame)
    keys = columns_with(roles, "key")
    pd_, alpha = _per_key(args.pd), _per_key(args.alpha)
    if args.joint and (isinstance(pd_, dict) or isinstance(alpha, dict)):
        raise InputError("--joint perturbs the keys' combinations as one variable: give --pd and --alpha as one number")
    model = PRAM(pd=pd_, alpha=alpha, joint=args.joint, diagonal=args.diagonal, random_state=args.seed)
    released = model.fit_transform(frame[keys], strata=frame[strata] if strata else None,
                                   households=frame[args.household].to_numpy() if args.household else None)
    table = matrix_table(model.transition_matrices_, strata or None)
    what = "post-randomised (PRAM" + (", the keys' combinations jointly" if args.joint else "") + \
        (", one value per household" if args.household else "") + ")"
    release = make_release(frame, roles, replaced={k: released[k].to_numpy() for k in keys},
                           actions={"key": f"key: {what}"}, keep_order=args.keep_order,
                           random_state=shuffle_stream(args.seed))
    released_row = release.link["released_row"].to_numpy() - 1
    original_row = release.link["original_row"].to_numpy() - 1
    order = original_row[np.argsort(released_row)]  # released record r is original record order[r]
    checked = list(dict.fromkeys(keys + strata + ([args.household] if args.household else [])))
    release.promise = PramPromise(frame[checked].iloc[order].reset_index(drop=True), keys, table, args.joint,
                                  strata, args.household)
    write_release(args, release, {args.matrix: table}, original=frame)
    measure = pram_measure(frame[keys], released, keys)
    print(f"transition matrices written to {args.matrix} ({len(model.transition_matrices_)} matrices, "
          f"{len(table):,} cells; publish them with the release: t_hat = t_obs R^-1 corrects a table)\n"
          "what PRAM changed (PRAM states no k: a released value is the original one with the probability on its "
          "matrix's diagonal):\n" + "\n".join(f"  {line}" for line in measure.lines()), file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    s = command(sub, "pram", epilog=example(
        "probanon pram survey.csv -o survey_pram.csv --keys region,marital,education --pd 0.8 --alpha 0.5 \\",
        "    --strata sex --matrix survey_pram.matrix.csv --keep-other --seed 7 --link survey_pram.link.csv"))
    add_input(s, "input", help="the table to release (CSV, Parquet, SPSS, Stata)")
    add_output(s, "-o", "--output", required=True, table=True, help="the release (format by its ending)")
    add_release_options(s, keys_help="categorical key columns, each post-randomised (its categories are its values)",
                        confidential_help="confidential columns (kept unchanged)")
    s.add_argument("--pd", type=_share(True, "--pd"), default=0.8, metavar="P",
                   help="minimum diagonal of the matrix P whose invariant form PQ (Q: P reversed by Bayes' rule on the "
                        "key's frequencies) is used, in (0, 1] (sdcMicro's pd; default 0.8): one number, or KEY=P,... "
                        "per key")
    s.add_argument("--alpha", type=_share(False, "--alpha"), default=0.5, metavar="A",
                   help="amount of perturbation in [0, 1]: the matrix used and published is A*PQ + (1-A)*I (sdcMicro's alpha; "
                        "default 0.5): one number, or KEY=A,... per key")
    s.add_argument("--diagonal", choices=DIAGONALS, default="uniform",
                   help="P's diagonal drawn uniformly on [pd, 1] per category (uniform, as sdcMicro) or equal to pd "
                        "(fixed)")
    s.add_argument("--joint", action="store_true",
                   help="perturb the keys' combinations as one variable (one matrix over the combinations; a record "
                        "with a missing key is left as it is) instead of each key on its own")
    s.add_argument("--strata", metavar="COLS", type=column_names,
                   help="comma-separated strata columns: a matrix per stratum, from its own frequencies (no value "
                        "moves to a category absent from the stratum); released unchanged")
    add_household_option(s, "every key is a household variable, drawn once per household and given to all its "
                            "members (a key that varies within a household is refused)")
    add_output(s, "--matrix", metavar="FILE.csv", table=True, required=True,
               help="write the transition matrices here (key, strata columns, from, to, probability; a joint "
                    "variable's rows have from_KEY and to_KEY): published with the release, so analysts can "
                    "correct their estimates")
    s.add_argument("--seed", type=seed, default=None,
                   help="seed of the matrices, the perturbation and the record order (default: fresh entropy); keep "
                        "it secret")
    s.set_defaults(func=cmd_pram)

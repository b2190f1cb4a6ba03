"""``probanon swap``: probabilistic k-anonymity by within-group swapping (paper 2)."""

from __future__ import annotations

import sys

import pandas as pd

from ..data import quasi_identifiers, read_table, write_outputs
from ..errors import InputError, ParameterError
from .correlation import correlation_differences
from .groups import METHODS
from .release import released_table, swap


def _confidential(arg, frame: pd.DataFrame, columns: list) -> list:
    names = [c.strip() for c in (arg or "").split(",") if c.strip()]
    for c in names:
        if c not in frame.columns:
            raise InputError(f"confidential column {c!r} is not in the table")
        if c not in columns:
            raise InputError(f"confidential column {c!r} is not among the attributes used (--columns)")
    if len(set(names)) != len(names):
        raise InputError("a confidential column is named twice")
    return names


def _groups_frame(result, columns: list) -> pd.DataFrame:
    """One column of group labels per partition: ``group`` for a single partition, else
    ``group_<confidential column>``."""
    g = result.groups
    if g.n_partitions == 1:
        return pd.DataFrame({"group": g.labels[:, 0]})
    return pd.DataFrame({f"group_{columns[cols[0]]}": g.labels[:, t] for t, cols in enumerate(g.columns)})


def cmd_swap(args) -> int:
    frame = read_table(args.input)
    X, columns = quasi_identifiers(frame, args.columns)
    confidential = _confidential(args.confidential, frame, columns)
    if not confidential and args.method != "mdav-id":
        raise ParameterError(f"{args.method} needs --confidential")
    positions = [columns.index(c) for c in confidential]
    result = swap(X, args.k, args.method, positions or None, random_state=args.seed,
                  standardize=not args.raw_distances)
    outputs = {args.output: released_table(frame, columns, result)}
    if args.groups:
        outputs[args.groups] = _groups_frame(result, columns)
    write_outputs(outputs)
    sizes = [result.groups.sizes(t) for t in range(result.groups.n_partitions)]
    line = (f"{args.method}: {len(frame)} records, {len(columns)} attributes ({len(confidential)} confidential), "
            f"k = {result.groups.k}, {len(sizes)} partition(s), group sizes {min(s.min() for s in sizes)}.."
            f"{max(s.max() for s in sizes)}")
    if positions:
        try:
            diff = correlation_differences(X, result.released, positions)
            line += f", mean |correlation difference| to the confidential attributes = {diff.mean():.4f}"
        except InputError:  # a constant column: correlations undefined, nothing to report
            pass
    print(line, file=sys.stderr)
    return 0


def add_parser(sub) -> None:
    s = sub.add_parser("swap", help="probabilistic k-anonymity by swapping inside groups (MDAV-SWAP, IR-SWAP)")
    s.add_argument("input")
    s.add_argument("-o", "--output", required=True)
    s.add_argument("-k", type=int, required=True, help="minimum group size (re-identification probability <= 1/k)")
    s.add_argument("--method", choices=METHODS, required=True,
                   help="mdav-swap: MDAV on the non-confidential attributes, their tuples permuted (uninformed "
                        "intruder); mdav-swap-informed: per confidential attribute, MDAV on all the others, that "
                        "attribute permuted; ir-swap: per confidential attribute, blocks of k consecutive values "
                        "permuted; mdav-id: MDAV on every attribute, group means (classical k-anonymity)")
    s.add_argument("--confidential", help="comma-separated confidential columns (required except for mdav-id)")
    s.add_argument("--columns", help="comma-separated attributes used (default: all numeric); others are copied")
    s.add_argument("--seed", type=int, default=None,
                   help="seed of the permutations (default: fresh entropy). Keep it secret: whoever knows the "
                        "seed and the groups can undo the swap")
    s.add_argument("--raw-distances", action="store_true",
                   help="MDAV on raw values instead of z-scores (how the paper's experiments were run)")
    s.add_argument("--groups", metavar="GROUPS.csv", help="also write the group labels of every partition")
    s.set_defaults(func=cmd_swap)

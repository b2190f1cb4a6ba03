"""``probanon swap``: probabilistic k-anonymity by within-group swapping (paper 2)."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from .options import (
    read_input,
    add_decimals_option,
    add_household_option,
    add_input,
    add_output,
    add_release_options,
    add_strata_options,
    example,
    households_kept,
    positive_int,
    release_roles,
    seed,
    write_release,
)
from .findings import held, show
from .parser import command
from ..data import quasi_identifiers
from ..errors import InputError, ParameterError
from ..microagg.strata import recode_merged
from ..release import Promise, column_list, columns_with, make_release, shuffle_stream
from ..swapping.correlation import correlation_differences
from ..swapping.groups import METHODS
from ..swapping.release import released_table, swap


def _groups_frame(result, columns: list) -> pd.DataFrame:
    """One column of group labels per partition: ``group`` for a single partition, else
    ``group_<confidential column>``."""
    g = result.groups
    if g.n_partitions == 1:
        return pd.DataFrame({"group": g.labels[:, 0]})
    return pd.DataFrame({f"group_{columns[cols[0]]}": g.labels[:, t] for t, cols in enumerate(g.columns)})


ACTIONS = {"mdav-id": "replaced by its MDAV group mean", "mdav-swap": "swapped within MDAV groups",
           "mdav-swap-informed": "swapped within MDAV groups", "ir-swap": "swapped within rank blocks"}


def cmd_swap(args) -> int:
    frame = read_input(args)
    roles = release_roles(args, frame, audit=args.method != "mdav-id")  # mdav-id aggregates every column
    confidential = columns_with(roles, "confidential")
    if not confidential and args.method != "mdav-id":
        raise ParameterError(f"{args.method} needs --confidential")
    used = [c for c, r in roles.items() if r in ("key", "confidential")]
    X, columns = quasi_identifiers(frame, used)
    if args.decimals is not None and args.method != "mdav-id":
        raise InputError(f"--decimals rounds group means: mdav-id releases them, {args.method} moves values")
    positions = [columns.index(c) for c in confidential]
    strata = None if args.strata is None else frame[column_list(args.strata)]
    households, moved = None if args.household is None else frame[args.household], positions
    if households is not None:  # names and file lines in the messages
        X, moved = pd.DataFrame(X, columns=columns), confidential
        X.attrs = dict(frame.attrs)
    with held() as merged:  # the strata merged: said once the swap is made
        result = swap(X, args.k, args.method, moved or None, random_state=args.seed,
                      standardize=not args.raw_distances, strata=strata, merge_small_strata=args.merge_small_strata,
                      households=households)
    show(merged)
    fewest = None
    if households is not None:
        fewest = _check_households(result, args.k, args.method)
        X = X.to_numpy()
    values = released_table(frame[columns], columns, result)
    means = _rounded_means(args, frame, columns, values) if result.sources is None else {}
    changed = [c for c in columns if not np.array_equal(values[c].to_numpy(), frame[c].to_numpy())]
    actions = {c: f"{roles[c]}: {ACTIONS[args.method]}" + (f", rounded to {means[c]} decimals" if c in means else "")
               for c in changed}
    actions.update({c: f"{roles[c]}: kept unchanged" for c in columns if c not in changed})
    recoded = {} if strata is None else recode_merged(result.strata, strata)
    actions.update({c: "stratum: released, merged strata recoded" for c in recoded})
    # mdav-id aggregates every attribute: k-anonymity on all of them (the swaps promise a probability)
    promise = Promise(args.k, (tuple(columns + [c for c in column_list(args.strata) if roles.get(c) != "drop"]),),
                      f"mdav-id (k = {args.k})") if args.method == "mdav-id" else None
    promise = households_kept(promise, args.household, roles, frame.assign(**{c: values[c] for c in columns}),
                              k=args.k, groups=list(result.groups.labels.T), accept_risk=args.accept_risk)
    release = make_release(frame, roles, replaced={**{c: values[c] for c in changed}, **recoded}, actions=actions,
                           keep_order=args.keep_order, random_state=shuffle_stream(args.seed), promise=promise,
                           means={c: means[c] for c in changed if c in means})
    if result.sources is not None and result.groups.method in ("mdav-swap-informed", "ir-swap") and households is None:
        released_row, value_rows = release.link["released_row"].to_numpy(), result.value_rows()
        for t, cols in enumerate(result.groups.columns):  # where each original value of c went (for attacks)
            release.link[f"released_row_{columns[cols[0]]}"] = released_row[value_rows[:, t]]
    extra = {}
    order = np.argsort(release.link["released_row"].to_numpy())  # groups in released order
    groups = _groups_frame(result, columns).iloc[order].reset_index(drop=True)
    if args.groups:
        extra[args.groups] = groups
    by_column = ({c: groups["group"].to_numpy() for c in confidential} if "group" in groups else
                 {c: groups[f"group_{c}"].to_numpy() for c in confidential if f"group_{c}" in groups})
    write_release(args, release, extra, groups=by_column if len(by_column) == len(confidential) else None,
                  original=frame)
    sizes = [result.groups.sizes(t) for t in range(result.groups.n_partitions)]
    line = (f"{args.method}: {len(frame)} records, {len(columns)} attributes ({len(confidential)} confidential), "
            f"k = {result.groups.k}, {len(sizes)} partition(s), group sizes {min(s.min() for s in sizes)}.."
            f"{max(s.max() for s in sizes)}" + ("" if fewest is None else f" (at least {fewest} households each)"))
    if positions:
        try:
            diff = correlation_differences(X, values[columns].to_numpy(np.float64), positions)
            line += f", mean |correlation difference| to the confidential attributes = {diff.mean():.4f}"
        except InputError:  # a constant column: correlations undefined, nothing to report
            pass
    print(line, file=sys.stderr)
    return 0


def _check_households(result, k: int, method: str) -> int:
    """--household: every group of every partition holds at least k households (what the swap
    promises with households: a household receives another's values with probability <= 1/k),
    checked on the groups before anything is written; returns the fewest households of a group."""
    from ..errors import GuaranteeError

    codes, fewest = result.households.codes, []
    for labels in result.groups.labels.T:  # one partition after the other
        pairs = np.unique(np.column_stack([labels, codes]), axis=0)  # (group, household), each once
        per_group = np.bincount(pairs[:, 0], minlength=int(labels.max()) + 1)
        fewest.append(int(per_group[per_group > 0].min()))
    if min(fewest) < k:
        raise GuaranteeError(f"{method} with --household promises groups of at least {k} households, but a group "
                             f"of the swap holds {min(fewest)}; nothing written")
    return min(fewest)


def _rounded_means(args, frame, columns, values) -> dict:
    """MDAV-ID's group means rounded in ``values`` (in place) to ``--decimals``, else to the
    input's decimals (:mod:`probanon.precision`); returns {column: decimals}."""
    from ..data import input_decimals

    digits = {c: args.decimals for c in columns} if args.decimals is not None else \
        input_decimals(args.input, frame, columns)
    for c in columns:
        values[c] = np.round(values[c].to_numpy(np.float64), digits[c])
    return digits


def add_parser(sub) -> None:
    s = command(sub, "swap", epilog=example(
        "probanon swap census.csv -o swapped.csv -k 5 --method mdav-swap-informed \\",
        "    --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX \\",
        "    --confidential PTOTVAL,TAXINC,POTHVAL,INTVAL,PEARNVAL,FICA,WSALVAL,ERNVAL --seed 1 --link swapped.link.csv"))
    add_input(s, "input", help="the table to release (CSV, Parquet, SPSS, Stata)")
    add_output(s, "-o", "--output", required=True, table=True, help="the release (format by its ending)")
    s.add_argument("-k", type=positive_int, required=True,
                   help="minimum group size: an intruder who links by the swapped values alone is right with probability "
                        "<= 1/k; one who learns from the release how columns relate, or uses a key determined by "
                        "confidential columns, is not bounded ('probanon attack' measures both)")
    s.add_argument("--method", choices=METHODS, required=True,
                   help="mdav-swap: MDAV on the keys, their tuples permuted (uninformed "
                        "intruder); mdav-swap-informed: per confidential attribute, MDAV on all the others, that "
                        "attribute permuted; ir-swap: per confidential attribute, blocks of k consecutive values "
                        "permuted; mdav-id: MDAV on every key and confidential attribute, group means "
                        "(classical k-anonymity)")
    add_release_options(s, keys_help="key (quasi-identifier) columns",
                        confidential_help="confidential columns (required except for mdav-id)")
    s.add_argument("--seed", type=seed, default=None,
                   help="seed of the permutations and the record order (default: fresh entropy). Keep it secret: "
                        "whoever knows the seed and the groups can undo the swap")
    add_strata_options(s, "groups are formed and values swapped")
    add_household_option(s, "households swapped, not records: the columns the method groups on or moves (mdav-swap: the "
                            "keys; ir-swap: the confidential columns; mdav-swap-informed, mdav-id: both) are "
                            "household-level variables (each constant within every household, else refused), the "
                            "method runs on one record per household, so every group holds at least k households, "
                            "and a household's values move to all members of another together (the link file then "
                            "has no released_row_<column> columns)")
    add_decimals_option(s, "as many as the input's values have; mdav-id only, the other methods move values")
    s.add_argument("--raw-distances", action="store_true",
                   help="MDAV on raw values instead of z-scores (how the paper's experiments were run)")
    add_output(s, "--groups", metavar="GROUPS.csv", table=True,
               help="also write the group labels of every partition (released order; private, like --link)")
    s.set_defaults(func=cmd_swap)

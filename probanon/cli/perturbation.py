"""``probanon noise``, ``probanon rank-swap`` and ``probanon record-swap``: the perturbative
methods offices use on continuous keys besides microaggregation (issue 43.6,
:mod:`probanon.perturbation`), each a release step like the others (roles, audit, shuffled
order, link file, all-or-nothing writer); each mechanism's promise is checked on what is about
to be written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .options import (
    read_input,
    add_household_option,
    add_input,
    add_output,
    add_release_options,
    column_names,
    number_in,
    example,
    release_roles,
    seed,
    write_release,
)
from .parser import command
from ..errors import InputError
from ..release import column_list, columns_with, make_release, shuffle_stream


def _aligned(frame: pd.DataFrame, release) -> pd.DataFrame:
    """The input's records in the release's order (through its link)."""
    order = np.argsort(release.link["released_row"].to_numpy())
    return frame.iloc[order].reset_index(drop=True)


def _numeric_keys(frame: pd.DataFrame, keys: list, missing: str) -> None:
    """The keys must be numbers (:func:`probanon.data.quasi_identifiers`, which names the line of
    stray text, a missing or an infinite value); a missing value only with ``--missing keep``."""
    from ..data import quasi_identifiers

    quasi_identifiers(frame, keys, missing=missing == "keep",
                      hint="; give --missing keep to leave missing values missing (as sdcMicro)")


def _add_missing_option(p) -> None:
    p.add_argument("--missing", choices=("raise", "keep"), default="raise",
                   help="missing key values: raise (default) refuses them; keep leaves them missing and perturbs "
                        "the values present (as sdcMicro)")


_percent = number_in("a percentage >= 0", 0.0)
_share = number_in("a number in 0..1", 0.0, 1.0)


def _profiles(text) -> list:
    """``--similar``: profiles separated by '/', each comma-separated columns."""
    return [column_names(part) for part in (text or "").split("/") if column_names(part)]


_count = number_in("an integer >= 0", 0, integer=True)


def _noise_json(out) -> Path:
    """The noise parameters written beside the release ``out``."""
    return Path(str(out) + ".noise.json")


def cmd_noise(args) -> int:
    from ..perturbation.noise import NoisePromise, add_noise

    frame = read_input(args)
    roles = release_roles(args, frame)
    keys = columns_with(roles, "key")
    _numeric_keys(frame, keys, args.missing)
    result = add_noise(frame[keys], args.method, args.noise, delta=args.delta, random_state=args.seed)
    law = {"additive": f"x + N(0, ({args.noise:g}% of sd)^2)", "correlated": f"x + N(0, {args.noise:g}% of cov)",
           "correlated2": f"sqrt(1 - {args.delta:g}^2) x + {args.delta:g} N(mean shift, sd^2)"}[args.method]
    actions = {c: f"key: {args.method} noise, {law}: noise sd {result.noise_sd[j]:.6g}"
               for j, c in enumerate(keys)}
    release = make_release(frame, roles, replaced={c: result.released[c].to_numpy() for c in keys}, actions=actions,
                           keep_order=args.keep_order, random_state=shuffle_stream(args.seed))
    release.promise = NoisePromise(_aligned(frame[keys], release), result)
    parameters = result.parameters()
    write_release(args, release, {_noise_json(args.output): json.dumps(parameters, indent=1) + "\n"},
                  original=frame)
    print(f"{args.method} noise on {len(keys)} key(s), {len(frame):,} records; the published noise law "
          f"(in {_noise_json(args.output)}, for analysts to correct variances: var(x) = (var(x') - noise_sd^2) "
          f"/ scale^2) matches the noise drawn (sample sd within the chi-square range):", file=sys.stderr)
    for j, c in enumerate(keys):
        print(f"  {c}: scale {result.scale[j]:.6g}, noise mean {result.noise_mean[j]:.6g}, noise sd "
              f"{result.noise_sd[j]:.6g} (drawn: {result.realised_sd[j]:.6g})", file=sys.stderr)
    return 0


def cmd_rank_swap(args) -> int:
    from ..perturbation.rankswap import RankSwapPromise, rank_swap

    frame = read_input(args)
    roles = release_roles(args, frame)
    keys = columns_with(roles, "key")
    _numeric_keys(frame, keys, args.missing)
    result = rank_swap(frame[keys], p=args.p, r0=args.r0, k0=args.k0, top=args.top, bottom=args.bottom,
                       random_state=args.seed)
    actions = {c: (f"key: rank-swapped within {int(result.window[j])} ranks ({result.swapped[j]:,} values moved)"
                   + (f", top {result.n_top[j]:,} coded to their mean" if result.n_top[j] else "")
                   + (f", bottom {result.n_bottom[j]:,} coded to their mean" if result.n_bottom[j] else ""))
               for j, c in enumerate(keys)}
    release = make_release(frame, roles, replaced={c: result.released[c].to_numpy() for c in keys}, actions=actions,
                           keep_order=args.keep_order, random_state=shuffle_stream(args.seed))
    order = np.argsort(release.link["released_row"].to_numpy())
    release.promise = RankSwapPromise(frame[keys].iloc[order].reset_index(drop=True), result, result.coded[order])
    write_release(args, release, original=frame)
    print(f"rank swap of {len(keys)} key(s), {len(frame):,} records: every moved value comes from within its "
          "window of ranks and each column keeps its values (top/bottom-coded tails aside):", file=sys.stderr)
    for j, c in enumerate(keys):
        print(f"  {c}: window {int(result.window[j])} ranks (P = {100 * result.fraction[j]:.4g}% of the "
              f"{int((result.coded[:, j] == 0).sum() - frame[c].isna().sum()):,} uncoded values), "
              f"{result.swapped[j]:,} values moved", file=sys.stderr)
    return 0


def cmd_record_swap(args) -> int:
    from ..perturbation.recordswap import RecordSwapPromise, record_swap

    frame = read_input(args)
    hierarchy, risk_vars, carry = args.hierarchy, column_list(args.risk_variables), column_list(args.carry_along)
    keys = list(dict.fromkeys(hierarchy + risk_vars + carry + column_list(args.keys)))
    if args.household is None:
        raise InputError("record-swap needs --household: households swap as wholes")
    roles = release_roles(args, frame, keys=keys)
    for c in hierarchy + carry:
        if roles.get(c) != "key":
            raise InputError(f"{c!r} is swapped: it cannot also be {roles.get(c)}")
    result = record_swap(frame, args.household, hierarchy, similar=_profiles(args.similar), swaprate=args.swaprate,
                         k=args.k, risk_variables=risk_vars, carry_along=carry, random_state=args.seed)
    swapped = hierarchy + result.carry_along
    actions = {c: f"key: geography, swapped between {result.households_swapped:,} households of different areas"
               for c in hierarchy}
    actions.update({c: "key: carried along with the household's geography" for c in result.carry_along})
    actions.update({c: "key: unchanged" + (" (risk variable)" if c in risk_vars else "") for c in keys
                    if c not in swapped})
    release = make_release(frame, roles, replaced={c: result.released[c].to_numpy() for c in swapped},
                           actions=actions, keep_order=args.keep_order, random_state=shuffle_stream(args.seed))
    release.promise = RecordSwapPromise(_aligned(frame, release), result, args.household)
    write_release(args, release, original=frame)
    top = hierarchy[0]
    moved = (frame.groupby(top, dropna=False).size() - result.released.groupby(top, dropna=False).size()).abs()
    print(f"record swap: {result.households_swapped:,} of {result.households:,} households swapped "
          f"({result.pairs:,} swaps, rate {result.rate:.4f} for {args.swaprate:g} asked; "
          f"{result.records_swapped:,} records); households at risk (a cell below k = {args.k} at some level): "
          f"{result.risky_before:,} before, {result.risky_after:,} after; no donor found for {result.unmatched:,}. "
          f"Kept: every household whole, the households per area at every level; records per {top} changed by "
          f"at most {int(moved.max()) if len(moved) else 0} (0 when household size is in every similarity profile)",
          file=sys.stderr)
    return 0


def _release_parser(sub, name: str, epilog: str):
    s = command(sub, name, epilog=epilog)
    add_input(s, "input", help="the table to release (CSV, Parquet, SPSS, Stata)")
    return s


def add_parser(sub) -> None:
    s = _release_parser(sub, "noise", example(
        "probanon noise tarragona.csv -o noisy.csv --keys V1,V2,V3 --keep-other --method correlated --noise 20 \\",
        "    --seed 1 --link noisy.link.csv",
        "# the noise law is written to noisy.csv.noise.json"))
    add_output(s, "-o", "--output", required=True, table=True, derived=(_noise_json,),
               help="the release (format by its ending), and OUTPUT.noise.json: the published noise law")
    s.add_argument("--method", choices=("additive", "correlated", "correlated2"), default="additive",
                   help="additive: x + N(0, (noise%% x sd)^2) per column; correlated: noise of covariance noise%% x "
                        "the data's, which keeps every correlation; correlated2: sqrt(1 - delta^2) x + delta z, means "
                        "and variances kept (sdcMicro's addNoise methods; default additive)")
    s.add_argument("--noise", type=_percent, default=150.0,
                   help="the noise in percent (of each column's sd for additive, of the covariance for "
                        "correlated; default 150, sdcMicro's)")
    s.add_argument("--delta", type=float, default=0.1, help="correlated2's delta in (0, 1) (default 0.1, sdcMicro's)")
    add_release_options(s, keys_help="numeric keys perturbed by the noise")
    s.add_argument("--seed", type=seed, default=None,
                   help="seed of the noise and the record order (default: fresh entropy); keep it secret")
    _add_missing_option(s)
    s.set_defaults(func=cmd_noise)

    r = _release_parser(sub, "rank-swap", example(
        "probanon rank-swap tarragona.csv -o swapped.csv --keys V1,V2,V3 --keep-other -p 5 --seed 1"))
    add_output(r, "-o", "--output", required=True, table=True, help="the release (format by its ending)")
    window = r.add_mutually_exclusive_group()
    window.add_argument("-p", "--p", dest="p", type=_percent, default=None,
                        help="the rank window: two swapped values' ranks differ by at most P%% of the records")
    window.add_argument("--r0", type=_share, default=None,
                        help="the window from the correlation-preservation factor R0 (sdcMicro's default 0.95 when "
                             "no window option is given)")
    window.add_argument("--k0", type=_percent, default=None, help="the window from the subset-mean factor K0")
    r.add_argument("--top", type=_percent, default=5.0,
                   help="percent of the highest values top-coded to their mean before swapping (default 5, sdcMicro's)")
    r.add_argument("--bottom", type=_percent, default=5.0,
                   help="percent of the lowest values bottom-coded to their mean (default 5, sdcMicro's)")
    add_release_options(r, keys_help="numeric keys rank-swapped, each on its own")
    r.add_argument("--seed", type=seed, default=None,
                   help="seed of the swaps and the record order (default: fresh entropy); keep it secret")
    _add_missing_option(r)
    r.set_defaults(func=cmd_rank_swap)

    c = _release_parser(sub, "record-swap", example(
        "probanon record-swap census.csv -o swapped.csv --household hid --hierarchy nuts1,nuts2,nuts3 \\",
        "    --risk-variables age,sex --similar hsize --swaprate 0.05 -k 3 --keep-other --seed 1"))
    add_output(c, "-o", "--output", required=True, table=True, help="the release (format by its ending)")
    add_household_option(c, "households swap as wholes (required)")
    c.add_argument("--hierarchy", type=column_names, required=True, metavar="COLS",
                   help="comma-separated geographic columns from the top level down (e.g. region,district); "
                        "what is swapped between households")
    c.add_argument("--risk-variables", type=column_names, metavar="COLS",
                   help="comma-separated columns that with the geography make a record's cell (its risk: 1/count)")
    c.add_argument("-k", type=_count, default=3,
                   help="households with a member in a cell of fewer than k records at some level are swapped "
                        "first, across that level (default 3, sdcMicro's; 0: none)")
    c.add_argument("--swaprate", type=_share, default=0.05,
                   help="share of households swapped, two per swap (default 0.05)")
    c.add_argument("--similar", metavar="COLS[/COLS...]",
                   help="similarity profiles: donors share these comma-separated household-level columns (e.g. "
                        "hsize); profiles separated by '/' are tried in turn, e.g. hsize,tenure/hsize (default: any "
                        "household)")
    c.add_argument("--carry-along", type=column_names, metavar="COLS",
                   help="comma-separated household-level columns moved with the geography")
    add_release_options(c, keys_help="further key columns (the geography, risk variables and carry-along columns "
                                     "are keys already)")
    c.add_argument("--seed", type=seed, default=None,
                   help="seed of the swaps and the record order (default: fresh entropy); keep it secret")
    c.set_defaults(func=cmd_record_swap)

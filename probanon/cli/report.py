"""``probanon evaluate``, ``risk`` and ``report``: utility, anonymity and risk of a release or a
file, as text, JSON or the HTML risk-utility reports."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from .options import column_names
from .options import add_input, add_match_options, add_output, number_in, positive_int, example, summary_lines
from .parser import command
from .._validation import weights_of
from ..data import MISSING_HINT, quasi_identifiers, read_table
from ..errors import InputError
from ..metrics import format_information_loss, information_loss, k_achieved, utility_report
from ..metrics.frequency import VIOLATION_KS, main_risk_level
from ..release import align, column_list


def _aligned(args, original: pd.DataFrame, released: pd.DataFrame, keys: list, changed=()) -> pd.DataFrame:
    """``released`` reordered so that its row i is the release of ``original``'s row i, by
    ``--link``, ``--id`` or ``--by-position``, checked: the columns released unchanged (shared,
    not ``keys`` nor ``changed``) agree under the match (:func:`probanon.release.align`)."""
    position = align(original, released, keys, link=args.link, id=args.id, by_position=args.by_position,
                     changed=changed)
    return released.iloc[position].reset_index(drop=True)


def check_loss_of_match(X, Y, weights, missing: bool, how: str) -> None:
    """Refuse a match of original and release whose information loss exceeds 100%: a release
    that replaces each record's keys by its group's mean (microaggregation, individual ranking,
    cell centroids) loses at most SSE/SST = 1, since the mean minimises each group's sum of squares
    (SSE = the within-group sum <= the total SST, and a suppressed value counts as the overall mean),
    whereas the records matched to another release's rows lose about SST(original) + SST(release),
    up to 200%."""
    if X.shape[1] == 0 or X.shape[0] < 2:
        return
    loss = information_loss(X, Y, weights=weights, missing=missing)
    if loss > 100.0 * (1 + 1e-9):
        raise InputError(f"{how}: information loss {loss:.1f}% > 100% is impossible for a correct match (replacing "
                         "each record by its group's mean loses at most SSE/SST = 100%, as replacing every record "
                         "by the column means does): the records are matched wrongly (the link file of another "
                         "release?)")


def _match_name(args) -> str:
    return f"--link {args.link}" if args.link else f"--id {args.id}" if args.id else "--by-position"


def _key_names(args, tables: dict, numeric_required: bool = True) -> tuple[list, list]:
    """The numeric ``--keys`` and the ``--categorical-keys`` ({name: table} must all hold them):
    named once each, at least one (a numeric one when ``numeric_required``)."""
    keys, categorical = column_list(args.keys), column_list(args.categorical_keys)
    if not keys and (numeric_required or not categorical):
        raise InputError("name the quasi-identifiers with --keys" + " or --categorical-keys" * (not numeric_required))
    both = sorted(set(keys) & set(categorical))
    if both:
        raise InputError(f"{both[0]!r} is named by both --keys and --categorical-keys")
    for name, table in tables.items():
        absent = [c for c in keys + categorical if c not in table.columns]
        if absent:
            where = f"{name} has no column {absent[0]!r}" if len(tables) == 1 else \
                f"{name} table has no column {absent[0]!r}: the key {absent[0]!r} is not in both tables"
            raise InputError(where)
    return keys, categorical


def _matched_keys(args, lacking: bool = False, changed=()):
    """The tables of ``evaluate`` and ``report``, checked and matched: (original, released in
    the original's order, numeric key matrices X and Y, numeric keys, categorical keys,
    weights). ``--keys`` are numeric (``lacking``: missing values allowed), ``--categorical-keys``
    compared as categories; every key in both tables. The match is checked: the shared columns
    other than the keys and ``changed`` agree under it, and the information loss is <= 100%."""
    original, released = read_table(args.original), read_table(args.released)
    keys, categorical = _key_names(args, {"original": original, "released": released}, numeric_required=False)
    weights = weights_of(original, args.weights, f"{args.original}: ")
    if not keys:  # categorical keys only: no numeric matrix (quasi_identifiers would take every numeric column)
        released = _aligned(args, original, released, categorical, changed)
        empty = np.zeros((len(original), 0))
        return original, released, empty, empty.copy(), [], categorical, weights
    X, numeric = quasi_identifiers(original, keys, lacking, MISSING_HINT if hasattr(args, "missing") else "")
    quasi_identifiers(released, numeric, missing=lacking)  # checked in file order: a message names the line
    released = _aligned(args, original, released, numeric + categorical, changed)
    Y, _ = quasi_identifiers(released, numeric, missing=lacking)
    check_loss_of_match(X, Y, weights, lacking, _match_name(args))
    return original, released, X, Y, numeric, categorical, weights


def cmd_evaluate(args) -> int:
    lacking = args.missing == "pattern"
    if args.confidential and not args.risk:
        raise InputError("--confidential names the columns whose attribute disclosure --risk measures: add --risk")
    # a swap or an aggregation may have moved the confidential values: not checked as released unchanged
    # a household column is released renumbered: not checked as released unchanged either
    changed = column_list(args.confidential) + ([args.household] if args.household else [])
    original, released, X, Y, columns, categorical, weights = _matched_keys(args, lacking, changed=changed)
    every = columns + categorical
    if not columns:  # categorical keys only (recode, suppress, pram): their own utility below
        result = {"information_loss": None, "n_records": len(original), "columns": [],
                  "correlation_difference_max": None}
    elif lacking and (np.isnan(X).any() or np.isnan(Y).any()):  # moments of incomplete columns: not reported
        result = {"information_loss": information_loss(X, Y, weights=weights, missing=True), "n_records": len(X),
                  "columns": columns, "correlation_difference_max": None,
                  "suppressed": int((np.isnan(Y) & ~np.isnan(X)).sum())}
    else:
        result = utility_report(pd.DataFrame(X, columns=columns), pd.DataFrame(Y, columns=columns),
                                weights=weights).to_dict()
    # a suppressed (missing) key value matches any value, as sdcMicro and the frequency risk count it
    result["k_achieved"] = k_achieved(released, every, missing="any")
    as_category = k_achieved(released, every)
    if as_category != result["k_achieved"]:
        result["k_achieved_missing_as_category"] = as_category
    if categorical:
        result["categorical_keys"] = _categorical_utility(original, released, categorical)
    households = _households(args, original, every)
    k_combination = args.k
    found_before, found_after = (_key_risk(args, table, every, weights, households, k_combination, label)
                                 for table, label in ((original, " of the original"), (released, " of the release")))
    risk_before, risk_after = found_before.frequency, found_after.frequency
    result["frequency_risk"] = {"original": risk_before.to_dict(), "released": risk_after.to_dict()}
    sides = {"original": found_before.to_dict(), "released": found_after.to_dict()}
    for name in ("suda2", "household_risk", "k_violations"):
        if name in sides["original"]:
            result[name] = {side: found[name] for side, found in sides.items()}
    if args.risk:
        from ..metrics import interval_disclosure, record_linkage

        complete = bool(columns) and not (lacking and (np.isnan(X).any() or np.isnan(Y).any()))
        if complete:  # record linkage and interval disclosure need keys without missing values
            result["record_linkage"] = record_linkage(X, Y)
            result["interval_disclosure"] = interval_disclosure(X, Y)
        confidential = column_list(args.confidential)
        if confidential:
            from ..metrics.attribute import release_disclosure

            absent = [c for c in confidential if c not in original.columns or c not in released.columns]
            if absent:
                raise InputError(f"--confidential: {absent[0]!r} is not a column of both tables")
            disclosure = release_disclosure(released, confidential, released[every], original=original)
            result["attribute_disclosure"] = disclosure.to_dict()
    holds = None if args.k is None else result["k_achieved"] >= args.k
    if holds is not None:
        result["k"], result["holds"] = args.k, holds
    if args.json:
        print(json.dumps(result, allow_nan=False))
    else:
        print(f"records:            {result['n_records']}")
        print(f"quasi-identifiers:  {', '.join(every)}")
        if columns:
            print(f"information loss:   {format_information_loss(result['information_loss'])}"
                  + " (weighted)" * (weights is not None) + (" (numeric keys)" if categorical else ""))
        for c, row in result.get("categorical_keys", {}).items():
            print(f"categorical key {c}: {row['changed']:,} records changed ({row['suppressed']:,} suppressed), "
                  f"{row['categories']} -> {row['categories_released']} categories, information loss "
                  f"{100 * row['information_loss']:.2f}% (entropy lost H(X|Y)/H(X))")
        print(f"k achieved:         {result['k_achieved']}"
              + ("" if holds is None else f" ({'holds' if holds else 'FAILS'}: k = {args.k} required)")
              + ("" if "k_achieved_missing_as_category" not in result else
                 f" (a missing value matching any value; {result['k_achieved_missing_as_category']} counting it as a "
                 "category of its own)"))
        if result["correlation_difference_max"] is not None:
            print(f"max |corr diff|:    {result['correlation_difference_max']:.4f}")
        print(f"sample uniques:     {risk_before.sample_uniques} in the original, {risk_after.sample_uniques} released")
        print("records violating:  " + ", ".join(
            f"{k}-anonymity {risk_before.violations(k)} -> {risk_after.violations(k)}" for k in VIOLATION_KS))
        model = "weighted" if weights is not None else "no weights: the file is the population"
        print(f"expected re-identifications (individual risk, Benedetti-Franconi, {model}): "
              f"{risk_before.expected_reidentifications:.2f} ({100 * risk_before.global_risk:.2f} %) in the original, "
              f"{risk_after.expected_reidentifications:.2f} ({100 * risk_after.global_risk:.2f} %) released")
        print(f"records above the main risk level (sdcMicro's max(0.1, median + 2 MAD)): "
              f"{found_before.above_main_level()} in the original, {found_after.above_main_level()} released")
        for side, found in (("original", found_before), ("release", found_after)):
            if found.rows():
                print(f"risk measures of the {side}:")
                print("\n".join("  " + line for line in summary_lines(found.rows()).splitlines()))
        if args.risk and "record_linkage" not in result:
            print("record linkage, interval disclosure: not measured ("
                  + ("keys with missing values)" if columns else "they measure numeric keys; none was given)"))
        elif args.risk:
            print(f"record linkage:     {result['record_linkage']:.4f} (expected share re-identified, nearest neighbour)")
            print(f"interval disclosure: {result['interval_disclosure']:.4f} (sdcMicro dRisk, 5% of sd, on the keys "
                  "only)")
        if args.risk:  # the attribute measures do not need complete keys
            if "attribute_disclosure" in result:
                print("attribute disclosure (the released classes of the keys; measured, no bound claimed):")
                for line in disclosure.lines():
                    print(f"  {line}")
            else:
                print("attribute disclosure: not measured (name the confidential columns with --confidential)")
    return 1 if holds is False else 0


def _categorical_utility(original: pd.DataFrame, released: pd.DataFrame, keys: list) -> dict:
    """{key: what the release did to it}: records changed and suppressed, categories before and
    after, the entropy lost (:func:`probanon.categorical.strategies.information_loss`)."""
    from ..categorical.strategies import information_loss as categorical_loss

    table = categorical_loss(original, released, keys)
    return {c: {name: (int(v) if name in ("changed", "suppressed", "categories", "categories_released") else float(v))
                for name, v in row.items()} for c, row in table.iterrows()}


RISK_MISSING_HINT = "; give --missing pattern to let a missing value match any value (sdcMicro's rule)"


def cmd_risk(args) -> int:
    """``probanon risk FILE``: the frequency-based risk profile of one file, as sdcMicro's
    ``print(sdc, "risk")`` and ``print(sdc, "kAnon")`` (:mod:`probanon.metrics.frequency`)."""
    frame = read_table(args.input)
    keys, categorical = _key_names(args, {args.input: frame}, numeric_required=False)
    if keys:  # numbers, checked with the line of a bad value; a missing value only with --missing pattern
        quasi_identifiers(frame, keys, args.missing == "pattern", RISK_MISSING_HINT)
    weights = weights_of(frame, args.weights, f"{args.input}: ")
    households = _households(args, frame, keys + categorical)
    found = _key_risk(args, frame, keys + categorical, weights, households, args.k)
    risk = found.frequency
    above = risk.above(args.threshold)
    if args.output:
        extra = {"suda_score": None if found.suda is None else found.suda.score,
                 "dis_score": None if found.suda is None else found.suda.dis_score,
                 "household_risk": None if found.household is None else found.household.risk}
        extra = {name: values for name, values in extra.items() if values is not None}
        clash = sorted(set(keys + categorical) & {"record", "fk", "Fk", "risk", "above_level", *extra})
        if clash:
            raise InputError(f"-o: the key {clash[0]!r} has the name of a column of the risk file; rename it")
        table = frame[keys + categorical].reset_index(drop=True)
        table.insert(0, "record", np.arange(1, risk.n + 1))
        args.outputs.write({args.output: table.assign(fk=risk.fk, Fk=risk.Fk, risk=risk.risk, above_level=above,
                                                      **extra)})
    result = risk.to_dict(level=args.threshold)
    result.update(numeric_keys=keys, categorical_keys=categorical, weights=args.weights,
                  risk_level_rule="--threshold" if args.threshold is not None else "max(0.1, median + 2 MAD)",
                  records_above_main_level=found.above_main_level())
    result.update({name: part for name, part in found.to_dict().items()
                   if name in ("suda2", "household_risk", "k_violations")})
    if args.json:
        print(json.dumps(result, allow_nan=False))
    else:
        lacking = int(frame[keys + categorical].isna().any(axis=1).sum())
        print(_risk_summary(args, risk, keys, categorical, int(above.sum()), lacking, found.rows()))
    return 0


def _households(args, frame: pd.DataFrame, keys: list):
    """The household ids of ``--household`` (a column of ``frame``, not a key), or None."""
    if args.household is None:
        return None
    if args.household not in frame.columns:
        raise InputError(f"--household: no column {args.household!r}")
    if args.household in keys:
        raise InputError(f"--household: {args.household!r} is also a key")
    return frame[args.household]


def _key_risk(args, frame: pd.DataFrame, keys: list, weights, households, k, label: str = ""):
    """The risk measures of ``frame`` asked by ``--suda2``, ``--household`` (``households``) and
    ``--combinations`` (with ``k``), besides the frequency risk (:func:`probanon.metrics.key_risk.key_risk`)."""
    from ..metrics.key_risk import COMBINATION_K, key_risk
    from .progress import Progress

    if args.suda_max_size is not None and not args.suda2:
        raise InputError("--suda-max-size bounds the MSUs of SUDA2: add --suda2")
    with Progress(f"SUDA2{label}: {len(frame):,} records, keys {', '.join(keys)}", quiet=args.json or not args.suda2,
                  desc="SUDA2 key subsets", unit="subset") as bar:
        return key_risk(frame, keys, weights=weights, suda=args.suda2, suda_max_size=args.suda_max_size,
                        dis_fraction=args.dis_fraction, households=households,
                        combinations=args.combinations, k=COMBINATION_K if k is None else k,
                        by_combination=args.combinations is not None, progress=bar)


def _risk_summary(args, risk, keys: list, categorical: list, above: int, lacking: int, more=()) -> str:
    """The readable profile of :func:`cmd_risk` (sdcMicro's wording where it has one); ``above``:
    records above the risk level, ``lacking``: records with a missing key value."""
    n = risk.n
    share = lambda count: f"{count:,} ({100 * count / n:.3f} %)"  # noqa: E731
    q = risk.risk_summary()
    named = [f"{', '.join(names)} ({kind})" for names, kind in ((keys, "numeric"), (categorical, "categorical"))
             if names]
    population = (f"estimated from the weights in {args.weights!r} (F_k = sum of the weights sharing a record's keys)"
                  if args.weights else "no weights: the file is the population (F_k = f_k)")
    if args.threshold is None:
        level = (f"(risk > {main_risk_level(risk.risk):.4g} = max(0.1, median + 2 MAD): sdcMicro's \"higher risk "
                 "than the main part of the data\")")
    else:
        level = f"(risk > {args.threshold:g}, --threshold)"
    rows = [("records", f"{n:,}"), ("keys", "; ".join(named))]
    if lacking:
        rows.append(("", f"{share(lacking)} with a missing key value, which matches any value (sdcMicro's rule)"))
    rows += [("population frequencies", population),
            ("sample uniques", share(risk.sample_uniques) + " (f_k = 1: no other record shares their keys)")]
    rows += [("records violating" if i == 0 else "", f"{k}-anonymity: {share(risk.violations(k))}")
             for i, k in enumerate(VIOLATION_KS)]
    rows += [("individual risk", f"min {q['min']:.4g}, 25 % {q['q25']:.4g}, median {q['median']:.4g}, "
                                 f"75 % {q['q75']:.4g}, max {q['max']:.4g}, mean {q['mean']:.4g}"),
             ("", "(Benedetti-Franconi, as sdcMicro's measure_risk: the probability that an intruder who knows a "
                  "person's keys picks that person's record)"),
             ("expected re-identifications", f"{risk.expected_reidentifications:,.2f} "
                                             f"({100 * risk.global_risk:.2f} % of the records: the global risk)"),
             ("records above the risk level", share(above)), ("", level)]
    rows += list(more)
    if args.output:
        rows.append(("per-record risk", f"written to {args.output} (record, keys, fk, Fk, risk, above_level"
                                        + ", suda_score, dis_score" * args.suda2
                                        + ", household_risk" * (args.household is not None) + ")"))
    return summary_lines(rows)


#: argparse type of ``--dis-fraction``: a sampling fraction in (0, 1)
_fraction = number_in("a fraction in (0, 1)", 0.0, 1.0, open_low=True, open_high=True)


def add_key_risk_options(p, k_help: str | None = None) -> None:
    """The risk measures around categorical keys (issue 43.5) of ``risk``, ``evaluate`` and
    ``report``: ``--suda2`` (``--suda-max-size``, ``--dis-fraction``), ``--household``,
    ``--combinations`` (with ``-k`` when ``k_help``: the command has no ``-k`` of its own)."""
    p.add_argument("--suda2", action="store_true",
                   help="also SUDA2 (sdcMicro's suda2): the records with a minimal sample unique (MSU), the MSUs by "
                        "size, the DIS-SUDA scores in sdcMicro's intervals and each key's contribution")
    p.add_argument("--suda-max-size", type=positive_int, metavar="N",
                   help="with --suda2: seek MSUs of at most N keys (default: all keys)")
    p.add_argument("--dis-fraction", type=_fraction, default=0.01, metavar="F",
                   help="with --suda2: the sampling fraction of the DIS measure (sdcMicro's DisFraction, default 0.01)")
    p.add_argument("--household", metavar="COL",
                   help="the household-id column: also the household risk (sdcMicro's measure_risk with hid), "
                        "1 - prod(1 - r) over each household's members")
    p.add_argument("--combinations", type=positive_int, metavar="M",
                   help="also the records below k on every combination of at most M keys (a missing value matching "
                        "any value), per combination")
    if k_help:
        p.add_argument("-k", type=positive_int, default=3, help=k_help)


def _risk_level(text: str) -> float:
    """argparse type of ``risk --threshold``: a probability in (0, 1]."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a risk in (0, 1], got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a risk in (0, 1], got {text}")
    return value



def cmd_report(args) -> int:
    """``probanon report ORIGINAL RELEASED``: the internal and external risk-utility reports
    (:mod:`probanon.release_report`)."""
    from ..release_report import assess, report_contents

    from ..attacks.setting import MECHANISMS

    column_wise = args.probabilistic or MECHANISMS.get(args.mechanism) == "column-wise"
    swapped = column_list(args.confidential) if column_wise else []  # may be swapped: not checked
    swapped += [args.household] if args.household else []  # released renumbered
    original, released, X, _, numeric, categorical, weights = _matched_keys(args, changed=swapped)
    compared = []
    for entry in args.compare or []:
        label, _, rest = entry.partition("=")
        path, _, link = rest.partition(",")
        if not label or not path:
            raise InputError(f"--compare {entry!r}: expected LABEL=RELEASED[,LINK]")
        other = read_table(path)
        other = other.iloc[align(original, other, numeric + categorical, link=link or None,
                                 by_position=not link, changed=swapped)].reset_index(drop=True)
        Y = quasi_identifiers(other, numeric)[0]
        check_loss_of_match(X, Y, weights, False, f"--compare {label}")
        compared.append(assess(label, X, Y, other, numeric + categorical, args.k, weights))
    out = Path(args.output_dir)
    confidential = column_list(args.confidential)
    if args.mechanism is not None:
        from ..attacks.setting import check_mechanism

        check_mechanism(args.mechanism)
    args.outputs.write(report_contents(out, original, released, numeric, categorical, args.k, args.method, weights,
                                       compared, args.probabilistic, args.mechanism, confidential,
                                       dataset=Path(args.released).name,
                                       key_risk=_report_key_risk(args, original, numeric + categorical)))
    print(f"reports written to {out / 'internal' / 'index.html'} (for the office) and "
          f"{out / 'external' / 'index.html'} (publishable)", file=sys.stderr)
    return 0



def _report_key_risk(args, original: pd.DataFrame, keys: list) -> dict | None:
    """The keywords of :func:`probanon.metrics.key_risk.key_risk` asked by ``report``'s
    ``--suda2``, ``--household`` and ``--combinations`` (None: none asked)."""
    if args.suda_max_size is not None and not args.suda2:
        raise InputError("--suda-max-size bounds the MSUs of SUDA2: add --suda2")
    if not (args.suda2 or args.household is not None or args.combinations is not None):
        return None
    return {"suda": args.suda2, "suda_max_size": args.suda_max_size, "dis_fraction": args.dis_fraction,
            "households": _households(args, original, keys), "combinations": args.combinations, "k": args.k,
            "by_combination": args.combinations is not None}


def add_parser(sub) -> None:
    e = command(sub, "evaluate", epilog=example(
        "probanon evaluate census.csv census_k5.csv -k 5 --risk \\",
        "    --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX --link census_k5.link.csv"))
    add_input(e, "original", help="the original table")
    add_input(e, "released", help="its release (records matched by --link, --id or --by-position)")
    e.add_argument("--keys", "--columns", dest="keys", metavar="COLS", type=column_names,
                   help="comma-separated numeric quasi-identifier columns (give --keys, --categorical-keys or both)")
    e.add_argument("--missing", choices=("raise", "pattern"), default="raise",
                   help="pattern: keys may have missing values (a release of microaggregate --missing pattern); the "
                        "information loss counts a suppressed value as replaced by the mean")
    e.add_argument("--categorical-keys", metavar="COLS", type=column_names,
                   help="quasi-identifiers compared as categories only (text or codes; missing values match any "
                        "category, as in sdcMicro): counted in k achieved and the frequency risk, not in the "
                        "information loss")
    e.add_argument("--weights", metavar="COL",
                   help="sampling weights (a column of the original, numbers > 0): weighted information loss and "
                        "moments; population frequencies F_k and the individual risk estimated with them (default: "
                        "the file is the population)")
    add_match_options(e)
    e.add_argument("-k", type=positive_int, help="required k: exit 1 when the release's k achieved is smaller (also the k of --combinations, "
                                                   "default 3)")
    e.add_argument("--json", action="store_true", help="one JSON object on stdout")
    e.add_argument("--risk", action="store_true",
                   help="also disclosure risk: record linkage and interval disclosure on the quasi-identifiers, and "
                        "with --confidential the attribute disclosure of each confidential column")
    e.add_argument("--confidential", metavar="COLS", type=column_names,
                   help="comma-separated confidential columns (with --risk): the shares of people whose released "
                        "class pins their value (within 1, 5, 10%%; constant classes and the class mode for "
                        "categories), each beside its baseline")
    add_key_risk_options(e)
    e.set_defaults(func=cmd_evaluate)

    k = command(sub, "risk", epilog=example(
        "# adult.csv: UCI Adult (48,842 records); fnlwgt: its census weights",
        "probanon risk adult.csv --keys age --categorical-keys sex,race,workclass,education --weights fnlwgt",
        "probanon risk adult.csv --categorical-keys sex,race,occupation --threshold 0.2 -o adult_risk.csv",
        "probanon risk adult.csv --categorical-keys age,sex,race,marital-status,education --suda2 --combinations 3"))
    add_input(k, "input", help="the original file (CSV, Parquet, SPSS, Stata)")
    k.add_argument("--keys", metavar="COLS", type=column_names,
                   help="comma-separated numeric quasi-identifiers (checked to be numbers; compared by exact value)")
    k.add_argument("--categorical-keys", metavar="COLS", type=column_names,
                   help="comma-separated quasi-identifiers compared as categories (text or codes)")
    k.add_argument("--weights", metavar="COL",
                   help="sampling weights (numbers > 0): the population frequency F_k of a record's keys is the sum "
                        "of the weights of the records sharing them (default: the file is the population)")
    k.add_argument("--missing", choices=("raise", "pattern"), default="raise",
                   help="a missing value of a numeric key: raise (default) refuses it, naming its line; pattern lets "
                        "it match any value, as a missing categorical value always does (sdcMicro's rule)")
    k.add_argument("--threshold", type=_risk_level, default=None, metavar="R",
                   help="count the records whose individual risk is above R, in (0, 1] (default: sdcMicro's level "
                        "max(0.1, median + 2 MAD) of print(sdc, \"risk\"))")
    add_output(k, "-o", "--output", table=True, metavar="FILE",
               help="also write every record's risk: record (from 1), the keys, fk, Fk, risk, above_level")
    k.add_argument("--json", action="store_true", help="one JSON object on stdout instead of the summary")
    add_key_risk_options(k, k_help="the k of --combinations (default 3)")
    k.set_defaults(func=cmd_risk)

    rr = command(sub, "report", epilog=example(
        "probanon report census.csv census_k5.csv -k 5 --method \"MDAV, k = 5\" \\",
        "    --keys AFNLWGT,AGI,EMCONTRB,FEDTAX,STATETAX --link census_k5.link.csv -o census_k5_report"))
    add_input(rr, "original", help="the original table")
    add_input(rr, "released", help="its release (records matched by --link, --id or --by-position)")
    rr.add_argument("--keys", metavar="COLS", type=column_names, help="comma-separated numeric quasi-identifiers")
    rr.add_argument("--categorical-keys", metavar="COLS", type=column_names, help="quasi-identifiers compared as categories only")
    rr.add_argument("--weights", metavar="COL", help="sampling weights (a column of the original)")
    rr.add_argument("-k", type=positive_int, default=2, help="the k the release must meet (default 2)")
    rr.add_argument("--method", default="method not stated",
                    help="the method and its parameters, as the reports state them (e.g. 'MDAV, k = 5')")
    rr.add_argument("--confidential", metavar="COLS", type=column_names,
                    help="comma-separated confidential columns the release attaches to each record (for the attack "
                         "suite)")
    rr.add_argument("--mechanism", metavar="NAME",
                    help="how the release was made (microaggregation, survey, mdav-id, mdav-swap, mdav-swap-informed, "
                         "ir-swap): the internal report adds the attack suite of that mechanism")
    rr.add_argument("--probabilistic", action="store_true",
                    help="the release is probabilistically k-anonymous (swap: values swapped within groups of k), "
                         "so its released tuples need not be shared by k records")
    rr.add_argument("--compare", action="append", metavar="LABEL=RELEASED[,LINK]",
                    help="another release of the same original for the risk-utility map (repeatable; matched by "
                         "its link file, or by position)")
    add_key_risk_options(rr)
    add_match_options(rr)
    add_output(rr, "-o", "--output-dir", required=True, metavar="DIR",
               folder=lambda args: ("internal/index.html", "external/index.html"),
               help="folder of the reports: DIR/internal/index.html (for the office) and DIR/external/index.html "
                    "(publishable); created if absent, in a folder that exists")
    rr.set_defaults(func=cmd_report)


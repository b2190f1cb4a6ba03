"""What the office can do when an intruder of the attack suite is above the claimed bound (issue 39,
point 13), each option measured: the intruders that were above it are run again, with the same
seed, runs and confidence, on the release the option gives, and compared with the office's bound
1/k. An option brings them within it when every success rate is at most 1/k; its verdict also
says whether the intervals certify it (:attr:`Option.verdict`).

1. **A larger k**: the release made again by its mechanism at k' = 2k, 3k, 4k (:data:`K_FACTORS`;
   the first that brings the intruders within the bound, else the best found). Microaggregation is
   remade as MDAV on the keys (:class:`probanon.microagg.MDAV`, whatever method made the release;
   the confidential columns as released), the swapping mechanisms by :func:`probanon.swapping.swap`
   at k'. A survey's cells are fixed by its published function, and an unknown mechanism cannot be
   remade: not measured.
2. **Dropping confidential columns** the intruders learned from: each one alone first (how much
   the intruders learned from it: their success without it), then the most telling ones together,
   in that order, until the intruders are within the bound (never all of them: a release of the
   keys alone has nothing left to attach to a person). A column-wise swap forms each column's
   groups on every other attribute, so there the release is made again without the columns.
3. **Perturbing them instead**: the same columns, in the same order, replaced by their mean within
   each group of the release the intruder rebuilds (records sharing a released key tuple; MDAV
   groups of the released keys for MDAV-SWAP): the columns microaggregated in the release's own
   groups, as MDAV-ID (paper 2, Sec. V) does with every attribute, so that no member of a group
   can be told from another by them. Column-wise swaps have no such groups: not measured.

Each option's figure comes from an actual run of :func:`probanon.attacks.attack` on the changed
release; nothing is extrapolated.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._threads import one_thread
from .._validation import check_random_state
from ..errors import AdjustmentWarning
from ..metrics import information_loss
from .setting import MECHANISMS, KeyTypes, attack_data, column_list_of, rebuild_groups
from .suite import INTRUDERS, NEEDS_CONFIDENTIAL, AttackReport, attack, with_bound

#: The larger k tried: k' = factor x k, in order.
K_FACTORS = (2, 3, 4)
#: The kinds of option, in the order tried, with their headings.
HEADINGS = {"larger k": "a larger k (the release made again by its mechanism)",
            "drop one": "drop one confidential column (the intruders' success without it, most telling first)",
            "drop": "drop the most telling confidential columns together",
            "perturb": "perturb them instead (each replaced by its mean within the release's groups)"}


@dataclass(frozen=True)
class Option:
    """One option, measured. ``kind``: "larger k", "drop one", "drop" or "perturb"; ``change``:
    what the office would do, in words; ``k``: the k of the changed release; ``columns``: the
    confidential columns dropped or perturbed; ``results``: the rerun intruders'
    :class:`~probanon.metrics.ReidentificationTest` held against the office's bound; ``cost``:
    what the option costs in utility, in words."""

    kind: str
    change: str
    k: int
    columns: tuple
    results: tuple
    cost: str = ""

    @property
    def worst(self) -> float:
        """The highest success rate of the rerun intruders."""
        return max(r.rate for r in self.results)

    @property
    def within(self) -> bool:
        """Every rerun intruder's success at most the office's bound."""
        return all(r.rate <= r.bound for r in self.results)

    @property
    def verdict(self) -> str:
        """"within the bound" (every interval at or below it), "below the bound, not certified" (every
        success at most the bound, some interval reaching above it), "not significantly above" (some
        success above the bound, no interval entirely above it) or "still ABOVE the bound"."""
        if all(not r.upper_exceeds_bound for r in self.results):
            return "within the bound"
        if self.within:
            return "below the bound, not certified"
        return "not significantly above" if not any(r.lower_exceeds_bound for r in self.results) else \
            "still ABOVE the bound"

    def figures(self) -> str:
        """Each rerun intruder's success with its interval, and the verdict."""
        parts = [f"{r.rule} {r.rate:.4f} [{r.interval[0]:.4f}, {r.interval[1]:.4f}]" for r in self.results]
        return "; ".join(parts) + f" -> {self.verdict}"

    def to_dict(self) -> dict:
        return {"kind": self.kind, "change": self.change, "k": self.k, "columns": list(self.columns),
                "within_bound": self.within, "verdict": self.verdict, "worst_rate": self.worst, "cost": self.cost,
                "results": [r.to_dict() for r in self.results]}


@dataclass(frozen=True)
class Remedies:
    """The office's options against the intruders above the bound (module docstring).

    ``intruders``: the intruders rerun (those above the bound); ``bound``: the office's 1/k;
    ``options``: every option measured, in the order tried; ``chosen``: per kind, the first
    option that brings the intruders within the bound, else the best found (of the columns
    dropped one at a time: the most telling); ``notes``: options
    not measured, and why; ``seed``: the seed of every rerun."""

    mechanism: str
    k: int
    bound: float
    intruders: tuple
    runs: int
    seed: int | None
    options: tuple
    chosen: dict
    notes: tuple = ()

    @property
    def seed_text(self) -> str:
        return "no seed: each rerun draws its own ties" if self.seed is None else f"seed {self.seed}"

    def summary(self) -> str:
        """One paragraph: how the options were measured and what each achieves."""
        head = (f"Each option measured by running the intruders above the bound ({', '.join(self.intruders)}) "
                f"again on the release it gives ({self.runs} runs, {self.seed_text}), against the bound 1/{self.k} "
                f"= {self.bound:.4f}.")
        return " ".join([head] + [self._sentence(kind, option) for kind, option in self.chosen.items()]
                        + list(self.notes))

    def _sentence(self, kind: str, option: Option) -> str:
        if kind == "drop one":
            ranked = sorted((o for o in self.options if o.kind == "drop one"), key=lambda o: o.worst)
            return (f"The intruders learned most from {ranked[0].columns[0]}: without it alone they reach "
                    f"{ranked[0].worst:.4f}.")
        lead = {"larger k": f"The release made again at {option.change}",
                "drop": f"Dropping {', '.join(option.columns)}",
                "perturb": f"Perturbing {', '.join(option.columns)} (group means)"}[kind]
        best = "" if option.within else ", the best found"
        return f"{lead} gives {option.worst:.4f}{best}: {option.verdict}" + (f"; {option.cost}." if option.cost else ".")

    def lines(self) -> list[str]:
        """The options as printed by ``probanon attack``: one heading per kind, the chosen option
        of each kind marked ``*``; the columns dropped one at a time on one line, most telling first."""
        out = [f"What the office can do (each option measured: {', '.join(self.intruders)} run again on the release "
               f"it gives, {self.runs} runs, {self.seed_text}; bound 1/{self.k} = {self.bound:.4f}; * the first "
               "option of its kind within the bound, else the best of its kind):"]
        for kind, heading in HEADINGS.items():
            of_kind = [o for o in self.options if o.kind == kind]
            if not of_kind:
                continue
            out.append(f"  {heading}:")
            if kind == "drop one":
                ranked = sorted(of_kind, key=lambda o: o.worst)
                out.append("    " + ", ".join(f"{o.columns[0]} {o.worst:.4f}" + ("*" if o is self.chosen[kind] else "")
                                              for o in ranked) + f" (best: {ranked[0].figures()})")
                continue
            for o in of_kind:
                mark = "  * " if o is self.chosen[kind] else "    "
                out.append(f"{mark}{o.change}: {o.figures()}" + (f" ({o.cost})" if o.cost else ""))
        out += [f"  {note}" for note in self.notes]
        return out

    def rows(self) -> list[dict]:
        """One table row per option (reports)."""
        return [{"option": o.change, "k": o.k, "highest success": o.worst,
                 "verdict": o.verdict, "cost": o.cost,
                 "chosen": "yes" if o in self.chosen.values() else ""} for o in self.options]

    def to_dict(self) -> dict:
        return {"mechanism": self.mechanism, "k": self.k, "bound": self.bound, "intruders": list(self.intruders),
                "runs": self.runs, "seed": self.seed, "options": [o.to_dict() for o in self.options],
                "chosen": {kind: self.options.index(o) for kind, o in self.chosen.items()}, "notes": list(self.notes)}


class _Rerun:
    """The same intruders, seed, runs and confidence, on a changed release."""

    def __init__(self, original, keys, report: AttackReport, names, runs, confidence, standardize, seed, progress,
                 types: KeyTypes = KeyTypes()):
        self.original, self.keys, self.report, self.names = original, list(keys), report, names
        self.runs, self.confidence, self.standardize, self.seed, self.progress = runs, confidence, standardize, seed, progress
        self.types = types

    def __call__(self, released, confidential, k, link=None, column_rows=None) -> tuple:
        names = [n for n in self.names if confidential or n not in NEEDS_CONFIDENTIAL]
        result = attack(self.original, released, self.keys, confidential, mechanism=self.report.mechanism, k=k,
                        link=link, column_rows=column_rows, intruders=names, runs=self.runs,
                        confidence=self.confidence, standardize=self.standardize, random_state=self.seed,
                        progress=self.progress, **{**self.types.kwargs, "weights": None})  # weights: in confidential
        return tuple(with_bound(r, self.report.bound, self.report.k) for r in result.results)


def _seed(random_state) -> int | None:
    """The seed of every rerun: ``random_state`` itself (None or an int), or one drawn from a Generator."""
    if random_state is None or isinstance(random_state, (int, np.integer)):
        return None if random_state is None else int(random_state)
    return int(check_random_state(random_state).integers(2 ** 32))


@one_thread
def remedies(original: pd.DataFrame, released: pd.DataFrame, keys, confidential, report: AttackReport, *, link=None,
             column_rows=None, runs: int = 10, confidence: float = 0.99, standardize: bool = True,
             random_state=None, progress=None, nominal=(), ordinal=(), strata=(), missing="raise",
             weights=None) -> Remedies | None:
    """The office's options when ``report`` (the suite's report on ``released``, made with these
    arguments) has intruders above its bound, each measured (module docstring); None when none is
    above it or no bound is claimed. ``random_state``: the seed the attack ran with (a Generator:
    one seed is drawn from it for every rerun). ``nominal``, ``ordinal``, ``strata``, ``missing``,
    ``weights``: how the release treated its keys, as :func:`probanon.attacks.attack` takes them
    (the weight column is one of the columns that may be dropped or perturbed)."""
    if not report.exceeded or report.bound is None or MECHANISMS.get(report.mechanism) is None:
        return None
    keys, confidential = list(keys), list(confidential)
    types = KeyTypes.of(column_list_of(nominal), ordinal, column_list_of(strata), missing, weights)
    if weights is not None and weights not in confidential and weights not in keys:
        confidential.append(weights)  # as the attack: attached to a person as the confidential columns
    by_name = {cls.name: key for key, cls in INTRUDERS.items()}
    names = [by_name[r] for r in report.exceeded]
    seed = _seed(random_state)
    rerun = _Rerun(original, keys, report, names, runs, confidence, standardize, seed, progress, types)
    options, notes = [], []
    larger, note = _larger_k(original, released, keys, confidential, report, rerun, link, standardize, seed, types)
    options += larger
    notes += [note] if note else []
    learned = [n for n in names if n in NEEDS_CONFIDENTIAL]
    if len(confidential) < 2 or not learned:
        notes.append("Dropping or perturbing confidential columns: not measured (" +
                     ("no intruder above the bound learns from them)." if not learned else
                      "a single confidential column: dropping it leaves nothing to attach to a person)."))
    else:
        alone = _drop_each(original, released, keys, confidential, report, rerun, link, column_rows, seed, standardize)
        options += alone
        order = [o.columns[0] for o in sorted(alone, key=lambda o: o.worst)]
        if not any(o.within for o in alone):
            options += _drop_together(original, released, keys, confidential, order, report, rerun, link,
                                      column_rows, seed, standardize)
        perturbed, note = _perturb_together(original, released, keys, confidential, order, report, rerun, link,
                                            column_rows, standardize, types)
        options += perturbed
        notes += [note] if note else []
    chosen = {}
    for kind in dict.fromkeys(o.kind for o in options):
        of_kind = [o for o in options if o.kind == kind]
        best = min(of_kind, key=lambda o: o.worst)
        chosen[kind] = best if kind == "drop one" else next((o for o in of_kind if o.within), best)
    return Remedies(report.mechanism, report.k, report.bound, tuple(report.exceeded), runs, seed, tuple(options),
                    chosen, tuple(notes))


def _moved(mechanism: str, keys: list, confidential: list) -> list:
    """The columns the mechanism changes: the keys (microaggregation, MDAV-SWAP), every attribute
    (MDAV-ID) or the confidential columns (column-wise swaps)."""
    kind = MECHANISMS[mechanism]
    return confidential if kind == "column-wise" else keys + confidential if mechanism == "mdav-id" else keys


def _loss(original, released, columns, types: KeyTypes = KeyTypes()) -> str:
    """Information loss (%) of the numeric ``columns`` of ``released`` (aligned with ``original``;
    categorical keys left out, missing values skipped), as printed."""
    numeric = [c for c in columns if c not in types.nominal and c not in dict(types.ordinal)
               and pd.api.types.is_numeric_dtype(original[c])]
    if not numeric:
        return "(no numeric column)"
    X, Y = original[numeric].to_numpy(np.float64), released[numeric].to_numpy(np.float64)
    loss = information_loss(X, Y, missing=bool(np.isnan(X).any() or np.isnan(Y).any()))
    return f"{loss:.2f} %"


def _remake(original, aligned, keys, confidential, mechanism, k, seed, standardize, types: KeyTypes = KeyTypes()) -> tuple:
    """(release, column rows or None): the mechanism run again on the original at ``k``, on the
    keys and ``confidential`` only, the other columns as in ``aligned`` (the release in the
    original's record order); microaggregation as MDAV (:class:`probanon.microagg.MDAV`), the
    swapping mechanisms by :func:`probanon.swapping.swap` with the attack's seed. Categorical
    keys, strata (small ones merged and recoded, as ``--merge-small-strata``), missing values and
    weights as the release treated them (``types``)."""
    from ..microagg.strata import recode_merged

    if mechanism == "microaggregation":
        from ..microagg import MDAV

        if types.plain and types.weights is None:
            Y = MDAV(k).fit_transform(original[keys].to_numpy(np.float64))
            return aligned.assign(**{c: Y[:, j] for j, c in enumerate(keys)}), None
        model = MDAV(k, nominal=list(types.nominal), ordinal=dict(types.ordinal), missing=types.missing,
                     merge_small_strata=True).set_output(transform="default")
        strata = original[list(types.strata)] if types.strata else None
        weights = None if types.weights is None else original[types.weights].to_numpy(np.float64)
        with warnings.catch_warnings():  # strata merged at the larger k: recoded below, as a release says
            warnings.simplefilter("ignore", AdjustmentWarning)
            Y = model.fit_transform(original[keys], sample_weight=weights, strata=strata)
        recoded = {} if strata is None else recode_merged(model.strata_, strata)
        return aligned.assign(**{c: Y[:, j] for j, c in enumerate(keys)}, **recoded), None
    from ..swapping import swap

    frame = original[keys + confidential].astype(np.float64)
    strata = original[list(types.strata)] if types.strata else None
    with warnings.catch_warnings():  # strata merged at the larger k: recoded below, as a release says
        warnings.simplefilter("ignore", AdjustmentWarning)
        result = swap(frame, k, mechanism, confidential=None if mechanism == "mdav-id" else confidential,
                      random_state=seed, standardize=standardize, strata=strata, merge_small_strata=True)
    recoded = {} if strata is None else recode_merged(result.strata, strata)
    remade = aligned.assign(**{c: result.released[c].to_numpy() for c in keys + confidential}, **recoded)
    if MECHANISMS[mechanism] != "column-wise":
        return remade, None
    value_rows = result.value_rows()
    return remade, {frame.columns[cols[0]]: value_rows[:, t] for t, cols in enumerate(result.groups.columns)}


def _aligned(released, link):
    return released if link is None else released.iloc[np.asarray(link)].reset_index(drop=True)


def _larger_k(original, released, keys, confidential, report, rerun, link, standardize, seed,
              types: KeyTypes = KeyTypes()) -> tuple[list, str]:
    """The release remade at each larger k, until one brings the intruders within the bound."""
    mechanism = report.mechanism
    if mechanism in ("survey", "unknown"):
        return [], (f"A larger k: not measured (the {mechanism} release cannot be remade here"
                    + ("; design the survey again at a larger k with 'probanon survey design')." if mechanism == "survey"
                       else ")."))
    n = len(original)
    aligned = _aligned(released, link)
    moved = _moved(mechanism, keys, confidential)
    current = _loss(original, aligned, moved, types)
    what = "the keys" if moved == keys else "the confidential columns" if moved == confidential else "every attribute"
    if types.nominal or types.ordinal:
        what = what.replace("the keys", "the numeric keys") if moved != confidential else what
    out = []
    for factor in K_FACTORS:
        k2 = factor * report.k
        if k2 > n:
            break
        remade, rows = _remake(original, aligned, keys, confidential, mechanism, k2, seed, standardize, types)
        change = f"k = {k2} ({'MDAV on the keys' if mechanism == 'microaggregation' else mechanism + ' again'})"
        out.append(Option("larger k", change, k2, (), rerun(remade, confidential, k2, column_rows=rows),
                          f"information loss on {what} {_loss(original, remade, moved, types)}, now {current}"))
        if out[-1].within:
            break
    return out, "" if out else f"A larger k: not measured (2k = {2 * report.k} exceeds the {n} records)."


def _without(original, released, keys, confidential, columns, report, link, column_rows, seed, standardize,
             types: KeyTypes = KeyTypes()) -> tuple:
    """(release, confidential columns left, link, column rows) without ``columns``: dropped from the
    release, or for a column-wise swap, whose groups are formed on every other attribute, the
    release made again without them (:func:`_remake`)."""
    rest = [c for c in confidential if c not in columns]
    if MECHANISMS[report.mechanism] == "column-wise":
        remade, rows = _remake(original, _aligned(released, link).drop(columns=list(columns)), keys, rest,
                               report.mechanism, report.k, seed, standardize, types)
        return remade, rest, None, rows
    rows = None if column_rows is None else {c: column_rows[c] for c in rest}
    return released.drop(columns=list(columns)), rest, link, rows


def _drop_each(original, released, keys, confidential, report, rerun, link, column_rows, seed, standardize) -> list:
    out = []
    for c in confidential:
        table, rest, position, rows = _without(original, released, keys, confidential, [c], report, link, column_rows,
                                               seed, standardize, rerun.types)
        out.append(Option("drop one", f"drop {c} alone", report.k, (c,),
                          rerun(table, rest, report.k, link=position, column_rows=rows),
                          f"1 of {len(confidential)} confidential columns withheld"))
    return out


def _drop_together(original, released, keys, confidential, order, report, rerun, link, column_rows, seed,
                   standardize) -> list:
    """Drop the columns in ``order``, one more each time, until within the bound (never all)."""
    out = []
    for m in range(2, len(order)):
        columns = tuple(order[:m])
        table, rest, position, rows = _without(original, released, keys, confidential, columns, report, link,
                                               column_rows, seed, standardize, rerun.types)
        out.append(Option("drop", f"drop {', '.join(columns)}", report.k, columns,
                          rerun(table, rest, report.k, link=position, column_rows=rows),
                          f"{len(columns)} of {len(confidential)} confidential columns withheld"))
        if out[-1].within:
            break
    return out


def release_groups(original, released, keys, mechanism, k, link=None, standardize=True,
                   types: KeyTypes = KeyTypes()) -> np.ndarray:
    """The group of each released row, as the intruder rebuilds it (:func:`rebuild_groups`)."""
    data = rebuild_groups(attack_data(original, released, keys, (), link, **{**types.kwargs, "weights": None}),
                          mechanism, k, standardize)
    return data.row_group


def perturbed(released: pd.DataFrame, columns, groups: np.ndarray) -> pd.DataFrame:
    """``released`` with ``columns`` replaced by their mean within each group of ``groups``."""
    means = released[list(columns)].astype(np.float64).groupby(np.asarray(groups)).transform("mean")
    return released.assign(**{c: means[c].to_numpy() for c in columns})


def _perturb_together(original, released, keys, confidential, order, report, rerun, link, column_rows,
                      standardize, types: KeyTypes = KeyTypes()) -> tuple[list, str]:
    """Replace the columns in ``order`` by their group means, one more each time, until within the
    bound (numeric columns: a text column has no mean)."""
    if MECHANISMS[report.mechanism] not in ("aggregated", "swapped"):
        return [], (f"Perturbing confidential columns: not measured ({report.mechanism} swaps each confidential "
                    "column in its own groups; the release has no groups of records to aggregate them in).")
    text = [c for c in order if not pd.api.types.is_numeric_dtype(released[c])]
    order = [c for c in order if c not in text]
    note = f"Perturbing {', '.join(text)}: not measured (not numeric: no group mean)." if text else ""
    if not order:
        return [], note
    groups = release_groups(original, released, keys, report.mechanism, report.k, link, standardize, types)
    out = []
    for m in range(1, len(order) + 1):
        columns = tuple(order[:m])
        table = perturbed(released, columns, groups)
        before, after = released[list(columns)].to_numpy(np.float64), table[list(columns)].to_numpy(np.float64)
        loss = information_loss(before, after, missing=bool(np.isnan(before).any()))
        out.append(Option("perturb", f"perturb {', '.join(columns)} (group means)", report.k, columns,
                          rerun(table, confidential, report.k, link=link, column_rows=column_rows),
                          f"information loss on {'it' if m == 1 else 'them'} {loss:.2f} %"))
        if out[-1].within:
            break
    return out, note


__all__ = ["HEADINGS", "K_FACTORS", "Option", "Remedies", "perturbed", "release_groups", "remedies"]

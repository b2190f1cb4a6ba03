"""The attack suite: every applicable intruder against one release, each success rate with a
Clopper-Pearson interval beside the bound the mechanism claims.

Intruders (one module each): exact tuple matching (:mod:`.exact`), nearest-record linkage
(:mod:`.nearest`), learned likelihood matching (:mod:`.likelihood`) and linkage through
deterministic relations (:mod:`.relations`). What they know is in :mod:`.setting`; what each
mechanism's guarantee covers in :mod:`.scope`.

Column-wise mechanisms (``mdav-swap-informed``, ``ir-swap``) move each confidential column on its
own: for each confidential column ``c`` the intruders link a target to the row they believe holds
the target's value of ``c`` (correct when it does; ``column_rows[c]``), knowing the keys; the
rates are pooled over the columns and the worst column is named.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from .._threads import one_thread
from .._validation import check_confidence, check_k, check_random_state, check_runs
from ..errors import InputError, ParameterError
from ..metrics.risk import ReidentificationTest, reidentification_result
from .attribute import AttributeReport, attribute_disclosure
from .exact import ExactTuple
from .likelihood import LearnedLikelihood
from .nearest import NearestRecord
from .relations import RelationLinkage
from .scope import Guarantee, guarantee
from .setting import KeyTypes, MECHANISMS, attack_data, check_mechanism, column_data, column_list_of, rebuild_groups

INTRUDERS = {"exact": ExactTuple, "nearest": NearestRecord, "likelihood": LearnedLikelihood,
             "relations": RelationLinkage}
NEEDS_CONFIDENTIAL = ("likelihood", "relations")


@dataclass(frozen=True)
class AttackReport:
    """Results of the attack suite on one release.

    ``results``: one :class:`~probanon.metrics.ReidentificationTest` per intruder (``rule`` its
    name, ``knows`` what it knows and does, ``note`` what it found); ``bound`` = 1/k claimed by
    ``mechanism`` (None when no k or mechanism is known); ``guarantee`` its scope in words.
    A result may carry its own bound (``result.bound``; the set-valued and count-release attacks,
    whose bounds are not 1/k), computed as ``formulas[i]`` says (default "1/k")."""

    mechanism: str
    k: int | None
    bound: float | None
    guarantee: Guarantee
    n_records: int
    keys: list
    confidential: list
    groups_note: str
    results: tuple
    formulas: tuple = ()
    attribute: AttributeReport | None = None

    @property
    def exceeded(self) -> list:
        """Intruders whose success significantly exceeds the bound (interval entirely above it)."""
        return [r.rule for r in self.results if r.lower_exceeds_bound]

    def verdict(self, result: ReidentificationTest) -> str:
        if result.bound is None:
            return "no bound claimed"
        if result.lower_exceeds_bound:
            return "ABOVE the bound"
        return "within the bound" if not result.upper_exceeds_bound else "not significantly above"

    def verdict_line(self) -> str:
        """'identity: within the bound; attribute disclosure: 14.0% of people pinned within 10% on
        TAXINC (...) (no bound claimed)': what the release bounds and what it does not. Identity:
        ABOVE the bound when an intruder's interval lies above it, not significantly above when
        one's rate is above it but its interval is not, else within the bound."""
        if self.bound is None and all(r.bound is None for r in self.results):
            identity = "no bound claimed"
        elif self.exceeded:
            identity = "ABOVE the bound"
        else:  # each intruder's own verdict (:meth:`verdict`), summed up
            above = [r.rule for r in self.results if self.verdict(r) == "not significantly above"]
            identity = f"not significantly above the bound ({', '.join(above)})" if above else "within the bound"
        text = f"identity: {identity}"
        return text + (f"; {self.attribute.headline()}" if self.attribute is not None else
                       "; attribute disclosure: not measured" + (" (no confidential column)" * (not self.confidential)))

    def rows(self) -> list[dict]:
        """One table row per intruder (for reports and the CLI)."""
        formulas = self.formulas or (f"1/{self.k}",) * len(self.results)
        return [{"intruder": r.rule, "success": round(r.rate, 4),
                 f"{r.confidence:.0%} interval": f"[{r.interval[0]:.4f}, {r.interval[1]:.4f}]",
                 "claimed bound": "-" if r.bound is None else f"{r.bound:.4f} ({formula})",
                 "verdict": self.verdict(r), "found": r.note} for r, formula in zip(self.results, formulas)]

    def to_dict(self) -> dict:
        return {"mechanism": self.mechanism, "k": self.k, "bound": self.bound, "guarantee": self.guarantee.to_dict(),
                "n_records": self.n_records, "keys": [str(c) for c in self.keys],
                "confidential": [str(c) for c in self.confidential], "groups": self.groups_note,
                "exceeded": self.exceeded, "results": [r.to_dict() for r in self.results],
                "formulas": list(self.formulas), "verdict": self.verdict_line(),
                "attribute": None if self.attribute is None else self.attribute.to_dict()}


def with_bound(result: ReidentificationTest, bound: float | None, k=None) -> ReidentificationTest:
    """``result`` compared with ``bound`` instead of 1/k (interval entirely above: exceeded)."""
    if bound is None:
        return replace(result, k=k, bound=None, upper_exceeds_bound=None, lower_exceeds_bound=None)
    low, high = result.interval
    return replace(result, k=k, bound=float(bound), upper_exceeds_bound=bool(high > bound),
                   lower_exceeds_bound=bool(low > bound))


@one_thread
def attack(original: pd.DataFrame, released: pd.DataFrame, keys, confidential=(), *, mechanism=None, k=None,
           link=None, column_rows=None, intruders=None, runs: int = 10, confidence: float = 0.99,
           standardize: bool = True, transform: str = "auto", random_state=None, progress=None, nominal=(),
           ordinal=(), strata=(), missing: str = "raise", weights=None, attribute: bool = False,
           control: pd.DataFrame | None = None, knows=None) -> AttackReport:
    """Run every applicable intruder against ``released`` and compare its success with the bound.

    Parameters
    ----------
    original, released : DataFrame
        The original records and the release (same number of records; columns by name).
    keys, confidential : list of column names
        What the intruder knows about each person (keys) and what the release attaches to them.
    mechanism : str, optional
        How the release was made (:data:`probanon.attacks.setting.MECHANISMS`): sets the groups
        the intruder rebuilds, the claimed bound 1/k and the guarantee's scope.
    k : int, optional
        The mechanism's k (bound 1/k).
    link : array of int, optional
        ``link[i]`` = released row of original record ``i`` (default: same row).
    column_rows : dict, optional
        Column-wise mechanisms: ``{c: rows}``, ``rows[i]`` = released row holding record ``i``'s
        value of ``c`` (the swap command's link file has them).
    intruders : list of str, optional
        Subset of :data:`INTRUDERS` (default: all that apply).
    runs : int
        Runs of each intruder (they differ in its random tie-breaking); the rate is their mean, the
        interval that of the ``n`` targets (the runs attack one release: no extra evidence).
    confidence : float
        Level of the Clopper-Pearson intervals.
    random_state : None, int or Generator
        Same seed, same report.
    progress : callable, optional
        ``progress("intruder runs", done, total)`` (:mod:`probanon.progress`) as the runs of
        the intruders complete (first with 0 when the first ones are done).
    nominal, ordinal, strata, missing, weights
        How the release treated its keys, as :class:`probanon.microagg.MDAV` was told
        (:mod:`probanon.attacks.setting`): nominal and ordinal keys (``ordinal``: names or {name:
        levels in order}) compared in the release's encoding; strata columns (released, the
        intruder knows a target's stratum); ``missing="pattern"``: missing key values kept
        missing; the ``weights`` column, released per record and attached to a person as the
        confidential columns are (it joins them in the report).
    attribute : bool
        Also run the attribute-disclosure intruders (:func:`probanon.attacks.attribute.attribute_disclosure`)
        on the confidential columns: ``report.attribute``.
    control : DataFrame, optional
        Records of the same population held out of the release: the attribute intruders' control.
    knows : list of column names, optional
        The confidential columns the attribute linker knows (default all).
    """
    mechanism = check_mechanism(mechanism)
    runs, confidence = check_runs(runs), check_confidence(confidence)
    rng = check_random_state(random_state)
    types = KeyTypes.of(column_list_of(nominal), ordinal, column_list_of(strata), missing, weights)
    keys, confidential = list(keys), list(confidential)
    declared = list(confidential)  # the attribute intruders measure these (a weight is design, not an attribute)
    if weights is not None and weights not in confidential and weights not in keys:
        confidential.append(weights)  # released per record: attached to a person as a confidential column
    if k is not None:
        k = check_k(k, len(original))
    names = list(INTRUDERS) if intruders is None else list(intruders)
    unknown = [i for i in names if i not in INTRUDERS]
    if unknown:
        raise ParameterError(f"unknown intruder {unknown[0]!r} (use {', '.join(INTRUDERS)})")
    if not confidential:
        if intruders is not None and any(i in NEEDS_CONFIDENTIAL for i in names):
            raise ParameterError(f"the {', '.join(i for i in names if i in NEEDS_CONFIDENTIAL)} intruder needs the "
                                 "confidential columns")
        names = [i for i in names if i not in NEEDS_CONFIDENTIAL]
    if not names:
        raise ParameterError("no intruder to run")
    kind = MECHANISMS[mechanism]
    if kind == "column-wise":
        if k is None:
            raise ParameterError(f"the {mechanism} intruders need k (they rebuild its groups)")
        if not confidential:
            raise ParameterError(f"{mechanism} moves the confidential columns: name them")
        if types.nominal or types.ordinal or types.missing == "pattern":
            raise ParameterError(f"the {mechanism} intruders take complete numeric keys (as 'probanon swap' "
                                 "releases them)")
        if column_rows is None or any(c not in column_rows for c in confidential):
            raise InputError(f"{mechanism}: the attack needs the released row of every confidential value "
                             "(the link file written by 'probanon swap --link')")
        datasets = [column_data(original, released, keys, c, np.asarray(column_rows[c]), mechanism, k,
                                standardize, confidential, list(types.strata)) for c in confidential]
    else:
        datasets = [rebuild_groups(attack_data(original, released, keys, confidential, link, **types.kwargs),
                                   mechanism, k, standardize)]
    results, done, total = [], 0, runs * len(names) * len(datasets)
    for name in names:
        successes, notes, per_column = np.zeros(runs, dtype=np.int64), [], []
        for data in datasets:
            intruder = INTRUDERS[name](data, transform=transform) if name == "likelihood" else INTRUDERS[name](data)
            column = [np.count_nonzero(intruder.links(rng) == data.truth) for _ in range(runs)]
            if progress is not None:
                if not done:  # the first report (a rerun reports from 0 again)
                    progress("intruder runs", 0, total)
                done += runs
                progress("intruder runs", done, total)
            successes += column
            column_name = data.confidential_names[0] if data.confidential_names else ""  # per column: column-wise
            per_column.append((sum(column) / (runs * data.n), column_name))
            if intruder.note:
                notes.append((column_name, intruder.note))
        if len(datasets) > 1:  # per column: the worst one, then what was found (once when alike)
            worst = max(per_column)
            alike = len({note for _, note in notes}) == 1
            notes = [f"worst column {worst[1]} ({worst[0]:.3f})"] + (
                [notes[0][1]] if alike else [f"{column}: {note}" for column, note in notes])
        else:
            notes = [note for _, note in notes]
        n = sum(d.n for d in datasets)
        results.append(reidentification_result(INTRUDERS[name].name, keys, n, successes, k, confidence,
                                                knows=INTRUDERS[name].knows, note="; ".join(notes),
                                                same_release=True))
    found = None
    if attribute and declared:
        found = attribute_disclosure(original, released, keys, declared, mechanism=mechanism, k=k, link=link,
                                     column_rows=column_rows, control=control, knows=knows,
                                     standardize=standardize, random_state=rng,
                                     **{name: v for name, v in types.kwargs.items() if name != "weights"})
    elif control is not None or knows is not None:
        raise ParameterError("control and knows are for the attribute intruders (attribute=True, with confidential "
                             "columns)")
    return AttackReport(mechanism, k, None if k is None else 1.0 / k, guarantee(mechanism), len(original), keys,
                        confidential, datasets[0].groups_note, tuple(results), attribute=found)

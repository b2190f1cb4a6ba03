"""Attribute disclosure: what a release reveals about a person's confidential values (issue 42).

The identity intruders of :mod:`.suite` look for a person's row; these look for the person's
values, which a release can give away without any row being found (a group of k people whose
incomes all lie within 5% of each other). Three intruders, each per confidential column, each
beside its baseline (the same guess without the release: groups of the same sizes drawn at random
for what a group pins, :mod:`probanon.metrics.attribute`; the file's median or mode for a value
read from the keys; a random row for the linker) and, when the office holds records out
of the release (``control``: people of the same population who are not in it), beside its
control: the same attack on them, which measures what the release teaches about the population
rather than about the people in it. The excess over the control, ``(attack - control) /
(1 - control)`` as in the evaluators of the field (anonymeter), is the disclosure the release
causes; the headlines give it when there is a control.

* **groups**: the intruder places the person in the group it rebuilds from their keys (the
  groups of :func:`.setting.rebuild_groups`; a swap's blocks for column-wise mechanisms; for an
  unknown mechanism the rows sharing the released key tuple nearest to the person's keys) and
  reads the group's released values: numeric columns, the shares whose group pins the value
  within p% (:func:`probanon.metrics.attribute.pinned_shares`) and sdcMicro's interval
  disclosure on the person's own row; categorical columns, the constant classes, the class mode
  against the file's mode and the worst class's distinct l, entropy l and t
  (:func:`probanon.metrics.attribute.class_shares`);
* **learned**: a model of the value given the keys (scikit-learn's histogram gradient boosting,
  regressor on the signed log1p scale or classifier), fitted on the release alone and applied to
  the person's original keys (a numeric guess is the released value nearest to the prediction);
  scored within p% (numeric) or exact (categorical), against the file's median or mode;
* **nearest row**: the intruder reads the value of the released row whose keys are nearest to the
  person's (several rows at the same distance: the expected success over them), scored as the
  learned model: a release that keeps the keys and moves the values a little (a swap in small
  rank blocks) gives the values away to this reader, whatever the model generalises;
* **linker**: an intruder who knows a person's confidential values (all, or the columns named in
  ``knows``) and looks for the released rows nearest to them (:class:`.setting.KeySpace`: numeric
  columns z-scored, a categorical one compared as a nominal key, distance 1 when different);
  found when it picks the person's row (tuples tied at the nearest distance pooled, one row at
  random: the expected success), against 1/n. Whoever finds the row reads the rest of it: the
  other confidential values and the released keys. It also counts the released rows whose values
  of those columns no other row has.

No bound is claimed for any of them unless a mechanism proves one (t-closeness, l-diversity);
they measure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .._threads import one_thread
from .._validation import check_random_state
from ..errors import InputError, ParameterError
from ..metrics.attribute import (MARGINS, ClassShares, PinnedShares, _margins, category_codes, class_shares,
                                 is_numeric_confidential, pinned_shares, within)
from .likelihood import signed_log1p
from .setting import (MECHANISMS, KeyTypes, attack_data, check_mechanism, column_data, column_list_of, key_space,
                      rebuild_groups)

#: interval disclosure's half-width, a share of the released column's sd (sdcMicro's dRisk default)
INTERVAL = 0.05


@dataclass(frozen=True)
class ColumnDisclosure:
    """The attribute disclosure of one confidential column.

    ``groups``: the measures of the person's group (:class:`PinnedShares` or :class:`ClassShares`);
    ``control_groups``: the same for the control records (None without them); ``learned``,
    ``learned_baseline``, ``learned_control``: the learned intruder's success for each margin
    (numeric; one value, exact, for categorical) and what the file's median or mode achieves;
    ``interval``, ``interval_baseline``: sdcMicro's interval disclosure on this column (numeric)."""

    column: str
    kind: str
    groups: PinnedShares | ClassShares
    learned: tuple
    learned_baseline: tuple
    control_groups: PinnedShares | ClassShares | None = None
    learned_control: tuple | None = None
    nearest: tuple = ()
    nearest_control: tuple | None = None
    interval: float | None = None
    interval_baseline: float | None = None

    def headline(self) -> str:
        """'14.0% of people pinned within 10% on TAXINC (random groups 0.0%, ...; read from the keys
        ...)': the group measure, its baseline and control, and the best reading from the keys."""
        g, c = self.groups, self.control_groups
        numeric = self.kind == "numeric"
        share, base = (g.all_within[-1], g.baseline_all_within[-1]) if numeric else (g.constant, g.baseline_constant)
        text = (f"{100 * share:.1f}% of people pinned within {g.margins[-1]:g}% on {self.column}" if numeric else
                f"{100 * share:.1f}% of people in classes where {self.column} is constant")
        text += f" (random groups of the same sizes: {100 * base:.1f}%"
        if c is not None:
            text += f", held-out records: {100 * (c.all_within[-1] if numeric else c.constant):.1f}%"
        how = f"within {g.margins[-1]:g}%" if numeric else "exactly"
        text += (f"; read from the keys {how}: {100 * self.nearest[-1]:.1f}% by the nearest row, "
                 f"{100 * self.learned[-1]:.1f}% by a model, the file's {'median' if numeric else 'mode'} "
                 f"{100 * self.learned_baseline[-1]:.1f}%")
        if self.learned_control is not None:
            text += (f", the model on held-out records {100 * self.learned_control[-1]:.1f}% (excess "
                     f"{100 * _excess(self.learned[-1], self.learned_control[-1]):.1f}%)")
        return text + ")"

    def rows(self) -> list[dict]:
        """One row per measure: measure, released, baseline, control."""
        g, c = self.groups, self.control_groups
        out = []
        if self.kind == "numeric":
            for i, p in enumerate(g.margins):
                out.append(_row(self.column, f"group pins within {p:g}%", g.all_within[i], g.baseline_all_within[i],
                                None if c is None else c.all_within[i]))
            for i, p in enumerate(g.margins):
                out.append(_row(self.column, f"group median within {p:g}%", g.median_within[i],
                                g.baseline_median_within[i], None if c is None else c.median_within[i]))
            for i, p in enumerate(g.margins):
                out.append(_row(self.column, f"nearest row's value within {p:g}%", self.nearest[i],
                                self.learned_baseline[i], None if self.nearest_control is None else self.nearest_control[i]))
            for i, p in enumerate(g.margins):
                out.append(_row(self.column, f"learned from keys within {p:g}%", self.learned[i],
                                self.learned_baseline[i], None if self.learned_control is None else self.learned_control[i]))
            out.append(_row(self.column, f"interval disclosure ({100 * INTERVAL:g}% of sd)", self.interval,
                            self.interval_baseline, None))
            return out
        out.append(_row(self.column, "class constant", g.constant, g.baseline_constant, None if c is None else c.constant))
        out.append(_row(self.column, "class mode right", g.mode_right, g.baseline_mode_right,
                        None if c is None else c.mode_right))
        out.append(_row(self.column, "nearest row's value, exact", self.nearest[0], self.learned_baseline[0],
                        None if self.nearest_control is None else self.nearest_control[0]))
        out.append(_row(self.column, "learned from keys, exact", self.learned[0], self.learned_baseline[0],
                        None if self.learned_control is None else self.learned_control[0]))
        out.append({"column": self.column, "measure": "worst class: distinct l / entropy l / t",
                    "released": g.worst(), "baseline": "-", "control": "-"})
        return out

    def to_dict(self) -> dict:
        return {"column": self.column, "kind": self.kind, "headline": self.headline(), "measures": self.rows()}


def _excess(attack: float, control: float) -> float:
    """anonymeter's risk: the attack's success beyond the control's, ``(attack - control) / (1 - control)``."""
    return 0.0 if control >= 1 else max(0.0, (attack - control) / (1 - control))


def _row(column, measure, released, baseline, control) -> dict:
    share = (lambda x: "-" if x is None else round(float(x), 4))
    return {"column": column, "measure": measure, "released": share(released), "baseline": share(baseline),
            "control": share(control)}


@dataclass(frozen=True)
class LinkerResult:
    """The intruder who knows confidential values (``knows``) and looks for the row: ``found`` its
    expected success (share of people whose row it picks), ``baseline`` 1/n (a held-out person has
    no row: no control); ``unique_rows``: released rows whose values of ``knows`` no other row has."""

    knows: list
    found: float
    baseline: float
    unique_rows: int
    n_records: int

    def text(self) -> str:
        return (f"knowing {', '.join(map(str, self.knows))}, an intruder picks a person's row for "
                f"{100 * self.found:.1f}% of people (a random row: {100 * self.baseline:.4f}%); "
                f"{self.unique_rows:,} of {self.n_records:,} released rows have values of these columns no other row has")

    def to_dict(self) -> dict:
        return {"knows": [str(c) for c in self.knows], "found": self.found, "baseline": self.baseline,
                "unique_rows": self.unique_rows, "n_records": self.n_records}


@dataclass(frozen=True)
class AttributeReport:
    """Attribute disclosure of a release: one :class:`ColumnDisclosure` per confidential column and
    the confidential-values linker. These measure; no bound is claimed for them."""

    mechanism: str
    columns: tuple
    linker: LinkerResult | None
    groups_note: str
    margins: tuple
    has_control: bool

    def headline(self) -> str:
        """For a verdict: 'attribute disclosure: 14.0% of people pinned within 10% on TAXINC (random
        groups of the same sizes: 0.0%); TAXINC read from the keys within 10% for 58.0% of people (the
        file's median: 13.6%) (no bound claimed)': the column its groups pin most beyond chance, and
        the one read best from the keys beyond the file's median or mode."""
        if not self.columns:
            return "attribute disclosure: no confidential column"
        worst = max(self.columns, key=lambda c: c.groups.excess)
        g = worst.groups
        if worst.kind == "numeric":
            text = (f"{100 * g.all_within[-1]:.1f}% of people pinned within {g.margins[-1]:g}% on {worst.column} "
                    f"(random groups of the same sizes: {100 * g.baseline_all_within[-1]:.1f}%)")
        else:
            text = (f"{100 * g.constant:.1f}% of people in classes where {worst.column} is constant (random classes "
                    f"of the same sizes: {100 * g.baseline_constant:.1f}%)")
        read = max(self.columns, key=_excess_read)
        if _excess_read(read) > 0:
            best = max(read.nearest[-1], read.learned[-1] if np.isfinite(read.learned[-1]) else 0.0)
            how = f"within {read.groups.margins[-1]:g}%" if read.kind == "numeric" else "exactly"
            text += (f"; {read.column} read from the keys {how} for {100 * best:.1f}% of people (the file's "
                     f"{'median' if read.kind == 'numeric' else 'mode'}: {100 * read.learned_baseline[-1]:.1f}%"
                     + (f"; the model on held-out records: {100 * read.learned_control[-1]:.1f}%"
                        if read.learned_control is not None else "") + ")")
        return f"attribute disclosure: {text} (no bound claimed)"

    def rows(self) -> list[dict]:
        return [row for c in self.columns for row in c.rows()]

    def lines(self) -> list[str]:
        out = [f"  {c.headline()}" for c in self.columns]
        if self.linker is not None:
            out.append(f"  {self.linker.text()}")
        return out

    def to_dict(self) -> dict:
        return {"mechanism": self.mechanism, "headline": self.headline(), "groups": self.groups_note,
                "margins": list(self.margins), "control": self.has_control,
                "columns": [c.to_dict() for c in self.columns],
                "linker": None if self.linker is None else self.linker.to_dict()}


def _excess_read(c: ColumnDisclosure) -> float:
    """How much better than the file's median or mode the nearest row or the model reads the column."""
    learned = c.learned[-1] if np.isfinite(c.learned[-1]) else 0.0
    return max(c.nearest[-1] if c.nearest else 0.0, learned) - c.learned_baseline[-1]


@one_thread
def attribute_disclosure(original: pd.DataFrame, released: pd.DataFrame, keys, confidential, *, mechanism=None,
                         k=None, link=None, column_rows=None, control: pd.DataFrame | None = None,
                         margins=MARGINS, knows=None, learned: bool = True, standardize: bool = True,
                         random_state=None, progress=None, nominal=(), ordinal=(), strata=(),
                         missing: str = "raise") -> AttributeReport:
    """The attribute-disclosure intruders of the module docstring against ``released``.

    Parameters are those of :func:`probanon.attacks.attack` (``original``, ``released``, ``keys``,
    ``confidential``, ``mechanism``, ``k``, ``link``, ``column_rows``, ``standardize``,
    ``random_state`` and how the release treated its keys: ``nominal``, ``ordinal``, ``strata``,
    ``missing``), plus ``control`` (records of the same population held out of the release, with
    the keys, strata and confidential columns), ``margins`` (p in percent), ``knows`` (the
    confidential columns the linker knows; default all, empty: no linker) and ``learned`` (False:
    skip the learned intruder). ``progress("attribute intruders", done, total)`` as columns finish.
    """
    mechanism = check_mechanism(mechanism)
    margins = _margins(margins)
    rng = check_random_state(random_state)
    keys, confidential = list(keys), list(confidential)
    if not confidential:
        raise ParameterError("attribute disclosure needs the confidential columns")
    knows = list(confidential) if knows is None else list(knows)
    stray = [c for c in knows if c not in confidential]
    if stray:
        raise ParameterError(f"the linker's known column {stray[0]!r} is not a confidential column")
    types = KeyTypes.of(column_list_of(nominal), ordinal, column_list_of(strata), missing)
    tables = (("original", original), ("released", released)) + ((("control", control),) if control is not None else ())
    for name, frame in tables:
        absent = [c for c in keys + confidential + list(types.strata) if c not in frame.columns]
        if absent:
            raise InputError(f"the {name} table has no column {absent[0]!r}")
    column_wise = MECHANISMS[mechanism] == "column-wise"
    if column_wise and (k is None or column_rows is None or any(c not in column_rows for c in confidential)):
        raise InputError(f"{mechanism}: attribute disclosure needs k and the released row of every confidential value "
                         "(the link file of 'probanon swap')")
    options = {name: value for name, value in types.kwargs.items() if name != "weights"}
    shared = None if column_wise else _groups(attack_data(original, released, keys, [], link, **options), mechanism,
                                              k, standardize)
    held_out = None
    columns = []
    for i, c in enumerate(confidential):
        data = shared if shared is not None else column_data(original, released, keys, c, np.asarray(column_rows[c]),
                                                             mechanism, k, standardize, confidential,
                                                             list(types.strata))
        if control is not None and (held_out is None or shared is None):  # the held-out people in this space
            held_out = key_space(control, released, keys, types, like=data.space)
        columns.append(_column(original, released, c, data, control, held_out, margins, learned, link, rng))
        if progress is not None:
            progress("attribute intruders", i + 1, len(confidential))
    note = (shared or data).groups_note
    linker = _linker(original, released, knows, link, rng) if knows else None
    return AttributeReport(mechanism, tuple(columns), linker, note, margins, control is not None)


def _groups(data, mechanism, k, standardize):
    """The groups of :func:`.setting.rebuild_groups`; without any (an unknown mechanism), the rows
    sharing a released key tuple, each person in the one nearest to their keys."""
    data = rebuild_groups(data, mechanism if MECHANISMS[mechanism] != "unknown" else "microaggregation", k, standardize)
    if MECHANISMS[mechanism] == "unknown":
        data.groups_note = data.groups_note.replace("groups of", "classes of") + " (unknown mechanism)"
    return data


def _column(original, released, c, data, control, held_out, margins, learned, link, rng) -> ColumnDisclosure:
    numeric = is_numeric_confidential(original[c], released[c]) and (control is None or
                                                                     is_numeric_confidential(control[c]))
    own, held = original[c].to_numpy(), released[c].to_numpy()
    theirs = None if control is None else control[c].to_numpy()
    if numeric:
        own, held = own.astype(np.float64), held.astype(np.float64)
        theirs = None if theirs is None else theirs.astype(np.float64)
    else:  # categories as codes shared by the three tables, a missing value one more category
        own, held, *rest = category_codes(own, held, *(() if theirs is None else (theirs,)))
        theirs = rest[0] if rest else None
    measure = ((lambda v, g: pinned_shares(v, g, margins, c, released=held, released_groups=data.row_group))
               if numeric else (lambda v, g: class_shares(v, g, c, released=held, released_groups=data.row_group)))
    groups = measure(own, data.target_group)
    control_groups = None
    if control is not None:  # a held-out person goes to the group of the released tuple nearest to their keys
        first, _ = held_out.nearest()
        control_groups = measure(theirs, data.row_group[held_out.representatives()[first]])
    control_keys = None if control is None else _embedded(data, control)
    fits = _learned(data, held, own, theirs, control_keys, numeric, margins, rng) if learned else \
        ((np.nan,) * len(margins), (np.nan,) * len(margins), None)
    score = _scorer(numeric, margins)
    nearest = _nearest_rows(data.space, held, own, score, rng)
    nearest_control = None if control is None else _nearest_rows(held_out, held, theirs, score, rng)
    interval = baseline = None
    if numeric:
        truth = np.arange(len(original)) if link is None else np.asarray(link)
        interval, baseline = _interval(own, held[truth])
    return ColumnDisclosure(c, "numeric" if numeric else "categorical", groups, fits[0], fits[1], control_groups,
                            fits[2], nearest, nearest_control, interval, baseline)


def _embedded(data, frame: pd.DataFrame) -> np.ndarray:
    """A held-out table's keys in the attack's embedding (the encoding fitted on the original)."""
    encoding = data.space.encoding
    return encoding.embed_values(encoding.values(frame, data.types.missing == "pattern"))


#: rows of a tied nearest key tuple the nearest-row reader averages over, at most (a sample beyond)
TIED_ROWS = 64


def _scorer(numeric: bool, margins):
    """success(guess, value) per pair: within each margin (numeric; a missing value is never
    guessed) or equal (category codes); an (m, pairs) array of 0/1."""
    if numeric:
        return lambda guess, v: np.stack([within(guess, v, p) for p in margins])
    return lambda guess, v: (guess == v)[None, :]


def _nearest_rows(space, held, own, score, rng) -> tuple:
    """The nearest-row reader: each person's expected success over the released rows whose key
    tuple is nearest to their keys among those they can be in (:meth:`.setting.KeySpace.nearest`:
    same stratum, same missing keys; tuples tied at the nearest distance pooled), at most
    :data:`TIED_ROWS` rows each, drawn at random beyond. People without a value (numeric) are left
    out. ``held``, ``own``: numbers or category codes."""
    first, tied = space.nearest()
    _, row_tuple, n_tuples = space.tuples()
    order = np.argsort(row_tuple, kind="stable")
    counts = np.bincount(row_tuple, minlength=n_tuples)
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    person, rows = [], []
    plain = np.ones(own.size, dtype=bool)
    for i, tuples in tied.items():  # several tuples at the nearest distance: their rows pooled
        plain[i] = False
        pool = np.concatenate([order[starts[t]:starts[t] + counts[t]] for t in tuples])
        if pool.size > TIED_ROWS:
            pool = rng.choice(pool, TIED_ROWS, replace=False)
        person.append(np.full(pool.size, i))
        rows.append(pool)
    who = np.flatnonzero(plain)
    take = np.minimum(counts[first[who]], TIED_ROWS)
    mine = np.repeat(who, take)
    offset = np.arange(mine.size) - np.repeat(np.cumsum(take) - take, take)
    big = counts[first[mine]] > TIED_ROWS
    if big.any():  # a random sample of the tuple's rows (with replacement) beyond TIED_ROWS
        offset[big] = np.floor(rng.random(int(big.sum())) * counts[first[mine]][big]).astype(np.int64)
    person.append(mine)
    rows.append(order[starts[first[mine]] + offset])
    person, rows = np.concatenate(person), np.concatenate(rows)
    hits = score(held[rows], own[person]).astype(float)
    per_person = np.stack([np.bincount(person, weights=h, minlength=own.size) for h in hits])
    share = per_person / np.maximum(np.bincount(person, minlength=own.size), 1)
    has = ~np.isnan(own) if own.dtype.kind == "f" else np.ones(own.size, dtype=bool)
    return tuple(float(x) for x in share[:, has].mean(axis=1))


def _interval(own: np.ndarray, at_row: np.ndarray) -> tuple[float, float]:
    """sdcMicro's interval disclosure on one column (:func:`probanon.metrics.interval_disclosure`)
    on the people with a value at both ends, and its baseline, the released column's mean as every
    person's value."""
    from ..metrics.risk import interval_disclosure

    both = ~np.isnan(own) & ~np.isnan(at_row)
    own, at_row = own[both], at_row[both]
    if own.size < 2:
        return float("nan"), float("nan")
    half = INTERVAL * at_row.std(ddof=1)
    return (interval_disclosure(own[:, None], at_row[:, None], p=INTERVAL),
            float(np.mean(np.abs(own - at_row.mean()) <= half)))


def _learned(data, held, own, control_values, control_keys, numeric, margins, rng):
    """The learned intruder: fitted on (released keys, released values) of the rows with a value,
    applied to the persons' original keys (and the control's); success within each margin or
    exact (category codes), and the baseline (the file's median or mode). Missing keys stay
    missing (the model splits on them)."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    seed = int(rng.integers(2**31 - 1))
    X, targets = data.released_known, data.known
    score = _scorer(numeric, margins)

    def mean(hits, v):  # the share of people with a value
        kept = hits[:, ~np.isnan(v)] if numeric else hits
        return tuple(float(x) for x in kept.mean(axis=1))
    if numeric:
        has = ~np.isnan(held)
        model = HistGradientBoostingRegressor(random_state=seed).fit(X[has], signed_log1p(held[has]))
        values = np.unique(held[has])

        def guess(Z):  # the released value nearest to the prediction (a zero is guessed as 0, not 1e-3)
            z = model.predict(Z)
            pred = np.sign(z) * np.expm1(np.abs(z))
            at = np.clip(np.searchsorted(values, pred), 1, max(values.size - 1, 1))
            lower = values[np.minimum(at - 1, values.size - 1)]
            upper = values[np.minimum(at, values.size - 1)]
            return np.where(np.abs(pred - lower) <= np.abs(upper - pred), lower, upper)

        baseline = mean(score(np.full(own.shape, np.median(held[has])), own), own)  # the file's median
    else:
        model = HistGradientBoostingClassifier(random_state=seed).fit(X, held)
        guess = model.predict
        baseline = mean(score(np.full(own.shape, np.bincount(held).argmax()), own), own)
    control = None if control_keys is None else mean(score(guess(control_keys), control_values), control_values)
    return mean(score(guess(targets), own), own), baseline, control


def _linker(original, released, knows, link, rng) -> LinkerResult:
    """The intruder who knows the columns ``knows`` of a person (module docstring): the released
    rows holding the tuple of those columns nearest to the person's (:class:`.setting.KeySpace`,
    categorical columns as nominal keys, missing values by pattern), one of them at random."""
    n = len(original)
    truth = np.arange(n) if link is None else np.asarray(link)
    nominal = [c for c in knows if not is_numeric_confidential(original[c], released[c])]
    lacking = any(original[c].isna().any() or released[c].isna().any() for c in knows)
    space = key_space(original, released, list(knows),
                      KeyTypes.of(nominal=nominal, missing="pattern" if lacking else "raise"))
    found = _nearest_rows(space, np.arange(n), truth, lambda guess, v: (guess == v)[None, :], rng)[0]
    _, row_tuple, n_tuples = space.tuples()
    unique = int(np.count_nonzero(np.bincount(row_tuple, minlength=n_tuples) == 1))
    return LinkerResult(list(knows), found, 1.0 / n, unique, n)


__all__ = ["AttributeReport", "ColumnDisclosure", "LinkerResult", "attribute_disclosure", "INTERVAL"]

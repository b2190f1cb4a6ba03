"""Global recoding of key variables (issue 43.1): what sdcMicro's ``globalRecode``,
``groupAndRename`` and ``topBotCoding`` and ARX's generalization hierarchies do.

A recoding is a list of steps, one dataclass per kind, applied in order by :func:`recode`:

:class:`Intervals`  a numeric key to intervals: explicit ``breaks``, equal ``width`` (bands aligned
                    on multiples of the width: 5-year age bands) or equal frequency (``quantiles``:
                    breaks at the quantiles of the values, R's type 7 as sdcMicro's
                    ``method="equalAmount"``). Intervals are right-closed as R's ``cut`` (and so
                    sdcMicro's ``globalRecode``) makes them, ``(20,25]``, the first one including its
                    lower break, ``[15,20]`` (``include.lowest``); ``closed="left"`` gives ``[20,25)``.
                    A value outside the breaks is an error naming it (``cut`` would make it missing).
                    Released as ``label="interval"``: the interval's text (the column becomes text;
                    numbers with up to 8 significant digits, ``cut``'s ``dig.lab = 8``);
                    ``"lower"``: the interval's lower bound (a number); ``"code"``: its number 1..m.
                    A numeric release carries the interval texts as its value labels (an SPSS/Stata
                    output shows them).
:class:`Round`      a numeric key to the nearest multiple of ``base`` (halves up: 22.5 -> 25 with
                    base 5); the column's value labels are dropped (its values are no longer codes).
:class:`Group`      categories grouped by a mapping {old: new} (sdcMicro's ``groupAndRename``);
                    values not named are kept.
:class:`Hierarchy`  categories replaced by their value at ``level`` of a hierarchy file as ARX's
                    (CSV, one column per level: level 0 the original values, each later column a
                    coarser value; ``,``, ``;`` or tab separated, with or without a header row).
                    Every value of the data must be in level 0 (or, for a labelled column, its
                    label), else an error naming the value.
:class:`SetMissing` values of a column set missing (special codes, a category too rare to publish).
:class:`Combine`    a new column made of several (a stratum from region and sex).
:class:`TopCode`,   values above (below) a ``threshold`` (or the ``quantile`` of the values, type 7)
:class:`BottomCode` replaced by ``replacement``: a number, ``"mean"`` (the mean of the tail, weighted
                    by the sampling weights if given), or None (the threshold itself); sdcMicro's
                    ``topBotCoding``.

Missing values stay missing (the very same value: a user-missing code of an SPSS/Stata file
keeps its tag). SPSS/Stata value labels (``frame.attrs["labels"]``, :mod:`probanon.labelled`)
follow: grouped codes get the label given for the new group or, by default, the labels of the
codes grouped, joined by " / "; a new text value of a coded (labelled numeric) column becomes the
smallest code of its group, labelled with that text, so the column stays codes; without value
labels a numeric column that receives a text value becomes text. Steps turn into plain
dictionaries and back (:meth:`Step.to_dict`, :func:`step_from_dict`), so that a recipe or a JSON
file holds a recoding.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from ..errors import InputError, ParameterError
from ..labelled import ATTR, TableLabels, labels_of
from .recoding_steps import (  # noqa: F401  (re-exported: the public names of recoding)
    BottomCode,
    Combine,
    Group,
    Hierarchy,
    Intervals,
    Round,
    SetMissing,
    Step,
    TopCode,
    read_hierarchy,
    step_from_dict,
    STEPS,
)


def steps_from_json(document) -> list[Step]:
    """A recoding from a JSON list of step objects (already parsed)."""
    if isinstance(document, dict) and "steps" in document:
        document = document["steps"]
    if not isinstance(document, list):
        raise ParameterError("a recoding is a JSON list of steps ({\"kind\": ..., \"column\": ..., ...})")
    return [step_from_dict(d) for d in document]


def steps_from_file(path, what: str = "the recoding") -> list[Step]:
    """The steps of a JSON recoding file (:func:`steps_from_json`); a hierarchy's path is relative
    to the file's folder. A one-line :class:`InputError` naming ``what`` otherwise."""
    from .._validation import read_json_document

    try:
        steps = steps_from_json(read_json_document(path, what))
    except ParameterError as exc:
        raise InputError(f"{what}: {exc}") from None
    folder = Path(path).parent
    return [replace(s, path=str(folder / s.path)) if isinstance(s, Hierarchy) and not Path(s.path).is_absolute()
            else s for s in steps]


@dataclass
class RecodeReport:
    """What a recoding did, per key: ``categories_before`` / ``categories_after`` (distinct
    non-missing values), ``records_changed`` (released value differs from the original) and
    ``steps`` (descriptions), each {column: ...}."""

    categories_before: dict = field(default_factory=dict)
    categories_after: dict = field(default_factory=dict)
    records_changed: dict = field(default_factory=dict)
    steps: dict = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        return pd.DataFrame({"categories_before": self.categories_before, "categories_after": self.categories_after,
                             "records_changed": self.records_changed,
                             "recoding": {c: "; ".join(s) for c, s in self.steps.items()}})

    def action(self, column: str, role: str = "key") -> str:
        """One line of a release's summary for a recoded column (of ``role``)."""
        return (f"{role}: " * bool(role) + f"{'; '.join(self.steps[column])} ({self.categories_before[column]} -> "
                f"{self.categories_after[column]} categories, {self.records_changed[column]:,} records changed)")


def recode(data: pd.DataFrame, steps, *, weights=None) -> tuple[pd.DataFrame, RecodeReport]:
    """Apply the recoding ``steps`` (a list of :class:`Step`, or of their dictionaries) in order
    to a copy of ``data``; ``weights``: sampling weights (a column name of ``data`` or values) for
    the tail means of top/bottom coding. Returns (the recoded table, its :class:`RecodeReport`);
    the table's value labels (``attrs["labels"]``) follow the recoding (module docstring)."""
    from .._validation import check_weights, weights_of
    from ..release import differing

    if not isinstance(data, pd.DataFrame):
        raise InputError("recode: data must be a pandas DataFrame")
    steps = [s if isinstance(s, Step) else step_from_dict(s) for s in (steps or [])]
    present = set(data.columns)
    for s in steps:
        if getattr(s, "creates", False):
            lacking = [c for c in s.columns if c not in present]
            if lacking:
                raise InputError(f"{s.kind} step: column {lacking[0]!r} is not in the table")
            if s.column in present:
                raise InputError(f"{s.kind} step: the table already has a column {s.column!r}; name the new one "
                                 "otherwise")
            present.add(s.column)
        elif s.column not in present:
            raise InputError(f"{s.kind} step: column {s.column!r} is not in the table")
    w = weights_of(data, weights) if isinstance(weights, str) else \
        None if weights is None else check_weights(weights, len(data))
    out = data.copy()
    out.attrs = dict(data.attrs)
    labels = labels_of(data)
    value_labels = dict(labels.value_labels) if labels is not None else {}
    report = RecodeReport()
    created = set()
    for s in steps:
        if getattr(s, "creates", False):
            out[s.column] = s.build(out)
            created.add(s.column)
            report.steps.setdefault(s.column, []).append(s.describe())
            continue
        column, codes = s.column, value_labels.get(s.column)
        new, new_codes = s.apply(out[column], codes, w)
        out[column] = new
        value_labels.pop(column, None)
        if new_codes:
            value_labels[column] = new_codes
        report.steps.setdefault(column, []).append(s.describe())
    if "integer_columns" in data.attrs:  # a column recoded to text is no integer column any more
        out.attrs["integer_columns"] = [c for c in data.attrs["integer_columns"]
                                        if c not in report.steps or pd.api.types.is_numeric_dtype(out[c])]
    if labels is not None or value_labels:
        out.attrs[ATTR] = replace(labels or TableLabels(), value_labels=value_labels)
    for c in report.steps:
        before = out[c] if c in created else data[c]  # a new column: its own categories, nothing changed
        report.categories_before[c] = int(before.nunique(dropna=True))
        report.categories_after[c] = int(out[c].nunique(dropna=True))
        report.records_changed[c] = 0 if c in created else int(differing(data[c], out[c]).sum())
    return out, report


__all__ = ["BottomCode", "Combine", "Group", "Hierarchy", "Intervals", "RecodeReport", "Round", "STEPS", "SetMissing", "Step", "TopCode",
           "read_hierarchy", "recode", "step_from_dict", "steps_from_file", "steps_from_json"]

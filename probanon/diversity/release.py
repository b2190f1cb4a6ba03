"""Data owner's side of the (l, delta)-diversity mechanism (l-delta-diversity.txt, Algorithm 1,
step 5): map the N collected records to the broadcast equivalence classes and publish the counts
``n^(qbar)(s)`` per (class, sensitive value) -- a sufficient statistic of the anonymized dataset
(Sec. 2.3). Plans are saved and loaded as JSON.

The released table has the columns ``class``, ``class_values`` (what the class is: its QI values
as the plan lists them, several columns joined by ``|``, the values of one class separated by
``; ``), ``sensitive``, ``count`` (one row per pair with a positive count, by class then by the
plan's order of sensitive values), the count-table format that :mod:`probanon.diversity.checks`
reads. The plan is broadcast, so the class values disclose nothing it does not.

Its counts add up to the records of the sample, not to the plan's N: N is the fewest independent
draws from the planned distribution for which the guarantee holds (Theorem 4.4: a class with
fewer than l sensitive values has probability <= m l (1 - p)^n, which is delta at n = N and
falls as n grows); a larger sample is released whole (:func:`count_note` says so, with the bound
at its size), a smaller one only with ``allow_fewer`` (no guarantee).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .._validation import row_label
from ..outputs import write_outputs
from ..errors import InputError
from .distribution import KEY_SEPARATOR, value_key
from .planning import DiversityPlan

RELEASE_COLUMNS = ("class", "class_values", "sensitive", "count")
CLASS_SEPARATOR = "; "


def save_plan(plan: DiversityPlan, path) -> None:
    """Write the plan as JSON (atomically)."""
    write_outputs({Path(path): plan.to_json(indent=1)})


def load_plan(text_or_path) -> DiversityPlan:
    """Read a plan written by :func:`save_plan` (a path or the JSON text); a malformed or
    inconsistent plan raises :class:`~probanon.errors.SpecificationError` (one line)."""
    return DiversityPlan.from_json(str(text_or_path) if isinstance(text_or_path, Path) else text_or_path)


def _keys(sample: pd.DataFrame, columns) -> pd.Series:
    parts = [sample[c].map(value_key, na_action="ignore") for c in columns]
    for c, part in zip(columns, parts):
        if part.isna().any():
            row = int(np.flatnonzero(part.isna().to_numpy())[0])
            raise InputError(f"column {c!r} has a missing value ({row_label(sample, row)})")
    key = parts[0].astype(object)
    for part in parts[1:]:
        key = key + KEY_SEPARATOR + part.astype(object)
    return key


def assign_classes(plan: DiversityPlan, sample: pd.DataFrame) -> np.ndarray:
    """The class id of every record of ``sample`` (its QI columns looked up in the plan);
    a QI value that the plan does not know raises :class:`InputError`."""
    if not isinstance(sample, pd.DataFrame) or sample.shape[0] == 0:
        raise InputError("the sample has no records")
    missing = [c for c in plan.qi_columns if c not in sample.columns]
    if missing:
        raise InputError(f"the sample has no QI column {missing[0]!r} (the plan's QI columns: "
                         f"{', '.join(plan.qi_columns)})")
    keys = _keys(sample, plan.qi_columns)
    classes = keys.map(plan.class_mapping())
    if classes.isna().any():
        row = int(np.flatnonzero(classes.isna().to_numpy())[0])
        raise InputError(f"{row_label(sample, row)}: the QI value {keys.iloc[row]!r} is not in the plan")
    return classes.to_numpy(dtype=np.int64)


def release_counts(plan: DiversityPlan, sample: pd.DataFrame, sensitive: str | None = None, *,
                   allow_fewer: bool = False) -> pd.DataFrame:
    """Publish ``n^(qbar)(s)``: the number of records per (class, sensitive value).

    ``sensitive`` names the sample's sensitive column (default: the plan's). The guarantee of
    the plan needs at least N = ``plan.n_samples`` records; fewer raise :class:`InputError`
    unless ``allow_fewer``. Sensitive values unknown to the plan raise :class:`InputError`.
    """
    sensitive = plan.sensitive_column if sensitive is None else sensitive
    if not isinstance(sample, pd.DataFrame) or sample.shape[0] == 0:
        raise InputError("the sample has no records")
    if sensitive not in sample.columns:
        raise InputError(f"the sample has no sensitive column {sensitive!r}")
    if sample.shape[0] < plan.n_samples and not allow_fewer:
        raise InputError(f"the sample has {sample.shape[0]} records, fewer than the plan's N = {plan.n_samples} "
                         f"(the (l, delta) guarantee needs N)")
    classes = assign_classes(plan, sample)
    s_keys = _keys(sample, [sensitive])
    order = {s: j for j, s in enumerate(plan.sensitive_values)}
    s_codes = s_keys.map(order)
    if s_codes.isna().any():
        row = int(np.flatnonzero(s_codes.isna().to_numpy())[0])
        raise InputError(f"row {row}: the sensitive value {s_keys.iloc[row]!r} is not in the plan")
    n_s = len(plan.sensitive_values)
    codes = classes * n_s + s_codes.to_numpy(dtype=np.int64)
    counts = np.bincount(codes, minlength=plan.classes * n_s)
    nonzero = np.flatnonzero(counts)
    labels = class_labels(plan)
    return pd.DataFrame({
        "class": nonzero // n_s,
        "class_values": [labels[c] for c in nonzero // n_s],
        "sensitive": [plan.sensitive_values[j] for j in nonzero % n_s],
        "count": counts[nonzero],
    })


def class_labels(plan: DiversityPlan) -> list[str]:
    """What each class is: its QI values (the plan's keys, several QI columns joined by ``|``) in
    the planning order, joined by ``; ``."""
    members: list[list[str]] = [[] for _ in range(plan.classes)]
    for key, c in zip(plan.qi_keys, plan.class_of):
        members[int(c)].append(str(key))
    return [CLASS_SEPARATOR.join(m) for m in members]


def failure_bound(plan: DiversityPlan, n: int) -> float:
    """``min(1, m l (1 - p)^n)``: the probability bound of Theorem 4.4 that a release of ``n``
    independent draws leaves some class with fewer than l sensitive values (delta at n = N)."""
    return float(min(1.0, plan.m * plan.l * np.exp(n * np.log1p(-plan.p))))


def count_note(plan: DiversityPlan, released: pd.DataFrame) -> str:
    """Why the counts of a release differ from the plan's N (module docstring)."""
    n, N = int(released["count"].sum()), plan.n_samples
    bound = failure_bound(plan, n)
    if n == N:
        size = f"the plan's N = {N:,} records"
    elif n > N:
        size = (f"all {n:,} records of the sample, more than the plan's N = {N:,} (the fewest independent draws for "
                f"the guarantee; more only lower the failure bound m l (1 - p)^n from delta = {plan.delta:g} to "
                f"{bound:.3g})")
    else:
        size = (f"the {n:,} records of the sample, fewer than the plan's N = {N:,}: the failure bound m l (1 - p)^n "
                f"is {bound:.3g}, not delta = {plan.delta:g}: no guarantee")
    classes = int(released["class"].nunique())
    empty = f"; {plan.classes - classes} classes hold no record" if classes < plan.classes else ""
    return (f"the counts are of {size}; one row per (class, sensitive value) with a positive count: "
            f"{len(released):,} rows in {classes} of the plan's {plan.classes} classes{empty}; the bound assumes "
            "independent draws from the planned distribution (not, e.g., the file whose frequencies made the plan)")


def release_summary(plan: DiversityPlan, released: pd.DataFrame) -> dict:
    """Records, non-empty classes and the distinct l achieved (Definition 2.1) of a release."""
    per_class = released.groupby("class")["count"].agg(["size", "sum"])
    return {"records": int(released["count"].sum()), "classes": plan.classes,
            "non_empty_classes": int(per_class.shape[0]),
            "l_achieved": int(per_class["size"].min()), "l": plan.l}

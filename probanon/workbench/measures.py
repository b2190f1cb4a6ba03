"""Risk and utility of the workbench's states, with the library's measures only.

:func:`risk_before` is what ``probanon risk`` and the internal report state of a table and its
keys (frequency risk with weights, sample uniques, k achieved, violations per key combination,
household risk, the records most at risk, attribute disclosure of the confidential columns by
the key classes); :func:`assess_release` measures a strategy's release against the table it was
made from (the same measures after, information loss, record linkage, and the point of the
risk-utility map of :mod:`probanon.release_report`); :func:`comparison_png` draws that map for
several strategies.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import InputError
from ..metrics import information_loss, k_achieved, record_linkage
from ..metrics.attribute import release_disclosure
from ..metrics.key_risk import key_risk
from .methods import role_columns
from .table import plain

#: records listed as the most at risk (the office's view only)
MOST_AT_RISK = 20
#: record linkage (nearest neighbour, O(n^2 / blocks)) is measured up to this many records
LINKAGE_MAX_RECORDS = 20_000


def _keys(roles: dict) -> tuple[list, list]:
    return role_columns(roles, "key"), role_columns(roles, "categorical key")


def _weights(frame: pd.DataFrame, roles: dict):
    from .._validation import weights_of

    weight = role_columns(roles, "weight")
    return weights_of(frame, weight[0]) if weight else None


def risk_before(frame: pd.DataFrame, roles: dict, k: int = 3, combinations: int | None = None,
                progress=None) -> dict:
    """The risk of ``frame`` under ``roles`` (module docstring), JSON-ready; ``k``: the k of the
    violations counted per combination of at most ``combinations`` keys (None: all together)."""
    numeric, categorical = _keys(roles)
    keys = numeric + categorical
    if not keys:
        raise InputError("no key variables: give a column the role key or categorical key")
    if progress is not None:
        progress("risk", 0, 3)
    household = (role_columns(roles, "household") or [None])[0]
    weights = _weights(frame, roles)
    found = key_risk(frame, keys, weights=weights, household=household, by_combination=True, k=k,
                     combinations=None if combinations is None else min(combinations, len(keys)))
    if progress is not None:
        progress("risk", 1, 3)
    risk = found.frequency
    out = {"records": int(len(frame)), "keys": keys, "k": k, "k_achieved": k_achieved(frame, keys, missing="any"),
           "sample_uniques": int(risk.sample_uniques), **found.to_dict()}
    out["violations_lines"] = found.violations.lines() if found.violations is not None else []
    top = np.argsort(-risk.risk, kind="stable")[:MOST_AT_RISK]
    shown = frame.iloc[top][keys]
    out["most_at_risk"] = {"columns": ["record", *keys, "fk", "Fk", "risk"],
                           "rows": [[int(i) + 1, *[plain(v) for v in row], int(risk.fk[i]), float(risk.Fk[i]),
                                     float(risk.risk[i])] for i, row in zip(top, shown.itertuples(index=False,
                                                                                                    name=None))]}
    confidential = role_columns(roles, "confidential")
    if confidential:
        groups = frame[keys]
        disclosure = release_disclosure(frame, confidential, groups)
        out["attribute_disclosure"] = [c.headline() for c in disclosure.columns]
    if progress is not None:
        progress("risk", 3, 3)
    return out


def _aligned(release: pd.DataFrame, link: pd.DataFrame) -> pd.DataFrame:
    """The release's rows in the order of the records they come from (its link file)."""
    order = link.sort_values("original_row")["released_row"].to_numpy() - 1
    return release.iloc[order].reset_index(drop=True)


def assess_release(original: pd.DataFrame, release: pd.DataFrame, link: pd.DataFrame, roles: dict, k: int | None,
                   probabilistic: bool = False) -> dict:
    """Risk and utility of ``release`` (with its ``link``) made from ``original`` under ``roles``
    (JSON-ready): k achieved, frequency risk, information loss and record linkage of the numeric
    keys, the categorical keys' information lost (H(X|Y)/H(X)), and ``map``: the point of the
    risk-utility map (numeric keys: the report's information loss and record linkage; categorical
    keys only: the mean share of information lost and the expected re-identification rate)."""
    from ..categorical.strategies import information_loss as categorical_loss

    numeric, categorical = _keys(roles)
    keys = numeric + categorical
    released = _aligned(release, link)
    original = original.reset_index(drop=True)
    weights = _weights(original, roles)
    found = key_risk(released, keys, weights=None if weights is None else weights)
    out = {"records": int(len(released)), "k_achieved": k_achieved(released, keys, missing="any"),
           "sample_uniques": int(found.frequency.sample_uniques),
           "expected_reidentifications": float(found.frequency.expected_reidentifications),
           "records_above_main_level": found.above_main_level()}
    if numeric:
        X = original[numeric].to_numpy(np.float64)
        Y = released[numeric].to_numpy(np.float64)
        complete = ~(np.isnan(X).any(axis=1) | np.isnan(Y).any(axis=1))
        out["information_loss"] = float(information_loss(X[complete], Y[complete], weights=None if weights is None
                                                         else np.asarray(weights)[complete]))
        out["record_linkage"] = float(record_linkage(X[complete], Y[complete])) \
            if complete.sum() <= LINKAGE_MAX_RECORDS else None
    if categorical:
        table = categorical_loss(original, released, categorical)
        out["categorical"] = {c: {"changed": int(r.changed), "suppressed": int(r.suppressed),
                                  "information_loss": float(r.information_loss)} for c, r in table.iterrows()}
    if numeric and out.get("record_linkage") is not None:
        out["map"] = {"x": out["information_loss"], "y": out["record_linkage"], "axes": "numeric"}
    else:
        lost = np.mean([v["information_loss"] for v in out.get("categorical", {}).values()] or [0.0])
        out["categorical_information_loss"] = 100.0 * float(lost)
        out["map"] = {"x": 100.0 * float(lost), "y": out["expected_reidentifications"] / max(1, len(released)),
                      "axes": "categorical"}
    if k is not None:
        out["guarantee"] = "k-anonymous" if out["k_achieved"] >= k else "probabilistic" if probabilistic else "none"
    else:
        out["guarantee"] = "none"
    return out


def comparison_png(points: list, k: int) -> bytes:
    """The risk-utility map of :func:`probanon.release_report.risk_utility_map` for ``points``
    ({"label", "map", "k_achieved", "guarantee"} of the strategies), as PNG bytes."""
    from ..release_report import Assessment, risk_utility_map
    from ..report import figure_png, plt  # the reports' Agg backend

    assessments = [Assessment(p["label"], p["map"]["x"], p["map"]["y"], p["k_achieved"], p["guarantee"])
                   for p in points]
    fig = risk_utility_map(assessments, k)
    if points and all(p["map"]["axes"] == "categorical" for p in points):
        fig.axes[0].set_xlabel("information lost on the categorical keys (%, H(X|Y)/H(X))")
        fig.axes[0].set_ylabel("expected re-identification rate (frequency risk)")
    try:
        return figure_png(fig)
    finally:
        plt.close(fig)


__all__ = ["assess_release", "comparison_png", "risk_before"]

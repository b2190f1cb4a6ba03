"""Risk-utility report of a release (issue 17, point 7): ``probanon report``.

Two reports of one release, each a folder with ``index.html`` (through :class:`.report.Report`):

``internal/`` for the office: risk before and after (k achieved, sample uniques, k-anonymity
    violations and expected re-identifications of the frequency-based risk, record linkage,
    interval disclosure, and the empirical re-identification test of the nearest-neighbour
    intruder with its exact interval against 1/k), utility (information loss, the change of each key's mean and variance,
    correlations), before/after histograms of every numeric key, and the risk-utility map of the
    releases compared (this one and any ``--compare``): information loss against record linkage,
    a release that is not k-anonymous at the required k drawn apart (a red cross, labelled with
    its k achieved) so that it does not read as the best method.
``external/`` for publication: the method and its parameters as stated by the office, the
    guarantee (k achieved on the keys), and utility as aggregates only (information loss,
    largest changes of a mean, a variance and a correlation in percent). Nothing computed from a
    single original record: no histogram, no extreme, no record count below k.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .metrics import (
    format_information_loss,
    information_loss,
    interval_disclosure,
    k_achieved,
    record_linkage,
    reidentification_test,
    utility_report,
)
from .metrics.frequency import VIOLATION_KS, frequency_risk
from .report import (  # plt: matplotlib on its Agg backend (set in .report)
    Report,
    flag,
    plt,
)

#: runs of the empirical re-identification test (ties between released records drawn anew each run)
RUNS = 100


@dataclass(frozen=True)
class Assessment:
    """Risk and utility of one release, aligned with its original: ``label``, information loss
    (%), record linkage (expected share re-identified by the nearest-neighbour intruder), k
    achieved on the keys, and its guarantee at the required k: "k-anonymous", "probabilistic"
    (swapping, paper 2: an intruder linking by the keys is right with probability <= 1/k,
    although the released tuples are unique) or "none"."""

    label: str
    information_loss: float
    record_linkage: float
    k_achieved: int
    guarantee: str


def assess(label: str, X: np.ndarray, Y: np.ndarray, released: pd.DataFrame, keys: list, k: int,
           weights=None, probabilistic: bool = False) -> Assessment:
    """The :class:`Assessment` of release ``Y`` (numeric keys, aligned rows) of ``X``;
    ``released``: the released table (every key, for the k achieved); ``probabilistic``: the
    mechanism is probabilistically k-anonymous (swapping within groups of k)."""
    achieved = k_achieved(released, keys)
    guarantee = "k-anonymous" if achieved >= k else "probabilistic" if probabilistic else "none"
    return Assessment(label, information_loss(X, Y, weights=weights), record_linkage(X, Y), achieved, guarantee)


STYLE = {"k-anonymous": dict(marker="o", s=60), "probabilistic": dict(marker="^", s=70),
         "none": dict(marker="x", s=90, color="tab:red")}


def risk_utility_map(assessments: list, k: int):
    """Information loss against record linkage, one point per release (legend): k-anonymous
    releases as dots, probabilistically k-anonymous ones as triangles, and releases without
    the guarantee as red crosses whose legend says NOT k-anonymous with their k achieved."""
    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    for a in assessments:
        text = {"k-anonymous": f"{a.label} ({k}-anonymous)", "probabilistic": f"{a.label} (probabilistic {k}-anonymity)",
                "none": f"{a.label}: NOT {k}-anonymous (k achieved = {a.k_achieved})"}[a.guarantee]
        ax.scatter(a.information_loss, a.record_linkage, label=text, **STYLE[a.guarantee])
    ax.axhline(1.0 / k, color="grey", linestyle="--", linewidth=1)
    ax.text(ax.get_xlim()[0], 1.0 / k, f" 1/k = {1 / k:.3g}", va="bottom", color="grey")
    ax.set_xlabel("information loss (%)")
    ax.set_ylabel("record linkage (share re-identified)")
    ax.set_title(f"Risk and utility of the releases (required k = {k})")
    ax.margins(0.15)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return fig


def _histograms(X: np.ndarray, Y: np.ndarray, names: list):
    count = min(len(names), 6)
    fig, axes = plt.subplots(1, count, figsize=(3.2 * count, 2.8), squeeze=False)
    for j, ax in enumerate(axes[0]):
        bins = np.histogram_bin_edges(X[:, j], bins=30)
        ax.hist(X[:, j], bins=bins, alpha=0.5, label="original")
        ax.hist(Y[:, j], bins=bins, alpha=0.5, label="released")
        ax.set_title(str(names[j]), fontsize=9)
        ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def internal_report(original: pd.DataFrame, released: pd.DataFrame, numeric: list, categorical: list, k: int,
                    method: str, weights=None, compared=(), probabilistic: bool = False,
                    label: str = "this release", mechanism=None, confidential=()) -> Report:
    """The office's report (module docstring); ``released`` aligned row by row with
    ``original``; ``compared``: further :class:`Assessment` for the map; ``probabilistic``:
    the release's mechanism is probabilistically k-anonymous (swapping); ``mechanism`` (a name
    of :data:`probanon.attacks.setting.MECHANISMS`) with the ``confidential`` columns: the
    attack suite of that mechanism (:func:`probanon.attacks.attack`) too."""
    keys = numeric + categorical
    X, Y = original[numeric].to_numpy(np.float64), released[numeric].to_numpy(np.float64)
    rep = Report(f"Internal risk-utility report: {method}")
    rep.text("The release", f"{len(original):,} records; keys: {', '.join(keys)}; required k = {k}; {method}. "
             "For the office only: it describes the original data.")
    before, after = (frequency_risk(t, keys, weights) for t in (original, released))
    rows = [{"measure": "k achieved on the keys", "original": k_achieved(original, keys),
             "release": flag(k_achieved(released, keys), k_achieved(released, keys) < k and not probabilistic)},
            {"measure": "sample uniques", "original": before.sample_uniques, "release": after.sample_uniques}]
    rows += [{"measure": f"records violating {v}-anonymity", "original": before.violations(v),
              "release": after.violations(v)} for v in VIOLATION_KS]
    rows.append({"measure": "expected re-identifications (individual risk)",
                 "original": round(before.expected_reidentifications, 2),
                 "release": round(after.expected_reidentifications, 2)})
    if numeric:
        rows += [{"measure": "record linkage (share re-identified)", "original": 1.0,
                  "release": flag(round(record_linkage(X, Y), 4), record_linkage(X, Y) > 1 / k)},
                 {"measure": "interval disclosure (5% of sd)", "original": 1.0,
                  "release": round(interval_disclosure(X, Y), 4)}]
        test = reidentification_test(X, Y, rule="nearest", k=k, runs=RUNS, random_state=0)
        rows.append({"measure": f"empirical re-identification, nearest-neighbour intruder ({RUNS} runs, "
                                f"{100 * test.confidence:.0f}% interval)", "original": 1.0,
                     "release": flag(f"{test.rate:.4f} [{test.interval[0]:.4f}, {test.interval[1]:.4f}]",
                                     bool(test.lower_exceeds_bound))})
    rep.text("Disclosure risk", "Frequency-based risk as sdcMicro's measure_risk (Benedetti-Franconi, "
             + ("weighted" if weights is not None else "the file taken as the population")
             + "); record linkage by the nearest-neighbour intruder; a flagged value exceeds its limit.")
    rep.table(rows)
    if mechanism is not None and numeric:
        from .attacks import attack

        suite = attack(original, released, numeric, list(confidential), mechanism=mechanism, k=k, runs=10,
                       random_state=0)
        rep.text("The attack suite (the mechanism known)", f"Intruders who know the keys and how the release was "
                 f"made ({mechanism}), 10 runs each, against the claimed bound 1/{k}: " +
                 (f"ABOVE it: {', '.join(suite.exceeded)}." if suite.exceeded else "none significantly above it."))
        rep.table(suite.rows())
    if numeric:
        u = utility_report(pd.DataFrame(X, columns=numeric), pd.DataFrame(Y, columns=numeric), weights=weights)
        rep.text("Utility", f"Information loss {format_information_loss(u.information_loss)}; "
                 "largest |correlation difference| "
                 f"{u.correlation_difference_max if u.correlation_difference_max is not None else 0:.4f}.")
        rep.table([{"key": c, "mean difference": round(u.mean_difference[c], 6),
                    "variance difference %": None if u.relative_variance_difference[c] is None else
                    round(100 * u.relative_variance_difference[c], 3)} for c in numeric])
        rep.figure("histograms", _histograms(X, Y, numeric), "Original and released values of the numeric keys")
        mine = assess(label, X, Y, released, keys, k, weights, probabilistic)
        rep.figure("risk_utility_map", risk_utility_map([mine, *compared], k),
                   "Risk-utility map: information loss against record linkage; red crosses are not k-anonymous")
    plt.close("all")
    return rep


def external_report(original: pd.DataFrame, released: pd.DataFrame, numeric: list, categorical: list, k: int,
                    method: str, weights=None, probabilistic: bool = False) -> Report:
    """The publishable report (module docstring): method, guarantee, aggregate utility;
    ``probabilistic``: the mechanism's guarantee is probabilistic k-anonymity (swapping)."""
    keys = numeric + categorical
    achieved = k_achieved(released, keys)
    rep = Report("About this release")
    rep.text("Method", method)
    if probabilistic:
        rep.text("Guarantee", f"Probabilistic {k}-anonymity: the values of the key variables ({', '.join(keys)}) were "
                 f"swapped within groups of at least {k} records, so an intruder who links a person by them is right "
                 f"with probability at most 1/{k}.")
    else:
        rep.text("Guarantee", f"Every combination of the key variables ({', '.join(keys)}) is shared by at least "
                 f"{achieved} released records" + (f" (required: {k})." if achieved >= k else f"; {k} was required."))
    if numeric:
        X, Y = original[numeric].to_numpy(np.float64), released[numeric].to_numpy(np.float64)
        u = utility_report(pd.DataFrame(X, columns=numeric), pd.DataFrame(Y, columns=numeric), weights=weights)
        variance = [abs(v) for v in u.relative_variance_difference.values() if v is not None]
        sd = np.sqrt(np.cov(X, rowvar=False, aweights=weights, ddof=0).reshape(len(numeric), -1).diagonal())
        moved = max((abs(u.mean_difference[c]) / s for c, s in zip(numeric, sd) if s > 0), default=0.0)
        rep.text("Utility", f"Information loss {format_information_loss(u.information_loss)} (0: unchanged, 100: "
                 f"every key replaced by its mean). The means of the keys moved by at most {moved:.3f} standard deviations"
                 f"{' (weighted)' * (weights is not None)}, the variances by at most "
                 f"{100 * max(variance, default=0):.1f} %, the correlations by at most "
                 f"{u.correlation_difference_max or 0:.3f}.")
    return rep


def report_contents(folder, original: pd.DataFrame, released: pd.DataFrame, numeric: list, categorical: list, k: int,
                    method: str, weights=None, compared=(), probabilistic: bool = False, mechanism=None,
                    confidential=()) -> dict:
    """{path: text or bytes} of both reports in ``folder``/internal and ``folder``/external,
    for the all-or-nothing writer (:meth:`probanon.outputs.Outputs.write`, ``folder`` declared)."""
    from pathlib import Path

    folder = Path(folder)
    internal = internal_report(original, released, numeric, categorical, k, method, weights, compared, probabilistic,
                               mechanism=mechanism, confidential=confidential)
    external = external_report(original, released, numeric, categorical, k, method, weights, probabilistic)
    return {**internal.contents(folder / "internal"), **external.contents(folder / "external")}


__all__ = ["Assessment", "assess", "external_report", "internal_report", "report_contents", "risk_utility_map"]

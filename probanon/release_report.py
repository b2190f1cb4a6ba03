"""Risk-utility report of a release (issue 17, point 7; issue 39, point 12): ``probanon report``.

Two reports of one release, each a folder with ``index.html`` (through :class:`.report.Report`):

``internal/`` for the office: risk before and after (k achieved, sample uniques, k-anonymity
    violations and expected re-identifications of the frequency-based risk, record linkage,
    interval disclosure, and the empirical re-identification test of the nearest-neighbour
    intruder with its exact interval against 1/k), each flagged figure with its limit beside it;
    utility (information loss, each key's mean and variance, correlations); before/after
    histograms of every numeric key (rows of :data:`PANELS_PER_ROW` panels; a key with more
    than :data:`ZERO_HEAVY` zeros on a log count scale), before/after frequency tables of every
    categorical key; and the risk-utility map: information loss against record linkage of
    this release and any ``--compare``, a release that is not k-anonymous at the required k
    drawn apart (a red cross, labelled with its k achieved) so that it does not read as the best
    method, beside the references the office can always read it against: the original and MDAV
    at :data:`REFERENCE_KS` on the same keys.
``external/`` for publication: the dataset (file name, date, record count), every released
    variable with its treatment, the method and its parameters as stated by the office, the
    guarantee (k achieved on the keys) with what it bounds and what it does not
    (:data:`probanon.attacks.GUARANTEES`), and utility as aggregates only (information loss,
    largest changes of a mean, a variance and a correlation in percent). Nothing computed from a
    single original record: no histogram, no extreme, no record count below k.
"""

from __future__ import annotations

import datetime
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import FuncFormatter, MaxNLocator

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
    FIGURE_WIDTH,
    Report,
    compact_number,
    fixed,
    flag,
    plt,
    shared_decimals,
)

#: runs of the empirical re-identification test (ties between released records drawn anew each run)
RUNS = 100
#: A key is zero-heavy when more than this share of its original values are exactly 0: its
#: histogram counts are then drawn on a log scale, so that the other values stay visible beside
#: the bar at zero.
ZERO_HEAVY = 0.25
#: Panels per row of the histogram figure (rows are added for more keys).
PANELS_PER_ROW = 3
#: k of the MDAV releases drawn on the risk-utility map as references (with the original and the
#: required k), computed on the release's own numeric keys.
REFERENCE_KS = (2, 3, 5, 10)
#: The references are computed up to this many records (MDAV's time grows as n^2 / k).
REFERENCE_MAX_RECORDS = 20_000
#: Categories listed per categorical key in its before/after table; the others are summed in one row.
CATEGORIES_SHOWN = 15


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
    achieved = k_achieved(released, keys, missing="any")
    guarantee = "k-anonymous" if achieved >= k else "probabilistic" if probabilistic else "none"
    return Assessment(label, information_loss(X, Y, weights=weights), record_linkage(X, Y), achieved, guarantee)


@dataclass(frozen=True)
class Reference:
    """A point of the risk-utility map drawn for comparison, not a release: the original
    (``k`` None) or MDAV at ``k`` on the same keys."""

    label: str
    information_loss: float
    record_linkage: float
    k: int | None = None


def references(X: np.ndarray, k: int, weights=None, ks=REFERENCE_KS) -> list:
    """The original and MDAV (:class:`probanon.microagg.MDAV`) at each of ``ks`` and the required
    ``k`` (those <= n), on the numeric keys ``X``: information loss and record linkage, as
    :func:`assess` measures a release; empty above :data:`REFERENCE_MAX_RECORDS` records."""
    from .microagg import MDAV

    n = X.shape[0]
    if n > REFERENCE_MAX_RECORDS:
        return []
    out = [Reference("original", information_loss(X, X, weights=weights), record_linkage(X, X))]
    for kk in sorted({*ks, k}):
        if kk <= n:
            Y = MDAV(kk).fit_transform(X)
            out.append(Reference(f"MDAV, k = {kk}", information_loss(X, Y, weights=weights), record_linkage(X, Y), kk))
    return out


STYLE = {"k-anonymous": dict(marker="o", s=60), "probabilistic": dict(marker="^", s=70),
         "none": dict(marker="x", s=90, color="tab:red")}


def _draw_references(ax, refs: list) -> None:
    """The original as a black square, the MDAV references as a grey line of diamonds labelled by k."""
    mdav = [r for r in refs if r.k is not None]
    if mdav:
        ax.plot([r.information_loss for r in mdav], [r.record_linkage for r in mdav], color="grey", linestyle=":",
                marker="D", markersize=5, label=f"reference: MDAV at k = {', '.join(str(r.k) for r in mdav)}", zorder=1)
        for r in mdav:
            ax.annotate(f"k = {r.k}", (r.information_loss, r.record_linkage), textcoords="offset points",
                        xytext=(6, 4), fontsize=8, color="dimgrey")
    for r in refs:
        if r.k is None:
            ax.scatter(r.information_loss, r.record_linkage, marker="s", s=50, color="black", zorder=2,
                       label="reference: the original (no protection)")


def risk_utility_map(assessments: list, k: int, refs=()):
    """Information loss against record linkage, one point per release (legend): k-anonymous
    releases as dots, probabilistically k-anonymous ones as triangles, and releases without
    the guarantee as red crosses whose legend says NOT k-anonymous with their k achieved;
    ``refs`` (:func:`references`): the original and MDAV at several k, in grey, to read them against."""
    fig, ax = plt.subplots(figsize=(7.6, 5.0))
    _draw_references(ax, list(refs))
    for a in assessments:
        text = {"k-anonymous": f"{a.label} ({k}-anonymous)", "probabilistic": f"{a.label} (probabilistic {k}-anonymity)",
                "none": f"{a.label}: NOT {k}-anonymous (k achieved = {a.k_achieved})"}[a.guarantee]
        ax.scatter(a.information_loss, a.record_linkage, label=text, zorder=3, **STYLE[a.guarantee])
    ax.axhline(1.0 / k, color="grey", linestyle="--", linewidth=1)
    ax.margins(0.08)
    ax.text(ax.get_xlim()[0], 1.0 / k, f" 1/k = {1 / k:.3g}", va="bottom", color="grey")
    ax.set_xlabel("information loss (%)")
    ax.set_ylabel("record linkage (share re-identified)")
    ax.set_title(f"Risk and utility of the releases (required k = {k})")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    return fig


def zero_share(values: np.ndarray) -> float:
    """Share of the values that are exactly 0."""
    return float(np.mean(np.asarray(values) == 0)) if len(values) else 0.0


def _attribute_section(rep: Report, original, released, keys, confidential) -> None:
    """Attribute disclosure of each confidential column by the released classes of the keys
    (:func:`probanon.metrics.attribute.release_disclosure`): a table and a figure."""
    from .metrics.attribute import PinnedShares, release_disclosure

    found = release_disclosure(released, confidential, released[keys], original=original)
    rep.text("Attribute disclosure (no bound claimed)",
             "What the released classes of the keys say about each person's confidential values, beside the "
             "same guess without the release (baseline: classes of the same sizes drawn at random; the file's median). "
             + " ".join(line[0].upper() + line[1:] + "." for line in found.lines()))
    rep.table(found.rows())
    numeric = [c for c in found.columns if isinstance(c, PinnedShares)]
    if numeric:
        rep.figure("attribute_disclosure", _pinned_figure(numeric),
                   "Share of people whose released class pins their confidential value within p% (every value of "
                   "the class within it), for each margin p; hatched: the baseline (classes of the same sizes drawn at random)")


def _pinned_figure(columns: list):
    """Bars of the pinned shares per column and margin, the baseline hatched beside each."""
    margins = columns[0].margins
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH, 3.2))
    x = np.arange(len(columns))
    width = 0.8 / (2 * len(margins))
    for j, p in enumerate(margins):
        at = x - 0.4 + width * (2 * j + 0.5)
        ax.bar(at, [100 * c.all_within[j] for c in columns], width, label=f"within {p:g}%")
        ax.bar(at + width, [100 * c.baseline_all_within[j] for c in columns], width, hatch="//", fill=False,
               label=f"baseline, {p:g}%")
    ax.set_xticks(x, [str(c.column) for c in columns], fontsize=8, rotation=30 if len(columns) > 6 else 0)
    ax.set_ylabel("% of people pinned", fontsize=8)
    ax.set_ylim(0, 100)
    ax.legend(fontsize=7, ncols=len(margins))
    fig.tight_layout()
    return fig


def _histograms(X: np.ndarray, Y: np.ndarray, names: list):
    """One panel per key, :data:`PANELS_PER_ROW` to a row, original and released values on the
    same bins; counts on a log scale for a zero-heavy key (:data:`ZERO_HEAVY`)."""
    count = len(names)
    columns = min(PANELS_PER_ROW, count)
    rows = math.ceil(count / columns)
    fig, axes = plt.subplots(rows, columns, figsize=(FIGURE_WIDTH, 2.7 * rows), squeeze=False)
    for j, ax in enumerate(axes.flat):
        if j >= count:
            ax.set_visible(False)
            continue
        both = np.concatenate([X[:, j], Y[:, j]])
        bins = np.histogram_bin_edges(both[np.isfinite(both)], bins=30)
        ax.hist(X[:, j], bins=bins, alpha=0.5, label="original")
        ax.hist(Y[:, j], bins=bins, alpha=0.5, label="released")
        title = str(names[j])
        zeros = zero_share(X[:, j])
        if zeros > ZERO_HEAVY:
            ax.set_yscale("log")
            title += f" (log count: {100 * zeros:.0f}% zeros)"
        ax.set_title(title, fontsize=9)
        ax.xaxis.set_major_locator(MaxNLocator(4))
        ax.xaxis.set_major_formatter(FuncFormatter(compact_number))
        if ax.get_yscale() == "linear":
            ax.yaxis.set_major_locator(MaxNLocator(5, integer=True))
        ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def _categories(series: pd.Series) -> pd.Series:
    """The values of a categorical key as text, a missing value as "(missing)"."""
    return series.astype(object).where(series.notna(), "(missing)").astype(str)


def frequency_rows(original: pd.Series, released: pd.Series, shown: int = CATEGORIES_SHOWN) -> list[dict]:
    """Before/after counts of one categorical key: its categories by decreasing original count
    (then those only in the release), the first ``shown`` listed, the rest summed in one row."""
    before, after = _categories(original).value_counts(), _categories(released).value_counts()
    order = list(before.index) + [c for c in after.index if c not in before.index]
    rows = [{"category": c, "original": int(before.get(c, 0)), "released": int(after.get(c, 0))} for c in order]
    for r in rows:
        r["change"] = f"{r['released'] - r['original']:+d}" if r["released"] != r["original"] else "0"
    if len(rows) > shown + 1:
        rest = rows[shown:]
        total = {key: sum(r[key] for r in rest) for key in ("original", "released")}
        rows = rows[:shown] + [{"category": f"({len(rest)} other categories)", **total,
                                "change": f"{total['released'] - total['original']:+d}"
                                if total["released"] != total["original"] else "0"}]
    return rows


def _risk_rows(original, released, X, Y, keys, numeric, k, weights, probabilistic) -> list[dict]:
    """The disclosure-risk table: each measure before and after, with the limit it is held
    against; a figure beyond its limit is a flagged cell carrying that limit."""
    before, after = (frequency_risk(t, keys, weights) for t in (original, released))
    bound = f"<= {fixed(1 / k, 4)} (1/k)"
    achieved = k_achieved(released, keys, missing="any")
    rows = [{"measure": "k achieved on the keys (a missing value matching any value)",
             "original": k_achieved(original, keys, missing="any"),
             "release": flag(achieved, achieved < k and not probabilistic, limit=f">= {k}", mark="BELOW"),
             "limit": "probabilistic: not required" if probabilistic else f">= {k}"},
            {"measure": "sample uniques", "original": before.sample_uniques, "release": after.sample_uniques,
             "limit": ""}]
    rows += [{"measure": f"records violating {v}-anonymity", "original": before.violations(v),
              "release": after.violations(v), "limit": ""} for v in VIOLATION_KS]
    rows.append({"measure": "expected re-identifications (individual risk)",
                 "original": fixed(before.expected_reidentifications, 2),
                 "release": fixed(after.expected_reidentifications, 2), "limit": ""})
    rows.append({"measure": "records above the main risk level (sdcMicro: max(0.1, median + 2 MAD))",
                 "original": int(before.above().sum()), "release": int(after.above().sum()), "limit": ""})
    if numeric:
        linkage = record_linkage(X, Y)
        rows += [{"measure": "record linkage (share re-identified)", "original": fixed(record_linkage(X, X), 4),
                  "release": flag(fixed(linkage, 4), linkage > 1 / k, limit=bound), "limit": bound},
                 {"measure": "interval disclosure (5% of sd)", "original": fixed(1.0, 4),
                  "release": fixed(interval_disclosure(X, Y), 4), "limit": ""}]
        test = reidentification_test(X, Y, rule="nearest", k=k, runs=RUNS, random_state=0)
        rows.append({"measure": f"empirical re-identification, nearest-neighbour intruder ({RUNS} runs, "
                                f"{100 * test.confidence:.0f}% interval)", "original": fixed(1.0, 4),
                     "release": flag(f"{test.rate:.4f} [{test.interval[0]:.4f}, {test.interval[1]:.4f}]",
                                     bool(test.lower_exceeds_bound), limit=bound),
                     "limit": bound})
    return rows


def _key_risk_section(rep: Report, original, released, keys: list, weights, options: dict) -> None:
    """The risk measures around the categorical keys asked by ``options`` (the keywords of
    :func:`probanon.metrics.key_risk.key_risk`: SUDA2, household risk, k per key combination),
    before and after, as tables."""
    from .metrics.key_risk import DIS_HIGH, key_risk

    before, after = (key_risk(t, keys, weights=weights, **options) for t in (original, released))
    pair = lambda measure, get: {"measure": measure, "original": get(before), "release": get(after)}  # noqa: E731
    if before.suda is not None:
        rep.text("SUDA2", f"Minimal sample uniques (MSUs) of at most {before.suda.max_size} keys, SUDA and DIS-SUDA "
                 f"scores as sdcMicro's suda2 (DIS sampling fraction {before.suda.dis_fraction:g}).")
        rows = [pair("records with an MSU", lambda f: int((f.suda.score > 0).sum())),
                pair("MSUs", lambda f: int(f.suda.msu_counts.sum())),
                pair("DIS (probability that a unique match is correct)", lambda f: fixed(f.suda.dis, 4)),
                pair(f"records with a DIS-SUDA score above {DIS_HIGH}", lambda f: int((f.suda.dis_score > DIS_HIGH).sum())),
                pair("largest DIS-SUDA score", lambda f: fixed(float(f.suda.dis_score.max()), 4))]
        rows += [{"measure": f"records with DIS-SUDA {a}", "original": int(b), "release": int(c)} for a, b, c in
                 zip(before.suda.dis_table()["interval"], before.suda.dis_table()["records"],
                     after.suda.dis_table()["records"])]
        contribution = lambda f, key: "none" if f.suda.score.sum() == 0 else \
            fixed(float(f.suda.attribute_contributions()[key]), 1)  # noqa: E731
        rows += [{"measure": f"contribution of {key} (% of the SUDA score)", "original": contribution(before, key),
                  "release": contribution(after, key)} for key in keys]
        rep.table(rows)
    if before.household is not None:
        rep.text("Household risk", "The risk that at least one member of a household is re-identified, "
                 "1 - prod(1 - r) over its members (sdcMicro's measure_risk with hid).")
        rep.table([pair("households", lambda f: f.household.households),
                   pair("expected re-identifications (sdcMicro's hier_risk_ER)",
                        lambda f: fixed(f.household.expected_reidentifications, 2)),
                   pair("hierarchical risk %", lambda f: fixed(100 * f.household.hierarchical_risk, 2)),
                   pair("expected households re-identified", lambda f: fixed(f.household.expected_households, 2)),
                   pair("largest household risk", lambda f: fixed(float(f.household.by_household.max()), 4))])
    if before.violations is not None:
        v0, v1 = before.violations, after.violations
        rep.text("k-anonymity per key combination", f"Records below k = {v0.k} on each combination of keys "
                 "(a missing value matches any value); the first row: on at least one.")
        rows = [{"combination": "any", "original": v0.total, "release": v1.total}]
        rows += [{"combination": ", ".join(c), "original": a, "release": b}
                 for c, a, b in zip(v0.combinations, v0.records, v1.records) if a or b]
        rep.table(rows)


def _categorical_rows(original, released, categorical: list) -> list[dict]:
    """One row per categorical key: changed, suppressed, categories, information loss
    (:func:`probanon.categorical.strategies.information_loss`)."""
    from .categorical.strategies import information_loss as categorical_loss

    table = categorical_loss(original, released, categorical)
    return [{"key": c, "records changed": int(r["changed"]), "suppressed": int(r["suppressed"]),
             "categories": f"{int(r['categories'])} -> {int(r['categories_released'])}",
             "information loss (H(X|Y)/H(X))": f"{100 * r['information_loss']:.2f} %"} for c, r in table.iterrows()]


def _utility_rows(X: np.ndarray, Y: np.ndarray, numeric: list, u, weights=None) -> list[dict]:
    """Each numeric key's mean before and after (weighted with ``weights``), the change of its
    mean in standard deviations of the original, and the change of its variance in percent."""
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    mean_x, mean_y = np.average(X, axis=0, weights=w), np.average(Y, axis=0, weights=w)
    sd = np.sqrt(np.average((X - mean_x) ** 2, axis=0, weights=w))
    return [{"key": c, **shared_decimals({"original mean": mean_x[j], "released mean": mean_y[j]}),
             "mean difference (sd)": fixed(u.mean_difference[c] / sd[j], 4) if sd[j] > 0 else "constant",
             "variance difference %": "constant" if u.relative_variance_difference[c] is None else
             fixed(100 * u.relative_variance_difference[c], 2)} for j, c in enumerate(numeric)]


def internal_report(original: pd.DataFrame, released: pd.DataFrame, numeric: list, categorical: list, k: int,
                    method: str, weights=None, compared=(), probabilistic: bool = False,
                    label: str = "this release", mechanism=None, confidential=(), refs=None,
                    key_risk: dict | None = None) -> Report:
    """The office's report (module docstring); ``released`` aligned row by row with
    ``original``; ``compared``: further :class:`Assessment` for the map; ``refs``: its
    references (default :func:`references` of the numeric keys); ``probabilistic``: the
    release's mechanism is probabilistically k-anonymous (swapping); ``mechanism`` (a name of
    :data:`probanon.attacks.setting.MECHANISMS`) with the ``confidential`` columns: the attack
    suite of that mechanism (:func:`probanon.attacks.attack`) too, and when an intruder is
    above the bound the office's options, each measured (:mod:`probanon.attacks.remedies`);
    ``key_risk``: the keywords of :func:`probanon.metrics.key_risk.key_risk` for the risk measures
    around categorical keys (SUDA2, household risk, k per key combination), or None."""
    keys = numeric + categorical
    X, Y = original[numeric].to_numpy(np.float64), released[numeric].to_numpy(np.float64)
    rep = Report(f"Internal risk-utility report: {method}")
    rep.text("The release", f"{len(original):,} records; keys: {', '.join(keys)}; required k = {k}; {method}. "
             "For the office only: it describes the original data.")
    rep.text("Disclosure risk", "Frequency-based risk as sdcMicro's measure_risk (Benedetti-Franconi, "
             + ("weighted" if weights is not None else "the file taken as the population")
             + "); record linkage by the nearest-neighbour intruder; a flagged value exceeds its limit, written "
             "beside it.")
    rep.table(_risk_rows(original, released, X, Y, keys, numeric, k, weights, probabilistic))
    if key_risk:
        _key_risk_section(rep, original, released, keys, weights, key_risk)
    if mechanism is not None and numeric:
        _attack_section(rep, original, released, numeric, list(categorical), list(confidential), mechanism, k)
    if confidential:
        _attribute_section(rep, original, released, keys, list(confidential))
    if numeric:
        u = utility_report(pd.DataFrame(X, columns=numeric), pd.DataFrame(Y, columns=numeric), weights=weights)
        rep.text("Utility", f"Information loss {format_information_loss(u.information_loss)}; "
                 "largest |correlation difference| "
                 f"{u.correlation_difference_max if u.correlation_difference_max is not None else 0:.4f}"
                 + (" (weighted)" if weights is not None else "") + ".")
        rep.table(_utility_rows(X, Y, numeric, u, weights))
        heavy = [c for j, c in enumerate(numeric) if zero_share(X[:, j]) > ZERO_HEAVY]
        rep.figure("histograms", _histograms(X, Y, numeric),
                   "Original and released values of the numeric keys"
                   + (f"; counts on a log scale for the keys with more than {100 * ZERO_HEAVY:.0f}% zeros "
                      f"({', '.join(heavy)})" if heavy else ""))
    if categorical:
        rep.text("Utility of the categorical keys", "Per key: records whose value the release changed (of them, "
                 "values suppressed, released missing), categories before and after, and the information lost: the "
                 "entropy of the original value left unknown by the released one, H(X|Y), as a share of H(X).")
        rep.table(_categorical_rows(original, released, categorical))
    for c in categorical:
        rep.text(f"Categories of {c}", f"Records per category of the key {c}, in the original and in the release.")
        rep.table(frequency_rows(original[c], released[c]))
    if numeric:
        mine = assess(label, X, Y, released, keys, k, weights, probabilistic)
        refs = references(X, k, weights) if refs is None else refs
        rep.figure("risk_utility_map", risk_utility_map([mine, *compared], k, refs),
                   "Risk-utility map: information loss against record linkage; red crosses are not k-anonymous"
                   + (f"; in grey, to read the releases against: the original and MDAV on the same numeric keys "
                      f"({', '.join(numeric)}) at k = "
                      + ", ".join(str(r.k) for r in refs if r.k is not None) if refs else
                      f"; no references drawn above {REFERENCE_MAX_RECORDS:,} records"))
    plt.close("all")
    return rep


def _attack_section(rep: Report, original, released, numeric, categorical, confidential, mechanism, k) -> None:
    """The attack suite of ``mechanism`` against 1/k, each success flagged with its bound, and
    the options measured when an intruder is above it; the categorical keys compared as the
    release's nominal keys."""
    from .attacks import attack
    from .attacks.remedies import remedies

    runs = 10
    keys, types = numeric + categorical, {"nominal": categorical} if categorical else {}
    suite = attack(original, released, keys, confidential, mechanism=mechanism, k=k, runs=runs, random_state=0, **types)
    rep.text("The attack suite (the mechanism known)", f"Intruders who know the keys and how the release was "
             f"made ({mechanism}), {runs} runs each, against the claimed bound 1/{k}: " +
             (f"ABOVE it: {', '.join(suite.exceeded)}." if suite.exceeded else "none significantly above it."))
    rep.table([dict(row, success=flag(row["success"], bool(r.lower_exceeds_bound), limit=f"{r.bound:.4f}"))
               for row, r in zip(suite.rows(), suite.results)])
    if suite.exceeded:
        options = remedies(original, released, keys, confidential, suite, runs=runs, random_state=0, **types)
        rep.text("What the office can do", options.summary())
        rep.table(options.rows())


def treatments(original: pd.DataFrame, released: pd.DataFrame, numeric: list, categorical: list,
               confidential=(), method: str = "") -> dict:
    """{column: treatment} of every column of the original and of the release, read from the two
    tables (aligned row by row) when the release's own summary (:attr:`probanon.release.Release.actions`)
    is not at hand: a key "masked" when its released values differ, a column whose values moved
    between records "swapped", one absent from the release "removed", one only in the release "added"."""
    keys, confidential = set(numeric) | set(categorical), set(confidential)
    out = {}
    for c in list(original.columns) + [c for c in released.columns if c not in original.columns]:
        role = "key" if c in keys else "confidential" if c in confidential else None
        if c not in released.columns:
            out[c] = "removed (not released)"
            continue
        if c not in original.columns:
            out[c] = "added"
            continue
        change = _change(original[c], released[c])
        if role == "key":
            out[c] = "key: released unchanged" if change == "unchanged" else \
                f"key: {'swapped between records' if change == 'swapped' else 'masked'}" + (f" ({method})" if method else "")
        else:
            text = {"unchanged": "released unchanged", "swapped": "values swapped between records",
                    "changed": "values changed"}[change]
            out[c] = f"{role}: {text}" if role else text
    return out


def _change(before: pd.Series, after: pd.Series) -> str:
    """"unchanged", "swapped" (the same values, moved between records) or "changed"."""
    a, b = before.reset_index(drop=True), after.reset_index(drop=True)
    numeric = pd.api.types.is_numeric_dtype(a) and pd.api.types.is_numeric_dtype(b)
    if numeric:
        x, y = a.to_numpy(np.float64), b.to_numpy(np.float64)
        same = lambda u, v: np.array_equal(u, v, equal_nan=True)  # noqa: E731
    else:
        x, y = _categories(a).to_numpy(), _categories(b).to_numpy()
        same = np.array_equal
    if same(x, y):
        return "unchanged"
    return "swapped" if same(np.sort(x), np.sort(y)) else "changed"


def _guarantee_text(keys: list, k: int, achieved: int, probabilistic: bool, mechanism, wildcard: bool = False) -> str:
    """What the release guarantees and, from :data:`probanon.attacks.GUARANTEES`, what that bounds and what not."""
    from .attacks.scope import GUARANTEES
    from .attacks.setting import MECHANISMS

    kind = MECHANISMS.get(mechanism or "", "aggregated")
    if probabilistic or kind == "swapped":
        claim = (f"Probabilistic {k}-anonymity: the values of the key variables ({', '.join(keys)}) were swapped "
                 f"within groups of at least {k} records, so an intruder who links a person by them is right with "
                 f"probability at most 1/{k}.")
        scope = GUARANTEES[mechanism if kind == "swapped" else "mdav-swap"]
    elif kind == "column-wise":
        scope = GUARANTEES[mechanism]
        claim = f"{scope.claim[0].upper()}{scope.claim[1:]}, k = {k}."
    else:
        claim = (f"Every combination of the key variables ({', '.join(keys)}) is shared by at least {achieved} "
                 f"released records" + (" (a suppressed, missing value counted as matching any value, as sdcMicro "
                                        "counts)" if wildcard else "")
                 + (f" (required: {k})." if achieved >= k else f"; {k} was required."))
        scope = GUARANTEES[mechanism if mechanism in GUARANTEES and kind == "aggregated" else "microaggregation"]
        if achieved < k:
            return claim + " The release therefore carries no k-anonymity guarantee at the required k."
    return f"{claim} What this bounds: {scope.bounded}. What it does not bound: {scope.not_bounded}."


def external_report(original: pd.DataFrame, released: pd.DataFrame, numeric: list, categorical: list, k: int,
                    method: str, weights=None, probabilistic: bool = False, *, dataset: str | None = None,
                    variables: dict | None = None, mechanism=None, confidential=(), date: str | None = None) -> Report:
    """The publishable report (module docstring): the dataset (``dataset``, its file name; the
    ``date``, default today; the record count), every variable with its treatment (``variables``,
    the release's own summary, else :func:`treatments`), method, guarantee (of ``mechanism``)
    and aggregate utility; ``probabilistic``: the mechanism's guarantee is probabilistic
    k-anonymity (swapping)."""
    keys = numeric + categorical
    achieved = k_achieved(released, keys, missing="any")
    variables = treatments(original, released, numeric, categorical, confidential, method) if variables is None \
        else variables
    rep = Report("About this release" + (f": {dataset}" if dataset else ""))
    published = [c for c, t in variables.items() if not t.endswith("removed") and "removed (" not in t]
    rep.text("The dataset", f"{dataset or 'This release'}: {len(released):,} records, {len(published)} variables "
             f"released; report of {date or datetime.date.today().isoformat()}.")
    rep.text("Method", method)
    rep.text("Guarantee", _guarantee_text(keys, k, achieved, probabilistic, mechanism,
                                          wildcard=bool(released[keys].isna().to_numpy().any())))
    rep.text("Variables", "Every variable of the data and what the release did with it.")
    rep.table([{"variable": c, "treatment": t} for c, t in variables.items()])
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
    if categorical:
        rows = _categorical_rows(original, released, categorical)
        rep.text("Utility of the categorical keys", "; ".join(
            f"{r['key']}: {r['records changed']:,} records changed ({r['suppressed']:,} suppressed), information "
            f"loss {r['information loss (H(X|Y)/H(X))']}" for r in rows) + " (the share of the key's entropy the "
                 "released values leave unknown).")
    return rep


def report_contents(folder, original: pd.DataFrame, released: pd.DataFrame, numeric: list, categorical: list, k: int,
                    method: str, weights=None, compared=(), probabilistic: bool = False, mechanism=None,
                    confidential=(), dataset: str | None = None, variables: dict | None = None,
                    key_risk: dict | None = None) -> dict:
    """{path: text or bytes} of both reports in ``folder``/internal and ``folder``/external,
    for the all-or-nothing writer (:meth:`probanon.outputs.Outputs.write`, ``folder`` declared);
    ``key_risk``: the risk measures around categorical keys of the internal report
    (:func:`internal_report`)."""
    folder = Path(folder)
    internal = internal_report(original, released, numeric, categorical, k, method, weights, compared, probabilistic,
                               mechanism=mechanism, confidential=confidential, key_risk=key_risk)
    external = external_report(original, released, numeric, categorical, k, method, weights, probabilistic,
                               dataset=dataset, variables=variables, mechanism=mechanism, confidential=confidential)
    return {**internal.contents(folder / "internal"), **external.contents(folder / "external")}


__all__ = ["Assessment", "Reference", "assess", "external_report", "frequency_rows", "internal_report", "references",
           "report_contents", "risk_utility_map", "treatments"]

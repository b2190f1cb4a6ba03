"""Reproduction of Sec. 7 of paper 3 (k-anonymous Lloyd, PCL): our values beside the paper's.

======================  ===================================================================
Sec. 7.1, Fig. 3        2-D Gaussian, n = 2^16, |Q| = 16 cells (k = 4096), rho = 0 and 1/2:
                        the paper's PCL has 16 % and 11 % lower distortion than MDAV
Sec. 7.1, Fig. 4        Gaussian, d = 2, 3, 4, rho = 0, |Q| = 16, 32, 64 (k = n / |Q|): the
                        paper's gains reach "up to 19 %"
Sanity (NOTES.md)       d = 1, |Q| = 2: D = 1 - 2/pi; d = 2, rho = 0, |Q| = 2: D = 1 - 1/pi
                        (half-Gaussian cells); the scalar case gives PCL = MDAV
Sec. 7.2, Fig. 7        UCI Adult (age, education-num, hours-per-week, all 48,842 records),
                        k = 500, 1000, 2000, 3000, 4000: "at least 22 %" lower than MDAV at the
                        largest k, "up to 32 %" at k = 2000; jitter changes D by <= 0.1 %
======================  ===================================================================

Distortion D = SSE / (n d) on z-scored data (population sd), with each method's cells and
their means; for z-scored data D = SSE/SST (Sec. 7.2). The gain of PCL is
100 (D_MDAV - D_PCL) / D_MDAV, the negative of the paper's "relative MSE increment". The
paper's Gaussian points are not z-scored; ours are (sample mean 0, sd 1), which changes D by
O(1/sqrt(n)) only. Gaussian samples are ours (seeded), so our gains differ from the paper's
by sampling and by implementation; the paper does not publish its samples.

Adult ties (9953 distinct tuples) are broken by uniform jitter in [-1e-6, 1e-6] (z units)
for fitting both methods; D is evaluated on the unjittered z-scores with the fitted labels,
as in the paper. A :class:`~probanon.errors.ProbanonError` raised by one configuration is
reported in its table row; other errors propagate.

``quick`` uses n = 2^13 Gaussian points with |Q| = 4, 8, 16 (k >= 512), whose figures are
not comparable with the paper's, and all of Adult at k = 2000 and 4000 only (comparable).
"""

from __future__ import annotations

import io
import math
import time
from pathlib import Path

import numpy as np

from ..datasets import reference_file
from ..progress import Steps
from .._validation import check_random_state
from ..data import Standardizer, quasi_identifiers, read_table
from ..errors import InputError, ProbanonError
from ..microagg import MDAV, PCL
from ..microagg.base import group_means
from ..report import Report, line_figure
from .surveys import _finish, _fmt, _Output, matches

import matplotlib.pyplot as plt  # noqa: E402  (after probanon.report chose the Agg backend)

SEED = 2016  # the CLI's default --seed

#: Values printed in the paper (as printed).
PAPER = {
    "fig3": {"source": "Sec. 7.1, text beside Fig. 3 (d = 2, n = 2^16, |Q| = 16, k = 4096)",
             "gain_percent": {0.0: "16", 0.5: "11"}},
    "fig4": {"source": "Sec. 7.1, text on Fig. 4 (d = 2..4, n = 2^16, |Q| <= 64)", "max_gain_percent": "19"},
    "fig7": {"source": "Sec. 7.2, text on Fig. 7 (UCI Adult, 48,842 records, k = 500..4000)",
             "gain_at_largest_k_percent": "22", "max_gain_percent": "32", "k_of_max_gain": 2000,
             "jitter_variation_percent": "0.1"},
    "adult": {"source": "Sec. 7.2 (UCI Adult: age, education-num, hours-per-week)",
              "records": 48842, "distinct": 9953, "mean": ("38.6", "10.1", "40.4"), "sd": ("13.7", "2.57", "12.4"),
              "correlation": {("age", "education-num"): "0.0309", ("age", "hours-per-week"): "0.0716",
                              ("education-num", "hours-per-week"): "0.144"}},
}

#: Closed forms checked in ../shared/papers/NOTES.md Sec. 3: {(d, |Q|): (label, D)}.
SANITY = {(1, 2): ("1 - 2/pi", 1.0 - 2.0 / math.pi), (2, 2): ("1 - 1/pi", 1.0 - 1.0 / math.pi)}

ADULT_COLUMNS = ["age", "education-num", "hours-per-week"]
JITTER = 1e-6  # half-width of the uniform tie-breaking noise, z units


def _settings(quick: bool) -> dict:
    if quick:
        return dict(n=2**13, sanity_n=2**12, fig3_cells=16, dims=(2, 3, 4), cells=(4, 8, 16), adult_k=(2000, 4000))
    return dict(n=2**16, sanity_n=2**14, fig3_cells=16, dims=(2, 3, 4), cells=(16, 32, 64),
                adult_k=(500, 1000, 2000, 3000, 4000))


# --------------------------------------------------------------------------- computation


def distortion(Z: np.ndarray, labels: np.ndarray) -> float:
    """D = SSE / (n d): mean squared distance of each record to its cell mean, per dimension."""
    labels = np.asarray(labels)
    means = group_means(Z, labels, int(labels.max()) + 1)
    return float(((Z - means[labels]) ** 2).sum()) / Z.size


def gaussian(n: int, d: int, rho: float, rng: np.random.Generator) -> np.ndarray:
    """n draws of N(0, Sigma), Sigma = (1 - rho) I + rho 1 1' (Sec. 7.1), z-scored."""
    sigma = np.full((d, d), rho) + (1.0 - rho) * np.eye(d)
    X = rng.standard_normal((n, d)) @ np.linalg.cholesky(sigma).T
    return Standardizer.fit(X).transform(X)


def _compare(Z_fit: np.ndarray, Z: np.ndarray, k: int) -> tuple[dict, dict]:
    """MDAV and PCL fitted on ``Z_fit``, D evaluated on ``Z``. Returns (row, labels); a
    ProbanonError of either method is reported in row["error"]."""
    row: dict = dict(k=k, cells=Z.shape[0] // k, D_mdav=None, D_pcl=None, gain_percent=None, min_size_mdav=None,
                     min_size_pcl=None, seconds_mdav=None, seconds_pcl=None, error=None)
    labels: dict = {}
    try:
        t = time.perf_counter()
        labels["mdav"] = MDAV(k, keep_duplicates=False).fit(Z_fit).labels_  # classical, as the paper
        row["seconds_mdav"] = time.perf_counter() - t
        t = time.perf_counter()
        labels["pcl"] = PCL(k, random_state=0).fit(Z_fit).labels_
        row["seconds_pcl"] = time.perf_counter() - t
    except ProbanonError as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"
        return row, labels
    row["D_mdav"] = distortion(Z, labels["mdav"])
    row["D_pcl"] = distortion(Z, labels["pcl"])
    row["gain_percent"] = 100.0 * (row["D_mdav"] - row["D_pcl"]) / row["D_mdav"]
    row["min_size_mdav"] = int(np.bincount(labels["mdav"]).min())
    row["min_size_pcl"] = int(np.bincount(labels["pcl"]).min())
    return row, labels


class _Gaussians:
    """Seeded Gaussian samples, one per (d, rho), drawn in a fixed order; runs cached by
    (d, rho, |Q|)."""

    def __init__(self, n: int, keys, rng: np.random.Generator):
        self.n = n
        self.data = {key: gaussian(n, key[0], key[1], rng) for key in keys}
        self.runs: dict = {}

    def __call__(self, d: int, rho: float, cells: int, work) -> dict:
        key = (d, rho, cells)
        if key not in self.runs:
            Z = self.data[(d, rho)]
            row, labels = _compare(Z, Z, self.n // cells)
            self.runs[key] = dict(d=d, rho=rho, n=self.n, **row), labels
            work.update()
        return self.runs[key][0]


# --------------------------------------------------------------------------- formatting


def _pct(v, digits: int = 1) -> str:
    return "n/a" if v is None else f"{v:.{digits}f}%"


def _small_pct(v) -> str:
    return "n/a" if v is None else f"{v:.2g}%"


def _row_cells(r: dict) -> list:
    if r["error"]:
        return ["error: " + r["error"]] + [""] * 6
    return [_fmt(r["D_mdav"]), _fmt(r["D_pcl"]), _pct(r["gain_percent"]), r["min_size_mdav"], r["min_size_pcl"],
            f"{r['seconds_mdav']:.1f}", f"{r['seconds_pcl']:.1f}"]


_RUN_HEADERS = ["D_MDAV", "D_PCL", "gain", "min cell MDAV", "min cell PCL", "s MDAV", "s PCL"]


def _vs(ours, printed: str) -> str:
    """'ours% / paper%', '*' when ours rounded to the printed digits differs."""
    return f"{_pct(ours)} / {printed}%" + ("" if matches(printed, ours) else " *")


# --------------------------------------------------------------------------- sections


def _fig3(out: _Output, gauss: _Gaussians, s: dict, work) -> tuple[dict, object]:
    Q = s["fig3_cells"]
    rows, res = [], {"source": PAPER["fig3"]["source"], "n": s["n"], "cells": Q, "k": s["n"] // Q, "runs": []}
    for rho, printed in PAPER["fig3"]["gain_percent"].items():
        r = gauss(2, rho, Q, work)
        res["runs"].append(dict(r, paper_gain_percent=printed))
        rows.append([f"{rho:g}"] + _row_cells(r) + [_vs(r["gain_percent"], printed)])
    out.heading("Sec. 7.1, Fig. 3: 2-D Gaussian", f"n = {s['n']} z-scored Gaussian points, |Q| = {Q} cells, "
                f"k = {s['n'] // Q}. Paper: PCL distortion 16% (rho = 0) and 11% (rho = 1/2) below MDAV "
                f"(n = 65,536, k = 4096). Gain = 100 (D_MDAV - D_PCL) / D_MDAV; '*' marks a difference at "
                "the paper's integer percent (our sample is not the paper's).")
    out.table(f"Fig. 3 (n = {s['n']}, |Q| = {Q}, d = 2)", ["rho"] + _RUN_HEADERS + ["gain ours / paper"], rows)
    return res, _partition_figure(gauss, Q)


def _partition_figure(gauss: _Gaussians, Q: int):
    """Fig. 3: the cells of MDAV and PCL on the 2-D samples (one colour per cell)."""
    rhos = list(PAPER["fig3"]["gain_percent"])
    fig, axes = plt.subplots(len(rhos), 2, figsize=(9.0, 4.5 * len(rhos)), squeeze=False)
    for i, rho in enumerate(rhos):
        Z = gauss.data[(2, rho)]
        labels = gauss.runs[(2, rho, Q)][1]
        for j, method in enumerate(("mdav", "pcl")):
            ax = axes[i, j]
            if method in labels:
                lab = labels[method]
                ax.scatter(Z[:, 0], Z[:, 1], c=lab % 20, cmap="tab20", s=0.5, rasterized=True)
                means = group_means(Z, lab, int(lab.max()) + 1)
                ax.plot(means[:, 0], means[:, 1], "k+", markersize=8)
            else:
                ax.text(0.5, 0.5, "error (see table)", ha="center", transform=ax.transAxes)
            ax.set_title(f"{method.upper()}, rho = {rho:g}, |Q| = {Q}")
            ax.set_aspect("equal")
    fig.tight_layout()
    return fig


def _sanity(out: _Output, gauss: _Gaussians, work) -> dict:
    """|Q| = 2 on ``gauss`` (its own, smaller n: PCL with two cells in 1-D is slow)."""
    rows, res = [], []
    for (d, Q), (label, value) in SANITY.items():
        r = gauss(d, 0.0, Q, work)
        res.append(dict(r, closed_form=label, closed_form_value=value))
        dev = None if r["D_pcl"] is None else 100.0 * (r["D_pcl"] - value) / value
        rows.append([d, Q] + _row_cells(r) + [f"{label} = {value:.4f}", _pct(dev, 2)])
    out.heading("Sanity (NOTES.md Sec. 3)", f"n = {gauss.n} z-scored Gaussian points. Two cells: the optimum "
                "splits at the median (d = 1) or by a line through the mean (d = 2), D = 1 - 2/pi and 1 - 1/pi; "
                "deviations are sampling error O(1/sqrt(n)). In the scalar case PCL and MDAV coincide (paper, "
                "Sec. 7.1).")
    out.table("Sanity: |Q| = 2, rho = 0", ["d", "|Q|"] + _RUN_HEADERS + ["closed form", "D_PCL vs closed form"], rows)
    return {"runs": res}


def _fig4(out: _Output, gauss: _Gaussians, s: dict, work) -> tuple[dict, object]:
    grid = {d: [gauss(d, 0.0, Q, work) for Q in s["cells"]] for d in s["dims"]}
    rows = [[d, Q, r["k"]] + _row_cells(r) for d in s["dims"] for Q, r in zip(s["cells"], grid[d])]
    gains = [r["gain_percent"] for d in grid for r in grid[d] if r["gain_percent"] is not None]
    best = max(gains) if gains else None
    printed = PAPER["fig4"]["max_gain_percent"]
    res = {"source": PAPER["fig4"]["source"], "n": s["n"], "rho": 0.0, "cells": list(s["cells"]),
           "runs": [r for d in grid for r in grid[d]], "max_gain_percent": best, "paper_max_gain_percent": printed}
    out.heading("Sec. 7.1, Fig. 4: Gaussian, d = 2..4", f"n = {s['n']} z-scored Gaussian points, rho = 0, "
                f"k = n / |Q|. Paper: distortion reductions of up to 19% for d = 2..4, |Q| <= 64 (n = 65,536).")
    out.table(f"Fig. 4 (n = {s['n']}, rho = 0)", ["d", "|Q|", "k"] + _RUN_HEADERS, rows)
    out.note(f"Largest gain over this grid: {_vs(best, printed)} (ours / paper's 'up to 19%').")
    fig = line_figure({f"d = {d}": ([r["cells"] for r in grid[d] if r["gain_percent"] is not None],
                                    [r["gain_percent"] for r in grid[d] if r["gain_percent"] is not None])
                       for d in s["dims"]}, "number of cells |Q|", "gain of PCL over MDAV (%)",
                      f"Fig. 4: distortion reduction of PCL, Gaussian, n = {s['n']}, rho = 0")
    fig.axes[0].set_xscale("log", base=2)
    return res, fig


def _adult_data(data_dir, notes: list):
    explicit = data_dir is not None
    path = reference_file(data_dir, "adult")
    if not path.is_file():
        if explicit:
            raise InputError(f"{path}: no such file (--data-dir must contain adult/adult.csv)")
        notes.append(f"UCI Adult not found at {path}: Sec. 7.2 skipped.")
        return None
    X, _ = quasi_identifiers(read_table(path), ADULT_COLUMNS)
    return X


def _adult_check(out: _Output, X: np.ndarray) -> dict:
    """Our summary of the Adult columns beside the paper's (Sec. 7.2)."""
    p = PAPER["adult"]
    mean, sd = X.mean(axis=0), X.std(axis=0)
    corr = np.corrcoef(X, rowvar=False)
    distinct = int(np.unique(X, axis=0).shape[0])
    rows = [["records", X.shape[0], p["records"], "yes" if X.shape[0] == p["records"] else "NO"],
            ["distinct tuples", distinct, p["distinct"], "yes" if distinct == p["distinct"] else "NO"]]
    for j, c in enumerate(ADULT_COLUMNS):
        rows.append([f"mean {c}", f"{mean[j]:.4f}", p["mean"][j], "yes" if matches(p["mean"][j], mean[j]) else "NO"])
        rows.append([f"sd {c}", f"{sd[j]:.4f}", p["sd"][j], "yes" if matches(p["sd"][j], sd[j]) else "NO"])
    for (a, b), printed in p["correlation"].items():
        v = corr[ADULT_COLUMNS.index(a), ADULT_COLUMNS.index(b)]
        rows.append([f"corr {a}, {b}", f"{v:.5f}", printed, "yes" if matches(printed, v) else "NO"])
    out.table("UCI Adult columns (population sd), ours / paper (Sec. 7.2)", ["quantity", "ours", "paper", "match"],
              rows)
    return dict(records=X.shape[0], distinct=distinct, mean=mean, sd=sd, correlation=corr,
                matches=sum(r[3] == "yes" for r in rows), printed=len(rows))


def _fig7(out: _Output, X, s: dict, rng: np.random.Generator, work) -> tuple[dict, object, list]:
    p = PAPER["fig7"]
    out.heading("Sec. 7.2, Fig. 7: UCI Adult", "age, education-num, hours-per-week, z-scored; both methods "
                f"fitted on the z-scores plus uniform jitter in [-{JITTER:g}, {JITTER:g}], D on the unjittered "
                "z-scores. Paper (48,842 records, k = 500..4000): PCL at least 22% below MDAV at the largest k "
                "and up to 32% at k = 2000; the jitter changes D by <= 0.1%.")
    if X is None:
        out.note("Skipped: UCI Adult not found (ours: n/a beside the paper's 22% and 32%).")
        return {"skipped": True}, None, []
    res: dict = {"source": p["source"], "data": _adult_check(out, X)}
    Z = Standardizer.fit(X).transform(X)
    Zj = Z + rng.uniform(-JITTER, JITTER, Z.shape)
    res["records_used"] = int(Z.shape[0])
    runs = []
    for k in s["adult_k"]:
        row, labels = _compare(Zj, Z, k)
        row["jitter_variation_percent"] = None
        if "pcl" in labels:
            dj = distortion(Zj, labels["pcl"])
            row["jitter_variation_percent"] = 100.0 * abs(dj - row["D_pcl"]) / row["D_pcl"]
        runs.append(row)
        work.update()
    res["runs"] = runs
    gains = {r["k"]: r["gain_percent"] for r in runs}
    largest = max(gains)
    ok = {k: g for k, g in gains.items() if g is not None}
    best_k = max(ok, key=ok.get) if ok else None
    res.update(gain_at_largest_k_percent=gains[largest], max_gain_percent=ok.get(best_k), k_of_max_gain=best_k)
    out.table(f"Fig. 7 (UCI Adult, {Z.shape[0]} records)", ["k", "|Q|"] + _RUN_HEADERS + ["jitter effect on D_PCL"],
              [[r["k"], r["cells"]] + _row_cells(r) + [_small_pct(r["jitter_variation_percent"])] for r in runs])
    out.note(f"Gain at the largest k = {largest}: {_pct(gains[largest])} (paper: at least "
             f"{p['gain_at_largest_k_percent']}% at k = 4000). Largest gain: {_pct(ok.get(best_k))} at k = {best_k} "
             f"(paper: up to {p['max_gain_percent']}% at k = {p['k_of_max_gain']}).")
    ks = [r["k"] for r in runs]
    done = [r for r in runs if r["gain_percent"] is not None]
    fig = None
    if done:
        fig = line_figure({"MDAV": ([r["k"] for r in done], [r["D_mdav"] for r in done]),
                           "PCL": ([r["k"] for r in done], [r["D_pcl"] for r in done])},
                          "anonymity constraint k", "distortion D = SSE/SST",
                          f"Fig. 7: UCI Adult ({Z.shape[0]} records), D against k")
    statements = []
    if gains[largest] is not None:
        statements.append(("Sec. 7.2", f"PCL at least {p['gain_at_largest_k_percent']}% below MDAV at the largest k",
                           gains[largest] >= float(p["gain_at_largest_k_percent"]),
                           f"k = {largest}: {_pct(gains[largest])}"))
    if len(done) >= 3:
        inner = best_k not in (min(ks), max(ks))
        statements.append(("Sec. 7.2", "the largest gain is at an intermediate k (paper: k = 2000)", inner,
                           f"k = {best_k}: {_pct(ok[best_k])}"))
    if done:
        var = max(r["jitter_variation_percent"] for r in done)
        statements.append(("Sec. 7.2", f"the jitter changes D_PCL by <= {p['jitter_variation_percent']}%",
                           var <= float(p["jitter_variation_percent"]), f"max {_small_pct(var)}"))
    return res, fig, statements


# --------------------------------------------------------------------------- driver


def _gaussian_statements(res: dict) -> list:
    st = []
    runs = [r for r in res["fig3"]["runs"] + res["fig4"]["runs"] if r["gain_percent"] is not None]
    worst = min(runs, key=lambda r: r["gain_percent"]) if runs else None
    if worst:
        st.append(("Sec. 7.1", "PCL has lower D than MDAV for every Gaussian configuration (d >= 2)",
                   worst["gain_percent"] > 0, f"smallest gain {_pct(worst['gain_percent'])} (d = {worst['d']}, "
                   f"rho = {worst['rho']:g}, |Q| = {worst['cells']})"))
    g3 = {r["rho"]: r["gain_percent"] for r in res["fig3"]["runs"]}
    if None not in g3.values():
        st.append(("Sec. 7.1", "the gain is lower at rho = 1/2 than at rho = 0 (d = 2)", g3[0.5] < g3[0.0],
                   f"{_pct(g3[0.0])} vs {_pct(g3[0.5])}"))
    by_d: dict = {}
    for r in res["fig4"]["runs"]:
        by_d.setdefault(r["d"], []).append(r["gain_percent"])
    mono = [d for d, g in by_d.items() if None not in g and all(b > a for a, b in zip(g, g[1:]))]
    complete = [d for d, g in by_d.items() if None not in g]
    if complete:
        st.append(("Sec. 7.1, Fig. 4", "the gain increases with the number of cells |Q|", len(mono) == len(complete),
                   f"increasing for d = {', '.join(map(str, mono)) or 'none'} of d = {', '.join(map(str, complete))}"))
    scalar = [r for r in res["sanity"]["runs"] if r["d"] == 1 and r["gain_percent"] is not None]
    if scalar:
        g = scalar[0]["gain_percent"]
        st.append(("Sec. 7.1", "in the scalar case PCL and MDAV give the same D", abs(g) < 0.1, f"gain {g:.2g}%"))
    sizes = [r for r in runs + [r for r in res["sanity"]["runs"] if r["gain_percent"] is not None]
             if r["min_size_pcl"] < r["k"] or r["min_size_mdav"] < r["k"]]
    st.append(("Sec. 7.1", "every cell holds at least k points after the final fix", not sizes,
               "all runs" if not sizes else f"{len(sizes)} runs below k"))
    return st


def reproduce_pcl(output_dir="report", data_dir=None, quick: bool = False, progress=None,
                  random_state: int = SEED) -> dict:
    """Recompute Sec. 7 of paper 3 (PCL against MDAV) and print it beside the paper's values.

    Writes ``pcl.html``, the printed text ``pcl.txt``, the numbers ``pcl.json``, the figures
    ``pcl_fig3_cells.png``, ``pcl_fig4_gain.png``, ``pcl_fig7_adult.png`` (when Adult is found)
    and ``pcl_fig3_partitions.npz`` (the 2-D samples of Fig. 3 with both methods' labels, for
    checking) into ``output_dir``, and returns the numbers (JSON-serialisable) plus ``"text"``.
    ``data_dir`` holds ``adult/adult.csv`` (default: the packaged data sets, :mod:`probanon.datasets`;
    skipped with a note when absent there, an error when an explicit ``data_dir`` lacks it).
    ``quick``: n = 2^13 Gaussians (not comparable with the paper) and Adult at k = 2000, 4000. ``progress``: None or a callback ``progress(stage, fit, fits)`` over the fits (:mod:`probanon.progress`). ``random_state`` seeds the Gaussian
    samples and the jitter.
    """
    start = time.perf_counter()
    output_dir = Path(output_dir)
    rng = check_random_state(random_state)
    s = _settings(quick)
    notes: list[str] = []
    X_adult = _adult_data(data_dir, notes)
    gauss = _Gaussians(s["n"], [(2, 0.0), (2, 0.5)] + [(d, 0.0) for d in s["dims"] if d != 2], rng)
    sanity = _Gaussians(s["sanity_n"], sorted({(d, 0.0) for d, _ in SANITY}), rng)
    configs = {(2, rho, s["fig3_cells"]) for rho in PAPER["fig3"]["gain_percent"]}
    configs |= {(d, 0.0, Q) for d in s["dims"] for Q in s["cells"]}
    steps = len(configs) + len(SANITY) + (len(s["adult_k"]) if X_adult is not None else 0)

    report = Report("Paper 3, Sec. 7: k-anonymous Lloyd (PCL) against MDAV (ours beside the paper)")
    out = _Output(report)
    if quick:
        out.note(f"QUICK MODE: n = {s['n']} Gaussian points, |Q| = {', '.join(map(str, s['cells']))}: these Gaussian "
                 "figures are NOT comparable with the paper's (run without --quick for them); Adult at k = 2000, "
                 "4000 only.")
    results: dict = {"quick": quick, "random_state": random_state if isinstance(random_state, int) else None,
                     "settings": s}
    figures = []
    work = Steps(progress, steps)
    results["fig3"], fig = _fig3(out, gauss, s, work)
    figures.append(("pcl_fig3_cells", fig, "Fig. 3: cells of MDAV and PCL on the 2-D Gaussian samples "
                    "(colours repeat every 20 cells; + marks the cell means)."))
    results["fig4"], fig = _fig4(out, gauss, s, work)
    figures.append(("pcl_fig4_gain", fig, "Fig. 4: distortion reduction of PCL over MDAV against |Q|."))
    results["sanity"] = _sanity(out, sanity, work)
    results["fig7"], fig, adult_statements = _fig7(out, X_adult, s, rng, work)
    if fig is not None:
        figures.append(("pcl_fig7_adult", fig, "Fig. 7: distortion of MDAV and PCL against k, UCI Adult."))

    statements = _gaussian_statements(results) + adult_statements
    out.heading("Figures", "Figures follow (PNG files beside this page).")
    for name, fig, caption in figures:
        report.figure(name, fig, caption)
    out.table("Statements of the text", ["source", "statement", "holds", "detail"],
              [[src, t, "yes" if h else "NO", d] for src, t, h, d in statements])
    for n in notes:
        out.note(n)
    f3 = {r["rho"]: r["gain_percent"] for r in results["fig3"]["runs"]}
    f7 = results["fig7"]
    elapsed = time.perf_counter() - start
    p3, p4, p7 = PAPER["fig3"]["gain_percent"], PAPER["fig4"]["max_gain_percent"], PAPER["fig7"]
    summary = [f"Fig. 3 gains (ours / paper): rho = 0: {_vs(f3[0.0], p3[0.0])}; rho = 1/2: {_vs(f3[0.5], p3[0.5])}",
               f"Fig. 4 largest gain (ours / paper 'up to'): {_vs(results['fig4']['max_gain_percent'], p4)}"]
    if f7.get("skipped"):
        summary.append(f"Fig. 7 (Adult): skipped (paper: at least {p7['gain_at_largest_k_percent']}% at the largest "
                       f"k, up to {p7['max_gain_percent']}% at k = {p7['k_of_max_gain']})")
    else:
        at_largest = _vs(f7["gain_at_largest_k_percent"], p7["gain_at_largest_k_percent"])
        best = _vs(f7["max_gain_percent"], p7["max_gain_percent"])
        summary.append(f"Fig. 7 (Adult) gain at the largest k (ours / paper 'at least'): {at_largest}; largest gain "
                       f"(ours / paper 'up to', k = {p7['k_of_max_gain']}): {best} at k = {f7['k_of_max_gain']}")
    summary.append(f"Statements of the text that hold: {sum(h for _, _, h, _ in statements)}/{len(statements)}")
    summary.append(f"{'QUICK MODE (not comparable with the paper); ' if quick else ''}{elapsed:.1f} s")
    out.heading("Summary", "\n".join(summary))

    partitions = io.BytesIO()
    arrays = {}
    for rho in PAPER["fig3"]["gain_percent"]:
        tag = f"rho{rho:g}".replace(".", "_")
        arrays[f"Z_{tag}"] = gauss.data[(2, rho)]
        for method, lab in gauss.runs[(2, rho, s["fig3_cells"])][1].items():
            arrays[f"labels_{method}_{tag}"] = lab
    np.savez_compressed(partitions, **arrays)
    results.update({
        "statements": [dict(source=src, statement=t, holds=h, detail=d) for src, t, h, d in statements],
        "notes": notes,
        "runtime_seconds": elapsed,
    })
    return _finish(output_dir, report, out, results, figures, "pcl",
                   extra={"pcl_fig3_partitions.npz": partitions.getvalue()})

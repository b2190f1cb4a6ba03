"""Reproduction of Sec. VII of paper 1 (p-probabilistic k-anonymous microaggregation for
surveys with uncertain participation): our values beside the paper's.

======================  ===================================================================
Table II                Algorithm A vs a seeded Monte Carlo simulation of 10^5 cells
                        (k = 20, pbar = 0.1, pi = 0.5, n_min = 48)
Table III               n_min, qbar, u, rbar, rbar' for k in {10, 50}, pi in {.75, .5},
                        pbar in {1e-4, 1e-5, 1e-6}
Table IV                rbar, rbar', tbar for pi = .75, N in {1e4, 1e5, 1e6} (18 cells)
Fig. 6                  relative error of qbar against an exact reference, k = 20, pi = .5;
                        the paper's -0.84 % at pbar = 1e-17 is reproduced by running the
                        paper's own subtraction form qbar = P_n(k-1) - p_n(0) (steps 4-6 of
                        Algorithm A) in double precision; our library sums the pmf instead
Fig. 7                  n_min against pbar, k = 50, pi = .5 (values checked in NOTES.md)
Sec. VII.C text         the "five sigma" and "six sigma" reference probabilities
Figs. 8-9               n_min and its KL-divergence / quadratic approximations against k
                        (pi = .5, pbar = 1e-6; plot only, NOTES.md checks k = 10 and 100)
Fig. 10                 ceil of the logarithmic k = 2 approximations against pbar in
                        [1e-7, 1e-3] (exponent step 0.001; the paper does not state pi, we use
                        .5 as in Figs. 7-9); the text's statements are checked
Figs. 11-12             distortion D of :func:`probanon.survey.design.design` (MDAV with cells
                        of n_min records, constant pi) against k, pi and pbar, for Gaussian data
                        (10^4 records, m = 2, 5, 10, seeded) and the CASC census (1080 records,
                        13 columns; the paper's 149,642-record census is not public)
Fig. 13                 (a) D(pi = .75, pbar = 1e-5) / D(pi = 1) against k; (b) the failure
                        1 - (pibar^k + pi^k) of naive cells of k records
Price of trust          issue 18 (beyond the paper): D of the MDAV, PCL and tree designs
                        (:data:`TRUST_MODES`) at k = 5, pbar = 1e-3, pi = .6 and pi_j ~ U[.3, .9],
                        on the census and on 2-D / 10-D Gaussians (2000 records, 1000 quick),
                        every cell's failure recomputed
======================  ===================================================================

A printed value "matches" when our value rounded to the printed digits (half-up) equals it.
The paper's printed values are in :data:`PAPER`; values that the paper only plots but that
NOTES.md checked are in :data:`NOTES` and are counted separately.

With constant pi every record has the same weight, so D depends only on the dataset and the
MDAV cell size (:func:`~probanon.survey.design.safe_cell_size`); designs with the same cell
size are computed once.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import stats

from ..datasets import reference_file
from ..progress import Steps
from ..data import read_table
from ..errors import InputError
from ..report import Flagged, Report, line_figure, text_table
from ..survey.anonymity import cell_failure, effective_anonymity, table_failure
from ..survey.design import METHODS, DesignError, design, safe_cell_size

from ..survey import approximations as _approximations
from ..survey.simulation import simulate_cells

import matplotlib.pyplot as plt  # noqa: E402  (after probanon.report chose the Agg backend)

SEED = 2016

# --------------------------------------------------------------------------- paper values

#: Values printed in the paper (transcribed as printed, so the number of digits is kept).
PAPER = {
    "table2": {
        "source": "Table II and Sec. VII.A (k = 20, pbar = 0.1, pi = 0.5, |C| = 10^5 cells)",
        "n_min": "48",
        "algorithm": {"cell_failure": "0.09671", "mean_unprotected": "17.85", "record_failure": "0.03597"},
        "simulation": {"cell_failure": "0.09606", "mean_unprotected": "17.83", "record_failure": "0.03605"},
        "relative_error_percent": {"cell_failure": "-0.67", "mean_unprotected": "-0.13", "record_failure": "0.23"},
    },
    "table3": {
        "source": "Table III",
        "columns": ("k", "participation", "risk", "n_min", "cell_failure", "mean_unprotected",
                    "record_failure", "record_failure_participant"),
        "rows": [
            (10, 0.75, 1e-4, "25", "4.31e-5", "8.80", "1.52e-5", "2.02e-5"),
            (10, 0.75, 1e-5, "27", "6.05e-6", "8.82", "1.98e-6", "2.64e-6"),
            (10, 0.75, 1e-6, "29", "7.95e-7", "8.84", "2.42e-7", "3.23e-7"),
            (10, 0.5, 1e-4, "43", "8.51e-5", "8.69", "1.72e-5", "3.44e-5"),
            (10, 0.5, 1e-5, "48", "7.61e-6", "8.73", "1.38e-6", "2.77e-6"),
            (10, 0.5, 1e-6, "53", "6.1e-7", "8.77", "1.01e-7", "2.02e-7"),
            (50, 0.75, 1e-4, "88", "6.2e-5", "48.4", "3.41e-5", "4.54e-5"),
            (50, 0.75, 1e-5, "91", "9.82e-6", "48.4", "5.22e-6", "6.97e-6"),
            (50, 0.75, 1e-6, "95", "7.14e-7", "48.5", "3.64e-7", "4.86e-7"),
            (50, 0.5, 1e-4, "144", "7.86e-5", "48.1", "2.62e-5", "5.25e-5"),
            (50, 0.5, 1e-5, "151", "9.64e-6", "48.2", "3.08e-6", "6.15e-6"),
            (50, 0.5, 1e-6, "159", "7.35e-7", "48.3", "2.23e-7", "4.46e-7"),
        ],
    },
    "table4": {
        "source": "Table IV (pi = 0.75)",
        "participation": 0.75,
        "columns": ("k", "records", "risk", "record_failure", "record_failure_participant", "table_failure"),
        "rows": [
            (10, 10**4, 1e-4, "1.52e-5", "2.02e-5", "0.0171"),
            (10, 10**4, 1e-5, "1.98e-6", "2.64e-6", "0.00223"),
            (10, 10**4, 1e-6, "2.42e-7", "3.23e-7", "0.000273"),
            (10, 10**5, 1e-4, "1.52e-5", "2.02e-5", "0.158"),
            (10, 10**5, 1e-5, "1.98e-6", "2.64e-6", "0.0221"),
            (10, 10**5, 1e-6, "2.42e-7", "3.23e-7", "0.00274"),
            (10, 10**6, 1e-4, "1.52e-5", "2.02e-5", "0.822"),
            (10, 10**6, 1e-5, "1.98e-6", "2.64e-6", "0.201"),
            (10, 10**6, 1e-6, "2.42e-7", "3.23e-7", "0.027"),
            (50, 10**4, 1e-4, "3.41e-5", "4.54e-5", "0.00692"),
            (50, 10**4, 1e-5, "5.22e-6", "6.97e-6", "0.00106"),
            (50, 10**4, 1e-6, "3.64e-7", "4.86e-7", "7.42e-5"),
            (50, 10**5, 1e-4, "3.41e-5", "4.54e-5", "0.0679"),
            (50, 10**5, 1e-5, "5.22e-6", "6.97e-6", "0.0107"),
            (50, 10**5, 1e-6, "3.64e-7", "4.86e-7", "0.00075"),
            (50, 10**6, 1e-4, "3.41e-5", "4.54e-5", "0.505"),
            (50, 10**6, 1e-5, "5.22e-6", "6.97e-6", "0.102"),
            (50, 10**6, 1e-6, "3.64e-7", "4.86e-7", "0.00748"),
        ],
    },
    "fig6": {
        "source": "Fig. 6 caption and Sec. VII.A (k = 20, pi = 0.5, pbar down to 1e-17)",
        "k": 20, "participation": 0.5, "lowest_risk": 1e-17,
        "max_relative_error_percent": "-0.84",
    },
    "sec7c": {
        "source": "Sec. VII.C text (reference probabilities beside Fig. 7)",
        "five_sigma_coverage_percent": "99.9999427",
        "five_sigma_two_tails_one_in_millions": "1.74",
        "five_sigma_one_tail_one_in_millions": "3.49",
        "five_sigma_one_tail": "2.87e-7",
        "six_sigma_defect_rate": "3.40e-6",
    },
}

#: Values the paper only plots, checked in ../shared/papers/NOTES.md (Sec. 1).
NOTES = {
    "fig7": {
        "source": "Fig. 7 (k = 50, pi = 0.5), NOTES.md",
        "k": 50, "participation": 0.5,
        "n_min": {0.5: "100", 0.1: "113", 1e-2: "125", 1e-3: "135", 1e-4: "144",
                  1e-5: "151", 1e-6: "159", 1e-7: "165", 1e-8: "172"},
    },
    "fig8": {
        "source": "Figs. 8-9 (pi = 0.5, pbar = 1e-6), NOTES.md",
        "participation": 0.5, "risk": 1e-6,
        "columns": ("n_min", "kl", "n1_prime", "n1_second", "n2"),
        "values": {10: ("53", "55.39", "58.05", "54.12", "49.37"),
                   100: ("278", "286.2", "287.06", "285.78", "271.57")},
    },
}

# approximation columns of Figs. 8-10: (key, label, function name in survey.approximations)
_APPROX_K = (("kl", "KL equation", "n_min_kl"), ("n1_prime", "n1'", "n_min_n1_prime"),
             ("n1_second", "n1''", "n_min_n1_second"), ("n2", "n2", "n_min_n2"))
_APPROX_K2 = (("n0", "ceil n~0", "n_min_k2_n0"), ("n1", "ceil n~1", "n_min_k2_n1"),
              ("n2", "ceil n~2", "n_min_k2_n2"), ("lambert", "ceil Lambert W", "n_min_lambert_k2"))


def _approximation(name):
    return getattr(_approximations, name)


# --------------------------------------------------------------------------- helpers


def matches(printed: str, value) -> bool:
    """Our ``value`` rounded half-up to the last printed digit of ``printed`` equals it."""
    if value is None or not math.isfinite(float(value)):
        return False
    ref = Decimal(printed)
    return Decimal(repr(float(value))).quantize(ref, rounding=ROUND_HALF_UP) == ref


class _Comparisons:
    """Our values beside printed ones, grouped by table/figure."""

    def __init__(self):
        self.records: list[dict] = []

    def add(self, group: str, label: str, printed: str, ours, origin: str = "paper") -> bool:
        ok = matches(printed, ours)
        self.records.append(dict(group=group, origin=origin, label=label, printed=printed,
                                 ours=_plain(ours), match=ok))
        return ok

    def counts(self, origin: str) -> dict:
        out: dict = {}
        for r in self.records:
            if r["origin"] == origin:
                c = out.setdefault(r["group"], [0, 0])
                c[0] += r["match"]
                c[1] += 1
        return out


def _plain(v):
    """JSON-friendly scalars: numpy -> Python, NaN/inf -> None."""
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        v = float(v)
        return v if math.isfinite(v) else None
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


def _clean(obj):
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_clean(v) for v in obj.tolist()]
    return _plain(obj)


def _fmt(v, digits: int = 4) -> str:
    if v is None:
        return "n/a"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "NO"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if not math.isfinite(v):
        return "n/a"
    return f"{v:.{digits}g}"


def _pair(ours, printed: str, ok: bool, digits: int = 4) -> str:
    """'ours / printed', with a trailing '*' when they differ at the printed digits."""
    return f"{_fmt(ours, digits)} / {printed}" + ("" if ok else " *")


def _risk_label(p: float) -> str:
    e = math.log10(p)
    return f"1e{int(round(e))}" if abs(e - round(e)) < 1e-9 else f"{p:g}"


class _Output:
    """Collects the printed text and the HTML report side by side."""

    def __init__(self, report: Report):
        self.report = report
        self.blocks: list[str] = []

    def heading(self, heading: str, paragraph: str) -> None:
        self.blocks.append(f"== {heading} ==\n{paragraph}")
        self.report.text(heading, paragraph)

    def note(self, paragraph: str) -> None:
        self.blocks.append(paragraph)
        self.report.text(None, paragraph)

    def table(self, title: str, headers: list[str], rows: list[list]) -> None:
        self.blocks.append(text_table(title, headers, rows))
        self.report.text(None, title)
        self.report.table([dict(zip(headers, (c if isinstance(c, Flagged) else str(c) for c in r))) for r in rows])

    def text(self) -> str:
        return "\n\n".join(self.blocks) + "\n"


def _axes_figure(panels: dict, xlabel: str, ylabel: str, title: str, logx: bool = False):
    """A grid of panels {panel title: {line label: (x, y)}} (None values are skipped)."""
    n = len(panels)
    cols = 2 if n > 1 else 1
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.0 * cols, 3.8 * rows), squeeze=False)
    for ax, (name, series) in zip(axes.ravel(), panels.items()):
        for label, (x, y) in series.items():
            pts = [(a, b) for a, b in zip(x, y) if b is not None]
            if pts:
                ax.plot(*zip(*pts), marker="o", label=label)
        if logx:
            ax.set_xscale("log")
        ax.set_title(name)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------- tables


def _table2(cmp: _Comparisons, out: _Output, seed: int) -> dict:
    spec = PAPER["table2"]
    k, pi, pbar, cells = 20, 0.5, 0.1, 10**5
    eff = effective_anonymity(k, pi, pbar)
    cmp.add("Table II", "n_min", spec["n_min"], eff.n)
    algo = {"cell_failure": eff.cell_failure, "mean_unprotected": eff.mean_unprotected,
            "record_failure": eff.record_failure}
    res = simulate_cells([np.full(eff.n, pi)] * cells, k, runs=1, random_state=seed)
    sim = {"cell_failure": res.observed_cell_failure, "mean_unprotected": res.observed_mean_unprotected,
           "record_failure": res.observed_record_failure}
    agrees = {"cell_failure": res.cell_failure_agrees, "mean_unprotected": res.mean_unprotected_agrees,
              "record_failure": res.record_failure_agrees}
    names = {"cell_failure": "qbar", "mean_unprotected": "u", "record_failure": "rbar"}
    rows = []
    for key, name in names.items():
        ok = cmp.add("Table II", name, spec["algorithm"][key], algo[key])
        rel = 100.0 * (sim[key] - algo[key]) / algo[key]
        rows.append([name, _pair(algo[key], spec["algorithm"][key], ok), f"{sim[key]:.5g} / {spec['simulation'][key]}",
                     f"{rel:+.2f} / {spec['relative_error_percent'][key]}", _fmt(agrees[key])])
    headers = ["variable", "Algorithm (ours / paper)", "Simulation (ours / paper)", "rel. error % (ours / paper)",
               "Algorithm in our 99% CI"]
    out.heading("Table II", f"Algorithm A against a Monte Carlo simulation of {cells} cells "
                f"(seed {seed}): k = {k}, pbar = {pbar}, pi = {pi}, n_min = {eff.n} (paper: 48). "
                "The simulated columns are random: only the Algorithm column and n_min are compared digit by digit.")
    out.table(f"Table II (k = {k}, pbar = {pbar}, pi = {pi}; n_min ours / paper = {eff.n} / {spec['n_min']})",
              headers, rows)
    return {"k": k, "participation": pi, "risk": pbar, "cells": cells, "n_min": eff.n,
            "algorithm": algo, "simulation": sim, "seed": seed}


def _table3(cmp: _Comparisons, out: _Output) -> list[dict]:
    results, rows = [], []
    keys = ("n_min", "cell_failure", "mean_unprotected", "record_failure", "record_failure_participant")
    for k, pi, pbar, *printed in PAPER["table3"]["rows"]:
        eff = effective_anonymity(k, pi, pbar)
        ours = dict(n_min=eff.n, cell_failure=eff.cell_failure, mean_unprotected=eff.mean_unprotected,
                    record_failure=eff.record_failure, record_failure_participant=eff.record_failure_participant)
        row = [k, pi, _risk_label(pbar)]
        for key, p in zip(keys, printed):
            ok = cmp.add("Table III", f"{key} (k={k}, pi={pi}, pbar={pbar:g})", p, ours[key])
            row.append(_pair(ours[key], p, ok))
        rows.append(row)
        results.append(dict(k=k, participation=pi, risk=pbar, **ours))
    out.heading("Table III", "Effective anonymity n_min and failure metrics (Algorithm A); "
                "each cell is 'ours / paper', '*' marks a difference at the printed digits.")
    out.table("Table III (ours / paper)", ["k", "pi", "pbar", "n_min", "qbar", "u", "rbar", "rbar'"], rows)
    return results


def _table4(cmp: _Comparisons, out: _Output) -> list[dict]:
    pi = PAPER["table4"]["participation"]
    results, rows = [], []
    for k, N, pbar, p_r, p_rp, p_t in PAPER["table4"]["rows"]:
        eff = effective_anonymity(k, pi, pbar)
        tb = table_failure(N, k, pi, pbar)
        row = [k, f"1e{int(round(math.log10(N)))}", _risk_label(pbar)]
        tag = f"(k={k}, N={N}, pbar={pbar:g})"
        for name, p, v in (("rbar", p_r, eff.record_failure), ("rbar'", p_rp, eff.record_failure_participant),
                           ("tbar", p_t, tb)):
            row.append(_pair(v, p, cmp.add("Table IV", f"{name} {tag}", p, v)))
        rows.append(row)
        results.append(dict(k=k, records=N, risk=pbar, participation=pi, n_min=eff.n,
                            cells=N // eff.n, record_failure=eff.record_failure,
                            record_failure_participant=eff.record_failure_participant, table_failure=tb))
    out.heading("Table IV", f"Record and table failure for pi = {pi}: |C| = floor(N / n_min) cells, the last "
                "of size N - (|C| - 1) n_min, tbar = 1 - prod_c q_c.")
    out.table("Table IV (ours / paper)", ["k", "N", "pbar", "rbar", "rbar'", "tbar"], rows)
    return results


# --------------------------------------------------------------------------- Fig. 6


def _exact_cell_failure(n: int, k: int, pi: float) -> Fraction:
    """qbar = sum_{i=1}^{k-1} C(n, i) pi^i (1 - pi)^(n-i), in exact rational arithmetic
    (the binary double pi is an exact rational)."""
    p = Fraction(pi)
    q = 1 - p
    return sum((math.comb(n, i) * p**i * q ** (n - i) for i in range(1, k)), Fraction(0))


def paper_subtraction_form(k: int, pi: float, risk: float, max_records: int = 10**6) -> tuple[int, float]:
    """Algorithm A exactly as printed in the paper, steps 1-7 in double precision:
    P_n(k-1) <- P_{n-1}(k-1) - pi p_{n-1}(k-1), p_n <- pibar p_{n-1} + pi ShiftDown(p_{n-1}),
    qbar <- P_n(k-1) - p_n(0). The subtraction loses all precision once qbar nears the
    rounding error of P_n(k-1) ~ 1e-16; it is here only to reproduce the paper's Fig. 6."""
    p = np.zeros(k)
    p[0] = 1.0
    P = 1.0
    n = 0
    while True:
        n += 1
        P = P - pi * p[k - 1]
        shifted = np.concatenate(([0.0], p[:-1]))
        p = (1.0 - pi) * p + pi * shifted
        q = P - p[0]
        if (n >= k and q <= risk) or n == max_records:
            return n, float(q)


def _fig6(cmp: _Comparisons, out: _Output) -> tuple[dict, object]:
    spec = PAPER["fig6"]
    k, pi = spec["k"], spec["participation"]
    risks = [10.0**-e for e in range(1, 18)]
    rows, res = [], dict(k=k, participation=pi, risk=risks, n_min=[], relative_error_percent=[],
                         paper_form_n_min=[], paper_form_relative_error_percent=[])
    for pbar in risks:
        eff = effective_anonymity(k, pi, pbar)
        ref = _exact_cell_failure(eff.n, k, pi)
        ours = float((Fraction(eff.cell_failure) - ref) / ref) * 100.0
        n_p, q_p = paper_subtraction_form(k, pi, pbar)
        ref_p = _exact_cell_failure(n_p, k, pi)
        paper_form = float((Fraction(q_p) - ref_p) / ref_p) * 100.0
        res["n_min"].append(eff.n)
        res["relative_error_percent"].append(ours)
        res["paper_form_n_min"].append(n_p)
        res["paper_form_relative_error_percent"].append(paper_form)
        rows.append([_risk_label(pbar), eff.n, f"{float(ref):.6g}", f"{ours:+.1e}", n_p, f"{paper_form:+.3g}"])
    errs = res["paper_form_relative_error_percent"]
    worst = int(np.argmax(np.abs(errs)))
    ok = cmp.add("Fig. 6", "max relative error % of qbar (paper's subtraction form)",
                 spec["max_relative_error_percent"], errs[worst])
    res["paper_form_max_relative_error_percent"] = errs[worst]
    res["paper_form_worst_risk"] = risks[worst]
    res["max_abs_relative_error_percent"] = float(np.max(np.abs(res["relative_error_percent"])))
    out.heading("Fig. 6", f"Relative error of qbar at n_min against an exact rational reference "
                f"(k = {k}, pi = {pi}). Our Algorithm A sums the pmf; the paper's subtraction form "
                "P_n(k-1) - p_n(0) is run as printed to reproduce its curve.")
    out.table("Fig. 6 (relative error in %)",
              ["pbar", "n_min", "exact qbar", "ours (pmf sum)", "n_min (paper form)", "paper form"], rows)
    out.note(f"Fig. 6: maximum relative error of the paper's form {errs[worst]:+.4f} % at pbar = "
             f"{_risk_label(risks[worst])} (n_min = {res['paper_form_n_min'][worst]}); paper: "
             f"{spec['max_relative_error_percent']} % -> {'match' if ok else 'DIFFERENT'}. "
             f"Ours: at most {res['max_abs_relative_error_percent']:.1e} % over the whole range.")
    fig = line_figure({"paper's form P_n(k-1) - p_n(0)": (risks, errs),
                       "ours (sum of the pmf)": (risks, res["relative_error_percent"])},
                      "acceptable cell failure pbar", "relative error of qbar [%]",
                      f"Fig. 6: numerical stability (k = {k}, pi = {pi})")
    fig.axes[0].set_xscale("log")
    fig.axes[0].invert_xaxis()
    return res, fig


# --------------------------------------------------------------------------- Fig. 7


def _fig7(cmp: _Comparisons, out: _Output, quick: bool) -> tuple[dict, object]:
    spec = NOTES["fig7"]
    k, pi = spec["k"], spec["participation"]
    step = 0.5 if quick else 0.1
    exps = np.round(np.arange(0.0, 8.0 + 1e-9, step), 6)
    risks = sorted(set([float(10.0**-e) for e in exps] + list(spec["n_min"])), reverse=True)
    n = []
    for pbar in risks:
        # pbar = 1: every cell is acceptable, n_min = min{n >= k} = k (the paper's "trivially")
        n.append(k if pbar >= 1.0 else effective_anonymity(k, pi, pbar).n)
    rows = []
    for pbar, printed in spec["n_min"].items():
        ours = n[risks.index(pbar)]
        ok = cmp.add("Fig. 7", f"n_min (pbar={pbar:g})", printed, ours, origin="notes")
        rows.append([_risk_label(pbar), ours, printed, "yes" if ok else "NO"])
    out.heading("Fig. 7", f"Effective anonymity n_min against pbar (k = {k}, pi = {pi}). The paper only plots "
                "it (pbar from 1, where n_min = k, to 1e-8); the comparison values are NOTES.md's checked ones.")
    out.table("Fig. 7 (k = 50, pi = 0.5)", ["pbar", "n_min ours", "NOTES.md", "match"], rows)
    fig = line_figure({f"k = {k}, pi = {pi}": (risks, n)}, "acceptable cell failure pbar", "n_min",
                      "Fig. 7: effective anonymity against pbar")
    ax = fig.axes[0]
    ax.set_xscale("log")
    ax.invert_xaxis()
    for p, name in ((3.40e-6, "six sigma"), (2.87e-7, "5 sigma (physics)")):
        ax.axvline(p, color="grey", ls="--", lw=0.8)
        ax.text(p, min(n), f" {name}", rotation=90, va="bottom", fontsize=7)
    return {"k": k, "participation": pi, "risk": risks, "n_min": n}, fig


def _sec7c(cmp: _Comparisons, out: _Output) -> dict:
    spec = PAPER["sec7c"]
    one = float(stats.norm.sf(5.0))
    ours = {
        "five_sigma_coverage_percent": 100.0 * (1.0 - 2.0 * one),
        "five_sigma_two_tails_one_in_millions": 1.0 / (2.0 * one) / 1e6,
        "five_sigma_one_tail_one_in_millions": 1.0 / one / 1e6,
        "five_sigma_one_tail": one,
        "six_sigma_defect_rate": float(stats.norm.sf(4.5)),
    }
    rows = []
    for key, v in ours.items():
        ok = cmp.add("Sec. VII.C", key, spec[key], v)
        rows.append([key, f"{v:.10g}", spec[key], "yes" if ok else "NO"])
    nk = {key: effective_anonymity(50, 0.5, ours[key]).n for key in ("five_sigma_one_tail", "six_sigma_defect_rate")}
    out.heading("Sec. VII.C", "Reference probabilities quoted beside Fig. 7 (standard normal tails).")
    out.table("Sec. VII.C text", ["quantity", "ours", "paper", "match"], rows)
    out.note(f"n_min (k = 50, pi = 0.5) at these risks (plot only): six sigma {nk['six_sigma_defect_rate']}, "
             f"five sigma {nk['five_sigma_one_tail']}.")
    return {**ours, "n_min_k50_pi05": nk}


# --------------------------------------------------------------------------- Figs. 8-10


def _figs8_9(cmp: _Comparisons, out: _Output, quick: bool) -> tuple[dict, list]:
    spec = NOTES["fig8"]
    pi, pbar = spec["participation"], spec["risk"]
    ks = sorted(set((list(range(2, 101, 7)) if quick else list(range(2, 101))) + list(spec["values"])))
    avail = [(key, label, _approximation(name)) for key, label, name in _APPROX_K]
    res: dict = {"participation": pi, "risk": pbar, "k": ks, "n_min": []}
    for key, _, _ in avail:
        res[key] = []
    for k in ks:
        res["n_min"].append(effective_anonymity(k, pi, pbar).n)
        for key, _, f in avail:
            res[key].append(float(f(k, pi, pbar)))
    rows = []
    for k, printed in spec["values"].items():
        i = ks.index(k)
        row = [k]
        for key, p in zip(spec["columns"], printed):
            v = res[key][i]
            row.append(_pair(v, p, cmp.add("Figs. 8-9", f"{key} (k={k})", p, v, origin="notes"), digits=6))
        rows.append(row)
    out.heading("Figs. 8-9", f"n_min and its approximations against k (pi = {pi}, pbar = {pbar:g}). The paper only "
                "plots them (plot only); NOTES.md checks k = 10 and 100.")
    out.table("Figs. 8-9 at the NOTES.md points (ours / NOTES.md)",
              ["k", "n_min", "KL equation", "n1'", "n1''", "n2"], rows)
    sample = [k for k in (2, 5, 20, 50) if k in ks]
    if avail:
        rel = [[k] + [f"{100.0 * (res[key][ks.index(k)] - res['n_min'][ks.index(k)]) / res['n_min'][ks.index(k)]:+.2f}"
                      for key, _, _ in avail] for k in sample + [k for k in spec["values"]]]
        out.table("Fig. 9 (plot only): relative error of the approximations in % (ours)",
                  ["k"] + [label for _, label, _ in avail], sorted(rel))
    figs = []
    series = {"n_min (Algorithm A)": (ks, res["n_min"])}
    series.update({label: (ks, res[key]) for key, label, _ in avail if key == "kl"})
    figs.append(("surveys_fig8_nmin_vs_k", line_figure(series, "target anonymity k", "n",
                                                       f"Fig. 8: n_min and the KL approximation (pi = {pi}, pbar = {pbar:g})"),
                 "Fig. 8: n_min (Algorithm A) and the KL-equation approximation against k."))
    if avail:
        rel_series = {label: (ks, [100.0 * (a - b) / b for a, b in zip(res[key], res["n_min"])])
                      for key, label, _ in avail}
        fig = line_figure(rel_series, "target anonymity k", "relative error [%]",
                          f"Fig. 9: relative error of the approximations (pi = {pi}, pbar = {pbar:g})")
        for line in fig.axes[0].lines:
            line.set_marker("")
        fig.axes[0].legend()
        figs.append(("surveys_fig9_relative_error", fig,
                     "Fig. 9: relative error (n~ - n_min) / n_min of the approximations, in %."))
    return res, figs


def _fig10(out: _Output, quick: bool) -> tuple[dict, list, list]:
    k, pi = 2, 0.5
    step = 0.01 if quick else 0.001
    exps = np.round(np.arange(3.0, 7.0 + 1e-9, step), 6)
    risks = [float(10.0**-e) for e in exps]
    avail = [(key, label, _approximation(name)) for key, label, name in _APPROX_K2]
    nm = np.array([effective_anonymity(k, pi, p).n for p in risks])
    res: dict = {"k": k, "participation": pi, "exponent_step": step, "risk_min": risks[-1], "risk_max": risks[0],
                 "points": len(risks)}
    ceil = {key: np.array([math.ceil(f(k, pi, p)) for p in risks]) for key, _, f in avail}
    rows = []
    for key, label, _ in avail:
        c = ceil[key]
        rel = (c - nm) / nm
        res[key] = {"equal": int((c == nm).sum()), "above": int((c > nm).sum()), "below": int((c < nm).sum()),
                    "max_relative_error_percent": float(100 * rel.max()),
                    "min_relative_error_percent": float(100 * rel.min())}
        rows.append([label, res[key]["equal"], res[key]["above"], res[key]["below"],
                     f"{100 * rel.min():+.2f}", f"{100 * rel.max():+.2f}"])
    statements = []
    if "n1" in ceil and "n2" in ceil:
        statements.append(("Fig. 10", "ceil(n~1) is an upper bound of n_min", bool((ceil["n1"] >= nm).all()),
                           f"{res['n1']['below']} of {len(risks)} points below n_min"))
        statements.append(("Fig. 10", "ceil(n~2) is optimistic (never above n_min)", bool((ceil["n2"] <= nm).all()),
                           f"{res['n2']['above']} points above, {res['n2']['below']} below"))
        statements.append(("Fig. 10", "ceil(n~2) equals n_min more often than ceil(n~1)",
                           res["n2"]["equal"] > res["n1"]["equal"],
                           f"{res['n2']['equal']} vs {res['n1']['equal']} of {len(risks)} points"))
    out.heading("Fig. 10", f"Logarithmic approximations for k = 2 (pi = {pi}, assumed: the paper does not state "
                f"it), pbar = 1e-7 ... 1e-3 with exponent step {step} ({len(risks)} points). Plot only: counts of "
                "ceil(n~) against n_min (ours).")
    if rows:
        out.table("Fig. 10 (plot only, ours)", ["approximation", "= n_min", "> n_min", "< n_min",
                                               "min rel. err %", "max rel. err %"], rows)
    figs = []
    plotted = {label: (risks, list(100.0 * (ceil[key] - nm) / nm)) for key, label, _ in avail if key in ("n1", "n2")}
    if plotted:
        fig = line_figure(plotted, "acceptable cell failure pbar", "relative error [%]",
                          f"Fig. 10: ceiling of the k = 2 approximations (pi = {pi})")
        ax = fig.axes[0]
        ax.set_xscale("log")
        for line in ax.lines:
            line.set_marker("")
            line.set_linewidth(0.8)
        ax.legend()
        figs.append(("surveys_fig10_k2", fig, "Fig. 10: relative error of ceil(n~1), ceil(n~2) against n_min, k = 2."))
    return res, figs, statements


def _fig13b(out: _Output) -> tuple[dict, object, list]:
    ks = (2, 3, 5, 10, 20)
    pis = [round(x, 2) for x in np.linspace(0.01, 1.0, 100)]
    res = {"participation": pis}
    worst_ok, max_dev = True, 0.0
    for k in ks:
        q = [cell_failure(k, k, p).cell_failure for p in pis]
        closed = [1.0 - ((1.0 - p) ** k + p**k) for p in pis]
        max_dev = max(max_dev, max(abs(a - b) for a, b in zip(q, closed)))
        res[f"k={k}"] = q
        worst_ok &= pis[int(np.argmax(q))] == 0.5 and abs(max(q) - (1.0 - 2.0 ** (1 - k))) < 1e-12
    res["max_deviation_from_closed_form"] = max_dev
    fig = line_figure({f"k = {k}": (pis, res[f"k={k}"]) for k in ks}, "participation pi", "qbar",
                      "Fig. 13(b): failure of naive cells of n = k records")
    for line in fig.axes[0].lines:
        line.set_marker("")
    fig.axes[0].legend()
    statements = [("Fig. 13(b)", "cells of n = k records fail with qbar = 1 - (pibar^k + pi^k), worst at pi = 1/2 "
                   "with 1 - 2^(1-k)", bool(worst_ok and max_dev < 1e-12),
                   f"Algorithm A vs closed form: max deviation {max_dev:.1e}")]
    out.heading("Fig. 13(b)", "Naive microaggregation with cells of k records: qbar = 1 - (pibar^k + pi^k) "
                "(plot only).")
    return res, fig, statements


# --------------------------------------------------------------------------- distortion


def _datasets(data_dir, quick: bool, seed: int, notes: list) -> dict:
    rng = np.random.default_rng(seed)
    N = 2000 if quick else 10**4
    data = {f"Gaussian m = {m}": rng.standard_normal((N, m)) for m in (2, 5, 10)}
    explicit = data_dir is not None
    path = reference_file(data_dir, "census")
    if path.is_file():
        data["CASC census"] = read_table(path).to_numpy(dtype=np.float64)
    elif explicit:
        raise InputError(f"{path}: no such file (--data-dir must contain casc/census.csv)")
    else:
        notes.append(f"CASC census not found at {path}: census distortion skipped.")
    return data


class _Distortion:
    """D of design(X, k, pi, pbar), computed once per (dataset, MDAV cell size)."""

    def __init__(self, data: dict):
        self.data = data
        self.cache: dict = {}
        self.designs = 0

    def __call__(self, name: str, k: int, pi: float, pbar: float):
        X = self.data[name]
        try:
            size = safe_cell_size(k, pi, pbar, X.shape[0])
        except DesignError:
            return None, None
        key = (name, size)
        if key not in self.cache:
            try:
                self.cache[key] = design(X, k, pi, pbar).distortion
                self.designs += 1
            except DesignError:
                self.cache[key] = None
        return self.cache[key], size


def _grids(quick: bool) -> dict:
    if quick:
        return dict(k=[2, 5, 20], participation=[1.0, 0.75, 0.5, 0.25], risk=[1e-1, 1e-3, 1e-5, 1e-7, 1e-9],
                    k_lines_pi=[2, 20], k_lines_risk=[2, 20], pi_lines_k=[1.0, 0.75, 0.5, 0.25])
    return dict(k=[2, 3, 5, 7, 10, 15, 20, 30, 50], participation=[1.0, 0.95, 0.9, 0.75, 0.6, 0.5, 0.4, 0.25, 0.1],
                risk=[10.0**-e for e in range(1, 10)], k_lines_pi=[2, 5, 10, 20, 50], k_lines_risk=[2, 10, 50],
                pi_lines_k=[1.0, 0.9, 0.75, 0.5, 0.25])


def _distortion(out: _Output, data: dict, quick: bool, work) -> tuple[dict, list, list]:
    g = _grids(quick)
    pbar0, pi_r = 1e-5, 0.5
    D = _Distortion(data)
    res: dict = {"risk_for_k_pi_grid": pbar0, "participation_for_risk_grid": pi_r, "grids": g,
                 "datasets": {n: {"records": int(X.shape[0]), "columns": int(X.shape[1])} for n, X in data.items()},
                 "k_pi": {}, "risk": {}}
    for name in data:
        grid = [[None] * len(g["participation"]) for _ in g["k"]]
        sizes = [[None] * len(g["participation"]) for _ in g["k"]]
        for i, k in enumerate(g["k"]):
            for j, pi in enumerate(g["participation"]):
                grid[i][j], sizes[i][j] = D(name, k, pi, pbar0)
                work.update()
        rgrid = [[None] * len(g["risk"]) for _ in g["k_lines_risk"]]
        rsizes = [[None] * len(g["risk"]) for _ in g["k_lines_risk"]]
        for i, k in enumerate(g["k_lines_risk"]):
            for j, p in enumerate(g["risk"]):
                rgrid[i][j], rsizes[i][j] = D(name, k, pi_r, p)
                work.update()
        res["k_pi"][name] = {"k": g["k"], "participation": g["participation"], "D": grid, "cell_size": sizes}
        res["risk"][name] = {"k": g["k_lines_risk"], "risk": g["risk"], "D": rgrid, "cell_size": rsizes}
    res["designs_computed"] = D.designs

    out.heading("Figs. 11-12: distortion", "D = SSE/SST of design(...) (MDAV with cells of n_min records, constant "
                "pi) on z-scored data. The paper only plots these (plot only): our values. Datasets: "
                + "; ".join(f"{n} ({v['records']} records, {v['columns']} columns)" for n, v in res["datasets"].items())
                + f". Designs with the same cell size are computed once ({D.designs} designs).")
    rows = []
    for name in data:
        for i, k in enumerate(g["k"]):
            rows.append([name, k] + [_fmt(v, 4) for v in res["k_pi"][name]["D"][i]])
    out.table(f"D against k and pi (pbar = {pbar0:g}); n/a = more than the whole dataset per cell",
              ["dataset", "k"] + [f"pi={p:g}" for p in g["participation"]], rows)
    rows = []
    for name in data:
        for i, k in enumerate(g["k_lines_risk"]):
            rows.append([name, k] + [_fmt(v, 4) for v in res["risk"][name]["D"][i]])
    out.table(f"D against pbar (pi = {pi_r:g})", ["dataset", "k"] + [_risk_label(p) for p in g["risk"]], rows)
    size_rows = [[k] + [_fmt(s) for s in res["k_pi"][next(iter(data))]["cell_size"][i]] for i, k in enumerate(g["k"])]
    out.table(f"MDAV cell size (n_min) against k and pi (pbar = {pbar0:g}, {next(iter(data))})",
              ["k"] + [f"pi={p:g}" for p in g["participation"]], size_rows)

    figs = []
    kp = res["k_pi"]
    panels = {name: {f"pi = {pi:g}": (g["k"], [kp[name]["D"][i][g["participation"].index(pi)]
                                                for i in range(len(g["k"]))]) for pi in g["pi_lines_k"]}
              for name in data}
    figs.append(("surveys_D_vs_k", _axes_figure(panels, "target anonymity k", "D",
                                                f"Figs. 11-12: distortion against k (pbar = {pbar0:g})"),
                 "Distortion D against k for several participations pi."))
    panels = {name: {f"k = {k}": (g["participation"], kp[name]["D"][g["k"].index(k)]) for k in g["k_lines_pi"]}
              for name in data}
    figs.append(("surveys_D_vs_pi", _axes_figure(panels, "participation pi", "D",
                                                 f"Figs. 11-12: distortion against pi (pbar = {pbar0:g})"),
                 "Distortion D against the participation pi for several k."))
    panels = {name: {f"k = {k}": (g["risk"], res["risk"][name]["D"][i]) for i, k in enumerate(g["k_lines_risk"])}
              for name in data}
    fig = _axes_figure(panels, "acceptable cell failure pbar", "D",
                       f"Figs. 11-12: distortion against pbar (pi = {pi_r:g})", logx=True)
    for ax in fig.axes:
        ax.invert_xaxis()
    figs.append(("surveys_D_vs_pbar", fig, "Distortion D against the acceptable cell failure pbar."))

    # statements of Sec. VII.E and Fig. 13(a)
    statements = []
    pis = g["participation"]
    order = np.argsort(pis)[::-1]  # pi decreasing
    for group in ("Gaussian", "CASC census"):
        names = [n for n in data if n.startswith(group)]
        if not names:
            continue
        bad = []
        for name in names:
            for i, k in enumerate(g["k"]):
                ds = [(pis[j], kp[name]["D"][i][j]) for j in order if kp[name]["D"][i][j] is not None]
                bad += [f"{name}, k = {k}: pi {a[0]:g} -> {b[0]:g}: D {a[1]:.4g} -> {b[1]:.4g}"
                        for a, b in zip(ds, ds[1:]) if b[1] < a[1] - 1e-12]
        statements.append(("Sec. VII.E", f"D increases as the participation pi decreases ({group} data)", not bad,
                           "every dataset and k" if not bad else "not for " + "; ".join(bad)))
    sens = []
    for name in data:
        rk = res["risk"][name]
        i = rk["k"].index(10) if 10 in rk["k"] else 0
        d = [v for v in rk["D"][i] if v is not None]
        j1 = g["participation"].index(1.0)
        jl = len(pis) - 1
        ik = g["k"].index(rk["k"][i])
        d_pi = (kp[name]["D"][ik][jl], kp[name]["D"][ik][j1])
        if len(d) >= 2 and None not in d_pi:
            sens.append(f"{name}, k = {rk['k'][i]}: D(pbar={_risk_label(g['risk'][-1])}) / D(pbar="
                        f"{_risk_label(g['risk'][0])}) = {d[-1] / d[0]:.3f} vs D(pi={pis[jl]:g}) / D(pi=1) = "
                        f"{d_pi[0] / d_pi[1]:.3f}")
    res["sensitivity"] = sens
    out.note("Sec. VII.E (D barely grows as pbar falls, much more as pi falls): " + "; ".join(sens) + ".")

    # Fig. 13(a): D(pi = .75, pbar = 1e-5) / D(pi = 1) against k, Gaussian m = 2, 5, 10
    if 0.75 in pis and 1.0 in pis:
        j75, j1 = pis.index(0.75), pis.index(1.0)
        ratio = {}
        for name in data:
            if name.startswith("Gaussian"):
                ratio[name] = [None if kp[name]["D"][i][j75] is None else kp[name]["D"][i][j75] / kp[name]["D"][i][j1]
                               for i in range(len(g["k"]))]
        res["fig13a_ratio"] = {"k": g["k"], **ratio}
        out.table("Fig. 13(a) (plot only): D(pi = 0.75, pbar = 1e-5) / D(pi = 1)", ["k"] + list(ratio),
                  [[k] + [_fmt(ratio[n][i], 4) for n in ratio] for i, k in enumerate(g["k"])])
        fig = line_figure({n.replace("Gaussian ", ""): (g["k"], r) for n, r in ratio.items()}, "target anonymity k",
                          "D(pi = 0.75) / D(pi = 1)", "Fig. 13(a): relative distortion, Gaussian data")
        figs.append(("surveys_fig13a_ratio", fig, "Fig. 13(a): D(pi = 0.75, pbar = 1e-5) relative to D(pi = 1)."))
        names = list(ratio)
        dec_k = all(all(b <= a + 1e-12 for a, b in zip(r, r[1:])) for r in ratio.values())
        dec_m = all(all(ratio[b][i] <= ratio[a][i] + 1e-12 for a, b in zip(names, names[1:]))
                    for i in range(len(g["k"])))
        statements.append(("Fig. 13(a)", "the relative increment D(.75)/D(1) falls as k increases", dec_k,
                           "for every m" if dec_k else "not monotone for every m (see table)"))
        statements.append(("Fig. 13(a)", "the relative increment D(.75)/D(1) falls as m increases", dec_m,
                           "at every k" if dec_m else "not at every k (see table)"))
    return res, figs, statements


# --------------------------------------------------------------------------- price of trust (issue 18.4)

#: the designs compared: paper 1's MDAV (ordered balls), PCL cells (power diagram), the tree of questions
TRUST_MODES = ("mdav", "pcl", "tree")


def worst_cell_failure(labels, k: int, participation) -> float:
    """Largest failure qbar = P{0 < K < k} over the cells of ``labels``, each recomputed with
    Algorithm A (:func:`~probanon.survey.anonymity.cell_failure`) from its own members' pi_j
    (``participation``: one pi_j per record), independently of the design's own check."""
    labels, pis = np.asarray(labels), np.asarray(participation, dtype=np.float64)
    return max(cell_failure(int(members.sum()), k, pis[members]).cell_failure
               for members in (labels == c for c in np.unique(labels)))


def _price_of_trust(out: _Output, data: dict, quick: bool, seed: int) -> tuple[dict, object]:
    """Issue 18.4: D of the MDAV, PCL and tree designs (:func:`~probanon.survey.design.design`,
    ``method``) at the same (k, pi, pbar), for constant pi and for per-record pi_j ~ U[.3, .9]."""
    rng = np.random.default_rng(seed)
    N = 1000 if quick else 2000
    sets = {name: X for name, X in data.items() if name == "CASC census"}
    sets.update({f"Gaussian m = {m}": rng.standard_normal((N, m)) for m in (2, 10)})
    k, pi, pbar, low, high = 5, 0.6, 1e-3, 0.3, 0.9
    settings = {f"k = {k}, pi = {pi:g}": pi, f"k = {k}, pi_j ~ U[{low:g}, {high:g}]": None}
    res: dict = {"k": k, "risk": pbar, "participation": pi, "per_record": [low, high], "modes": list(TRUST_MODES),
                 "rows": []}
    rows = []
    for name, X in sets.items():
        for setting, p in settings.items():
            pis = np.full(X.shape[0], p) if p is not None else rng.uniform(low, high, X.shape[0])
            row = {"data": name, "setting": setting, "records": int(X.shape[0]), "columns": int(X.shape[1])}
            for mode in TRUST_MODES:
                d = design(X, k, p if p is not None else pis, pbar, method=mode, random_state=seed)
                worst = worst_cell_failure(d.labels, k, pis)
                row[mode] = {"D": d.distortion, "cells": int(d.sizes.size), "worst_cell_failure": worst,
                             "sizes": d.sizes.tolist(), "safe": bool(worst <= pbar)}
            row["safe"] = all(row[m]["safe"] for m in TRUST_MODES)
            res["rows"].append(row)
            D = [row[m]["D"] for m in TRUST_MODES]
            rows.append([name, setting, *[_fmt(v, 4) for v in D], f"{D[1] / D[0]:.3f}", f"{D[2] / D[0]:.3f}",
                         _fmt(row["safe"])])
    out.heading("The price of trust (issue 18)",
                "Distortion D of the three survey designs at the same (k, pi, pbar = "
                f"{pbar:g}): MDAV (paper 1: locally trusted respondents, ordered balls), PCL (locally trusted, "
                "power diagram) and the tree of single-key questions (untrusted respondents: a cell found by "
                "hand). Data: " + "; ".join(f"{n} ({X.shape[0]} records, {X.shape[1]} columns)" for n, X in sets.items())
                + " (the census with all its columns, as in Figs. 11-12; the Gaussians seeded with "
                f"{seed}); per-record pi_j drawn from U[{low:g}, {high:g}] with the same seed. "
                "'every cell safe': every cell's failure recomputed with Algorithm A from the design's labels "
                "and the pi_j (not from the design's own check) is <= pbar, for all three designs.")
    out.table(f"The price of trust: D of the MDAV, PCL and tree designs (pbar = {pbar:g})",
              ["data", "setting", "D(MDAV)", "D(PCL)", "D(tree)", "PCL/MDAV", "tree/MDAV", "every cell safe"], rows)

    fig, axes = plt.subplots(1, len(sets), figsize=(4.6 * len(sets), 3.8), squeeze=False)
    width = 0.8 / len(TRUST_MODES)
    for ax, name in zip(axes[0], sets):
        mine = [r for r in res["rows"] if r["data"] == name]
        x = np.arange(len(mine))
        for i, mode in enumerate(TRUST_MODES):
            ax.bar(x + (i - 1) * width, [r[mode]["D"] for r in mine], width, label=METHODS[mode])
        ax.set_xticks(x, [r["setting"].split(", ", 1)[1] for r in mine])
        ax.set_title(f"{name} ({sets[name].shape[0]} records)", fontsize=10)
        ax.set_ylabel("D")
        ax.grid(True, axis="y", alpha=0.3)
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="lower center", ncol=len(TRUST_MODES), fontsize=9)
    fig.suptitle(f"The price of trust: D per design (k = {k}, pbar = {pbar:g})")
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return res, fig


# --------------------------------------------------------------------------- output


def _finish(output_dir: Path, report: Report, out, results: dict, figures, stem: str,
            extra: dict | None = None) -> dict:
    """Common end of a reproduction: list the files in ``results``, clean it for JSON, write
    everything (:func:`_write`) and return it with the printed ``"text"``."""
    extra = extra or {}
    results["files"] = sorted([f"{stem}.html", f"{stem}.txt", f"{stem}.json", *extra]
                              + [f"{n}.png" for n, _, _ in figures])
    results = _clean(results)
    text = out.text()
    _write(output_dir, report, text, results, stem=stem, extra=extra)
    results["text"] = text  # the printed comparison; the CLI prints it, the library stays quiet
    return results


def _write(output_dir: Path, report: Report, text: str, results: dict, stem: str = "surveys",
           extra: dict | None = None) -> None:
    """Write the PNGs, <stem>.html, <stem>.txt, <stem>.json and the ``extra`` files
    ({name: bytes}), each by rename."""
    output_dir.mkdir(parents=True, exist_ok=True)
    extra = extra or {}
    with tempfile.TemporaryDirectory(dir=output_dir, prefix=f".{stem}-") as tmp:
        tmp = Path(tmp)
        report.write(tmp)
        (tmp / f"{stem}.txt").write_text(text)
        (tmp / f"{stem}.json").write_text(json.dumps(results, indent=1, allow_nan=False))
        for name, data in extra.items():
            (tmp / name).write_bytes(data)
        os.replace(tmp / "index.html", output_dir / f"{stem}.html")
        for name in [f"{stem}.txt", f"{stem}.json", *extra] + [f"{n}.png" for n in report.figures]:
            os.replace(tmp / name, output_dir / name)
        shutil.rmtree(tmp, ignore_errors=True)


def reproduce_surveys(output_dir="report", data_dir=None, quick: bool = False, progress=None,
                      random_state: int = SEED) -> dict:
    """Recompute Sec. VII of paper 1 and print it beside the paper's values.

    Prints every table (ours / paper), writes the figures (``surveys_*.png``), the HTML page
    ``surveys.html``, the printed text ``surveys.txt`` and the numbers ``surveys.json`` into
    ``output_dir``, and returns the numbers (JSON-serialisable). ``data_dir`` holds
    ``casc/census.csv`` (default: the packaged data sets, :mod:`probanon.datasets`). ``quick`` uses
    2000 Gaussian records and coarser grids; ``progress``: None or a callback ``progress(part, step, steps)`` (:mod:`probanon.progress`; the parts "steps", "distortion", "price of trust");
    ``random_state`` seeds the simulation and the Gaussian data.
    """
    start = time.perf_counter()
    output_dir = Path(output_dir)
    notes: list[str] = []
    data = _datasets(data_dir, quick, random_state, notes)
    g = _grids(quick)
    steps = 10 + len(data) * (len(g["k"]) * len(g["participation"]) + len(g["k_lines_risk"]) * len(g["risk"]))
    report = Report("Paper 1, Sec. VII: p-probabilistic k-anonymous microaggregation for surveys (ours beside the paper)")
    out = _Output(report)
    cmp = _Comparisons()
    results: dict = {"quick": quick, "random_state": random_state}
    figures: list = []
    statements: list = []
    work = Steps(progress, steps)
    results["table2"] = _table2(cmp, out, random_state)
    work.update()
    results["table3"] = _table3(cmp, out)
    work.update()
    results["table4"] = _table4(cmp, out)
    work.update()
    results["fig6"], fig6 = _fig6(cmp, out)
    figures.append(("surveys_fig6_stability", fig6, "Fig. 6: relative error of qbar against an exact reference."))
    work.update()
    results["fig7"], fig7 = _fig7(cmp, out, quick)
    figures.append(("surveys_fig7_nmin", fig7, "Fig. 7: effective anonymity n_min against pbar (k = 50, pi = 0.5)."))
    results["sec7c"] = _sec7c(cmp, out)
    work.update()
    results["fig8_9"], figs = _figs8_9(cmp, out, quick)
    figures += figs
    work.update()
    results["fig10"], figs, st = _fig10(out, quick)
    figures += figs
    statements += st
    work.update()
    results["fig13b"], fig, st = _fig13b(out)
    figures.append(("surveys_fig13b_naive_failure", fig, "Fig. 13(b): failure of naive cells of k records."))
    statements += st
    work.update()
    work.begin("distortion")
    results["distortion"], figs, st = _distortion(out, data, quick, work)
    figures += figs
    statements += st
    work.update()
    work.begin("price of trust")
    results["price_of_trust"], fig = _price_of_trust(out, data, quick, random_state)
    figures.append(("surveys_price_of_trust", fig, "The price of trust: D of the MDAV, PCL and tree designs."))
    work.update()

    f6 = results["fig6"]
    statements.insert(0, ("Fig. 6", "Algorithm A is accurate down to pbar = 1e-17 (ours: pmf sum)",
                          f6["max_abs_relative_error_percent"] < 1e-9,
                          f"max |relative error| {f6['max_abs_relative_error_percent']:.1e} %"))
    bounded = all(r["record_failure"] <= r["participation"] * r["risk"] and r["record_failure_participant"] <= r["risk"]
                  for r in results["table3"])
    statements.insert(1, ("Sec. VII.B", "rbar <= pi pbar and rbar' <= pbar (Table III)", bounded, "all 12 rows"))

    paper_counts = cmp.counts("paper")
    notes_counts = cmp.counts("notes")
    out.heading("Figures", "Figures follow (PNG files beside this page).")
    for name, fig, caption in figures:
        report.figure(name, fig, caption)
    out.table("Statements of the text", ["source", "statement", "holds", "detail"],
              [[s, t, "yes" if h else "NO", d] for s, t, h, d in statements])
    for n in notes:
        out.note(n)
    summary_lines = [f"{grp}: {m}/{t} printed values match" for grp, (m, t) in paper_counts.items()]
    summary_lines += [f"{grp}: {m}/{t} NOTES.md values match" for grp, (m, t) in notes_counts.items()]
    pm = sum(m for m, _ in paper_counts.values())
    pt = sum(t for _, t in paper_counts.values())
    nm = sum(m for m, _ in notes_counts.values())
    nt = sum(t for _, t in notes_counts.values())
    elapsed = time.perf_counter() - start
    summary_lines.append(f"Statements of the text that hold: {sum(h for _, _, h, _ in statements)}/{len(statements)}")
    summary_lines.append(f"Printed values matching to the printed digits: {pm} of {pt} "
                         f"(plus {nm} of {nt} NOTES.md checked values of plotted figures); {elapsed:.1f} s")
    out.heading("Summary", "\n".join(summary_lines))

    results.update({
        "comparisons": cmp.records,
        "statements": [dict(source=s, statement=t, holds=h, detail=d) for s, t, h, d in statements],
        "summary": {"paper": paper_counts, "notes": notes_counts, "matched": pm, "printed": pt,
                    "notes_matched": nm, "notes_total": nt},
        "notes": notes,
        "runtime_seconds": elapsed,
    })
    return _finish(output_dir, report, out, results, figures, "surveys")

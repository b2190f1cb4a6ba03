"""Reproduction of Sec. V of paper 2 (probabilistic k-anonymity by microaggregation and
swapping): our values beside the paper's.

======================  ===================================================================
Table VI                Pearson correlations of the CASC census (1080 records, 13 columns),
                        rows A1..A13 against the confidential A7..A13 (upper triangle)
Table VII               MDAV-ID, k = 12 (deterministic): correlations after MDAV on all 13
                        attributes and group means
Tables VIII, IX         MDAV-SWAP (informed intruders) and IR-SWAP, k = 12: one seeded run
                        each (the paper's are single runs too, so only close, not equal)
Tables X, XI            mean and sd of |r'_ij - r_ij| over the pairs with a confidential
                        attribute, pooled over 100 runs, k = 5 .. 300: census and EIA
Attacks (ours)          success of every intruder of :func:`probanon.attacks.attack` against
                        MDAV-ID, MDAV-SWAP (uninformed and informed) and IR-SWAP at k = 3, 5,
                        10, census and EIA, with and without the columns the pre-release audit
                        flags, beside the claimed bound 1/k (not in the paper: issue 14)
======================  ===================================================================

Roles. Census (Sec. V.A): A1..A6 (AFNLWGT .. STATETAX) non-confidential quasi-identifiers,
A7..A13 (TAXINC .. ERNVAL) confidential. EIA (Sec. V.B): the paper gives no roles. We use its
10 continuous columns (UTILITYID, UTILNAME, STATE, YEAR, MONTH dropped) and compared two
choices, the five ``*REVENUE`` columns confidential or the five ``*SALES`` columns
confidential, by the mean |log(ours / paper)| of the 27 Table XI means (full run, seed 2016):
0.194 against 0.203 (sds: 0.140 against 0.224), so the REVENUE columns are confidential
(:data:`EIA_CHOICE`). Every run recomputes the other choice and prints its summary, so the
choice stays visible.

MDAV runs on RAW values (``standardize=False``), as in the paper's experiments: this
reproduces Table VII (see :mod:`probanon.swapping.groups`); on z-scores a cell is off by more
than 0.2. MDAV-SWAP is the informed-intruder variant (one MDAV partition per confidential
attribute, on all the other attributes; NOTES.md Sec. 2); IR-SWAP sorts each confidential
attribute by decreasing value, the remainder joining the last block (the smallest values).

Attacks. The intruders know every target's original keys (the roles above), the release and
the mechanism, and link each target to a released row; a cell pools one run on each of
``attack_releases`` independent releases (fresh permutations and record order), so its
Clopper-Pearson interval counts independent trials (runs on one release would repeat the
same links of a deterministic intruder). The census audit finds PTOTVAL = PEARNVAL + POTHVAL
on every row (a key determined by confidential columns); the "without" rows release the data
with PTOTVAL dropped. The EIA audit (REVENUE confidential) finds nothing.

A printed value "matches" when ours rounded half-up to its last printed digit equals it
(:func:`~probanon.reproduce.surveys.matches`). Tables VI and VII drop trailing zeros (".2"
is .20), so such cells are checked at one decimal only; the count of cells within 0.005 of
the printed value is given beside. The A9-A12 ".70" of Table VI is a typo for .070
(NOTES.md Sec. 2): it is shown as printed and checked as .070.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..datasets import reference_file
from ..progress import Steps
from .._validation import check_random_state
from ..attacks import GUARANTEES, attack
from ..attacks.audit import audit
from ..attacks.setting import MECHANISMS
from ..data import quasi_identifiers, read_table
from ..errors import InputError
from ..metrics.risk import reidentification_result
from ..release import record_order
from ..report import FLAG_MARK, Report, flag
from ..swapping import correlation_difference_runs, ir_swap, mdav_id, mdav_swap_informed, pearson_correlations, swap
from .surveys import _axes_figure, _finish, _fmt, _Output, matches

SEED = 2016  # the CLI's default --seed

CENSUS_CONFIDENTIAL = tuple(range(6, 13))  # A7..A13
EIA_COLUMNS = ["RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES", "INDREVENUE", "INDSALES", "OTHREVENUE",
               "OTHRSALES", "TOTREVENUE", "TOTSALES"]
#: EIA role choices: name -> confidential columns (the paper does not give them).
EIA_ROLES = {"revenue": tuple(c for c in EIA_COLUMNS if c.endswith("REVENUE")),
             "sales": tuple(c for c in EIA_COLUMNS if c.endswith("SALES"))}
EIA_CHOICE = "revenue"  # see the module docstring

METHODS = ("mdav-id", "mdav-swap-informed", "ir-swap")
LABELS = {"mdav-id": "MDAV-ID", "mdav-swap-informed": "MDAV-SWAP", "ir-swap": "IR-SWAP"}
K_SINGLE = 12  # Tables VII-IX
TYPO = (8, 11)  # Table VI, row A9, column A12: printed ".70", read ".070" (NOTES.md Sec. 2)
TYPO_READ = ".070"
#: Cells we read as misprints (not in NOTES.md, so they are compared as printed and the
#: summary is also given without them): table -> (row, column). Table IX prints A6-A8 as -.12
#: although the original (Table VI) is .13 and IR-SWAP at k = 12 moves the paper's other
#: cells by at most 0.03 (A3-A8 just above is -.12: probably a copy slip).
SUSPECT = {"table9": (5, 7)}
NEAR = 0.005  # "within half a unit of the second decimal"
WITHIN = 0.3  # Tables X/XI: our mean within 30 % of the paper's


def _upper(text: str) -> dict:
    """Rows A1..A13 of a triangular table (columns A7..A13, row i printing its last
    min(7, 13 - i) columns) -> {(row, column): printed string}, 0-based positions."""
    cells = {}
    for i, line in enumerate(text.strip().splitlines()):
        values = line.split()
        for jj, v in enumerate(values):
            cells[(i, 13 - len(values) + jj)] = v
    return cells


def _runs_table(text: str) -> dict:
    """Rows 'k mean sd mean sd mean sd' -> {method: {k: (mean, sd)}} as printed."""
    out: dict = {m: {} for m in METHODS}
    for line in text.strip().splitlines():
        k, *values = line.split()
        for t, m in enumerate(METHODS):
            out[m][int(k)] = (values[2 * t], values[2 * t + 1])
    return out


#: Values printed in the paper (as printed, so the number of digits is kept).
PAPER = {
    "table6": {"source": "Table VI (original census)", "cells": _upper("""
.0038 -.027 -.024 .031 .032 .039 .036
.98 .14 .2 .73 .71 .72 .7
.44 -.12 -.058 .56 .55 .56 .55
.98 .2 .28 .73 .69 .71 .69
.78 .27 .27 .9 .85 .88 .86
.79 .13 .22 .59 .57 .57 .56
1 .17 .23 .72 .7 .71 .69
1 .45 -.17 -.19 -.17 -.17
1 .072 .061 .70 .075
1 .96 .98 .96
1 .91 .89
1 .97
1
""")},
    "table7": {"source": "Table VII (MDAV-ID, k = 12, census)", "cells": _upper("""
-.0035 -.035 -.055 .034 .035 .042 .04
1 .18 .39 .8 .81 .8 .78
.79 -.17 .084 .89 .9 .89 .89
.99 .23 .45 .82 .8 .81 .8
.86 .18 .4 .94 .92 .94 .93
.95 .2 .43 .77 .76 .76 .75
1 .2 .41 .8 .8 .79 .78
1 .68 -.15 -.18 -.15 -.16
1 .18 .14 .17 .16
1 .98 1 .99
1 .97 .97
1 1
1
""")},
    "table8": {"source": "Table VIII (MDAV-SWAP, k = 12, census, one run)", "cells": _upper("""
-.0011 -.028 -.034 .032 .033 .036 .032
.81 .089 .17 .69 .67 .69 .67
.42 -.020 .091 .48 .47 .48 .43
.77 .093 .18 .68 .65 .68 .67
.72 .086 .16 .80 .76 .79 .77
.64 .086 .14 .54 .52 .54 .52
1 .12 .17 .69 .67 .66 .65
1 .19 -.013 -.022 -.042 -.011
1 .11 .10 .10 .13
1 .76 .81 .87
1 .72 .70
1 .77
1
""")},
    "table9": {"source": "Table IX (IR-SWAP, k = 12, census, one run)", "cells": _upper("""
.0041 -.017 -.018 .031 .038 .039 .038
.98 .13 .20 .73 .71 .72 .70
.44 -.12 -.041 .56 .55 .56 .55
.98 .19 .27 .73 .68 .71 .69
.78 .26 .26 .90 .85 .88 .86
.79 -.12 .21 .59 .57 .57 .56
1 .16 .23 .72 .69 .71 .69
1 .42 -.17 -.19 -.17 -.17
1 .077 .063 .075 .080
1 .95 .98 .96
1 .91 .89
1 .97
1
""")},
    "table10": {"source": "Table X (census, 100 runs)", "values": _runs_table("""
5 .055 .064 .037 .045 .0021 .0041
7 .062 .071 .048 .056 .0022 .0039
9 .069 .078 .055 .064 .0028 .0049
11 .078 .085 .061 .070 .0038 .0068
25 .11 .11 .091 .093 .0061 .012
50 .14 .13 .13 .12 .010 .020
100 .17 .15 .19 .17 .020 .030
200 .29 .27 .31 .28 .044 .047
300 .38 .39 .37 .34 .087 .071
""")},
    "table11": {"source": "Table XI (EIA, 100 runs)", "values": _runs_table("""
5 .018 .017 .017 .035 .00064 .00075
7 .02 .017 .024 .05 .0012 .0018
9 .034 .031 .028 .053 .0015 .0018
11 .039 .036 .029 .052 .0019 .0023
25 .085 .078 .043 .081 .0063 .0072
50 .13 .12 .053 .089 .011 .011
100 .15 .14 .058 .092 .029 .037
200 .19 .18 .09 .11 .093 .074
300 .2 .18 .12 .13 .14 .091
""")},
}

PAPER_K = (5, 7, 9, 11, 25, 50, 100, 200, 300)


#: The attack table (issue 14): mechanisms (both MDAV-SWAP variants), k, and the level of the
#: Clopper-Pearson intervals.
ATTACK_METHODS = ("mdav-id", "mdav-swap", "mdav-swap-informed", "ir-swap")
ATTACK_LABELS = {"mdav-id": "MDAV-ID", "mdav-swap": "MDAV-SWAP (uninformed)",
                 "mdav-swap-informed": "MDAV-SWAP (informed)", "ir-swap": "IR-SWAP"}
ATTACK_K = (3, 5, 10)
ATTACK_CONFIDENCE = 0.99


def _settings(quick: bool) -> dict:
    """Tables X-XI: the k and runs; the attack table: ``releases`` per cell (the intervals pool
    one intruder run on each of that many independent releases)."""
    if quick:
        return dict(k=[5, 25, 100], runs=20, attack_releases=1)
    return dict(k=list(PAPER_K), runs=100, attack_releases=10)


# --------------------------------------------------------------------------- data


def _data(data_dir, notes: list) -> tuple[np.ndarray, list, np.ndarray | None]:
    """Census matrix and column names, EIA matrix (EIA_COLUMNS) or None. The census is
    required; EIA is skipped with a note when absent from the default location."""
    explicit = data_dir is not None
    census = reference_file(data_dir, "census")
    if not census.is_file():
        hint = "--data-dir must contain casc/census.csv" if explicit else "pass --data-dir"
        raise InputError(f"{census}: no such file ({hint})")
    C, names = quasi_identifiers(read_table(census))
    if C.shape[1] != 13:
        raise InputError(f"{census}: expected the 13 CASC census columns, found {C.shape[1]}")
    eia = reference_file(data_dir, "eia")
    if not eia.is_file():
        if explicit:
            raise InputError(f"{eia}: no such file (--data-dir must contain casc/eia.csv)")
        notes.append(f"CASC EIA not found at {eia}: Table XI skipped.")
        return C, names, None
    E, _ = quasi_identifiers(read_table(eia), EIA_COLUMNS)
    return C, names, E


# --------------------------------------------------------------------------- Tables VI-IX


def _cell_text(ours: float, printed: str, ok: bool, typo: bool = False) -> str:
    s = f"{_fmt(ours, 3)} / {printed}"
    if typo:
        return s + f" (typo: {TYPO_READ})" + ("" if ok else " *")
    return s + ("" if ok else " *")


def _compare_cells(r: np.ndarray, printed: dict, typo=None) -> dict:
    """Our correlations ``r`` beside the printed cells: per cell ours, printed, match at the
    printed digits; counts, cells within NEAR, mean and max |ours - paper| off the diagonal."""
    cells = []
    for (i, j), p in printed.items():
        read = TYPO_READ if (i, j) == typo else p
        cells.append(dict(row=f"A{i + 1}", column=f"A{j + 1}", i=i, j=j, paper=p, paper_read=read,
                          ours=float(r[i, j]), match=matches(read, r[i, j]),
                          abs_diff=abs(float(r[i, j]) - float(read)), typo=(i, j) == typo))
    off = [c for c in cells if c["i"] != c["j"]]
    worst = max(off, key=lambda c: c["abs_diff"])
    return dict(cells=cells, matched=sum(c["match"] for c in cells), compared=len(cells),
                within_near=sum(c["abs_diff"] <= NEAR + 1e-12 for c in cells),
                mean_abs_diff=float(np.mean([c["abs_diff"] for c in off])), max_abs_diff=worst["abs_diff"],
                worst_cell=f"{worst['row']}-{worst['column']}")


def _correlation_rows(res: dict) -> list:
    by = {(c["i"], c["j"]): c for c in res["cells"]}
    rows = []
    for i in range(13):
        row = [f"A{i + 1}"]
        for j in range(6, 13):
            c = by.get((i, j))
            row.append("" if c is None else _cell_text(c["ours"], c["paper"], c["match"], c["typo"]))
        rows.append(row)
    return rows


def _paper_matrix(printed: dict, typo=None) -> dict:
    return {ij: float(TYPO_READ if ij == typo else p) for ij, p in printed.items()}


def _distance_to_original(r: dict, r0: dict) -> float:
    """Mean |r' - r| over the 63 off-diagonal cells (the Table X statistic of one run)."""
    return float(np.mean([abs(r[ij] - r0[ij]) for ij in r0 if ij[0] != ij[1]]))


_COLUMNS = ["row"] + [f"A{j}" for j in range(7, 14)]


def _table6(out: _Output, C: np.ndarray, names: list) -> dict:
    r = pearson_correlations(C, "census")
    res = _compare_cells(r, PAPER["table6"]["cells"], TYPO)
    out.heading("Table VI: census correlations", "Pearson correlations of the CASC census (1080 records): "
                + ", ".join(f"A{j + 1} = {n}" for j, n in enumerate(names))
                + ". A1-A6 are non-confidential quasi-identifiers, A7-A13 confidential. Each cell 'ours / paper'; "
                "'*' marks a difference at the printed digits. The paper prints A9-A12 as .70: a known typo for "
                ".070 (NOTES.md Sec. 2), checked as .070.")
    out.table(f"Table VI (ours / paper): {res['matched']}/{res['compared']} match at the printed digits "
              f"(A9-A12 read as .070)", _COLUMNS, _correlation_rows(res))
    return dict(res, source=PAPER["table6"]["source"], correlation=r)


def _table7(out: _Output, C: np.ndarray) -> tuple[dict, dict]:
    r = pearson_correlations(mdav_id(C, K_SINGLE, standardize=False).released, "released")
    res = _compare_cells(r, PAPER["table7"]["cells"])
    out.heading("Table VII: MDAV-ID, k = 12", "MDAV on the raw values of all 13 attributes, every attribute "
                "replaced by its group mean (k-anonymity); deterministic, so it should match the paper's digits. "
                "Cells 'ours / paper', '*' = different at the printed digits (trailing zeros dropped: '.8' is "
                "checked at one decimal).")
    out.table(f"Table VII (ours / paper): {res['matched']}/{res['compared']} match at the printed digits, "
              f"{res['within_near']}/{res['compared']} within {NEAR}", _COLUMNS, _correlation_rows(res))
    out.note(f"Table VII: mean |ours - paper| = {res['mean_abs_diff']:.4f} over the 63 off-diagonal cells, "
             f"largest {res['max_abs_diff']:.4f} ({res['worst_cell']}).")
    ours = {ij: float(r[ij]) for ij in PAPER["table7"]["cells"]}
    return dict(res, source=PAPER["table7"]["source"], k=K_SINGLE), ours


def _single_run(out: _Output, key: str, method: str, C: np.ndarray, rng, original: dict) -> tuple[dict, dict]:
    conf = list(CENSUS_CONFIDENTIAL)
    if method == "mdav-swap-informed":
        released = mdav_swap_informed(C, K_SINGLE, conf, random_state=rng, standardize=False).released
    else:
        released = ir_swap(C, K_SINGLE, conf, random_state=rng).released
    r = pearson_correlations(released, "released")
    printed = PAPER[key]["cells"]
    res = _compare_cells(r, printed)
    ours = {ij: float(r[ij]) for ij in printed}
    res.update(source=PAPER[key]["source"], k=K_SINGLE, method=method,
               ours_to_original=_distance_to_original(ours, original),
               paper_to_original=_distance_to_original(_paper_matrix(printed),
                                                       _paper_matrix(PAPER["table6"]["cells"], TYPO)))
    name = "Table VIII" if key == "table8" else "Table IX"
    suspect = ""
    if key in SUSPECT:
        ij = SUSPECT[key]
        rest = [c for c in res["cells"] if c["i"] != c["j"] and (c["i"], c["j"]) != ij]
        p0 = _paper_matrix(PAPER["table6"]["cells"], TYPO)
        others = max(abs(float(printed[c["i"], c["j"]]) - p0[c["i"], c["j"]]) for c in rest)
        res["suspect"] = dict(cell=f"A{ij[0] + 1}-A{ij[1] + 1}", paper=printed[ij],
                              original=PAPER["table6"]["cells"][ij], paper_others_max_change=others,
                              mean_abs_diff_without=float(np.mean([c["abs_diff"] for c in rest])))
        sp = res["suspect"]
        suspect = (f" The paper's {sp['cell']} = {sp['paper']} looks misprinted: the original is {sp['original']} and "
                   f"the paper's other {name} cells differ from its Table VI by at most {others:.3f}; without it, mean "
                   f"|ours - paper| = {sp['mean_abs_diff_without']:.4f}.")
    detail = ("per confidential attribute, MDAV on the raw values of the other 12 attributes, that attribute "
              "permuted inside each group" if method == "mdav-swap-informed" else
              "per confidential attribute, blocks of 12 consecutive values (decreasing order, the remainder in the "
              "last block), that attribute permuted inside each block")
    out.heading(f"{name}: {LABELS[method]}, k = 12", f"{detail}. One seeded run, like the paper's (its own "
                "warning: single runs change from one execution to another), so the cells agree only roughly.")
    out.table(f"{name} (ours / paper, one run each)", _COLUMNS, _correlation_rows(res))
    out.note(f"{name}: mean |ours - paper| = {res['mean_abs_diff']:.4f} over the 63 off-diagonal cells (largest "
             f"{res['max_abs_diff']:.3f} at {res['worst_cell']}); {res['matched']}/{res['compared']} cells equal at "
             f"the printed digits. Distance of the run to the original correlations (mean |r' - r|, 63 cells): ours "
             f"{res['ours_to_original']:.4f}, the paper's {res['paper_to_original']:.4f} (its Table {name[6:]} "
             "against its Table VI)." + suspect)
    return res, ours


# --------------------------------------------------------------------------- Tables X, XI


def _within(ours: float, printed: str) -> bool:
    return abs(ours / float(printed) - 1.0) <= WITHIN


def _runs(X: np.ndarray, conf, s: dict, rng, printed: dict, work) -> dict:
    """Table X/XI statistic for every method and k of ``s``, beside the printed values."""
    res: dict = {"k": list(s["k"]), "runs": s["runs"], "confidential": list(conf), "methods": {}}
    for m in METHODS:
        rows = {key: [] for key in ("mean", "sd", "paper_mean", "paper_sd", "within_30", "sd_within_30")}
        for k in s["k"]:
            d = correlation_difference_runs(X, k, m, list(conf), runs=s["runs"], random_state=rng, standardize=False)
            pm, ps = printed[m][k]
            for key, v in (("mean", d.mean), ("sd", d.sd), ("paper_mean", pm), ("paper_sd", ps),
                           ("within_30", _within(d.mean, pm)), ("sd_within_30", _within(d.sd, ps))):
                rows[key].append(v)
            work.update()
        res["methods"][m] = rows
    means = [(m, i) for m in METHODS for i in range(len(s["k"]))]
    M = res["methods"]
    res["pairs"] = int(len(conf) * (X.shape[1] - len(conf)) + len(conf) * (len(conf) - 1) // 2)
    res["mean_within_30"] = sum(M[m]["within_30"][i] for m, i in means)
    res["sd_within_30"] = sum(M[m]["sd_within_30"][i] for m, i in means)
    res["compared"] = len(means)
    res["mean_abs_log_ratio"] = float(np.mean([abs(math.log(M[m]["mean"][i] / float(M[m]["paper_mean"][i])))
                                               for m, i in means]))
    res["sd_abs_log_ratio"] = float(np.mean([abs(math.log(M[m]["sd"][i] / float(M[m]["paper_sd"][i])))
                                             for m, i in means]))
    return res


def _agreement(res: dict) -> str:
    return (f"means within 30%: {res['mean_within_30']}/{res['compared']}, sds within 30%: "
            f"{res['sd_within_30']}/{res['compared']}, mean |log(ours/paper)| of the means "
            f"{res['mean_abs_log_ratio']:.3f} (sds {res['sd_abs_log_ratio']:.3f})")


def _runs_rows(res: dict) -> list:
    rows = []
    for i, k in enumerate(res["k"]):
        row = [k]
        for m in METHODS:
            r = res["methods"][m]
            row += [f"{_fmt(r['mean'][i], 3)} / {r['paper_mean'][i]}", f"{_fmt(r['sd'][i], 3)} / {r['paper_sd'][i]}",
                    "yes" if r["within_30"][i] else "NO"]
        rows.append(row)
    return rows


_RUNS_HEADERS = ["k"] + [f"{LABELS[m]} {what}" for m in METHODS for what in ("mean", "sd", "within 30%")]


def _table7_vs_table10(res: dict, ours_k12: float) -> dict:
    """The paper's Table VII against its Table VI gives the Table X statistic of MDAV-ID at
    k = 12; compare it with Table X interpolated log-log between k = 11 and 25."""
    printed = PAPER["table10"]["values"]["mdav-id"]
    lo, hi = float(printed[11][0]), float(printed[25][0])
    interpolated = lo * (hi / lo) ** (math.log(12 / 11) / math.log(25 / 11))
    original = _paper_matrix(PAPER["table6"]["cells"], TYPO)
    table7 = _distance_to_original(_paper_matrix(PAPER["table7"]["cells"]), original)
    m = res["methods"]["mdav-id"]
    ratios = [v / float(p) for v, p in zip(m["mean"], m["paper_mean"])]
    return dict(paper_table7=table7, ours_table7=ours_k12, paper_table10_interpolated=interpolated,
                paper_ratio=table7 / interpolated, ours_ratio_min=min(ratios), ours_ratio_max=max(ratios))


def _table10(out: _Output, C: np.ndarray, s: dict, rng, work, ours_k12: float) -> dict:
    res = _runs(C, CENSUS_CONFIDENTIAL, s, rng, PAPER["table10"]["values"], work)
    out.heading("Table X: census, mean and sd of |r' - r|", f"|r'_ij - r_ij| over the {res['pairs']} pairs with a "
                f"confidential attribute (A7-A13), pooled over {s['runs']} runs (MDAV-ID is deterministic and "
                "computed once); ours / paper. 'within 30%': our mean within 30% of the paper's.")
    out.table(f"Table X (census, {s['runs']} runs; ours / paper)", _RUNS_HEADERS, _runs_rows(res))
    out.note("Table X agreement: " + _agreement(res) + ".")
    c = _table7_vs_table10(res, ours_k12)
    out.note(f"MDAV-ID consistency: the paper's Table VII against its Table VI gives mean |r' - r| = "
             f"{c['paper_table7']:.4f} at k = 12 (ours {c['ours_table7']:.4f}), while its Table X, interpolated "
             f"log-log between k = 11 (.078) and k = 25 (.11), gives {c['paper_table10_interpolated']:.4f}: the "
             f"paper's own Table VII is {100 * (c['paper_ratio'] - 1):.0f}% above its Table X. Our MDAV-ID means are "
             f"{100 * (c['ours_ratio_min'] - 1):.0f}-{100 * (c['ours_ratio_max'] - 1):.0f}% above Table X, "
             "consistent with Table VII.")
    return dict(res, source=PAPER["table10"]["source"], mdav_id_consistency=c)


def _table11(out: _Output, E: np.ndarray | None, s: dict, rng, work) -> dict:
    if E is None:
        out.heading("Table XI: EIA", "Skipped: CASC EIA not found.")
        return {"skipped": True}
    choices = {}
    for name in (EIA_CHOICE,) + tuple(n for n in EIA_ROLES if n != EIA_CHOICE):
        conf = [EIA_COLUMNS.index(c) for c in EIA_ROLES[name]]
        choices[name] = dict(_runs(E, conf, s, rng, PAPER["table11"]["values"], work),
                             confidential_columns=list(EIA_ROLES[name]))
    res = choices[EIA_CHOICE]
    other = next(n for n in choices if n != EIA_CHOICE)
    better = res["mean_abs_log_ratio"] <= choices[other]["mean_abs_log_ratio"]
    out.heading("Table XI: EIA, mean and sd of |r' - r|",
                f"EIA: {E.shape[0]} records, the 10 continuous columns ({', '.join(EIA_COLUMNS)}). The paper gives no "
                f"roles; ours: the five *{EIA_CHOICE.upper()} columns ({', '.join(EIA_ROLES[EIA_CHOICE])}) are "
                f"confidential, the five *{other.upper()} columns quasi-identifiers ({res['pairs']} pairs), chosen "
                "over the reverse roles by the mean |log(ours/paper)| of the 27 Table XI means in the full run (both "
                "choices are recomputed every run: see the agreement below). ours / paper.")
    out.table(f"Table XI (EIA, {EIA_CHOICE.upper()} confidential, {s['runs']} runs; ours / paper)", _RUNS_HEADERS,
              _runs_rows(res))
    out.note(f"Table XI agreement ({EIA_CHOICE.upper()} confidential, the choice): " + _agreement(res)
             + f". The other choice ({other.upper()} confidential), recomputed in this run: "
             + _agreement(choices[other]) + ". The choice has the "
             + ("smaller" if better else "LARGER (in this run)") + " mean |log ratio|.")
    return dict(res, source=PAPER["table11"]["source"], choice=EIA_CHOICE,
                alternative=dict(choices[other], roles=other), choice_is_better=better)


# --------------------------------------------------------------------------- attacks (issue 14)


def _attack_release(frame: pd.DataFrame, confidential: list, method: str, k: int, rng):
    """One release of ``frame`` by ``method`` (MDAV on raw values, as in the tables above) with
    its records in a random order, as the release commands publish them. Returns the released
    table, the released row of every original record (the truth, never shown to an intruder)
    and, for the column-wise methods, the released row holding every record's value of each
    confidential column (``released row r`` holds record ``sources[r, t]``'s value)."""
    n = len(frame)
    positions = [frame.columns.get_loc(c) for c in confidential]
    result = swap(frame.to_numpy(dtype=float), k, method, None if method == "mdav-id" else positions,
                  random_state=rng, standardize=False)
    order, _ = record_order(n, random_state=rng)
    position = np.empty(n, dtype=np.int64)
    position[order] = np.arange(n)
    released = pd.DataFrame(np.asarray(result.released)[order], columns=frame.columns)
    column_rows = None
    if MECHANISMS[method] == "column-wise":
        value_rows = result.value_rows()
        column_rows = {frame.columns[cols[0]]: position[value_rows[:, t]]
                       for t, cols in enumerate(result.groups.columns)}
    return released, position, column_rows


def _attack_cell(frame: pd.DataFrame, keys: list, confidential: list, method: str, k: int, releases: int,
                 rng) -> dict:
    """Every intruder of :func:`probanon.attacks.attack` against ``releases`` independent releases
    (one run each), pooled: success rate, Clopper-Pearson interval, whether it lies entirely above
    the claimed bound 1/k, what the intruder knows, and what it found in the first release."""
    runs: dict = {}
    for _ in range(releases):
        released, position, column_rows = _attack_release(frame, confidential, method, k, rng)
        report = attack(frame, released, keys, confidential, mechanism=method, k=k, link=position,
                        column_rows=column_rows, runs=1, confidence=ATTACK_CONFIDENCE, standardize=False,
                        random_state=rng)
        for r in report.results:
            runs.setdefault(r.rule, []).append(r)
    cells = {}
    for rule, rs in runs.items():
        pooled = reidentification_result(rule, keys, rs[0].trials, [r.successes for r in rs], k, ATTACK_CONFIDENCE)
        cells[rule] = dict(rate=pooled.rate, interval=list(pooled.interval), successes=pooled.successes,
                           trials=pooled.trials, above=pooled.lower_exceeds_bound, knows=rs[0].knows,
                           found=rs[0].note)
    return cells


def _audited(name: str, frame: pd.DataFrame, keys: list, confidential: list) -> tuple[dict, list]:
    """The pre-release audit of ``frame`` (the module's roles) and the columns it flags."""
    result = audit(frame, keys, confidential)
    flagged = sorted({f.column for f in result.findings}, key=list(frame.columns).index)
    return dict(result.to_dict(), data=name, summary=result.summary(), flagged=flagged), flagged


def _attack_cell_text(cell: dict, k: int):
    return flag(f"{cell['rate']:.3f} / {1 / k:.3f}", cell["above"])


def _attack_table(out: _Output, C: np.ndarray, names: list, E: np.ndarray | None, s: dict, rng, work) -> dict:
    """Success of every intruder of the attack suite against MDAV-ID, MDAV-SWAP (uninformed and
    informed) and IR-SWAP at k = 3, 5, 10, on the census and EIA, with and without the columns the
    pre-release audit flags (issue 14, point 5)."""
    census = pd.DataFrame(C, columns=names)
    datasets = [("census", census, [names[j] for j in range(13) if j not in CENSUS_CONFIDENTIAL],
                 [names[j] for j in CENSUS_CONFIDENTIAL])]
    if E is not None:
        eia_conf = list(EIA_ROLES[EIA_CHOICE])
        datasets.append(("EIA", pd.DataFrame(E, columns=EIA_COLUMNS), [c for c in EIA_COLUMNS if c not in eia_conf],
                         eia_conf))
    audits, variants = {}, []
    for name, frame, keys, conf in datasets:
        audits[name], flagged = _audited(name, frame, keys, conf)
        variants.append((name, "all columns", [], frame, keys, conf))
        if flagged:
            kept = [c for c in frame.columns if c not in flagged]
            keys, conf = [c for c in keys if c in kept], [c for c in conf if c in kept]
            audits[f"{name} without {', '.join(flagged)}"], _ = _audited(name, frame[kept], keys, conf)
            variants.append((name, f"without {', '.join(flagged)}", flagged, frame[kept], keys, conf))
    rows, table, intruders = [], [], {}
    for name, columns, dropped, frame, keys, conf in variants:
        for method in ATTACK_METHODS:
            for k in ATTACK_K:
                cells = _attack_cell(frame, keys, conf, method, k, s["attack_releases"], rng)
                intruders.update({rule: c.pop("knows") for rule, c in cells.items()})
                rows.append(dict(data=name, columns=columns, dropped=dropped, keys=keys, confidential=conf,
                                 mechanism=method, k=k, bound=1 / k, releases=s["attack_releases"],
                                 records=len(frame), intruders=cells))
                table.append([name, columns, ATTACK_LABELS[method], k]
                             + [_attack_cell_text(c, k) for c in cells.values()])
                work.update()
    rules = list(rows[0]["intruders"])
    above = [r for r in rows if any(c["above"] for c in r["intruders"].values())]
    census_audit = audits["census"]
    eia_text = ""
    if E is not None:
        eia_text = (" EIA (keys: the five *SALES columns; confidential: the five *REVENUE columns, the roles of "
                    "Table XI): " + ("the audit flags nothing, so the 'without' rows would repeat the 'all columns' "
                                     "ones and are not computed." if not audits["EIA"]["flagged"] else
                                     audits["EIA"]["summary"] + "."))
    out.heading("Attacks: each intruder's success beside the claimed bound 1/k",
                "The attack suite (probanon.attacks.attack) against MDAV-ID, MDAV-SWAP for the uninformed intruder "
                "(Sec. IV-A: key tuples permuted in MDAV groups of the keys), MDAV-SWAP for informed intruders "
                "(Sec. IV-B) and IR-SWAP (Sec. IV-C), MDAV on raw values as in the tables above, records released "
                "in a random order. Every intruder knows every target's original keys, the release and the "
                "mechanism with its k, never its random choices; for the column-wise methods (informed MDAV-SWAP, "
                "IR-SWAP) a trial is one target and one confidential column (is the target linked to the row "
                "holding its value of that column?). Each cell: success rate / claimed bound 1/k, pooled over "
                f"{s['attack_releases']} independent release(s) with one intruder run each; "
                f"'{FLAG_MARK}' (red in the HTML page) marks a cell whose "
                f"{ATTACK_CONFIDENCE:.0%} Clopper-Pearson interval lies entirely above 1/k. Roles: census keys "
                f"A1-A6, confidential A7-A13. Pre-release audit (probanon.attacks.audit) of the census: "
                f"{census_audit['summary']}; 'without' rows drop {', '.join(census_audit['flagged']) or 'nothing'} "
                "from the data before release." + eia_text)
    for method in ATTACK_METHODS:
        out.note(GUARANTEES[method].text())
    out.table(f"Attacks (success / 1/k; {s['attack_releases']} release(s) per cell)",
              ["data", "columns", "mechanism", "k"] + rules, table)
    out.note("What each intruder knows and does: " + "; ".join(f"{rule}: {knows}" for rule, knows in
                                                                    intruders.items()) + ".")
    out.note(f"Above the claimed bound: {len(above)} of {len(rows)} rows have an intruder whose interval lies "
             "entirely above 1/k (" + ", ".join(
                 f"{ATTACK_LABELS[m]} {sum(r['mechanism'] == m for r in above)}" for m in ATTACK_METHODS) + ").")
    return dict(k=list(ATTACK_K), releases=s["attack_releases"], confidence=ATTACK_CONFIDENCE,
                methods=list(ATTACK_METHODS), intruders=intruders, audits=audits,
                guarantees={m: dict(GUARANTEES[m].to_dict(), text=GUARANTEES[m].text()) for m in ATTACK_METHODS},
                rows=rows, rows_above=len(above))


# --------------------------------------------------------------------------- statements, figure


def _holds_every_k(res: dict, better: str, worse: str) -> tuple[bool, str, bool]:
    """Ours and the paper's: is ``better``'s mean below ``worse``'s at every k?"""
    M = res["methods"]
    bad = [k for i, k in enumerate(res["k"]) if not M[better]["mean"][i] < M[worse]["mean"][i]]
    bad_p = [k for i, k in enumerate(res["k"])
             if not float(M[better]["paper_mean"][i]) < float(M[worse]["paper_mean"][i])]
    detail = "every k" if not bad else "not at k = " + ", ".join(map(str, bad))
    return not bad, detail + ("" if not bad_p else f" (paper: not at k = {', '.join(map(str, bad_p))})"), not bad_p


def _statements(res: dict) -> list:
    """(source, statement, holds for ours, detail, holds for the paper's printed values)."""
    t7, t8, t9 = res["table7"], res["table8"], res["table9"]
    r0p = _paper_matrix(PAPER["table6"]["cells"], TYPO)
    p7 = _distance_to_original(_paper_matrix(PAPER["table7"]["cells"]), r0p)
    o7 = t7["ours_to_original"]
    st = [("Sec. V.A, Tables VII-IX", "MDAV-SWAP and IR-SWAP (one run, k = 12) are closer to the original "
           "correlations than MDAV-ID", t8["ours_to_original"] < o7 and t9["ours_to_original"] < o7,
           f"mean |r' - r| ours: MDAV-ID {o7:.4f}, MDAV-SWAP {t8['ours_to_original']:.4f}, IR-SWAP "
           f"{t9['ours_to_original']:.4f} (paper {p7:.4f}, {t8['paper_to_original']:.4f}, "
           f"{t9['paper_to_original']:.4f})", t8["paper_to_original"] < p7 and t9["paper_to_original"] < p7),
          ("Sec. V.A, Tables VIII-IX", "IR-SWAP is the closest to the original correlations",
           t9["ours_to_original"] < t8["ours_to_original"], f"{t9['ours_to_original']:.4f} vs "
           f"{t8['ours_to_original']:.4f}", t9["paper_to_original"] < t8["paper_to_original"])]
    for key, name in (("table10", "Table X (census)"), ("table11", "Table XI (EIA)")):
        if res[key].get("skipped"):
            continue
        ok, detail, paper = _holds_every_k(res[key], "mdav-swap-informed", "mdav-id")
        st.append((name, "MDAV-SWAP has a lower mean than MDAV-ID", ok, detail, paper))
        ok, detail, paper = _holds_every_k(res[key], "ir-swap", "mdav-swap-informed")
        st.append((name, "IR-SWAP has the lowest mean", ok, detail, paper))
    t10 = res["table10"]
    want = (("mdav-id", 11), ("mdav-swap-informed", 25), ("ir-swap", 300))
    if all(k in t10["k"] for _, k in want):
        v = [t10["methods"][m]["mean"][t10["k"].index(k)] for m, k in want]
        p = [float(t10["methods"][m]["paper_mean"][t10["k"].index(k)]) for m, k in want]
        st.append(("Sec. V.A, Table X", "similar quality from MDAV-ID k = 11, MDAV-SWAP k = 25, IR-SWAP k = 300 "
                   "(largest / smallest mean <= 1.3)", max(v) / min(v) <= 1 + WITHIN,
                   f"{v[0]:.3f}, {v[1]:.3f}, {v[2]:.3f} (paper .078, .091, .087)", max(p) / min(p) <= 1 + WITHIN))
    return st


def _figure(res: dict):
    panels, paper = {}, {}
    for key, name in (("table10", "census (Table X)"), ("table11", "EIA (Table XI)")):
        if res[key].get("skipped"):
            continue
        r = res[key]
        panels[name] = {f"{LABELS[m]} (ours)": (r["k"], r["methods"][m]["mean"]) for m in METHODS}
        printed = PAPER[key]["values"]
        paper[name] = {m: (list(PAPER_K), [float(printed[m][k][0]) for k in PAPER_K]) for m in METHODS}
    fig = _axes_figure(panels, "k", "mean |r' - r|", "Tables X-XI: correlation loss against k "
                       "(solid: ours, dashed: paper)", logx=True)
    for ax, name in zip(fig.axes, panels):
        for t, m in enumerate(METHODS):
            x, y = paper[name][m]
            ax.plot(x, y, linestyle="--", marker="x", color=f"C{t}", label=f"{LABELS[m]} (paper)")
        ax.set_yscale("log")
        ax.legend(fontsize=7)
    return fig


# --------------------------------------------------------------------------- driver


def reproduce_swapping(output_dir="report", data_dir=None, quick: bool = False, progress=None,
                       random_state: int = SEED) -> dict:
    """Recompute Sec. V of paper 2 (Tables VI-XI) and print it beside the paper's values.

    Writes ``swapping.html``, the printed text ``swapping.txt``, the numbers ``swapping.json``
    and the figure ``swapping_tables_x_xi.png`` into ``output_dir`` and returns the numbers
    (JSON-serialisable) plus ``"text"``. ``data_dir`` holds ``casc/census.csv`` (required) and
    ``casc/eia.csv`` (default: the packaged data sets, :mod:`probanon.datasets`; Table XI is skipped
    with a note when EIA is absent there, an error when an explicit ``data_dir`` lacks it).
    ``quick``: k = 5, 25, 100 and 20 runs for Tables X-XI (Tables VI-IX as in the full run),
    one release per cell of the attack table (full: 10). ``progress``: None or a callback ``progress(stage, step, steps)`` (:mod:`probanon.progress`).
    ``random_state`` seeds the permutations (Tables VIII and IX first, then Tables X and XI;
    the attack table from a stream spawned from it, so the tables' draws do not depend on it).
    """
    start = time.perf_counter()
    output_dir = Path(output_dir)
    rng = check_random_state(random_state)
    attack_rng = rng.spawn(1)[0]  # an independent stream: the tables' draws stay as they were
    s = _settings(quick)
    notes: list[str] = []
    C, names, E = _data(data_dir, notes)
    steps = 4 + len(METHODS) * len(s["k"]) * (1 + (len(EIA_ROLES) if E is not None else 0))
    steps += len(ATTACK_METHODS) * len(ATTACK_K) * (2 + (E is not None))  # census with and without, EIA

    report = Report("Paper 2, Sec. V: probabilistic k-anonymity by swapping (ours beside the paper)")
    out = _Output(report)
    if quick:
        out.note(f"QUICK MODE: Tables X-XI at k = {', '.join(map(str, s['k']))} with {s['runs']} runs (the paper: "
                 f"9 values of k, 100 runs); Tables VI-IX are as in the full run; the attack table pools "
                 f"{s['attack_releases']} release per cell (full run: {_settings(False)['attack_releases']}).")
    out.note("MDAV runs on the raw attribute values (standardize=False), as in the paper's experiments: this "
             "reproduces Table VII, z-scores do not. MDAV-SWAP is the informed-intruder variant (Sec. IV-B).")
    results: dict = {"quick": quick, "random_state": random_state if isinstance(random_state, int) else None,
                     "settings": s, "standardize": False}
    work = Steps(progress, steps)
    results["table6"] = _table6(out, C, names)
    work.update()
    results["table7"], r7 = _table7(out, C)
    original = {ij: float(results["table6"]["correlation"][ij]) for ij in PAPER["table6"]["cells"]}
    results["table7"]["ours_to_original"] = _distance_to_original(r7, original)
    work.update()
    results["table8"], _ = _single_run(out, "table8", "mdav-swap-informed", C, rng, original)
    work.update()
    results["table9"], _ = _single_run(out, "table9", "ir-swap", C, rng, original)
    work.update()
    results["table10"] = _table10(out, C, s, rng, work, results["table7"]["ours_to_original"])
    results["table11"] = _table11(out, E, s, rng, work)
    results["attacks"] = _attack_table(out, C, names, E, s, attack_rng, work)

    statements = _statements(results)
    figures = [("swapping_tables_x_xi", _figure(results), "Tables X-XI: mean |r' - r| against k (log-log), ours "
                "(solid, o) and the paper's (dashed, x).")]
    out.heading("Figures", "Figures follow (PNG files beside this page).")
    for name, fig, caption in figures:
        report.figure(name, fig, caption)
    out.table("Statements of the text", ["source", "statement", "holds (ours)", "detail", "holds (paper's values)"],
              [[src, t, "yes" if h else "NO", d, "yes" if hp else "NO"] for src, t, h, d, hp in statements])
    for n in notes:
        out.note(n)

    t6, t7, t8, t9, t10, t11 = (results[f"table{i}"] for i in range(6, 12))
    elapsed = time.perf_counter() - start
    summary = [f"Table VI: {t6['matched']}/{t6['compared']} cells match at the printed digits (A9-A12 printed .70, "
               f"a typo for .070: ours {t6['correlation'][TYPO]:.4f})",
               f"Table VII (MDAV-ID, k = 12, raw MDAV): {t7['matched']}/{t7['compared']} cells match at the printed "
               f"digits, {t7['within_near']}/{t7['compared']} within {NEAR}; mean |ours - paper| "
               f"{t7['mean_abs_diff']:.4f}, largest {t7['max_abs_diff']:.4f} ({t7['worst_cell']})"]
    for name, t in (("VIII (MDAV-SWAP", t8), ("IX (IR-SWAP", t9)):
        sp = t.get("suspect")
        without = "" if sp is None else f" ({sp['mean_abs_diff_without']:.4f} without the misprinted {sp['cell']})"
        summary.append(f"Table {name}, k = 12, one run): mean |ours - paper| {t['mean_abs_diff']:.4f}{without}; "
                       f"distance to the original ours {t['ours_to_original']:.4f}, paper {t['paper_to_original']:.4f}")
    summary.append(f"Table X (census, {s['runs']} runs): " + _agreement(t10))
    if t11.get("skipped"):
        summary.append("Table XI (EIA): skipped (EIA not found)")
    else:
        alt = t11["alternative"]
        summary.append(f"Table XI (EIA, {EIA_CHOICE.upper()} confidential, {s['runs']} runs): " + _agreement(t11))
        summary.append(f"  other choice ({alt['roles'].upper()} confidential): " + _agreement(alt))
    ta = results["attacks"]
    summary.append(f"Attacks (k = {', '.join(map(str, ATTACK_K))}, {ta['releases']} release(s) per cell): "
                   f"{ta['rows_above']}/{len(ta['rows'])} rows with an intruder significantly above 1/k")
    summary.append(f"Statements of the text that hold: {sum(h for _, _, h, _, _ in statements)}/{len(statements)} "
                   f"(in the paper's own values: {sum(hp for *_, hp in statements)}/{len(statements)})")
    summary.append(f"{'QUICK MODE; ' if quick else ''}{elapsed:.1f} s")
    out.heading("Summary", "\n".join(summary))

    results.update({
        "statements": [dict(source=src, statement=t, holds=h, detail=d, holds_in_paper=hp)
                       for src, t, h, d, hp in statements],
        "notes": notes,
        "runtime_seconds": elapsed,
    })
    return _finish(output_dir, report, out, results, figures, "swapping")

"""Reproduction of paper 4 ((l, delta)-diversity, Secs. 3 and 5): our values beside the
paper's and beside the check values of NOTES.md Sec. 4.

======================  ===================================================================
NOTES.md Sec. 4         N before rounding up, |Q| = 3000 (3 genders x 100 ages x 10 postal
                        codes), |S| = 50: uniform P_S, p = 2e-4 at delta = .01, .001, .1 and
                        p = 4e-4 at delta = .01; geometric P_S (rho = .95), p = .01 p_l at
                        l = 10 and 30 (delta = .01). Class counts of Greedy-Generalize and
                        Generalize-Ind beside Corollary 4.8's floor(p_l / p)
Fig. 1a, 1b             uniform P_S: N against delta (beta = .01, .02; l = 10, 30) and N
                        against p in [1e-3, 1/|S|] (delta = .01, .001; l = 10, 30)
Fig. 2a, 2b             geometric P_S: N against delta (beta = .01, .02; l = 10, 30) and N
                        against l in [5, 40], p = beta p_1 rho^(l-1) (delta = .01, .001;
                        beta = .01, .02)
Sec. 3, Prop. 3.1       worst-case l after linking t = 2..7 plain l-diverse releases with
                        |S| = 50 (L = 49), l = 10, 30, 40, 45, 49: the formula
                        max(1, L + 1 - t (L - l + 1)) and the attack on the constructed
                        releases; the formula against brute force for |S| = 10
Theorem 4.5             t releases of the mechanism linked: Monte Carlo failure rate with its
                        99 % Clopper-Pearson interval against t delta
(ours)                  Pareto front of classes against N (the trade-off of Remark 2)
======================  ===================================================================

Setting (Sec. 5). The paper fixes only |Q| = 3000 and the marginal P_S; the joint pmf is
``P(q, s) = P_S(s) / |Q|`` (uniform P_Q, Q independent of S, the case of Lemma 4.7 and
Corollary 4.8), the QI values ordered lexicographically (gender, age, postal code). The
geometric marginal is ``P_S(s) = p_1 rho^(s-1)`` with p_1 normalised so that the pmf sums to 1:
``p_1 = (1 - rho) / (1 - rho^50) = 0.054168`` (the paper: "p_1 ~ 0.054"; NOTES.md). p is
``beta p_l`` (Sec. 5), so for uniform P_S ``p = beta / |S|``.

N is Algorithm 1's ``ln(m l / delta) / ln(1 / (1 - p))`` before rounding up with the paper's
``m = min(|Q|, 1/(l p), sum_{i>=l} p_i / p)`` (Lemma 4.3); beside it, N with m = the real
number of classes of Greedy-Generalize (also valid, NOTES.md). A printed value "matches" when
ours rounded half-up to its last printed digit (0.1 for NOTES.md's N) equals it
(:func:`~probanon.reproduce.surveys.matches`).

The figures of the paper are images that the text does not carry and the text states no N
value, so our curves are those it describes (parameters above; delta on a log axis from 1e-3
to 0.9) and the NOTES.md values that fall on them are marked. The statements of Sec. 5 are
checked on our curves.

Attack. For plain l-diverse releases the worst case is built by
:func:`~probanon.diversity.attack.worst_case_releases` (t count tables, each l-diverse) and
attacked with :func:`~probanon.diversity.attack.linkage_attack`; it attains the formula (an
upper bound on the worst case) and the brute force of
:func:`~probanon.diversity.attack.brute_force_linked_l` shows it is the minimum (|S| = 10).

Monte Carlo. With uniform P_S, ``p = .01 p_l = 2e-4`` for every l and ``m l = 1/p``, so one
plan (100 classes of 30 QI values, N = ceil(54093.5) at delta = .1) is Algorithm 1's plan for
every l of the attack table (checked). We simulate it at the strictest l = |S| = 50: a release
that is not l-diverse for some l <= 50 is not 50-diverse either, so these rates bound every l
of the table; and at l = |S| the union bound of Theorem 4.4 is nearly tight (every one of the
50 values must appear in every class), so the rate is close to delta, which makes the check
informative. delta = .1 (a NOTES.md value) keeps the intervals informative with a few thousand
runs; quick mode uses fewer runs.
"""

from __future__ import annotations

import itertools
import math
import time
from fractions import Fraction
from pathlib import Path

import numpy as np
from scipy import stats

from ..progress import Steps
from .._validation import check_random_state
from ..diversity import (
    class_bound,
    class_masses,
    distribution_from_array,
    generalize_independent,
    greedy_generalize,
    pareto_front,
    plan_diversity,
    sample_size,
)
from ..diversity.attack import (
    brute_force_linked_l,
    linkage_attack,
    linkage_monte_carlo,
    worst_case_linked_l,
    worst_case_releases,
)
from ..report import Report
from .surveys import _axes_figure, _finish, _fmt, _Output, matches

SEED = 2016  # the CLI's default --seed

N_S = 50  # |S| = |Disease|
QI_SIZES = {"gender": 3, "age": 100, "postal_code": 10}  # |Q| = 3000 (Sec. 5)
N_Q = math.prod(QI_SIZES.values())
RHO = 0.95
P1_PAPER = "0.054"  # Sec. 5: "giving rise to p_1 ~ 0.054"
MARGINALS = ("uniform", "geometric")

#: NOTES.md Sec. 4, N before ceil (as printed). Uniform rows give p (valid for every l: m l = 1/p),
#: geometric rows beta = p / p_l and l.
NOTES_N = (
    dict(marginal="uniform", p="2e-4", delta=".01", printed="65605.3"),
    dict(marginal="uniform", p="2e-4", delta=".001", printed="77117.0"),
    dict(marginal="uniform", p="2e-4", delta=".1", printed="54093.5"),
    dict(marginal="uniform", p="4e-4", delta=".01", printed="31066.8"),
    dict(marginal="geometric", beta=".01", l=10, delta=".01", printed="36865.1"),
    dict(marginal="geometric", beta=".01", l=30, delta=".01", printed="111228.6"),
)
NOTES_CLASSES = dict(marginal="uniform", beta=".02", classes=50)  # NOTES.md: 50 classes (a float greedy: 49)
UNIFORM_L = (10, 30)  # the l of Sec. 5, at which the uniform rows are evaluated

T_VALUES = tuple(range(2, 8))
ATTACK_L = (10, 30, 40, 45, 49)  # Sec. 5's l = 10, 30 and three above the t = 2 threshold L/2 + 1
BRUTE_S = 10  # |S| of the brute-force check (L = 9)
MC_BETA = 0.01
MC_DELTA = 0.1
MC_L = N_S
CONFIDENCE = 0.99
PARETO = (("uniform", 10), ("geometric", 10), ("geometric", 30))  # quick: the first only
PARETO_DELTA = 0.01

DELTA_GRID = tuple(float(v) for v in np.geomspace(1e-3, 0.9, 46))
P_GRID = tuple(float(v) for v in np.geomspace(1e-3, 1.0 / N_S, 40))
L_GRID = tuple(range(5, 41))


def _settings(quick: bool) -> dict:
    return dict(runs=100 if quick else 3000, mc_l=MC_L, mc_beta=MC_BETA, mc_delta=MC_DELTA, t=list(T_VALUES),
                attack_l=list(ATTACK_L), confidence=CONFIDENCE,
                pareto=[list(c) for c in (PARETO[:1] if quick else PARETO)])


# --------------------------------------------------------------------------- distributions


def geometric_p1(rho: float = RHO, n: int = N_S) -> float:
    """``p_1`` of ``P_S(s) = p_1 rho^(s-1)``, s = 1..n, normalised: ``(1 - rho) / (1 - rho^n)``."""
    return (1.0 - rho) / (1.0 - rho ** n)


def _marginal(name: str) -> np.ndarray:
    if name == "uniform":
        return np.full(N_S, 1.0 / N_S)
    return geometric_p1() * RHO ** np.arange(N_S)


def _distributions() -> dict:
    """{marginal: JointDistribution}: ``P(q, s) = P_S(s) / |Q|`` on the ordered product of the QIs."""
    qi_values = tuple(itertools.product(*(range(n) for n in QI_SIZES.values())))
    return {name: distribution_from_array(np.outer(np.full(N_Q, 1.0 / N_Q), _marginal(name)), qi_values,
                                          qi_columns=tuple(QI_SIZES)) for name in MARGINALS}


def _p_l(marginal: str, l: int) -> float:
    return float(np.sort(_marginal(marginal))[::-1][l - 1])


def n_exact(marginal: str, l: int, delta: float, p: float) -> float:
    """Algorithm 1's N before rounding up with the paper's m (Lemma 4.3)."""
    return sample_size(p, l, delta, class_bound(p, l, _marginal(marginal), N_Q))


# --------------------------------------------------------------------------- NOTES.md values


def _n_rows() -> list[dict]:
    rows = []
    for entry in NOTES_N:
        for l in ([entry["l"]] if "l" in entry else UNIFORM_L):
            p_l = _p_l(entry["marginal"], l)
            if "p" in entry:
                p, beta = float(entry["p"]), Fraction(entry["p"]) / Fraction(1, N_S)
            else:
                beta = Fraction(entry["beta"])
                p = float(beta) * p_l
            rows.append(dict(marginal=entry["marginal"], l=l, beta=float(beta), beta_exact=beta, p=p, p_l=p_l,
                             delta=float(entry["delta"]), notes=entry["printed"]))
    return rows


def _n_values(out: _Output, dists: dict) -> list[dict]:
    rows = []
    for r in _n_rows():
        dist = dists[r["marginal"]]
        m = class_bound(r["p"], r["l"], _marginal(r["marginal"]), N_Q)
        n = sample_size(r["p"], r["l"], r["delta"], m)
        greedy = greedy_generalize(dist, r["l"], r["p"]).n_classes
        independent = generalize_independent(dist, r["l"], r["p"]).n_classes
        corollary = math.floor(1 / r["beta_exact"])  # Corollary 4.8: floor(p_l / p) for uniform P_Q
        beta = r.pop("beta_exact")
        r.update(m=m, n_exact=n, n_samples=math.ceil(n), match=matches(r["notes"], n),
                 abs_diff=abs(n - float(r["notes"])),
                 classes_greedy=greedy, classes_independent=independent, classes_corollary=corollary,
                 classes_notes=NOTES_CLASSES["classes"] if (r["marginal"] == NOTES_CLASSES["marginal"]
                                                             and beta == Fraction(NOTES_CLASSES["beta"])) else None,
                 n_exact_classes=sample_size(r["p"], r["l"], r["delta"], greedy))
        rows.append(r)
    out.heading("N values (NOTES.md Sec. 4)",
                f"|Q| = {N_Q} ({' x '.join(f'{n} {k}' for k, n in QI_SIZES.items())}), |S| = {N_S}, "
                f"P(q, s) = P_S(s) / |Q|. Geometric P_S: rho = {RHO}, p_1 = (1 - rho)/(1 - rho^{N_S}) = "
                f"{geometric_p1():.6f}. p = beta p_l. N = ln(m l / delta) / ln(1/(1 - p)) before rounding up, "
                "m = min(|Q|, 1/(l p), sum_{i>=l} p_i / p); 'N (m = classes)' uses the real class count instead. "
                "Uniform rows hold for every l (m l = 1/p); they are shown at the paper's l = 10 and 30. "
                "'*' marks a difference at the printed 0.1.")
    table = []
    for r in rows:
        n = f"{r['n_exact']:.1f} / {r['notes']}" + ("" if r["match"] else " *")
        classes = f"{r['classes_greedy']} / {r['classes_independent']} / {r['classes_corollary']}"
        if r["classes_notes"] is not None:
            classes += f" (NOTES: {r['classes_notes']})"
        table.append([r["marginal"], r["l"], f"{r['beta']:g}", f"{r['p']:.6g}", f"{r['delta']:g}", _fmt(r["m"], 6), n,
                      r["n_samples"], classes, f"{r['n_exact_classes']:.1f}"])
    out.table("N before ceil, ours / NOTES.md; classes: Greedy-Generalize / Generalize-Ind / floor(p_l/p)",
              ["P_S", "l", "beta", "p", "delta", "m", "N (ours / NOTES)", "ceil N", "classes", "N (m = classes)"],
              table)
    return rows


# --------------------------------------------------------------------------- Figs. 1-2


def _panels() -> list[dict]:
    """The four panels of Figs. 1-2: x parameter, grid, sample points and series (fixed
    parameters); the other parameters of a series are fixed, x varies."""
    def series(fixed: list[dict]) -> list[dict]:
        return [dict(label=", ".join(f"{k} = {v:g}" for k, v in f.items()), fixed=f) for f in fixed]

    by_delta = series([dict(beta=b, l=l) for b in (0.01, 0.02) for l in UNIFORM_L])
    return [
        dict(key="fig1a", figure="fig1", marginal="uniform", x="delta", grid=DELTA_GRID, logx=True, logy=False,
             samples=(0.001, 0.01, 0.1, 0.5), series=by_delta, xlabel="delta",
             title="Fig. 1a: uniform P_S, N against delta"),
        dict(key="fig1b", figure="fig1", marginal="uniform", x="p", grid=P_GRID, logx=True, logy=True,
             samples=(0.001, 0.002, 0.005, 0.01, 0.02), xlabel="p",
             series=series([dict(delta=d, l=l) for d in (0.01, 0.001) for l in UNIFORM_L]),
             title="Fig. 1b: uniform P_S, N against p"),
        dict(key="fig2a", figure="fig2", marginal="geometric", x="delta", grid=DELTA_GRID, logx=True, logy=False,
             samples=(0.001, 0.01, 0.1, 0.5), series=by_delta, xlabel="delta",
             title="Fig. 2a: geometric P_S, N against delta"),
        dict(key="fig2b", figure="fig2", marginal="geometric", x="l", grid=L_GRID, logx=False, logy=True,
             samples=(5, 10, 20, 30, 40), xlabel="l",
             series=series([dict(delta=d, beta=b) for d in (0.01, 0.001) for b in (0.01, 0.02)]),
             title="Fig. 2b: geometric P_S, N against l (p = beta p_l)"),
    ]


def _point(marginal: str, values: dict) -> float:
    p = values["p"] if "p" in values else values["beta"] * _p_l(marginal, values["l"])
    return n_exact(marginal, values["l"], values["delta"], p)


def _notes_on(panel: dict, fixed: dict, rows: list[dict]) -> list[tuple]:
    """NOTES.md values on one curve: (x, printed) for the rows whose parameters equal the
    curve's fixed ones and whose x lies in the panel's range."""
    found = []
    lo, hi = min(panel["grid"]), max(panel["grid"])
    for r in rows:
        if r["marginal"] != panel["marginal"]:
            continue
        if all(math.isclose(r[k], v, rel_tol=1e-12) for k, v in fixed.items()) and lo <= r[panel["x"]] <= hi:
            found.append((r[panel["x"]], r["notes"]))
    return sorted(set(found))


def _curves(out: _Output, n_rows: list[dict]) -> tuple[dict, dict]:
    """Every curve of Figs. 1-2 on its grid, sample points (ours beside NOTES.md where it has
    a value) and the figures."""
    results, panels = {}, _panels()
    for panel in panels:
        x = sorted(set(panel["grid"]) | set(panel["samples"]))
        curves = []
        for s in panel["series"]:
            y = [_point(panel["marginal"], {**s["fixed"], panel["x"]: v}) for v in x]
            marks = [dict(x=v, notes=printed, ours=_point(panel["marginal"], {**s["fixed"], panel["x"]: v}))
                     for v, printed in _notes_on(panel, s["fixed"], n_rows)]
            for mk in marks:
                mk["match"] = matches(mk["notes"], mk["ours"])
            curves.append(dict(label=s["label"], fixed=s["fixed"], y=y, notes=marks))
        results[panel["key"]] = dict(title=panel["title"], marginal=panel["marginal"], x_name=panel["x"], x=x,
                                     series=curves, samples=list(panel["samples"]))
        table = []
        for v in panel["samples"]:
            row = [f"{v:g}"]
            for c in curves:
                n = c["y"][x.index(v)]
                mark = next((mk for mk in c["notes"] if math.isclose(mk["x"], v, rel_tol=1e-12)), None)
                flag = "" if mark is None or mark["match"] else " *"
                row.append(f"{n:.1f}" + ("" if mark is None else f" / {mark['notes']}{flag}"))
            table.append(row)
        out.table(f"{panel['title']}: sample points, N before ceil (ours / NOTES.md where it has a value)",
                  [panel["x"]] + [c["label"] for c in curves], table)
    figures = {}
    for name in ("fig1", "fig2"):
        chosen = [p for p in panels if p["figure"] == name]
        fig = _axes_figure({p["title"]: {c["label"]: (results[p["key"]]["x"], c["y"])
                                         for c in results[p["key"]]["series"]} for p in chosen},
                           "", "N (before ceil)", f"{'Fig. 1: uniform' if name == 'fig1' else 'Fig. 2: geometric'} "
                           f"P_S, |Q| = {N_Q}, |S| = {N_S} (x: NOTES.md Sec. 4)")
        for ax, p in zip(fig.axes, chosen):
            for t, line in enumerate(ax.get_lines()):
                line.set_marker("")
                line.set_linestyle("-" if t % 2 == 0 else "--")
            pts = [(mk["x"], mk["notes"]) for c in results[p["key"]]["series"] for mk in c["notes"]]
            if pts:
                ax.plot([a for a, _ in pts], [float(b) for _, b in pts], "kx", markersize=9, label="NOTES.md Sec. 4")
            ax.set_xscale("log" if p["logx"] else "linear")
            ax.set_yscale("log" if p["logy"] else "linear")
            ax.set_xlabel(p["xlabel"])
            ax.legend(fontsize=7)
        figures[name] = fig
    return results, figures


# --------------------------------------------------------------------------- attack


def largest_l_revealed(L: int, t: int) -> int:
    """The largest l whose worst case after t linkages is 1 (Prop. 3.1: l <= L (t-1)/t + 1 when
    t divides L; in general ``L + 1 - ceil(L / t)``)."""
    return L + 1 - math.ceil(L / t)


def _attack(out: _Output) -> dict:
    L = N_S - 1
    rows = []
    for t in T_VALUES:
        cells = {}
        for l in ATTACK_L:
            formula = worst_case_linked_l(L, l, t)
            result = linkage_attack(worst_case_releases(L, l, t), [0] * t)
            cells[l] = dict(formula=formula, attacked=result.l_linked, releases_l=min(result.l_releases),
                            releases_l_max=max(result.l_releases), surviving=[s for s, _ in result.surviving],
                            agree=formula == result.l_linked == result.worst_case_l and min(result.l_releases) == l)
        rows.append(dict(t=t, largest_l_revealed=largest_l_revealed(L, t), cells=cells))
    Lb = BRUTE_S - 1
    brute = [dict(l=l, t=t, formula=worst_case_linked_l(Lb, l, t), brute_force=brute_force_linked_l(Lb, l, t),
                  attacked=linkage_attack(worst_case_releases(Lb, l, t), [0] * t).l_linked)
             for t in T_VALUES for l in range(1, BRUTE_S + 1)]
    agree_brute = sum(b["formula"] == b["brute_force"] == b["attacked"] for b in brute)
    agree = sum(c["agree"] for r in rows for c in r["cells"].values())
    out.heading("Attack table: plain l-diversity after linking t releases",
                f"|S| = {N_S} (L = {L}). Worst case l_[t] = max(1, L + 1 - t (L - l + 1)) (Prop. 3.1; NOTES.md: also "
                "when t does not divide L). Cells 'formula / attack': the attack links the t constructed count tables "
                "(each release l-diverse, one class holding the target) by per-class minimum and counts the surviving "
                "sensitive values. The last column is the largest l left 1-diverse (the target's value revealed).")
    out.table(f"Worst-case l after linking t plain l-diverse releases, |S| = {N_S} (formula / attack on the "
              "constructed releases)", ["t"] + [f"l = {l}" for l in ATTACK_L] + ["l_[t] = 1 up to l ="],
              [[r["t"]] + [f"{c['formula']} / {c['attacked']}" + ("" if c["agree"] else " *")
                           for c in r["cells"].values()] + [r["largest_l_revealed"]] for r in rows])
    out.note(f"Attack: {agree}/{len(rows) * len(ATTACK_L)} cells equal the formula (each constructed release has "
             f"exactly l distinct values). Brute force (|S| = {BRUTE_S}, every l = 1..{BRUTE_S}, t = 2..7): "
             f"{agree_brute}/{len(brute)} equal the formula and the attack, so the construction is the worst case.")
    return dict(L=L, l_values=list(ATTACK_L), rows=rows, agree=agree, cells=len(rows) * len(ATTACK_L),
                brute_force=dict(n_sensitive=BRUTE_S, rows=brute, agree=agree_brute, compared=len(brute)))


# --------------------------------------------------------------------------- mechanism


def _mechanism(out: _Output, dists: dict, s: dict, rng, work) -> dict:
    dist = dists["uniform"]
    T = max(T_VALUES)
    plans = {l: plan_diversity(dist, l, MC_DELTA, beta=MC_BETA, t=T) for l in (*ATTACK_L, MC_L)}
    ref = plans[MC_L]
    same = all(np.array_equal(pl.class_of, ref.class_of) and pl.n_samples == ref.n_samples and pl.p == ref.p
               for pl in plans.values())
    plan_rows = [dict(l=l, p=pl.p, m=pl.m, classes=pl.classes, n_samples=pl.n_samples,
                      n_samples_exact=pl.n_samples_exact) for l, pl in plans.items()]
    # l = |S|: a release fails iff a cell (class, s) of a non-empty class is empty. Multinomial
    # counts are negatively associated (Joag-Dev and Proschan 1983), so Pr[no cell empty] <=
    # prod (1 - q_c) <= exp(-sum q_c), q_c = (1 - P(qbar, s))^N: Pr[fail] >= 1 - exp(-sum q_c) per
    # release and >= 1 - exp(-t sum q_c) for t independent releases linked (up to the chance of an
    # empty class, (1 - 1/100)^N < 1e-200 here), while Theorems 4.4/4.5 give <= delta, t delta.
    empty = float(np.sum((1.0 - class_masses(dist, ref.class_of)) ** ref.n_samples))
    runs = []
    for t in T_VALUES:
        mc = linkage_monte_carlo(dist, ref.class_of, ref.n_samples, MC_L, t=t, runs=s["runs"], delta=MC_DELTA,
                                 confidence=CONFIDENCE, random_state=rng)
        d = mc.to_dict()
        d.update(t_delta=t * MC_DELTA, guarantee=1 - t * MC_DELTA, lower_bound=-math.expm1(-t * empty),
                 consistent=d["linked_interval"][0] <= t * MC_DELTA,
                 below=d["linked_interval"][1] <= t * MC_DELTA)
        runs.append(d)
        work.update()
    out.heading("The mechanism after linkage (Theorem 4.5)",
                f"Uniform P_S, beta = {MC_BETA}, delta = {MC_DELTA}: p = {ref.p:g}, {ref.classes} classes, "
                f"N = {ref.n_samples} (before ceil {ref.n_samples_exact:.1f}) -- the same plan for l = "
                f"{', '.join(map(str, plans))} ({'checked' if same else 'NOT the same: see the JSON'}). Each release "
                f"is l-diverse with probability >= 1 - delta; t releases linked by per-class minimum stay l-diverse "
                f"with probability >= 1 - t delta, for every l <= {MC_L}. Monte Carlo at l = {MC_L} (its failures "
                f"include those of every smaller l), {s['runs']} runs per t (seeded), {int(CONFIDENCE * 100)}% "
                "Clopper-Pearson intervals.")
    ci = lambda v: f"[{v[0]:.4f}, {v[1]:.4f}]"  # noqa: E731
    out.table(f"Mechanism: failure rate after linking t releases (l = {MC_L}, delta = {MC_DELTA}, N = "
              f"{ref.n_samples}) against t delta",
              ["t", "guarantee", "t delta", "linked failures", "rate", "99% interval", "<= t delta (interval)",
               "lower bound", "release rate", "release 99% interval"],
              [[r["t"], f"({MC_L}, {r['t_delta']:g})", f"{r['t_delta']:g}",
                f"{r['linked_failures']}/{r['linked_trials']}", f"{r['linked_rate']:.4f}", ci(r["linked_interval"]),
                ("yes" if r["consistent"] else "NO") + (", upper end below" if r["below"] else ""),
                f"{r['lower_bound']:.4f}", f"{r['release_rate']:.4f}", ci(r["release_interval"])] for r in runs])
    release = stats.binomtest(sum(r["release_failures"] for r in runs), sum(r["release_trials"] for r in runs))
    pooled = release.proportion_ci(confidence_level=CONFIDENCE, method="exact")
    out.note(f"At l = |S| the union bound of Theorem 4.4 is nearly attained: the sum over the {ref.classes * N_S} "
             f"cells of (1 - P(qbar, s))^N is {empty:.4f} (<= delta = {MC_DELTA}), and since multinomial counts are "
             "negatively associated a release fails with probability at least 1 - exp(-sum) = "
             f"{-math.expm1(-empty):.4f}, t linked ones with at least 1 - exp(-t sum) ('lower bound'; an empty class, "
             "probability < 1e-200, neglected): the true rates lie between that and delta, t delta. "
             f"Releases pooled over t: {release.k}/{release.n} failed, rate "
             f"{release.k / release.n:.4f}, {int(CONFIDENCE * 100)}% interval [{pooled.low:.4f}, {pooled.high:.4f}].")
    return dict(plans=plan_rows, same_plan=same, l=MC_L, beta=MC_BETA, delta=MC_DELTA, p=ref.p, classes=ref.classes,
                n_samples=ref.n_samples, runs_per_t=s["runs"], confidence=CONFIDENCE, expected_empty_cells=empty,
                monte_carlo=runs, release_pooled=dict(failures=release.k, trials=release.n, rate=release.k / release.n,
                                                      interval=[pooled.low, pooled.high]))


# --------------------------------------------------------------------------- Pareto front


def _pareto(out: _Output, dists: dict, s: dict, work) -> tuple[dict, object]:
    res, panels = {}, {}
    for marginal, l in s["pareto"]:
        front = pareto_front(dists[marginal], l, PARETO_DELTA)
        key = f"{marginal}, l = {l}"
        res[key] = dict(marginal=marginal, l=l, rows=front.to_dict(orient="records"))
        panels.setdefault(f"{marginal} P_S", {})[f"l = {l}"] = (front["n_samples"].tolist(), front["classes"].tolist())
        work.update()
    fig = _axes_figure(panels, "N", "classes", f"Pareto front: classes against N (greedy, delta = {PARETO_DELTA}; "
                       "ours, not in the paper)", logx=True)
    for ax in fig.axes:
        ax.set_yscale("log")
        for line in ax.get_lines():
            line.set_markersize(3)
    rows = []
    for key, r in res.items():
        for c in (100, 50):  # the plans of beta = .01 and .02
            hit = next((x for x in r["rows"] if x["classes"] == c), None)
            if hit is not None:
                rows.append([key, c, f"{hit['p']:.6g}", hit["n_samples"], f"{hit['n_samples_exact']:.1f}"])
        r["points"] = len(r["rows"])
    out.heading("Pareto front (ours)", "Every class count R of Greedy-Generalize with the largest p reaching it and "
                f"its N (delta = {PARETO_DELTA}, m of Lemma 4.3), rows with no fewer samples than a larger R left out: "
                "Remark 2's trade-off (more classes, more samples). "
                + "; ".join(f"{k}: {r['points']} points, R = {r['rows'][0]['classes']} .. {r['rows'][-1]['classes']}"
                            for k, r in res.items()) + ".")
    out.table("Pareto front at the class counts of beta = .01 and .02", ["P_S, l", "classes", "largest p", "N",
                                                                        "N before ceil"], rows)
    return res, fig


# --------------------------------------------------------------------------- statements


def _monotone(values, increasing: bool) -> bool:
    d = np.diff(np.asarray(values, dtype=float))
    return bool((d > 0).all() if increasing else (d < 0).all())


def _statements(results: dict) -> list:
    """(source, statement, holds, detail)."""
    f = results["figures"]
    rows = results["n_values"]
    st = []
    uni = sorted({(r["beta"], r["p"]) for r in rows if r["marginal"] == "uniform"})
    st.append(("Sec. 5", "uniform P_S: p = beta / |S| (2e-4 and 4e-4 for beta = .01, .02)",
               all(math.isclose(p, b / N_S, rel_tol=1e-12) for b, p in uni),
               ", ".join(f"beta = {b:g}: p = {p:g}" for b, p in uni)))
    p1 = geometric_p1()
    st.append(("Sec. 5", f"rho = {RHO} gives p_1 ~ {P1_PAPER}", matches(P1_PAPER, p1), f"p_1 = {p1:.6f}"))
    diffs = []
    for key in ("fig1a", "fig1b"):
        curves = {tuple(sorted(c["fixed"].items())): c["y"] for c in f[key]["series"]}
        for fixed, y in curves.items():
            other = dict(fixed)
            if other.get("l") == UNIFORM_L[0]:
                other["l"] = UNIFORM_L[1]
                y2 = curves[tuple(sorted(other.items()))]
                diffs.append(max(abs(a - b) / a for a, b in zip(y, y2)))
    st.append(("Sec. 5, Fig. 1", "uniform P_S: m l = 1/p, so N does not vary with l (l = 10 against 30)",
               max(diffs) <= 1e-12, f"largest relative difference {max(diffs):.1e}"))
    for key, name in (("fig1a", "Fig. 1a"), ("fig2a", "Fig. 2a")):
        ok = all(_monotone(c["y"], increasing=False) for c in f[key]["series"])
        st.append((f"Sec. 5, {name}", "N decreases as delta increases", ok,
                   f"every curve strictly decreasing on {len(f[key]['x'])} points" if ok else "not every curve"))
    ok = all(_monotone(c["y"], increasing=False) for c in f["fig1b"]["series"])
    st.append(("Sec. 5, Fig. 1b", "smaller p (more classes) needs more samples", ok,
               "N strictly decreasing in p on [1e-3, 1/|S|]" if ok else "not every curve"))
    by = {tuple(sorted(c["fixed"].items())): c["y"] for c in f["fig2a"]["series"]}
    above = all(all(b > a for a, b in zip(by[(("beta", beta), ("l", UNIFORM_L[0]))],
                                          by[(("beta", beta), ("l", UNIFORM_L[1]))]))
                for beta in (0.01, 0.02))
    inc = all(_monotone(c["y"], increasing=True) for c in f["fig2b"]["series"])
    st.append(("Sec. 5, Fig. 2", "geometric P_S: larger l needs more samples", above and inc,
               f"l = 30 above l = 10 at every delta: {_fmt(above)}; N increasing in l = 5..40: {_fmt(inc)}"))
    cls = all(r["classes_greedy"] == r["classes_independent"] == r["classes_corollary"] for r in rows)
    st.append(("Corollary 4.8, Prop. 4.6", "uniform P_Q: Greedy-Generalize and Generalize-Ind give floor(p_l / p) "
               "classes", cls, ", ".join(sorted({f"beta = {r['beta']:g}: {r['classes_greedy']}" for r in rows}))))
    a = results["attack"]
    b = a["brute_force"]
    st.append(("Prop. 3.1, Cor. 3.3", f"worst case after linkage: l_[t] = max(1, L + 1 - t (L - l + 1)), |S| = {N_S}",
               a["agree"] == a["cells"] and b["agree"] == b["compared"],
               f"attack on the construction {a['agree']}/{a['cells']}; brute force |S| = {BRUTE_S}: "
               f"{b['agree']}/{b['compared']}"))
    mech = results["mechanism"]["monte_carlo"]
    st.append(("Theorem 4.5", "t linked releases of the mechanism fail with probability <= t delta",
               all(r["consistent"] for r in mech),
               "; ".join(f"t = {r['t']}: {r['linked_rate']:.3f} [{r['linked_interval'][0]:.3f}, "
                         f"{r['linked_interval'][1]:.3f}] vs {r['t_delta']:g}" for r in mech)))
    pooled = results["mechanism"]["release_pooled"]
    st.append(("Theorem 4.4", "each release fails with probability <= delta", pooled["interval"][0] <= MC_DELTA,
               f"{pooled['failures']}/{pooled['trials']} releases: {pooled['rate']:.4f} [{pooled['interval'][0]:.4f}, "
               f"{pooled['interval'][1]:.4f}] vs delta = {MC_DELTA}"))
    return st


# --------------------------------------------------------------------------- driver


def reproduce_diversity(output_dir="report", data_dir=None, quick: bool = False, progress=None,
                        random_state: int = SEED) -> dict:
    """Recompute paper 4's numbers (NOTES.md Sec. 4 N values, Figs. 1-2, the linkage attack and
    Theorem 4.5's Monte Carlo) and print them beside the paper's.

    Writes ``diversity.html``, the printed text ``diversity.txt``, the numbers ``diversity.json``
    and the figures ``diversity_fig1.png``, ``diversity_fig2.png`` and ``diversity_pareto.png``
    into ``output_dir`` and returns the numbers (JSON-serialisable) plus ``"text"``. The paper's
    setting is synthetic, so ``data_dir`` is not used (accepted for the common interface).
    ``quick``: 100 Monte Carlo runs per t instead of 3000 and the Pareto front of the uniform
    marginal only (everything else as in the full run).
    ``progress``: None or a callback ``progress(stage, step, steps)`` over the steps
    (:mod:`probanon.progress`). ``random_state`` seeds the Monte Carlo.
    """
    start = time.perf_counter()
    output_dir = Path(output_dir)
    rng = check_random_state(random_state)
    s = _settings(quick)
    steps = 4 + len(T_VALUES) + len(s["pareto"])

    report = Report("Paper 4: (l, delta)-diversity, N values, Figs. 1-2 and the linkage attack (ours beside the "
                    "paper's)")
    out = _Output(report)
    if quick:
        out.note(f"QUICK MODE: {s['runs']} Monte Carlo runs per t (full run: {_settings(False)['runs']}) and the "
                 "Pareto front of the uniform marginal only; everything else is as in the full run.")
    results: dict = {"quick": quick, "random_state": random_state if isinstance(random_state, int) else None,
                     "settings": s, "n_qi": N_Q, "n_sensitive": N_S, "rho": RHO, "p1": geometric_p1()}
    work = Steps(progress, steps)
    dists = _distributions()
    results["n_values"] = _n_values(out, dists)
    work.update()
    out.heading("Figs. 1-2: N against delta, p and l",
                "The paper's figures are not in its text, which states no N value: our curves for the parameters "
                "it gives (Sec. 5), with NOTES.md Sec. 4's values where they fall on a curve ('*': a difference "
                "at the printed 0.1).")
    results["figures"], figs = _curves(out, results["n_values"])
    work.update()
    results["attack"] = _attack(out)
    work.update()
    results["mechanism"] = _mechanism(out, dists, s, rng, work)
    results["pareto"], pareto_fig = _pareto(out, dists, s, work)
    work.update()

    statements = _statements(results)
    figures = [("diversity_fig1", figs["fig1"], "Fig. 1 (uniform P_S): N against delta (a) and against p (b); "
                "l = 30 dashed, on top of l = 10; x: NOTES.md Sec. 4."),
               ("diversity_fig2", figs["fig2"], "Fig. 2 (geometric P_S, rho = .95): N against delta (a) and against "
                "l (b); dashed: l = 30 (a), beta = .02 (b); x: NOTES.md Sec. 4."),
               ("diversity_pareto", pareto_fig, "Pareto front of Greedy-Generalize: classes against N (ours).")]
    out.heading("Figures", "Figures follow (PNG files beside this page).")
    for name, fig, caption in figures:
        report.figure(name, fig, caption)
    out.table("Statements of the text", ["source", "statement", "holds", "detail"],
              [[src, t, "yes" if h else "NO", d] for src, t, h, d in statements])

    nv = results["n_values"]
    a, mech = results["attack"], results["mechanism"]
    elapsed = time.perf_counter() - start
    beta02 = [r for r in results["n_values"] if r["classes_notes"] is not None]
    marks = [mk for v in results["figures"].values() for c in v["series"] for mk in c["notes"]]
    summary = [f"NOTES.md Sec. 4 N values: {sum(r['match'] for r in nv)}/{len(nv)} match to 0.1 (largest |ours - "
               f"NOTES| = {max(r['abs_diff'] for r in nv):.3f})",
               f"Classes, |Q| = {N_Q} uniform, beta = .02: " + ", ".join(
                   f"l = {r['l']}: {r['classes_greedy']} (greedy) / {r['classes_independent']} (Generalize-Ind)"
                   for r in beta02) + f" (NOTES: {NOTES_CLASSES['classes']})",
               f"Figs. 1-2: {sum(len(v['series']) for v in results['figures'].values())} curves; NOTES points on them "
               f"match: {sum(mk['match'] for mk in marks)}/{len(marks)}",
               f"Attack (|S| = {N_S}, t = 2..7, l = {', '.join(map(str, ATTACK_L))}): {a['agree']}/{a['cells']} cells "
               f"formula = attack; brute force |S| = {BRUTE_S}: {a['brute_force']['agree']}/"
               f"{a['brute_force']['compared']}; l = 49 falls to "
               + ", ".join(str(r["cells"][49]["formula"]) for r in a["rows"]) + " for t = 2..7",
               f"Mechanism (l = {mech['l']}, delta = {mech['delta']}, N = {mech['n_samples']}, "
               f"{mech['runs_per_t']} runs per t): linked failure rate "
               + ", ".join(f"{r['linked_rate']:.3f}" for r in mech["monte_carlo"])
               + " against t delta = " + ", ".join(f"{r['t_delta']:g}" for r in mech["monte_carlo"])
               + f"; within the 99% interval: {sum(r['consistent'] for r in mech['monte_carlo'])}/"
               f"{len(mech['monte_carlo'])}",
               f"Statements of the text that hold: {sum(h for _, _, h, _ in statements)}/{len(statements)}",
               f"{'QUICK MODE; ' if quick else ''}{elapsed:.1f} s"]
    out.heading("Summary", "\n".join(summary))

    results.update({
        "statements": [dict(source=src, statement=t, holds=h, detail=d) for src, t, h, d in statements],
        "runtime_seconds": elapsed,
    })
    return _finish(output_dir, report, out, results, figures, "diversity")

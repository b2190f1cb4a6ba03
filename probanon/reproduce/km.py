"""Reproduction of paper 5 (probabilistic k^m-anonymity for set-valued data, Secs. III-VI):
our values beside the paper's (NOTES.md Sec. 5; issue 7 item 10).

=====================  ====================================================================
Sec. VI-E, Theorem 1   gamma(sigma) at sigma = .99 and .999 (paper: 45,845 and 5,866,617,
                       two-sided bound of NOTES.md), the one-sided bound as printed in
                       Theorem 1, and the uniqueness sample size 26,492 (Sec. VI-B,
                       eps = delta = .01)
Example 1, Table I     the seven records of Table I, k = 2, m = 2, sigma = .99, the
                       hierarchy of Fig. 1 and the geographic distance: Boston is merged with
                       New York; the independent checker's fractions per l
Figs. 2-6              a synthetic CDR (:func:`probanon.setvalued.cdr.generate_cdr`,
                       calibrated to Table II), Voronoi contiguity constraints
                       (:func:`probanon.setvalued.constraints.constraints_from_coordinates`),
                       k = 10, 20, m = 5..11, sigma = .99 at the paper's size and .99, .999
                       on 100,000 users: number of parts, average error in metres,
                       partition sizes and uniqueness of l-itemsets against l
=====================  ====================================================================

Measures of the grid (paper, Sec. VI-C/E):

* number of parts: ``Generalization.n_parts`` (the paper's "partitions", 1303 originally);
* average error ``err(D, D') = sum_i occ_i ||c_i - c_R(i)|| / sum_i occ_i`` in metres
  (``Generalization.err``: ``partition_error`` with the centroids of the towers' clipped Voronoi
  cells and the centroid of the union of a part's cells, footnote 7);
* partition size, three ways: the paper's (Fig. 6, "the size of each partition is weighted with
  the number of individuals within the partition"): ``sum_P area(P) n_P / sum_P n_P`` with n_P
  the number of records holding a tower of P; area-weighted: ``sum_P area(P)^2 / sum_P area(P)``
  (the mean area of the part containing a uniformly drawn point of the city); and the plain mean
  ``total area / parts``;
* uniqueness of l-itemsets (Sec. VI-B): share of the distinct l-itemsets with support 1,
  estimated from uniform samples (:func:`probanon.setvalued.estimate_uniqueness`), on the
  original records and on the released ones (items = parts).

Scale. The paper's data (4,427,486 users) are not public. The grid runs on a synthetic CDR of
the paper's size for sigma = .99 (one run of m = 11 per k gives m = 5..11: each run's partition
after level m is what a run with that m returns) and, for sigma = .999 (gamma = 5,866,617
draws per level: hours per run at the paper's size), on a 100,000-user CDR beside .99 on the
same data, whose absolute numbers are not comparable with the paper's (smaller supports need
coarser partitions), only its trends. r = 1 here (paper: r = 10; ``benchmarks/km.py`` runs
r = 10 at the paper's size). The deterministic phase l <= 4 is left out (the benchmark runs
l <= 3 on 100,000 users); both are stated in the output.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np

from ..progress import Steps
from .._validation import check_random_state
from ..report import Report
from ..setvalued import (
    anonymize,
    check_release,
    estimate_uniqueness,
    from_iterables,
    release_data,
    sample_size,
    uniqueness_sample_size,
)
from ..setvalued.cdr import TABLE_II, generate_cdr
from ..setvalued.constraints import (
    constraints_from_coordinates,
    constraints_from_hierarchy,
)
from ..setvalued.data import by_decreasing_size, from_pairs
from ..setvalued.pairs import build_pair_index
from .surveys import _axes_figure, _finish, _fmt, _Output, matches

SEED = 2016  # the CLI's default --seed

#: Sec. VI-E: gamma of the two-sided bound (NOTES.md Sec. 5) and Sec. VI-B: uniqueness samples.
PAPER_GAMMA = {0.99: "45845", 0.999: "5866617"}
PAPER_UNIQUENESS_N = "26492"

#: Table I (Sec. II) and the hierarchy of Fig. 1. The paper names the part {New York, Boston}
#: "West" and {LA, Seattle} "East" (Example 1); we keep its names.
TABLE_I = (("LA",), ("LA", "Seattle"), ("New York", "Boston"), ("New York", "Boston"),
           ("LA", "Seattle", "New York"), ("LA", "Seattle", "New York"),
           ("LA", "Seattle", "New York", "Boston"))
HIERARCHY = (("New York", "West"), ("Boston", "West"), ("LA", "East"), ("Seattle", "East"),
             ("West", "US"), ("East", "US"))
#: city centres (latitude, longitude), projected equirectangularly to km at 40 degrees N
CITIES = {"LA": (34.05, -118.24), "Seattle": (47.61, -122.33), "New York": (40.71, -74.01),
          "Boston": (42.36, -71.06)}

#: Fig. 3 (k = 20, r = 10): (m, sigma) -> (partitions, average error in metres)
PAPER_FIG3 = {(4, 1.0): (337, 120), (5, 0.99): (296, 143), (8, 0.99): (158, 264), (11, 0.99): (143, 284),
              (5, 0.999): (234, 184), (8, 0.999): (121, 314), (11, 0.999): (118, 331)}
#: Sec. VI-B / Fig. 2: uniqueness of l towers on the original data
PAPER_UNIQUENESS = {5: "0.2", 11: "0.78"}
PAPER_SIZE = {"original": "0.1", 0.99: "1", 0.999: "1.3"}  # Fig. 6, km^2

#: the grid's scales: the paper's size for sigma = .99, and a reduced one where sigma = .999
#: (gamma = 5,866,617 draws per level, 128x the .99 work: hours per run at the paper's size) fits
BLOCKS = ({"users": TABLE_II["users"], "sigma": [0.99]}, {"users": 100_000, "sigma": [0.99, 0.999]})


def _settings(quick: bool) -> dict:
    if quick:
        towers = 120
        return dict(blocks=({"users": 1500, "sigma": [0.99]},), towers=towers,
                    area_km2=TABLE_II["area_km2"] * towers / TABLE_II["towers"], size_max=25, size_mean=4.0,
                    size_sd=3.0, k=[10], m=[2, 3], runs=1, uniqueness_l=[1, 2, 3], uniqueness_samples=2000,
                    check_limit=2_000_000, released_uniqueness=True)
    return dict(blocks=BLOCKS, towers=TABLE_II["towers"], area_km2=TABLE_II["area_km2"],
                size_max=TABLE_II["size_max"], size_mean=TABLE_II["size_mean"], size_sd=TABLE_II["size_sd"],
                k=[10, 20], m=list(range(5, 12)), runs=1, uniqueness_l=list(range(1, 12)),
                uniqueness_samples=uniqueness_sample_size(0.01, 0.01), check_limit=2_000_000,
                released_uniqueness=False)


# --------------------------------------------------------------------------- gamma


def _gamma(out: _Output) -> dict:
    rows = []
    for sigma, printed in PAPER_GAMMA.items():
        two = sample_size(sigma)
        one = sample_size(sigma, bound="one-sided")
        rows.append(dict(sigma=sigma, gamma=two.gamma, paper=printed, match=matches(printed, two.gamma),
                         epsilon=two.epsilon, delta=two.delta, gamma_one_sided=one.gamma,
                         epsilon_one_sided=one.epsilon, delta_one_sided=one.delta))
    n_u = uniqueness_sample_size(0.01, 0.01)
    out.heading("gamma(sigma) (Theorem 1, Sec. VI-E)",
                "Two-sided bound (NOTES.md Sec. 5): minimise ln(2/delta)/(2 eps^2) s.t. (1 - eps)(1 - delta) = sigma; "
                "one-sided: Theorem 1, condition 3 as printed (ln(1/delta)). Uniqueness: ln(2/delta)/(2 eps^2) at "
                "eps = delta = .01 (Sec. VI-B).")
    out.table("gamma, ours / paper ('*': differs)", ["sigma", "gamma two-sided", "eps", "delta", "gamma one-sided",
                                                     "eps (1-s.)", "delta (1-s.)"],
              [[f"{r['sigma']:g}", f"{r['gamma']:,} / {int(r['paper']):,}" + ("" if r["match"] else " *"),
                _fmt(r["epsilon"], 6), _fmt(r["delta"], 6), f"{r['gamma_one_sided']:,}",
                _fmt(r["epsilon_one_sided"], 6), _fmt(r["delta_one_sided"], 6)] for r in rows])
    ok = matches(PAPER_UNIQUENESS_N, n_u)
    out.note(f"Uniqueness sample size (eps = delta = .01): {n_u:,} / {int(PAPER_UNIQUENESS_N):,}" + ("" if ok else " *"))
    return dict(rows=rows, uniqueness_samples=n_u, uniqueness_paper=int(PAPER_UNIQUENESS_N), uniqueness_match=ok)


# --------------------------------------------------------------------------- Example 1


def _km(lat_lon) -> tuple[float, float]:
    lat, lon = lat_lon
    r = 6371.0
    return (r * math.radians(lon) * math.cos(math.radians(40.0)), r * math.radians(lat))


def _example1(out: _Output, rng) -> dict:
    import pandas as pd

    data = from_iterables(TABLE_I)
    cons = constraints_from_hierarchy(pd.DataFrame(HIERARCHY, columns=["child", "parent"]),
                                      coordinates={c: _km(v) for c, v in CITIES.items()})
    g = anonymize(data, 2, 2, 0.99, constraints=cons, random_state=rng)
    mapping = g.mapping()
    parts: dict = {}
    for city, p in mapping.items():
        parts.setdefault(p, []).append(city)
    groups = sorted(sorted(v) for v in parts.values())
    before = check_release(TABLE_I, {c: i for i, c in enumerate(CITIES)}, 2, 2)
    after = check_release(TABLE_I, mapping, 2, 2)
    merged = mapping["Boston"] == mapping["New York"] and len(parts) == 3
    name = {frozenset(("New York", "Boston")): "West", frozenset(("LA", "Seattle")): "East"}
    released = [sorted({name.get(frozenset(parts[mapping[c]]), c) for c in rec}) for rec in TABLE_I]
    out.heading("Example 1 (Table I, k = 2, m = 2, sigma = .99)",
                "Table I's seven records; constraints: horizontal cuts of the hierarchy of Fig. 1 (US -> West = "
                "{New York, Boston}, East = {LA, Seattle}, the paper's names); err: geographic distance (city "
                "centres, km). The paper: {LA, Boston} fails 2-anonymity, Boston is merged with New York (the "
                "closer pair), and the result is 2^2-anonymous.")
    out.table("Example 1: partition and released records", ["rec#", "items", "released"],
              [[u + 1, ", ".join(r), ", ".join(x)] for u, (r, x) in enumerate(zip(TABLE_I, released))])
    out.table("Example 1: checker (exact), fraction of k-anonymous distinct l-itemsets",
              ["l", "itemsets", "before", "after"],
              [[l, n, f"{a0}/{n} = {f0:.3f}", f"{a1}/{n1} = {f1:.3f}"] for l, n, a0, f0, n1, a1, f1 in
               zip(before.levels, before.n_itemsets, before.n_anonymous, before.fractions, after.n_itemsets,
                   after.n_anonymous, after.fractions)])
    out.note(f"Partition: {' | '.join('{' + ', '.join(p) + '}' for p in groups)}; err = {g.err:.1f} km; "
             f"Boston merged with New York: {_fmt(merged)}; 2^2-anonymous (fraction 1 at every l): "
             f"{_fmt(after.satisfies(1.0))} (paper: yes, yes).")
    return dict(partition=groups, err_km=g.err, boston_with_new_york=merged, released=released,
                check_before=before.to_dict(), check_after=after.to_dict(), satisfied=after.satisfies(1.0))


# --------------------------------------------------------------------------- CDR grid


def _cdr(s: dict, users: int, rng):
    cdr = generate_cdr(users, towers=s["towers"], area_km2=s["area_km2"], size_max=s["size_max"],
                       size_mean=s["size_mean"], size_sd=s["size_sd"], random_state=rng)
    sizes = np.diff(cdr.indptr)
    labels = np.array([str(i) for i in range(len(cdr.towers))], dtype=object)
    data = from_pairs(np.repeat(np.arange(len(sizes)), sizes), cdr.indices, labels)
    cons = constraints_from_coordinates(cdr.towers, bounds=(0.0, 0.0, cdr.side, cdr.side))
    return cdr, data, cons


def partition_sizes(partition, areas, holders) -> dict:
    """Partition sizes in km^2 (areas in m^2): the paper's (Fig. 6: area of each part weighted by
    ``holders``, the number of records holding one of its towers), area-weighted and plain mean."""
    part = np.asarray(partition, dtype=np.int64)
    n_parts = int(part.max()) + 1
    area = np.bincount(part, weights=areas, minlength=n_parts) / 1e6
    holders = np.asarray(holders, dtype=float)
    return dict(individual_weighted=float((area * holders).sum() / holders.sum()),
                area_weighted=float((area ** 2).sum() / area.sum()), mean=float(area.mean()))


def _itemset_count(sizes: np.ndarray, m: int) -> int:
    """sum over records of sum_{l <= m} C(|D_u|, l): the checker's enumeration work."""
    values, counts = np.unique(sizes, return_counts=True)
    return int(sum(int(c) * sum(math.comb(int(n), l) for l in range(1, m + 1)) for n, c in zip(values, counts)))


def _uniqueness(data, ls, n, rng) -> list:
    data = by_decreasing_size(data)
    pairs = build_pair_index(data)
    longest = int(data.record_sizes.max())
    return [None if l > longest else estimate_uniqueness(data, l, n_samples=n, random_state=rng, pairs=pairs).fraction
            for l in ls]


def _block(s: dict, block: dict, rng, work) -> tuple[dict, list]:
    """One scale of the grid: a CDR of ``block["users"]``, a run of m = max(m) per (k, sigma) that
    also gives every smaller m of the grid (``anonymize(..., also_m=...)``)."""
    users = block["users"]
    cdr, data, cons = _cdr(s, users, rng)
    sizes = np.diff(cdr.indptr)
    original = partition_sizes(np.arange(len(cdr.towers)), cons.areas, np.bincount(cdr.indices, minlength=len(cdr.towers)))
    u_orig = _uniqueness(data, s["uniqueness_l"], s["uniqueness_samples"], rng)
    work.update()
    records = None
    rows = []
    top, others = max(s["m"]), tuple(m for m in s["m"] if m < max(s["m"]))
    for k in s["k"]:
        for sigma in block["sigma"]:
            t0 = time.perf_counter()
            full = anonymize(data, k, top, sigma, constraints=cons, runs=s["runs"], random_state=rng, also_m=others)
            seconds = time.perf_counter() - t0
            for m in s["m"]:
                g = full if m == top else full.earlier[m]
                released = release_data(data, g)
                row = dict(users=users, k=k, sigma=sigma, m=m, n_parts=g.n_parts, err_m=g.err, seconds=seconds,
                           sampled_fractions=[lv.fraction for lv in g.levels], satisfied=g.satisfied,
                           **partition_sizes(g.partition, cons.areas, released.item_counts))
                if _itemset_count(sizes, m) <= s["check_limit"]:
                    if records is None:
                        records = [cdr.indices[a:b].astype(str).tolist() for a, b in zip(cdr.indptr[:-1], cdr.indptr[1:])]
                    chk = check_release(records, g.mapping(), k, m)
                    row.update(check_fractions=list(chk.fractions), check_passes=chk.satisfies(sigma))
                else:
                    row.update(check_fractions=None, check_passes=None)
                row["uniqueness_released"] = (_uniqueness(released, s["uniqueness_l"], s["uniqueness_samples"], rng)
                                              if m == top and s["released_uniqueness"] else None)
                paper = PAPER_FIG3.get((m, sigma)) if k == 20 else None
                row["paper_parts"], row["paper_err_m"] = paper if paper else (None, None)
                rows.append(row)
            work.update()
    info = dict(users=users, sigma=list(block["sigma"]), size_mean=float(sizes.mean()), size_sd=float(sizes.std()),
                size_max=int(sizes.max()), original=dict(n_parts=len(cdr.towers), **original, uniqueness=u_orig))
    return info, rows


def _grid(out: _Output, s: dict, rng, work) -> tuple[dict, list]:
    blocks, rows = [], []
    for block in s["blocks"]:
        info, block_rows = _block(s, block, rng, work)
        blocks.append(info)
        rows += block_rows
    out.heading("CDR grid (Figs. 2-6, Sec. VI)",
                "Synthetic CDRs (the paper's is not public) on " + f"{s['towers']} towers, {s['area_km2']:.1f} km^2: "
                + "; ".join(f"{b['users']:,} users (record sizes mean {b['size_mean']:.2f}, sd {b['size_sd']:.2f}, "
                            f"max {b['size_max']}; Table II: 11.42, 17.23, 422) at sigma = "
                            f"{', '.join(f'{x:g}' for x in b['sigma'])}" for b in blocks)
                + f". Voronoi contiguity constraints; r = {s['runs']} run(s) (paper: r = 10; benchmarks/km.py runs "
                "r = 10 at the paper's size); exact phase for l = 1. One run of m = "
                f"{max(s['m'])} per (k, sigma) gives every m of the grid (each run's partition after level m). "
                "sigma = .999 needs gamma = 5,866,617 draws per level, 128 times the work of .99 (hours per run "
                "at the paper's size on this machine), so it runs on the reduced CDR, beside .99 on the same "
                "data; with fewer users every support is smaller and coarser partitions are needed, so only the "
                "trends of that block compare with the paper. Left out: the deterministic phase l <= 4 "
                "(Sec. VI-D; benchmarks/km.py runs l <= 3 on 100,000 users), and the uniqueness of the released "
                "itemsets (a release has tens of parts and records of up to hundreds of towers: the sampler's "
                "acceptance falls to 1e-4 and below). Sizes in km^2: 'paper' = weighted "
                "by individuals (Fig. 6), 'area-w.' = weighted by area, 'mean' = total area / parts.")
    out.table("Grid: parts, error (m), partition size (km^2), checker", [
        "users", "k", "sigma", "m", "parts (ours / paper k=20)", "err m (ours / paper)", "size paper-def.",
        "size area-w.", "size mean", "checker fractions", "passes at sigma", "s (run, all m)"],
        [[f"{r['users']:,}", r["k"], f"{r['sigma']:g}", r["m"],
          f"{r['n_parts']}" + (f" / {r['paper_parts']}" if r["paper_parts"] else ""),
          f"{r['err_m']:.0f}" + (f" / {r['paper_err_m']}" if r["paper_err_m"] else ""),
          f"{r['individual_weighted']:.3f}", f"{r['area_weighted']:.3f}", f"{r['mean']:.3f}",
          "n/a (too many itemsets)" if r["check_fractions"] is None else
          " ".join(f"{f:.4f}" for f in r["check_fractions"]), _fmt(r["check_passes"]), f"{r['seconds']:.1f}"]
         for r in rows])
    for b in blocks:
        o = b["original"]
        out.note(f"Original data, {b['users']:,} users: {o['n_parts']} parts, size (paper-def.) "
                 f"{o['individual_weighted']:.3f}, area-w. {o['area_weighted']:.3f}, mean {o['mean']:.3f} km^2 "
                 f"(paper, Fig. 6: {PAPER_SIZE['original']} km^2 on the original; {PAPER_SIZE[0.99]} at sigma = .99, "
                 f"{PAPER_SIZE[0.999]} at .999).")
    released = [r for r in rows if r["uniqueness_released"] is not None]
    headers = (["l"] + [f"original {b['users']:,} (ours / paper)" for b in blocks]
               + [f"released {r['users']:,} k={r['k']} s={r['sigma']:g} m={r['m']}" for r in released])
    table = []
    for j, l in enumerate(s["uniqueness_l"]):
        ref = PAPER_UNIQUENESS.get(l)
        table.append([l] + [_fmt(b["original"]["uniqueness"][j], 3) + (f" / {ref}" if ref else "") for b in blocks]
                     + [_fmt(r["uniqueness_released"][j], 3) for r in released])
    out.table(f"Uniqueness of l-itemsets ({s['uniqueness_samples']:,} uniform samples per l)", headers, table)
    res = dict(settings=s, blocks=blocks, rows=rows)
    ms = s["m"]
    keys = [(b["users"], sig) for b in blocks for sig in b["sigma"]]
    panels_parts = {f"{u:,} users, sigma = {sig:g}": {f"k = {k}": (ms, [r["n_parts"] for r in rows if r["k"] == k
                    and r["sigma"] == sig and r["users"] == u]) for k in s["k"]} for u, sig in keys}
    panels_err = {f"{u:,} users, sigma = {sig:g}": {f"k = {k}": (ms, [r["err_m"] for r in rows if r["k"] == k
                  and r["sigma"] == sig and r["users"] == u]) for k in s["k"]} for u, sig in keys}
    for panels, key in ((panels_parts, 0), (panels_err, 1)):
        for (u, sig), p in zip(keys, panels.values()):
            paper = [(m, v[key]) for (m, psig), v in PAPER_FIG3.items() if psig == sig]
            if paper:
                p["paper (k = 20, 4.4M users, r = 10)"] = ([a for a, _ in paper], [b for _, b in paper])
    uniq = {"uniqueness": {**{f"original {b['users']:,}": (s["uniqueness_l"], b["original"]["uniqueness"])
                              for b in blocks},
                           **{f"released {r['users']:,} k={r['k']} s={r['sigma']:g} m={r['m']}":
                              (s["uniqueness_l"], r["uniqueness_released"]) for r in released},
                           "paper (original)": (list(PAPER_UNIQUENESS), [float(v) for v in PAPER_UNIQUENESS.values()])}}
    figures = [("km_parts", _axes_figure(panels_parts, "m", "number of parts", "Number of parts against m (Fig. 4)"),
                "Number of parts against m (ours on the synthetic CDRs; the paper's Fig. 3 values for k = 20)."),
               ("km_error", _axes_figure(panels_err, "m", "average error (m)", "Average error against m (Fig. 5)"),
                "Average error in metres against m."),
               ("km_uniqueness", _axes_figure(uniq, "l", "uniqueness", "Uniqueness of l-itemsets (Fig. 2)"),
                "Uniqueness of l-itemsets against l, original and released (the m = 11 releases).")]
    return res, figures


# --------------------------------------------------------------------------- driver


def reproduce_km(output_dir="report", data_dir=None, quick: bool = False, progress=None,
                 random_state: int = SEED) -> dict:
    """Recompute paper 5's numbers (gamma, Example 1, the CDR grid) beside the paper's.

    Writes ``km.html``, ``km.txt``, ``km.json`` and ``km_parts.png``, ``km_error.png``,
    ``km_uniqueness.png`` into ``output_dir`` and returns the numbers plus ``"text"``. The data
    are synthetic (the paper's CDR is not public), so ``data_dir`` is not used. ``quick``: a
    tiny CDR (1500 users, 120 towers, record sizes of mean 4, sd 3, at most 25), k = 10, m = 2, 3. ``random_state`` seeds the CDR and runs.
    ``progress``: None or a callback ``progress(stage, step, steps)`` (:mod:`probanon.progress`).
    """
    start = time.perf_counter()
    output_dir = Path(output_dir)
    rng = check_random_state(random_state)
    s = _settings(quick)
    steps = 2 + sum(1 + len(s["k"]) * len(b["sigma"]) for b in s["blocks"])
    report = Report("Paper 5: probabilistic k^m-anonymity (ours beside the paper's)")
    out = _Output(report)
    if quick:
        out.note(f"QUICK MODE: a tiny CDR ({s['blocks'][0]['users']} users, {s['towers']} towers, record sizes of mean 4, sd 3, at most 25), k = 10, m = 2, 3; "
                 "not comparable with the paper.")
    results: dict = {"quick": quick, "random_state": random_state if isinstance(random_state, int) else None}
    work = Steps(progress, steps)
    results["gamma"] = _gamma(out)
    work.update()
    results["example1"] = _example1(out, rng)
    work.update()
    results["grid"], figures = _grid(out, s, rng, work)
    out.heading("Figures", "Figures follow (PNG files beside this page).")
    for name, fig, caption in figures:
        report.figure(name, fig, caption)
    elapsed = time.perf_counter() - start
    gm = results["gamma"]["rows"]
    rows = results["grid"]["rows"]
    checked = [r for r in rows if r["check_passes"] is not None]
    summary = ["gamma: " + ", ".join(f"sigma = {r['sigma']:g}: {r['gamma']:,} / {int(r['paper']):,}"
                                     + ("" if r["match"] else " *") for r in gm)
               + f"; uniqueness samples {results['gamma']['uniqueness_samples']:,} / 26,492",
               f"Example 1: {results['example1']['partition']}; Boston with New York: "
               f"{_fmt(results['example1']['boston_with_new_york'])}; 2^2-anonymous: "
               f"{_fmt(results['example1']['satisfied'])}",
               "Grid: " + "; ".join(f"{r['users']:,} users k={r['k']} s={r['sigma']:g} m={r['m']}: {r['n_parts']} parts, "
                                    f"{r['err_m']:.0f} m" for r in rows),
               f"Checker at sigma: {sum(bool(r['check_passes']) for r in checked)}/{len(checked)} releases pass "
               f"({len(rows) - len(checked)} too large to enumerate)",
               f"{'QUICK MODE; ' if quick else ''}{elapsed:.1f} s"]
    out.heading("Summary", "\n".join(summary))
    results["runtime_seconds"] = elapsed
    return _finish(output_dir, report, out, results, figures, "km")

"""Benchmark of the attribute-disclosure measures (issue 42): probanon's measures beside a
third-party evaluator's (anonymeter) inference and linkability risks, and the time of each on
100,000 records.

anonymeter runs in its own virtual environment, never in probanon's (it is no dependency of
probanon). Create it once::

    python3.11 -m venv /work/venvs/anonymeter
    /work/venvs/anonymeter/bin/pip install anonymeter

and give its interpreter with ``--anonymeter-python`` (default that path). This script writes the
original records, the release and the control records to CSV files in a temporary folder, runs
``benchmarks/_anonymeter_driver.py`` in that interpreter as a subprocess and reads its JSON.

**Releases compared** (every original file is split at random, seeded, into a released part, 80%,
and a control part, 20%, held out of the release: probanon's ``control`` and anonymeter's
``control`` are the same records):

* census (CASC, 1,080 records): keys AFNLWGT, AGI, EMCONTRB, FEDTAX, STATETAX; confidential the
  other 8 (TAXINC, POTHVAL, INTVAL, PEARNVAL, FICA, WSALVAL, ERNVAL, PTOTVAL); MDAV k = 3 and
  k = 5 on the keys (keys replaced by their group means, confidential values kept), and IR-SWAP
  k = 5 (the confidential columns swapped within rank blocks, keys kept), made by the library as
  ``probanon microaggregate`` / ``probanon swap`` make them (records kept in order);
* UCI Adult (48,842 records), the issue's case: keys age, education-num, hours-per-week (numeric)
  and sex, race, marital-status (nominal); confidential education, income (categorical),
  capital-gain, capital-loss (numeric); MDAV k = 5 on the six keys (``nominal=``: nominal keys
  replaced by the group's mode); probanon's intruders compare the keys in the release's encoding
  (``attack(..., nominal=[...])``), as anonymeter compares all six (Gower distance).

For each release: probanon's identity suite and attribute intruders in one call
(``probanon.attacks.attack(..., attribute=True, control=...)``, 10 runs), and anonymeter's
``InferenceEvaluator`` (aux = the keys, secret = each confidential column; regression for the
numeric ones) and ``LinkabilityEvaluator`` (aux = keys | confidential values, 1 neighbour), each
with the control set (``--attacks`` targets, default 2,000, capped by the file). Per confidential
column the table prints probanon's headline measures (released / baseline / control):

* numeric: the share of people whose group pins the value within 10% (all of its values within;
  ``probanon.metrics.attribute.pinned_shares``), the group's median within 5%, the nearest
  released row's value within 5% and 10%, the learned keys-to-value model within 5% and 10%;
* categorical: the share in classes where the value is constant, the class mode right, the nearest
  row's value right, the learned model right;

beside anonymeter's inference attack rate, control rate and risk ``(attack - control) / (1 -
control)`` with its 95% interval. The two do not score alike: anonymeter counts a numeric guess
right when ``|guess - value| / guess <= 5%`` (relative to the guess), probanon when ``|guess -
value| <= p% |value|`` (relative to the value); anonymeter guesses from the single nearest
released row in Gower distance (range-scaled L1, 1 per differing category), probanon's nearest
row uses z-scored Euclidean keys and averages over tied rows.

**Timing** (``--timing``, default on): each measure on 100,000 released records (plus 25,000
control records), best and median of ``--repeat`` (default 3; the machine is shared):

* census-like: ``125,000`` rows of the census drawn with replacement (seeded), every value times
  ``exp(0.02 N(0,1))`` and rounded (as ``benchmarks/attacks.py``), split 100,000 / 25,000; MDAV
  k = 5 on the keys and IR-SWAP k = 5;
* Adult-like: 125,000 rows of Adult drawn with replacement (seeded; no noise: the values are
  categories and small integers, duplicates are what Adult has), split 100,000 / 25,000; MDAV
  k = 5 on the six keys (probanon's measures with the keys this library accepts, as above).

probanon's measures are timed one by one (the groups rebuilt from the keys, the group measures,
the nearest row, the learned model: the sum over the confidential columns; the linker) and as the
whole ``attribute_disclosure`` call with its control. anonymeter's inference (every confidential
column) and linkability are timed with ``--timing-attacks`` targets and as many control targets
(default 100; each target is a brute-force scan of the release, so its time grows with targets x
rows; 100 keeps the default run near 15 minutes here) and
the time to attack every record (100,000 + 25,000 control) is extrapolated linearly from it.
The identity suite at 100,000 records is timed by ``benchmarks/attacks.py``.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/attribute.py
    PYTHONPATH=. .venv/bin/python benchmarks/attribute.py --quick      # smoke run: census k = 5, 10^4 timing
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PROBANON_DATA", ROOT.parent / "shared" / "data"))
if not DATA.exists():
    DATA = Path("/work/shared/data")
CENSUS = DATA / "casc" / "census.csv"
ADULT = DATA / "adult" / "adult.csv"
DRIVER = Path(__file__).resolve().parent / "_anonymeter_driver.py"
ANONYMETER_PYTHON = "/work/venvs/anonymeter/bin/python"

CENSUS_KEYS = ["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "STATETAX"]
CENSUS_CONF = ["TAXINC", "POTHVAL", "INTVAL", "PEARNVAL", "FICA", "WSALVAL", "ERNVAL", "PTOTVAL"]
ADULT_NUMERIC_KEYS = ["age", "education-num", "hours-per-week"]
ADULT_NOMINAL = ["sex", "race", "marital-status"]
ADULT_KEYS = ADULT_NUMERIC_KEYS + ADULT_NOMINAL
ADULT_CONF = ["education", "income", "capital-gain", "capital-loss"]
ADULT_CATEGORICAL = ADULT_NOMINAL + ["education", "income"]
SEED = 42
CONTROL_SHARE = 0.2
NOISE = 0.02
LIMIT_S = 300.0  # "in minutes": every probanon measure of a 100,000-record release under 5 minutes


# ---------------------------------------------------------------------------------------------
# data and releases


def split(frame: pd.DataFrame, seed: int = SEED) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The released part (80%) and the control part (20%), at random (seeded)."""
    order = np.random.default_rng(seed).permutation(len(frame))
    cut = int(round(len(frame) * (1 - CONTROL_SHARE)))
    return (frame.iloc[order[:cut]].reset_index(drop=True), frame.iloc[order[cut:]].reset_index(drop=True))


def census(n: int | None = None) -> pd.DataFrame:
    """The census, or ``n`` rows of it resampled with noise (module docstring)."""
    table = pd.read_csv(CENSUS)
    if n is None:
        return table
    rng = np.random.default_rng(SEED)
    rows = rng.integers(len(table), size=n)
    values = table.to_numpy(dtype=float)[rows] * np.exp(NOISE * rng.standard_normal((n, table.shape[1])))
    out = pd.DataFrame(np.round(values), columns=table.columns)
    out["PTOTVAL"] = out["PEARNVAL"] + out["POTHVAL"]  # the census's exact relation kept
    return out


def adult(n: int | None = None) -> pd.DataFrame:
    """Adult's keys and confidential columns, or ``n`` rows of them drawn with replacement."""
    table = pd.read_csv(ADULT, usecols=ADULT_KEYS + ADULT_CONF)[ADULT_KEYS + ADULT_CONF]
    for c in ADULT_CATEGORICAL:
        table[c] = table[c].astype(str).str.strip().astype(object)
    if n is None:
        return table
    rows = np.random.default_rng(SEED).integers(len(table), size=n)
    return table.iloc[rows].reset_index(drop=True)


def make_release(frame: pd.DataFrame, method: str, k: int, keys, confidential, nominal=()) -> tuple[pd.DataFrame, dict]:
    """The release of ``frame`` (same rows, same order) and what the attack needs about it
    (``mechanism``, ``k``, ``column_rows``)."""
    from probanon.microagg import MDAV
    from probanon.swapping import swap

    if method == "mdav":
        released = frame.copy()
        data = frame[keys] if nominal else frame[keys].to_numpy(dtype=float)
        values = MDAV(k, nominal=list(nominal)).fit_transform(data)
        values = values.to_numpy() if isinstance(values, pd.DataFrame) else np.asarray(values)
        for j, c in enumerate(keys):
            released[c] = values[:, j] if c in nominal else values[:, j].astype(float)
        return released, {"mechanism": "microaggregation", "k": k}
    columns = list(keys) + list(confidential)
    result = swap(frame[columns], k, method, list(confidential), random_state=SEED)
    released = frame.copy()
    released[columns] = result.released[columns].to_numpy()
    value_rows = result.value_rows()  # where each original value went
    rows = {columns[j]: value_rows[:, t] for t, moved in enumerate(result.groups.columns) for j in moved}
    return released, {"mechanism": method, "k": k, "column_rows": rows}


# ---------------------------------------------------------------------------------------------
# probanon


class Measured:
    """probanon's figures of one release: ``results`` (the identity suite's), ``attribute`` (an
    :class:`~probanon.attacks.attribute.AttributeReport`) and the verdict line."""

    def __init__(self, results, attribute, verdict):
        self.results, self.attribute, self.verdict = results, attribute, verdict

    def verdict_line(self) -> str:
        return self.verdict


def probanon_attack(original, released, keys, confidential, info, control, nominal=(), runs=10):
    """probanon's identity suite and attribute intruders in one call (``attack(...,
    attribute=True, control=..., nominal=...)``). Returns (Measured, keys used, notes)."""
    from probanon.attacks import attack

    settings = dict(mechanism=info["mechanism"], k=info["k"], column_rows=info.get("column_rows"), runs=runs,
                    random_state=SEED)
    extra = {"nominal": list(nominal)} if nominal else {}
    r = attack(original, released, keys, confidential, attribute=True, control=control, **extra, **settings)
    return Measured(r.results, r.attribute, r.verdict_line()), list(keys), []


# ---------------------------------------------------------------------------------------------
# anonymeter, in its own interpreter


def run_anonymeter(python: str, original, released, control, keys, confidential, n_attacks: int,
                   evaluators=("inference", "linkability"), repeat: int = 1, timeout: float = 3600) -> dict:
    """anonymeter's evaluators on the three tables (module docstring); the driver's JSON."""
    numeric = [c for c in confidential if pd.api.types.is_numeric_dtype(original[c])]
    categorical = [c for c in list(keys) + list(confidential) if not pd.api.types.is_numeric_dtype(original[c])]
    with tempfile.TemporaryDirectory(prefix="probanon_anonymeter_") as tmp:
        paths = {}
        for name, frame in (("original", original), ("released", released), ("control", control)):
            paths[name] = os.path.join(tmp, f"{name}.csv")
            frame[list(keys) + list(confidential)].to_csv(paths[name], index=False)
        spec = {**paths, "keys": list(keys), "confidential": list(confidential), "numeric": numeric,
                "categorical": categorical, "n_attacks": int(n_attacks), "evaluators": list(evaluators),
                "repeat": int(repeat), "seed": SEED, "warmup": True}
        spec_path, out_path = os.path.join(tmp, "spec.json"), os.path.join(tmp, "out.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        done = subprocess.run([python, str(DRIVER), spec_path, out_path], capture_output=True, text=True,
                              timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"anonymeter driver failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
        with open(out_path) as f:
            return json.load(f)


# ---------------------------------------------------------------------------------------------
# the comparison table


def pct(x) -> str:
    return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{100 * float(x):5.1f}"


def anon_cells(res) -> list[str]:
    if res is None:
        return ["-", "-", "-"]
    ctrl = res["control"]
    return [f"{pct(res['attack']['value'])}±{100 * res['attack']['error']:.1f}",
            "-" if ctrl is None else f"{pct(ctrl['value'])}±{100 * ctrl['error']:.1f}",
            f"{pct(res['risk'])} [{pct(res['ci'][0]).strip()}, {pct(res['ci'][1]).strip()}]"]


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    line = lambda r: " | ".join(str(v).rjust(w) if i else str(v).ljust(w) for i, (v, w) in enumerate(zip(r, widths)))  # noqa: E731
    return "\n".join([line(header), "-+-".join("-" * w for w in widths)] + [line(r) for r in rows])


def triple(released, baseline, control) -> str:
    return f"{pct(released)} / {pct(baseline).strip()} / {pct(control).strip()}"


def column_table(attr, anon) -> str:
    """Per confidential column: probanon's headline measures beside anonymeter's inference risk."""
    header = ["column", "group pins 10%", "group median 5%", "nearest row 5%", "nearest row 10%",
              "learned 5%", "learned 10%", "anonymeter attack", "anon control", "anon risk [95% CI]"]
    rows = []
    inference = (anon or {}).get("inference", {})
    for c in attr.columns:
        g, cg = c.groups, c.control_groups
        lc, nc = c.learned_control, c.nearest_control
        if c.kind == "numeric":
            i5, i10 = list(g.margins).index(5.0), list(g.margins).index(10.0)
            cells = [triple(g.all_within[i10], g.baseline_all_within[i10], cg and cg.all_within[i10]),
                     triple(g.median_within[i5], g.baseline_median_within[i5], cg and cg.median_within[i5]),
                     triple(c.nearest[i5], c.learned_baseline[i5], nc and nc[i5]),
                     triple(c.nearest[i10], c.learned_baseline[i10], nc and nc[i10]),
                     triple(c.learned[i5], c.learned_baseline[i5], lc and lc[i5]),
                     triple(c.learned[i10], c.learned_baseline[i10], lc and lc[i10])]
        else:  # categorical: constant class, class mode, nearest row right, learned right
            cells = [triple(g.constant, g.baseline_constant, cg and cg.constant) + " (constant)",
                     triple(g.mode_right, g.baseline_mode_right, cg and cg.mode_right) + " (mode)",
                     triple(c.nearest[0], c.learned_baseline[0], nc and nc[0]) + " (exact)", "",
                     triple(c.learned[0], c.learned_baseline[0], lc and lc[0]) + " (exact)", ""]
        rows.append([c.column] + cells + anon_cells(inference.get(c.column)))
    return table(header, rows)


def identity_lines(report, anon) -> list[str]:
    out = []
    for r in report.results:
        lo, hi = r.interval
        bound = "-" if r.bound is None else f"{100 * r.bound:.1f}%"
        out.append(f"  probanon {r.rule:<22} finds the row of {100 * r.rate:5.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] "
                   f"of people (bound {bound})")
    linker = report.attribute.linker if report.attribute is not None else None
    if linker is not None:
        out.append(f"  probanon linker (knows every confidential value): {linker.text()}")
    link = (anon or {}).get("linkability")
    if link is not None:
        a, c = anon_cells(link)[:2], link
        out.append(f"  anonymeter linkability (keys | confidential values, nearest row of each side the same; "
                   f"{c['n_attacks']} targets): attack {a[0]}%, control {a[1]}%, risk {anon_cells(link)[2]}%")
    so = (anon or {}).get("singling_out")
    if so is not None:
        out.append("  anonymeter singling out (multivariate, 3 columns): " + (
            so["error"] if "error" in so else f"attack {anon_cells(so)[0]}%, control {anon_cells(so)[1]}%, "
                                              f"risk {anon_cells(so)[2]}%"))
    return out


def compare(name, frame, method, k, keys, confidential, nominal, args, out) -> None:
    released_part, control = split(frame)
    t0 = time.perf_counter()
    released, info = make_release(released_part, method, k, keys, confidential, nominal)
    t_release = time.perf_counter() - t0
    t0 = time.perf_counter()
    report, used, notes = probanon_attack(released_part, released, keys, confidential, info, control, nominal)
    t_probanon = time.perf_counter() - t0
    anon, t_anon = None, None
    if not args.no_anonymeter:
        n = min(args.attacks, len(released_part))
        t0 = time.perf_counter()
        anon = run_anonymeter(args.anonymeter_python, released_part, released, control, keys, confidential, n,
                              evaluators=args.evaluators)["results"]
        t_anon = time.perf_counter() - t0
    out(f"== {name}, {method.upper()} k = {k}: {len(released_part):,} records released, {len(control):,} held out "
        f"as control ==")
    out(f"keys {', '.join(keys)}" + (f" (nominal {', '.join(nominal)})" if nominal else "")
        + f"; confidential {', '.join(confidential)}")
    for note in notes:
        out(note)
    out(f"times: release {t_release:.1f} s, probanon attack(attribute=True, control) {t_probanon:.1f} s"
        + ("" if t_anon is None else f", anonymeter ({', '.join(args.evaluators)}, subprocess) {t_anon:.1f} s"))
    out(f"probanon groups: {report.attribute.groups_note}")
    out(f"probanon verdict: {report.verdict_line()}")
    out("")
    out("identity / linkability:")
    for line in identity_lines(report, anon):
        out(line)
    out("")
    out("attribute disclosure per confidential column, % of people: probanon released / baseline / control; "
        "anonymeter inference (aux = keys) attack and control rate ± its error, risk [95% CI]:")
    out(column_table(report.attribute, anon))
    out("")


# ---------------------------------------------------------------------------------------------
# timing on 10^5 records


def timed(fn, repeat: int):
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - start)
    return times, value


def fmt(times) -> str:
    if not times:
        return "-"
    return f"{min(times):8.2f} s | {statistics.median(times):8.2f} s"


def probanon_steps(original, released, keys, confidential, info, control, repeat: int, nominal=()) -> dict:
    """Each probanon measure timed alone (module docstring): {step: [seconds]}."""
    from probanon.attacks import attribute as A
    from probanon.attacks.setting import MECHANISMS, attack_data, column_data
    from probanon.metrics.attribute import MARGINS, category_codes, class_shares, is_numeric_confidential, pinned_shares

    mechanism, k, rows = info["mechanism"], info["k"], info.get("column_rows")
    column_wise = MECHANISMS[mechanism] == "column-wise"
    types = {"nominal": list(nominal)} if nominal else {}

    def groups():
        if column_wise:
            return {c: column_data(original, released, keys, c, np.asarray(rows[c]), mechanism, k, True, confidential)
                    for c in confidential}
        data = A._groups(attack_data(original, released, keys, [], None, **types), mechanism, k, True)
        return {c: data for c in confidential}

    times = {}
    times["groups rebuilt from the keys"], sets = timed(groups, repeat)
    numeric = {c: is_numeric_confidential(original[c], released[c]) for c in confidential}
    values = {}  # each column as the intruders read it: numbers, or category codes shared by both tables
    for c in confidential:
        own, held = original[c].to_numpy(), released[c].to_numpy()
        values[c] = (own.astype(float), held.astype(float)) if numeric[c] else tuple(category_codes(own, held))

    def group_measures():
        for c in confidential:
            d, (own, held) = sets[c], values[c]
            if numeric[c]:
                pinned_shares(own, d.target_group, MARGINS, c, released=held, released_groups=d.row_group)
            else:
                class_shares(own, d.target_group, c, released=held, released_groups=d.row_group)

    def nearest():
        rng = np.random.default_rng(SEED)
        for c in confidential:
            own, held = values[c]
            A._nearest_rows(sets[c].space, held, own, A._scorer(numeric[c], MARGINS), rng)

    def learned():
        rng = np.random.default_rng(SEED)
        for c in confidential:
            own, held = values[c]
            A._learned(sets[c], held, own, None, None, numeric[c], MARGINS, rng)

    times["group measures (pinned / class shares)"] = timed(group_measures, repeat)[0]
    times["nearest row"] = timed(nearest, repeat)[0]
    times["learned model (fit + predict)"] = timed(learned, repeat)[0]
    times["linker (knows every confidential value)"] = timed(
        lambda: A._linker(original, released, confidential, None, np.random.default_rng(SEED)), repeat)[0]
    times[f"whole attribute_disclosure(control={len(control):,}), once"] = timed(
        lambda: A.attribute_disclosure(original, released, keys, confidential, mechanism=mechanism, k=k,
                                       column_rows=rows, control=control, random_state=SEED, **types), 1)[0]
    return times


def timing(name, frame, method, k, keys, confidential, nominal, args, out) -> list:
    released_part, control = split(frame)
    t0 = time.perf_counter()
    released, info = make_release(released_part, method, k, keys, confidential, nominal)
    t_release = time.perf_counter() - t0
    out(f"-- {name}, {method.upper()} k = {k}: {len(released_part):,} released + {len(control):,} control records "
        f"(release made in {t_release:.1f} s) --")
    steps = probanon_steps(released_part, released, keys, confidential, info, control, args.repeat, nominal)
    rows = [[f"probanon: {step}", *fmt(t).split(" | ")] for step, t in steps.items()]
    slow = max(min(t) for t in steps.values())
    if not args.no_anonymeter:
        n = args.timing_attacks
        res = run_anonymeter(args.anonymeter_python, released_part, released, control, keys, confidential, n,
                             evaluators=[e for e in args.evaluators if e != "singling_out"], repeat=args.repeat)
        inference = [sum(t["inference"].values()) for t in res["times"]]
        linkability = [t["linkability"] for t in res["times"] if "linkability" in t]
        every = len(released_part) + len(control)
        # inference: n targets + n control targets per column (the random baseline costs nothing)
        ncontrol = min(n, len(control))
        rows.append([f"anonymeter: inference, {len(confidential)} columns, {n} + {ncontrol} targets", *fmt(inference).split(" | ")])
        per = min(inference) / (n + ncontrol)
        rows.append([f"anonymeter: inference, {len(confidential)} columns, every record ({every:,} targets), extrapolated",
                     f"{per * every:8.0f} s", ""])
        if linkability:
            nl = min(n, len(released_part), len(control))
            rows.append([f"anonymeter: linkability, {nl} + {nl} targets", *fmt(linkability).split(" | ")])
            rows.append([f"anonymeter: linkability, every record ({every:,} targets), extrapolated",
                         f"{min(linkability) / (2 * nl) * every:8.0f} s", ""])
    out(table(["step", "best", "median"], rows))
    out("")
    return [(f"{name} {method} k={k}", slow)]


# ---------------------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--anonymeter-python", default=ANONYMETER_PYTHON,
                   help=f"the interpreter of anonymeter's own virtual environment (default {ANONYMETER_PYTHON})")
    p.add_argument("--attacks", type=int, default=2000, help="anonymeter targets in the comparison (default 2000)")
    p.add_argument("--timing-attacks", type=int, default=100,
                   help="anonymeter targets (and as many control targets) in the timing (default 100)")
    p.add_argument("--repeat", type=int, default=3, help="timed repetitions (best and median printed)")
    p.add_argument("--timing-n", type=int, default=100_000, help="released records in the timing (default 100,000)")
    p.add_argument("--no-timing", action="store_true", help="the comparison only")
    p.add_argument("--no-anonymeter", action="store_true", help="probanon's measures only")
    p.add_argument("--singling-out", action="store_true", help="also anonymeter's SinglingOutEvaluator")
    p.add_argument("--threads", type=int, default=1,
                   help="OpenMP threads of scikit-learn's gradient boosting (OMP_NUM_THREADS; default 1: on a loaded "
                        "machine its threads spin against the other processes, 9x slower here at 2)")
    p.add_argument("--only", choices=["census", "adult"], help="the comparison of one file only (and no timing)")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: census MDAV k = 5 only, timing on 10,000 records, --repeat 1")
    args = p.parse_args(argv)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)  # before scikit-learn is imported (the library imports it lazily)
    if args.only:
        args.no_timing = True
    args.command = " ".join(sys.argv[1:])
    args.evaluators = ["inference", "linkability"] + (["singling_out"] if args.singling_out else [])
    if args.quick:
        args.repeat, args.timing_n, args.attacks, args.timing_attacks = 1, 10_000, 500, 200
    if not args.no_anonymeter and not Path(args.anonymeter_python).exists():
        print(f"no anonymeter interpreter at {args.anonymeter_python}: create it (see this script's docstring) or "
              "give --anonymeter-python, or run with --no-anonymeter", file=sys.stderr)
        return 2

    def out(line=""):
        print(line, flush=True)

    import sklearn

    out(f"# benchmarks/attribute.py {' '.join(sys.argv[1:])}")
    out(f"# {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}, scikit-learn "
        f"{sklearn.__version__}, {os.cpu_count()} cpus, OMP_NUM_THREADS={args.threads}; seed {SEED}; control: "
        f"{100 * CONTROL_SHARE:g}% held out; load average {os.getloadavg()[0]:.1f}")
    start = time.perf_counter()
    comparisons = [("census", census(), "mdav", 5, CENSUS_KEYS, CENSUS_CONF, ())]
    if not args.quick:
        comparisons = [("census", census(), "mdav", 3, CENSUS_KEYS, CENSUS_CONF, ()), comparisons[0],
                       ("census", census(), "ir-swap", 5, CENSUS_KEYS, CENSUS_CONF, ()),
                       ("Adult", adult(), "mdav", 5, ADULT_KEYS, ADULT_CONF, ADULT_NOMINAL)]
    for case in comparisons:
        if args.only is None or case[0].lower() == args.only:
            compare(*case, args, out)
    if not args.no_timing:
        n = args.timing_n
        total = int(round(n / (1 - CONTROL_SHARE)))
        out(f"== timing on {n:,} released records (best and median of {args.repeat}) ==")
        big_census = census(total)
        cases = [("census-like", big_census, "mdav", 5, CENSUS_KEYS, CENSUS_CONF, ())]
        if not args.quick:
            cases += [("census-like", big_census, "ir-swap", 5, CENSUS_KEYS, CENSUS_CONF, ()),
                      ("Adult-like", adult(total), "mdav", 5, ADULT_KEYS, ADULT_CONF, ADULT_NOMINAL)]
        slowest = []
        for case in cases:
            slowest += timing(*case, args, out)
        name, worst = max(slowest, key=lambda x: x[1])
        verdict = "PASS" if worst <= LIMIT_S else "FAIL"
        out(f"target: every probanon measure in minutes (<= {LIMIT_S:g} s) at {n:,} records: {verdict} "
            f"(slowest step: {name}, best {worst:.1f} s)")
    out(f"# total {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

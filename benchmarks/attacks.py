"""Benchmark of the attack suite (:func:`probanon.attacks.attack`, issue 14): attacks on
100,000-record releases finish in minutes.

The table: ``n`` rows of the CASC census drawn with replacement (seeded), every value times
``exp(0.02 N(0, 1))`` and rounded to a unit (amounts stay integers, with the ties real amounts
have), then ``PTOTVAL = PEARNVAL + POTHVAL`` recomputed: the census's exact relation holds on
every row, so the relation intruder has something to find. Keys AFNLWGT, AGI, EMCONTRB, FEDTAX,
PTOTVAL, STATETAX; confidential TAXINC, POTHVAL, INTVAL, PEARNVAL, FICA, WSALVAL, ERNVAL.

Three releases at k = 5, each made as the library makes them (records kept in order):
``swap(..., "mdav-swap")`` (attacked as ``mdav-swap``, the intruder reruns MDAV, and as
``unknown``, no groups: the learned intruder's sparse matching over all 100,000 rows),
``swap(..., "ir-swap")`` (``column_rows`` from ``result.sources``) and keys-only MDAV
microaggregation (``microaggregation``). For each, printed side by side (best and median of
``--repeat``):

* references measured in the same run: the time to make the release and
  :func:`probanon.metrics.record_linkage` on the keys;
* the groups the intruders rebuild, each intruder (construction and ``--runs`` runs, with its
  success rate) and the whole :func:`~probanon.attacks.attack` call (every intruder, ``--runs``);
* the pre-release audit :func:`probanon.attacks.audit.audit` of the original (mdav-swap part);
* peak resident memory (``ru_maxrss``): each release is attacked in a fresh child process (after a
  warm-up on 600 rows that loads the compiled kernels), and the peak after the attacks is printed
  beside the peak before them (table and release made).

At every size of ``--sizes`` (default 25,000, 50,000 and 100,000) the same is measured, then the
scaling exponent ``b`` of every step (time ~ n^b, least squares on the best times) is printed beside
that of the release (MDAV is O(n^2)): no attack step may be quadratic in n.

``--same-as REV`` checks that the attacks give the same links as the package at git revision
``REV`` (e.g. before a speed-up): both trees run every intruder three times with one seed on the
census and on the largest table (child processes, the other tree from ``git archive``) and every
link array, note and audit finding is compared.

Run from the repository root::

    PYTHONPATH=. .venv/bin/python benchmarks/attacks.py
    PYTHONPATH=. .venv/bin/python benchmarks/attacks.py --sizes 100000 --repeat 1
    PYTHONPATH=. .venv/bin/python benchmarks/attacks.py --same-as HEAD --check-only
"""

from __future__ import annotations

import argparse
import io
import json
import os
import pickle
import platform
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CENSUS = ROOT.parent / "shared" / "data" / "casc" / "census.csv"
KEYS = ["AFNLWGT", "AGI", "EMCONTRB", "FEDTAX", "PTOTVAL", "STATETAX"]
CONFIDENTIAL = ["TAXINC", "POTHVAL", "INTVAL", "PEARNVAL", "FICA", "WSALVAL", "ERNVAL"]
SEED = 14
NOISE = 0.02
WARMUP_N = 600
LIMIT_S = 300.0  # "in minutes": every attack() call of a 100,000-record release under 5 minutes
#: release -> the mechanisms it is attacked as
PARTS = {"mdav-swap": ("mdav-swap", "unknown"), "ir-swap": ("ir-swap",), "microaggregation": ("microaggregation",)}


def make_table(n: int | None) -> pd.DataFrame:
    """The census itself (``n`` None) or ``n`` resampled rows (module docstring)."""
    census = pd.read_csv(CENSUS).astype(float)
    if n is None:
        return census
    rng = np.random.default_rng(SEED)
    rows = rng.integers(len(census), size=n)
    values = census.to_numpy()[rows] * np.exp(NOISE * rng.standard_normal((n, census.shape[1])))
    table = pd.DataFrame(np.round(values), columns=census.columns)
    table["PTOTVAL"] = table["PEARNVAL"] + table["POTHVAL"]
    return table


def make_release(name: str, frame: pd.DataFrame, k: int) -> tuple[pd.DataFrame, dict]:
    """The release and the extra keywords its attack needs (``column_rows``)."""
    from probanon.microagg import MDAV
    from probanon.swapping import swap

    columns = KEYS + CONFIDENTIAL
    if name == "microaggregation":
        model = MDAV(k).fit(frame[KEYS].to_numpy())
        released = frame.copy()
        released[KEYS] = model.centroids_[model.labels_]
        return released, {}
    result = swap(frame[columns], k, name, CONFIDENTIAL, random_state=SEED)
    extra = {}
    if name in ("ir-swap", "mdav-swap-informed"):
        value_rows = result.value_rows()  # where each original value went
        extra["column_rows"] = {columns[j]: value_rows[:, t] for t, moved in enumerate(result.groups.columns)
                                for j in moved}
    return result.released, extra


def attack_sets(original, released, mechanism: str, k: int, column_rows=None) -> list:
    """What :func:`probanon.attacks.attack` gives its intruders (one set per confidential column
    for column-wise mechanisms)."""
    from probanon.attacks.setting import MECHANISMS, attack_data, rebuild_groups
    from probanon.attacks.suite import _column_data

    if MECHANISMS[mechanism] == "column-wise":
        return [_column_data(original, released, KEYS, c, np.asarray(column_rows[c]), mechanism, k, True,
                             CONFIDENTIAL) for c in CONFIDENTIAL]
    return [rebuild_groups(attack_data(original, released, KEYS, CONFIDENTIAL), mechanism, k, True)]


def run_intruder(cls, sets: list, runs: int) -> float:
    """Success rate of ``runs`` runs of one intruder (built on every set), as the suite runs it."""
    rng, hits = np.random.default_rng(SEED), 0
    for data in sets:
        intruder = cls(data)
        hits += sum(np.count_nonzero(intruder.links(rng) == data.truth) for _ in range(runs))
    return hits / (runs * sum(data.n for data in sets))


def timed(fn, repeat: int):
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
    return times, out


def maxrss_mib() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return (r / 2 ** 20) if sys.platform == "darwin" else r / 1024  # bytes on macOS, KiB on Linux


# ---------------------------------------------------------------------------------------------
# one release, in a child process


def part(release: str, n: int, k: int, runs: int, repeat: int) -> dict:
    """Every figure of one release (module docstring)."""
    from probanon.attacks import attack
    from probanon.attacks.audit import audit
    from probanon.attacks.suite import INTRUDERS
    from probanon.metrics import record_linkage

    warm = make_table(WARMUP_N)  # compiled kernels loaded (numba cache) before any timing
    released, extra = make_release(release, warm, k)
    for mechanism in PARTS[release]:
        attack(warm, released, KEYS, CONFIDENTIAL, mechanism=mechanism, k=None if mechanism == "unknown" else k, runs=1,
               random_state=SEED, **extra)
    audit(warm, KEYS, CONFIDENTIAL)
    original = make_table(n)
    rss_table = maxrss_mib()
    steps, notes = [], []

    def step(mechanism, what, times, success=None):
        steps.append({"mechanism": mechanism, "step": what, "times": times, "success": success})

    times, (released, extra) = timed(lambda: make_release(release, original, k), repeat)
    step("-", "release (reference)", times)
    times, rl = timed(lambda: record_linkage(original, released, KEYS), repeat)
    step("-", "record_linkage on the keys (reference)", times, rl)
    if release == "mdav-swap":
        times, found = timed(lambda: audit(original, KEYS, CONFIDENTIAL), repeat)
        step("-", "audit of the original", times)
        notes.append(f"audit: {found.summary()}")
    rss_release = maxrss_mib()
    column_rows = extra.get("column_rows")
    for mechanism in PARTS[release]:
        times, sets = timed(partial(attack_sets, original, released, mechanism, k, column_rows), repeat)
        step(mechanism, "groups rebuilt" if mechanism != "unknown" else "attack data (no groups)", times)
        for cls in INTRUDERS.values():
            times, success = timed(partial(run_intruder, cls, sets, runs), repeat)
            step(mechanism, f"{cls.name} ({runs} runs)", times, success)
        keywords = dict(mechanism=mechanism, k=None if mechanism == "unknown" else k, runs=runs,
                        random_state=SEED, **extra)
        times, report = timed(partial(attack, original, released, KEYS, CONFIDENTIAL, **keywords), repeat)
        step(mechanism, f"attack(), all intruders ({runs} runs; best rate)", times,
             max(r.rate for r in report.results))
    return {"release": release, "n": n, "steps": steps, "notes": notes, "rss_table_mib": rss_table,
            "rss_release_mib": rss_release, "rss_peak_mib": maxrss_mib()}


def child(args: list) -> dict:
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), *map(str, args)], capture_output=True,
                         text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"child {' '.join(map(str, args))} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------
# same links as another revision


def dump(path: str, n: int, k: int) -> None:
    """Links of every intruder (three runs, one seed), notes and audits, on the census and on the
    ``n``-row table, pickled to ``path``."""
    import probanon
    from probanon.attacks.audit import audit
    from probanon.attacks.suite import INTRUDERS

    print(f"dump with {probanon.__file__}", file=sys.stderr)
    out = {}
    for label, size in (("census", None), (f"n={n}", n)):
        original = make_table(size)
        out[(label, "audit")] = audit(original, KEYS, CONFIDENTIAL).to_dict()
        mechanisms = [(r, m) for r, ms in PARTS.items() for m in ms]
        if size is None:
            mechanisms.append(("mdav-swap-informed", "mdav-swap-informed"))
        for release, mechanism in mechanisms:
            released, extra = make_release(release, original, k)
            sets = attack_sets(original, released, mechanism, k, extra.get("column_rows"))
            for name, cls in INTRUDERS.items():
                rng = np.random.default_rng(SEED)
                for s, data in enumerate(sets):
                    intruder = cls(data)
                    out[(label, mechanism, name, s, "note")] = intruder.note
                    for r in range(3):
                        out[(label, mechanism, name, s, r)] = intruder.links(rng)
                out[(label, mechanism, name, "next draw")] = rng.random()
            print(f"  {label} {mechanism}", file=sys.stderr, flush=True)
    with open(path, "wb") as fh:
        pickle.dump(out, fh)


def same_as(revision: str, n: int, k: int) -> bool:
    print(f"same links as revision {revision}? (census and n = {n:,}; three runs of every intruder, seed {SEED})")
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "probanon"], capture_output=True,
                                 check=True).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(tmp)
        dumps = []
        for label, tree in (("this tree", ROOT), (revision, Path(tmp))):
            path = Path(tmp) / f"{len(dumps)}.pkl"
            start = time.perf_counter()
            out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--dump", str(path), "--n", str(n),
                                  "--k", str(k)], env=dict(os.environ, PYTHONPATH=str(tree)), capture_output=True,
                                 text=True, check=False)
            if out.returncode:
                raise RuntimeError(f"the dump of {label} failed:\n{out.stderr[-3000:]}")
            print(f"  {label}: {time.perf_counter() - start:.0f} s ({out.stderr.splitlines()[0]})")
            with open(path, "rb") as fh:
                dumps.append(pickle.load(fh))
    ours, theirs = dumps
    differ = sorted(set(ours) ^ set(theirs), key=str)
    for key in sorted(set(ours) & set(theirs), key=str):
        a, b = ours[key], theirs[key]
        if not (np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b):
            differ.append(key)
    for key in differ[:20]:
        print(f"  DIFFERS: {key}")
    print(f"  {len(ours):,} items compared (link arrays, notes, audits): "
          f"{'all identical' if not differ else f'{len(differ)} differ'}")
    return not differ


# ---------------------------------------------------------------------------------------------
# main


def exponent(rows: list, key) -> float | None:
    points = [(r["n"], min(key(r))) for r in rows if key(r)]
    if len(points) < 2:
        return None
    return float(np.polyfit(np.log([p[0] for p in points]), np.log([p[1] for p in points]), 1)[0])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[25_000, 50_000, 100_000])
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--runs", type=int, default=10, help="runs of every intruder (attack(runs=...))")
    p.add_argument("--repeat", type=int, default=3, help="timings per step (best and median)")
    p.add_argument("--releases", nargs="+", choices=list(PARTS), default=list(PARTS))
    p.add_argument("--same-as", metavar="REV", help="check the links against the package at git revision REV")
    p.add_argument("--check-only", action="store_true", help="with --same-as: only the check")
    p.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    p.add_argument("--part", help=argparse.SUPPRESS)
    p.add_argument("--n", type=int, help=argparse.SUPPRESS)
    p.add_argument("--dump", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.part:
        print(json.dumps(part(a.part, a.n, a.k, a.runs, a.repeat)))
        return 0
    if a.dump:
        dump(a.dump, a.n, a.k)
        return 0

    status = 0
    if a.same_as:
        status = 0 if same_as(a.same_as, max(a.sizes), a.k) else 1
        if a.check_only:
            return status
        print()
    import numba
    import scipy

    sizes, repeat = sorted(set(a.sizes)), max(1, a.repeat)
    print("Attack suite benchmark: probanon.attacks.attack on releases of a resampled CASC census")
    print(f"  keys {', '.join(KEYS)}; confidential {', '.join(CONFIDENTIAL)}")
    print(f"  table: census rows drawn with replacement x exp({NOISE} N(0,1)), rounded, PTOTVAL = PEARNVAL + POTHVAL; "
          f"seed {SEED}")
    print(f"  k = {a.k}, runs = {a.runs}, repeat = {repeat} (best / median); numpy {np.__version__}, scipy "
          f"{scipy.__version__}, numba {numba.__version__}, Python {platform.python_version()}, {os.cpu_count()} CPUs")
    rows = []
    for n in sizes:
        print(f"\nn = {n:,}")
        head = (f"{'release':<17} {'attacked as':<17} {'step':<46} {'best s':>8} {'median s':>9} {'success':>8} "
                f"{'x release':>9} {'x RL':>7}")
        print(head)
        print("-" * len(head))
        for release in a.releases:
            figures = child(["--part", release, "--n", n, "--k", a.k, "--runs", a.runs, "--repeat", repeat])
            reference = {s["step"].split(" ")[0]: min(s["times"]) for s in figures["steps"] if s["mechanism"] == "-"}
            first = True
            for s in figures["steps"]:
                best, median = min(s["times"]), statistics.median(s["times"])
                success = "" if s["success"] is None else f"{s['success']:.4f}"
                ratio = "" if s["step"].startswith("release") else f"{best / reference['release']:.2f}"
                ratio_rl = "" if s["step"].startswith(("release", "record_linkage")) else \
                    f"{best / reference['record_linkage']:.1f}"
                print(f"{release if first else '':<17} {s['mechanism']:<17} {s['step']:<46} {best:8.2f} "
                      f"{median:9.2f} {success:>8} {ratio:>9} {ratio_rl:>7}", flush=True)
                first = False
                rows.append({"n": n, "release": release, **s})
            for note in figures["notes"]:
                print(f"{'':<17} {note}")
            print(f"{'':<17} peak RSS {figures['rss_peak_mib']:,.0f} MiB after the attacks; before them (table "
                  f"and release made) {figures['rss_release_mib']:,.0f} MiB; table alone "
                  f"{figures['rss_table_mib']:,.0f} MiB")
            rows.append({"n": n, "release": release, "memory": {k: v for k, v in figures.items() if "rss" in k}})

    timing = [r for r in rows if "times" in r]
    if len(sizes) >= 2:
        print(f"\nscaling over n = {', '.join(f'{n:,}' for n in sizes)}: time ~ n^b (least squares on the best times)")
        worst = None
        for release in a.releases:
            for key in dict.fromkeys((r["mechanism"], r["step"]) for r in timing if r["release"] == release):
                b = exponent([r for r in timing if r["release"] == release and (r["mechanism"], r["step"]) == key],
                             lambda r: r["times"])
                if b is None:
                    continue
                print(f"  {release:<17} {key[0]:<17} {key[1]:<46} b = {b:5.2f}")
                if key[0] != "-" and "groups" not in key[1] and (worst is None or b > worst[0]):
                    worst = (b, release, key)
        if worst is not None:
            print(f"  steepest intruder or attack() step: b = {worst[0]:.2f} ({worst[1]}, {worst[2][0]}, "
                  f"{worst[2][1]}); the groups step of mdav-swap reruns MDAV, as the release does")
    big = [r for r in timing if r["n"] == 100_000 and r["step"].startswith("attack()")]
    if big:
        slowest = max(big, key=lambda r: min(r["times"]))
        ok = min(slowest["times"]) <= LIMIT_S
        print(f"\ntarget: every attack() of a 100,000-record release (k = {a.k}, {a.runs} runs, every intruder) in "
              f"minutes (<= {LIMIT_S:.0f} s): {'PASS' if ok else 'FAIL'} (slowest {slowest['mechanism']}: best "
              f"{min(slowest['times']):.1f} s; all {len(big)} together {sum(min(r['times']) for r in big):.1f} s)")
        status = status or (0 if ok else 1)
    if a.json:
        with open(a.json, "w") as fh:
            json.dump({"sizes": sizes, "k": a.k, "runs": a.runs, "repeat": repeat, "seed": SEED, "rows": rows}, fh,
                      indent=1)
        print(f"figures written to {a.json}")
    return status


if __name__ == "__main__":
    sys.exit(main())

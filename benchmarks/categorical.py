"""Benchmark of probanon's methods for categorical keys (issue 43) beside sdcMicro (R) measured in
the same run: local suppression, PRAM, SUDA2 and household risk.

sdcMicro is never a dependency of probanon: it is built beside it (see
``../shared/peers/sdcmicro/README.md``: ``setup.sh GIT_DIR PREFIX`` puts it in ``PREFIX/Rlib``) and run
as ``Rscript benchmarks/_sdcmicro_categorical.R`` on CSV files written here; its figures come back
as JSON (the time of the sdcMicro call alone, files excluded). Without ``Rscript`` or sdcMicro the
R parts are skipped with a line saying so. Every sdcMicro call has a time limit (``--r-timeout``);
past it the line says "did not finish in T".

**(a) Local suppression on UCI Adult** (48,842 records; keys age, sex, race, marital-status,
education; k = 3): probanon's fast method (time, best and median of ``--repeat``; suppressed values;
records violating k after, counted here independently over all 31 key combinations, a missing value
matching any value), probanon's exact method (the integer program through HiGHS: the optimum or
HiGHS's bound, time) and sdcMicro's ``localSuppression(k = 3)`` (time, suppressions, violations as
sdcMicro's ``freqCalc`` counts and as counted here); then the same after age is recoded into 5-year
bands (the same recoded file given to both). The integer program's process runs under an address-space
limit (``--exact-memory``) and a time limit (``--exact-timeout``): on the whole of Adult it needs more than
the limit (say so). Where it solves, the first ``--exact-sample`` records of Adult: fast against exact
under both missing-value rules, by the cost (the sum of the key weights of the suppressed values).
Under ``missing="any"`` a record with every key suppressed matches every record, so the optimum can
suppress k - 1 whole records (a degenerate optimum the fast method does not seek); ``"category"``
has no such degeneracy.

**(b) Census-like file** (``_census_like.census_like``: ``--n`` records, default 10^6, and 10^7 with
``--large``; 8 categorical keys of census cardinalities, households with ids and weights):
local suppression for k = 3 and k = 5 over every combination of at most 4 keys
(``combinations=4``). Each probanon run is a fresh child process (this script with an internal
option) that loads the file, runs the call once and reports its time and its peak memory (the peak
resident size of the process, Linux VmHWM, and the growth over the resident size before the
call); the violations after are counted here over the 162 combinations. sdcMicro's
``localSuppression(k, combs = 4:1)`` on the same file, within the time limit.

**(c) PRAM, SUDA2 and household risk** on the same file: probanon's ``PRAM(pd = 0.8, alpha = 0.5)``
on the 8 keys beside sdcMicro's ``pram`` (same parameters); ``metrics.suda.suda2`` beside sdcMicro's
``suda2`` (the 8 keys, DisFraction 0.01); the household risk beside sdcMicro's
``measure_risk(keyVars, w, hid)``. sdcMicro's SUDA2 and risk run on a subsample (``--r-subsample``
records, the first households) when the whole file does not finish in the limit (said so).

Run from the repository root (the machine is shared: say its load, printed first and last)::

    PYTHONPATH=. .venv/bin/python benchmarks/categorical.py
    PYTHONPATH=. .venv/bin/python benchmarks/categorical.py --n 100000 --r-timeout 120   # quicker
    PYTHONPATH=. .venv/bin/python benchmarks/categorical.py --large                        # also 10^7
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _census_like import KEYS8, census_like, codes, violations  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PROBANON_DATA", ROOT.parent / "shared" / "data"))
if not DATA.exists():
    DATA = Path("/work/shared/data")
ADULT = DATA / "adult" / "adult.csv"
ADULT_KEYS = ["age", "sex", "race", "marital-status", "education"]
R_DRIVER = Path(__file__).resolve().parent / "_sdcmicro_categorical.R"
RLIB = os.environ.get("SDCMICRO_RLIB", "/work/peers/sdcmicro/Rlib")
SEED = 2026
WARMUP = 2000  # records of the untimed first call of each probanon function (numba compiles or loads its cache)
SDC_ADULT_PUBLISHED = 6521  # the sdcMicro figure (34 s), for the eye; the run measures its own


# ---------------------------------------------------------------------------------------------
# helpers


def fmt_times(times) -> str:
    if len(times) == 1:
        return f"{times[0]:.2f} s"
    return f"best {min(times):.2f} s, median {statistics.median(times):.2f} s (of {len(times)})"


def peak_kib() -> tuple[int, str]:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]), "VmHWM"
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "ru_maxrss"


def rss_kib() -> int:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
    except OSError:
        pass


def adult() -> pd.DataFrame:
    table = pd.read_csv(ADULT, usecols=ADULT_KEYS)[ADULT_KEYS]
    for c in ADULT_KEYS[1:]:
        table[c] = table[c].astype(str).str.strip()
    return table


def age_bands(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    lo = (out["age"] // 5) * 5
    out["age"] = lo.astype(str) + "-" + (lo + 4).astype(str)
    return out


def suppressed_count(before: np.ndarray, after: np.ndarray) -> int:
    return int(((after < 0) & (before >= 0)).sum())


# ---------------------------------------------------------------------------------------------
# sdcMicro


class SdcMicro:
    """Runs the R driver; ``available`` and ``why`` say whether it can."""

    def __init__(self, rlib: str, timeout: float, enabled: bool = True):
        self.rlib, self.timeout = rlib, timeout
        self.rscript = shutil.which("Rscript")
        self.available, self.why, self.version = False, "", None
        if not enabled:
            self.why = "skipped (--no-sdcmicro)"
        elif self.rscript is None:
            self.why = "skipped: no Rscript on PATH (build sdcMicro: ../shared/peers/sdcmicro/README.md)"
        else:
            code = (f".libPaths(c('{rlib}', .libPaths())); suppressMessages(library(sdcMicro)); "
                    "cat(as.character(packageVersion('sdcMicro')), R.version$major, R.version$minor)")
            r = subprocess.run([self.rscript, "-e", code], capture_output=True, text=True)
            if r.returncode != 0:
                self.why = f"skipped: sdcMicro not found in {rlib} or R's library (see ../shared/peers/sdcmicro/README.md)"
            else:
                v = r.stdout.split()
                self.available, self.version = True, f"sdcMicro {v[0]}, R {v[1]}.{v[2]}"

    def run(self, mode: str, csv: Path, timeout: float | None = None, **opts) -> dict:
        """The driver's JSON, or {"error": text} / {"timeout": seconds}."""
        timeout = self.timeout if timeout is None else timeout
        out = csv.with_suffix(f".{mode}.json")
        cmd = [self.rscript, str(R_DRIVER), self.rlib, mode, str(csv), str(out)]
        cmd += [f"{k}={','.join(v) if isinstance(v, (list, tuple)) else v}" for k, v in opts.items()]
        t0 = time.perf_counter()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"timeout": timeout}
        if r.returncode != 0:
            return {"error": (r.stderr.strip().splitlines() or ["?"])[-1]}
        res = json.loads(out.read_text())
        res["wall_seconds"] = time.perf_counter() - t0
        return res


def r_failed(res: dict) -> str | None:
    if "timeout" in res:
        return f"did not finish in {res['timeout']:.0f} s (stopped)"
    if "error" in res:
        return f"failed: {res['error']}"
    return None


def r_codes(path: Path, keys) -> np.ndarray:
    table = pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""])
    return codes(table, [k.replace("-", "_") for k in keys])


# ---------------------------------------------------------------------------------------------
# probanon, in this process or in a child (peak memory of its own)


def probanon_suppress(frame, keys, k, combinations, method="fast", missing="any"):
    from probanon.categorical.suppression import local_suppression

    t0 = time.perf_counter()
    res = local_suppression(frame, keys, k, combinations=combinations, missing=missing, method=method)
    return time.perf_counter() - t0, res


def child_suppress(pickle: str, k: int, combinations: int, method: str, out: str) -> dict:
    """In a fresh process: load the records, run local suppression once; time and memory.
    ``method``: "fast" or "exact", with ":category" for that missing-value rule."""
    method, _, missing = method.partition(":")
    missing = missing or "any"
    frame = pd.read_pickle(pickle)
    keys = list(frame.columns)
    m = None if combinations == 0 else combinations
    if method == "fast":
        probanon_suppress(frame.iloc[:WARMUP], keys, k, m, missing=missing)  # warm-up (JIT), before the peak reset
    else:
        __import__("probanon.categorical.exact")
    before = rss_kib()
    reset_peak()
    cpu = time.process_time()
    t, res = probanon_suppress(frame, keys, k, m, method, missing)
    cpu = time.process_time() - cpu
    peak, how = peak_kib()
    np.save(out, codes(res.data, keys).astype(np.int16))
    return {"seconds": t, "cpu_seconds": cpu, "peak_kib": peak, "rss_before_kib": before, "how": how, "total": int(res.total),
            "n_suppressed": {c: int(v) for c, v in dict(res.n_suppressed).items()}, "optimal": res.optimal,
            "lower_bound": res.lower_bound, "cost": float(res.cost),
            "violations_before": _total(res.violations_before), "violations_after": _total(res.violations_after)}


def _total(v):
    if v is None:
        return None
    if hasattr(v, "total"):
        return int(v.total)
    return int(v)


def run_child(pickle: Path, k: int, combinations: int | None, out: Path, timeout: float, method: str = "fast",
              memory_gib: float | None = None) -> dict:
    """local suppression of the frame pickled in ``pickle`` (its columns the keys) in a child process
    (its address space limited to ``memory_gib`` when given: a shared machine)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", str(pickle), str(k), str(combinations or 0), method,
           str(out)]
    try:
        limit = None if memory_gib is None else int(memory_gib * 2**30)
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)},
                           preexec_fn=None if limit is None else
                           (lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))))
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    if r.returncode < 0:
        return {"error": f"killed by signal {-r.returncode}"}
    if r.returncode != 0:
        last = (r.stderr.strip().splitlines() or ["?"])[-1]
        if "MemoryError" in last and memory_gib:
            last = f"MemoryError: more than {memory_gib:g} GiB of address space (--exact-memory)"
        return {"error": last}
    return json.loads(r.stdout.strip().splitlines()[-1])


def landed(module: str) -> str | None:
    """None when ``module`` imports, else the line saying it has not landed."""
    try:
        __import__(module)
        return None
    except ImportError as exc:
        return f"{module} not importable here ({exc}): not measured"


# ---------------------------------------------------------------------------------------------
# (a) Adult


def section_adult(args, sdc: SdcMicro, tmp: Path, out) -> None:
    base = adult()
    out(f"== (a) local suppression on UCI Adult: {len(base):,} records, keys {', '.join(ADULT_KEYS)}, k = {args.k} ==")
    out(f"   violations counted here over all {2 ** len(ADULT_KEYS) - 1} key combinations, a missing value "
        "matching any value (sdcMicro's alpha = 1)")
    for label, frame in [("age as recorded", base), ("age in 5-year bands", age_bands(base))]:
        X0 = codes(frame, ADULT_KEYS)
        v0 = violations(X0, args.k)
        out(f"-- {label}: {v0[0]:,} records violate {args.k}-anonymity before "
            f"({v0[1]} of {v0[2]} combinations)")
        why = landed("probanon.categorical.suppression")
        if why:
            out(f"   probanon: {why}")
        else:
            probanon_suppress(frame.iloc[:WARMUP], ADULT_KEYS, args.k, None, "fast")  # warm-up (JIT)
            times, res = [], None
            for _ in range(args.repeat):
                t, res = probanon_suppress(frame, ADULT_KEYS, args.k, None, "fast")
                times.append(t)
            X1 = codes(res.data, ADULT_KEYS)
            v1 = violations(X1, args.k)
            out(f"   probanon fast     : {fmt_times(times)}; {suppressed_count(X0, X1):,} values suppressed "
                f"({', '.join(f'{c} {int(n):,}' for c, n in dict(res.n_suppressed).items())}); "
                f"violations after {v1[0]:,} (library says {_total(res.violations_after)})")
            if not args.no_exact:
                pkl = tmp / "adult_exact.pkl"
                frame.to_pickle(pkl)
                ex = run_child(pkl, args.k, None, tmp / "adult_exact.npy", args.exact_timeout, "exact", args.exact_memory)
                if r_failed(ex):
                    out(f"   probanon exact    : {r_failed(ex)}")
                else:
                    ve = violations(np.load(tmp / "adult_exact.npy").astype(np.int64), args.k)
                    state = ("the optimum, proved" if ex["optimal"] else
                             f"not proved optimal; HiGHS's lower bound on the cost {ex['lower_bound']:,.2f}")
                    out(f"   probanon exact    : {ex['seconds']:.1f} s (CPU {ex['cpu_seconds']:.1f} s); {ex['total']:,} values suppressed, cost "
                        f"{ex['cost']:,.2f} ({state}); violations after {ve[0]:,}; fast's cost {res.cost:,.2f}")
        if not sdc.available:
            out(f"   sdcMicro          : {sdc.why}")
            continue
        csv = tmp / f"adult_{'bands' if 'band' in label else 'age'}.csv"
        frame.to_csv(csv, index=False)
        outcsv = csv.with_suffix(".ls.csv")
        r = sdc.run("localsupp", csv, keys=ADULT_KEYS, k=args.k, count=1, out_csv=outcsv)
        if r_failed(r):
            out(f"   sdcMicro          : localSuppression(k = {args.k}) {r_failed(r)}")
            continue
        Xs = r_codes(outcsv, ADULT_KEYS)
        vs = violations(Xs, args.k)
        per = ", ".join(f"{c} {n:,}" for c, n in r["suppressed"].items())
        out(f"   sdcMicro          : {r['seconds']:.2f} s; {r['total']:,} values suppressed ({per}); "
            f"violations after {vs[0]:,} (sdcMicro's freqCalc over all keys: {r['violations_after']:,})")


def section_exact(args, tmp: Path, out) -> None:
    """fast against the integer program on the first records of Adult, under both missing rules."""
    if landed("probanon.categorical.suppression"):
        return
    frame = adult().iloc[:args.exact_sample].reset_index(drop=True)
    pkl = tmp / "adult_small.pkl"
    frame.to_pickle(pkl)
    out(f"-- the integer program where it solves: the first {len(frame):,} records of Adult (age as recorded), k = {args.k}, "
        f"{violations(codes(frame, ADULT_KEYS), args.k)[0]:,} violating; cost = the sum of the key weights of the suppressed "
        "values (about 1 each)")
    for rule in ("any", "category"):
        fast = run_child(pkl, args.k, None, tmp / "small_fast.npy", args.exact_timeout, f"fast:{rule}", args.exact_memory)
        ex = run_child(pkl, args.k, None, tmp / "small_exact.npy", args.exact_timeout, f"exact:{rule}", args.exact_memory)
        line = f"   missing = {rule!r:10}: "
        if r_failed(fast):
            line += f"fast {r_failed(fast)}; "
        else:
            line += f"fast {fast['seconds']:.2f} s, {fast['total']:,} values (cost {fast['cost']:,.3f}); "
        if r_failed(ex):
            line += f"exact {r_failed(ex)}"
        else:
            line += (f"exact {ex['seconds']:.1f} s, {ex['total']:,} values (cost {ex['cost']:,.3f}, "
                     + ("the optimum, proved" if ex["optimal"] else f"not proved; HiGHS bound {ex['lower_bound']:,.3f}") + ")")
            if not r_failed(fast) and ex["cost"] > 0:
                line += f"; fast over the exact by {100 * (fast['cost'] - ex['cost']) / ex['cost']:+.1f}%"
        out(line)


# ---------------------------------------------------------------------------------------------
# (b) census-like, local suppression


def section_census(args, sdc: SdcMicro, tmp: Path, out, n: int, sdc_ok: dict) -> pd.DataFrame:
    t0 = time.perf_counter()
    frame = census_like(n, SEED)
    out(f"== (b) local suppression on {n:,} census-like records ({frame['hid'].nunique():,} households; "
        f"generated in {time.perf_counter() - t0:.1f} s), keys {', '.join(KEYS8)}, every combination of at most "
        f"{args.combinations} keys ==")
    out("   cardinalities " + ", ".join(f"{c} {frame[c].nunique()}" for c in KEYS8))
    X0 = frame[KEYS8].to_numpy(np.int64)
    npz = tmp / f"census_{n}.pkl"
    frame[KEYS8].to_pickle(npz)
    csv = None
    why = landed("probanon.categorical.suppression")
    for k in args.ks:
        t0 = time.perf_counter()
        v0 = violations(X0, k, args.combinations)
        out(f"-- k = {k}: {v0[0]:,} records violate before ({v0[1]} of {v0[2]} combinations; counted in "
            f"{time.perf_counter() - t0:.0f} s)")
        if why:
            out(f"   probanon: {why}")
        else:
            runs = []
            for _ in range(args.repeat_census):
                res_path = tmp / f"census_{n}_k{k}.npy"
                r = run_child(npz, k, args.combinations, res_path, args.timeout)
                if "timeout" in r or "error" in r:
                    out(f"   probanon fast     : {r_failed(r)}")
                    break
                runs.append(r)
            if runs:
                r = runs[-1]
                X1 = np.load(res_path).astype(np.int64)
                v1 = violations(X1, k, args.combinations)
                out(f"   probanon fast     : {fmt_times([x['seconds'] for x in runs])} (CPU "
                    f"{min(x['cpu_seconds'] for x in runs):.1f} s); peak memory "
                    f"{max(x['peak_kib'] for x in runs) / 2**20:.2f} GiB ({r['how']} of the child process; "
                    f"+{(r['peak_kib'] - r['rss_before_kib']) / 2**20:.2f} GiB over the "
                    f"{r['rss_before_kib'] / 2**20:.2f} GiB before the call); {suppressed_count(X0, X1):,} values "
                    f"suppressed ({', '.join(f'{c} {v:,}' for c, v in r['n_suppressed'].items())}); violations after "
                    f"{v1[0]:,} in {v1[1]} combinations (library says {r['violations_after']})")
        if not sdc.available:
            out(f"   sdcMicro          : {sdc.why}")
            continue
        if sdc_ok.get("failed"):
            out(f"   sdcMicro          : not run ({sdc_ok['failed']})")
            continue
        if csv is None:
            csv = tmp / f"census_{n}.csv"
            frame[KEYS8].to_csv(csv, index=False)
        outcsv = tmp / f"census_{n}_k{k}.sdc.csv"
        r = sdc.run("localsupp", csv, keys=KEYS8, k=k, combs=args.combinations, out_csv=outcsv)
        if r_failed(r):
            sdc_ok["failed"] = f"k = {k} at {n:,} records {r_failed(r).replace(' (stopped)', '')}"
            out(f"   sdcMicro          : localSuppression(k = {k}, combs = {args.combinations}:1) {r_failed(r)}")
            continue
        Xs = r_codes(outcsv, KEYS8)
        vs = violations(Xs, k, args.combinations)
        out(f"   sdcMicro          : {r['seconds']:.1f} s; {r['total']:,} values suppressed; violations after "
            f"{vs[0]:,} in {vs[1]} combinations")
    return frame


# ---------------------------------------------------------------------------------------------
# (c) PRAM, SUDA2, household risk


def tv_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Total variation distance (%) between the category frequencies of two code columns."""
    m = int(max(a.max(), b.max())) + 1
    return 50.0 * float(np.abs(np.bincount(a, minlength=m) - np.bincount(b, minlength=m)).sum()) / a.size


def pram_figures(before: pd.DataFrame, after: pd.DataFrame) -> str:
    A, B = before[KEYS8].to_numpy(np.int64), after[KEYS8].to_numpy(np.int64)
    changed = (A != B)
    tv = max(tv_distance(A[:, j], B[:, j]) for j in range(len(KEYS8)))
    return (f"{int(changed.sum()):,} values changed ({100 * changed.mean():.1f}%), {int(changed.any(axis=1).sum()):,} "
            f"records; largest frequency shift of a key {tv:.2f}% (total variation)")


def first_households(frame: pd.DataFrame, n: int) -> pd.DataFrame:
    if n >= len(frame):
        return frame
    last = frame["hid"].iloc[n - 1]
    return frame[frame["hid"] <= last].reset_index(drop=True)


def timed_repeat(fn, repeat: int):
    times, value = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return times, value


def r_with_subsample(args, sdc, tmp, frame, mode, name, out, columns, **opts):
    """sdcMicro on the whole file, or on the first households when it does not finish in time:
    (result, the frame it ran on, note)."""
    csv = tmp / f"{name}_{len(frame)}.csv"
    frame[columns].to_csv(csv, index=False)
    r = sdc.run(mode, csv, **opts)
    if not r_failed(r) or args.r_subsample >= len(frame):
        return r, frame, ""
    note = f"on the whole file {r_failed(r)}; "
    sub = first_households(frame, args.r_subsample)
    csv = tmp / f"{name}_{len(sub)}.csv"
    sub[columns].to_csv(csv, index=False)
    opts = {k: (str(v).replace(f"_{len(frame)}", f"_{len(sub)}") if k == "out_csv" else v) for k, v in opts.items()}
    return sdc.run(mode, csv, **opts), sub, note + f"on the first {len(sub):,} records ({sub['hid'].nunique():,} households): "


def section_pram(args, sdc, tmp, frame, out) -> None:
    out(f"-- PRAM of the 8 keys (invariant, pd = 0.8, alpha = 0.5, per key), {len(frame):,} records")
    why = landed("probanon.categorical.pram")
    if why:
        out(f"   probanon: {why}")
    else:
        from probanon.categorical.pram import PRAM

        keys = frame[KEYS8]
        PRAM(random_state=SEED).fit_transform(first_households(frame, WARMUP)[KEYS8])  # warm-up (JIT)
        times, released = timed_repeat(lambda: PRAM(pd=0.8, alpha=0.5, random_state=SEED).fit_transform(keys), args.repeat)
        out(f"   probanon PRAM     : {fmt_times(times)}; {pram_figures(keys, released)}")
    if not sdc.available:
        out(f"   sdcMicro          : {sdc.why}")
        return
    outcsv = tmp / f"pram_{len(frame)}.out.csv"
    r, ran, note = r_with_subsample(args, sdc, tmp, frame, "pram", "pram", out, KEYS8, keys=KEYS8, pd=0.8, alpha=0.5,
                                    seed=SEED, out_csv=outcsv)
    if r_failed(r):
        out(f"   sdcMicro pram     : {note}{r_failed(r)}")
        return
    released = pd.read_csv(str(outcsv).replace(f"_{len(frame)}", f"_{len(ran)}"))
    out(f"   sdcMicro pram     : {note}{r['seconds']:.1f} s; {pram_figures(ran, released)}")


def section_suda(args, sdc, tmp, frame, out) -> None:
    out(f"-- SUDA2 of the 8 keys (minimal sample uniques of every size, DIS fraction 0.01), {len(frame):,} records")
    why = landed("probanon.metrics.suda")
    suda = None
    if why:
        out(f"   probanon: {why}")
    else:
        from probanon.metrics.suda import suda2

        suda2(first_households(frame, WARMUP), KEYS8, dis_fraction=0.01)  # warm-up (JIT)
        times, suda = timed_repeat(lambda: suda2(frame, KEYS8, dis_fraction=0.01), args.repeat)
        out(f"   probanon suda2    : {fmt_times(times)}; {int((suda.score > 0).sum()):,} records with an MSU, "
            f"{int(suda.msu_counts.sum()):,} MSUs; score sum {float(suda.score.sum()):,.1f}, max {float(suda.score.max()):.2f}; "
            f"DIS-SUDA mean {float(suda.dis_score.mean()):.3g}, max {float(suda.dis_score.max()):.3g}")
    if not sdc.available:
        out(f"   sdcMicro          : {sdc.why}")
        return
    outcsv = tmp / f"suda_{len(frame)}.out.csv"
    r, ran, note = r_with_subsample(args, sdc, tmp, frame, "suda2", "suda", out, KEYS8, keys=KEYS8, DisFraction=0.01,
                                    out_csv=outcsv)
    if r_failed(r):
        out(f"   sdcMicro suda2    : {note}{r_failed(r)}")
        return
    out(f"   sdcMicro suda2    : {note}{r['seconds']:.1f} s; {r['records_with_msu']:,} records with an MSU; score sum "
        f"{r['score_sum']:,.1f}, max {r['score_max']:.2f}; DIS-SUDA mean {r['dis_mean']:.3g}, max {r['dis_max']:.3g}")
    if suda is not None:
        if len(ran) != len(frame):
            t0 = time.perf_counter()
            suda = suda2(ran, KEYS8, dis_fraction=0.01)
            out(f"   probanon suda2 on the same {len(ran):,} records: {time.perf_counter() - t0:.2f} s")
        theirs = pd.read_csv(str(outcsv).replace(f"_{len(frame)}", f"_{len(ran)}"))
        ds = np.abs(suda.score - theirs["score"].to_numpy())
        dd = np.abs(suda.dis_score - theirs["dis"].to_numpy())
        out(f"   record by record  : SUDA scores equal on {int((ds < 1e-9).sum()):,} of {len(ran):,} records "
            f"(largest difference {ds.max():.3g}); DIS-SUDA largest difference {dd.max():.3g}")


def section_household(args, sdc, tmp, frame, out) -> None:
    out(f"-- household risk (8 keys, weights, household ids; sdcMicro's measure_risk(hid =), fast_hier), "
        f"{len(frame):,} records")
    why = landed("probanon.metrics.household")
    hr = None
    if why:
        out(f"   probanon: {why}")
    else:
        from probanon.metrics.household import hierarchical_risk

        hierarchical_risk(first_households(frame, WARMUP), KEYS8, "hid", weights="weight")  # warm-up (JIT)
        times, hr = timed_repeat(lambda: hierarchical_risk(frame, KEYS8, "hid", weights="weight"), args.repeat)
        out(f"   probanon          : {fmt_times(times)}; hier_risk_ER {hr.expected_reidentifications:,.2f} "
            f"({100 * hr.hierarchical_risk:.4f}%), expected households re-identified {hr.expected_households:,.2f}")
    if not sdc.available:
        out(f"   sdcMicro          : {sdc.why}")
        return
    outcsv = tmp / f"risk_{len(frame)}.out.csv"
    r, ran, note = r_with_subsample(args, sdc, tmp, frame, "risk", "risk", out, ["hid", *KEYS8, "weight"], keys=KEYS8,
                                    w="weight", hid="hid", out_csv=outcsv)
    if r_failed(r):
        out(f"   sdcMicro          : measure_risk {note}{r_failed(r)}")
        return
    out(f"   sdcMicro          : measure_risk {note}{r['seconds']:.1f} s; hier_risk_ER {r['hier_risk_ER']:,.2f} "
        f"({r['hier_risk_pct']:.4f}%); global risk ER {r['global_risk_ER']:,.2f}")
    if hr is not None:
        if len(ran) != len(frame):
            t0 = time.perf_counter()
            hr = hierarchical_risk(ran, KEYS8, "hid", weights="weight")
            out(f"   probanon on the same {len(ran):,} records: {time.perf_counter() - t0:.2f} s; hier_risk_ER "
                f"{hr.expected_reidentifications:,.2f}")
        theirs = pd.read_csv(str(outcsv).replace(f"_{len(frame)}", f"_{len(ran)}"))
        d = np.abs(hr.risk - theirs["hier_risk"].to_numpy())
        out(f"   record by record  : household risk largest difference {d.max():.3g}")


# ---------------------------------------------------------------------------------------------
# main


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=1_000_000, help="census-like records (default 10^6)")
    p.add_argument("--large", action="store_true", help="also 10^7 census-like records (local suppression)")
    p.add_argument("--k", type=int, default=3, help="k on Adult (default 3)")
    p.add_argument("--ks", type=int, nargs="+", default=[3, 5], help="k on the census-like file (default 3 5)")
    p.add_argument("--combinations", type=int, default=4, help="largest key combination on the census-like file (default 4)")
    p.add_argument("--repeat", type=int, default=3, help="timed repetitions of the cheap runs (best and median)")
    p.add_argument("--repeat-census", type=int, default=1, help="child runs per census-like suppression (default 1)")
    p.add_argument("--timeout", type=float, default=1800, help="limit of one probanon child run, seconds")
    p.add_argument("--r-timeout", type=float, default=600, help="limit of one sdcMicro call, seconds (default 600)")
    p.add_argument("--r-subsample", type=int, default=100_000,
                   help="records of the subsample sdcMicro's pram/suda2/measure_risk run on when the whole file does not finish")
    p.add_argument("--rlib", default=RLIB, help=f"the R library holding sdcMicro (default {RLIB}; env SDCMICRO_RLIB)")
    p.add_argument("--no-sdcmicro", action="store_true", help="probanon only")
    p.add_argument("--no-exact", action="store_true", help="skip the integer program on Adult")
    p.add_argument("--exact-timeout", type=float, default=600, help="limit of the integer program on Adult, seconds")
    p.add_argument("--exact-memory", type=float, default=6.0,
                   help="address-space limit of the integer program's process, GiB (default 6; unlimited it took 13.7 GiB "
                        "on Adult here and was killed by the kernel)")
    p.add_argument("--exact-sample", type=int, default=1000,
                   help="records of Adult (the first ones) for fast against exact under both missing rules (default 1000)")
    p.add_argument("--sections", nargs="+", choices=["adult", "exact", "census", "pram", "suda", "household", "dask"],
                   default=["adult", "exact", "census", "pram", "suda", "household"],
                   help="what to run (default all but dask: benchmarks/categorical_dask.py, beyond 10^7 on a local "
                        "Dask cluster, about 40 minutes)")
    p.add_argument("--dask-sizes", type=int, nargs="+", default=[10_000_000, 20_000_000],
                   help="records of the dask section (the first also run in one process, record by record the same)")
    p.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        pickle, k, m, method, out_path = args.child
        print(json.dumps(child_suppress(pickle, int(k), int(m), method, out_path)))
        return 0

    def out(line=""):
        print(line, flush=True)

    sdc = SdcMicro(args.rlib, args.r_timeout, enabled=not args.no_sdcmicro)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    out(f"# benchmarks/categorical.py {' '.join(sys.argv[1:])}")
    out(f"# at {commit or '?'}; Python {platform.python_version()}, numpy {np.__version__}, pandas {pd.__version__}; "
        f"{os.cpu_count()} cpus; {sdc.version or 'sdcMicro: ' + sdc.why}; sdcMicro time limit {args.r_timeout:.0f} s")
    out(f"# load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())} (a shared machine)")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="probanon_categorical_") as d:
        tmp = Path(d)
        if "adult" in args.sections:
            section_adult(args, sdc, tmp, out)
            out()
        if "exact" in args.sections:
            section_exact(args, tmp, out)
            out()
        sizes = [args.n] + ([10_000_000] if args.large and args.n < 10_000_000 else [])
        frame, sdc_ok = None, {}
        if "census" in args.sections:
            for n in sizes:
                f = section_census(args, sdc, tmp, out, n, sdc_ok)
                frame = f if n == args.n else frame
                out()
        rest = [s for s in ("pram", "suda", "household") if s in args.sections]
        if rest:
            frame = census_like(args.n, SEED) if frame is None else frame
            out(f"== (c) PRAM, SUDA2 and household risk on the {len(frame):,} census-like records ==")
            for s in rest:
                {"pram": section_pram, "suda": section_suda, "household": section_household}[s](args, sdc, tmp, frame, out)
        if "dask" in args.sections:
            out("== (d) local suppression of a directory of Parquet files on Dask (benchmarks/categorical_dask.py) ==")
            run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "categorical_dask.py"), "--sizes",
                                  *map(str, args.dask_sizes), "--single-upto", str(args.dask_sizes[0]), "--tmp", d],
                                 capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
            out(run.stdout.rstrip() if run.returncode == 0 else f"   failed: {(run.stderr.strip().splitlines() or ['?'])[-1]}")
    out(f"# load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())}; total {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

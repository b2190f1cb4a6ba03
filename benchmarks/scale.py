"""National scale on one machine (issue 16): every target printed beside its reference,
measured in the same run.

    PYTHONPATH=. .venv/bin/python benchmarks/scale.py [section ...]

Sections (default: all, in this order; the last four are separate scripts, run from here):

``pcl100k``     PCL, Gaussian 100,000 x 10, k = 5: time, peak memory (growth of VmHWM in a
                fresh process), IL against MDAV's on the same data (targets <= 30 s, O(n d)
                memory, IL <= 0.92 x MDAV).
``pcl20k``      PCL on 20,000 x 10, k = 5 against today's code (commit fe8de73, checked out
                with ``git archive`` into a temporary directory and run in its own process):
                target >= 10 x faster, same or lower IL.
``univariate``  1-D: PCL's SSE against the optimal SSE (Hansen-Mukherjee dynamic program) on
                every census and EIA column at k = 3, 5, 10.
``freesizes``   multi-D: free sizes (default) against fixed sizes (``free_sizes=False``) on
                every CASC case of benchmarks/pcl.py.
``peer``        k-means-constrained (min-cost flow, size_min = k; installed for this script
                only, into a temporary directory, never a dependency) on every case of
                benchmarks/pcl.py: IL and time beside PCL's (targets: lower IL, >= 5 x faster);
                each of its fits runs in a child process stopped after PEER_LIMIT = 600 s.
``peer-casc``   the same on census and tarragona only (its fits there take seconds; on eia
                each runs into the limit). Not part of the default list (``peer`` covers it).
``casc-seeds``  every CASC case with seeds 0-5, today's code (fe8de73) beside this one: IL of
                seed 0, mean and minimum over the seeds (each fit's IL is one draw of the
                iterated local search).
``mdav1m``      MDAV 1,000,000 x 10, k = 5, unblocked: time and peak memory.
``blocks``      benchmarks/scale_blocks.py (blocked MDAV / PCL at 10^7, IL pairs).
``survey``      benchmarks/scale_survey.py (survey design, verify, assign at 10^6).
``contention``  benchmarks/contention.py (every parallel kernel with a competing process).
``stream``      benchmarks/scale_stream.py (apply of a function to 10^7-row files in chunks).

Times are best and median of ``REPEATS`` runs where a run takes less than a minute, else one
run (stated). The machine is shared: compare within one run.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from probanon.metrics import information_loss  # noqa: E402
from probanon.microagg import MDAV, PCL  # noqa: E402
from probanon.microagg.univariate import optimal_univariate  # noqa: E402

CASC = ROOT.parent / "shared" / "data" / "casc"
ADULT = ROOT.parent / "shared" / "data" / "adult" / "adult.csv"
EIA = ["RESREVENUE", "RESSALES", "COMREVENUE", "COMSALES", "INDREVENUE", "INDSALES", "OTHREVENUE", "OTHRSALES",
       "TOTREVENUE", "TOTSALES"]
TODAY = "fe8de73"
REPEATS = 3
QUICK = 60  # seconds under which a peer case is timed REPEATS times


def casc(name):
    frame = pd.read_csv(CASC / f"{name}.csv")
    return frame[EIA].to_numpy(float) if name == "eia" else frame.to_numpy(float)


def gaussian(n, d, seed=0):
    return np.random.default_rng(seed).normal(size=(n, d))


def il(X, labels):
    means = pd.DataFrame(X).groupby(labels).transform("mean").to_numpy()
    return information_loss(X, means)


def timed(fn, repeats=REPEATS):
    """(result of the last run, best seconds, median seconds)."""
    seconds, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        seconds.append(time.perf_counter() - start)
    return out, min(seconds), statistics.median(seconds)


def in_process(code: str, pythonpath: Path = ROOT, timeout=None) -> dict:
    """Run ``code`` in a fresh interpreter (PYTHONPATH = ``pythonpath``); it defines
    ``run()`` returning a dict; we add the seconds of run() and the growth of VmHWM over the
    resident memory before it (the process's own peak, not this one's). After ``timeout``
    seconds the child is stopped and ``subprocess.TimeoutExpired`` raised."""
    wrapper = textwrap.dedent('''
        import json, sys, time
        def _status(key):
            with open("/proc/self/status") as fh:
                return [int(line.split()[1]) * 1024 for line in fh if line.startswith(key)][0]
        ''') + textwrap.dedent(code) + textwrap.dedent('''
        warm()
        before = _status("VmRSS:")
        start = time.perf_counter()
        out = run()
        out["seconds"] = time.perf_counter() - start
        out["peak_growth"] = _status("VmHWM:") - before
        print(json.dumps(out))
        ''')
    done = subprocess.run([sys.executable, "-c", wrapper], capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": str(pythonpath), "PATH": "/usr/bin:/bin"}, cwd=str(pythonpath),
                          timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-3000:])
    return json.loads(done.stdout.strip().splitlines()[-1])


PCL_RUN = '''
    import numpy as np
    from probanon.microagg import PCL, MDAV
    X = np.random.default_rng(0).normal(size=({n}, 10))
    def warm():
        PCL(5, random_state=0).fit(X[:2000]); MDAV(5).fit(X[:2000])
    def run():
        p = PCL(5, random_state=0).fit(X)
        return {{"labels": p.labels_.tolist(), "mismatches": int((p.function_.assign(X) != p.labels_).sum())}}
'''


def pcl100k():
    n = 100_000
    X = gaussian(n, 10)
    _, mdav_best, _ = timed(lambda: MDAV(5).fit(X), 1)
    mdav_il = il(X, MDAV(5).fit(X).labels_)
    out = in_process(PCL_RUN.format(n=n))
    labels = np.array(out["labels"])
    ratio = il(X, labels) / mdav_il
    print(f"PCL 100,000 x 10, k = 5 (one run): {out['seconds']:.1f} s (target <= 30), peak memory growth "
          f"{out['peak_growth'] / 1e6:.0f} MB = {out['peak_growth'] / n:.0f} B per record (a dense n x |Q| float64 "
          f"matrix: {8 * n * (n // 5) / 1e9:.0f} GB); IL {il(X, labels):.3f} vs MDAV {mdav_il:.3f}: ratio {ratio:.3f} "
          f"(target <= 0.92) {'met' if ratio <= 0.92 and out['seconds'] <= 30 else 'NOT met'}; min cell "
          f"{np.bincount(labels).min()}, cells {labels.max() + 1} (MDAV {n // 5}), function mismatches "
          f"{out['mismatches']}; MDAV itself {mdav_best:.1f} s")


@contextlib.contextmanager
def _today_tree():
    """A temporary directory holding the probanon package of commit TODAY (``git archive``)."""
    with tempfile.TemporaryDirectory() as old:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", TODAY, "probanon"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", old], input=archive.stdout, check=True)
        yield Path(old)


def pcl20k():
    n = 20_000
    X = gaussian(n, 10)
    with _today_tree() as old:
        today = in_process(PCL_RUN.format(n=n), old)
    runs = [in_process(PCL_RUN.format(n=n)) for _ in range(REPEATS)]
    seconds = [r["seconds"] for r in runs]
    il_today, il_new = il(X, np.array(today["labels"])), il(X, np.array(runs[0]["labels"]))
    speedup = today["seconds"] / min(seconds)
    print(f"PCL 20,000 x 10, k = 5: today's code ({TODAY}, one run) {today['seconds']:.1f} s, peak "
          f"{today['peak_growth'] / 1e9:.2f} GB, IL {il_today:.3f}; now best {min(seconds):.1f} s median "
          f"{statistics.median(seconds):.1f} s, peak {runs[0]['peak_growth'] / 1e9:.2f} GB, IL {il_new:.3f}: "
          f"{speedup:.1f} x faster (target >= 10), IL {'same or lower' if il_new <= il_today + 1e-9 else 'HIGHER'}")


def univariate():
    worst, cases = 0.0, 0
    for name in ("census", "eia"):
        X = casc(name)
        for j in range(X.shape[1]):
            x = X[:, [j]]
            if np.ptp(x) == 0:
                continue
            z = (x - x.mean()) / x.std()
            for k in (3, 5, 10):
                opt = il(z, optimal_univariate(z[:, 0], k))
                got = il(z, PCL(k, random_state=0).fit(x).labels_)
                worst = max(worst, (got - opt) / opt if opt > 0 else got)
                cases += 1
    print(f"1-D: PCL against the optimal SSE on {cases} column x k cases (census, EIA; k = 3, 5, 10): largest "
          f"relative excess {worst:.2e} ({'optimal everywhere' if worst <= 1e-12 else 'NOT optimal'})")


def freesizes():
    lower = 0
    print(f"{'data':10} {'k':>3} {'fixed IL':>9} {'free IL':>9} {'cells fixed':>11} {'free':>6} {'sizes free':>11}")
    for name in ("census", "tarragona", "eia"):
        X = casc(name)
        for k in (3, 5, 10):
            fixed = PCL(k, random_state=0, free_sizes=False).fit(X).labels_
            free = PCL(k, random_state=0).fit(X).labels_
            a, b = il(X, fixed), il(X, free)
            lower += b < a
            sizes = np.bincount(free)
            print(f"{name:10} {k:>3} {a:>9.3f} {b:>9.3f} {fixed.max() + 1:>11} {free.max() + 1:>6} "
                  f"{sizes.min():>5}..{sizes.max():<5}")
    print(f"free sizes lower IL than fixed sizes on {lower} of 9 CASC cases (target 9)")


def _peer_module():
    """k-means-constrained, installed into a temporary directory for this run only."""
    try:
        return importlib.import_module("k_means_constrained")
    except ImportError:
        target = Path(tempfile.mkdtemp(prefix="kmc-"))
        # its own dependencies besides NumPy/SciPy/OR-Tools (already here), not the venv's
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                        "k-means-constrained", "joblib", "six", "cloudpickle"], check=True)
        sys.path.append(str(target))
        return importlib.import_module("k_means_constrained")


#: seconds a k-means-constrained fit may take before it is stopped (its time is then "> limit")
PEER_LIMIT = 600


def _peer_fit(Z, k):
    """(labels or None, seconds): k-means-constrained on Z in a child process
    (:func:`in_process`), stopped after PEER_LIMIT seconds (it has no time limit of its own;
    eia k = 3 ran for over 8 minutes)."""
    module = Path(_peer_module().__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        data, labels = Path(tmp) / "z.npy", Path(tmp) / "labels.npy"
        np.save(data, Z)
        try:
            out = in_process(f'''
                import sys
                import numpy as np
                sys.path.append({str(module)!r})
                from k_means_constrained import KMeansConstrained
                Z = np.load({str(data)!r})
                def warm():
                    pass
                def run():
                    fitted = KMeansConstrained(n_clusters=len(Z) // {k}, size_min={k}, random_state=0).fit(Z)
                    np.save({str(labels)!r}, fitted.labels_)
                    return {{}}
            ''', timeout=PEER_LIMIT)
        except subprocess.TimeoutExpired:
            return None, float(PEER_LIMIT)
        return np.load(labels), out["seconds"]


def peer_cases():
    for name in ("census", "tarragona", "eia"):
        X = casc(name)
        for k in (3, 5, 10):
            yield f"{name} k={k}", X, k
    adult = pd.read_csv(ADULT)[["age", "education-num", "hours-per-week"]].to_numpy(float)
    for k in (4000, 2000):
        yield f"Adult k={k}", adult, k
    for rho in (0.0, 0.5):
        X = np.random.default_rng(0).multivariate_normal([0, 0], [[1, rho], [rho, 1]], 2**16)
        yield f"2-D Gaussian rho={rho} k=4096", X, 4096


def peer(names=None):
    """``names``: the data sets to run (default: every case of peer_cases). A case whose fits
    both end within QUICK seconds is timed REPEATS times each (PCL in this process, the peer
    in a fresh child each time), interleaved; the speed target is judged on the medians."""
    wins = faster = 0
    cases = [case for case in peer_cases() if names is None or case[0].split()[0] in names]
    PCL(3, random_state=0).fit(casc("census")[:300])  # numba's cache loaded before the first timed fit
    print(f"{'case':28} {'PCL IL':>8} {'s':>6} {'k-m-c IL':>9} {'s':>7} {'IL gain %':>9} {'speed x':>8}  "
          f"(s: median of {REPEATS} runs where both take < {QUICK} s, else one run; best ratio)")
    for label, X, k in cases:
        Z = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1)
        p, pt, _ = timed(lambda X=X, k=k: PCL(k, random_state=0).fit(X).labels_, 1)
        m, mt = _peer_fit(Z, k)
        pts, mts = [pt], [mt]
        if m is not None and max(pt, mt) < QUICK:
            for _ in range(REPEATS - 1):
                pts.append(timed(lambda X=X, k=k: PCL(k, random_state=0).fit(X).labels_, 1)[1])
                mts.append(_peer_fit(Z, k)[1])
        pt, mt = statistics.median(pts), statistics.median(mts)
        best = max(b / a for a, b in zip(pts, mts))
        a = il(X, p)
        faster += mt >= 5 * pt
        if m is None:  # stopped: no IL to compare, the speed ratio is a lower bound
            print(f"{label:28} {a:>8.3f} {pt:>6.1f} {'stopped':>9} {'>' + format(mt, '.0f'):>7} {'-':>9} "
                  f"{'>' + format(mt / pt, '.1f'):>8}", flush=True)
            continue
        b = il(X, m)
        wins += a < b
        print(f"{label:28} {a:>8.3f} {pt:>6.1f} {b:>9.3f} {mt:>7.1f} {100 * (b - a) / b:>9.1f} {mt / pt:>8.1f}"
              f"  ({len(pts)} runs; best {best:.1f})", flush=True)
    print(f"PCL lower IL than k-means-constrained on {wins} cases, >= 5 x faster on {faster} (of {len(cases)})")


def peer_casc():
    peer(("census", "tarragona"))


SEEDS = range(6)

CASC_SEEDS_RUN = '''
    import numpy as np, pandas as pd
    from probanon.microagg import PCL
    EIA = {eia!r}
    def casc(name):
        frame = pd.read_csv({casc!r} + "/" + name + ".csv")
        return frame[EIA].to_numpy(float) if name == "eia" else frame.to_numpy(float)
    def warm():
        PCL(3, random_state=0).fit(casc("census")[:300])
    def run():
        return {{f"{{name}} {{k}} {{seed}}": PCL(k, random_state=seed).fit(casc(name)).labels_.tolist()
                for name in ("census", "tarragona", "eia") for k in (3, 5, 10) for seed in {seeds!r}}}
'''


def casc_seeds():
    """Every CASC case of benchmarks/pcl.py with seeds 0-5, today's code (fe8de73) and this
    one, each in a child process: the iterated local search makes each IL a draw; a
    comparison of one seed is a comparison of two draws."""
    code = CASC_SEEDS_RUN.format(eia=EIA, casc=str(CASC), seeds=list(SEEDS))
    with _today_tree() as old:
        today = in_process(code, old)
    now = in_process(code)
    print(f"IL over seeds {SEEDS.start}-{SEEDS.stop - 1}: {TODAY} (total {today['seconds']:.0f} s) and now (total "
          f"{now['seconds']:.0f} s)")
    print(f"{'data':10} {'k':>3} {TODAY + ' seed 0':>14} {'mean':>7} {'min':>7} {'now seed 0':>11} {'mean':>7} {'min':>7}"
          f"  mean no worse")
    better = 0
    for name in ("census", "tarragona", "eia"):
        X = casc(name)
        for k in (3, 5, 10):
            a = [il(X, np.array(today[f"{name} {k} {seed}"])) for seed in SEEDS]
            b = [il(X, np.array(now[f"{name} {k} {seed}"])) for seed in SEEDS]
            better += np.mean(b) <= np.mean(a)
            print(f"{name:10} {k:>3} {a[0]:>14.3f} {np.mean(a):>7.3f} {min(a):>7.3f} {b[0]:>11.3f} {np.mean(b):>7.3f} "
                  f"{min(b):>7.3f}  {'yes' if np.mean(b) <= np.mean(a) else 'NO'}", flush=True)
    print(f"mean IL over the seeds no worse than {TODAY}'s on {better} of 9 CASC cases")


def mdav1m():
    out = in_process('''
        import numpy as np
        from probanon.microagg import MDAV
        X = np.random.default_rng(0).normal(size=(1_000_000, 10))
        def warm():
            MDAV(5).fit(X[:5000])
        def run():
            m = MDAV(5, block_size=0).fit(X)
            return {"groups": int(m.labels_.max() + 1)}
    ''')
    print(f"MDAV 1,000,000 x 10, k = 5, unblocked (one run): {out['seconds']:.1f} s, peak memory growth "
          f"{out['peak_growth'] / 1e9:.2f} GB (the data: 0.08 GB), {out['groups']} groups")


def external(module):
    def run():  # with its default arguments, not this script's
        importlib.import_module(module).main([])
    return run


SECTIONS = {"pcl100k": pcl100k, "pcl20k": pcl20k, "univariate": univariate, "freesizes": freesizes, "peer": peer,
            "peer-casc": peer_casc, "casc-seeds": casc_seeds, "mdav1m": mdav1m, "blocks": external("scale_blocks"), "survey": external("scale_survey"),
            "contention": external("contention"), "stream": external("scale_stream")}


def main(argv=None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or [name for name in SECTIONS if name != "peer-casc"]
    unknown = [name for name in names if name not in SECTIONS]
    if unknown:
        print(f"unknown section {unknown[0]!r}; choose from {', '.join(SECTIONS)}", file=sys.stderr)
        return 2
    for name in names:
        print(f"== {name}", flush=True)
        SECTIONS[name]()
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Run anonymeter's evaluators on CSV files and write their results as JSON (benchmarks/attribute.py).

Runs in anonymeter's own interpreter (a separate virtual environment; see benchmarks/attribute.py),
never in probanon's: it imports nothing from probanon. Usage::

    python _anonymeter_driver.py SPEC.json OUT.json

SPEC: ``original``, ``released``, ``control`` (CSV paths: the records the release was made from,
the release, records held out of it), ``keys``, ``confidential``, ``numeric`` (the confidential
columns scored as regression, anonymeter's relative tolerance 5%), ``categorical`` (columns read
as text), ``n_attacks`` (targets per attack; the control attacks are capped by its size),
``evaluators`` (a subset of "inference", "linkability", "singling_out"), ``repeat`` (timed
repetitions; the results are those of the first), ``seed`` (NumPy's global seed: anonymeter draws
its targets with ``DataFrame.sample`` and its random baselines without a seed of their own),
``warmup`` (run every evaluator once on 60 rows first, so numba's compilation is not timed).
"""

from __future__ import annotations

import json
import sys
import time
import warnings

import numpy as np
import pandas as pd


def _read(path, categorical):
    frame = pd.read_csv(path)
    for c in categorical:
        if c in frame.columns:
            frame[c] = frame[c].astype(str).astype(object)
    return frame


def _rate(r):
    return {"value": float(r.value), "error": float(r.error)}


def _results(res) -> dict:
    risk = res.risk()
    return {"attack": _rate(res.attack_rate), "baseline": _rate(res.baseline_rate),
            "control": None if res.control_rate is None else _rate(res.control_rate),
            "risk": float(risk.value), "ci": [float(risk.ci[0]), float(risk.ci[1])],
            "n_attacks": int(res.n_attacks_ori), "n_control_attacks": int(res.n_attacks_control)}


def run(spec: dict, original, released, control, n_attacks: int) -> tuple[dict, dict]:
    from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator

    keys, confidential, numeric = spec["keys"], spec["confidential"], set(spec["numeric"])
    cols = keys + confidential
    original, released, control = original[cols], released[cols], control[cols]
    out, times = {}, {}
    if "inference" in spec["evaluators"]:
        out["inference"], times["inference"] = {}, {}
        for secret in confidential:
            start = time.perf_counter()
            ev = InferenceEvaluator(ori=original, syn=released, control=control, aux_cols=keys, secret=secret,
                                    regression=secret in numeric, n_attacks=n_attacks)
            ev.evaluate(n_jobs=1)
            times["inference"][secret] = time.perf_counter() - start
            out["inference"][secret] = _results(ev.results())
    if "linkability" in spec["evaluators"]:
        n = min(n_attacks, len(original), len(control))  # it samples n targets from the control too
        start = time.perf_counter()
        ev = LinkabilityEvaluator(ori=original, syn=released, control=control, n_attacks=n,
                                  aux_cols=(keys, confidential), n_neighbors=1)
        ev.evaluate(n_jobs=1)
        times["linkability"] = time.perf_counter() - start
        out["linkability"] = _results(ev.results())
    if "singling_out" in spec["evaluators"]:
        start = time.perf_counter()
        ev = SinglingOutEvaluator(ori=original, syn=released, control=control, n_attacks=min(n_attacks, 500),
                                  n_cols=3)
        try:
            ev.evaluate(mode="multivariate")
            out["singling_out"] = _results(ev.results())
        except Exception as exc:  # anonymeter raises when it finds too few predicates: say so
            out["singling_out"] = {"error": f"{type(exc).__name__}: {exc}"}
        times["singling_out"] = time.perf_counter() - start
    return out, times


def main() -> int:
    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    spec = json.load(open(sys.argv[1]))
    cat = spec.get("categorical", [])
    original, released, control = (_read(spec[p], cat) for p in ("original", "released", "control"))
    if spec.get("warmup", True):
        np.random.seed(0)
        small = min(60, len(original), len(control), len(released))
        run(spec, original.head(small), released.head(small), control.head(small), min(20, small))
    results, all_times = None, []
    for _ in range(max(1, int(spec.get("repeat", 1)))):
        np.random.seed(int(spec.get("seed", 0)))
        out, times = run(spec, original, released, control, int(spec["n_attacks"]))
        results = results or out
        all_times.append(times)
    from importlib.metadata import version

    json.dump({"results": results, "times": all_times, "version": version("anonymeter"), "pandas": pd.__version__},
              open(sys.argv[2], "w"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

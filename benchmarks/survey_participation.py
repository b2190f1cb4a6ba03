"""A misspecified participation model (issue 18, Targets): does the robust option keep the guarantee?

Frame: N records, three Gaussian quasi-identifiers x1, x2, x3; true participation
pi_true = expit(B0 + B1 x1 + B2 x2) (mean about 0.33; the covariates are quasi-identifiers too).
Every design is the per-record MDAV design (``design()`` with one pi_j per record, k, pbar), built
from some participation model; responses are then drawn from pi_true (``simulate_cells`` on the
design's cells with the true pi_j, RUNS independent runs) and the observed cell failure, the
fraction of (cell, run) pairs with 0 < respondents < k, is printed with its 99% Clopper-Pearson
interval beside pbar, and beside the mean true failure Algorithm A predicts for those cells.

Designs:
  true model        pi_true (the reference: the guarantee holds by construction)
  naive             pi_model = min(1, 1.2 pi_true): a model whose pi_j are 20% too high
  robust F = 0.2    pi_model / (1 + 0.2): LogisticParticipation's ``optimism`` formula
and the same with fitted models (:class:`probanon.survey.participation.LogisticParticipation`):
a previous wave of the whole frame responded with pi_model (participation fell by 1/1.2 since),
  fitted, naive           the logistic model fitted on it
  fitted, F = 0.2         the same with optimism 0.2
  small wave, c = 0.99    fitted on a previous wave of WAVE_SMALL records only, designed with the
                          one-sided 99% lower confidence bound of each pi_j and no optimism: the
                          bound covers the estimation error, not the 20% drift (printed as it comes)

    .venv/bin/python benchmarks/survey_participation.py [--records N] [--runs R]

About a minute on 2 cores: run it under ``flock /tmp/bench.lock``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from scipy.special import expit

from probanon.survey.anonymity import cells_log_failure
from probanon.survey.design import design
from probanon.survey.participation import LogisticParticipation
from probanon.survey.simulation import simulate_cells

K, RISK, SEED = 5, 0.01, 2026
B0, B1, B2 = -0.8, 0.6, -0.4
OPTIMISM, CONFIDENCE, WAVE_SMALL = 0.2, 0.99, 1000
QI = ["x1", "x2", "x3"]


def row(name, d, pi_true, runs, rng):
    """One line of the table: the design's cells, simulated with the true pi_j."""
    order = np.argsort(d.labels, kind="stable")
    cells = np.split(pi_true[order], np.cumsum(d.sizes)[:-1])
    true_failures = np.exp(cells_log_failure(K, pi_true[order], d.sizes))
    r = simulate_cells(cells, K, runs, random_state=rng, confidence=0.99)
    lo, hi = r.cell_failure_interval
    verdict = "<= pbar" if hi <= RISK else ("> pbar" if lo > RISK else "undecided")
    print(f"  {name:<22} {len(d.sizes):>6} {d.distortion:>8.4f} {d.cell_failures.mean():>10.5f} "
          f"{r.predicted_cell_failure:>10.5f} {int((true_failures > RISK).sum()):>9} "
          f"{r.observed_cell_failure:>10.5f}  [{lo:.5f}, {hi:.5f}]  {verdict}")
    return r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=2_000)
    args = ap.parse_args()
    rng = np.random.default_rng(SEED)
    n = args.records
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=QI)
    pi_true = expit(B0 + B1 * frame["x1"].to_numpy() + B2 * frame["x2"].to_numpy())
    pi_model = np.minimum(1.0, 1.2 * pi_true)
    wave = frame.assign(responded=(rng.random(n) < pi_model).astype(int))  # participation then
    small = wave.iloc[rng.choice(n, WAVE_SMALL, replace=False)]

    print(f"Misspecified participation model (issue 18.3): {n:,} records, k = {K}, pbar = {RISK}, "
          f"{args.runs:,} runs per design, seed {SEED}")
    print(f"  pi_true = expit({B0} + {B1} x1 + {B2} x2): mean {pi_true.mean():.3f}, range "
          f"{pi_true.min():.3f}..{pi_true.max():.3f}; the model's pi_j: min(1, 1.2 pi_true)")
    print(f"  previous wave: {n:,} records responded with the model's pi_j ({wave['responded'].mean():.3f}); "
          f"small wave: {WAVE_SMALL:,} of them")
    designs = [("true model", pi_true), ("naive (20% too high)", pi_model),
               (f"robust F = {OPTIMISM}", pi_model / (1.0 + OPTIMISM))]
    for name, conf, opt, data in [("fitted, naive", None, 0.0, wave), (f"fitted, F = {OPTIMISM}", None, OPTIMISM, wave),
                                  (f"small wave, c = {CONFIDENCE}", CONFIDENCE, 0.0, small)]:
        model = LogisticParticipation(["x1", "x2"], confidence=conf, optimism=opt).fit(data)
        designs.append((name, model))
        b = [model.intercept_, *model.coef_]
        print(f"  {name}: b = ({b[0]:.3f}, {b[1]:.3f}, {b[2]:.3f}), se = "
              f"({', '.join(f'{s:.3f}' for s in np.sqrt(np.diag(model.covariance_)))})")
    print(f"\n  {'design from':<22} {'cells':>6} {'D':>8} {'qbar model':>10} {'qbar true':>10} "
          f"{'cells>pbar':>9} {'observed':>10}  99% interval (Clopper-Pearson)")
    print("  (qbar model: mean cell failure the design claims; qbar true: Algorithm A on the true pi_j; "
          "cells>pbar: cells whose true failure exceeds pbar)")
    t = time.perf_counter()
    for name, participation in designs:
        d = design(frame, K, participation, RISK, columns=QI)
        row(name, d, pi_true, args.runs, rng)
    print(f"\n  designs and simulations: {time.perf_counter() - t:.1f} s")


if __name__ == "__main__":
    main()

"""Monte Carlo as independent seeded batches (issue 19.3): ``survey simulate``
(:func:`probanon.survey.simulation.simulate_cells` and the functions built on it) and the
(l, delta) Monte Carlo (:func:`probanon.diversity.attack.linkage_monte_carlo`).

A Monte Carlo of ``runs`` runs is cut into batches of a fixed number of runs (a constant of the
simulation, whatever runs them); batch b draws from its own generator
``np.random.default_rng(SeedSequence(seed).spawn(batches)[b])`` (:func:`batch_seeds`) and returns
integer counts, which are summed (:func:`batch_totals`). A sum of integers does not depend on the
order in which the batches complete, nor on where they ran or how often a batch was rerun after a
worker died, so this process and a Dask cluster give bit-identical results for the same seed:

    from probanon.distributed import batches_on_dask, dask_client

    with dask_client(workers=2) as client:
        simulate_spec(spec, population, runs=100_000, random_state=1, runner=batches_on_dask(client))

The batches run in this process, or through a ``runner``: a callable ``runner(function, count,
arguments, shared, progress)`` yielding each batch's counts in any order
(:func:`probanon.distributed.montecarlo.batches_on_dask` runs them as tasks of a Dask cluster). This
module imports nothing of Dask; the layers above it hand the runner in.
"""

from __future__ import annotations

import numpy as np


def batch_seeds(rng: np.random.Generator, count: int) -> list[np.random.SeedSequence]:
    """The seeds of ``count`` batches: ``count`` children spawned from the seed sequence of
    ``rng`` (for ``default_rng(seed)``: ``SeedSequence(seed).spawn(count)``; a generator spawns
    new children at each call, so two simulations from one generator are independent)."""
    return rng.bit_generator.seed_seq.spawn(count)


def seeded_totals(function, runs: int, per_batch: int, rng, fixed: tuple = (), shared: tuple = (), runner=None,
                  progress=None) -> list[int]:
    """A Monte Carlo of ``runs`` runs as ceil(runs / per_batch) seeded batches (module docstring):
    the element-wise sum of ``function(*shared, *fixed, runs_b, seed_b)``, where batch b has
    runs_b = min(per_batch, runs - b per_batch) runs and the seed :func:`batch_seeds` gives it.
    ``shared``, ``runner``, ``progress``: as for :func:`batch_totals`."""
    count = -(-runs // per_batch)
    seeds = batch_seeds(rng, count)
    return batch_totals(function, count, lambda b: (*fixed, min(per_batch, runs - b * per_batch), seeds[b]),
                        shared=shared, runner=runner, progress=progress)


def batch_totals(function, count: int, arguments, shared: tuple = (), runner=None, progress=None) -> list[int]:
    """The element-wise sum of the integer counts ``function(*shared, *arguments(b))`` over the
    batches b = 0..count-1: in this process when ``runner`` is None, else by the runner
    (module docstring; ``shared``: the arrays every batch reads, which a runner may send once).
    ``progress("batches", done, count)`` before the first batch and after each one."""
    batches = (runner or in_process)(function, count, arguments, shared, progress)
    totals = None
    for counts in batches:
        totals = list(counts) if totals is None else [a + int(b) for a, b in zip(totals, counts)]
    return [int(v) for v in totals]


def in_process(function, count: int, arguments, shared: tuple, progress):
    """The runner of this process: the batches one after the other, in order."""
    if progress is not None:
        progress("batches", 0, count)
    for b in range(count):
        yield function(*shared, *arguments(b))
        if progress is not None:
            progress("batches", b + 1, count)


__all__ = ["batch_seeds", "batch_totals", "in_process", "seeded_totals"]

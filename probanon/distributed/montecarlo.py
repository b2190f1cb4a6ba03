"""Monte Carlo on Dask (issue 19.3): ``survey simulate`` (:func:`probanon.survey.simulation.simulate_cells`
and the functions built on it) and the (l, delta) Monte Carlo
(:func:`probanon.diversity.attack.linkage_monte_carlo`) as independent seeded batches.

A Monte Carlo of ``runs`` runs is cut into batches of a fixed number of runs (a constant of the
simulation, whatever the number of workers); batch b draws from its own generator
``np.random.default_rng(SeedSequence(seed).spawn(batches)[b])`` (:func:`batch_seeds`) and returns
integer counts, which are summed (:func:`batch_totals`). A sum of integers does not depend on the
order in which the batches complete, nor on where they ran or how often a batch was rerun after a
worker died, so one process and a Dask cluster give bit-identical results for the same seed:

    with dask_client(workers=2) as client:
        simulate_spec(spec, population, runs=100_000, random_state=1, client=client)

The batch is one function of the simulation module, called here in this process (``client``
None) or as tasks of ``client``'s cluster (:func:`~probanon.distributed.cluster.run_tasks`); this
module imports dask only in the latter case.
"""

from __future__ import annotations

import numpy as np


def batch_seeds(rng: np.random.Generator, count: int) -> list[np.random.SeedSequence]:
    """The seeds of ``count`` batches: ``count`` children spawned from the seed sequence of
    ``rng`` (for ``default_rng(seed)``: ``SeedSequence(seed).spawn(count)``; a generator spawns
    new children at each call, so two simulations from one generator are independent)."""
    return rng.bit_generator.seed_seq.spawn(count)


def seeded_totals(function, runs: int, per_batch: int, rng, fixed: tuple = (), shared: tuple = (), client=None,
                  progress=None) -> list[int]:
    """A Monte Carlo of ``runs`` runs as ceil(runs / per_batch) seeded batches (module docstring):
    the element-wise sum of ``function(*shared, *fixed, runs_b, seed_b)``, where batch b has
    runs_b = min(per_batch, runs - b per_batch) runs and the seed :func:`batch_seeds` gives it.
    ``shared``, ``client``, ``progress``: as for :func:`batch_totals`."""
    count = -(-runs // per_batch)
    seeds = batch_seeds(rng, count)
    return batch_totals(function, count, lambda b: (*fixed, min(per_batch, runs - b * per_batch), seeds[b]),
                        shared=shared, client=client, progress=progress)


def batch_totals(function, count: int, arguments, shared: tuple = (), client=None, progress=None) -> list[int]:
    """The element-wise sum of the integer counts ``function(*shared, *arguments(b))`` over the
    batches b = 0..count-1: in this process when ``client`` is None, else as tasks of the Dask
    ``client`` (``shared``, the arrays every batch reads, sent to the workers once).
    ``progress("batches", done, count)`` before the first batch and after each one."""
    totals = None
    for counts in _batches(function, count, arguments, shared, client, progress):
        totals = list(counts) if totals is None else [a + int(b) for a, b in zip(totals, counts)]
    return [int(v) for v in totals]


def _batches(function, count, arguments, shared, client, progress):
    if client is None:
        if progress is not None:
            progress("batches", 0, count)
        for b in range(count):
            yield function(*shared, *arguments(b))
            if progress is not None:
                progress("batches", b + 1, count)
        return
    from .cluster import run_tasks

    # every worker holds a copy: a worker that dies takes no data with it
    remote = tuple(client.scatter(list(shared), broadcast=True, hash=False)) if shared else ()
    try:
        for _, counts in run_tasks(client, function, count, lambda b: (*remote, *arguments(b)), progress,
                                   stage="batches"):
            yield counts
    finally:
        for future in remote:
            future.release()


__all__ = ["batch_seeds", "batch_totals", "seeded_totals"]

"""Monte Carlo on Dask (issue 19.3): the runner of :mod:`probanon.montecarlo` that runs its
seeded batches as tasks of a Dask cluster, with the same result as in this process:

    with dask_client(workers=2) as client:
        simulate_spec(spec, population, runs=100_000, random_state=1, runner=batches_on_dask(client))

This module imports dask only when the batches run (:func:`~probanon.distributed.cluster.run_tasks`).
"""

from __future__ import annotations


def batches_on_dask(client):
    """The runner (:mod:`probanon.montecarlo`) of ``client``'s cluster: each batch a task; the
    arrays every batch reads scattered to every worker once (a worker that dies takes no data
    with it); ``progress("batches", done, count)`` as the tasks complete."""

    def runner(function, count: int, arguments, shared: tuple, progress):
        from .cluster import run_tasks

        remote = tuple(client.scatter(list(shared), broadcast=True, hash=False)) if shared else ()
        try:
            for _, counts in run_tasks(client, function, count, lambda b: (*remote, *arguments(b)), progress,
                                       stage="batches"):
                yield counts
        finally:
            for future in remote:
                future.release()

    return runner


__all__ = ["batches_on_dask"]

"""Blocked microaggregation on Dask (issue 19.2): the blocks of :mod:`probanon.microagg.blocks`
fitted as tasks on a cluster, one task per block.

The cut tree, the per-block seeds (``SeedSequence(random_state).spawn``) and the function are
those of the single-machine blocked fit; only where each block's MDAV / V-MDAV / PCL runs
changes, so the same seed gives the same labels, the same function and the same information
loss as ``n_jobs`` local processes.

    with dask_client(workers=2) as client, on_dask(client):
        PCL(k=5, block_size=32_000, random_state=1).fit(X)
"""

from __future__ import annotations

import contextlib

from ..microagg.blocks import BLOCK_RUNNER
from .cluster import run_tasks


@contextlib.contextmanager
def on_dask(client):
    """Blocked fits inside this context run their blocks as tasks of ``client``'s cluster."""
    def runner(function, count, tasks, progress):
        return run_tasks(client, function, count, tasks, progress, stage="blocks")

    token = BLOCK_RUNNER.set(runner)
    try:
        yield client
    finally:
        BLOCK_RUNNER.reset(token)


__all__ = ["on_dask"]

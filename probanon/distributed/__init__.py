"""probanon on Dask (issue 19): the only package that imports dask. A ``LocalCluster`` on this
machine when no scheduler address is given, any cluster by its address otherwise; everything
distributed goes through Dask's futures.

- :mod:`.cluster`: connecting (:func:`dask_client`), describing and running tasks;
- :mod:`.blocks`: blocked microaggregation with its blocks as tasks (:func:`on_dask`);
- :mod:`.montecarlo`: the seeded batches of a Monte Carlo (:mod:`probanon.montecarlo`) as tasks
  (``runner=batches_on_dask(client)``).
"""

from .blocks import on_dask
from .cluster import ClusterError, dask_client, describe, run_tasks
from .montecarlo import batches_on_dask

__all__ = ["ClusterError", "batches_on_dask", "dask_client", "describe", "on_dask", "run_tasks"]

from .._validation import guard_public  # noqa: E402

guard_public(globals(), __all__)  # calls that do not fit a signature: our error


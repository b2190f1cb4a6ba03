"""The Dask cluster probanon runs on (issue 19): a ``LocalCluster`` on this machine when no address
is given, any running cluster by its scheduler address otherwise (``--scheduler ADDRESS``).

Everything distributed goes through Dask's futures (:func:`run_tasks`): no process pools,
sockets or schedulers of ours. The workers run one numba thread each (``NUMBA_NUM_THREADS=1``
in a local cluster's worker processes; on a cluster of your own, set it in the workers'
environment), so that the cores are shared by processes, not by threads that wait on each other
(issue 16.5).

A task that dies with its worker is run again on another worker by the scheduler (Dask's
``allowed_failures``, 3 by default); the results do not depend on where or how often a task ran,
because every task is a pure function of its arguments (seeds included).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from pathlib import Path

from ..errors import ProbanonError

#: seconds to reach a scheduler given by address before giving up
CONNECT_TIMEOUT = 5


class ClusterError(ProbanonError):
    """The Dask scheduler cannot be reached, or the cluster failed."""


@contextlib.contextmanager
def dask_client(scheduler: str | None = None, workers: int | None = None, timeout: float = CONNECT_TIMEOUT):
    """A ``distributed.Client``: connected to the scheduler at ``scheduler`` (e.g.
    ``tcp://10.0.0.5:8786``), or to a new ``LocalCluster`` of ``workers`` worker processes (None:
    one per core this process may use) listening on 127.0.0.1 only, closed on exit. An
    unreachable scheduler is a :class:`ClusterError` after at most ``timeout`` seconds."""
    from distributed import Client, LocalCluster

    if scheduler is not None:
        if workers is not None:
            raise ClusterError("--workers starts a local cluster: it does not apply with --scheduler")
        try:
            client = Client(scheduler, timeout=f"{timeout}s", set_as_default=False)
        except (OSError, TimeoutError, ValueError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ClusterError(f"cannot reach the Dask scheduler at {scheduler!r} within {timeout:g} s ({reason})") from None
        with client:
            yield client
        return
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ClusterError(f"workers must be a positive integer, got {workers!r}")
    count = workers or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    with LocalCluster(n_workers=count, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address="127.0.0.1:0", env={"NUMBA_NUM_THREADS": "1"}, silence_logs=50) as cluster, \
            Client(cluster, set_as_default=False) as client:
        yield client


def describe(client) -> str:
    """One line: the scheduler, its workers and the dashboard address (if any)."""
    import importlib.util

    info = client.scheduler_info()
    link = client.dashboard_link if info.get("services", {}).get("dashboard") else None
    pages = "" if importlib.util.find_spec("bokeh") else " (its pages need bokeh: pip install bokeh)"
    return (f"Dask: {len(info.get('workers', {}))} workers, scheduler {info.get('address', '?')}"
            + (f", dashboard {link}{pages}" if link else ", no dashboard"))


#: arguments of at least this many bytes are scattered to the cluster before their task is submitted
SCATTER_BYTES = 1 << 20


def _large(value) -> bool:
    return getattr(value, "nbytes", 0) >= SCATTER_BYTES


def run_tasks(client, function, count: int, arguments, progress=None, stage: str = "tasks", retries: int = 0):
    """Yield (j, function(*arguments(j))) for j = 0..count-1 as the tasks complete on the cluster
    (``arguments(j)``: the argument tuple of task j, built when it is submitted);
    ``progress(stage, done, count)`` after each.
    Tasks are submitted as they are needed (at most twice the workers' threads in flight), so
    the client never holds every task's data at once. An exception raised by a task is raised
    here; a worker that dies is survived (its tasks run again elsewhere)."""
    from distributed import as_completed

    if progress is not None:
        progress(stage, 0, count)
    threads = max(1, sum(client.nthreads().values()))
    pending = iter(range(count))
    submitted = {}

    def submit_next():
        j = next(pending, None)
        if j is None:
            return None
        # large arrays go to the cluster as data (scattered), not inside the task graph
        args = [client.scatter(a, direct=False, hash=False) if _large(a) else a for a in arguments(j)]
        future = client.submit(function, *args, pure=False, retries=retries, key=f"{stage}-{j}-{os.urandom(4).hex()}")
        submitted[future.key] = j
        return future

    window = as_completed([f for f in (submit_next() for _ in range(2 * threads)) if f is not None], loop=client.loop)
    done = 0
    for future in window:
        j = submitted.pop(future.key)
        result = future.result()
        future.release()
        done += 1
        if progress is not None:
            progress(stage, done, count)
        nxt = submit_next()
        if nxt is not None:
            window.add(nxt)
        yield j, result


def write_folder(client, output, submit, count: int, say) -> None:
    """Run the write tasks ``submit(tmp)`` (their futures, ``count`` files) into a temporary folder
    beside ``output`` that becomes ``output`` only when every file is written; on any error the
    tasks are cancelled and the folder removed (all files or none)."""
    from distributed import wait

    output = Path(output).resolve()  # the workers' working folder is not ours
    tmp = output.parent / f".{output.name}.tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        writes = submit(tmp)
        say("write", 0, count)
        try:
            client.gather(writes)
        except BaseException:
            client.cancel(writes)  # no task writes into the folder after it is removed
            with client.as_current():  # our clients are not the default one: wait needs it named
                wait(writes, timeout=60)
            raise
        say("write", count, count)
        os.replace(tmp, output)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


__all__ = ["CONNECT_TIMEOUT", "ClusterError", "dask_client", "describe",
           "run_tasks", "write_folder"]

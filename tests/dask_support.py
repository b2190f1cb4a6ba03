"""Shared pieces of the Dask tests (issue 19): a 2-worker LocalCluster on 127.0.0.1 per test
module, and killing one of its workers in the middle of a run."""

import os
import threading
import time

import pytest

pytest.importorskip("distributed")

from probanon.distributed import dask_client  # noqa: E402


@pytest.fixture(scope="module")
def client():
    """A client of a 2-worker LocalCluster on 127.0.0.1, stopped after the module."""
    with dask_client(workers=2) as c:
        yield c


def kill_worker(client, address: str) -> None:
    """End the worker process at ``address`` at once (its nanny starts a new one)."""
    try:
        client.run(os._exit, 1, workers=[address])
    except Exception:  # noqa: BLE001 - the worker dies before it answers
        pass


def survive_a_killed_worker(client, run, timeout: float = 240, attempts: int = 5):
    """``run()`` in a thread while one worker busy with its tasks is killed; its result (the
    thread's error, if any, raised here; a run not done within ``timeout`` s fails the test).
    A run whose tasks all ended between two looks at the scheduler (short tasks) is run again,
    at most ``attempts`` times in all: the test is about a kill in the middle of a run."""
    for _ in range(attempts):
        out, errors = {}, []

        def target():
            try:
                out["result"] = run()
            except Exception as exc:  # noqa: BLE001 - raised below
                errors.append(exc)

        thread = threading.Thread(target=target)
        thread.start()
        deadline = time.monotonic() + 60
        busy = []
        while not busy and thread.is_alive() and time.monotonic() < deadline:
            busy = [worker for worker, tasks in client.processing().items() if tasks]
            if not busy:
                time.sleep(0.005)
        if busy:
            break
        thread.join(timeout=timeout)
        assert not thread.is_alive(), "no task started within 60 s"
    else:
        raise AssertionError(f"no task of {attempts} runs was seen running: no worker was killed")
    kill_worker(client, busy[0])
    thread.join(timeout=timeout)
    assert not thread.is_alive(), f"not done {timeout} s after a worker was killed"
    if errors:
        raise errors[0]
    return out["result"]

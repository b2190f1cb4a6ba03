"""Shared pieces of the Dask tests (issue 19): a 2-worker LocalCluster on 127.0.0.1 per test
module, and killing one of its workers in the middle of a run."""

import os

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

"""One Dask cluster per test module of the executor: two worker processes
on loopback, one thread each (about 2 s to start), sampling memory at
Dask's default interval.

Per module, not per session: while a client runs, its threads allocate,
and the tests that measure memory with ``tracemalloc`` (which counts every
thread) would count them if a cluster outlived its module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from distributed import Client

from axisflow.execution.dask_executor import local_cluster


@pytest.fixture(scope="module")
def dask_client() -> Iterator[Client]:
    """A client of the executor's embedded cluster of 2 worker processes on
    127.0.0.1 (``local_cluster``)."""
    # No test of the shared clusters checks a measured peak: Dask's default
    # sampling (every 500 ms, not the executor's 20 ms) spares the suite
    # about a third of a core per cluster while it lives.
    with local_cluster(2, monitor_interval="500ms") as client:
        yield client

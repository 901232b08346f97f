"""One Dask cluster for the executor's tests: two worker processes on
loopback, one thread each, started once per session (about 2 s)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from distributed import Client

from axisflow.execution.dask_executor import local_cluster


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Client]:
    """A client of the executor's embedded cluster of 2 worker processes on
    127.0.0.1 (``local_cluster``)."""
    with local_cluster(2) as client:
        yield client

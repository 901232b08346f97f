"""One Dask cluster for the executor's tests: two worker processes on
loopback, one thread each, started once per session (about 2 s)."""

from __future__ import annotations

from collections.abc import Iterator

import dask
import pytest
from distributed import Client, LocalCluster

from axisflow.execution.dask_executor import MONITOR_INTERVAL


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Client]:
    """A client of a ``LocalCluster`` of 2 worker processes on 127.0.0.1."""
    with dask.config.set(
        {"distributed.admin.system-monitor.interval": MONITOR_INTERVAL}
    ):
        cluster = LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=":0",
            silence_logs=50,
        )
    with cluster, Client(cluster) as client:
        yield client

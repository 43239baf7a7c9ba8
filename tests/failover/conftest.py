"""Fixtures of the failover suite: its own dev provider (two app ports: the cluster's app and the
Sentinel's), started once; each module starts its Redis and its served app (tests.helpers.failover_run)."""

import pytest

from dev.services import free_port
from tests.helpers.real_services import start_own_idp, workdir  # noqa: F401 - a fixture


@pytest.fixture(scope="session")
def failover_idp(workdir):  # noqa: F811 - the fixture imported above
    server, provider = start_own_idp(workdir, [free_port(), free_port()])
    yield provider
    server.stop()

from __future__ import annotations

import pytest

from allotment.client import PlacementClient
from tests.cli.world import seed
from tests.harness.servers import start_allotment


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A real allotment server (noauth2) with the small cloud of world.py."""
    workdir = tmp_path_factory.mktemp("cli-live")
    database_url = f"sqlite:///{workdir}/allotment.sqlite"
    # Two workers: a browser may open a connection ahead and leave it idle,
    # holding one sync worker until the client timeout.
    # The migration of world.py may be preempted (`candidates --preempt`).
    server = start_allotment(database_url, workdir, workers=2, extra_conf=(
        "[allotment]\npreemptible_consumer_types = MIGRATION\n"))
    try:
        with PlacementClient.from_url(server.url, token="admin") as client:
            server.world = seed(client)
        yield server
    finally:
        server.stop()

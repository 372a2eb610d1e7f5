"""A multi-worker allotment-api on a private database server per backend,
for the tests that take that database away."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.harness import backends, servers
from tests.harness.dbserver import DatabaseServer

# Short bounds, so that every fault is answered within seconds.
CONNECT_TIMEOUT = 2
STATEMENT_TIMEOUT = 3
EXTRA_CONF = (f"[allotment]\ndatabase_connect_timeout = {CONNECT_TIMEOUT}\n"
              f"database_statement_timeout = {STATEMENT_TIMEOUT}\n")

# Only where the suite has servers of that kind (so their software is there).
SERVER_BACKENDS = [b for b in backends.BACKENDS if b != "sqlite"]


@pytest.fixture(scope="module", params=SERVER_BACKENDS)
def fault_setup(request, tmp_path_factory):
    """(database server, allotment-api server, database URL)."""
    workdir = tmp_path_factory.mktemp(f"fault-{request.param}")
    # Not under pytest's private temp dir: the server runs as its own user.
    db_dir = Path(tempfile.mkdtemp(prefix=f"allotment-fault-{request.param}."))
    db_server = DatabaseServer(request.param, db_dir)
    db_server.start()
    try:
        database_url = db_server.create_database()
        api = servers.start_allotment(database_url, workdir / "api", workers=2,
                                      extra_conf=EXTRA_CONF)
        try:
            yield db_server, api, database_url
        finally:
            api.stop()
    finally:
        db_server.stop()
        shutil.rmtree(db_dir, ignore_errors=True)

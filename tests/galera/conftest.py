"""A 3-node MariaDB Galera cluster with two allotment-api servers on it.

``scripts/test`` starts a private cluster (scripts/galera-test-cluster) and
names its directory in ``ALLOTMENT_TEST_GALERA_DIR``; without it these
tests are skipped.  Server A reads and writes through node 1, server B
through node 2, as two API hosts behind a load balancer that sends each
to a different node.  Node 3 only replicates, so a node may be stopped and
the other two still make a majority.
"""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa

from allotment.service import setup
from allotment.storage import db as db_mod
from allotment.storage import migration
from tests.harness import mysql, servers

GALERA_DIR = os.environ.get("ALLOTMENT_TEST_GALERA_DIR")
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "galera-test-cluster"
# Short bounds: a request meeting a node that is gone answers within seconds.
EXTRA_CONF = ("[allotment]\ndatabase_connect_timeout = 2\n"
              "database_statement_timeout = 10\n")


def pytest_collection_modifyitems(items):
    for item in items:
        # The lane's grouping is test_galera.py's own marker (see there).
        if "tests/galera/" in str(item.fspath) and not GALERA_DIR:
            item.add_marker(pytest.mark.skip(
                reason="no Galera cluster (ALLOTMENT_TEST_GALERA_DIR)"))


@dataclass
class Cluster:
    directory: Path

    @property
    def nodes(self) -> list[int]:
        lines = (self.directory / "ports").read_text().split("\n")
        return list(range(1, len([line for line in lines if line.strip()]) + 1))

    def server_url(self, node: int) -> str:
        sql_port = (self.directory / "ports").read_text().split("\n")[node - 1].split()[0]
        return f"mysql+pymysql://root@127.0.0.1:{sql_port}/mysql?charset=utf8mb4"

    def database_url(self, database: str, node: int) -> str:
        return (sa.engine.make_url(self.server_url(node)).set(database=database)
                .render_as_string(hide_password=False))

    def _script(self, *args: str, **env: str) -> str:
        return subprocess.run([str(SCRIPT), *args], check=True, capture_output=True,
                              text=True, timeout=300,
                              env={**os.environ, **env}).stdout.strip()

    def kill(self, node: int) -> None:
        """Stop ``node`` as a crash would."""
        self._script("stop-node", str(self.directory), str(node), MODE="kill")

    def start(self, node: int) -> None:
        """Start ``node`` again; returns once it is Synced."""
        self._script("start-node", str(self.directory), str(node))

    def state(self, node: int) -> str:
        """wsrep_local_state_comment of ``node`` ("Synced" when all is well)."""
        return self._script("status", str(self.directory), str(node))

    def log(self, node: int) -> str:
        return (self.directory / f"node{node}" / "server.log").read_text(errors="replace")


@dataclass
class Setup:
    cluster: Cluster
    database: str
    a: servers.Server  # through node 1
    b: servers.Server  # through node 2

    def url(self, node: int) -> str:
        return self.cluster.database_url(self.database, node)


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    return Cluster(Path(GALERA_DIR))


@pytest.fixture(scope="module")
def galera(cluster, tmp_path_factory) -> Setup:
    """A migrated database on the cluster, server A on node 1, B on node 2."""
    workdir = tmp_path_factory.mktemp("galera")
    url = mysql.create_database(cluster.server_url(1), "allotment_galera")
    name = sa.engine.make_url(url).database
    database = db_mod.Database(db_mod.create_engine(url))
    try:
        # Once, before the servers, as an operator would.
        migration.upgrade(database.engine)
        setup.sync_standards(database)
    finally:
        database.dispose()
    started = []
    try:
        for node, label in ((1, "a"), (2, "b")):
            started.append(servers.start_allotment(
                cluster.database_url(name, node), workdir / label, workers=2,
                extra_conf=EXTRA_CONF))
        yield Setup(cluster, name, *started)
    finally:
        for server in started:
            server.stop()
        _drop(url)


def _drop(url: str) -> None:
    """Drop the module's database from the throw-away cluster.  A node that
    was killed and rejoined by IST can still hold a stray file in the
    database's directory, and MariaDB then refuses the drop (error 1010,
    "Directory not empty"): asked again a few times, then left to the
    cluster's own removal at the end of the run."""
    for _ in range(5):
        try:
            mysql.drop_database(url)
            return
        except sa.exc.OperationalError as exc:
            if exc.orig is None or exc.orig.args[0] != 1010:
                raise
            time.sleep(1)

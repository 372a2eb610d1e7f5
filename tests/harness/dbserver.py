"""A private database server a test may crash, restart or cut off.

The shared servers of the suite (``ALLOTMENT_TEST_PG_URL`` ...) must not be
disturbed, so fault tests start their own with the same scripts, in a
scratch directory.  Commits are durable against the server process dying
(``ALLOTMENT_TEST_DB_DURABLE``), as on any production server.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import sqlalchemy as sa

from tests.harness import mysql, pg

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
_SCRIPT = {"postgresql": "pg-test-server", "mysql": "mysql-test-server"}
_CRASH = {"postgresql": "immediate", "mysql": "kill"}


class DatabaseServer:
    def __init__(self, backend: str, directory: Path) -> None:
        self.backend = backend
        self.directory = directory
        self.server_url = ""

    def _script(self, action: str, **env: str) -> str:
        return subprocess.run(
            [str(SCRIPTS / _SCRIPT[self.backend]), action, str(self.directory)],
            check=True, capture_output=True, text=True, timeout=120,
            env={**os.environ, "ALLOTMENT_TEST_DB_DURABLE": "1", **env}).stdout.strip()

    def start(self) -> str:
        self.server_url = self._script("start")
        return self.server_url

    def stop(self) -> None:
        self._script("stop")

    def crash(self) -> None:
        """Stop the server the way a crash would: no clean shutdown."""
        self._script("stop", MODE=_CRASH[self.backend])

    def create_database(self) -> str:
        module = pg if self.backend == "postgresql" else mysql
        return module.create_database(self.server_url, "allotment_fault")

    def cut_connections(self, database_url: str) -> int:
        """End every session on ``database_url``'s database from the server side."""
        url = sa.engine.make_url(database_url)
        admin = sa.create_engine(self.server_url, isolation_level="AUTOCOMMIT")
        try:
            with admin.connect() as conn:
                if self.backend == "postgresql":
                    return len(conn.execute(sa.text(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = :db AND pid <> pg_backend_pid()"),
                        {"db": url.database}).all())
                ids = conn.execute(sa.text(
                    "SELECT id FROM information_schema.processlist "
                    "WHERE db = :db AND id <> CONNECTION_ID()"),
                    {"db": url.database}).scalars().all()
                for thread in ids:
                    conn.execute(sa.text(f"KILL {int(thread)}"))
                return len(ids)
        finally:
            admin.dispose()

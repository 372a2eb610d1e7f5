"""Which database backends the suite runs on, and scratch databases on them.

SQLite always; PostgreSQL when ``ALLOTMENT_TEST_PG_URL`` names a server and
MySQL/MariaDB when ``ALLOTMENT_TEST_MYSQL_URL`` does (``scripts/test`` starts
both).
"""

from __future__ import annotations

import os
from pathlib import Path

from tests.harness import mysql, pg

PG_URL = os.environ.get("ALLOTMENT_TEST_PG_URL")
MYSQL_URL = os.environ.get("ALLOTMENT_TEST_MYSQL_URL")
SERVER_URLS = {name: url for name, url in (("postgresql", PG_URL), ("mysql", MYSQL_URL))
               if url}
BACKENDS = ["sqlite", *SERVER_URLS]


def create_database(backend: str, scratch: Path, prefix: str = "allotment_test") -> str:
    """A new, empty database on ``backend``; SQLite files go under ``scratch``."""
    if backend == "sqlite":
        return f"sqlite:///{scratch / 'allotment.sqlite'}"
    module = pg if backend == "postgresql" else mysql
    return module.create_database(SERVER_URLS[backend], prefix)


def drop_database(backend: str, database_url: str) -> None:
    if backend == "postgresql":
        pg.drop_database(database_url)
    elif backend == "mysql":
        mysql.drop_database(database_url)

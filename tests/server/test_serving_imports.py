"""What a serving process carries: allotment-api's main process and its
workers import only what serving uses; every process that serves would
otherwise keep it resident for its whole life.  Alembic (with Mako and
Pygments) is needed only when the schema has to change, which a start on a
database already at allotment's schema never does; psycopg and SQLAlchemy's
PostgreSQL dialect only on PostgreSQL, its MySQL dialect only on MySQL;
keystonemiddleware only with ``[api] auth_strategy = keystone``; osprofiler
only with a ``[profiler]`` section; requests (and urllib3) only by a policy
rule that names oslo.policy's ``http:`` or ``https:`` check, or by the
client speaking HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import sqlalchemy as sa

from allotment.storage import migration

_HEAVY = ("alembic", "mako", "pygments", "psycopg", "keystonemiddleware", "osprofiler",
          "sqlalchemy.dialects.postgresql", "sqlalchemy.dialects.mysql", "requests", "urllib3")

# allotment-api's own start-up, up to the point where gunicorn would fork:
# the main process's schema check and world, then what a worker does with
# them (create_app), then the modules the process holds.
_START = f"""
import json, sys
from allotment.cmd import api

def run(self):
    self.load()
    print(json.dumps(sorted(m for m in {_HEAVY!r} if m in sys.modules)))

api._Server.run = run
api.main(["--config-file", sys.argv[1], "--workers", "1"])
"""


def _config(tmp_path: Path) -> Path:
    config = tmp_path / "placement.conf"
    config.write_text(
        "[placement_database]\n"
        f"connection = sqlite:///{tmp_path / 'placement.sqlite'}\n"
        "[api]\nauth_strategy = noauth2\n")
    return config


def _started(config: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", _START, str(config)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_noauth2_server_on_a_current_sqlite_database_imports_none_of_them(tmp_path):
    config = _config(tmp_path)
    # The first start creates the schema, which takes Alembic.
    assert "alembic" in _started(config)
    # Every later one finds it current and serves without it.
    assert _started(config) == []


def test_the_head_known_without_alembic_is_the_migrations_head():
    assert migration.head_revision(sa.create_engine("sqlite://")) == migration.OWN_HEAD

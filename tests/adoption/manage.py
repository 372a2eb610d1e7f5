"""The two services' database commands, run as an operator runs them.

``allotment-manage`` and upstream's ``placement-manage`` are started as
processes with a ``placement.conf`` naming the database, never imported:
what is tested is what an operator types.  Upstream is run from its own venv
(:mod:`tests.harness.upstream`).
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.harness import upstream
from tests.harness.servers import upstream_url

# Upstream's Alembic revisions, oldest first; the last is 16.0.0's head.
UPSTREAM_REVISIONS = ("b4ed3a175331", "611cd6dffd7b", "b5c396305c25",
                      "422ece571366", "a082b8bb98d0")
UPSTREAM_HEAD = UPSTREAM_REVISIONS[-1]
TIMEOUT = 600

# Upstream migrates to a given revision through its own Alembic set-up; its
# command line only knows "head".
_UPSTREAM_UPGRADE_TO = """
import sys
from oslo_config import cfg
from placement import conf, db_api
from placement.db.sqlalchemy import migration
config = cfg.ConfigOpts()
conf.register_opts(config)
config(["--config-file", sys.argv[1]], project="placement", default_config_files=None)
db_api.configure(config)
migration.upgrade(sys.argv[2])
"""


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def write_conf(workdir: Path, database_url: str, *, for_upstream: bool = False) -> Path:
    """A ``placement.conf`` naming ``database_url`` in ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    url = upstream_url(database_url) if for_upstream else database_url
    path = workdir / ("placement-upstream.conf" if for_upstream else "placement.conf")
    path.write_text("[DEFAULT]\ndebug = false\n\n[api]\nauth_strategy = noauth2\n\n"
                    f"[placement_database]\nconnection = {url}\n")
    return path


def _run(argv: list[str], cwd: Path) -> Result:
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT,
                          env={**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(cwd)})
    return Result(proc.returncode, proc.stdout, proc.stderr)


def allotment_manage(workdir: Path, database_url: str, *args: str) -> Result:
    """``allotment-manage --config-file F ARGS...``."""
    conf = write_conf(workdir, database_url)
    script = Path(sys.executable).with_name("allotment-manage")
    return _run([str(script), "--config-file", str(conf), *args], workdir)


def placement_manage(workdir: Path, database_url: str, *args: str) -> Result:
    """Upstream's ``placement-manage --config-file F ARGS...``."""
    conf = write_conf(workdir, database_url, for_upstream=True)
    script = upstream.ensure_venv() / "bin" / "placement-manage"
    return _run([str(script), "--config-file", str(conf), *args], workdir)


def upstream_upgrade_to(workdir: Path, database_url: str, revision: str) -> Result:
    """Upstream's schema at ``revision`` (one of :data:`UPSTREAM_REVISIONS`)."""
    conf = write_conf(workdir, database_url, for_upstream=True)
    python = upstream.ensure_venv() / "bin" / "python"
    return _run([str(python), "-c", _UPSTREAM_UPGRADE_TO, str(conf), revision], workdir)


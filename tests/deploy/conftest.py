"""upstream's command surface run as an operator runs it: subprocesses,
one fresh database each, on every backend the environment gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from allotment.storage import db as db_mod
from tests.harness import backends
from tests.harness.backends import BACKENDS

BIN = Path(sys.executable).parent
UPSTREAM_HEAD = "a082b8bb98d0"


@pytest.fixture(params=BACKENDS)
def fresh_url(request, tmp_path) -> str:
    """An empty database on one backend, dropped afterwards."""
    scratch = tmp_path / "db"
    scratch.mkdir()
    url = backends.create_database(request.param, scratch, "allotment_deploy")
    yield url
    backends.drop_database(request.param, url)


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    """An empty SQLite database, for what does not depend on the backend
    (each command run costs a process start: the suite stays short)."""
    return f"sqlite:///{tmp_path / 'placement.sqlite'}"


def write_conf(directory: Path, url: str, extra: str = "") -> Path:
    path = directory / "placement.conf"
    path.write_text(f"[placement_database]\nconnection = {url}\n{extra}")
    return path


def run(*args: str, env: dict | None = None, cwd: Path | None = None,
        ) -> subprocess.CompletedProcess:
    """A command of .venv/bin, as an operator runs it."""
    return subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True,
                          timeout=180, env={**os.environ, **(env or {})}, cwd=cwd)


def engine(url: str) -> sa.Engine:
    return sa.create_engine(db_mod.normalise_url(url))


def tables_of(url: str) -> set[str]:
    eng = engine(url)
    try:
        return set(sa.inspect(eng).get_table_names())
    finally:
        eng.dispose()


def fake_upstream_distribution(directory: Path) -> dict:
    """An environment in which openstack-placement looks installed too: its
    metadata on PYTHONPATH, which is all importlib.metadata reads."""
    info = directory / "openstack_placement-16.0.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: openstack-placement\nVersion: 16.0.0\n")
    return {"PYTHONPATH": os.pathsep.join(
        p for p in (str(directory), os.environ.get("PYTHONPATH", "")) if p)}

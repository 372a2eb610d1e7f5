"""Upstream Placement 16.0.0 in a virtual environment of its own.

Upstream is a reference for tests and benchmarks only: it is installed from
PyPI into ``.upstream/venv`` (git-ignored; ``ALLOTMENT_UPSTREAM_VENV``
overrides the place) the first time something asks for it, and run as a
separate process.  Nothing of it is imported into allotment.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

VERSION = "16.0.0"
# What upstream needs beyond its own requirements to serve as we run it:
# a WSGI server and the PostgreSQL and MySQL drivers its oslo.db expects.
_EXTRAS = ("gunicorn", "psycopg2-binary", "PyMySQL")
_ROOT = Path(__file__).resolve().parents[2]


def venv_path() -> Path:
    return Path(os.environ.get("ALLOTMENT_UPSTREAM_VENV", _ROOT / ".upstream" / "venv"))


def _installed(venv: Path) -> bool:
    marker = venv / f".placement-{VERSION}"
    return (marker.exists() and (venv / "bin" / "gunicorn").exists()
            and any(venv.glob("lib/python*/site-packages/pymysql")))


def ensure_venv() -> Path:
    """The venv holding upstream Placement, created and filled if needed.

    Test workers run in parallel: the first to ask builds it while the
    others wait on a lock, instead of all upgrading the same pip at once.
    """
    venv = venv_path()
    if _installed(venv):
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _installed(venv):
            _build(venv)
    return venv


def _build(venv: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([*pip, f"openstack-placement=={VERSION}", *_EXTRAS], check=True)
    (venv / f".placement-{VERSION}").write_text(VERSION + "\n")

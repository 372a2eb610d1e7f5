"""kolla-ansible's own templates for Placement, rendered as its roles render
them.

The kolla-ansible release pinned below is fetched from PyPI once (``pip
download``, no dependencies, nothing installed) into a cache directory, and
its placement role's ``placement.conf.j2``, the ``service-uwsgi-config``
role's ``uwsgi.ini.j2`` and the ``haproxy-config`` role's template are read
straight out of the wheel.  They are rendered with Jinja2, the role's
defaults, and stand-ins for the few Ansible filters they use.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import jinja2
import yaml

VERSION = "22.2.0"
_ROLES = f"kolla_ansible-{VERSION}.data/data/share/kolla-ansible/ansible/roles/"


def _cache() -> Path:
    configured = os.environ.get("ALLOTMENT_KOLLA_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "allotment-kolla"


def wheel() -> Path:
    """The kolla-ansible wheel, downloaded once."""
    cache = _cache()
    cache.mkdir(parents=True, exist_ok=True)
    found = cache / f"kolla_ansible-{VERSION}-py3-none-any.whl"
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not found.exists():
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            f"kolla-ansible=={VERSION}", "-d", str(cache)], check=True)
    return found


def read(path: str) -> str:
    """A file of kolla-ansible's roles, e.g. ``placement/templates/placement.conf.j2``."""
    with zipfile.ZipFile(wheel()) as archive:
        return archive.read(_ROLES + path).decode("utf-8")


def _bool(value: Any) -> bool:
    # Ansible's ``bool`` filter.
    return str(value).strip().lower() in ("1", "true", "yes", "on", "y")


def environment(address: str) -> jinja2.Environment:
    env = jinja2.Environment(undefined=jinja2.Undefined, keep_trailing_newline=True)
    env.filters["bool"] = _bool
    # Every host of the lane is this machine.
    env.filters["kolla_address"] = lambda _network, _host=None: address
    env.filters["put_address_in_context"] = lambda value, _context: value
    return env


def render(env: jinja2.Environment, text: str, variables: dict) -> str:
    return env.from_string(text).render(**variables)


def resolve(env: jinja2.Environment, value: Any, variables: dict) -> Any:
    """A role default with its ``{{ ... }}`` rendered (recursively)."""
    if isinstance(value, str):
        rendered = render(env, value, variables)
        return {"True": True, "False": False}.get(rendered, rendered)
    if isinstance(value, dict):
        return {k: resolve(env, v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(env, v, variables) for v in value]
    return value


def placement_service(env: jinja2.Environment, variables: dict) -> dict:
    """The placement role's ``placement_services['placement-api']``."""
    defaults = yaml.safe_load(read("placement/defaults/main.yml"))
    service = defaults["placement_services"]["placement-api"]
    return {"group": service["group"], "wsgi": service["wsgi"],
            "haproxy": resolve(env, service["haproxy"], variables)}

"""How the CLI reaches Placement: a URL and token (noauth2 or a token you
already have), the database directly (no server needed), or keystone
through keystoneauth1 with the usual ``OS_*`` variables or clouds.yaml."""

from __future__ import annotations

import os
from collections.abc import Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import click
import yaml
from keystoneauth1 import loading, session

from allotment.client import PlacementClient
from allotment.server.in_process import PlacementDirect

CLOUDS_YAML = (Path("clouds.yaml"), Path.home() / ".config/openstack/clouds.yaml",
               Path("/etc/openstack/clouds.yaml"))
# OS_* variables that are not options of the auth plugin.
_NOT_AUTH = {"OS_AUTH_TYPE", "OS_CLOUD", "OS_REGION_NAME", "OS_INTERFACE",
             "OS_PLACEMENT_API_VERSION", "OS_IDENTITY_API_VERSION", "OS_CACERT",
             "OS_PLACEMENT_URL"}


def _cloud(name: str) -> dict[str, Any]:
    env = os.environ.get("OS_CLIENT_CONFIG_FILE")
    for path in ([Path(env)] if env else []) + list(CLOUDS_YAML):
        if path.is_file():
            clouds = (yaml.safe_load(path.read_text()) or {}).get("clouds", {})
            if name in clouds:
                return clouds[name]
    raise click.UsageError(f"cloud {name!r} is in no clouds.yaml")


def _auth_from_env(environ: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    auth_type = environ.get("OS_AUTH_TYPE", "password")
    options = {key[3:].lower(): value for key, value in environ.items()
               if key.startswith("OS_") and key not in _NOT_AUTH and value}
    return auth_type, options


def keystone_session(cloud: str | None, environ: Mapping[str, str]
                     ) -> tuple[session.Session, dict[str, Any]]:
    """A keystoneauth1 session and the endpoint filter for Placement."""
    if cloud:
        entry = _cloud(cloud)
        auth_type = entry.get("auth_type", "password")
        options = dict(entry.get("auth", {}))
        where = {"region_name": entry.get("region_name"),
                 "interface": entry.get("interface", "public")}
        verify: Any = entry.get("cacert", entry.get("verify", True))
    else:
        auth_type, options = _auth_from_env(environ)
        where = {"region_name": environ.get("OS_REGION_NAME"),
                 "interface": environ.get("OS_INTERFACE", "public")}
        verify = environ.get("OS_CACERT", True)
    loader = loading.get_plugin_loader(auth_type)
    known = {opt.dest for opt in loader.get_options()}
    plugin = loader.load_from_options(**{k: v for k, v in options.items() if k in known})
    return session.Session(auth=plugin, verify=verify), where


def make_client(*, url: str | None, token: str | None, cloud: str | None,
                database_url: str | None, microversion: str,
                headers: Mapping[str, str]) -> AbstractContextManager[PlacementClient]:
    """A context manager giving the client (the direct one owns a database
    connection pool that must be closed)."""
    if database_url:
        return PlacementDirect(database_url=database_url, microversion=microversion)
    if url:
        return PlacementClient.from_url(url, token=token, microversion=microversion,
                                        headers=dict(headers))
    if not cloud and not os.environ.get("OS_AUTH_URL"):
        raise click.UsageError(
            "say where Placement is: --url (with --token), --database-url, "
            "--os-cloud, or the OS_* variables of a keystone deployment")
    sess, where = keystone_session(cloud, os.environ)
    return PlacementClient.from_session(sess, microversion=microversion,
                                        headers=dict(headers),
                                        **{k: v for k, v in where.items() if v})

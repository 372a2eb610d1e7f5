"""Placement in-process: the full WSGI application, no socket, no server.

:class:`PlacementDirect` builds the application from a configuration (most
importantly ``[placement_database] connection``) and returns a client whose
requests go straight into it.  Requests still pass through the complete
stack — microversions, JSON schemas, policy — so code written against a
remote service behaves the same here.  Offline maintenance tools (moving
inventory and allocations while the API is down) are the intended use.

It lives on the server's side: it builds the server and hands the client
nothing but a WSGI callable, through :class:`~allotment.client.DirectTransport`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from allotment.client import DirectTransport, PlacementClient

if TYPE_CHECKING:
    from oslo_config import cfg

# The in-process caller already holds the database credentials, so it is
# trusted with everything: admin, and the service role that reshaping needs.
ADMIN_TOKEN = "admin"
TRUSTED_ROLES = "admin,service"


class PlacementDirect:
    """Context manager giving a :class:`~allotment.client.PlacementClient`
    that talks to an in-process application.

    Give either a ready ``conf`` (a ``ConfigOpts`` with allotment's options
    registered, e.g. from :func:`allotment.conf.load`) or a ``database_url``
    and/or ``overrides`` (group -> {option: value}) to build one without
    reading any configuration file::

        with PlacementDirect(database_url="sqlite:///placement.sqlite") as client:
            client.providers.list()

    Authentication is forced to ``noauth2`` on the configuration used, as the
    database credentials already grant full access; requests carry the
    ``admin`` and ``service`` roles (``roles=`` to change that).
    """

    def __init__(
        self,
        conf: cfg.ConfigOpts | None = None,
        *,
        database_url: str | None = None,
        overrides: Mapping[str, Mapping[str, object]] | None = None,
        microversion: str | None = None,
        token: str = ADMIN_TOKEN,
        roles: str = TRUSTED_ROLES,
    ) -> None:
        if conf is not None and (database_url or overrides):
            raise ValueError("give either conf, or database_url/overrides")
        self._conf = conf
        self._database_url = database_url
        self._overrides = overrides
        self._microversion = microversion
        self._token = token
        self._roles = roles
        self._db = None
        self.client = None

    def _build_conf(self) -> cfg.ConfigOpts:
        from allotment import conf as conf_mod

        if self._conf is not None:
            return self._conf
        overrides: dict[str, dict[str, object]] = {
            group: dict(values) for group, values in (self._overrides or {}).items()}
        if self._database_url:
            overrides.setdefault("placement_database", {})["connection"] = self._database_url
        return conf_mod.load(config_files=[], overrides=overrides)

    def __enter__(self) -> PlacementClient:
        # The CLI imports this module on every run; the server (the
        # framework, the database drivers) is loaded only when used.
        from allotment.server.app import create_app
        from allotment.storage.db import Database

        conf = self._build_conf()
        conf.set_override("auth_strategy", "noauth2", group="api")
        self._db = Database.from_conf(conf)
        try:
            app = create_app(conf, db=self._db)
        except BaseException:
            self._db.dispose()
            self._db = None
            raise
        kwargs = {} if self._microversion is None else {"microversion": self._microversion}
        self.client = PlacementClient(DirectTransport(app, token=self._token),
                                      headers={"X-Roles": self._roles}, **kwargs)
        return self.client

    def __exit__(self, *exc_info) -> None:
        if self._db is not None:
            self._db.dispose()
            self._db = None
        self.client = None

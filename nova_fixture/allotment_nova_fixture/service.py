"""allotment's WSGI application, served in-process to a test through
wsgi-intercept, configured as the Placement fixture nova's functional tests
expect: ``noauth2`` (the token ``admin`` is an administrator), the legacy
policy defaults, and a database of the test's own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid

import fixtures
from oslo_config import cfg
from oslo_config import fixture as config_fixture
from oslo_policy import opts as policy_opts
from wsgi_intercept import interceptor

from allotment import conf as allotment_conf
from allotment.server.app import create_app
from allotment.storage import db as db_mod
from allotment_nova_fixture import database as database_fixture


class PlacementFixture(fixtures.Fixture):
    """Placement at ``self.endpoint`` (``http://<uuid>/placement``), in-process.

    :param token: the auth token callers are meant to send (``self.token``).
    :param conf_fixture: an oslo.config ``Config`` fixture to configure the
        service from; a fresh ``ConfigOpts`` otherwise.
    :param db: whether to give the test a fresh database (the
        :class:`~allotment_nova_fixture.database.Database` fixture).  Without
        it, ``[placement_database] connection`` must name one, usually set up
        by a ``Database`` fixture of the test's own.
    :param use_intercept: whether to serve the application; without it only
        the configuration (and the database) is set up.
    :param register_opts: whether to register Placement's options on the
        configuration first.

    Subclasses adjust the configuration in :meth:`_configure_placement`,
    called once the options are registered and before the database is made.
    """

    def __init__(self, token: str = "admin",
                 conf_fixture: config_fixture.Config | None = None,
                 db: bool = True, use_intercept: bool = True,
                 register_opts: bool = True) -> None:
        super().__init__()
        self.token = token
        self.conf_fixture = conf_fixture
        self.db = db
        self.use_intercept = use_intercept
        self.register_opts = register_opts
        self.endpoint: str | None = None
        self.app = None

    def _configure_placement(self, conf_fixture: config_fixture.Config) -> None:
        """Hook for subclasses: change options before the database is made."""

    def setUp(self) -> None:
        super().setUp()
        if not self.conf_fixture:
            self.conf_fixture = self.useFixture(config_fixture.Config(cfg.ConfigOpts()))
        conf = self.conf_fixture.conf
        if self.register_opts:
            allotment_conf.register_opts(conf)
        self._configure_placement(self.conf_fixture)
        if self.db:
            self.useFixture(database_fixture.Database(self.conf_fixture, set_config=True))

        # The caller's process (nova) may default to the new policy
        # defaults; Placement is run with the legacy ones, as a deployment
        # upgraded from older releases would.
        policy_opts.set_defaults(conf, enforce_new_defaults=False)
        self.conf_fixture.config(group="api", auth_strategy="noauth2")
        # Only the default rules: a policy file that cannot exist, so that
        # none found on the machine (oslo.config searches /etc) applies.
        policy_dir = tempfile.mkdtemp(prefix="allotment-fixture-policy-")
        self.addCleanup(shutil.rmtree, policy_dir, True)
        self.conf_fixture.config(group="oslo_policy",
                                 policy_file=os.path.join(policy_dir, "policy.yaml"))
        conf([], default_config_files=[])

        if self.use_intercept:
            self.app = self._application(conf)
            self.addCleanup(setattr, self, "app", None)
            self.endpoint = f"http://{uuid.uuid4()}/placement"
            intercept = interceptor.RequestsInterceptor(lambda: self.app, url=self.endpoint)
            intercept.install_intercept()
            self.addCleanup(intercept.uninstall_intercept)

    def _application(self, conf: cfg.ConfigOpts):
        """The application over the test's database: the very Database the
        test's Database fixture opened when there is one, so that every
        fixture of the test shares its connections (each application keeps
        its own world, which goes with it)."""
        database = database_fixture.opened(conf.placement_database.connection)
        if database is None:
            database = db_mod.Database.from_conf(conf)
            self.addCleanup(database.dispose)
        return create_app(conf, db=database)

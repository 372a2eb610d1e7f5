"""allotment-api: serve the API with gunicorn worker processes."""

from __future__ import annotations

import argparse
import gc
import logging
import os
import shutil
import sys
import tempfile

from gunicorn.app.base import BaseApplication

from allotment import distributions, telemetry
from allotment.auth.policy import Policy
from allotment.cmd import common
from allotment.server import malloc
from allotment.server.worker import DeadlineSyncWorker
from allotment.service import setup
from allotment.storage import db as db_mod

DEFAULT_BIND = "127.0.0.1:8778"
LOG = logging.getLogger(__name__)


def _child_exit(_server, worker) -> None:
    # A worker that exited leaves its counts behind (they still add up);
    # its live gauges go.
    telemetry.mark_process_dead(worker.pid)


def _pre_fork(server, _worker) -> None:
    """In the main process, just before a worker is forked: bring the
    shared world up to date, so the worker reads only what is committed
    after this, and close this process's connections, which the worker
    must not share."""
    world = server.app.world
    if world is None:
        return
    try:
        world.catch_up()
    except Exception:
        LOG.warning("Could not bring the shared world up to date; the new "
                    "worker reads the whole world itself", exc_info=True)
        world.world = None
        return
    finally:
        world.db.dispose()
    # What the worker shares with this process stays shared the longer when
    # the collector never writes to it (the world lives as long as either);
    # what loading the world left behind is collected and given back first,
    # so that no worker maps it.
    gc.collect()
    malloc.give_back()
    gc.freeze()


def metrics_dir(workers: int, configured: str | None = None) -> str | None:
    """Where several workers keep the counts /metrics sums: the directory
    given (``PROMETHEUS_MULTIPROC_DIR``), or a fresh one; None for one
    worker, whose counts live in its own memory.

    The directory is emptied first: counts of an earlier run would add up
    with this one's.
    """
    if configured:
        path = configured
        os.makedirs(path, exist_ok=True)
        for name in os.listdir(path):
            if name.endswith(".db"):
                os.unlink(os.path.join(path, name))
        return path
    if workers < 2:
        return None
    return tempfile.mkdtemp(prefix="allotment-metrics-")


class _Server(BaseApplication):
    def __init__(self, conf, bind: str, workers: int,
                 control_socket: str | None = None, world=None, policy=None) -> None:
        self._conf = conf
        # [allotment] shared_world: the world every worker starts from.
        self.world = world
        # The policy rules every worker starts from (see main).
        self.policy = policy
        binds = [bind]
        if conf.allotment.metrics_bind:
            binds.append(conf.allotment.metrics_bind)
        self._options = {
            "bind": binds,
            "child_exit": _child_exit,
            "pre_fork": _pre_fork,
            "workers": workers,
            # Each worker builds its own app (own connection pool) after
            # fork, from the shared world when there is one.
            "preload_app": False,
            "accesslog": "-",
            "logger_class": "allotment.server.access_log.AccessLogger",
            "timeout": 120,
            "worker_class": "allotment.server.worker.DeadlineSyncWorker",
            # gunicorn's largest request line (its default is 4094): the
            # application's own bound, [allotment] max_query_string_length,
            # answers longer query strings with a 414 of Placement's shape.
            "limit_request_line": 8190,
            # gunicorn would let a local client set SCRIPT_NAME and PATH_INFO
            # through headers (and answer 500 when they disagree with the
            # path); proxies are handled by [oslo_middleware] as in Placement.
            "forwarder_headers": "",
        }
        # gunicorn 25.1 and later open a control socket at one path per user
        # ($XDG_RUNTIME_DIR or ~/.gunicorn/gunicorn.ctl): a second server of
        # the same user would take the first one's.  None unless asked for,
        # and then where asked.
        self._control_socket = control_socket
        DeadlineSyncWorker.client_timeout = conf.allotment.client_timeout
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)
        if "control_socket_disable" in self.cfg.settings:
            if self._control_socket:
                self.cfg.set("control_socket", self._control_socket)
            else:
                self.cfg.set("control_socket_disable", True)

    def load(self):
        from allotment.server.app import create_app

        world, self.world = self.world, None  # the worker's own from here on
        return create_app(self._conf, world=world, policy=self.policy)


def main(argv: list[str] | None = None) -> int:
    distributions.refuse_if_shadowed()
    parser = argparse.ArgumentParser(prog="allotment-api")
    common.add_config_args(parser)
    parser.add_argument("--bind", default=DEFAULT_BIND, metavar="HOST:PORT",
                        help=f"address to listen on (default {DEFAULT_BIND})")
    parser.add_argument("--workers", type=int, default=1, metavar="N",
                        help="worker processes (default 1)")
    parser.add_argument("--auth-strategy", choices=("keystone", "noauth2"),
                        help="override [api] auth_strategy (noauth2 is for "
                        "development: the token 'admin' is an administrator)")
    parser.add_argument("--control-socket", metavar="PATH",
                        help="open gunicorn's control socket (for gunicornc) at PATH; "
                        "by default there is none")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    conf = common.load_conf(args)
    # Before anything big is made: the workers inherit it.
    malloc.keep_big_buffers()
    if args.auth_strategy:
        conf.set_override("auth_strategy", args.auth_strategy, group="api")

    # Migrate and sync once, before any worker starts, so workers never race
    # each other over the schema.
    database = db_mod.Database.from_conf(conf)
    setup.prepare_database(database, conf)
    database.dispose()

    # Set before any worker makes a metric (workers make theirs on first
    # use, after the fork).
    configured = os.environ.get(telemetry.MULTIPROC_ENV)
    directory = metrics_dir(args.workers, configured)
    if directory:
        os.environ[telemetry.MULTIPROC_ENV] = directory
    # Read after the metrics' directory is set: the counts made while it is
    # read are this process's own, kept apart from its workers'.
    world = setup.load_world(database) if conf.allotment.shared_world else None
    if world is not None:
        # Every worker maps this process's pages: the world's objects made
        # again next to each other, without the holes reading it left.
        world.compact()
        database.dispose()
        # Imported once here rather than in every worker: a worker started
        # in place of one that exited serves the sooner.
        import allotment.server.app  # noqa: F401
    # The policy rules read once here, before any fork, and handed to every
    # worker: a worker parsing them itself would make objects of its own and
    # copy the shared pages of every object the parse reads (its reference
    # counts are written).
    policy = Policy(conf)
    try:
        _Server(conf, args.bind, args.workers, args.control_socket, world, policy).run()
    finally:
        if directory and not configured:
            shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

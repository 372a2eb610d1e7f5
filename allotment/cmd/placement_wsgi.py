"""Upstream's WSGI entry points, served by allotment.

``placement.wsgi.api:application`` (uWSGI's ``module =``, gunicorn) and the
``placement-api`` script (mod_wsgi's ``WSGIScriptAlias``, or run directly as
a development server) build the application here, reading
``placement.conf`` as upstream does: ``$OS_PLACEMENT_CONFIG_DIR/placement.conf``,
else oslo.config's usual places; ``[profiler]`` is honoured when osprofiler
is installed (server/profiling.py).
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import wsgiref.simple_server

from allotment import conf as conf_mod
from allotment import distributions

DEFAULT_PORT = 8000


def init_application():
    """The WSGI application for this process's ``placement.conf``."""
    distributions.refuse_if_shadowed()
    from allotment.server.app import create_app

    return create_app(conf_mod.load())


def serve(argv: list[str] | None = None) -> int:
    """``placement-api [--port PORT] [--host IP] [-- ...]``: serve on
    wsgiref's single-threaded server, for trying things out only."""
    parser = argparse.ArgumentParser(
        prog="placement-api",
        description="Development server for the Placement API (allotment). Use a real "
        "WSGI server (uWSGI, mod_wsgi, gunicorn) in production.",
        usage="%(prog)s [-h] [--port PORT] [--host IP] -- [passed options]")
    parser.add_argument("--port", "-p", type=int, default=DEFAULT_PORT,
                        help="TCP port to listen on")
    parser.add_argument("--host", "-b", default="",
                        help="IP to bind the server to")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="-- [passed options]",
                        help="'--' separates the server's arguments from the "
                        "application's (none are read: configure with placement.conf)")
    args = parser.parse_args(argv)
    if args.args and args.args[0] != "--":
        parser.error("unrecognized arguments: " + " ".join(args.args))
    server = wsgiref.simple_server.make_server(args.host, args.port, init_application())
    print("*" * 80)
    print("STARTING test server placement.wsgi.init_application")
    print(f"Available at http://{server.server_name}:{server.server_port}/")
    print("DANGER! For testing only, do not use in production")
    print("*" * 80)
    sys.stdout.flush()
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0

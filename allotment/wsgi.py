"""WSGI entry point for operators running their own server.

``gunicorn allotment.wsgi:application`` (or uwsgi / mod_wsgi) reads the
configuration the way upstream's ``placement-api`` does:
``$OS_PLACEMENT_CONFIG_DIR/placement.conf`` or the usual oslo.config places.
"""

from __future__ import annotations

from allotment import conf as conf_mod
from allotment import distributions


def init_application():
    distributions.refuse_if_shadowed()
    from allotment.server.app import create_app

    return create_app(conf_mod.load())


application = init_application()

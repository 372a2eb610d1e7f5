"""osprofiler's ``[profiler]`` section, honoured when osprofiler is installed.

As upstream Placement does: with ``[profiler] enabled = true`` the process
sends its traces to ``connection_string``, and a request signed with one of
``hmac_keys`` (``openstack --os-profile KEY ...``) is traced.  osprofiler
is optional; without it the section is ignored.  It is imported only
when the section is there (``allotment.conf.load`` registers its options
then): without it, profiling is off, and osprofiler's drivers would stay
resident in every serving process.
"""

from __future__ import annotations

import socket
from typing import Any

from oslo_config import cfg


def enabled(conf: cfg.ConfigOpts) -> bool:
    # The group is registered only when osprofiler is installed.
    return "profiler" in conf and bool(conf.profiler.enabled)


def wrap(app: Any, conf: cfg.ConfigOpts) -> Any:
    """``app`` traced as ``[profiler]`` asks, or ``app`` itself."""
    if not enabled(conf):
        return app
    from osprofiler import initializer as profiler_initializer
    from osprofiler import web as profiler_web

    profiler_initializer.init_from_conf(
        conf=conf, context={}, project="placement", service="placement",
        host=socket.gethostname())
    return profiler_web.WsgiMiddleware(app, hmac_keys=conf.profiler.hmac_keys, enabled=True)

"""osprofiler's ``[profiler]`` section, honoured when osprofiler is installed.

As upstream Placement does: with ``[profiler] enabled = true`` the process
sends its traces to ``connection_string``, and a request signed with one of
``hmac_keys`` (``openstack --os-profile KEY ...``) is traced.  osprofiler
is optional; without it the section is ignored.
"""

from __future__ import annotations

import socket
from typing import Any

from oslo_config import cfg

try:
    from osprofiler import initializer as profiler_initializer
    from osprofiler import web as profiler_web
except ImportError:  # pragma: no cover - depends on the environment
    profiler_initializer = profiler_web = None


def enabled(conf: cfg.ConfigOpts) -> bool:
    return profiler_web is not None and "profiler" in conf and bool(conf.profiler.enabled)


def wrap(app: Any, conf: cfg.ConfigOpts) -> Any:
    """``app`` traced as ``[profiler]`` asks, or ``app`` itself."""
    if not enabled(conf):
        return app
    profiler_initializer.init_from_conf(
        conf=conf, context={}, project="placement", service="placement",
        host=socket.gethostname())
    return profiler_web.WsgiMiddleware(app, hmac_keys=conf.profiler.hmac_keys, enabled=True)

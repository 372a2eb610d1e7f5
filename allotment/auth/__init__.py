"""Authentication (noauth2 or keystone), request context and policy.

``wrap`` is re-exported here; it imports keystonemiddleware lazily so that
tools needing only the policy rules (``oslopolicy-*``) stay light.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oslo_config import cfg

    from allotment.auth.authenticate import WSGIApp
    from allotment.context import PolicyChecker


def wrap(app: WSGIApp, conf: cfg.ConfigOpts, policy: PolicyChecker) -> WSGIApp:
    """See :func:`allotment.auth.authenticate.wrap`."""
    from allotment.auth import authenticate as middleware

    return middleware.wrap(app, conf, policy)

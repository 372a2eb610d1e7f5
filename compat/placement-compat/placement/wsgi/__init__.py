"""``placement.wsgi.init_application``, as older deployments name it."""

from allotment.cmd.placement_wsgi import init_application

__all__ = ["init_application"]

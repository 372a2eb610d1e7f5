"""Placement's configuration options: allotment's, which carry upstream's
groups and names."""

from allotment.conf import list_opts, register_opts

__all__ = ["list_opts", "register_opts"]

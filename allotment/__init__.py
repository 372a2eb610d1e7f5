"""allotment: a drop-in replacement for the OpenStack Placement service."""

__version__ = "0.1.0"

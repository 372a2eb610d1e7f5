"""``placement-status``: allotment.cmd.placement_status."""

from allotment.cmd.placement_status import main

__all__ = ["main"]

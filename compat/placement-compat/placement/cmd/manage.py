"""``placement-manage``: allotment.cmd.placement_manage."""

from allotment.cmd.placement_manage import main

__all__ = ["main"]

"""What a running service holds: its configuration, its database and its world."""

from __future__ import annotations

from dataclasses import dataclass

from oslo_config import cfg

from allotment.storage.db import Database
from allotment.world.sync import Replica


@dataclass
class Runtime:
    conf: cfg.ConfigOpts
    db: Database
    # This process's copy of the provider world, kept current from db's feed.
    replica: Replica | None = None

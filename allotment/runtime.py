"""What a running service holds: its configuration and its database."""

from __future__ import annotations

from dataclasses import dataclass

from oslo_config import cfg

from allotment.storage.db import Database


@dataclass
class Runtime:
    conf: cfg.ConfigOpts
    db: Database

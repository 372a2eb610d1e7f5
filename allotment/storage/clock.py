"""The one clock every stored timestamp is read from.

Naive UTC in whole seconds: the form upstream Placement stores in every
``created_at``/``updated_at`` (MySQL's DATETIME columns keep no fraction,
and would round one up, into the future), and the form the triggers that
report other programs' writes give the change feed's rows.
"""

from __future__ import annotations

import datetime


def utcnow() -> datetime.datetime:
    """Now, as a naive UTC timestamp in whole seconds."""
    return datetime.datetime.now(datetime.UTC).replace(tzinfo=None, microsecond=0)

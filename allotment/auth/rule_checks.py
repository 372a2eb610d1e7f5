"""oslo.policy's rule-check plugins, each loaded when a rule first names it.

oslo.policy loads every plugin of ``oslo.policy.rule_checks`` (its own
``http:`` and ``https:`` checks, and any a deployment installs) the first
time it parses a rule, whether or not a rule uses one; its own import
requests and urllib3 with them: about 4.5 MB resident in every serving
process (allotment-api's main process and each worker), for rules that
Placement's defaults never write.  :func:`load_on_first_use` hands
oslo.policy, in the place where it keeps what it loaded, each plugin found
(its entry point, read without importing anything) as a stand-in that
loads the plugin when a rule first names it.

oslo.policy keeps its plugins in ``oslo_policy._checks.extension_checks``,
None until it loads them; where that is not so (another release), nothing
is done and oslo.policy loads them as before.
"""

from __future__ import annotations

import importlib.metadata
import threading
from typing import Any

from oslo_policy import _checks

GROUP = "oslo.policy.rule_checks"
_LOCK = threading.Lock()


class _OnFirstUse:
    """A plugin's check class, imported the first time a rule names it."""

    def __init__(self, entry_point: importlib.metadata.EntryPoint) -> None:
        self.entry_point = entry_point
        self._check: Any = None

    def __call__(self, kind: str, match: str) -> Any:
        if self._check is None:
            self._check = self.entry_point.load()
        return self._check(kind, match)


def load_on_first_use() -> bool:
    """Put stand-ins in place of oslo.policy's plugins if it has not loaded
    them yet; whether it did."""
    with _LOCK:
        if getattr(_checks, "extension_checks", False) is not None:
            return False
        found = {ep.name: _OnFirstUse(ep)
                 for ep in importlib.metadata.entry_points(group=GROUP)}
        _checks.extension_checks = found
        return True

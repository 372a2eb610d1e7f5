"""Which Placement distributions share this Python environment.

The ``placement`` import name (and the ``placement-manage``,
``placement-status`` and ``placement-api`` commands) belong to upstream's
distribution, ``openstack-placement``.  allotment's compatibility
distribution, ``allotment-placement``, installs the same names, so with both
installed one silently overwrote the other's files and nobody can tell which
service a command starts.  Every process of ours therefore refuses to start
in such an environment, naming both; ``placement-status upgrade check``
reports it instead of refusing, so that the operator learns what to remove.
"""

from __future__ import annotations

import sys
from importlib import metadata

UPSTREAM = "openstack-placement"
COMPAT = "allotment-placement"


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def conflict() -> str | None:
    """Why this environment cannot run a Placement service, or None."""
    upstream, compat = _version(UPSTREAM), _version(COMPAT)
    if upstream is None or compat is None:
        return None
    return (f"Both {UPSTREAM} {upstream} (upstream Placement) and {COMPAT} {compat} "
            "(allotment) are installed in this Python environment; they install the "
            "same 'placement' package and commands, so which one runs is an accident. "
            f"Uninstall one of them ('pip uninstall {UPSTREAM}' to run allotment).")


def refuse_if_shadowed() -> None:
    """Stop the process (exit status 1, the reason on standard error) if
    both distributions are installed."""
    reason = conflict()
    if reason is not None:
        print(f"ERROR: {reason}", file=sys.stderr)
        raise SystemExit(1)

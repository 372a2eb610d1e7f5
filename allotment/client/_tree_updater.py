"""The reshape flow: drivers describe their tree; a runner syncs it.

A driver implements :class:`TreeDriver`: ``update_provider_tree(tree,
allocations=None)`` edits ``tree`` into the shape it wants.  When that shape
needs live allocations moved and ``allocations`` is None, the driver raises
:class:`~allotment.client.exceptions.ReshapeNeeded`; called again with
``allocations`` (every affected consumer's complete allocations, as
returned by ``get_allocations_for_provider_tree``) it must also edit those,
in place, to their final state.

:class:`TreeUpdater` runs that protocol.  Reshapes happen only at start-up
(``startup=True``): collecting allocations is expensive and moving them
while the host is busy is how races are born.  A ``ReshapeNeeded`` in a
periodic run is raised to the caller, which should treat it as fatal.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from allotment.client.exceptions import ReshapeFailed, ReshapeNeeded
from allotment.client.provider_tree import ProviderTree

if TYPE_CHECKING:
    from allotment.client._client import PlacementClient

LOG = logging.getLogger(__name__)

__all__ = ["ReshapeFailed", "ReshapeNeeded", "TreeDriver", "TreeUpdater"]


class TreeDriver(Protocol):
    def update_provider_tree(self, tree: ProviderTree,
                             allocations: dict[str, dict] | None = None) -> None:
        """Edit ``tree`` (and, when given, ``allocations``) in place."""


class TreeUpdater:
    """Brings one host's provider tree in line with its driver.

    ``root_name`` / ``root_uuid`` identify the host's root provider, which
    is created if missing.
    """

    def __init__(self, client: PlacementClient, driver: TreeDriver, root_name: str,
                 root_uuid: str | None = None) -> None:
        self.client = client
        self.driver = driver
        self.root_name = root_name
        self.root_uuid = root_uuid

    def run(self, *, startup: bool = False) -> bool:
        """One update; True if a reshape was performed.

        Raises ReshapeNeeded when a reshape is wanted outside start-up, and
        ReshapeFailed when the reshape itself is refused (nothing of it was
        applied; a later start-up tries again from fresh data).
        """
        tree = self.client.get_provider_tree_and_ensure_root(self.root_name, self.root_uuid)
        # The driver may have half-edited the tree before asking for a
        # reshape; the second attempt starts from what the service had.
        pristine = tree.copy()
        allocations = None
        try:
            self.driver.update_provider_tree(tree)
        except ReshapeNeeded:
            if not startup:
                raise
            LOG.info("Moving inventory and allocations of %s to a new tree shape",
                     self.root_name)
            root = tree.data(self.root_uuid or self.root_name).uuid
            # Read after the tree: the generations held since the tree was read
            # protect everything read here against claims racing the reshape.
            allocations = self.client.get_allocations_for_provider_tree(root)
            tree = pristine
            self.driver.update_provider_tree(tree, allocations=allocations)
        self.client.update_from_provider_tree(tree, allocations=allocations)
        return allocations is not None

"""Allocation-candidate search: a pure function of a snapshot and a request.

No SQL and no HTTP here: storage builds a :class:`Snapshot`, the API parses
the query into an :class:`AllocationCandidatesRequest`, and
:func:`find_candidates` yields :class:`Candidate` objects lazily.
"""

from allotment.engine.request import (
    AllocationCandidatesRequest,
    SearchGroup,
)
from allotment.engine.search import (
    Candidate,
    find_candidates,
    provider_summary_uuids,
)
from allotment.engine.snapshot import (
    SHARES_TRAIT,
    Inventory,
    ProviderRecord,
    Snapshot,
)

__all__ = [
    "SHARES_TRAIT",
    "AllocationCandidatesRequest",
    "Candidate",
    "Inventory",
    "ProviderRecord",
    "SearchGroup",
    "Snapshot",
    "find_candidates",
    "provider_summary_uuids",
]

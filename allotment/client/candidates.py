"""``GET /allocation_candidates``: a typed request and its answer.

:class:`CandidatesRequest` holds request groups and request-wide options,
checks what it can before anything is sent, renders the query string, and
knows the lowest microversion able to express it.  Suffixes are given as
they appear after the parameter names: ``"1"`` for ``resources1``,
``"_GPU"`` for ``resources_GPU`` (the form ``same_subtree`` refers to).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

from allotment.client import versions as mv
from allotment.client._base import Noun, csv

GROUP_POLICIES = ("none", "isolate")
# The opt-in of allotment's extensions (docs/extensions.md).
EXTENSIONS_HEADER = "Allotment-Extensions"
EXTENSIONS_LEVEL = "1"
EXTENSIONS_MIN_VERSION = "1.36"
_SUFFIX_ANY = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_SUFFIX_NUMERIC = re.compile(r"^[1-9][0-9]*$")


def _sorted(values: Iterable[str]) -> list[str]:
    return sorted(set(values))


@dataclass
class RequestGroup:
    """One request group.

    ``required`` items are trait names, ``"!NAME"`` to forbid, or (1.39) a
    set of names of which any one will do.  ``member_of`` items are an
    aggregate uuid or a set of uuids of which the provider must be in one;
    every item must hold.  ``forbidden_aggregates`` (1.32) excludes
    providers in any of them.
    """

    resources: Mapping[str, int] = field(default_factory=dict)
    required: Iterable[str | Iterable[str]] = ()
    forbidden: Iterable[str] = ()
    member_of: Iterable[str | Iterable[str]] = ()
    forbidden_aggregates: Iterable[str] = ()
    in_tree: str | None = None

    def __post_init__(self) -> None:
        self.resources = dict(self.resources)
        for rc, amount in self.resources.items():
            if not isinstance(amount, int) or isinstance(amount, bool) or amount < 1:
                raise ValueError(f"amount of {rc} must be a positive integer, not {amount!r}")
        self.required = [r if isinstance(r, str) else frozenset(r) for r in self.required]
        self.forbidden = _sorted(self.forbidden)
        self.member_of = [m if isinstance(m, str) else frozenset(m) for m in self.member_of]
        self.forbidden_aggregates = _sorted(self.forbidden_aggregates)
        for item in [*self.required, *self.member_of]:
            if not isinstance(item, str) and not item:
                raise ValueError("an any-of set must not be empty")

    # -- rendering ---------------------------------------------------------

    def _plain_traits(self) -> list[str]:
        plain = [r for r in self.required if isinstance(r, str)]
        plain += [f"!{t}" for t in self.forbidden]
        return plain

    def _any_of_traits(self) -> list[frozenset[str]]:
        return [r for r in self.required if not isinstance(r, str)]

    def params(self, suffix: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        if self.resources:
            out.append((f"resources{suffix}",
                        csv(f"{rc}:{n}" for rc, n in sorted(self.resources.items()))))
        plain = self._plain_traits()
        if plain:
            out.append((f"required{suffix}", csv(plain)))
        for any_of in self._any_of_traits():
            out.append((f"required{suffix}", "in:" + csv(sorted(any_of))))
        for item in self.member_of:
            value = item if isinstance(item, str) else (
                next(iter(item)) if len(item) == 1 else "in:" + csv(sorted(item)))
            out.append((f"member_of{suffix}", value))
        if self.forbidden_aggregates:
            out.append((f"member_of{suffix}", "!in:" + csv(self.forbidden_aggregates)))
        if self.in_tree:
            out.append((f"in_tree{suffix}", self.in_tree))
        return out

    def min_version(self, suffix: str) -> str:
        needed = ["1.10"]
        plain = [r for r in self.required if isinstance(r, str)]
        if plain:
            needed.append("1.17")
        if self.forbidden or any(r.startswith("!") for r in plain):
            needed.append(mv.FEATURES["forbidden_traits"])
        if any(r.startswith("in:") for r in plain) or self._any_of_traits():
            needed.append(mv.FEATURES["any_traits"])
        if self.member_of:
            needed.append(mv.FEATURES["candidates_member_of"])
        if len(self.member_of) + (1 if self.forbidden_aggregates else 0) > 1:
            needed.append(mv.FEATURES["multiple_member_of"])
        if self.forbidden_aggregates or any(
                isinstance(m, str) and m.startswith("!") for m in self.member_of):
            needed.append(mv.FEATURES["forbidden_aggregates"])
        if self.in_tree:
            needed.append(mv.FEATURES["candidates_in_tree"])
        if suffix:
            needed.append(mv.FEATURES["granular"])
            if not _SUFFIX_NUMERIC.match(suffix):
                needed.append(mv.FEATURES["arbitrary_suffixes"])
            if not self.resources:
                # Resourceless groups arrived with same_subtree.
                needed.append(mv.FEATURES["same_subtree"])
        return max(needed, key=mv.parse)


@dataclass
class CandidatesRequest:
    """A whole ``GET /allocation_candidates`` request.

    ``unsuffixed`` is the group of ``resources=``/``required=``/...;
    ``groups`` maps suffixes to the granular groups.  ``same_subtree`` is a
    list of suffix lists; ``root_required`` a list of trait names
    (``!NAME`` forbids).

    allotment's extensions (docs/extensions.md): ``root_member_of`` (items
    as ``member_of``'s) and ``forbidden_root_aggregates``; ``isolate``, a
    list of suffix lists; ``"!_X"`` in a ``same_subtree`` list for
    anti-affinity; ``can_split``, classes of the unsuffixed group that may
    be divided over several providers of one tree; ``explain`` (and
    ``explain_limit``); ``headroom``; ``ignore_consumers`` (consumer UUIDs)
    and ``preempt``.  Using any of them,
    or ``extensions=True``, sends the opt-in header and makes
    ``group_policy`` optional.  Upstream Placement refuses such requests.
    """

    unsuffixed: RequestGroup | None = None
    groups: Mapping[str, RequestGroup] = field(default_factory=dict)
    group_policy: str | None = None
    limit: int | None = None
    same_subtree: Iterable[Iterable[str]] = ()
    root_required: Iterable[str] = ()
    root_member_of: Iterable[str | Iterable[str]] = ()
    forbidden_root_aggregates: Iterable[str] = ()
    isolate: Iterable[Iterable[str]] = ()
    can_split: Iterable[str] = ()
    explain: bool = False
    explain_limit: int | None = None
    # How many more instances fit (docs/extensions/headroom.md).
    headroom: bool = False
    # The answer as if these consumers held nothing
    # (docs/extensions/ignore-consumers.md).
    ignore_consumers: Iterable[str] = ()
    # Also candidates that fit once preemptible consumers go
    # (docs/extensions/preempt.md; microversion 1.38 or later).
    preempt: bool = False
    extensions: bool = False

    def __post_init__(self) -> None:
        self.groups = dict(self.groups)
        self.same_subtree = [list(s) for s in self.same_subtree]
        self.root_required = list(self.root_required)
        self.root_member_of = [m if isinstance(m, str) else frozenset(m)
                               for m in self.root_member_of]
        self.forbidden_root_aggregates = _sorted(self.forbidden_root_aggregates)
        self.isolate = [list(s) for s in self.isolate]
        self.can_split = _sorted(self.can_split)
        self.ignore_consumers = list(dict.fromkeys(self.ignore_consumers))
        anti = any(s.startswith("!") for st in self.same_subtree for s in st)
        if (self.root_member_of or self.forbidden_root_aggregates or self.isolate
                or self.can_split or self.explain or self.headroom or anti
                or self.ignore_consumers or self.preempt):
            self.extensions = True
        self._check_extensions()
        for suffix in self.groups:
            if not _SUFFIX_ANY.match(suffix):
                raise ValueError(f"invalid request group suffix {suffix!r}")
        if self.group_policy is not None and self.group_policy not in GROUP_POLICIES:
            raise ValueError(f"group_policy must be one of {GROUP_POLICIES}")
        if self.limit is not None and (not isinstance(self.limit, int) or self.limit < 1):
            raise ValueError("limit must be a positive integer")
        for subtree in self.same_subtree:
            if not [s for s in subtree if not s.startswith("!")]:
                raise ValueError("same_subtree needs at least one suffix without '!'")
            for suffix in subtree:
                if suffix.removeprefix("!") not in self.groups:
                    raise ValueError(f"same_subtree names unknown group {suffix!r}")
        if not any(g.resources for g in self._all_groups()):
            raise ValueError("at least one group must request resources")
        # Placement requires group_policy once there is more than one
        # granular group; saying so here beats a 400 later.
        if len(self.groups) > 1 and self.group_policy is None and not self.extensions:
            raise ValueError("group_policy is required with more than one granular group")

    def _check_extensions(self) -> None:
        for item in self.root_member_of:
            if not isinstance(item, str) and not item:
                raise ValueError("an any-of set must not be empty")
        for entry in self.isolate:
            for suffix in entry:
                if suffix not in self.groups:
                    raise ValueError(f"isolate names unknown group {suffix!r}")
        if self.isolate and self.group_policy is not None:
            raise ValueError("isolate and group_policy are mutually exclusive")
        unsuffixed = self.unsuffixed.resources if self.unsuffixed else {}
        outside = [rc for rc in self.can_split if rc not in unsuffixed]
        if outside:
            raise ValueError(f"can_split names classes the unsuffixed group lacks: {outside}")
        if self.explain_limit is not None and (
                not self.explain or not 1 <= self.explain_limit <= 1000):
            raise ValueError("explain_limit needs explain and is from 1 to 1000")

    @classmethod
    def simple(cls, resources: Mapping[str, int], **kwargs: Any) -> CandidatesRequest:
        """Only an unsuffixed group: ``simple({"VCPU": 1}, required=[...])``.

        Keyword arguments of :class:`RequestGroup` go to the group; the
        request-wide ones (limit, root_required ...) to the request."""
        wide = {k: kwargs.pop(k) for k in (
            "group_policy", "limit", "root_required", "root_member_of",
            "forbidden_root_aggregates", "can_split", "explain", "explain_limit",
            "headroom", "ignore_consumers", "preempt", "extensions") if k in kwargs}
        return cls(RequestGroup(resources=resources, **kwargs), **wide)

    def _all_groups(self) -> list[RequestGroup]:
        return ([self.unsuffixed] if self.unsuffixed else []) + list(self.groups.values())

    def params(self) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        if self.unsuffixed:
            out.extend(self.unsuffixed.params(""))
        for suffix in sorted(self.groups):
            out.extend(self.groups[suffix].params(suffix))
        if self.group_policy:
            out.append(("group_policy", self.group_policy))
        if self.limit is not None:
            out.append(("limit", str(self.limit)))
        if self.root_required:
            out.append(("root_required", csv(self.root_required)))
        for subtree in self.same_subtree:
            out.append(("same_subtree", csv(subtree)))
        for item in self.root_member_of:
            value = item if isinstance(item, str) else (
                next(iter(item)) if len(item) == 1 else "in:" + csv(sorted(item)))
            out.append(("root_member_of", value))
        if self.forbidden_root_aggregates:
            out.append(("root_member_of", "!in:" + csv(self.forbidden_root_aggregates)))
        for entry in self.isolate:
            out.append(("isolate", csv(entry)))
        if self.can_split:
            out.append(("can_split", csv(self.can_split)))
        if self.explain:
            out.append(("explain", "true"))
            if self.explain_limit is not None:
                out.append(("explain_limit", str(self.explain_limit)))
        if self.headroom:
            out.append(("headroom", "true"))
        if self.ignore_consumers:
            out.append(("ignore_consumers", "in:" + csv(self.ignore_consumers)))
        if self.preempt:
            out.append(("preempt", "true"))
        return out

    def headers(self) -> dict[str, str]:
        """What the request must carry besides its microversion."""
        return {EXTENSIONS_HEADER: EXTENSIONS_LEVEL} if self.extensions else {}

    def query_string(self) -> str:
        return urlencode(self.params(), safe=",:!")

    def min_version(self) -> str:
        needed = [mv.FEATURES["allocation_candidates"]]
        if self.unsuffixed:
            needed.append(self.unsuffixed.min_version(""))
        if not (self.unsuffixed and self.unsuffixed.resources):
            # Before granular groups, resources= was mandatory.
            needed.append(mv.FEATURES["granular"])
        for suffix, group in self.groups.items():
            needed.append(group.min_version(suffix))
        if self.root_required:
            needed.append(mv.FEATURES["root_required"])
        if self.same_subtree:
            needed.append(mv.FEATURES["same_subtree"])
        if self.limit is not None:
            needed.append("1.16")
        if self.extensions:
            needed.append(EXTENSIONS_MIN_VERSION)
        return max(needed, key=mv.parse)

    def check_version(self, version: str) -> None:
        needed = self.min_version()
        if mv.parse(version) < mv.parse(needed):
            from allotment.client.exceptions import MicroversionUnsupported

            raise MicroversionUnsupported("this allocation candidates request", needed, version)


@dataclass
class Candidates:
    """The answer: ``allocation_requests`` (each ``{"allocations": {rp:
    {"resources": ...}}}`` plus ``mappings`` from 1.34) and
    ``provider_summaries`` keyed by provider uuid (1.12+ shapes)."""

    allocation_requests: list[dict[str, Any]]
    provider_summaries: dict[str, Any]
    version: str
    # With CandidatesRequest(explain=True): see docs/extensions/explain.md.
    explanation: dict[str, Any] | None = None
    # With CandidatesRequest(headroom=True): {total, hosts: [{uuid, name,
    # count}], aggregates, largest}; see docs/extensions/headroom.md.
    headroom: dict[str, Any] | None = None

    def __len__(self) -> int:
        return len(self.allocation_requests)


class AllocationCandidatesAPI(Noun):
    def get(self, request: CandidatesRequest, *, version: str | None = None) -> Candidates:
        version = self._version(version)
        request.check_version(version)
        body = self._client.get("/allocation_candidates", params=request.params(),
                                version=version, headers=request.headers()).json()
        return Candidates(body["allocation_requests"], body["provider_summaries"], version,
                          body.get("explanation"), body.get("headroom"))

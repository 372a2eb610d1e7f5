"""Parse the ``GET /allocation_candidates`` query string into a typed request.

A pure function of the raw ``(key, value)`` pairs (repeated keys appear
repeatedly, in order) and the request's microversion.  Every malformed query
is rejected with the 400 message and error code Placement gives for it, in
the order Placement checks them: the query schema first, then the
request-wide parameters, then each request group in query order, then the
cross-group rules.  Whether named traits, resource classes, aggregates or
providers exist is for the service to find out; only syntax is checked here.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from allotment import errors
from allotment.api import filters
from allotment.api.schema import first_error
from allotment.engine.request import (
    NESTED_AWARE_VERSION,
    AllocationCandidatesRequest,
    SearchGroup,
)

_NUMERIC_SUFFIX = r"[1-9][0-9]*"
_STRING_SUFFIX = r"[a-zA-Z0-9_-]{1,64}"
_GROUP_PARAMS = ("resources", "required", "member_of", "in_tree")


def _suffix_pattern(version: tuple[int, int]) -> str:
    return _STRING_SUFFIX if version >= (1, 33) else _NUMERIC_SUFFIX


def query_schema(version: tuple[int, int]) -> dict:
    """The JSON schema the last value of each query key must satisfy."""
    props: dict[str, dict] = {}
    schema: dict = {"type": "object", "properties": props}
    if version < (1, 25):
        props["resources"] = {"type": "string"}
    if version >= (1, 16):
        # webob hands over strings, but an integer is as good.
        props["limit"] = {
            "type": ["integer", "string"],
            "pattern": "^[1-9][0-9]*$",
            "minimum": 1,
            "minLength": 1,
        }
    if version < (1, 25):
        if version >= (1, 17):
            props["required"] = {"type": ["string"]}
        if version >= (1, 21):
            props["member_of"] = {"type": ["string"]}
        schema["required"] = ["resources"]
        schema["additionalProperties"] = False
        return schema
    props["group_policy"] = {"type": "string", "enum": ["none", "isolate"]}
    if version >= (1, 35):
        props["root_required"] = {"type": ["string"]}
    if version >= (1, 36):
        props["same_subtree"] = {"type": ["string"]}
    schema["additionalProperties"] = False
    grouped = ["resources", "required", "member_of"]
    if version >= (1, 31):
        grouped.append("in_tree")
    suffix = _suffix_pattern(version)
    schema["patternProperties"] = {
        f"^{name}({suffix})?$": {"type": "string"} for name in grouped}
    return schema


def _validate_schema(params: Sequence[tuple[str, str]],
                     version: tuple[int, int]) -> None:
    # Same default draft as jsonschema.validate(), which Placement uses.
    schema = query_schema(version)
    cache_key = ("candidates-query", version)
    # Placement validates a plain dict of the query, i.e. each key's last
    # value.  It then *uses* the first limit and group_policy, so those are
    # checked value by value too: a bad first value must not slip through.
    last = dict(params)
    instances = [last]
    for key in ("limit", "group_policy"):
        for _, value in (kv for kv in params if kv[0] == key):
            if value != last[key]:
                instances.append({**last, key: value})
    for instance in instances:
        error = first_error(instance, schema, key=cache_key)
        if error is not None:
            raise errors.BadRequest(f"Invalid query string parameters: {error}")


def _parse_in_tree(value: str) -> str:
    stripped = value.strip()
    if not filters.is_uuid_like(stripped):
        raise errors.BadRequest(
            "Invalid query string parameters: Expected 'in_tree' parameter "
            f"to be a format of uuid. Got: {value}")
    return stripped


class _Group:
    def __init__(self) -> None:
        self.resources: dict[str, int] = {}
        self.required: list[frozenset[str]] = []
        self.forbidden: set[str] = set()
        self.member_of: list[frozenset[str]] = []
        self.forbidden_aggs: set[str] = set()
        self.in_tree: str | None = None


def _parse_groups(params: Sequence[tuple[str, str]], version: tuple[int, int]
                  ) -> dict[str, _Group]:
    names = "|".join(_GROUP_PARAMS)
    pattern = re.compile(rf"^({names})({_suffix_pattern(version)})?$")
    groups: dict[str, _Group] = {}
    # Every value of each key, gathered once.  A repeated required or
    # member_of key is parsed whole at its first occurrence (so its errors
    # come in query order) and skipped after: reparsing it at each repeat
    # would cost the square of the number of pairs.
    by_key: dict[str, list[str]] = {}
    for key, value in params:
        by_key.setdefault(key, []).append(value)
    done: set[str] = set()
    for key, value in params:
        match = pattern.match(key)
        if not match or key in done:
            continue
        name, suffix = match.group(1), match.group(2) or ""
        group = groups.setdefault(suffix, _Group())
        if name == "resources":
            group.resources = filters.parse_resources(value)
        elif name == "required":
            done.add(key)
            values = by_key[key]
            if version < (1, 39):
                # Before any-traits, a repeated key meant "the last one wins".
                values = values[-1:]
            group.required, group.forbidden = [], set()
            for v in values:
                req, forb = filters.parse_traits(
                    v, allow_forbidden=version >= (1, 22),
                    allow_any=version >= (1, 39))
                group.required += req
                group.forbidden |= forb
        elif name == "member_of":
            done.add(key)
            group.member_of, group.forbidden_aggs = filters.parse_member_of(
                by_key[key], suffix, version)
        else:
            group.in_tree = _parse_in_tree(value)
    return groups


def _check_groups_before_same_subtree(groups: dict[str, _Group]) -> None:
    orphans = [f"required{s}" for s, g in groups.items()
               if g.required and not g.resources]
    if orphans:
        raise errors.BadRequest(
            "All traits parameters must be associated with resources.  Found "
            "the following orphaned traits keys: " + ", ".join(orphans))
    orphans = [f"member_of{s}" for s, g in groups.items()
               if not g.resources and (g.member_of or g.forbidden_aggs)]
    if orphans:
        raise errors.BadRequest(
            "All member_of parameters must be associated with resources. Found "
            "the following orphaned member_of keys: " + ", ".join(orphans))
    if not all(g.resources for g in groups.values()):
        raise errors.BadRequest("All request groups must specify resources.")
    if not groups:
        raise errors.BadRequest(
            "At least one request group (`resources` or `resources{$S}`) is "
            "required.")


def _check_groups_with_same_subtree(groups: dict[str, _Group],
                                    same_subtrees: list[set[str]]) -> None:
    resourceless = [s for s, g in groups.items() if not g.resources]
    if len(resourceless) == len(groups):
        raise errors.BadRequest(
            "There must be at least one resources or resources[$S] parameter.",
            code=errors.QUERYPARAM_MISSING_VALUE)
    in_subtrees = set().union(*same_subtrees)
    bad = sorted(s for s in resourceless if s not in in_subtrees)
    if bad:
        raise errors.BadRequest(
            "Resourceless suffixed group request should be specified in "
            f"`same_subtree` query param: bad group(s) - {bad}.",
            code=errors.QUERYPARAM_BAD_VALUE)
    unknown = sorted(s for s in in_subtrees if s not in groups)
    if unknown:
        raise errors.BadRequest(
            f"Real suffixes should be specified in `same_subtree`: {unknown} "
            f"not found in {list(groups)}.",
            code=errors.QUERYPARAM_BAD_VALUE)


def _check_conflicts(groups: dict[str, _Group]) -> None:
    conflicts = sorted(
        f"required{s}: ({', '.join(sorted(any_of))})"
        for s, g in groups.items() for any_of in g.required
        if any_of <= g.forbidden)
    if conflicts:
        raise errors.BadRequest(
            "Conflicting required and forbidden traits found in the following "
            "traits keys: " + ", ".join(conflicts))


def _parse_root_required(values: list[str]) -> tuple[frozenset[str], frozenset[str]]:
    if len(values) > 1:
        raise errors.BadRequest(
            "Query parameter 'root_required' may be specified only once.",
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    # root_required keeps the pre-1.39 syntax: no in: at any microversion.
    required, forbidden = filters.parse_traits(values[0], allow_forbidden=True, allow_any=False)
    required_names = {next(iter(s)) for s in required}
    conflicts = sorted(required_names & forbidden)
    if conflicts:
        raise errors.BadRequest(
            "Conflicting required and forbidden traits found in root_required: "
            + ", ".join(conflicts), code=errors.QUERYPARAM_BAD_VALUE)
    return frozenset(required_names), frozenset(forbidden)


def _parse_same_subtree(values: list[str]) -> list[set[str]]:
    result = []
    for value in values:
        suffixes = {s.strip() for s in value.split(",")}
        if "" in suffixes:
            raise errors.BadRequest(
                "Empty string (unsuffixed group) can not be specified in "
                "`same_subtree` ", code=errors.QUERYPARAM_BAD_VALUE)
        result.append(suffixes)
    return result


@dataclass(frozen=True)
class StandardQuery:
    """A standard query, every check made, before it is the engine's
    typed request (:func:`typed_request`)."""

    version: tuple[int, int]
    groups: dict[str, _Group]
    group_policy: str | None
    same_subtrees: list[set[str]]
    root_required: frozenset[str]
    root_forbidden: frozenset[str]
    limit: int | None

    def requested_classes(self) -> frozenset[str]:
        """Every resource class some group requests."""
        return frozenset(rc for g in self.groups.values() for rc in g.resources)


def parse_allocation_candidates_query(
    params: Sequence[tuple[str, str]], microversion: tuple[int, int]
) -> AllocationCandidatesRequest:
    """Turn the query pairs of ``GET /allocation_candidates`` into a request.

    ``microversion`` is the negotiated version (1.10 or later).  Raises
    :class:`allotment.errors.BadRequest` exactly where Placement answers 400.
    """
    return typed_request(read_standard_query(params, microversion))


def read_standard_query(params: Sequence[tuple[str, str]],
                        microversion: tuple[int, int]) -> StandardQuery:
    """:func:`parse_allocation_candidates_query`'s checks and reading, the
    typed request not made yet."""
    params = list(params)
    version = tuple(microversion)
    _validate_schema(params, version)

    def values(key: str) -> list[str]:
        return [v for k, v in params if k == key]

    limits = values("limit")
    limit = _limit(limits[0]) if limits else None
    policies = values("group_policy")
    group_policy = policies[0] if policies else None
    root_required: frozenset[str] = frozenset()
    root_forbidden: frozenset[str] = frozenset()
    if values("root_required"):
        root_required, root_forbidden = _parse_root_required(values("root_required"))
    same_subtrees = _parse_same_subtree(values("same_subtree"))

    groups = _parse_groups(params, version)
    if version >= (1, 36):
        _check_groups_with_same_subtree(groups, same_subtrees)
    else:
        _check_groups_before_same_subtree(groups)
    if version >= (1, 22):
        _check_conflicts(groups)
    if not group_policy and sum(1 for s in groups if s) > 1:
        raise errors.BadRequest(
            'The "group_policy" parameter is required when specifying more '
            'than one "resources{N}" parameter.')
    return StandardQuery(version, groups, group_policy, same_subtrees, root_required,
                         root_forbidden, limit)


def _limit(text: str) -> int:
    """The ``limit`` the schema let through (ASCII digits, the first not 0).

    No answer has more candidates than ``sys.maxsize`` (the largest length
    Python has), so a larger limit means the same as that one; Python's
    ``int`` also refuses text of more than 4,300 digits.
    """
    return sys.maxsize if len(text) > _MAXSIZE_DIGITS else min(int(text), sys.maxsize)


_MAXSIZE_DIGITS = len(str(sys.maxsize))


def typed_request(query: StandardQuery) -> AllocationCandidatesRequest:
    """The engine's typed request for a query read and checked.

    What each microversion means is the API's to say: the request carries
    the version (the answer's shape follows it) and whether candidates may
    take more than one provider of a tree (from 1.29).
    """
    return AllocationCandidatesRequest(
        microversion=query.version,
        nested_aware=query.version >= NESTED_AWARE_VERSION,
        groups=tuple(
            SearchGroup(
                suffix=suffix, resources=g.resources,
                required_traits=tuple(g.required),
                forbidden_traits=frozenset(g.forbidden),
                member_of=tuple(g.member_of),
                forbidden_aggs=frozenset(g.forbidden_aggs),
                in_tree=g.in_tree)
            for suffix, g in query.groups.items()),
        group_policy=query.group_policy,
        same_subtrees=tuple(frozenset(s) for s in query.same_subtrees),
        root_required=query.root_required,
        root_forbidden=query.root_forbidden,
        limit=query.limit,
    )

"""The extended ``GET /allocation_candidates`` query (see docs/extensions.md).

Only requests carrying the ``Allotment-Extensions`` header come here.  The
extension parameters are taken out of the query, ``!`` groups are taken out
of ``same_subtree`` values, ``group_policy`` gets its default, and what
remains is parsed by the standard parser, so every standard parameter keeps
exactly its standard meaning and errors.
"""

from __future__ import annotations

import dataclasses
import uuid as uuid_mod
from collections.abc import Sequence
from dataclasses import dataclass

from allotment import errors
from allotment.api import filters
from allotment.api.candidates_query import read_standard_query, typed_request
from allotment.engine.extensions import ExtendedRequest

HEADER = "Allotment-Extensions"
# The only extension level so far; a later, different one gets a new value
# so that no client ever changes behaviour without asking.
LEVEL = "1"
# Extensions build on the last standard features they refine (same_subtree).
MIN_VERSION = (1, 36)
EXPLAIN_LIMIT_DEFAULT = 50
EXPLAIN_LIMIT_MAX = 1000
_EXTENSION_PARAMS = ("root_member_of", "isolate", "explain", "explain_limit", "can_split",
                     "headroom", "ignore_consumers")
# ``preempt`` names 1.38's consumer types: below 1.38 it stays unknown.
PREEMPT = "preempt"
PREEMPT_VERSION = (1, 38)


@dataclass(frozen=True)
class ExtendedQuery:
    request: ExtendedRequest
    # Trees to explain at most; None when no explanation was asked for.
    explain_limit: int | None = None
    # Whether the answer also says how many more instances fit.
    headroom: bool = False
    # Consumers whose allocations the answer is worked out without.
    ignore_consumers: tuple[str, ...] = ()
    # Whether candidates that fit once preemptible consumers go are wanted.
    preempt: bool = False


def requested(value: str | None) -> bool:
    """Whether the header's ``value`` opts in; 400 for a value we do not know."""
    if value is None:
        return False
    if value.strip() != LEVEL:
        raise errors.BadRequest(
            f"Unknown {HEADER} value {value.strip()!r}: this service offers {LEVEL!r}.")
    return True


def _suffixes(value: str, param: str) -> list[str]:
    names = [s.strip() for s in value.split(",")]
    if any(not s or s == "!" for s in names):
        raise errors.BadRequest(
            f"Empty string (unsuffixed group) can not be specified in `{param}`",
            code=errors.QUERYPARAM_BAD_VALUE)
    return names


def _parse_root_member_of(values: list[str]) -> tuple[tuple[frozenset[str], ...], frozenset[str]]:
    required: list[frozenset[str]] = []
    forbidden: set[str] = set()
    for value in values:
        negative = value.startswith("!")
        body = value[1:] if negative else value
        listed = body.startswith("in:")
        aggs = body[3:].split(",") if listed else [body]
        if len(aggs) > 1 and not listed:
            raise errors.BadRequest(
                "Multiple values for 'root_member_of' must be prefixed with the "
                f"'in:' or '!in:' keyword. Got: {value}", code=errors.QUERYPARAM_BAD_VALUE)
        for agg in aggs:
            if not filters.is_uuid_like(agg):
                raise errors.BadRequest(
                    "Invalid query string parameters: Expected 'root_member_of' "
                    f"parameter to contain valid UUID(s). Got: {agg}",
                    code=errors.QUERYPARAM_BAD_VALUE)
        if negative:
            forbidden.update(aggs)
        else:
            required.append(frozenset(aggs))
    return tuple(required), frozenset(forbidden)


def _parse_explain(values: list[str], limits: list[str]) -> int | None:
    if len(values) > 1 or len(limits) > 1:
        raise errors.BadRequest(
            "Query parameters 'explain' and 'explain_limit' may be specified only once.",
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    if limits and not values:
        raise errors.BadRequest("'explain_limit' needs 'explain=true'.",
                                code=errors.QUERYPARAM_BAD_VALUE)
    if not values:
        return None
    if values[0] not in ("true", "false"):
        raise errors.BadRequest(
            f"Invalid value for 'explain': {values[0]!r}; expected 'true' or 'false'.",
            code=errors.QUERYPARAM_BAD_VALUE)
    if values[0] == "false":
        return None
    if not limits:
        return EXPLAIN_LIMIT_DEFAULT
    text = limits[0]
    # ASCII digits only: int() reads other scripts' digits too, and refuses
    # more than 4,300 of them.
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(EXPLAIN_LIMIT_MAX))
            and 1 <= int(text) <= EXPLAIN_LIMIT_MAX):
        raise errors.BadRequest(
            f"Invalid value for 'explain_limit': {text!r}; expected an integer "
            f"from 1 to {EXPLAIN_LIMIT_MAX}.", code=errors.QUERYPARAM_BAD_VALUE)
    return int(text)


def _parse_can_split(values: list[str], unsuffixed: frozenset[str]) -> frozenset[str]:
    if not values:
        return frozenset()
    if len(values) > 1:
        raise errors.BadRequest(
            "Query parameter 'can_split' may be specified only once.",
            code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    names = [n.strip() for n in values[0].split(",")]
    if any(not n for n in names):
        raise errors.BadRequest(
            f"Invalid value for 'can_split': {values[0]!r}; expected resource classes.",
            code=errors.QUERYPARAM_BAD_VALUE)
    outside = sorted(set(names) - unsuffixed)
    if outside:
        raise errors.BadRequest(
            "'can_split' names resource classes the unsuffixed group does not "
            f"request: {outside}.", code=errors.QUERYPARAM_BAD_VALUE)
    return frozenset(names)


def parse_extended_query(params: Sequence[tuple[str, str]],
                         microversion: tuple[int, int]) -> ExtendedQuery:
    """Parse a query made with the extension header (see docs/extensions.md)."""
    if tuple(microversion) < MIN_VERSION:
        raise errors.BadRequest(
            f"{HEADER} needs microversion {MIN_VERSION[0]}.{MIN_VERSION[1]} or later.")
    params = list(params)

    def values(key: str) -> list[str]:
        return [v for k, v in params if k == key]

    preempt_known = tuple(microversion) >= PREEMPT_VERSION
    standard = [(k, v) for k, v in params
                if k not in _EXTENSION_PARAMS and k != "same_subtree"
                and not (k == PREEMPT and preempt_known)]
    anti: list[tuple[frozenset[str], frozenset[str]]] = []
    for value in values("same_subtree"):
        names = _suffixes(value, "same_subtree")
        positive = [s for s in names if not s.startswith("!")]
        negative = [s[1:] for s in names if s.startswith("!")]
        if negative and not positive:
            raise errors.BadRequest(
                "`same_subtree` needs at least one group without '!': "
                f"{value}", code=errors.QUERYPARAM_BAD_VALUE)
        both = sorted(set(positive) & set(negative))
        if both:
            raise errors.BadRequest(
                f"Groups both with and without '!' in `same_subtree`: {both}.",
                code=errors.QUERYPARAM_BAD_VALUE)
        standard.append(("same_subtree", ",".join(positive)))
        if negative:
            # Named here so a resourceless group used only with '!' passes
            # the standard "resourceless groups need same_subtree" rule; a
            # single group is always in its own subtree.
            standard.extend(("same_subtree", s) for s in negative)
            anti.append((frozenset(positive), frozenset(negative)))

    isolate = [frozenset(_suffixes(v, "isolate")) for v in values("isolate")]
    policies = values("group_policy")
    if isolate and policies:
        raise errors.BadRequest(
            "'isolate' and 'group_policy' are mutually exclusive.",
            code=errors.QUERYPARAM_BAD_VALUE)
    if not policies:
        # The extension's default: suffixed groups may share providers.
        standard.append(("group_policy", "none"))

    standard_query = read_standard_query(standard, microversion)
    groups = standard_query.groups
    known = {s for s in groups if s}
    unknown = sorted({s for entry in isolate for s in entry} - known)
    if unknown:
        raise errors.BadRequest(
            f"Real suffixes should be specified in `isolate`: {unknown} not found "
            f"in {sorted(groups)}.",
            code=errors.QUERYPARAM_BAD_VALUE)
    root_member_of, forbidden_root_aggs = _parse_root_member_of(values("root_member_of"))
    unsuffixed = groups.get("")
    can_split = _parse_can_split(
        values("can_split"), frozenset(unsuffixed.resources if unsuffixed else ()))
    explain_limit = _parse_explain(values("explain"), values("explain_limit"))
    headroom = _parse_flag(values("headroom"), "headroom")
    consumers = _parse_consumers(values("ignore_consumers"))
    preempt = preempt_known and _parse_flag(values(PREEMPT), PREEMPT)
    # Every check made, the typed request is made last.
    base = typed_request(standard_query)
    if not policies:
        base = dataclasses.replace(base, group_policy=None)
    request = ExtendedRequest(
        base=base, root_member_of=root_member_of,
        forbidden_root_aggs=forbidden_root_aggs, isolate=tuple(isolate),
        anti_affinity=tuple(anti), can_split=can_split)
    return ExtendedQuery(request, explain_limit, headroom, consumers, preempt)


def _parse_consumers(values: list[str]) -> tuple[str, ...]:
    """``ignore_consumers=in:UUID,...`` (repeatable), in the order given."""
    found: list[str] = []
    for value in values:
        if not value.startswith("in:"):
            raise errors.BadRequest(
                "'ignore_consumers' must be prefixed with the 'in:' keyword. "
                f"Got: {value}", code=errors.QUERYPARAM_BAD_VALUE)
        for uuid in value[3:].split(","):
            if not filters.is_uuid_like(uuid):
                raise errors.BadRequest(
                    "Invalid query string parameters: Expected 'ignore_consumers' "
                    f"parameter to contain valid UUID(s). Got: {uuid}",
                    code=errors.QUERYPARAM_BAD_VALUE)
            # As consumers are stored (PUT /allocations writes this form).
            found.append(str(uuid_mod.UUID(uuid)))
    return tuple(dict.fromkeys(found))


def _parse_flag(values: list[str], name: str) -> bool:
    if len(values) > 1:
        raise errors.BadRequest(f"Query parameter '{name}' may be specified only once.",
                                code=errors.ILLEGAL_DUPLICATE_QUERYPARAM)
    if values and values[0] not in ("true", "false"):
        raise errors.BadRequest(
            f"Invalid value for '{name}': {values[0]!r}; expected 'true' or 'false'.",
            code=errors.QUERYPARAM_BAD_VALUE)
    return bool(values) and values[0] == "true"

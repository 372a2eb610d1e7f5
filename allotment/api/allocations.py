"""/allocations (POST, from 1.13) and /allocations/{consumer_uuid}.

Request bodies change shape with the microversion: a list of providers before
1.12, a dict keyed by provider from 1.12 (the shape GET returns), the owner
from 1.8, the consumer generation from 1.28, mappings from 1.34 and the
consumer type from 1.38.  The schemas below are shared with POST /reshaper.
"""

from __future__ import annotations

import copy
import functools
import uuid as uuid_mod
from collections.abc import Mapping

import falcon

from allotment import errors
from allotment.api import body, rendering
from allotment.api.resource import Resource, authorize, require_version, version
from allotment.service import allocations as service
from allotment.service.consumers import ConsumerRequest

# Resource class and consumer type names; provider and consumer UUID keys.
NAME_PATTERN = "^[A-Z0-9_]+$"
UUID_KEY_PATTERN = "^[0-9a-fA-F-]{36}$"
# Request group suffixes of 1.33; unanchored, as upstream has it.
SUFFIX_PATTERN = "[a-zA-Z0-9_-]{1,64}"

_OWNER_ID = {"type": "string", "minLength": 1, "maxLength": 255}

_RESOURCES = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {NAME_PATTERN: {"type": "integer", "minimum": 1}},
    "additionalProperties": False,
}

# Before 1.12: a list of {resource_provider: {uuid}, resources}.
LIST_FORMAT = {
    "type": "object",
    "properties": {
        "allocations": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "resource_provider": {
                        "type": "object",
                        "properties": {"uuid": {"type": "string", "format": "uuid"}},
                        "required": ["uuid"],
                        "additionalProperties": False,
                    },
                    "resources": _RESOURCES,
                },
                "required": ["resource_provider", "resources"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["allocations"],
    "additionalProperties": False,
}

# 1.8 to 1.11: the owner becomes mandatory.
LIST_FORMAT_OWNED = copy.deepcopy(LIST_FORMAT)
LIST_FORMAT_OWNED["properties"].update(project_id=_OWNER_ID, user_id=_OWNER_ID)
LIST_FORMAT_OWNED["required"] += ["project_id", "user_id"]

# From 1.12: a dict keyed by provider UUID, the shape GET returns.
DICT_FORMAT = {
    "type": "object",
    "properties": {
        "allocations": {
            "type": "object",
            "minProperties": 1,
            "patternProperties": {
                UUID_KEY_PATTERN: {
                    "type": "object",
                    "properties": {
                        # Accepted so a GET body can be sent back; ignored.
                        "generation": {"type": "integer"},
                        "resources": _RESOURCES,
                    },
                    "required": ["resources"],
                    "additionalProperties": False,
                },
            },
            "additionalProperties": False,
        },
        "project_id": _OWNER_ID,
        "user_id": _OWNER_ID,
    },
    "required": ["allocations", "project_id", "user_id"],
    "additionalProperties": False,
}

# An empty allocations object removes the consumer's allocations.
DICT_FORMAT_EMPTIABLE = copy.deepcopy(DICT_FORMAT)
DICT_FORMAT_EMPTIABLE["properties"]["allocations"]["minProperties"] = 0

# 1.28: the caller states the consumer generation it saw (null: new consumer).
WITH_GENERATION = copy.deepcopy(DICT_FORMAT_EMPTIABLE)
WITH_GENERATION["properties"]["consumer_generation"] = {"type": ["integer", "null"]}
WITH_GENERATION["required"].append("consumer_generation")

# 1.34: request-group mappings from allocation candidates may ride along.
WITH_MAPPINGS = copy.deepcopy(WITH_GENERATION)
WITH_MAPPINGS["properties"]["mappings"] = {
    "type": "object",
    "minProperties": 1,
    "patternProperties": {
        SUFFIX_PATTERN: {
            "type": "array",
            "minItems": 1,
            "items": {"type": "string", "format": "uuid"},
        },
    },
}

# 1.38: every consumer has a type.
WITH_TYPE = copy.deepcopy(WITH_MAPPINGS)
WITH_TYPE["properties"]["consumer_type"] = {
    "type": "string", "pattern": NAME_PATTERN, "minLength": 1, "maxLength": 255,
}
WITH_TYPE["required"].append("consumer_type")


def put_schema(version: tuple[int, int]) -> dict:
    """Body of PUT /allocations/{consumer_uuid}."""
    for since, schema in ((1, 38), WITH_TYPE), ((1, 34), WITH_MAPPINGS), \
            ((1, 28), WITH_GENERATION), ((1, 12), DICT_FORMAT), ((1, 8), LIST_FORMAT_OWNED):
        if version >= since:
            return schema
    return LIST_FORMAT


def consumer_schema(version: tuple[int, int]) -> dict:
    """One consumer's entry in POST /allocations (and POST /reshaper)."""
    if version >= (1, 38):
        return WITH_TYPE
    if version >= (1, 34):
        return WITH_MAPPINGS
    if version >= (1, 28):
        return WITH_GENERATION
    return DICT_FORMAT_EMPTIABLE


# One dict per microversion: validators are remembered by schema object, so a
# schema built afresh for each request would cost a new validator each time
# (and keep every one of them).  Callers must not change the result.
@functools.cache
def by_consumer(version: tuple[int, int], *, min_consumers: int = 1) -> dict:
    """A dict of consumer UUID -> consumer entry."""
    return {
        "type": "object",
        "minProperties": min_consumers,
        "patternProperties": {UUID_KEY_PATTERN: consumer_schema(version)},
        "additionalProperties": False,
    }


def consumer_request(conf, consumer_uuid: str, data: Mapping,
                     want: tuple[int, int]) -> ConsumerRequest:
    """What one consumer entry of a validated body says about its consumer."""
    project_id = data.get("project_id")
    user_id = data.get("user_id")
    if project_id is None:
        # Before 1.8 writers could not say who owns the consumer.
        project_id = conf.placement.incomplete_consumer_project_id
        user_id = conf.placement.incomplete_consumer_user_id
    return ConsumerRequest(
        uuid=consumer_uuid, project_id=project_id, user_id=user_id,
        generation=data.get("consumer_generation"),
        check_generation=want >= (1, 28),
        consumer_type=data.get("consumer_type") if want >= (1, 38) else None)


def consumer_allocations(conf, consumer_uuid: str, data: Mapping,
                         want: tuple[int, int]) -> service.ConsumerAllocations:
    """A validated consumer entry as the service's typed request."""
    raw = data["allocations"]
    if isinstance(raw, list):
        # The list format; a provider named twice keeps its last entry.
        amounts = {item["resource_provider"]["uuid"]: dict(item["resources"]) for item in raw}
    else:
        amounts = {rp: dict(entry["resources"]) for rp, entry in raw.items()}
    return service.ConsumerAllocations(
        consumer=consumer_request(conf, consumer_uuid, data, want), allocations=amounts)


def render_for_consumer(rows, want: tuple[int, int]) -> dict:
    by_provider: dict[str, dict] = {}
    for row in rows:
        entry = by_provider.setdefault(
            row.provider_uuid, {"generation": row.provider_generation, "resources": {}})
        entry["resources"][row.resource_class] = row.used
    result: dict = {"allocations": by_provider}
    if rows and want >= (1, 12):
        first = rows[0]
        result["project_id"] = first.project_external_id
        result["user_id"] = first.user_external_id
        if want >= (1, 28):
            result["consumer_generation"] = first.consumer_generation
        if want >= (1, 38):
            result["consumer_type"] = first.consumer_type or UNKNOWN_CONSUMER_TYPE
    return result


def last_modified(rows):
    """Allocations are never updated in place: their newest stamp, or now."""
    return rendering.latest(*(row.updated_at or row.created_at for row in rows))


def attempts(conf) -> int:
    """How many times a write that lost a generation race is run."""
    return conf.placement.allocation_conflict_retry_count


# How consumers without a type (written before 1.38) are reported.
UNKNOWN_CONSUMER_TYPE = "unknown"


class Allocations(Resource):
    """/allocations: several consumers in one all-or-nothing write."""

    def on_post(self, req: falcon.Request, resp: falcon.Response) -> None:
        require_version(req, "1.13")
        body.require_json(req)
        authorize(req, "placement:allocations:manage")
        want = version(req)
        data = body.json_body(req, by_consumer(want))
        batch = [consumer_allocations(self.conf, consumer_uuid, entry, want)
                 for consumer_uuid, entry in data.items()]
        service.replace_many(self.db, batch, attempts=attempts(self.conf))
        rendering.no_content(resp)


class ConsumerAllocationsResource(Resource):
    """/allocations/{consumer_uuid}."""

    def on_get(self, req: falcon.Request, resp: falcon.Response, consumer_uuid: str) -> None:
        authorize(req, "placement:allocations:list")
        # Consumer ids are not validated: an unknown one simply has nothing.
        rows = service.get_for_consumer(self.db, consumer_uuid)
        rendering.send_json(req, resp, render_for_consumer(rows, version(req)),
                            last_modified=last_modified(rows))

    def on_put(self, req: falcon.Request, resp: falcon.Response, consumer_uuid: str) -> None:
        body.require_json(req)
        authorize(req, "placement:allocations:update")
        if not body.FORMAT_CHECKER.conforms(consumer_uuid, "uuid"):
            raise errors.BadRequest(f"Malformed consumer_uuid: {consumer_uuid}")
        consumer_uuid = str(uuid_mod.UUID(consumer_uuid))
        want = version(req)
        data = body.json_body(req, put_schema(want))
        item = consumer_allocations(self.conf, consumer_uuid, data, want)
        service.replace_for_consumer(self.db, item, attempts=attempts(self.conf))
        rendering.no_content(resp)

    def on_delete(self, req: falcon.Request, resp: falcon.Response,
                  consumer_uuid: str) -> None:
        authorize(req, "placement:allocations:delete")
        service.delete_for_consumer(self.db, consumer_uuid)
        rendering.no_content(resp)

"""Schemas of the response bodies, at the latest microversion.

The service validates what it is sent, not what it sends, so these shapes
are the one place responses are described; the schema-driven tests check
every live response against them.
"""

from __future__ import annotations

UUID = {"type": "string", "format": "uuid"}
NAME = {"type": "string", "pattern": "^[A-Z0-9_]+$"}
GENERATION = {"type": "integer", "minimum": 0}
NULLABLE_UUID = {"type": ["string", "null"], "format": "uuid"}

LINKS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {"rel": {"type": "string"}, "href": {"type": "string"}},
        "required": ["rel", "href"],
    },
}

ERROR = {
    "type": "object",
    "properties": {
        "errors": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "status": {"type": "integer"},
                    "title": {"type": "string"},
                    "detail": {"type": "string"},
                    "request_id": {"type": "string"},
                    "code": {"type": "string", "pattern": "^placement\\."},
                },
                "required": ["status", "title", "detail"],
            },
        },
    },
    "required": ["errors"],
}

VERSIONS = {
    "type": "object",
    "properties": {
        "versions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "max_version": {"type": "string"},
                    "min_version": {"type": "string"},
                    "status": {"type": "string"},
                    "links": LINKS,
                },
                "required": ["id", "max_version", "min_version", "status", "links"],
            },
        },
    },
    "required": ["versions"],
}

RESOURCE_CLASS = {
    "type": "object",
    "properties": {"name": NAME, "links": LINKS},
    "required": ["name", "links"],
    "additionalProperties": False,
}
RESOURCE_CLASSES = {
    "type": "object",
    "properties": {"resource_classes": {"type": "array", "items": RESOURCE_CLASS}},
    "required": ["resource_classes"],
    "additionalProperties": False,
}

TRAITS = {
    "type": "object",
    "properties": {"traits": {"type": "array", "items": {"type": "string"}}},
    "required": ["traits"],
    "additionalProperties": False,
}

PROVIDER = {
    "type": "object",
    "properties": {
        "uuid": UUID,
        "name": {"type": "string"},
        "generation": GENERATION,
        "links": LINKS,
        "parent_provider_uuid": NULLABLE_UUID,
        "root_provider_uuid": UUID,
    },
    "required": ["uuid", "name", "generation", "links"],
    "additionalProperties": False,
}
PROVIDERS = {
    "type": "object",
    "properties": {"resource_providers": {"type": "array", "items": PROVIDER}},
    "required": ["resource_providers"],
    "additionalProperties": False,
}

INVENTORY_RECORD = {
    "type": "object",
    "properties": {
        "total": {"type": "integer"},
        "reserved": {"type": "integer"},
        "min_unit": {"type": "integer"},
        "max_unit": {"type": "integer"},
        "step_size": {"type": "integer"},
        "allocation_ratio": {"type": "number"},
    },
    "required": ["total", "reserved", "min_unit", "max_unit", "step_size",
                 "allocation_ratio"],
}
INVENTORY = {
    **INVENTORY_RECORD,
    "properties": {**INVENTORY_RECORD["properties"],
                   "resource_provider_generation": GENERATION},
    "required": [*INVENTORY_RECORD["required"], "resource_provider_generation"],
    "additionalProperties": False,
}
INVENTORIES = {
    "type": "object",
    "properties": {
        "inventories": {"type": "object", "additionalProperties": INVENTORY_RECORD},
        "resource_provider_generation": GENERATION,
    },
    "required": ["inventories", "resource_provider_generation"],
    "additionalProperties": False,
}

PROVIDER_AGGREGATES = {
    "type": "object",
    "properties": {"aggregates": {"type": "array", "items": UUID},
                   "resource_provider_generation": GENERATION},
    "required": ["aggregates"],
    "additionalProperties": False,
}
PROVIDER_TRAITS = {
    "type": "object",
    "properties": {"traits": {"type": "array", "items": {"type": "string"}},
                   "resource_provider_generation": GENERATION},
    "required": ["traits", "resource_provider_generation"],
    "additionalProperties": False,
}

_AMOUNTS = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 0}}
PROVIDER_USAGES = {
    "type": "object",
    "properties": {"usages": _AMOUNTS, "resource_provider_generation": GENERATION},
    "required": ["usages", "resource_provider_generation"],
    "additionalProperties": False,
}
# From 1.38 grouped by consumer type, each with a consumer_count.
USAGES = {
    "type": "object",
    "properties": {
        "usages": {
            "type": "object",
            "additionalProperties": {
                "anyOf": [{"type": "integer", "minimum": 0}, _AMOUNTS],
            },
        },
    },
    "required": ["usages"],
    "additionalProperties": False,
}

_RESOURCES = {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1}}
PROVIDER_ALLOCATIONS = {
    "type": "object",
    "properties": {
        "allocations": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {"resources": _RESOURCES},
                "required": ["resources"],
            },
        },
        "resource_provider_generation": GENERATION,
    },
    "required": ["allocations", "resource_provider_generation"],
    "additionalProperties": False,
}
CONSUMER_ALLOCATIONS = {
    "type": "object",
    "properties": {
        "allocations": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {"generation": GENERATION, "resources": _RESOURCES},
                "required": ["resources"],
            },
        },
        "consumer_generation": GENERATION,
        "project_id": {"type": "string"},
        "user_id": {"type": "string"},
        "consumer_type": {"type": "string"},
    },
    "required": ["allocations"],
    "additionalProperties": False,
}

# Before 1.12 a list of {resource_provider: {uuid}, resources}.
_LISTED_ALLOCATIONS = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "resource_provider": {"type": "object", "properties": {"uuid": UUID},
                                  "required": ["uuid"]},
            "resources": _RESOURCES,
        },
        "required": ["resource_provider", "resources"],
    },
}
# What-if extensions (docs/extensions/ignore-consumers.md, preempt.md):
# only with the Allotment-Extensions header and the parameter asking.
_DISPLACES = {
    "type": "array", "items": UUID, "x-allotment-extension": True,
    "x-openstack-min-version": "1.36",
    "description": "With `ignore_consumers`: the ignored consumers this candidate "
                   "displaces (sorted).",
}
_EVICTS = {
    "type": "array", "x-allotment-extension": True, "x-openstack-min-version": "1.38",
    "description": "With `preempt=true`: the preemptible consumers to remove first "
                   "(empty when it fits as things are), sorted by UUID, with what a "
                   "POST /allocations that empties their allocations needs.",
    "items": {
        "type": "object",
        "properties": {"consumer_uuid": UUID, "consumer_generation": {"type": "integer"},
                       "project_id": {"type": "string"}, "user_id": {"type": "string"},
                       "consumer_type": {"type": "string"}},
        "required": ["consumer_uuid", "consumer_generation", "project_id", "user_id",
                     "consumer_type"],
    },
}
ALLOCATION_CANDIDATES = {
    "type": "object",
    "properties": {
        "allocation_requests": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "allocations": {"anyOf": [{
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {"resources": _RESOURCES},
                            "required": ["resources"],
                        },
                    }, _LISTED_ALLOCATIONS]},
                    "mappings": {
                        "type": "object",
                        "additionalProperties": {"type": "array", "items": UUID},
                    },
                    "displaces": _DISPLACES,
                    "evicts": _EVICTS,
                },
                "required": ["allocations"],
            },
        },
        "provider_summaries": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "properties": {
                    "resources": {
                        "type": "object",
                        "additionalProperties": {
                            "type": "object",
                            "properties": {"capacity": {"type": "integer"},
                                           "used": {"type": "integer"}},
                            "required": ["capacity", "used"],
                        },
                    },
                    "traits": {"type": "array", "items": {"type": "string"}},
                    "parent_provider_uuid": NULLABLE_UUID,
                    "root_provider_uuid": UUID,
                },
                "required": ["resources"],
            },
        },
    },
    "required": ["allocation_requests", "provider_summaries"],
    "additionalProperties": False,
}

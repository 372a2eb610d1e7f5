"""Request-body schemas and the validators made from them."""

from __future__ import annotations

import uuid

import jsonschema
import pytest

from allotment.api import (
    aggregates,
    allocations,
    body,
    inventories,
    provider_traits,
    reshaper,
    resource_classes,
    resource_providers,
    schema,
)
from allotment.api.compiled_schema import compile_check
from allotment.api.schema import first_error


def test_per_request_schemas_share_one_validator():
    # POST /allocations and POST /reshaper build their schema from the
    # microversion; validators are remembered by schema object, so each
    # request must get the same object or the cache grows without end.
    for build in (allocations.by_consumer, reshaper.schema):
        assert build((1, 39)) is build((1, 39))
        made = {id(schema.validator(build((1, 39)), format_checker=body.FORMAT_CHECKER))
                for _ in range(3)}
        assert len(made) == 1


VALID_BODIES = [
    (inventories.PUT_ALL_SCHEMA, {"resource_provider_generation": 1, "inventories": {
        "VCPU": {"total": 8, "allocation_ratio": 16.0},
        "MEMORY_MB": {"total": 1024, "reserved": 1.0}}}),
    (resource_providers.post_schema((1, 39)),
     {"name": "n", "uuid": "2290D4AF9E6E400B9D651EE01376F71A", "parent_provider_uuid": None}),
    (provider_traits.PUT_SCHEMA, {"traits": ["A", "B"], "resource_provider_generation": 0}),
    (allocations.by_consumer((1, 39)), {str(uuid.UUID(int=2)): {
        "allocations": {str(uuid.UUID(int=3)): {"resources": {"VCPU": 1}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None,
        "consumer_type": "INSTANCE"}}),
]


@pytest.fixture
def no_jsonschema_walk(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise AssertionError("jsonschema walked a body the compiled check accepts")
    monkeypatch.setattr(jsonschema.Draft202012Validator, "iter_errors", refuse)


@pytest.mark.parametrize(("schema", "instance"), VALID_BODIES)
def test_valid_bodies_skip_jsonschema(no_jsonschema_walk, schema, instance):
    assert schema.get("$schema") is None  # Draft 2020-12, what iter_errors is patched on
    assert first_error(instance, schema, format_checker=body.FORMAT_CHECKER) is None


def test_invalid_bodies_get_jsonschemas_error():
    error = first_error({"name": 1}, resource_classes.CUSTOM_CLASS_SCHEMA,
                        format_checker=body.FORMAT_CHECKER)
    assert error.message == "1 is not of type 'string'"


@pytest.mark.parametrize(("schema", "instance"), [
    # fastjsonschema's $ is the end of the string; re.search's $ also
    # matches before a trailing newline, and jsonschema has the last word.
    (resource_classes.CUSTOM_CLASS_SCHEMA, {"name": "CUSTOM_A\n"}),
    # An integral float is an integer to both.
    (provider_traits.PUT_SCHEMA, {"traits": [], "resource_provider_generation": 1.0}),
])
def test_compiled_check_refusing_more_still_accepts(schema, instance):
    assert first_error(instance, schema, format_checker=body.FORMAT_CHECKER) is None


@pytest.mark.parametrize(("schema", "instance"), [
    (provider_traits.PUT_SCHEMA, {"traits": ("A",), "resource_provider_generation": 1}),
    (provider_traits.PUT_SCHEMA, {"traits": [], "resource_provider_generation": True}),
    (provider_traits.PUT_SCHEMA, {"traits": [], "resource_provider_generation": 1.5}),
    (resource_providers.post_schema((1, 39)), {"name": "n", "uuid": "not-a-uuid"}),
    (aggregates.PUT_SCHEMA_1_1, [str(uuid.UUID(int=1))] * 2),
])
def test_compiled_check_refuses_what_jsonschema_refuses(schema, instance):
    fast = compile_check(schema, body.FORMAT_CHECKER)
    with pytest.raises(Exception):  # noqa: B017 - any exception means "not accepted"
        fast(instance)
    assert first_error(instance, schema, format_checker=body.FORMAT_CHECKER) is not None


def test_formats_use_the_given_checker():
    seen = []
    checker = jsonschema.FormatChecker(formats=())

    @checker.checks("uuid")
    def anything(value: object) -> bool:
        seen.append(value)
        return value == "yes"

    schema = {"type": "string", "format": "uuid"}
    fast = compile_check(schema, checker)
    fast("yes")
    with pytest.raises(Exception):  # noqa: B017
        fast("no")
    assert seen == ["yes", "no"]


@pytest.mark.parametrize("schema", [
    {"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}, "$defs": {"x": {}}},
    {"oneOf": [{"type": "string"}]},
    {"type": "object", "properties": {"a": {"type": "integer", "default": 1}}},
    {"type": "string", "pattern": "^(?!x)a$"},
    {"format": "uuid"},
    {"enum": [1, True]},
    {"type": "array", "uniqueItems": True},
    {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"},
])
def test_unsupported_schemas_are_left_to_jsonschema(schema):
    assert compile_check(schema, body.FORMAT_CHECKER) is None

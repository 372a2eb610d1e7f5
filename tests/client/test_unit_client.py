"""The client against a scripted transport: headers, versions, typed errors."""

from __future__ import annotations

import pytest

from allotment.client import (
    PlacementClient,
    exceptions,
)
from allotment.client.exceptions import from_response
from tests.client.fakes import FakeTransport, error_body


@pytest.fixture
def fake() -> FakeTransport:
    return FakeTransport()


def test_every_call_sends_an_explicit_microversion(fake):
    client = PlacementClient(fake, microversion="1.30")
    fake.reply(200, {"resource_classes": []})
    fake.reply(200, {"resource_classes": []})
    client.resource_classes.list()
    client.resource_classes.list(version="1.7")
    assert [s.version for s in fake.sent] == ["placement 1.30", "placement 1.7"]
    assert all(s.headers["Accept"] == "application/json" for s in fake.sent)


def test_a_feature_above_the_version_is_refused_before_sending(fake):
    client = PlacementClient(fake, microversion="1.29")
    with pytest.raises(exceptions.MicroversionUnsupported) as info:
        client.reshaper.reshape({}, {})
    assert info.value.needed == "1.30"
    with pytest.raises(exceptions.MicroversionUnsupported):
        client.providers.list(in_tree="x", version="1.13")
    assert fake.sent == []


def test_invalid_default_microversion_is_rejected(fake):
    with pytest.raises(ValueError):
        PlacementClient(fake, microversion="latest")


@pytest.mark.parametrize(("status", "code", "detail", "cls"), [
    (409, "placement.concurrent_update", "x", exceptions.GenerationConflict),
    (409, "placement.inventory.inuse", "x", exceptions.InventoryInUse),
    (409, "placement.duplicate_name", "x", exceptions.DuplicateName),
    (409, "placement.resource_provider.inuse", "x", exceptions.ResourceProviderInUse),
    (409, "placement.resource_provider.cannot_delete_parent", "x",
     exceptions.CannotDeleteParent),
    (404, "placement.resource_provider.not_found", "x", exceptions.ResourceProviderNotFound),
    (400, "placement.resource_provider.not_found", "x", exceptions.ResourceProviderNotFound),
    (400, "placement.query.bad_value", "x", exceptions.InvalidQuery),
    (400, None, "bad", exceptions.BadRequest),
    (401, None, "who", exceptions.Unauthorized),
    (403, None, "no", exceptions.Forbidden),
    (404, None, "gone", exceptions.NotFound),
    (405, None, "no", exceptions.MethodNotAllowed),
    (406, None, "Invalid microversion: 1.99", exceptions.MicroversionNotAvailable),
    (409, None, "something", exceptions.Conflict),
    (415, None, "type", exceptions.UnsupportedMediaType),
    (500, None, "boom", exceptions.ServerError),
    (503, None, "later", exceptions.ServerError),
    # Before 1.23 there are no codes; the detail text decides.
    (409, None, "resource provider generation conflict", exceptions.GenerationConflict),
    (409, None, "Inventory for 'VCPU' on resource provider 'x' in use.",
     exceptions.InventoryInUse),
    (409, "placement.concurrent_update", "Inventory for 'VCPU' on resource provider 'x' in use.",
     exceptions.InventoryInUse),
    (409, None, "Unable to delete resource provider x: Resource provider has allocations.",
     exceptions.ResourceProviderInUse),
])
def test_errors_become_typed_exceptions(fake, status, code, detail, cls):
    client = PlacementClient(fake)
    fake.reply(status, error_body(status, detail, code, request_id="req-42"))
    with pytest.raises(exceptions.ApiError) as info:
        client.get("/somewhere")
    err = info.value
    assert type(err) is cls
    assert err.status == status
    assert err.code == (code or exceptions.UNDEFINED_CODE)
    assert err.detail == detail
    assert err.request_id == "req-42"
    assert err.method == "GET" and err.path == "/somewhere"


def test_error_without_a_json_body_keeps_its_text():
    err = from_response(502, b"<html>bad gateway</html>", {"X-Openstack-Request-Id": "r"})
    assert isinstance(err, exceptions.ServerError)
    assert "bad gateway" in err.detail
    assert err.request_id == "r"


def test_a_code_never_changes_the_status_family():
    # A query code on a 409 would be nonsense; the status wins.
    err = from_response(409, b'{"errors": [{"code": "placement.query.bad_value"}]}', {})
    assert type(err) is exceptions.Conflict


def test_negotiate_caps_the_version_at_the_servers_maximum(fake):
    fake.reply(200, {"versions": [{"id": "v1.0", "status": "CURRENT",
                                   "min_version": "1.0", "max_version": "1.29"}]})
    client = PlacementClient(fake)
    assert client.negotiate() == "1.29"
    assert client.microversion == "1.29"
    fake.reply(200, {"versions": [{"id": "v1.0", "status": "CURRENT",
                                   "min_version": "1.0", "max_version": "1.39"}]})
    assert client.negotiate("1.31") == "1.31"


def test_provider_creation_before_1_20_reads_the_location(fake):
    client = PlacementClient(fake, microversion="1.14")
    fake.reply(201, None, {"Location": "/resource_providers/abc"})
    fake.reply(200, {"uuid": "abc", "name": "n", "generation": 0,
                     "parent_provider_uuid": None, "root_provider_uuid": "abc"})
    provider = client.providers.create("n")
    assert provider.uuid == "abc"
    assert [s.method for s in fake.sent] == ["POST", "GET"]
    assert fake.sent[1].path == "/resource_providers/abc"


def test_aggregates_body_follows_the_microversion(fake):
    client = PlacementClient(fake)
    fake.reply(200, {"aggregates": ["a"], "resource_provider_generation": 3})
    fake.reply(200, {"aggregates": ["a"]})
    assert client.aggregates.set("rp", ["a"], 2).resource_provider_generation == 3
    assert client.aggregates.set("rp", ["a"], version="1.1").resource_provider_generation is None
    assert fake.sent[0].json == {"aggregates": ["a"], "resource_provider_generation": 2}
    assert fake.sent[1].json == ["a"]
    with pytest.raises(ValueError):
        client.aggregates.set("rp", ["a"])


def test_allocation_writes_follow_the_microversion(fake):
    client = PlacementClient(fake)
    client.allocations.put("c", {"rp": {"generation": 4, "resources": {"VCPU": 1}}},
                           project_id="p", user_id="u", consumer_generation=None)
    client.allocations.put("c", {"rp": {"VCPU": 2}}, project_id="p", user_id="u",
                           version="1.12")
    assert fake.sent[0].json == {
        "allocations": {"rp": {"resources": {"VCPU": 1}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}
    assert fake.sent[1].json == {
        "allocations": {"rp": {"resources": {"VCPU": 2}}}, "project_id": "p", "user_id": "u"}


def test_reshaper_payload_strips_read_only_fields(fake):
    client = PlacementClient(fake, microversion="1.30")
    client.reshaper.reshape(
        {"rp": {"inventories": {"VGPU": {"total": 2}}, "resource_provider_generation": 5}},
        {"c": {"allocations": {"rp": {"generation": 5, "resources": {"VGPU": 1}}},
               "project_id": "p", "user_id": "u", "consumer_generation": 1,
               "consumer_type": "INSTANCE"}})
    assert fake.sent[0].path == "/reshaper"
    assert fake.sent[0].json == {
        "inventories": {"rp": {"inventories": {"VGPU": {"total": 2}},
                               "resource_provider_generation": 5}},
        "allocations": {"c": {"allocations": {"rp": {"resources": {"VGPU": 1}}},
                              "project_id": "p", "user_id": "u",
                              "consumer_generation": 1}}}


def test_path_segments_are_quoted(fake):
    client = PlacementClient(fake)
    client.traits.delete("CUSTOM_A/B")
    assert fake.sent[0].path == "/traits/CUSTOM_A%2FB"


def test_transport_error_on_a_dead_endpoint():
    client = PlacementClient.from_url("http://127.0.0.1:9", token="admin", timeout=2)
    with pytest.raises(exceptions.TransportError):
        client.resource_classes.list()

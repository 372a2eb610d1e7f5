"""/resource_providers and /resource_providers/{uuid}: create, show, update, delete."""

from __future__ import annotations

import uuid as uuidlib

import pytest

PROJECT = "6e4b0c4e-bc1a-4b55-a9a1-8f1d3c4a5b6c"
USER = "0d2c3b4a-1e2f-4a5b-8c9d-0e1f2a3b4c5d"


def new_uuid() -> str:
    return str(uuidlib.uuid4())


def create(api, name: str, *, parent: str | None = None, uuid: str | None = None) -> str:
    body: dict = {"name": name}
    if parent is not None:
        body["parent_provider_uuid"] = parent
    if uuid is not None:
        body["uuid"] = uuid
    resp = api.post("/resource_providers", json=body)
    assert resp.status == 200, resp
    return resp.json["uuid"]


def allocate(api, provider: str, resources: dict[str, int]) -> str:
    consumer = new_uuid()
    resp = api.put(f"/allocations/{consumer}", json={
        "allocations": {provider: {"resources": resources}},
        "project_id": PROJECT, "user_id": USER, "consumer_generation": None},
        version="1.28")
    assert resp.status == 204, resp
    return consumer


# -- create ----------------------------------------------------------------

@pytest.mark.parametrize("version", ["1.0", "1.14", "1.19"])
def test_create_before_1_20_is_201_without_body(api, version):
    resp = api.post("/resource_providers", json={"name": "rp"}, version=version)
    assert resp.status == 201
    assert resp.text == ""
    assert "content-type" not in resp.headers
    location = resp.headers["location"]
    uuid = location.rsplit("/", 1)[1]
    assert location.endswith(f"/resource_providers/{uuid}")
    assert api.get(f"/resource_providers/{uuid}").json["name"] == "rp"


def test_create_from_1_20_returns_provider_with_200(api):
    uuid = new_uuid()
    resp = api.post("/resource_providers", json={"name": "rp", "uuid": uuid}, version="1.20")
    assert resp.status == 200
    assert resp.headers["location"].endswith(f"/resource_providers/{uuid}")
    body = resp.json
    assert body["uuid"] == uuid and body["name"] == "rp" and body["generation"] == 0
    assert body["parent_provider_uuid"] is None
    assert body["root_provider_uuid"] == uuid
    assert resp.headers["cache-control"] == "no-cache"
    assert resp.headers["last-modified"].endswith("GMT")


def test_create_normalises_uuid_spelling(api):
    raw = "2290D4AF9E6E400B9D651EE01376F71A"
    resp = api.post("/resource_providers", json={"name": "rp", "uuid": raw})
    assert resp.json["uuid"] == "2290d4af-9e6e-400b-9d65-1ee01376f71a"
    dup = api.post("/resource_providers", json={
        "name": "other", "uuid": "2290d4af-9e6e-400b-9d65-1ee01376f71a"})
    assert dup.status == 409
    assert ("Conflicting resource provider uuid: 2290d4af-9e6e-400b-9d65-1ee01376f71a "
            "already exists") in dup.error()["detail"]
    assert dup.error()["code"] == "placement.duplicate_name"


def test_create_duplicate_name(api):
    create(api, "same")
    resp = api.post("/resource_providers", json={"name": "same"})
    assert resp.status == 409
    assert "Conflicting resource provider name: same already exists" in resp.error()["detail"]
    assert resp.error()["code"] == "placement.duplicate_name"


def test_create_duplicate_uuid_and_name(api):
    uuid = create(api, "same")
    resp = api.post("/resource_providers", json={"name": "same", "uuid": uuid})
    assert resp.status == 409
    assert f"uuid: {uuid}, name: same" in resp.error()["detail"]


@pytest.mark.parametrize("body, fragment", [
    ({}, "'name' is a required property"),
    ({"name": "x" * 201}, "Failed validating 'maxLength'"),
    ({"name": "rp", "uuid": "not-a-uuid"}, "Failed validating 'format'"),
    ({"name": 5}, "is not of type 'string'"),
    ({"name": "rp", "extra": 1}, "Additional properties are not allowed"),
])
def test_create_bad_bodies(api, body, fragment):
    resp = api.post("/resource_providers", json=body)
    assert resp.status == 400
    assert "JSON does not validate" in resp.error()["detail"]
    assert fragment in resp.error()["detail"]
    assert api.get("/resource_providers").json["resource_providers"] == []


def test_create_parent_needs_1_14(api):
    parent = create(api, "parent")
    resp = api.post("/resource_providers", json={
        "name": "child", "parent_provider_uuid": parent}, version="1.13")
    assert resp.status == 400
    assert "Additional properties are not allowed" in resp.error()["detail"]


def test_create_malformed_json_and_media_type(api):
    resp = api.post("/resource_providers", body='{"name": }', content_type="application/json")
    assert resp.status == 400
    assert "Malformed JSON" in resp.error()["detail"]
    resp = api.post("/resource_providers", body='{"name": "a"}', content_type="text/plain")
    assert resp.status == 415


def test_unicode_names_up_to_200_characters(api):
    name = "☃" * 200
    uuid = create(api, name)
    assert api.get(f"/resource_providers/{uuid}").json["name"] == name
    resp = api.get(f"/resource_providers?name={'%E2%98%83' * 200}")
    assert [p["uuid"] for p in resp.json["resource_providers"]] == [uuid]


def test_create_child_and_grandchild(api):
    root = create(api, "root")
    child = create(api, "child", parent=root)
    grandchild = create(api, "grandchild", parent=child)
    body = api.get(f"/resource_providers/{grandchild}").json
    assert body["parent_provider_uuid"] == child
    assert body["root_provider_uuid"] == root


def test_create_self_parent_and_missing_parent(api):
    uuid = new_uuid()
    resp = api.post("/resource_providers", json={
        "name": "child", "uuid": uuid, "parent_provider_uuid": uuid})
    assert resp.status == 400
    detail = resp.error()["detail"]
    assert f'Unable to create resource provider "child", {uuid}:' in detail
    assert "parent provider UUID cannot be same as UUID" in detail
    resp = api.post("/resource_providers", json={
        "name": "child", "parent_provider_uuid": new_uuid()})
    assert resp.status == 400
    assert "parent provider UUID does not exist." in resp.error()["detail"]


# -- show ------------------------------------------------------------------

LINKS = {
    "1.0": ["self", "inventories", "usages"],
    "1.1": ["self", "inventories", "usages", "aggregates"],
    "1.6": ["self", "inventories", "usages", "aggregates", "traits"],
    "1.11": ["self", "inventories", "usages", "aggregates", "traits", "allocations"],
    "1.39": ["self", "inventories", "usages", "aggregates", "traits", "allocations"],
}


@pytest.mark.parametrize("version", sorted(LINKS))
def test_links_grow_with_microversions(api, version):
    uuid = create(api, "rp")
    body = api.get(f"/resource_providers/{uuid}", version=version).json
    assert [link["rel"] for link in body["links"]] == LINKS[version]
    base = f"/resource_providers/{uuid}"
    assert body["links"][0]["href"] == base
    for link in body["links"][1:]:
        assert link["href"] == f"{base}/{link['rel']}"
    listed = api.get("/resource_providers", version=version).json["resource_providers"]
    assert listed[0]["links"] == body["links"]


def test_tree_fields_from_1_14(api):
    uuid = create(api, "rp")
    assert "root_provider_uuid" not in api.get(f"/resource_providers/{uuid}",
                                               version="1.13").json
    body = api.get(f"/resource_providers/{uuid}", version="1.14").json
    assert body["root_provider_uuid"] == uuid
    assert body["parent_provider_uuid"] is None


def test_cache_headers_from_1_15(api):
    uuid = create(api, "rp")
    old = api.get(f"/resource_providers/{uuid}", version="1.14")
    assert "last-modified" not in old.headers and "cache-control" not in old.headers
    new = api.get(f"/resource_providers/{uuid}", version="1.15")
    assert new.headers["cache-control"] == "no-cache"
    assert new.headers["last-modified"].endswith("GMT")


@pytest.mark.parametrize("path", [
    "/resource_providers/d67370b5-4dc0-470d-a4fa-85e8e89abc6c",
    "/resource_providers/not-a-uuid",
    "/resource_providers/" + "a" * 300,
    "/resource_providers/%00",
])
def test_show_missing_or_malformed_is_404(api, path):
    resp = api.get(path)
    assert resp.status == 404
    assert "No resource provider with uuid" in resp.error()["detail"]


def test_show_missing_message(api):
    resp = api.get("/resource_providers/d67370b5-4dc0-470d-a4fa-85e8e89abc6c")
    assert ("No resource provider with uuid d67370b5-4dc0-470d-a4fa-85e8e89abc6c found"
            in resp.error()["detail"])


# -- update ----------------------------------------------------------------

def test_rename(api):
    uuid = create(api, "old")
    resp = api.put(f"/resource_providers/{uuid}", json={"name": "new name"}, version="1.15")
    assert resp.status == 200
    assert resp.json["name"] == "new name" and resp.json["generation"] == 0
    assert "location" not in resp.headers
    assert resp.headers["last-modified"].endswith("GMT")
    assert api.get(f"/resource_providers/{uuid}").json["name"] == "new name"


def test_rename_to_taken_name(api):
    create(api, "taken")
    uuid = create(api, "mine")
    resp = api.put(f"/resource_providers/{uuid}", json={"name": "taken"})
    assert resp.status == 409
    assert "Conflicting resource provider taken already exists." in resp.error()["detail"]
    assert resp.error()["code"] == "placement.duplicate_name"
    assert api.get(f"/resource_providers/{uuid}").json["name"] == "mine"


@pytest.mark.parametrize("body", [{}, {"name": "x", "uuid": new_uuid()}, {"name": "y" * 201}])
def test_update_bad_bodies(api, body):
    uuid = create(api, "rp")
    resp = api.put(f"/resource_providers/{uuid}", json=body)
    assert resp.status == 400
    assert "JSON does not validate" in resp.error()["detail"]


def test_update_missing_provider(api):
    resp = api.put(f"/resource_providers/{new_uuid()}", json={"name": "x"})
    assert resp.status == 404


def test_update_parent_needs_1_14(api):
    parent, uuid = create(api, "parent"), create(api, "rp")
    resp = api.put(f"/resource_providers/{uuid}", json={
        "name": "rp", "parent_provider_uuid": parent}, version="1.13")
    assert resp.status == 400


def test_give_a_root_a_parent_from_1_14(api):
    parent = create(api, "parent")
    uuid = create(api, "rp")
    kid = create(api, "kid", parent=uuid)
    resp = api.put(f"/resource_providers/{uuid}", json={
        "name": "rp", "parent_provider_uuid": parent}, version="1.14")
    assert resp.status == 200
    assert resp.json["parent_provider_uuid"] == parent
    assert resp.json["root_provider_uuid"] == parent
    # The whole subtree follows.
    assert api.get(f"/resource_providers/{kid}").json["root_provider_uuid"] == parent


def test_update_without_parent_keeps_it(api):
    parent = create(api, "parent")
    uuid = create(api, "rp", parent=parent)
    resp = api.put(f"/resource_providers/{uuid}", json={"name": "renamed"}, version="1.36")
    assert resp.status == 200
    assert resp.json["parent_provider_uuid"] == parent


@pytest.mark.parametrize("version", ["1.14", "1.36"])
def test_reparent_and_unparent_refused_before_1_37(api, version):
    first, second = create(api, "first"), create(api, "second")
    uuid = create(api, "rp", parent=first)
    resp = api.put(f"/resource_providers/{uuid}", json={
        "name": "rp", "parent_provider_uuid": second}, version=version)
    assert resp.status == 400
    assert "re-parenting a provider is not currently allowed." in resp.error()["detail"]
    resp = api.put(f"/resource_providers/{uuid}", json={
        "name": "rp", "parent_provider_uuid": None}, version=version)
    assert resp.status == 400
    assert "un-parenting a provider is not currently allowed." in resp.error()["detail"]
    # Naming the current parent again is fine.
    resp = api.put(f"/resource_providers/{uuid}", json={
        "name": "rp", "parent_provider_uuid": first}, version=version)
    assert resp.status == 200


def test_reparent_moves_the_subtree_from_1_37(api):
    first, second = create(api, "first"), create(api, "second")
    mid = create(api, "mid", parent=first)
    leaf = create(api, "leaf", parent=mid)
    resp = api.put(f"/resource_providers/{mid}", json={
        "name": "mid", "parent_provider_uuid": second}, version="1.37")
    assert resp.status == 200
    assert resp.json["parent_provider_uuid"] == second
    assert resp.json["root_provider_uuid"] == second
    assert api.get(f"/resource_providers/{leaf}").json["root_provider_uuid"] == second
    tree = api.get(f"/resource_providers?in_tree={first}").json["resource_providers"]
    assert [p["uuid"] for p in tree] == [first]

    resp = api.put(f"/resource_providers/{mid}", json={
        "name": "mid", "parent_provider_uuid": None}, version="1.37")
    assert resp.status == 200
    assert resp.json["parent_provider_uuid"] is None
    assert resp.json["root_provider_uuid"] == mid
    leaf_body = api.get(f"/resource_providers/{leaf}").json
    assert leaf_body["root_provider_uuid"] == mid and leaf_body["parent_provider_uuid"] == mid


def test_no_loops(api):
    top = create(api, "top")
    mid = create(api, "mid", parent=top)
    leaf = create(api, "leaf", parent=mid)
    for target, parent in ((top, top), (top, leaf), (mid, leaf), (mid, mid)):
        resp = api.put(f"/resource_providers/{target}", json={
            "name": "x" + target[:8], "parent_provider_uuid": parent}, version="1.37")
        assert resp.status == 400, (target, parent)
        assert "creating loop in the provider tree is not allowed." in resp.error()["detail"]
    assert api.get(f"/resource_providers/{top}").json["name"] == "top"
    assert api.get(f"/resource_providers/{leaf}").json["root_provider_uuid"] == top


def test_update_to_missing_parent(api):
    uuid = create(api, "rp")
    resp = api.put(f"/resource_providers/{uuid}", json={
        "name": "rp", "parent_provider_uuid": new_uuid()})
    assert resp.status == 400
    assert "parent provider UUID does not exist." in resp.error()["detail"]


# -- delete ----------------------------------------------------------------

def test_delete(api):
    uuid = create(api, "rp")
    api.put(f"/resource_providers/{uuid}/traits", json={
        "traits": ["HW_CPU_X86_AVX2"], "resource_provider_generation": 0})
    api.put(f"/resource_providers/{uuid}/aggregates", json={
        "aggregates": [new_uuid()], "resource_provider_generation": 1})
    api.put(f"/resource_providers/{uuid}/inventories", json={
        "inventories": {"VCPU": {"total": 4}}, "resource_provider_generation": 2})
    resp = api.delete(f"/resource_providers/{uuid}")
    assert resp.status == 204 and resp.text == ""
    assert api.get(f"/resource_providers/{uuid}").status == 404
    # A name freed by deletion can be used again.
    create(api, "rp")


def test_delete_missing(api):
    resp = api.delete("/resource_providers/d67370b5-4dc0-470d-a4fa-85e8e89abc6c")
    assert resp.status == 404
    assert ("No resource provider with uuid d67370b5-4dc0-470d-a4fa-85e8e89abc6c found "
            "for delete") in resp.error()["detail"]


def test_delete_parent_refused_then_last_child_leaves_valid_tree(api):
    root = create(api, "root")
    child = create(api, "child", parent=root)
    resp = api.delete(f"/resource_providers/{root}")
    assert resp.status == 409
    assert resp.error()["code"] == "placement.resource_provider.cannot_delete_parent"
    assert (f"Unable to delete parent resource provider {root}: It has child resource "
            "providers.") in resp.error()["detail"]
    assert api.delete(f"/resource_providers/{child}").status == 204
    tree = api.get(f"/resource_providers?in_tree={root}").json["resource_providers"]
    assert [(p["uuid"], p["root_provider_uuid"]) for p in tree] == [(root, root)]
    assert api.delete(f"/resource_providers/{root}").status == 204


def test_delete_with_allocations_refused(api):
    uuid = create(api, "rp")
    api.put(f"/resource_providers/{uuid}/inventories", json={
        "inventories": {"VCPU": {"total": 4}}, "resource_provider_generation": 0})
    allocate(api, uuid, {"VCPU": 1})
    resp = api.delete(f"/resource_providers/{uuid}")
    assert resp.status == 409
    assert resp.error()["code"] == "placement.resource_provider.inuse"
    assert (f"Unable to delete resource provider {uuid}: Resource provider has "
            "allocations.") in resp.error()["detail"]
    assert api.get(f"/resource_providers/{uuid}/inventories").json["inventories"]


def test_error_codes_absent_before_1_23(api):
    create(api, "same")
    resp = api.post("/resource_providers", json={"name": "same"}, version="1.22")
    assert resp.status == 409
    assert "code" not in resp.error()

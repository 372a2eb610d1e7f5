"""GET /resource_providers with ``Allotment-Extensions: 1``: every provider
with its inventories, usages, traits and aggregates in one answer, equal to
what each reading gives."""

from __future__ import annotations

from tests.api.test_metrics import populate


def test_details_equal_each_reading(api):
    populate(api)
    resp = api.get("/resource_providers", headers={"Allotment-Extensions": "1"})
    assert resp.status == 200
    assert resp.headers["Allotment-Extensions"] == "1"
    listed = resp.json["resource_providers"]
    plain = api.get("/resource_providers").json["resource_providers"]
    assert [p["uuid"] for p in listed] == [p["uuid"] for p in plain]
    for p in listed:
        base = f"/resource_providers/{p['uuid']}"
        assert p["inventories"] == api.get(f"{base}/inventories").json["inventories"]
        assert p["usages"] == api.get(f"{base}/usages").json["usages"]
        assert p["traits"] == sorted(api.get(f"{base}/traits").json["traits"])
        assert p["aggregates"] == sorted(api.get(f"{base}/aggregates").json["aggregates"])
        # The plain entry, but for its links (what they point at is there).
        same = next(q for q in plain if q["uuid"] == p["uuid"])
        assert {k: v for k, v in p.items()
                if k not in ("inventories", "usages", "traits", "aggregates")} == {
            k: v for k, v in same.items() if k != "links"}


def test_filters_apply(api):
    w = populate(api)
    resp = api.get(f"/resource_providers?in_tree={w.uuids['cn1']}",
                   headers={"Allotment-Extensions": "1"})
    assert {p["name"] for p in resp.json["resource_providers"]} == {"cn1", "cn1-numa0"}


def test_without_the_header_nothing_is_added(api):
    populate(api)
    for p in api.get("/resource_providers").json["resource_providers"]:
        assert "inventories" not in p


def test_an_unknown_level_is_refused(api):
    resp = api.get("/resource_providers", headers={"Allotment-Extensions": "2"})
    assert resp.status == 400


def test_each_added_reading_needs_its_own_rule(database_url, db, tmp_path):
    from allotment.server.app import create_app
    from tests.conftest import make_conf
    from tests.harness.wsgi_client import Client

    policy = tmp_path / "policy.yaml"
    policy.write_text('"placement:resource_providers:traits:list": "!"\n')
    conf = make_conf(database_url, oslo_policy={"policy_file": str(policy)})
    api = Client(create_app(conf, db=db))
    populate(api)
    assert api.get("/resource_providers").status == 200
    resp = api.get("/resource_providers", headers={"Allotment-Extensions": "1"})
    assert resp.status == 403


def test_details_follow_writes(api):
    w = populate(api)

    def cn1() -> dict:
        listed = api.get("/resource_providers", headers={"Allotment-Extensions": "1"})
        return next(p for p in listed.json["resource_providers"] if p["name"] == "cn1")

    assert cn1()["usages"]["VCPU"] == 4
    w.use("cn1", {"VCPU": 2})
    w.set_traits("cn1", ["HW_CPU_X86_AVX2"])
    assert cn1()["usages"]["VCPU"] == 6
    assert cn1()["traits"] == ["HW_CPU_X86_AVX2"]
    # Another microversion, another shape: no parent or root before 1.14.
    old = api.get("/resource_providers", version="1.10", headers={"Allotment-Extensions": "1"})
    assert "root_provider_uuid" not in old.json["resource_providers"][0]

"""Transports: keystoneauth1 sessions, PlacementDirect, older microversions."""

from __future__ import annotations

import pytest
from keystoneauth1 import adapter, session, token_endpoint

from allotment.client import (
    PlacementClient,
    exceptions,
)
from allotment.server.in_process import PlacementDirect
from tests.client.helpers import new_uuid
from tests.conftest import make_conf


def test_keystone_session_and_adapter(live_server, db):
    sess = session.Session(auth=token_endpoint.Token(live_server, "admin"))
    client = PlacementClient.from_session(sess, interface="public", region_name="RegionOne")
    rp = client.providers.create("ks-host")
    assert client.providers.get(rp.uuid).name == "ks-host"
    with pytest.raises(exceptions.DuplicateName):
        client.providers.create("ks-host")
    via_adapter = PlacementClient.from_session(
        adapter.Adapter(sess, service_type="placement"), microversion="1.14")
    assert [p.uuid for p in via_adapter.providers.list(name="ks-host")] == [rp.uuid]
    assert via_adapter.versions()["max_version"] == "1.39"


def test_keystone_session_connection_failure_is_a_transport_error():
    sess = session.Session(auth=token_endpoint.Token("http://127.0.0.1:9", "admin"))
    client = PlacementClient.from_session(sess)
    with pytest.raises(exceptions.TransportError):
        client.traits.list()


def test_placement_direct_from_a_database_url(database_url, db, connect):
    other = connect()
    rp = other.providers.create("seen-from-both")
    with PlacementDirect(database_url=database_url,
                         overrides={"placement": {"max_allocation_candidates": 3}},
                         microversion="1.20") as client:
        assert client.microversion == "1.20"
        assert client.providers.get(rp.uuid).name == "seen-from-both"
        made = client.providers.create("made-offline")
    assert other.providers.get(made.uuid).name == "made-offline"


def test_placement_direct_forces_noauth_on_a_given_conf(database_url, db):
    conf = make_conf(database_url, api={"auth_strategy": "keystone"})
    with PlacementDirect(conf) as client:
        assert client.traits.exists("HW_CPU_X86_AVX2")
    assert conf.api.auth_strategy == "noauth2"


def test_placement_direct_rejects_mixed_configuration(database_url):
    with pytest.raises(ValueError):
        PlacementDirect(make_conf(database_url), database_url=database_url)


def test_old_microversions_take_their_own_paths(connect):
    client = connect(microversion="1.14")
    # Before 1.20 creation answers with a Location only.
    root = client.providers.create("old-host")
    assert root.generation == 0
    child = client.providers.create("old-host_child", parent_provider_uuid=root.uuid)
    agg = new_uuid()
    # Before 1.19 aggregates carry no generation.
    got = client.aggregates.set(root.uuid, [agg])
    assert got.aggregates == {agg} and got.resource_provider_generation is None
    with pytest.raises(exceptions.MicroversionUnsupported):
        client.providers.update(child.uuid, name="x", parent_provider_uuid=None,
                                version="1.13")
    # The same call a newer client makes, down-versioned per call.
    assert client.providers.get(child.uuid, version="1.5").root_provider_uuid == child.uuid
    latest = connect()
    assert latest.aggregates.get(root.uuid).resource_provider_generation is not None


def test_tree_sync_at_an_older_microversion(connect):
    client = connect(microversion="1.18")
    root = new_uuid()
    tree = client.get_provider_tree_and_ensure_root("host-118", root)
    child = tree.new_child("host-118_numa0", root)
    tree.update_inventory(child, {"VCPU": {"total": 4}})
    tree.add_aggregates(root, new_uuid())
    tree.add_traits(child, "CUSTOM_OLD_STYLE")
    client.update_from_provider_tree(tree)
    fresh = connect().get_provider_tree_and_ensure_root("host-118", root)
    assert fresh.data(child).inventory["VCPU"]["total"] == 4
    assert fresh.data(root).aggregates == tree.data(root).aggregates
    assert fresh.data(child).traits == {"CUSTOM_OLD_STYLE"}


def test_negotiation_against_the_service(connect):
    client = connect(microversion="1.10")
    assert client.negotiate("1.25") == "1.25"
    assert client.negotiate() == "1.39"

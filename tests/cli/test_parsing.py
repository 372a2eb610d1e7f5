"""The CLI's own parsing and connection set-up, without a server."""

from __future__ import annotations

import click
import pytest
from keystoneauth1.identity import generic, v3

from allotment.cli import candidates_command as cand
from allotment.cli.connect import keystone_session
from allotment.cli.output import bar


def test_group_syntax():
    suffix, group = cand.parse_group(
        "_GPU resources=VGPU:1 required=CUSTOM_A,!CUSTOM_B required=in:X,Y "
        "member_of=!in:a1,a2 member_of=in:b1,b2")
    assert suffix == "_GPU"
    assert group.resources == {"VGPU": 1}
    assert "CUSTOM_A" in group.required and frozenset({"X", "Y"}) in group.required
    assert group.forbidden == ["CUSTOM_B"]
    assert group.member_of == [frozenset({"b1", "b2"})]
    assert group.forbidden_aggregates == ["a1", "a2"]
    assert dict(group.params("_GPU"))["member_of_GPU"] in ("in:b1,b2", "!in:a1,a2")


@pytest.mark.parametrize("text", ["resources=VGPU:1", "_G colour=red", "_G resources=VGPU",
                                  "_G resources=VGPU:0", ""])
def test_bad_groups(text):
    with pytest.raises(click.BadParameter):
        cand.parse_group(text)


def test_request_renders_placement_query():
    request = cand.build_request(
        resources="VCPU:2", required=(), member_of=(), in_tree=None,
        groups=("_NIC required=CUSTOM_PHYSNET", "_VF resources=SRIOV_NET_VF:1"),
        group_policy="none", same_subtree=("_NIC,_VF",), root_required="!CUSTOM_X",
        limit=5)
    params = request.params()
    assert ("required_NIC", "CUSTOM_PHYSNET") in params
    assert ("same_subtree", "_NIC,_VF") in params
    assert ("root_required", "!CUSTOM_X") in params and ("limit", "5") in params
    assert request.min_version() == "1.36"


def test_bar():
    assert bar(5, 10, width=10) == "[#####.....] 5/10 (50%)"
    assert bar(0, 0, width=4) == "[....] 0/0 (0%)"
    assert bar(30, 10, width=4).startswith("[####]")


def test_keystone_from_environment():
    sess, where = keystone_session(None, {
        "OS_AUTH_URL": "http://keystone.invalid/v3", "OS_USERNAME": "ops",
        "OS_PASSWORD": "secret", "OS_PROJECT_NAME": "admin",
        "OS_USER_DOMAIN_NAME": "Default", "OS_PROJECT_DOMAIN_NAME": "Default",
        "OS_REGION_NAME": "RegionTwo", "OS_INTERFACE": "internal"})
    assert isinstance(sess.auth, generic.Password)
    assert sess.auth._username == "ops"
    assert sess.auth.auth_url == "http://keystone.invalid/v3"
    assert where == {"region_name": "RegionTwo", "interface": "internal"}


def test_keystone_from_clouds_yaml(tmp_path, monkeypatch):
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        "clouds:\n  prod:\n    auth_type: v3applicationcredential\n"
        "    auth:\n      auth_url: http://keystone.invalid/v3\n"
        "      application_credential_id: abc\n      application_credential_secret: s\n"
        "    region_name: RegionOne\n")
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    sess, where = keystone_session("prod", {})
    assert isinstance(sess.auth, v3.ApplicationCredential)
    assert where["region_name"] == "RegionOne"
    with pytest.raises(click.UsageError):
        keystone_session("nope", {})

"""oslo's configuration and policy tools, through the entry points the
compatibility distribution registers under upstream's names and the main
one under allotment's, with the generator files shipped in etc/."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.conftest import run

ETC = Path(__file__).resolve().parents[2] / "etc"

# placement.conf as kolla-ansible renders it (its sections and options;
# the values made up).
KOLLA_CONF = """\
[DEFAULT]
debug = False
log_dir = /var/log/kolla/placement
state_path = /var/lib/placement

[api]
auth_strategy = keystone

[oslo_middleware]
enable_proxy_headers_parsing = True

[oslo_concurrency]
lock_path = /var/lib/placement/tmp

[cache]
backend = oslo_cache.memcache_pool
enabled = true
memcache_servers = 192.0.2.10:11211

[oslo_policy]
policy_file = policy.yaml

[placement_database]
connection = mysql+pymysql://placement:secret@192.0.2.10:3306/placement
max_retries = -1

[keystone_authtoken]
service_type = placement
www_authenticate_uri = http://192.0.2.10:5000
auth_url = http://192.0.2.10:5000
auth_type = password
project_domain_id = default
user_domain_id = default
project_name = service
username = placement
password = secret
region_name = RegionOne
cafile =
memcache_security_strategy = ENCRYPT
memcache_secret_key = secret
memcached_servers = 192.0.2.10:11211

[placement]
randomize_allocation_candidates = true

[profiler]
enabled = false
"""


@pytest.mark.parametrize("flavour", ["placement", "allotment"])
def test_config_validator_accepts_kollas_conf(tmp_path, flavour):
    conf = tmp_path / "placement.conf"
    conf.write_text(KOLLA_CONF)
    result = run("oslo-config-validator", "--config-file",
                 str(ETC / flavour / "config-generator.conf"), "--input-file", str(conf))
    assert result.returncode == 0, result.stdout + result.stderr


def test_config_validator_names_an_invalid_option(tmp_path):
    conf = tmp_path / "placement.conf"
    conf.write_text(KOLLA_CONF.replace("randomize_allocation_candidates",
                                       "randomise_allocation_candidates"))
    result = run("oslo-config-validator", "--config-file",
                 str(ETC / "placement" / "config-generator.conf"), "--input-file", str(conf))
    assert result.returncode == 1
    assert "placement/randomise_allocation_candidates is not part of the sample config" in (
        result.stdout + result.stderr)


def test_config_generator_writes_every_group(tmp_path):
    out = tmp_path / "placement.conf.sample"
    result = run("oslo-config-generator", "--config-file",
                 str(ETC / "placement" / "config-generator.conf"), "--output-file", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    for group in ("[api]", "[placement_database]", "[placement]", "[keystone_authtoken]",
                  "[oslo_policy]", "[cors]", "[profiler]", "[allotment]"):
        assert group in text
    assert "#allocation_candidates_generation_strategy = depth-first" in text


@pytest.mark.parametrize("flavour", ["placement", "allotment"])
def test_policy_sample_generator(tmp_path, flavour):
    out = tmp_path / "policy.yaml.sample"
    result = run("oslopolicy-sample-generator", "--config-file",
                 str(ETC / flavour / "policy-generator.conf"), "--output-file", str(out))
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    assert '#"placement:resource_providers:list": "rule:admin_or_service_api"' in text
    assert '#"admin_or_service_api": "role:admin or role:service"' in text


def test_policy_checker_through_the_enforcer_entry_point(tmp_path):
    # oslopolicy-list-redundant loads the enforcer registered as
    # "placement", which reads placement.conf where the service does
    # (here $OS_PLACEMENT_CONFIG_DIR) and the policy file it names.
    policy = tmp_path / "policy.yaml"
    policy.write_text('"admin_api": "role:admin"\n"placement:traits:list": "role:reader"\n')
    conf = tmp_path / "placement.conf"
    conf.write_text(f"[oslo_policy]\npolicy_file = {policy}\n")
    result = run("oslopolicy-list-redundant", "--namespace", "placement",
                 env={"OS_PLACEMENT_CONFIG_DIR": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    assert '"admin_api": "role:admin"' in result.stdout
    assert "placement:traits:list" not in result.stdout

"""Policy rules and enforcement: Placement's names, defaults and overrides."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from oslo_policy import policy as oslo_policy

from allotment import conf as allotment_conf
from allotment import errors
from allotment.auth import policies
from allotment.auth import policy as policy_module
from allotment.auth.policy import Policy, denied_message, get_enforcer
from allotment.context import RequestContext

ADMIN_OR_SERVICE = "rule:admin_or_service_api"

# Placement 16.0.0's rule names and default check strings: an operator's
# policy.yaml refers to these, so they are part of the compatibility promise.
UPSTREAM_RULES = {
    "admin_api": "role:admin",
    "service_api": "role:service",
    "admin_or_service_api": "role:admin or role:service",
    "project_reader_api": "role:reader and project_id:%(project_id)s",
    "admin_or_project_reader_or_service_api":
        "role:admin or rule:project_reader_api or role:service",
    "placement:resource_providers:list": ADMIN_OR_SERVICE,
    "placement:resource_providers:create": ADMIN_OR_SERVICE,
    "placement:resource_providers:show": ADMIN_OR_SERVICE,
    "placement:resource_providers:update": ADMIN_OR_SERVICE,
    "placement:resource_providers:delete": ADMIN_OR_SERVICE,
    "placement:resource_classes:list": ADMIN_OR_SERVICE,
    "placement:resource_classes:create": ADMIN_OR_SERVICE,
    "placement:resource_classes:show": ADMIN_OR_SERVICE,
    "placement:resource_classes:update": ADMIN_OR_SERVICE,
    "placement:resource_classes:delete": ADMIN_OR_SERVICE,
    "placement:resource_providers:inventories:list": ADMIN_OR_SERVICE,
    "placement:resource_providers:inventories:create": ADMIN_OR_SERVICE,
    "placement:resource_providers:inventories:show": ADMIN_OR_SERVICE,
    "placement:resource_providers:inventories:update": ADMIN_OR_SERVICE,
    "placement:resource_providers:inventories:delete": ADMIN_OR_SERVICE,
    "placement:resource_providers:aggregates:list": ADMIN_OR_SERVICE,
    "placement:resource_providers:aggregates:update": ADMIN_OR_SERVICE,
    "placement:resource_providers:usages": ADMIN_OR_SERVICE,
    "placement:usages": "rule:admin_or_project_reader_or_service_api",
    "placement:traits:list": ADMIN_OR_SERVICE,
    "placement:traits:show": ADMIN_OR_SERVICE,
    "placement:traits:update": ADMIN_OR_SERVICE,
    "placement:traits:delete": ADMIN_OR_SERVICE,
    "placement:resource_providers:traits:list": ADMIN_OR_SERVICE,
    "placement:resource_providers:traits:update": ADMIN_OR_SERVICE,
    "placement:resource_providers:traits:delete": ADMIN_OR_SERVICE,
    "placement:allocations:manage": ADMIN_OR_SERVICE,
    "placement:allocations:list": ADMIN_OR_SERVICE,
    "placement:allocations:update": ADMIN_OR_SERVICE,
    "placement:allocations:delete": ADMIN_OR_SERVICE,
    "placement:resource_providers:allocations:list": ADMIN_OR_SERVICE,
    "placement:allocation_candidates:list": ADMIN_OR_SERVICE,
    "placement:reshaper:reshape": "rule:service_api",
}

# Callers as secure RBAC deployments define them; all project scoped to
# PROJECT unless system scoped.
PROJECT = "project-a"
OTHER_PROJECT = "project-b"
PERSONAS = {
    "admin": dict(roles=["admin", "member", "reader"]),
    "service": dict(roles=["service"]),
    "member": dict(roles=["member", "reader"]),
    "reader": dict(roles=["reader"]),
    "nobody": dict(roles=[]),
    "system_admin": dict(roles=["admin", "member", "reader"],
                         system_scope="all", project_id=None),
    "system_reader": dict(roles=["reader"], system_scope="all", project_id=None),
}


def make_policy(tmp_path: Path, **oslo_policy_opts: object) -> Policy:
    # An absent file by default, so a policy.yaml lying around on the host
    # cannot change what the defaults look like.
    oslo_policy_opts.setdefault("policy_file", str(tmp_path / "absent.yaml"))
    conf = allotment_conf.load(
        config_files=[], overrides={"oslo_policy": oslo_policy_opts})
    return Policy(conf)


def make_ctx(policy: Policy | None, persona: str = "admin", **kwargs) -> RequestContext:
    values = {"user_id": "user-1", "project_id": PROJECT, **PERSONAS[persona], **kwargs}
    return RequestContext(policy=policy, **values)


def allowed(policy: Policy, persona: str, action: str, target=None) -> bool:
    return make_ctx(policy, persona).can(action, target, fatal=False)


# --- the rule list -------------------------------------------------------

# Rules of allotment's own additions, not in upstream Placement.
OWN_RULES = {"allotment:web:view": "rule:admin_api", "allotment:metrics": "rule:admin_api"}


def test_every_upstream_rule_with_its_default() -> None:
    rules = {rule.name: rule.check_str for rule in policies.list_rules()}
    assert rules == {**UPSTREAM_RULES, **OWN_RULES}


def test_own_rules_never_take_an_upstream_name() -> None:
    assert all(name.startswith("allotment:") for name in OWN_RULES)


def test_scope_types_and_deprecations_match_upstream() -> None:
    by_name = {rule.name: rule for rule in policies.list_rules()}
    # Upstream leaves only project_reader_api without a scope type.
    unscoped = [name for name, rule in by_name.items() if not rule.scope_types]
    assert unscoped == ["project_reader_api"]
    assert all(rule.scope_types == ["project"]
               for name, rule in by_name.items() if name not in unscoped)
    deprecated = {name: (rule.deprecated_rule.name, rule.deprecated_rule.check_str)
                  for name, rule in by_name.items() if rule.deprecated_rule}
    assert deprecated == {
        name: ("rule:admin_api", "role:admin")
        for name in ("service_api", "admin_or_service_api", "project_reader_api",
                     "admin_or_project_reader_or_service_api")
    }


def test_api_rules_are_documented_with_operations() -> None:
    api_rules = [r for r in policies.list_rules() if r.name.startswith("placement:")]
    assert api_rules
    for rule in api_rules:
        assert isinstance(rule, oslo_policy.DocumentedRuleDefault)
        assert rule.description
        assert all(op["path"].startswith("/") and op["method"] in
                   {"GET", "PUT", "POST", "DELETE"} for op in rule.operations)


def test_list_rules_builds_new_objects_each_time() -> None:
    first, second = policies.list_rules(), policies.list_rules()
    assert not any(a is b for a, b in zip(first, second, strict=True))
    assert not any(a.deprecated_rule is not None and a.deprecated_rule is b.deprecated_rule
                   for a, b in zip(first, second, strict=True))


# --- defaults, legacy and secure RBAC -------------------------------------

ADMIN_OR_SERVICE_EXPECTED = {
    "admin": True, "service": True, "member": False, "reader": False,
    "nobody": False, "system_admin": False, "system_reader": False,
}


@pytest.mark.parametrize("new_defaults", [True, False])
@pytest.mark.parametrize("persona", sorted(PERSONAS))
@pytest.mark.parametrize("action", [
    policies.RESOURCE_PROVIDERS_LIST,
    policies.INVENTORIES_UPDATE,
    policies.ALLOCATION_CANDIDATES_LIST,
    policies.ALLOCATIONS_UPDATE,
])
def test_admin_or_service_rules(tmp_path, new_defaults, persona, action) -> None:
    policy = make_policy(tmp_path, enforce_new_defaults=new_defaults)
    assert allowed(policy, persona, action) is ADMIN_OR_SERVICE_EXPECTED[persona]


@pytest.mark.parametrize(("new_defaults", "persona", "expected"), [
    # The deprecated admin-only default is OR'd in under legacy rules ...
    (False, "admin", True),
    (False, "service", True),
    # ... and ignored under the new ones: reshaping is for services.
    (True, "admin", False),
    (True, "service", True),
    (False, "member", False),
    (True, "member", False),
    (False, "system_admin", False),
    (True, "system_admin", False),
])
def test_reshaper_is_for_services(tmp_path, new_defaults, persona, expected) -> None:
    policy = make_policy(tmp_path, enforce_new_defaults=new_defaults)
    assert allowed(policy, persona, policies.RESHAPE) is expected


@pytest.mark.parametrize("new_defaults", [True, False])
@pytest.mark.parametrize(("persona", "target_project", "expected"), [
    ("admin", OTHER_PROJECT, True),
    ("service", OTHER_PROJECT, True),
    ("reader", PROJECT, True),
    ("member", PROJECT, True),
    ("reader", OTHER_PROJECT, False),
    ("member", OTHER_PROJECT, False),
    ("nobody", PROJECT, False),
    ("system_reader", PROJECT, False),
    ("system_admin", PROJECT, False),
])
def test_total_usages_for_project_readers(
        tmp_path, new_defaults, persona, target_project, expected) -> None:
    policy = make_policy(tmp_path, enforce_new_defaults=new_defaults)
    target = {"project_id": target_project}
    assert allowed(policy, persona, policies.TOTAL_USAGES, target) is expected


def test_policies_in_one_process_do_not_share_state(tmp_path) -> None:
    legacy = make_policy(tmp_path, enforce_new_defaults=False)
    secure = make_policy(tmp_path, enforce_new_defaults=True)
    legacy_again = make_policy(tmp_path, enforce_new_defaults=False)
    assert allowed(legacy, "admin", policies.RESHAPE)
    assert not allowed(secure, "admin", policies.RESHAPE)
    assert allowed(legacy_again, "admin", policies.RESHAPE)
    assert allowed(legacy, "admin", policies.RESHAPE)


# --- denials ---------------------------------------------------------------

def test_denial_raises_forbidden_with_placement_message(tmp_path) -> None:
    policy = make_policy(tmp_path)
    ctx = make_ctx(policy, "member")
    with pytest.raises(errors.Forbidden) as caught:
        ctx.can(policies.RESOURCE_PROVIDERS_CREATE)
    exc = caught.value
    assert exc.status == 403
    assert exc.detail == (
        "Policy does not allow placement:resource_providers:create to be performed.")
    assert exc.detail == denied_message(policies.RESOURCE_PROVIDERS_CREATE)
    assert exc.format_detail().startswith("Access was denied to this resource.")


def test_wrong_scope_is_forbidden_not_an_error(tmp_path) -> None:
    policy = make_policy(tmp_path)
    ctx = make_ctx(policy, "system_admin")
    with pytest.raises(errors.Forbidden) as caught:
        policy.authorize(ctx, policies.TRAITS_LIST, {})
    # Placement's detail for a scope mismatch is the bare action name.
    assert caught.value.detail == policies.TRAITS_LIST


def test_invalid_scope_from_enforcer_becomes_forbidden(tmp_path, monkeypatch) -> None:
    policy = make_policy(tmp_path)

    def raise_invalid_scope(rule, *args, **kwargs):
        raise oslo_policy.InvalidScope(rule, ["project"], "system")

    monkeypatch.setattr(policy.enforcer, "authorize", raise_invalid_scope)
    ctx = make_ctx(policy, "admin")
    assert policy.check(ctx, policies.TRAITS_LIST, {}) is False
    with pytest.raises(errors.Forbidden, match="placement:traits:list"):
        policy.authorize(ctx, policies.TRAITS_LIST, {})


def test_unknown_action_is_a_programming_error(tmp_path) -> None:
    policy = make_policy(tmp_path)
    with pytest.raises(oslo_policy.PolicyNotRegistered):
        make_ctx(policy, "admin").can("placement:no_such_thing")


def test_can_defaults_target_to_own_project_and_user(tmp_path) -> None:
    policy = make_policy(tmp_path)
    reader = make_ctx(policy, "reader")
    assert reader.can(policies.TOTAL_USAGES) is True
    assert reader.can(policies.TOTAL_USAGES, {"project_id": OTHER_PROJECT},
                      fatal=False) is False
    foreign = make_ctx(policy, "reader", project_id=OTHER_PROJECT)
    assert foreign.can(policies.TOTAL_USAGES) is True


def test_can_without_policy_refuses(tmp_path) -> None:
    with pytest.raises(RuntimeError):
        make_ctx(None, "admin").can(policies.RESOURCE_PROVIDERS_LIST)


# --- operator policy files -------------------------------------------------

def test_policy_file_overrides_one_rule(tmp_path) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"placement:resource_providers:list": "role:member"\n')
    policy = make_policy(tmp_path, policy_file=str(policy_file))
    assert allowed(policy, "member", policies.RESOURCE_PROVIDERS_LIST)
    assert not allowed(policy, "reader", policies.RESOURCE_PROVIDERS_LIST)
    # Neighbouring rules keep their defaults.
    assert not allowed(policy, "member", policies.RESOURCE_PROVIDERS_CREATE)
    assert allowed(policy, "admin", policies.RESOURCE_PROVIDERS_CREATE)


def test_policy_file_overrides_a_base_rule(tmp_path) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"admin_or_service_api": "role:operator"\n')
    policy = make_policy(tmp_path, policy_file=str(policy_file))
    operator = make_ctx(policy, "nobody", roles=["operator"])
    assert operator.can(policies.INVENTORIES_LIST)
    assert operator.can(policies.AGGREGATES_UPDATE)
    assert not allowed(policy, "admin", policies.INVENTORIES_LIST)
    # Scope still applies to an overridden rule.
    system_operator = make_ctx(policy, "system_reader", roles=["operator"])
    assert not system_operator.can(policies.INVENTORIES_LIST, fatal=False)


def test_override_does_not_leak_into_other_policies(tmp_path) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"placement:traits:list": "@"\n')
    open_policy = make_policy(tmp_path, policy_file=str(policy_file))
    default_policy = make_policy(tmp_path)
    assert allowed(open_policy, "nobody", policies.TRAITS_LIST)
    assert not allowed(default_policy, "nobody", policies.TRAITS_LIST)


def test_relative_policy_file_is_found_next_to_the_config_file(tmp_path) -> None:
    (tmp_path / "custom-policy.yaml").write_text('"placement:traits:show": "@"\n')
    config_file = tmp_path / "placement.conf"
    config_file.write_text("[oslo_policy]\npolicy_file = custom-policy.yaml\n")
    policy = Policy(allotment_conf.load(config_files=[str(config_file)]))
    assert allowed(policy, "nobody", policies.TRAITS_SHOW)
    assert not allowed(policy, "nobody", policies.TRAITS_LIST)


def test_missing_policy_file_means_defaults(tmp_path) -> None:
    policy = make_policy(tmp_path, policy_file=str(tmp_path / "nope" / "policy.yaml"))
    assert allowed(policy, "admin", policies.TRAITS_LIST)
    assert not allowed(policy, "member", policies.TRAITS_LIST)


def test_policy_file_changes_are_picked_up(tmp_path) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"placement:traits:list": "role:member"\n')
    policy = make_policy(tmp_path, policy_file=str(policy_file))
    assert allowed(policy, "member", policies.TRAITS_LIST)
    policy_file.write_text('"placement:traits:list": "role:auditor"\n')
    stat = policy_file.stat()
    os.utime(policy_file, (stat.st_atime, stat.st_mtime + 10))
    # Files are looked at once per RELOAD_INTERVAL, not on every check.
    time.sleep(policy_module.RELOAD_INTERVAL + 0.05)
    assert not allowed(policy, "member", policies.TRAITS_LIST)
    assert make_ctx(policy, "nobody", roles=["auditor"]).can(policies.TRAITS_LIST)


def test_decisions_are_remembered_per_caller_and_target(tmp_path) -> None:
    policy = make_policy(tmp_path)
    calls = []
    real = policy.enforcer.authorize

    def counting(*args, **kwargs):
        calls.append(args[0])
        return real(*args, **kwargs)

    policy.enforcer.authorize = counting
    for _ in range(3):
        assert allowed(policy, "admin", policies.TRAITS_LIST)
        assert not allowed(policy, "member", policies.TRAITS_LIST)
    # One real check per distinct caller, then remembered answers.
    assert calls == [policies.TRAITS_LIST, policies.TRAITS_LIST]


def test_enforcer_entry_point_reads_the_operator_config(tmp_path, monkeypatch) -> None:
    (tmp_path / "policy.yaml").write_text('"placement:usages": "role:auditor"\n')
    (tmp_path / "placement.conf").write_text(
        f"[oslo_policy]\npolicy_file = {tmp_path / 'policy.yaml'}\n")
    monkeypatch.setenv("OS_PLACEMENT_CONFIG_DIR", str(tmp_path))
    enforcer = get_enforcer()
    assert set(enforcer.registered_rules) == set(UPSTREAM_RULES) | set(OWN_RULES)
    assert str(enforcer.rules["placement:usages"]) == "role:auditor"
    assert str(enforcer.rules["placement:traits:list"]) == ADMIN_OR_SERVICE


def test_remembered_decisions_know_every_policy_value() -> None:
    # The key is read off the context's attributes: they must be exactly
    # what oslo.context hands the rules, or a caller could be judged by
    # another caller's remembered decision.
    assert (set(policy_module._POLICY_ATTRIBUTES)
            == set(RequestContext().to_policy_values()))
    base = make_ctx(None)
    seen = {policy_module._credentials(base)}
    for name in policy_module._POLICY_ATTRIBUTES:
        value = ["other-role"] if name.endswith("roles") else (
            True if name == "is_admin_project" and not base.is_admin_project else "other")
        changed = make_ctx(None)
        setattr(changed, name, value)
        key = policy_module._credentials(changed)
        assert key not in seen, name
        seen.add(key)


def test_a_context_with_its_own_policy_values_is_remembered_by_them(tmp_path) -> None:
    class Extra(RequestContext):
        def to_policy_values(self):
            values = super().to_policy_values()
            values["extra"] = self.user_name
            return values

    one = Extra(user_id="u", project_id=PROJECT, roles=["admin"], user_name="a")
    two = Extra(user_id="u", project_id=PROJECT, roles=["admin"], user_name="b")
    assert policy_module._credentials(one) != policy_module._credentials(two)
    assert policy_module._credentials(one) == policy_module._credentials(
        Extra(user_id="u", project_id=PROJECT, roles=["admin"], user_name="a"))

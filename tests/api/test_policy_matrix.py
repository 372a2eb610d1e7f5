"""Every policy rule, for every kind of caller, over HTTP through keystone.

Requests go through the whole application with ``[api] auth_strategy =
keystone``: keystonemiddleware's ``auth_token`` validates the token (only
its call to keystone is faked), the context is built from the headers it
sets, and the handler asks the policy.  For each rule the test sends every
operation the rule documents, as each caller, under each policy mode, and
checks both that the handler asked for exactly that rule and that the answer
was (or was not) a 403 in Placement's shape.

The expectations are written out from upstream Placement 16.0.0's defaults
(``placement/policies/*.py``), not derived from allotment's rule list, and the
test is generated from that rule list: a rule without an expectation fails.
"""

from __future__ import annotations

import uuid

import pytest

from allotment import conf as conf_mod
from allotment.auth import policies
from allotment.auth.policy import Policy
from allotment.server.app import create_app
from allotment.service import setup
from allotment.storage import db as db_mod
from allotment.storage import migration
from tests.auth.test_policy import UPSTREAM_RULES
from tests.harness.keystone import FakeKeystone
from tests.harness.wsgi_client import Client

PROJECT = "project-a"
OTHER_PROJECT = "project-b"
SERVICE_PROJECT = "service"
PROVIDER = "5b0f9a4c-3e2d-4f1a-8b7c-6d5e4f3a2b1c"
CONSUMER = "9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b"
KEYSTONE = "http://keystone.test:5000/identity"

# Callers: (project, roles, scope).  Keystone puts implied roles (member
# implies reader, admin implies member) into the token, as here.
CALLERS = {
    "admin": (PROJECT, ["admin", "member", "reader"], "project"),
    "service": (SERVICE_PROJECT, ["service"], "project"),
    "member": (PROJECT, ["member", "reader"], "project"),
    "reader": (PROJECT, ["reader"], "project"),
    "other_role": (PROJECT, ["heat_stack_user"], "project"),
    "system_admin": (None, ["admin", "member", "reader"], "system"),
    "system_reader": (None, ["reader"], "system"),
    "domain_admin": (None, ["admin", "member", "reader"], "domain"),
}

# [oslo_policy] settings of each mode.  "default" is no setting at all:
# oslo.policy then enforces the new defaults.  Token scope is always
# enforced (oslo.policy 5 dropped enforce_scope).
MODES = {
    "default": {},
    "new_defaults": {"enforce_new_defaults": True},
    "legacy": {"enforce_new_defaults": False},
}

# The base rule each of upstream's API rules names by default
# (tests/auth/test_policy.py holds upstream's check strings).  A new rule
# must be added there (and to ALLOWED) to pass.
ADMIN_OR_SERVICE, SERVICE, ADMIN_OR_PROJECT_READER_OR_SERVICE = (
    "admin_or_service", "service", "admin_or_project_reader_or_service")
RULE_BASE = {name: check.removeprefix("rule:").removesuffix("_api")
             for name, check in UPSTREAM_RULES.items() if name.startswith("placement:")}
# allotment's own rules (not in upstream), by the same scheme.
ADMIN = "admin"
OWN_RULE_BASE = {policies.WEB_VIEW: ADMIN, policies.METRICS: ADMIN}
BASE_RULES = {"admin_api", "service_api", "admin_or_service_api", "project_reader_api",
              "admin_or_project_reader_or_service_api"}

# Who may, by (base rule, target, mode).  The target matters only for
# placement:usages: the caller's own project ("own") or another ("other").
# The legacy mode ORs in the deprecated "role:admin".  System- and
# domain-scoped tokens never pass: every API rule is project scoped.
_ADMINS = {"admin", "service"}
_PROJECT_READERS = {"admin", "service", "member", "reader"}
ALLOWED: dict[tuple[str, str, str], set[str]] = {}
for _mode in MODES:
    ALLOWED[ADMIN_OR_SERVICE, "own", _mode] = _ADMINS
    ALLOWED[SERVICE, "own", _mode] = {"service", "admin"} if _mode == "legacy" else {"service"}
    ALLOWED[ADMIN_OR_PROJECT_READER_OR_SERVICE, "own", _mode] = _PROJECT_READERS
    ALLOWED[ADMIN_OR_PROJECT_READER_OR_SERVICE, "other", _mode] = _ADMINS
    ALLOWED[ADMIN, "own", _mode] = {"admin"}


def _fill(path: str) -> str:
    name = "CUSTOM_POLICY_MATRIX"
    return (path.replace("{uuid}", PROVIDER).replace("{consumer_uuid}", CONSUMER)
            .replace("{resource_class}", "VCPU").replace("{name}", name))


def requests_for(rule) -> list[tuple[str, str, str]]:
    """(target, method, url) of every operation the rule documents."""
    result = []
    for op in rule.operations:
        url = _fill(op["path"])
        if rule.name == policies.TOTAL_USAGES:
            result.append(("own", op["method"], f"{url}?project_id={PROJECT}"))
            result.append(("other", op["method"], f"{url}?project_id={OTHER_PROJECT}"))
        else:
            result.append(("own", op["method"], url))
    return result


class Recorder:
    """Remembers which rules the application asked about."""

    def __init__(self) -> None:
        self.asked: list[str] = []


@pytest.fixture(scope="module")
def keystone():
    with pytest.MonkeyPatch.context() as patch:
        fake = FakeKeystone().install(patch)
        tokens = {}
        for name, (project, roles, scope) in CALLERS.items():
            tokens[name] = fake.add(f"user-{name}", project, roles,
                                    system=scope == "system", domain=scope == "domain")
        yield fake, tokens


@pytest.fixture(scope="module")
def recorder():
    recorder = Recorder()
    real = Policy.authorize

    def recording(self, ctx, action, target):
        recorder.asked.append(action)
        return real(self, ctx, action, target)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Policy, "authorize", recording)
        yield recorder


def build_app(tmp_path, policy_file: str, **oslo_policy):
    conf_file = tmp_path / "placement.conf"
    lines = ["[api]", "auth_strategy = keystone", "[keystone_authtoken]",
             f"www_authenticate_uri = {KEYSTONE}", "[oslo_policy]",
             f"policy_file = {policy_file}"]
    lines += [f"{key} = {value}" for key, value in oslo_policy.items()]
    lines += ["[placement_database]", f"connection = sqlite:///{tmp_path / 'db.sqlite'}"]
    conf_file.write_text("\n".join(lines) + "\n")
    conf = conf_mod.load(config_files=[str(conf_file)])
    database = db_mod.Database.from_conf(conf)
    migration.upgrade(database.engine)
    setup.sync_standards(database)
    return create_app(conf, db=database), database


@pytest.fixture(scope="module", params=sorted(MODES))
def mode_app(request, tmp_path_factory, keystone, recorder):
    tmp = tmp_path_factory.mktemp(f"policy-{request.param}")
    app, database = build_app(tmp, str(tmp / "absent.yaml"), **MODES[request.param])
    admin = Client(app, token=keystone[1]["admin"])
    assert admin.post("/resource_providers",
                      json={"name": "matrix", "uuid": PROVIDER}).status == 200
    yield request.param, app
    database.dispose()


def send(app, token: str, method: str, url: str):
    body = {} if method in ("PUT", "POST") else None
    return Client(app, token=token).request(method, url, json=body)


def test_every_rule_has_an_expectation() -> None:
    names = {rule.name for rule in policies.list_rules()}
    assert names - BASE_RULES == set(RULE_BASE) | set(OWN_RULE_BASE)
    assert names >= BASE_RULES
    assert len(RULE_BASE) == 33  # upstream's API rules


@pytest.mark.parametrize("rule", [r for r in policies.list_rules() if r.name not in BASE_RULES],
                         ids=lambda rule: rule.name)
def test_rule_over_http(mode_app, keystone, recorder, rule) -> None:
    mode, app = mode_app
    # KeyError: a rule nobody wrote an expectation for.
    base = RULE_BASE[rule.name] if rule.name in RULE_BASE else OWN_RULE_BASE[rule.name]
    _, tokens = keystone
    for target, method, url in requests_for(rule):
        allowed = ALLOWED[base, target, mode]
        for caller, token in tokens.items():
            recorder.asked.clear()
            resp = send(app, token, method, url)
            # The handler asked about this rule first (and, but for the web
            # view, which then reads through the API, only this one) ...
            asked = recorder.asked if rule.name not in OWN_RULE_BASE else recorder.asked[:1]
            assert asked == [rule.name], (caller, method, url, recorder.asked)
            # ... and the answer follows upstream's defaults.
            if caller in allowed:
                assert resp.status != 403, (caller, method, url, resp)
            else:
                assert resp.status == 403, (caller, method, url, resp)
                error = resp.error()
                assert error["title"] == "Forbidden"
                assert rule.name in error["detail"]


# --- policy files -------------------------------------------------------

API_RULES = [r for r in policies.list_rules() if r.name not in BASE_RULES]


@pytest.fixture(scope="module")
def overridden_app(tmp_path_factory, keystone, recorder):
    """Every API rule given to a role of the operator's own."""
    tmp = tmp_path_factory.mktemp("policy-file")
    policy_file = tmp / "policy.yaml"
    policy_file.write_text("".join(f'"{rule.name}": "role:auditor"\n' for rule in API_RULES))
    app, database = build_app(tmp, str(policy_file))
    fake, tokens = keystone
    auditor = fake.add("user-auditor", PROJECT, ["auditor"])
    admin = Client(app, token=tokens["admin"])
    assert admin.post("/resource_providers",
                      json={"name": "matrix", "uuid": PROVIDER}).status == 403
    yield app, auditor, tokens
    database.dispose()


@pytest.mark.parametrize("rule", API_RULES, ids=lambda rule: rule.name)
def test_policy_file_overrides_every_rule(overridden_app, recorder, rule) -> None:
    app, auditor, tokens = overridden_app
    for _target, method, url in requests_for(rule):
        resp = send(app, auditor, method, url)
        assert resp.status != 403, (method, url, resp)
        for caller in ("admin", "service"):
            resp = send(app, tokens[caller], method, url)
            assert resp.status == 403, (caller, method, url, resp)
            assert rule.name in resp.error()["detail"]


def test_policy_file_overriding_a_base_rule(tmp_path, keystone) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"admin_or_service_api": "role:operator"\n')
    app, database = build_app(tmp_path, str(policy_file))
    fake, tokens = keystone
    operator = fake.add("user-operator", PROJECT, ["operator"])
    try:
        rp = str(uuid.uuid4())
        assert send(app, operator, "POST", "/resource_providers").status == 400
        assert Client(app, token=operator).post(
            "/resource_providers", json={"name": "op", "uuid": rp}).status == 200
        assert send(app, tokens["admin"], "GET", f"/resource_providers/{rp}").status == 403
        # Rules not built on the overridden one keep their defaults.
        assert send(app, tokens["service"], "POST", "/reshaper").status == 400
        assert send(app, operator, "POST", "/reshaper").status == 403
        assert send(app, tokens["reader"], "GET",
                    f"/usages?project_id={PROJECT}").status == 200
    finally:
        database.dispose()


# --- the expectations against upstream's own rules --------------------------

_UPSTREAM_DECISIONS = r"""
import json, sys
from oslo_config import cfg
from oslo_context import context
from oslo_policy import policy
from placement import policies

callers, modes = json.loads(sys.argv[1]), json.loads(sys.argv[2])
decisions = {}
for mode, settings in modes.items():
    conf = cfg.ConfigOpts()
    conf([], project="placement")
    enforcer = policy.Enforcer(conf)
    conf.set_override("policy_file", "/nonexistent/policy.yaml", group="oslo_policy")
    for key, value in settings.items():
        conf.set_override(key, value, group="oslo_policy")
    enforcer.register_defaults(policies.list_rules())
    enforcer.load_rules()
    for rule in policies.list_rules():
        for target, project_id in (("own", "project-a"), ("other", "project-b")):
            for caller, (project, roles, scope) in callers.items():
                ctx = context.RequestContext(
                    user_id="u", project_id=project, roles=roles,
                    system_scope="all" if scope == "system" else None,
                    domain_id="default" if scope == "domain" else None)
                allowed = enforcer.authorize(
                    rule.name, {"project_id": project_id, "user_id": "u"}, ctx,
                    do_raise=False)
                decisions[f"{mode}|{rule.name}|{target}|{caller}"] = bool(allowed)
print(json.dumps(decisions))
"""


def test_expectations_match_upstreams_own_rules() -> None:
    """The table above, checked against Placement 16.0.0's own policy code
    run by oslo.policy in upstream's environment (tests/harness/upstream.py),
    where that environment is installed."""
    import json
    import subprocess

    from tests.harness import upstream

    python = upstream.venv_path() / "bin" / "python"
    if not python.exists():
        pytest.skip(f"upstream Placement is not installed at {upstream.venv_path()}")
    callers = {name: list(value) for name, value in CALLERS.items()}
    result = subprocess.run(
        [str(python), "-c", _UPSTREAM_DECISIONS, json.dumps(callers), json.dumps(MODES)],
        capture_output=True, text=True, check=True, timeout=120)
    decisions = json.loads(result.stdout)
    upstream_rules = {key.split("|")[1] for key in decisions}
    assert upstream_rules - BASE_RULES == set(RULE_BASE)
    for key, allowed in decisions.items():
        mode, rule, target, caller = key.split("|")
        if rule in BASE_RULES or (target == "other" and rule != policies.TOTAL_USAGES):
            continue
        expected = caller in ALLOWED[RULE_BASE[rule], target, mode]
        assert allowed is expected, key

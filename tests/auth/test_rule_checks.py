"""oslo.policy's rule-check plugins (``http:``, ``https:``) are loaded only
when a rule names one: a process whose rules name none never imports them
(nor requests, which they import); a rule that names one is still checked
by it."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

_PROCESS = textwrap.dedent("""
    import json, sys
    from allotment import conf
    from allotment.auth.policy import Policy

    overrides = {"oslo_policy": {"policy_file": sys.argv[1]}} if sys.argv[1] else {}
    policy = Policy(conf.load(config_files=[], overrides=overrides))
    rule = policy.enforcer.rules["placement:resource_providers:list"]
    print(json.dumps({"check": type(rule).__name__,
                      "imported": "oslo_policy._external" in sys.modules,
                      "requests": "requests" in sys.modules}))
""")


def _run(policy_file: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _PROCESS, policy_file],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_rules_that_name_no_plugin_load_none():
    found = _run("")
    assert found["check"] != "HttpCheck"
    assert not found["imported"] and not found["requests"]


def test_a_rule_naming_a_plugin_is_checked_by_it(tmp_path):
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"placement:resource_providers:list": "http://127.0.0.1:9/check"\n')
    assert _run(str(policy_file)) == {"check": "HttpCheck", "imported": True, "requests": True}

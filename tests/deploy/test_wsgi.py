"""upstream's WSGI entry points: placement.wsgi.api:application under a
WSGI server, the placement-api script as mod_wsgi loads it and as a
development server, placement.conf found as upstream finds it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import requests

from tests.cmd.test_commands import free_port, wait_until_serving
from tests.deploy.conftest import BIN, fake_upstream_distribution, tables_of, write_conf

# What kolla-ansible renders, in the parts that matter here: keystone
# authentication (its server unreachable: the root needs none).
KEYSTONE_SECTION = """
[api]
auth_strategy = keystone

[keystone_authtoken]
www_authenticate_uri = http://127.0.0.1:9/identity
auth_url = http://127.0.0.1:9/identity
auth_type = password
project_domain_id = default
user_domain_id = default
project_name = service
username = placement
password = secret
"""


@pytest.fixture
def config_dir(tmp_path):
    """A directory named by OS_PLACEMENT_CONFIG_DIR, its placement.conf
    pointing at a database file of its own."""
    directory = tmp_path / "etc-placement"
    directory.mkdir()
    write_conf(directory, f"sqlite:///{tmp_path / 'from-config-dir.sqlite'}", KEYSTONE_SECTION)
    return directory


def serving(argv, env, port):
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=env.get("HOME"))
    try:
        wait_until_serving(port, proc)
    except BaseException:
        proc.kill()
        raise
    return proc


def check_served(url, tmp_path):
    root = requests.get(url + "/", timeout=10)
    # haproxy's "option httpchk GET /" expects 200 with no credentials.
    assert root.status_code == 200
    assert root.json()["versions"][0]["id"] == "v1.0"
    listing = requests.get(url + "/resource_providers", timeout=10)
    assert listing.status_code == 401
    # The database named in $OS_PLACEMENT_CONFIG_DIR/placement.conf was made.
    assert "resource_providers" in tables_of(f"sqlite:///{tmp_path / 'from-config-dir.sqlite'}")


def env_for(config_dir, tmp_path):
    import os
    return {**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(config_dir), "HOME": str(tmp_path)}


def test_placement_wsgi_api_under_gunicorn(config_dir, tmp_path):
    port = free_port()
    proc = serving([str(BIN / "gunicorn"), "--bind", f"127.0.0.1:{port}", "--workers", "1",
                    "placement.wsgi.api:application"], env_for(config_dir, tmp_path), port)
    try:
        check_served(f"http://127.0.0.1:{port}", tmp_path)
    finally:
        proc.terminate()
        proc.wait(30)


def test_placement_api_as_a_development_server(config_dir, tmp_path):
    port = free_port()
    proc = serving([str(BIN / "placement-api"), "--port", str(port), "--host", "127.0.0.1"],
                   env_for(config_dir, tmp_path), port)
    try:
        check_served(f"http://127.0.0.1:{port}", tmp_path)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=30)
    assert "STARTING test server" in out
    assert f":{port}/" in out


def test_placement_api_script_as_mod_wsgi_loads_it(config_dir, tmp_path):
    # mod_wsgi executes the WSGIScriptAlias file under a name of its own
    # and takes ``application`` from it.
    script = textwrap.dedent(f"""
        import runpy, wsgiref.util
        namespace = runpy.run_path({str(BIN / 'placement-api')!r}, run_name="_mod_wsgi_x")
        environ = {{}}
        wsgiref.util.setup_testing_defaults(environ)
        answered = []
        body = b"".join(namespace["application"](
            environ, lambda status, headers, *exc: answered.append(status)))
        print(answered[0])
        print(body.decode())
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=env_for(config_dir, tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    status, body = result.stdout.split("\n", 1)
    assert status == "200 OK"
    assert '"max_version":"1.39"' in body


def test_the_application_refuses_to_load_beside_openstack_placement(config_dir, tmp_path):
    env = {**env_for(config_dir, tmp_path), **fake_upstream_distribution(tmp_path / "site")}
    result = subprocess.run([sys.executable, "-c", "import placement.wsgi.api"],
                            capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 1
    assert "openstack-placement 16.0.0" in result.stderr
    assert "allotment-placement" in result.stderr
    assert not (tmp_path / "from-config-dir.sqlite").exists()


PROFILED = textwrap.dedent("""
    import json, sys, wsgiref.util
    from osprofiler import notifier, profiler, web
    from placement.wsgi import init_application

    application = init_application()
    seen = []
    notifier.set(lambda info, **kw: seen.append(info))
    profiler.init("s3cret")
    environ = {}
    wsgiref.util.setup_testing_defaults(environ)
    for name, value in web.get_trace_id_headers().items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    profiler.clean()
    answered = []
    b"".join(application(environ, lambda status, headers, *exc: answered.append(status)))
    print(json.dumps({"status": answered[0], "traced": [s["name"] for s in seen]}))
""")


@pytest.mark.parametrize("enabled", [True, False])
def test_profiler_section_is_honoured(config_dir, tmp_path, enabled):
    pytest.importorskip("osprofiler")
    with open(config_dir / "placement.conf", "a") as conf:
        # A driver that needs no server: the test collects what is sent.
        conf.write(f"\n[profiler]\nenabled = {enabled}\nhmac_keys = s3cret\n"
                   "connection_string = sqlalchemy://\n")
    result = subprocess.run([sys.executable, "-c", PROFILED], capture_output=True, text=True,
                            env=env_for(config_dir, tmp_path), timeout=120)
    assert result.returncode == 0, result.stderr
    import json
    answer = json.loads(result.stdout.splitlines()[-1])
    assert answer["status"] == "200 OK"
    if enabled:
        assert answer["traced"][:1] == ["wsgi-start"]
        assert "wsgi-stop" in answer["traced"]
    else:
        assert answer["traced"] == []


def test_profiler_options_from_the_environment_alone_are_honoured(config_dir, tmp_path):
    # oslo.config reads OS_<GROUP>__<OPTION>: no [profiler] section needed.
    pytest.importorskip("osprofiler")
    env = {**env_for(config_dir, tmp_path), "OS_PROFILER__ENABLED": "true",
           "OS_PROFILER__HMAC_KEYS": "s3cret",
           "OS_PROFILER__CONNECTION_STRING": "sqlalchemy://"}
    result = subprocess.run([sys.executable, "-c", PROFILED], capture_output=True, text=True,
                            env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    import json
    answer = json.loads(result.stdout.splitlines()[-1])
    assert answer["status"] == "200 OK"
    assert answer["traced"][:1] == ["wsgi-start"]

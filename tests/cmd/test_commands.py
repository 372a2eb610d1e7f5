"""The console scripts on a real socket, with an upstream-style placement.conf."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import requests

from allotment.storage import migration
from allotment.storage.db import create_engine

BIN = Path(sys.executable).parent

UPSTREAM_STYLE_CONF = """\
[DEFAULT]
debug = False
log_dir =
state_path = /var/lib/placement
transport_url = rabbit://stackrabbit:secret@127.0.0.1:5672/

[api]
auth_strategy = noauth2

[placement_database]
connection = {url}
max_pool_size = 5
max_overflow = 10
connection_recycle_time = 3600

[placement]
randomize_allocation_candidates = true
incomplete_consumer_project_id = 00000000-0000-0000-0000-000000000000
incomplete_consumer_user_id = 00000000-0000-0000-0000-000000000000
allocation_conflict_retry_count = 10
max_allocation_candidates = 1000
allocation_candidates_generation_strategy = breadth-first

[keystone_authtoken]
memcached_servers = localhost:11211
www_authenticate_uri = http://127.0.0.1/identity
project_domain_name = Default
project_name = service
user_domain_name = Default
password = secret
username = placement
auth_url = http://127.0.0.1/identity
interface = public
auth_type = password

[oslo_policy]
policy_file = policy.yaml
enforce_new_defaults = False

[cors]
allowed_origin =

[workarounds]
optimize_for_wide_provider_trees = False
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def conf_file(tmp_path, database_url, db) -> Path:
    path = tmp_path / "placement.conf"
    path.write_text(UPSTREAM_STYLE_CONF.format(url=database_url))
    return path


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True,
                          timeout=120, **kw)


def test_manage_db_sync_and_version(tmp_path):
    url = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    conf = tmp_path / "placement.conf"
    conf.write_text(f"[placement_database]\nconnection = {url}\n")
    before = run("allotment-manage", "--config-file", str(conf), "db", "version")
    assert before.returncode == 0, before.stderr
    assert before.stdout.strip() == "None"
    synced = run("allotment-manage", "--config-file", str(conf), "db", "sync")
    assert synced.returncode == 0, synced.stderr
    after = run("allotment-manage", "--config-file", str(conf), "db", "version")
    engine = create_engine(url)
    assert after.stdout.strip() == (f"{migration.head_revision(engine)} (allotment), on "
                                    f"{migration.UPSTREAM_HEAD} (upstream Placement's tables)")
    assert migration.current_revision(engine) == migration.head_revision(engine)
    engine.dispose()
    again = run("allotment-manage", "--config-file", str(conf), "db", "sync")
    assert again.returncode == 0


def test_manage_needs_a_command():
    result = run("allotment-manage")
    assert result.returncode != 0
    assert "usage" in result.stderr


def wait_until_serving(port: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited: {proc.stderr.read()}")
        try:
            requests.get(f"http://127.0.0.1:{port}/", timeout=5)
            return
        except requests.RequestException:
            time.sleep(0.2)
    raise AssertionError("server did not start")


@pytest.fixture
def server(conf_file):
    port = free_port()
    proc = subprocess.Popen(
        [str(BIN / "allotment-api"), "--config-file", str(conf_file),
         "--bind", f"127.0.0.1:{port}", "--workers", "2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until_serving(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(30)


def test_api_serves_a_real_socket_with_an_upstream_conf(server):
    headers = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}
    root = requests.get(server + "/", timeout=10)
    assert root.status_code == 200
    assert root.json()["versions"][0]["max_version"] == "1.39"
    created = requests.put(server + "/traits/CUSTOM_SOCKET", headers=headers, timeout=10)
    assert created.status_code == 201
    # Any worker sees it: they share the database.
    for _ in range(4):
        got = requests.get(server + "/traits/CUSTOM_SOCKET", headers=headers, timeout=10)
        assert got.status_code == 204
    denied = requests.get(server + "/traits", timeout=10)
    assert denied.status_code == 401


def test_api_ignores_path_headers_from_clients(server):
    headers = {"x-auth-token": "admin", "openstack-api-version": "placement latest",
               "SCRIPT_NAME": "/elsewhere", "PATH_INFO": "/usages"}
    resp = requests.get(server + "/resource_classes/VCPU", headers=headers, timeout=10)
    assert resp.status_code == 200
    assert resp.json()["links"][0]["href"] == "/resource_classes/VCPU"


def test_api_with_no_configuration_uses_embedded_sqlite(tmp_path):
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "OS_PLACEMENT_CONFIG_DIR"}
    env["HOME"] = str(tmp_path)  # keep oslo.config from finding a user config
    proc = subprocess.Popen([str(BIN / "allotment-api"), "--bind", f"127.0.0.1:{port}",
                             "--auth-strategy", "noauth2"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_until_serving(port, proc)
        base = f"http://127.0.0.1:{port}"
        assert requests.get(base + "/", timeout=10).status_code == 200
        created = requests.put(base + "/resource_classes/CUSTOM_FIRST_RUN", timeout=10,
                               headers={"x-auth-token": "admin",
                                        "openstack-api-version": "placement 1.7"})
        assert created.status_code == 201
    finally:
        proc.terminate()
        proc.wait(30)
    assert (tmp_path / "allotment.sqlite").exists()


def test_wsgi_module_reads_os_placement_config_dir(tmp_path):
    url = f"sqlite:///{tmp_path / 'wsgi.sqlite'}"
    (tmp_path / "placement.conf").write_text(textwrap.dedent(f"""\
        [api]
        auth_strategy = noauth2
        [placement_database]
        connection = {url}
        """))
    code = textwrap.dedent("""\
        import webob
        from allotment.wsgi import application
        req = webob.Request.blank('/traits/HW_CPU_X86_AVX2')
        req.headers['x-auth-token'] = 'admin'
        req.headers['openstack-api-version'] = 'placement 1.6'
        print(req.get_response(application).status_code)
        """)
    env = dict(os.environ, OS_PLACEMENT_CONFIG_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "204"



@contextlib.contextmanager
def _two_servers(conf_file, home: Path, first: list[str], second: list[str]):
    """Two allotment-api servers of one user (one HOME, one runtime
    directory), started with these extra arguments; both must serve."""
    env = {**os.environ, "HOME": str(home), "XDG_RUNTIME_DIR": str(home / "run")}
    (home / "run").mkdir()
    procs = []
    try:
        for args in (first, second):
            port = free_port()
            proc = subprocess.Popen(
                [str(BIN / "allotment-api"), "--config-file", str(conf_file),
                 "--bind", f"127.0.0.1:{port}", "--workers", "1", *args],
                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            procs.append(proc)
            wait_until_serving(port, proc)
        yield
        assert all(proc.poll() is None for proc in procs)
    finally:
        for proc in procs:
            proc.terminate()
            proc.wait(30)


def test_servers_of_one_user_share_no_control_socket(conf_file, tmp_path):
    with _two_servers(conf_file, tmp_path, [], []):
        assert not list(tmp_path.rglob("gunicorn.ctl"))


def test_a_control_socket_is_opened_only_where_asked(conf_file, tmp_path):
    import gunicorn.config

    if not any(s.name == "control_socket" for s in gunicorn.config.KNOWN_SETTINGS):
        pytest.skip("this gunicorn has no control socket")
    sockets = [tmp_path / "a.ctl", tmp_path / "b.ctl"]
    with _two_servers(conf_file, tmp_path, ["--control-socket", str(sockets[0])],
                      ["--control-socket", str(sockets[1])]):
        deadline = time.monotonic() + 30
        while not all(s.is_socket() for s in sockets) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert all(s.is_socket() for s in sockets)
        assert not list(tmp_path.rglob("gunicorn.ctl"))

"""allotment deployed from kolla-ansible's own templates: placement.conf and
the uWSGI configuration rendered from kolla-ansible's roles, served by uWSGI
(``module = placement.wsgi.api:application``) behind haproxy with kolla's
backend health check (``option httpchk GET /``), TLS terminated at haproxy
with a throw-away certificate, on MariaDB with a real Keystone.  The
bootstrap is kolla's: ``placement-manage db sync``."""

from __future__ import annotations

import csv
import io
import os
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import requests
import sqlalchemy as sa

from tests.harness import backends
from tests.kolla import templates

BIN = Path(sys.executable).parent
HOST = "127.0.0.1"
# One lane for the module, on one test worker.
pytestmark = pytest.mark.xdist_group("kolla-lane")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def kolla_variables(keystone_url: str, database_url: str, api_port: int,
                    listen_port: int) -> dict:
    """What kolla-ansible's inventory and group_vars would give the
    templates, for one host that is this machine."""
    url = sa.engine.make_url(database_url)
    return {
        # placement role
        "placement_logging_debug": False, "service_name": "placement-api",
        "placement_database_user": url.username, "placement_database_password": url.password or "",
        "placement_database_address": f"{url.host}:{url.port}",
        "placement_database_name": url.database,
        "placement_database_enable_tls_internal": False,
        "database_connection_recycle_time": 10, "database_max_pool_size": 1,
        "groups": {"memcached": [], "placement-api": ["controller0"]},
        "hostvars": {"controller0": {"ansible_facts": {"hostname": "controller0"}}},
        "memcached_port": 11211,
        "keystone_public_url": keystone_url, "keystone_internal_url": keystone_url,
        "default_project_domain_id": "default", "default_user_domain_id": "default",
        "placement_keystone_user": "placement", "placement_keystone_password": "secret",
        "openstack_cacert": "", "openstack_region_name": "RegionOne",
        "memcache_security_strategy": "ENCRYPT", "memcache_secret_key": "kolla-secret",
        "enable_osprofiler": False,
        "enable_placement": True, "placement_api_port": api_port,
        "placement_api_public_port": api_port, "placement_api_listen_port": listen_port,
        "placement_enable_tls_backend": False, "placement_external_fqdn": HOST,
        # service-uwsgi-config role
        "service_uwsgi_config_host": HOST, "service_uwsgi_config_http_port": listen_port,
        "service_uwsgi_config_module": "placement.wsgi.api:application",
        "service_uwsgi_config_tls_backend": False, "service_uwsgi_config_log_dir": "placement",
        "service_uwsgi_config_log_file": "placement-api-uwsgi.log",
        "service_uwsgi_config_workers": 2, "service_uwsgi_config_worker_timeout": 80,
        "service_uwsgi_config_socket_port": "", "kolla_base_distro": "debian",
        # haproxy-config role: TLS on the internal VIP
        "kolla_enable_tls_external": False, "kolla_enable_tls_internal": True,
        "haproxy_enable_http2": False, "haproxy_http2_protocol": "alpn h2,http/1.1",
        "kolla_internal_vip_address": HOST, "kolla_external_vip_address": HOST,
        "haproxy_enable_external_vip": False, "haproxy_single_external_frontend": False,
        "haproxy_single_external_frontend_public_port": 443,
        "haproxy_health_check": "check inter 1000 rise 1 fall 3",
        "haproxy_health_check_ssl": "check check-ssl inter 1000 rise 1 fall 3",
        "haproxy_frontend_tcp_extra": [], "haproxy_backend_tcp_extra": [],
        "haproxy_frontend_http_extra": [], "haproxy_frontend_redirect_extra": [],
        "haproxy_backend_http_extra": [], "enable_letsencrypt": "no",
        "kolla_verify_tls_backend": False,
    }


def _outside_var(text: str, root: Path) -> str:
    """kolla's container paths, moved under the lane's directory."""
    return (text.replace("/var/log/kolla/", f"{root}/log/")
            .replace("/var/lib/placement", f"{root}/lib")
            .replace("/etc/haproxy/certificates/", f"{root}/certs/"))


def _certificate(root: Path) -> Path:
    certs = root / "certs"
    certs.mkdir()
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", f"/CN={HOST}", "-addext", f"subjectAltName=IP:{HOST}",
                    "-keyout", str(certs / "key.pem"), "-out", str(certs / "cert.pem")],
                   check=True, capture_output=True)
    (certs / "haproxy-internal.pem").write_text(
        (certs / "cert.pem").read_text() + (certs / "key.pem").read_text())
    return certs / "cert.pem"


def _backend_status(sock_path: Path) -> str:
    with socket.socket(socket.AF_UNIX) as sock:
        sock.connect(str(sock_path))
        sock.sendall(b"show stat\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    rows = csv.DictReader(io.StringIO(data.decode().lstrip("# ")))
    for row in rows:
        if row["pxname"] == "placement_api_back" and row["svname"] == "controller0":
            return row["status"]
    return "absent"


@pytest.fixture(scope="module")
def lane(keystone, tmp_path_factory):
    for program in ("haproxy", "openssl"):
        if not shutil.which(program):
            pytest.skip(f"{program} is not installed (scripts/test installs it)")
    if not (BIN / "uwsgi").exists():
        pytest.skip("uWSGI is not installed (a test dependency)")
    if "mysql" not in backends.SERVER_URLS:
        pytest.skip("kolla-ansible's placement.conf names MySQL: needs ALLOTMENT_TEST_MYSQL_URL")
    root = tmp_path_factory.mktemp("kolla")
    for sub in ("log/placement", "lib", "etc-placement"):
        (root / sub).mkdir(parents=True)
    database_url = backends.create_database("mysql", root, "allotment_kolla")
    api_port, listen_port = free_port(), free_port()
    variables = kolla_variables(keystone.url, database_url, api_port, listen_port)
    env = templates.environment(HOST)

    conf = root / "etc-placement" / "placement.conf"
    conf.write_text(_outside_var(templates.render(
        env, templates.read("placement/templates/placement.conf.j2"), variables), root))
    uwsgi_ini = root / "placement-api-uwsgi.ini"
    uwsgi_ini.write_text(_outside_var(templates.render(
        env, templates.read("service-uwsgi-config/templates/uwsgi.ini.j2"), variables), root))
    cert = _certificate(root)
    haproxy_cfg = root / "haproxy.cfg"
    service_section = templates.render(
        env, templates.read("haproxy-config/templates/haproxy_single_service_split.cfg.j2"),
        {**variables, "service": templates.placement_service(env, variables)})
    haproxy_cfg.write_text(
        "global\n    maxconn 256\n"
        f"    stats socket {root}/haproxy.sock mode 600 level admin\n"
        "defaults\n    mode http\n    timeout connect 5s\n    timeout client 60s\n"
        "    timeout server 60s\n\n" + _outside_var(service_section, root))

    # kolla's bootstrap container: placement-manage db sync.
    synced = subprocess.run([str(BIN / "placement-manage"), "--config-file", str(conf), "db",
                             "sync"], capture_output=True, text=True, timeout=300)
    assert synced.returncode == 0, synced.stderr

    run_env = {**os.environ, "OS_PLACEMENT_CONFIG_DIR": str(conf.parent)}
    # The container runs ``uwsgi /etc/placement/placement-api-uwsgi.ini``
    # from its virtualenv; here the virtualenv is named.
    uwsgi = subprocess.Popen([str(BIN / "uwsgi"), "--ini", str(uwsgi_ini),
                              "--virtualenv", sys.prefix],
                             env=run_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    haproxy = subprocess.Popen(["haproxy", "-db", "-f", str(haproxy_cfg)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        status = "absent"
        while time.monotonic() < deadline:
            if uwsgi.poll() is not None or haproxy.poll() is not None:
                break
            with_sock = (root / "haproxy.sock").exists()
            status = _backend_status(root / "haproxy.sock") if with_sock else "absent"
            if status == "UP":
                break
            time.sleep(0.5)
        log = root / "log" / "placement" / "placement-api-uwsgi.log"
        assert status == "UP", (status, log.read_text() if log.exists() else "",
                                haproxy.stderr.read() if haproxy.poll() is not None else "")
        yield {"url": f"https://{HOST}:{api_port}", "cert": str(cert), "conf": conf,
               "root": root, "status": lambda: _backend_status(root / "haproxy.sock")}
    finally:
        for proc in (haproxy, uwsgi):
            os.killpg(proc.pid, 15)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(30)
        backends.drop_database("mysql", database_url)


def test_kollas_rendered_config_is_the_one_served(lane):
    text = lane["conf"].read_text()
    assert "enable_proxy_headers_parsing = true" in text
    assert "[keystone_authtoken]" in text
    ini = (lane["root"] / "placement-api-uwsgi.ini").read_text()
    assert "module = placement.wsgi.api:application" in ini
    cfg = (lane["root"] / "haproxy.cfg").read_text()
    assert "option httpchk GET /" in cfg
    assert "http-request set-header X-Forwarded-Proto https if { ssl_fc }" in cfg


def test_haproxy_health_check_and_root_over_tls(lane):
    assert lane["status"]() == "UP"
    root = requests.get(lane["url"] + "/", verify=lane["cert"], timeout=30)
    assert root.status_code == 200
    assert root.json()["versions"][0]["max_version"] == "1.39"
    assert requests.get(lane["url"] + "/resource_providers", verify=lane["cert"],
                        timeout=30).status_code == 401


def test_location_headers_say_https(keystone, lane):
    token = keystone.token("proj-admin")
    name = f"kolla-{uuid.uuid4().hex[:8]}"
    created = requests.post(lane["url"] + "/resource_providers", verify=lane["cert"],
                            timeout=60, json={"name": name},
                            headers={"X-Auth-Token": token,
                                     "OpenStack-API-Version": "placement 1.19"})
    assert created.status_code == 201, created.text
    assert created.headers["Location"].startswith(lane["url"] + "/resource_providers/")


def test_placement_status_on_kollas_config(lane):
    result = subprocess.run([str(BIN / "placement-status"), "--config-file", str(lane["conf"]),
                             "upgrade", "check"], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    config = subprocess.run(
        [str(BIN / "oslo-config-validator"), "--config-file",
         str(Path(__file__).resolve().parents[2] / "etc/placement/config-generator.conf"),
         "--input-file", str(lane["conf"])], capture_output=True, text=True, timeout=300)
    assert config.returncode == 0, config.stderr

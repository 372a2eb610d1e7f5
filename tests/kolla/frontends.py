"""uWSGI, Apache with mod_wsgi and haproxy, started from kolla's rendered
files, as throw-away processes in a scratch directory.

kolla runs each in a container where its files sit at fixed paths
(/etc/placement, /var/lib/kolla/venv, /var/log/kolla, a ``placement``
user).  Here the rendered files are used as they are, except for the few
container paths and names listed in :data:`APACHE_EDITS` and
:data:`HAPROXY_EDITS` (each must occur in the rendered text, so a change of
kolla's template is noticed) and the uWSGI options given after its ini.
"""

from __future__ import annotations

import csv
import getpass
import grp
import io
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import requests

STARTUP_SECONDS = 90
# The project's own venv: what kolla's image has at /var/lib/kolla/venv.
PROJECT_VENV = Path(sys.prefix)
APACHE_MODULES = Path("/usr/lib/apache2/modules")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def missing_debian_packages() -> list[str]:
    """Debian packages the lane needs that are not installed
    (scripts/install-kolla-lane installs them)."""
    wanted = {"apache2": shutil.which("apache2") or Path("/usr/sbin/apache2").exists(),
              "libapache2-mod-wsgi-py3": (APACHE_MODULES / "mod_wsgi.so").exists(),
              "haproxy": shutil.which("haproxy") or Path("/usr/sbin/haproxy").exists(),
              "openssl": shutil.which("openssl")}
    return [name for name, found in wanted.items() if not found]


def edit(text: str, edits: list[tuple[str, str]], what: str) -> str:
    for old, new in edits:
        if old not in text:
            raise AssertionError(f"{what}: kolla's rendered file no longer holds {old!r}")
        text = text.replace(old, new)
    return text


@dataclass
class Process:
    """A server process until :meth:`stop`."""

    name: str
    proc: subprocess.Popen
    log: Path
    _out: io.TextIOBase | None = field(default=None, repr=False)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        if self._out is not None:
            self._out.close()
            self._out = None


def _spawn(name: str, args: list[str], workdir: Path, env: dict[str, str]) -> Process:
    (workdir / "log").mkdir(exist_ok=True)
    log = workdir / f"{name}.out"
    out = log.open("w")
    proc = subprocess.Popen(args, cwd=workdir, stdout=out, stderr=subprocess.STDOUT,
                            env={**os.environ, **env}, start_new_session=True)
    return Process(name, proc, log, out)


def wait_until(check: Callable[[], bool], process: Process, what: str,
               logs: tuple[Path, ...] = ()) -> None:
    """Poll ``check`` until true; fail with the logs if the process exits or
    the time runs out."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while True:
        if process.proc.poll() is not None:
            raise RuntimeError(f"{process.name} exited before {what}:\n" + _tails(process, logs))
        try:
            if check():
                return
        except (requests.RequestException, OSError):
            pass
        if time.monotonic() > deadline:
            process.stop()
            raise RuntimeError(f"{process.name}: no {what} in time:\n" + _tails(process, logs))
        time.sleep(0.2)


def _tails(process: Process, logs: tuple[Path, ...]) -> str:
    parts = [process.log_text()[-3000:]]
    parts += [p.read_text(errors="replace")[-3000:] for p in logs if p.exists()]
    return "\n---\n".join(parts)


def _answers_root(url: str) -> bool:
    return requests.get(url + "/", timeout=5).status_code == 200


def server_env(config_dir: Path) -> dict[str, str]:
    """Where placement.wsgi.api reads placement.conf (kolla's
    /etc/placement): upstream's OS_PLACEMENT_CONFIG_DIR."""
    return {"OS_PLACEMENT_CONFIG_DIR": str(config_dir)}


def start_uwsgi(venv: Path, ini: Path, config_dir: Path, workdir: Path,
                listen: str) -> Process:
    """``uwsgi /etc/placement/placement-api-uwsgi.ini`` (kolla's config.json
    command) with the lane's uWSGI and the project's venv as its
    virtualenv (UWSGI_VIRTUALENV: uWSGI takes any option from UWSGI_*), as
    kolla's image has its own."""
    edited = workdir / "placement-api-uwsgi.ini"
    edited.write_text(edit(ini.read_text(), uwsgi_edits(workdir), ini.name))
    args = [str(venv / "bin" / "uwsgi"), str(edited)]
    env = {**server_env(config_dir), "UWSGI_VIRTUALENV": str(PROJECT_VENV),
           "PATH": f"{PROJECT_VENV / 'bin'}:{os.environ.get('PATH', '')}"}
    process = _spawn("uwsgi", args, workdir, env)
    wait_until(lambda: _answers_root(f"http://{listen}"), process, "answer on " + listen,
               (workdir / "log" / "placement-api-uwsgi.log",))
    return process


def uwsgi_edits(workdir: Path) -> list[tuple[str, str]]:
    """The container's log directory in kolla's uWSGI ini, and this host's."""
    return [("/var/log/kolla/placement", str(workdir / "log"))]


def mod_wsgi_module(venv: Path) -> Path:
    """Debian's mod_wsgi, which must embed the Python ``venv`` is made of."""
    module = APACHE_MODULES / "mod_wsgi.so"
    linked = subprocess.run(["ldd", str(module)], capture_output=True, text=True).stdout
    version = subprocess.run([str(venv / "bin" / "python"), "-c",
                              "import sys; print('%d.%d' % sys.version_info[:2])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    if f"libpython{version}.so" not in linked:
        raise RuntimeError(f"Debian's mod_wsgi does not embed Python {version}:\n{linked}")
    return module


def daemon_user() -> tuple[str, str]:
    """Who runs the WSGI daemon: mod_wsgi refuses root, so root hands it to
    Debian's Apache user, as kolla's image to its placement user."""
    if os.getuid() == 0:
        return "www-data", "www-data"
    return getpass.getuser(), grp.getgrgid(os.getgid()).gr_name


def apache_edits(venv: Path, workdir: Path) -> list[tuple[str, str]]:
    """The container's names in kolla's site file, and this host's."""
    user, group = daemon_user()
    return [
        ("/var/lib/kolla/venv/bin", str(venv / "bin")),
        ("user=placement group=placement", f"user={user} group={group} python-home={venv}"),
        ("/var/log/kolla/placement", str(workdir / "log")),
    ]


def start_apache(venv: Path, site: Path, config_dir: Path, workdir: Path,
                 listen: str) -> Process:
    """Debian's apache2 -DFOREGROUND with kolla's site file included, as in
    kolla's image (conf-enabled/00-placement-api.conf)."""
    edited = workdir / "00-placement-api.conf"
    edited.write_text(edit(site.read_text(), apache_edits(venv, workdir), site.name))
    user, group = daemon_user()
    conf = workdir / "apache2.conf"
    # The server-wide part Debian's apache2.conf would give (ours, minimal).
    conf.write_text(
        f"ServerRoot /etc/apache2\nServerName localhost\n"
        f"DefaultRuntimeDir {workdir}\nPidFile {workdir}/apache2.pid\n"
        f"Mutex file:{workdir} default\nErrorLog {workdir}/apache-error.log\n"
        f"User {user}\nGroup {group}\n"
        f"LoadModule mpm_event_module {APACHE_MODULES}/mod_mpm_event.so\n"
        f"LoadModule authz_core_module {APACHE_MODULES}/mod_authz_core.so\n"
        f"LoadModule wsgi_module {mod_wsgi_module(venv)}\n"
        f"WSGISocketPrefix {workdir}/wsgi\n"
        f"Include {edited}\n")
    process = _spawn("apache2", ["/usr/sbin/apache2", "-f", str(conf), "-DFOREGROUND"],
                     workdir, server_env(config_dir))
    wait_until(lambda: _answers_root(f"http://{listen}"), process, "answer on " + listen,
               (workdir / "apache-error.log", workdir / "log" / "placement-api-error.log"))
    return process


def make_certificate(workdir: Path, host: str) -> tuple[Path, Path]:
    """A throw-away self-signed certificate for ``host`` and 127.0.0.1:
    (haproxy's PEM with the key, the certificate clients trust)."""
    key, cert = workdir / "tls.key", workdir / "tls.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", f"/CN={host}", "-addext",
                    f"subjectAltName=DNS:{host},IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    pem = workdir / "haproxy-internal.pem"
    pem.write_text(cert.read_text() + key.read_text())
    return pem, cert


HAPROXY_CERT = "/etc/haproxy/certificates/haproxy-internal.pem"


def start_haproxy(service_cfg: Path, pem: Path, workdir: Path) -> Process:
    """haproxy with kolla's service file for placement (frontend and
    backend); the global part is ours (no chroot, user or syslog of the
    container), with a stats socket to read the health check's result."""
    cfg = workdir / "haproxy.cfg"
    body = edit(service_cfg.read_text(), [(HAPROXY_CERT, str(pem))], service_cfg.name)
    cfg.write_text(
        "global\n    maxconn 4000\n"
        f"    stats socket {workdir}/haproxy.sock mode 600 level admin\n\n"
        "defaults\n    option redispatch\n    retries 3\n"
        "    timeout http-request 10s\n    timeout http-keep-alive 10s\n"
        "    timeout queue 1m\n    timeout connect 10s\n    timeout client 1m\n"
        "    timeout server 1m\n    timeout check 10s\n    balance roundrobin\n\n" + body)
    process = _spawn("haproxy", ["haproxy", "-f", str(cfg), "-db"], workdir, {})
    wait_until(lambda: all(s["check_status"] == "L7OK" for s in servers(workdir)),
               process, "passing health check")
    return process


def servers(workdir: Path) -> list[dict[str, str]]:
    """haproxy's ``show stat`` rows of backend servers."""
    with socket.socket(socket.AF_UNIX) as sock:
        sock.settimeout(5)
        sock.connect(str(workdir / "haproxy.sock"))
        sock.sendall(b"show stat\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    text = data.decode().lstrip("# ")
    rows = list(csv.DictReader(io.StringIO(text)))
    found = [r for r in rows if r["svname"] not in ("FRONTEND", "BACKEND")]
    if not found:
        raise OSError("no servers yet")
    return found

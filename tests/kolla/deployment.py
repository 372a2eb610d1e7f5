"""A kolla-ansible placement deployment on this host, from kolla's own files.

:func:`deploy` renders the placement role (tests/kolla/render.yml) with the
overrides in :func:`variables` and :data:`CUSTOM_CONF`, runs kolla's
bootstrap as its image does, starts the WSGI server kolla's config.json
names (uWSGI, or Apache with mod_wsgi for the older role) and haproxy with
kolla's service file and TLS in front, and gives the public URL.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import sqlalchemy as sa

from tests.gabbi.servers import open_policy
from tests.kolla import frontends, kolla

# The public name clients use (kolla_internal_fqdn): resolves to loopback
# everywhere, so no resolver needs changing.
PUBLIC_HOST = "localhost"


@dataclass
class Command:
    args: list[str]
    env: dict[str, str]
    returncode: int
    output: str


@dataclass
class Deployment:
    kind: str
    workdir: Path
    node: Path
    config_dir: Path
    database_url: str
    public_url: str
    backend_url: str
    ca_file: Path
    bootstrap: Command
    db_name: str
    venv: Path
    processes: list[frontends.Process] = field(default_factory=list)

    @property
    def home(self) -> Path:
        return self.config_dir.parent

    def run_commands(self, args: list[str], env: dict[str, str] | None = None,
                     ) -> Command:
        """A command as kolla's image runs it: the venv's commands on PATH,
        placement.conf where oslo.config looks without arguments."""
        return run_in_image(self.venv, self.home, args, env or {})

    def stop(self, admin_url: str) -> None:
        for process in reversed(self.processes):
            process.stop()
        drop_database(admin_url, self.db_name, self.db_name)
        shutil.rmtree(self.workdir, ignore_errors=True)


def run_in_image(venv: Path, home: Path, args: list[str], env: dict[str, str]) -> Command:
    # kolla's image keeps placement.conf in /etc/placement; oslo.config's
    # first place is ~/.placement, which HOME points at here.
    full = {**os.environ, "HOME": str(home),
            "PATH": f"{venv / 'bin'}:{os.environ.get('PATH', '')}", **env}
    done = subprocess.run(args, env=full, cwd=home, capture_output=True, text=True,
                          timeout=300)
    return Command(args, env, done.returncode, done.stdout + done.stderr)


def kolla_start(venv: Path, home: Path, which: str) -> Command:
    """kolla's placement-api extend_start.sh with ``which`` set
    (KOLLA_BOOTSTRAP, KOLLA_UPGRADE or KOLLA_OSM), as its image runs it."""
    script = kolla.kolla_file("placement", "placement-api", "extend_start.sh")
    return run_in_image(venv, home, ["bash", str(script)], {which: ""})


def _admin_engine(admin_url: str) -> sa.Engine:
    if admin_url.startswith("mysql://"):
        admin_url = "mysql+pymysql://" + admin_url[len("mysql://"):]
    return sa.create_engine(admin_url)


def create_database(admin_url: str, name: str, user: str, password: str) -> str:
    """The database and user kolla's placement role registers: all
    privileges on its own database only."""
    engine = _admin_engine(admin_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"CREATE DATABASE `{name}`"))
            conn.execute(sa.text(f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'"))
            conn.execute(sa.text(f"GRANT ALL PRIVILEGES ON `{name}`.* TO '{user}'@'%'"))
    finally:
        engine.dispose()
    where = urlsplit(admin_url)
    return f"mysql+pymysql://{user}:{password}@{where.hostname}:{where.port}/{name}"


def drop_database(admin_url: str, name: str, user: str) -> None:
    engine = _admin_engine(admin_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{name}`"))
            conn.execute(sa.text(f"DROP USER IF EXISTS '{user}'@'%'"))
    finally:
        engine.dispose()


def variables(kind: str, admin_url: str, name: str, user: str, password: str,
              public_port: int, listen_port: int, keystone: str | None = None,
              ) -> dict[str, object]:
    """The overrides of kolla's defaults (docs/deploying.md lists them);
    ``keystone``: the URL of the Keystone placement.conf's
    ``[keystone_authtoken]`` names."""
    where = urlsplit(admin_url)
    found = {
        # One host, on loopback; the API's network is lo.
        "network_interface": "lo",
        "kolla_internal_vip_address": "127.0.0.1",
        "kolla_internal_fqdn": PUBLIC_HOST,
        # (kolla derives it with a filter of the ansible.utils collection,
        # which is not on PyPI; one VIP is what it derives here.)
        "kolla_same_external_internal_vip": "yes",
        "kolla_base_distro": "debian",
        # TLS at haproxy for the internal endpoint; none to the database.
        "kolla_enable_tls_internal": "yes",
        "database_enable_tls_internal": "no",
        # The private MariaDB and a database of this run's own.
        "database_address": where.hostname,
        "database_port": str(where.port),
        "placement_database_name": name,
        "placement_database_user": user,
        "placement_database_password": password,
        # haproxy's port and the WSGI server's, both free ones.
        "placement_api_port": str(public_port),
        "placement_api_listen_port": str(listen_port),
        "openstack_service_workers": "2",
        # Tasks kolla runs with become; already root (or the owner) here.
        "ansible_become_method": "su",
        "config_owner_user": frontends.getpass.getuser(),
        "config_owner_group": frontends.grp.getgrgid(os.getgid()).gr_name,
    }
    if keystone is not None:
        # The lane's Keystone (scripts/keystone-test-server) and the
        # password of its placement user, where kolla has its own.
        found["keystone_internal_url"] = found["keystone_public_url"] = keystone
        found["placement_keystone_password"] = "secret"
    if kind == "uwsgi":
        # The container's user (uWSGI drops to it); this host has none.
        found["service_uwsgi_config_uid"] = frontends.getpass.getuser()
    else:
        found["placement_wsgi_provider"] = "apache"
    return found


# The server configurations upstream's gabbi files ask for through their
# fixtures (tests/gabbi/servers.py), as an operator of kolla makes them:
# node_custom_config/placement.conf, and for "open" a policy file in
# node_custom_config/placement/, which kolla's role copies and names.
# "keystone" is kolla's placement.conf as it renders it: Keystone tokens.
CONFIGS = ("default", "secure", "open", "cors", "keystone")


def custom_conf(workdir: Path, config: str = "default") -> dict[str, dict[str, str]]:
    """node_custom_config/placement.conf: the log file out of the
    container's /var/log/kolla and, but for "keystone", noauth2 and the
    policy defaults upstream's gabbi files expect (their fixtures'
    configuration; tests/gabbi's servers have the same)."""
    found = {"DEFAULT": {"log_file": str(workdir / "log" / "placement-api.log")}}
    if config == "keystone":
        return found
    found["api"] = {"auth_strategy": "noauth2"}
    found["oslo_policy"] = {"enforce_new_defaults": str(config == "secure").lower()}
    if config == "cors":
        found["cors"] = {"allowed_origin": "http://valid.example.com",
                         "allow_headers": "openstack-api-version"}
    return found


def custom_files(config: str) -> dict[str, str]:
    """More of the operator's files under node_custom_config."""
    return {"placement/policy.yaml": open_policy()} if config == "open" else {}


def set_configs(node: Path, config_dir: Path) -> None:
    """What kolla_set_configs does at the container's start: copy the files
    config.json lists for /etc/placement (here ``config_dir``)."""
    listed = json.loads((node / "placement-api" / "config.json").read_text())
    for item in listed["config_files"]:
        if not item["dest"].startswith("/etc/placement/"):
            continue
        target = config_dir / item["dest"].removeprefix("/etc/placement/")
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(node / "placement-api" / Path(item["source"]).name, target)
        target.chmod(0o644)


def make_workdir(kind: str) -> Path:
    """A scratch directory Apache's WSGI daemon (another user) can read:
    directly under /tmp, not in pytest's private ones."""
    workdir = Path(tempfile.mkdtemp(prefix=f"allotment-kolla-{kind}."))
    workdir.chmod(0o755)
    (workdir / "log").mkdir(mode=0o755)
    user, group = frontends.daemon_user()
    shutil.chown(workdir / "log", user, group)
    return workdir


def deploy(kind: str, admin_url: str, config: str = "default",
           keystone: str | None = None) -> Deployment:
    """Render, bootstrap and serve, with one of :data:`CONFIGS`
    (``keystone``: the Keystone's URL, for "keystone"); everything made is
    undone if a step fails (a failed bootstrap is kept, for its test to
    report)."""
    assert config in CONFIGS and (config == "keystone") == (keystone is not None)
    tree = kolla.current_tree() if kind == "uwsgi" else kolla.apache_tree()
    venv = kolla.ensure_venv()
    # The venv kolla's image would hold: the project's own under uWSGI,
    # one of Debian's Python for Debian's mod_wsgi.
    project = frontends.PROJECT_VENV if kind == "uwsgi" else kolla.debian_venv()
    workdir = make_workdir(f"{kind}-{config}")
    name = user = f"kolla_{kind}_{secrets.token_hex(4)}"
    password = secrets.token_hex(12)
    found: Deployment | None = None
    try:
        database_url = create_database(admin_url, name, user, password)
        public_port, listen_port = frontends.free_port(), frontends.free_port()
        node = kolla.render(tree, workdir, variables(kind, admin_url, name, user, password,
                                                     public_port, listen_port, keystone),
                            custom_conf(workdir, config), custom_files(config))
        home = workdir / "home"
        config_dir = home / ".placement"
        config_dir.mkdir(parents=True, mode=0o755)
        home.chmod(0o755)
        set_configs(node, config_dir)
        pem, ca_file = frontends.make_certificate(workdir, PUBLIC_HOST)
        bootstrap = kolla_start(project, home, "KOLLA_BOOTSTRAP")
        found = Deployment(kind, workdir, node, config_dir, database_url,
                           f"https://{PUBLIC_HOST}:{public_port}",
                           f"http://127.0.0.1:{listen_port}", ca_file, bootstrap, name, project)
        if bootstrap.returncode:
            return found  # the bootstrap test reports it
        listen = f"127.0.0.1:{listen_port}"
        if kind == "uwsgi":
            found.processes.append(frontends.start_uwsgi(
                venv, node / "placement-api" / "placement-api-uwsgi.ini", config_dir,
                workdir, listen))
        else:
            found.processes.append(frontends.start_apache(
                project, node / "placement-api" / "placement-api-wsgi.conf", config_dir,
                workdir, listen))
        found.processes.append(frontends.start_haproxy(
            node / "haproxy" / "services.d" / "placement-api.cfg", pem, workdir))
    except BaseException:
        if found is not None:
            found.stop(admin_url)
        else:
            drop_database(admin_url, name, user)
            shutil.rmtree(workdir, ignore_errors=True)
        raise
    return found

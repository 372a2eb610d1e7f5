"""kolla-ansible and kolla, at pinned versions, in a venv of their own.

Test-only, like upstream Placement (tests/harness/upstream.py): installed
from PyPI into a cache directory the first time the lane asks for them
(``ALLOTMENT_KOLLA_CACHE``, else /var/cache/allotment-test as root and
``~/.cache/allotment-test`` otherwise), with uWSGI built in the same venv;
a second run installs nothing.  Nothing of them is
copied into the repository: their templates are rendered at test time by
their own roles (tests/kolla/render.yml) from the installed package.
"""

from __future__ import annotations

import configparser
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

# The current release (2026.1): the placement role serves under uWSGI only.
KOLLA_ANSIBLE = "22.2.0"
KOLLA = "22.2.0"
UWSGI = "2.0.31"
# The last release whose placement role can still serve under Apache
# (placement_wsgi_provider: apache, placement-api-wsgi.conf.j2); only its
# role files are read, from the wheel, with the current release's Ansible.
KOLLA_ANSIBLE_APACHE = "20.6.0"

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[1]
# The project's interpreter (not the venv's symlink): the lane's venv is
# made from it, so uWSGI embeds the very Python the project runs on.
_BASE_PYTHON = Path(sys.base_prefix) / "bin" / f"python{sys.version_info[0]}.{sys.version_info[1]}"


def cache_dir() -> Path:
    """Readable by every user (Apache's WSGI daemon runs as www-data and
    reads the Debian venv below): /var/cache when root."""
    found = os.environ.get("ALLOTMENT_KOLLA_CACHE")
    if found:
        return Path(found)
    if os.getuid() == 0:
        return Path("/var/cache/allotment-test")
    return Path.home() / ".cache" / "allotment-test"


def venv_path() -> Path:
    return cache_dir() / f"kolla-ansible-{KOLLA_ANSIBLE}"


def _marker(venv: Path) -> Path:
    return venv / f".kolla-ansible-{KOLLA_ANSIBLE}-kolla-{KOLLA}-uwsgi-{UWSGI}"


def ensure_venv() -> Path:
    """The lane's venv, built once (test workers wait on a lock)."""
    venv = venv_path()
    if _marker(venv).exists():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _marker(venv).exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([str(_BASE_PYTHON), "-m", "venv", str(venv)], check=True)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"]
            subprocess.run([*pip, "--upgrade", "pip"], check=True, stdout=subprocess.DEVNULL)
            subprocess.run([*pip, f"kolla-ansible=={KOLLA_ANSIBLE}", f"kolla=={KOLLA}",
                            f"uwsgi=={UWSGI}"], check=True)
            subprocess.run([str(venv / "bin" / "kolla-genpwd"), "-p", str(_passwords(venv))],
                           check=True, capture_output=True)
            _marker(venv).write_text("ok\n")
    return venv


def _passwords(venv: Path) -> Path:
    # kolla's passwords.yml, filled once by kolla-genpwd as an operator does
    # (throw-away values: nothing listens beyond loopback).
    path = venv / "passwords.yml"
    if not path.exists():
        shutil.copy(venv / "share" / "kolla-ansible" / "etc_examples" / "kolla" / "passwords.yml",
                    path)
    return path


def current_tree() -> Path:
    """kolla-ansible's ``ansible/`` directory of the current release."""
    return ensure_venv() / "share" / "kolla-ansible" / "ansible"


def apache_tree() -> Path:
    """The ``ansible/`` directory of the release that still has Apache."""
    venv = ensure_venv()
    root = cache_dir() / f"kolla-ansible-{KOLLA_ANSIBLE_APACHE}-files"
    if not (root / ".unpacked").exists():
        with open(cache_dir() / f".{root.name}.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not (root / ".unpacked").exists():
                shutil.rmtree(root, ignore_errors=True)
                wheels = root / "wheel"
                subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "download", "-q",
                                "--no-deps", "-d", str(wheels),
                                f"kolla-ansible=={KOLLA_ANSIBLE_APACHE}"], check=True)
                prefix = f"kolla_ansible-{KOLLA_ANSIBLE_APACHE}.data/data/share/kolla-ansible/"
                with zipfile.ZipFile(next(wheels.glob("*.whl"))) as whl:
                    for name in whl.namelist():
                        if name.startswith(prefix + "ansible/"):
                            whl.extract(name, root)
                (root / ".unpacked").write_text("ok\n")
    return root / f"kolla_ansible-{KOLLA_ANSIBLE_APACHE}.data" / "data" / "share" / \
        "kolla-ansible" / "ansible"


DEBIAN_PYTHON = Path(f"/usr/bin/python{sys.version_info[0]}.{sys.version_info[1]}")


def debian_venv() -> Path:
    """The project installed in a venv of Debian's Python, for Debian's
    mod_wsgi, which embeds that Python (kolla's image likewise has its
    venv made from the distribution's Python).  The project's own .venv
    will not do: mod_wsgi refuses to run as root, and another user may not
    be able to read the Python it is made from.  Editable: the code served
    is this checkout's; rebuilt when pyproject.toml changes."""
    key = hashlib.sha256(str(_ROOT).encode() + (_ROOT / "pyproject.toml").read_bytes()
                         + (_ROOT / "compat" / "placement-compat" / "pyproject.toml").read_bytes())
    venv = cache_dir() / f"project-debian-python-{key.hexdigest()[:12]}"
    marker = venv / ".installed"
    if marker.exists():
        return venv
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            shutil.rmtree(venv, ignore_errors=True)
            subprocess.run([str(DEBIAN_PYTHON), "-m", "venv", "--without-pip", str(venv)],
                           check=True)
            # The project's pip installs into it (Debian's venv module has
            # no pip without python3-venv).
            subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"),
                            "install", "-q", "-e", str(_ROOT),
                            "-e", str(_ROOT / "compat" / "placement-compat")], check=True)
            marker.write_text("ok\n")
    return venv


def kolla_file(*parts: str) -> Path:
    """A file kolla (the image builder) ships, e.g. the placement-api image's
    extend_start.sh."""
    return ensure_venv() / "share" / "kolla" / "docker" / Path(*parts)


def render(tree: Path, workdir: Path, variables: dict[str, object],
           custom: dict[str, dict[str, str]], files: dict[str, str] | None = None) -> Path:
    """Run kolla's placement config tasks from ``tree`` on this host.

    ``variables`` are passed as extra variables (over kolla's group_vars,
    role defaults and passwords.yml); ``custom`` is written to
    ``node_custom_config/placement.conf``, the file an operator uses to
    change placement.conf, which kolla's merge_configs folds in; ``files``
    are more of the operator's files, by path under ``node_custom_config``
    (``placement/policy.yaml``, which the role copies and names in
    placement.conf).  Returns ``node_config_directory``.
    """
    venv = ensure_venv()
    node = workdir / "node"
    (node / "haproxy" / "services.d").mkdir(parents=True, exist_ok=True)
    custom_dir = workdir / "custom"
    custom_dir.mkdir(exist_ok=True)
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_dict(custom)
    with (custom_dir / "placement.conf").open("w") as fh:
        parser.write(fh)
    for relative, text in (files or {}).items():
        (custom_dir / relative).parent.mkdir(parents=True, exist_ok=True)
        (custom_dir / relative).write_text(text)
    inventory = workdir / "inventory"
    inventory.mkdir(exist_ok=True)
    (inventory / "group_vars").unlink(missing_ok=True)
    (inventory / "group_vars").symlink_to(tree / "group_vars")
    (inventory / "hosts").write_text(
        "[placement-api]\n"
        f"localhost ansible_connection=local ansible_python_interpreter={venv}/bin/python\n"
        "[memcached]\n")
    extra = json.dumps({"kolla_roles": str(tree / "roles"), "node_config_directory": str(node),
                        "node_custom_config": str(custom_dir), **variables})
    # Roles and group_vars from ``tree``; plugins (merge_configs, the
    # filters) always from the current release, which fit its Ansible.
    plugins = current_tree()
    env = {**os.environ, "ANSIBLE_ROLES_PATH": str(tree / "roles"),
           "ANSIBLE_FILTER_PLUGINS": str(plugins / "filter_plugins"),
           "ANSIBLE_ACTION_PLUGINS": str(plugins / "action_plugins"),
           "ANSIBLE_LIBRARY": str(plugins / "library"),
           "ANSIBLE_MODULE_UTILS": str(plugins / "module_utils"),
           "ANSIBLE_LOCAL_TEMP": str(workdir / "ansible-tmp"),
           "ANSIBLE_HOME": str(workdir / "ansible-home"),
           # The 2025.1 role tests a list for truth (``when:
           # placement_policy.results``), which the current Ansible refuses
           # unless told to allow it, as that role's own Ansible did.
           "ANSIBLE_ALLOW_BROKEN_CONDITIONALS": "1", "ANSIBLE_PIPELINING": "1",
           "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0"}
    args = [str(venv / "bin" / "ansible-playbook"), "-i", str(inventory / "hosts"),
            str(_HERE / "render.yml"), "-e", f"@{_passwords(venv)}", "-e", extra]
    done = subprocess.run(args, env=env, cwd=workdir, capture_output=True, text=True,
                          timeout=300)
    (workdir / "ansible.log").write_text(done.stdout + done.stderr)
    if done.returncode:
        failed = [line for line in done.stdout.splitlines()
                  if line.startswith(("fatal:", "[ERROR]", "ERROR"))]
        raise RuntimeError("rendering kolla's placement configuration failed:\n"
                           + "\n".join(failed)[-4000:] + "\n" + done.stderr[-3000:])
    return node

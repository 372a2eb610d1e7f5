"""allotment servers for the gabbi lane: one database per backend, and on
it a server per configuration the upstream files need (default policy,
the new policy defaults, an open policy, CORS), started when first needed."""

from __future__ import annotations

from pathlib import Path

from allotment.auth import policies
from allotment.storage import db as db_mod
from tests.conftest import clean
from tests.harness import backends
from tests.harness.servers import Server, start_allotment

_POLICY = "[oslo_policy]\nenforce_new_defaults = {new}\n"
CONFIGS = {
    "default": _POLICY.format(new="false"),
    "secure": _POLICY.format(new="true"),
    "open": _POLICY.format(new="false") + "policy_file = {workdir}/policy.yaml\n",
    "cors": _POLICY.format(new="false") + (
        "\n[cors]\nallowed_origin = http://valid.example.com\n"
        "allow_headers = openstack-api-version\n"),
}


def open_policy() -> str:
    """A policy file where every rule but the base admin rule allows
    anyone (upstream's OpenPolicyFixture)."""
    lines = [f'"{rule.name}": "@"' for rule in policies.list_rules()
             if rule.name != "admin_api"]
    return "\n".join(lines) + "\n"


class Backend:
    """One backend's database and the servers started on it."""

    def __init__(self, name: str, scratch: Path) -> None:
        self.name = name
        self.scratch = scratch
        self.url = backends.create_database(name, scratch, prefix="allotment_gabbi")
        self.servers: dict[str, Server] = {}
        self._db: db_mod.Database | None = None

    def server(self, config: str) -> Server:
        found = self.servers.get(config)
        if found is None:
            workdir = self.scratch / config
            workdir.mkdir(parents=True, exist_ok=True)
            if config == "open":
                (workdir / "policy.yaml").write_text(open_policy())
            found = self.servers[config] = start_allotment(
                self.url, workdir, workers=1,
                extra_conf=CONFIGS[config].format(workdir=workdir))
        return found

    def clean(self) -> None:
        """Empty the database; every server's world reloads."""
        if self._db is None:
            self._db = db_mod.Database(db_mod.create_engine(self.url))
        clean(self._db)

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()
        if self._db is not None:
            self._db.dispose()
        backends.drop_database(self.name, self.url)

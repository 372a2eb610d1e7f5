"""placement-status: upstream Placement's ``upgrade check``, for allotment.

openstack-ansible and devstack run ``placement-status upgrade check
[--json]`` before and after an upgrade and stop on its exit status
(oslo.upgradecheck's: 0 success, 1 warning, 2 failure, 255 error).  The
checks are what an operator switching between upstream Placement and
allotment needs to know: whether the schema is adopted, whether the change
feed and every trigger feeding it are in place, whether the database user
and server give what allotment relies on, whether the policy file still
means what it meant, and whether both distributions are installed.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import yaml
from oslo_config import cfg
from oslo_upgradecheck import common_checks, upgradecheck

from allotment import __version__, distributions
from allotment import conf as conf_mod
from allotment.auth import policies
from allotment.storage import audit, foreign, migration, readiness, tables
from allotment.storage import db as db_mod

Result = upgradecheck.Result
Code = upgradecheck.Code
_RUN_SYNC = "Run 'placement-manage db sync' (allotment's)."
_RUN_ONLINE = "Run 'placement-manage db online_data_migrations'."


def _guarded(check: Callable[[Checks], Result]) -> Callable[[Checks], Result]:
    """A check that could not look (database unreachable...) fails, naming
    why, instead of ending the whole command with a traceback."""

    @functools.wraps(check)
    def run(self: Checks) -> Result:
        try:
            return check(self)
        except Exception as exc:
            return Result(Code.FAILURE, f"Could not check: {type(exc).__name__}: {exc}")

    return run


class Checks(upgradecheck.UpgradeCommands):
    def __init__(self, conf: cfg.ConfigOpts) -> None:
        self.conf = conf
        self._database: db_mod.Database | None = None

    @property
    def database(self) -> db_mod.Database:
        if self._database is None:
            self._database = db_mod.Database.from_conf(self.conf)
        return self._database

    def _state(self) -> migration.State:
        return migration.state(self.database.engine)

    def _check_distributions(self) -> Result:
        reason = distributions.conflict()
        return Result(Code.SUCCESS) if reason is None else Result(Code.FAILURE, reason)

    @_guarded
    def _check_schema(self) -> Result:
        found = self._state()
        if found.empty:
            return Result(Code.FAILURE, "The database holds no Placement schema. " + _RUN_SYNC)
        try:
            migration.check(self.database.engine)
        except migration.SchemaError as exc:
            return Result(Code.FAILURE, str(exc))
        head = migration.head_revision(self.database.engine)
        if found.upstream in migration.LEGACY:
            return Result(Code.WARNING, "The schema is an earlier allotment's. " + _RUN_SYNC)
        if found.own is None:
            return Result(Code.WARNING, (
                "This is upstream Placement's database, not adopted yet: allotment's "
                "processes will not serve it. " + _RUN_SYNC + " It adds allotment's "
                "change feed and triggers; upstream keeps serving the database."))
        if found.own != head:
            return Result(Code.WARNING, f"allotment's schema is at {found.own}, this "
                          f"allotment's is {head}. " + _RUN_SYNC)
        return Result(Code.SUCCESS, f"Adopted: allotment {found.own} on upstream "
                      f"Placement's {found.upstream}.")

    @_guarded
    def _check_change_feed(self) -> Result:
        found = self._state()
        if found.own is None:
            return Result(Code.SUCCESS, "Not adopted yet (see 'Database Schema').")
        missing = [f"table {t.name}" for t in (tables.placement_changes,
                                                tables.placement_feed_state)
                   if t.name not in found.tables]
        with self.database.engine.connect() as conn:
            present = foreign.installed(conn)
        missing += [f"trigger {name} ({event} on {table})"
                    for name, table, event in foreign.all_triggers() if name not in present]
        if missing:
            return Result(Code.FAILURE, (
                "Missing: " + "; ".join(missing) + ". Without them writes by other "
                "programs never reach allotment's processes. " + _RUN_SYNC))
        return Result(Code.SUCCESS)

    @_guarded
    def _check_privileges(self) -> Result:
        engine = self.database.engine
        with engine.connect() as conn:
            if engine.dialect.name == "mysql":
                missing = readiness.mysql_missing_privileges(conn)
                if readiness.mysql_binlog_blocks_triggers(conn):
                    missing.append("SUPER (or the server setting "
                                   "log_bin_trust_function_creators = 1: binary logging "
                                   "is on)")
            elif engine.dialect.name == "postgresql":
                names = sorted({t for _, t, _ in foreign.all_triggers()})
                present = self._state().tables
                missing = readiness.postgresql_missing_privileges(
                    conn, [n for n in names if n in present])
            else:
                return Result(Code.SUCCESS, "SQLite: no privileges to check.")
        if missing:
            return Result(Code.FAILURE, (
                "The database user lacks: " + ", ".join(missing) + ". 'db sync' creates "
                "tables and triggers and the service writes every table."))
        return Result(Code.SUCCESS)

    @_guarded
    def _check_galera(self) -> Result:
        engine = self.database.engine
        if engine.dialect.name != "mysql":
            return Result(Code.SUCCESS, "Not MySQL/MariaDB.")
        with engine.connect() as conn:
            settings = readiness.galera(conn)
        if settings is None:
            return Result(Code.SUCCESS, "Not a Galera node.")
        problems = []
        if settings["wsrep_sync_wait"] != str(readiness.GALERA_SYNC_WAIT):
            problems.append(
                f"wsrep_sync_wait is {settings['wsrep_sync_wait']} in allotment's sessions, "
                f"not {readiness.GALERA_SYNC_WAIT}: reads could miss writes made through "
                "another node (does a proxy reset session variables?)")
        if settings["wsrep_ready"] != "ON":
            problems.append("wsrep_ready is OFF: this node does not accept queries")
        if problems:
            return Result(Code.FAILURE, "; ".join(problems) + ".")
        return Result(Code.SUCCESS)

    @_guarded
    def _check_root_providers(self) -> Result:
        if not self._state().tables >= {"resource_providers"}:
            return Result(Code.SUCCESS)
        with self.database.read() as conn:
            bad = audit.bad_roots(conn)
        if bad:
            return Result(Code.WARNING, (
                f"{len(bad)} resource provider(s) whose stored root provider is not the "
                "top of their parent chain. " + _RUN_ONLINE))
        return Result(Code.SUCCESS)

    @_guarded
    def _check_incomplete_consumers(self) -> Result:
        if not self._state().tables >= {"allocations", "consumers"}:
            return Result(Code.SUCCESS)
        with self.database.read() as conn:
            missing = [f for f in audit.allocations_without_owner(conn)
                       if f.missing == "consumer"]
        if missing:
            return Result(Code.WARNING, (
                f"There are {len(missing)} incomplete consumers table records for "
                "existing allocations; allotment answers for them with the incomplete "
                "consumer project and user ([placement] incomplete_consumer_project_id)."))
        return Result(Code.SUCCESS)

    def _check_policy_json(self) -> Result:
        return common_checks.check_policy_json(self, self.conf)

    @_guarded
    def _check_policy_rules(self) -> Result:
        path = self.conf.find_file(self.conf.oslo_policy.policy_file)
        if not path:
            return Result(Code.SUCCESS, "No policy file: the defaults apply.")
        with open(path, encoding="utf-8") as handle:
            rules = yaml.safe_load(handle) or {}
        if not isinstance(rules, dict):
            return Result(Code.FAILURE, f"{path} is not a mapping of rule names to rules.")
        defaults = {rule.name: rule for rule in policies.list_rules()}
        notes = []
        for name, check in rules.items():
            rule = defaults.get(name)
            if rule is None:
                notes.append(f"'{name}' is not one of Placement's rules (a typo, or a "
                             "rule of another service?)")
            elif rule.deprecated_rule is not None and str(check).strip() == str(
                    rule.deprecated_rule.check_str):
                notes.append(
                    f"'{name}' sets '{check}', the default before Wallaby, which stays "
                    f"in force whatever [oslo_policy] enforce_new_defaults says; the "
                    f"default now is '{rule.check_str}'")
        if notes:
            return Result(Code.WARNING, f"In {path}: " + "; ".join(notes) + ".")
        return Result(Code.SUCCESS)

    _upgrade_checks = (
        ("Placement Distributions", _check_distributions),
        ("Database Schema", _check_schema),
        ("Change Feed", _check_change_feed),
        ("Database Privileges", _check_privileges),
        ("Galera Settings", _check_galera),
        ("Missing Root Provider IDs", _check_root_providers),
        ("Incomplete Consumers", _check_incomplete_consumers),
        ("Policy File JSON to YAML Migration", _check_policy_json),
        ("Policy File Rules", _check_policy_rules),
    )


def main(argv: list[str] | None = None) -> int:
    conf = cfg.ConfigOpts()
    conf_mod.register_opts(conf)
    checks = Checks(conf)
    upgradecheck.register_cli_options(conf, checks)
    conf(sys.argv[1:] if argv is None else argv, project="placement",
         version=__version__)
    # oslo.upgradecheck's check() reads --json from its module's CONF.
    upgradecheck.CONF = conf
    try:
        return upgradecheck.run(conf)
    finally:
        if checks._database is not None:
            checks._database.dispose()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

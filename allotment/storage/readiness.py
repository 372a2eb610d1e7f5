"""What the database server grants and sets that allotment relies on.

Read by ``placement-status upgrade check`` before and after an operator
switches a cloud to allotment:

* privileges: ``db sync`` creates tables and the triggers that report other
  programs' writes to the change feed (storage/foreign.py), and the
  service reads and writes every table;
* on MySQL/MariaDB with binary logging, creating a trigger needs ``SUPER``
  or the server setting ``log_bin_trust_function_creators``;
* on a Galera node, allotment's sessions must be causal
  (``wsrep_sync_wait = 7``, set on every connection by storage/db.py): a
  server or proxy that refuses or resets it lets a reader miss a write
  acknowledged through another node (docs/reliability.md).
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

# What allotment's user needs on Placement's database (MySQL's names).
MYSQL_PRIVILEGES = ("SELECT", "INSERT", "UPDATE", "DELETE", "CREATE", "ALTER",
                    "DROP", "INDEX", "TRIGGER")
# The sessions' causal-read level storage/db.py sets on a Galera node:
# reads, updates and deletes, inserts (1 + 2 + 4).
GALERA_SYNC_WAIT = 7


def _mysql_grantee(conn: Connection) -> str:
    user, _, host = conn.execute(sa.text("SELECT CURRENT_USER()")).scalar_one().rpartition("@")
    return f"'{user}'@'{host}'"


def mysql_missing_privileges(conn: Connection) -> list[str]:
    """Of :data:`MYSQL_PRIVILEGES`, those the connected user holds neither
    globally nor on the current database (grants through roles and on
    single tables are not counted)."""
    grantee = _mysql_grantee(conn)
    held = {row[0].upper() for row in conn.execute(sa.text(
        "SELECT privilege_type FROM information_schema.user_privileges "
        "WHERE grantee = :g UNION "
        "SELECT privilege_type FROM information_schema.schema_privileges "
        "WHERE grantee = :g AND DATABASE() LIKE table_schema"), {"g": grantee})}
    if "ALL PRIVILEGES" in held:
        return []
    return [p for p in MYSQL_PRIVILEGES if p not in held]


def mysql_binlog_blocks_triggers(conn: Connection) -> bool:
    """Whether binary logging stops this user from creating triggers (no
    ``SUPER``, ``log_bin_trust_function_creators`` off)."""
    log_bin, trust = conn.execute(sa.text(
        "SELECT @@GLOBAL.log_bin, @@GLOBAL.log_bin_trust_function_creators")).one()
    if not int(log_bin) or int(trust):
        return False
    grantee = _mysql_grantee(conn)
    return not conn.execute(sa.text(
        "SELECT COUNT(*) FROM information_schema.user_privileges WHERE grantee = :g "
        "AND privilege_type = 'SUPER'"), {"g": grantee}).scalar_one()


def galera(conn: Connection) -> dict[str, str] | None:
    """On a Galera node, the settings allotment relies on as this session
    sees them; None elsewhere."""
    rows = dict(conn.execute(sa.text("SHOW VARIABLES LIKE 'wsrep_on'")).all())
    if str(rows.get("wsrep_on", "OFF")).upper() != "ON":
        return None
    status = dict(conn.execute(sa.text("SHOW STATUS LIKE 'wsrep_ready'")).all())
    return {
        "wsrep_sync_wait": str(conn.execute(
            sa.text("SELECT @@SESSION.wsrep_sync_wait")).scalar_one()),
        "wsrep_ready": str(status.get("wsrep_ready", "OFF")).upper(),
    }


def postgresql_missing_privileges(conn: Connection, table_names: list[str]) -> list[str]:
    """What the connected role lacks: ``CREATE`` on its schema, and
    ``TRIGGER`` or the reads and writes on each of ``table_names``."""
    missing = []
    if not conn.execute(sa.text(
            "SELECT has_schema_privilege(current_schema(), 'CREATE')")).scalar_one():
        missing.append("CREATE on schema")
    for table in table_names:
        for privilege in ("SELECT", "INSERT", "UPDATE", "DELETE", "TRIGGER"):
            if not conn.execute(sa.text("SELECT has_table_privilege(:t, :p)"),
                                {"t": table, "p": privilege}).scalar_one():
                missing.append(f"{privilege} on {table}")
    return missing

"""On MySQL and MariaDB, compare strings by their exact bytes.

A name is its exact characters on PostgreSQL and SQLite: "Host" and "host",
"rack 1" and "rack 1 ", "naïve" and "naive" are different providers,
resource classes, traits or projects.  MySQL's default collations fold case,
accents and trailing spaces, so two names the API keeps apart would collide
in a unique index, and a lookup could find the wrong row.  Every table is
converted to utf8mb4 (4-byte characters too) with a binary collation that
does not pad: ``utf8mb4_nopad_bin`` on MariaDB, ``utf8mb4_0900_bin`` on
MySQL 8.  Other databases are left as they are.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

TABLES = (
    "resource_classes", "traits", "resource_providers", "inventories",
    "placement_aggregates", "resource_provider_aggregates", "resource_provider_traits",
    "projects", "users", "consumer_types", "consumers", "allocations",
    "placement_changes", "placement_feed_state",
)


def _collation(bind) -> str:
    version = bind.execute(sa.text("SELECT VERSION()")).scalar() or ""
    return "utf8mb4_nopad_bin" if "mariadb" in version.lower() else "utf8mb4_0900_bin"


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "mysql":
        return
    collation = _collation(bind)
    for table in TABLES:
        op.execute(f"ALTER TABLE `{table}` CONVERT TO CHARACTER SET utf8mb4 "
                   f"COLLATE {collation}")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "mysql":
        return
    for table in TABLES:
        op.execute(f"ALTER TABLE `{table}` CONVERT TO CHARACTER SET utf8mb4 "
                   "COLLATE utf8mb4_general_ci")

"""Alembic environment: runs migrations on the engine handed over in code.

Two histories share it (see storage/migration.py): upstream Placement's
tables, versioned in upstream's own ``alembic_version`` table, and
allotment's additions, versioned in ``allotment_version``.
"""

from alembic import context

from allotment.storage import tables

config = context.config


def _run(connection) -> None:
    context.configure(connection=connection, target_metadata=tables.metadata,
                      version_table=config.attributes.get("version_table", "alembic_version"),
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


# A connection handed over is in a transaction of the caller's, who commits
# it (storage/legacy.py converts and migrates in one transaction).
given = config.attributes.get("connection")
if given is not None:
    _run(given)
else:
    with config.attributes["engine"].connect() as connection:
        _run(connection)
        connection.commit()

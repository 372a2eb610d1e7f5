"""Alembic environment: runs migrations on the engine handed over in code."""

from alembic import context

from allotment.storage import tables

config = context.config
engine = config.attributes["engine"]

with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=tables.metadata,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()

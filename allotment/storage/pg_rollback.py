"""Rolling back on PostgreSQL without forgetting the prepared statements.

psycopg prepares a statement on a connection once the connection has run it
a few times, and PostgreSQL then settles on one plan for it (planning a
claim's statements costs the server more than running them: 0.1 to 0.9 ms
each).  At every rollback psycopg forgets all of them and sends
``DEALLOCATE ALL``, in case the transaction had created an object a
statement was prepared for.  A claim that lost its race (a 409), a refused
write or a deadlock would then cost its connection about ten plans of each
statement it runs again: five runs unprepared, five more planned for their
values.

Prepared statements belong to the session, not to the transaction:
PostgreSQL keeps them through a rollback, those prepared inside it too.
And allotment's transactions create no object a statement could be
prepared for (the schema changes only in migrations, whose statements run
once).  So the rollback goes straight through libpq, and psycopg's
statements stay.  A connection in any other state than in a transaction
(idle, busy, in a pipeline, broken), or a rollback that does not answer as
expected, takes psycopg's own rollback, which also reports a lost
connection the usual way.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Engine


def install(engine: Engine) -> None:
    """Make ``engine``'s rollbacks (a transaction's, and the pool's on a
    connection's return) keep psycopg's prepared statements."""
    from psycopg import pq

    dialect = engine.dialect
    fallback = dialect.do_rollback
    in_transaction = (pq.TransactionStatus.INTRANS, pq.TransactionStatus.INERROR)
    idle, pipeline_off = pq.TransactionStatus.IDLE, pq.PipelineStatus.OFF
    command_ok = pq.ExecStatus.COMMAND_OK

    def do_rollback(dbapi_connection: Any) -> None:
        pgconn = getattr(dbapi_connection, "pgconn", None)
        if pgconn is not None and pgconn.pipeline_status == pipeline_off:
            status = pgconn.transaction_status
            if status == idle:
                return  # nothing open: psycopg would send nothing either
            if status in in_transaction:
                try:
                    result = pgconn.exec_(b"ROLLBACK")
                except Exception:  # psycopg's rollback says what went wrong
                    result = None
                if (result is not None and result.status == command_ok
                        and pgconn.transaction_status == idle):
                    return
        fallback(dbapi_connection)

    dialect.do_rollback = do_rollback

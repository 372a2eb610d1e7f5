"""The statements an engine sends, recorded while a block runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event
from sqlalchemy.engine import Engine

from allotment.storage.db import Database


@contextmanager
def recording(target: Engine | Database) -> Iterator[list[str]]:
    """Every statement ``target`` (an engine, or every engine of a
    database) sends in the block, its whitespace folded to single spaces,
    in the order sent."""
    sent: list[str] = []
    engines = target.engines if isinstance(target, Database) else (target,)

    def record(conn, cursor, statement, parameters, context, executemany):
        sent.append(" ".join(statement.split()))

    for engine in engines:
        event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", record)


@contextmanager
def mysql_commands() -> Iterator[list[str]]:
    """Every command any PyMySQL connection sends to its server in the
    block, SQLAlchemy's or not (the pool's pings, the driver's own SET
    AUTOCOMMIT, COMMIT and ROLLBACK): a query as its text, a ping as
    ``PING``.  Each is a round trip."""
    from pymysql import connections
    from pymysql.constants import COMMAND

    sent: list[str] = []
    execute = connections.Connection._execute_command

    def record(self, command, sql):
        if command == COMMAND.COM_PING:
            sent.append("PING")
        else:
            text = sql.decode(errors="replace") if isinstance(sql, bytes) else str(sql)
            sent.append(" ".join(text.split()))
        return execute(self, command, sql)

    connections.Connection._execute_command = record
    try:
        yield sent
    finally:
        connections.Connection._execute_command = execute

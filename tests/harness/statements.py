"""The statements an engine sends, recorded while a block runs."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import event
from sqlalchemy.engine import Engine


@contextmanager
def recording(engine: Engine) -> Iterator[list[str]]:
    """Every statement ``engine`` sends in the block, its whitespace folded
    to single spaces, in the order sent."""
    sent: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        sent.append(" ".join(statement.split()))

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)

"""The hottest statements, run straight on psycopg's cursor on PostgreSQL.

SQLAlchemy's execution path costs about 110 us of CPU a statement on top of
the driver (execution context, result metadata, cursor wrapping); psycopg's
own cursor, kept for the connection and reused, costs about 40 us.  A
provider, inventory or trait write makes four to six statements and is
bound by CPU when writes arrive together, so the difference is a quarter of
a write's whole cost.

Only a statement that runs exactly as SQLAlchemy would run it goes this way:
no parameter or result type processing on the dialect (the driver's own
values are then the values SQLAlchemy would hand back), no parameter that
expands at execution (``IN`` lists), no column named like an attribute of a
row, and no listener on cursor executions (tests count statements that
way).  The first run of each statement, with each set of parameter names,
goes through SQLAlchemy as before, and what it learns there (the SQL as
SQLAlchemy sent it, the names of the columns) is reused.  Everything else,
and every other backend, goes through ``Connection.execute``.

Statements that one caller needs together (:func:`together`) go to the
server in one round trip there, through psycopg's pipeline mode.

A driver error is raised as the same SQLAlchemy exception the ordinary path
raises, and a lost connection is invalidated the same way, so
storage/faults.py answers for it unchanged.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

# (statement, names of its parameters) -> _Plan, or None for a statement
# that cannot go directly.
_PLANS: dict[tuple, _Plan | None] = {}
_UNKNOWN = object()
_CURSOR_KEY = "allotment_direct_cursor"


class Rows:
    """What the callers of a direct statement read from its result: the
    subset of SQLAlchemy's ``Result`` they use, over rows already fetched."""

    __slots__ = ("_rows", "rowcount")

    def __init__(self, rows: list, rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    def __iter__(self) -> Iterator:
        return iter(self._rows)

    def all(self) -> list:
        return list(self._rows)

    def first(self) -> Any:
        return self._rows[0] if self._rows else None

    def scalar(self) -> Any:
        return self._rows[0][0] if self._rows else None

    def scalars(self) -> list:
        return [row[0] for row in self._rows]


class _Row(tuple):
    """A row whose columns are also attributes, as SQLAlchemy's Row."""

    __slots__ = ()
    _index: Mapping[str, int] = {}

    def __getattr__(self, name: str) -> Any:
        try:
            return self[self._index[name]]
        except KeyError:
            raise AttributeError(name) from None

    @property
    def _mapping(self) -> dict[str, Any]:
        return {name: self[i] for name, i in self._index.items()}


class _Plan:
    __slots__ = ("arrays", "compiled", "row_type", "sql")

    def __init__(self, compiled: Any, sql: str, keys: list[str] | None,
                 arrays: tuple[str, ...] = ()) -> None:
        self.compiled = compiled
        self.sql = sql
        # Array parameters, whose only processing is "make it a list".
        self.arrays = arrays
        self.row_type = None
        if keys is not None:
            self.row_type = type("Row", (_Row,), {
                "__slots__": (), "_index": {k: i for i, k in enumerate(keys)}})

    def rows(self, cursor: Any) -> list:
        """The rows of this statement's result on ``cursor``, as rows."""
        if self.row_type is None:
            return []
        make = self.row_type
        return [make(row) for row in cursor.fetchall()]

    def bind(self, params: Mapping[str, Any] | None) -> dict[str, Any]:
        bound = self.compiled.construct_params(params)
        for name in self.arrays:
            if bound[name] is not None:
                bound[name] = list(bound[name])
        return bound


def _eligible(conn: Connection) -> bool:
    dispatch = conn.dispatch
    return (conn.dialect.name == "postgresql" and conn.dialect.driver == "psycopg"
            and not dispatch.before_cursor_execute and not dispatch.after_cursor_execute)


def _learn(conn: Connection, result: Any) -> _Plan | None:
    """How to run again what ``result`` came from, or None if it cannot go
    directly: SQLAlchemy's first run says how it compiled the statement (for
    an INSERT or UPDATE that depends on the parameters given) and the names
    of the columns."""
    context = result.context
    compiled = context.compiled
    if compiled is None or context.executemany:
        return None
    dialect = conn.dialect
    arrays: list[str] = []
    for name, bind in compiled.binds.items():
        if bind.expanding or bind.literal_execute:
            return None
        if bind.type.dialect_impl(dialect).bind_processor(dialect) is None:
            continue
        if not _plain_array(bind.type, dialect):
            return None
        arrays.append(name)
    keys = None
    columns = list(getattr(compiled.statement, "exported_columns", ()))
    # An INSERT that returns nothing to its caller may still return the new
    # id to SQLAlchemy (which has read it already): no rows, as for the caller.
    if result.returns_rows and columns:
        keys = list(result.keys())
        if any(hasattr(_Row, key) for key in keys):
            return None
        described = result.cursor.description or ()
        if len(columns) != len(keys) or len(described) != len(keys):
            return None
        for column, (_name, type_code, *_rest) in zip(columns, described, strict=True):
            impl = column.type.dialect_impl(dialect)
            if impl.result_processor(dialect, type_code) is not None:
                return None
    return _Plan(compiled, context.statement, keys, tuple(arrays))


def _plain_array(type_: Any, dialect: Any) -> bool:
    """An array of values the driver takes as they are: SQLAlchemy's only
    processing of it makes the sequence a list (see _Plan.bind)."""
    return (isinstance(type_, sa.ARRAY) and type_.dimensions in (None, 1)
            and type_.item_type.dialect_impl(dialect).bind_processor(dialect) is None)


def _cursor(conn: Connection):
    """psycopg's cursor kept for this driver connection."""
    pooled = conn.connection
    driver = pooled.driver_connection
    kept = pooled.info.get(_CURSOR_KEY)
    if kept is not None and kept[0] is driver and not kept[1].closed:
        return kept[1]
    cursor = driver.cursor()
    pooled.info[_CURSOR_KEY] = (driver, cursor)
    return cursor


def execute(conn: Connection, statement: sa.Executable,
            params: Mapping[str, Any] | list[Mapping[str, Any]] | None = None) -> Any:
    """Run ``statement`` as ``conn.execute`` would; returns its rows.

    The result is either SQLAlchemy's own or a ``Rows``: read it through
    iteration, ``all``, ``first``, ``scalar``, ``scalars`` or ``rowcount``.
    A list of several parameter sets always goes through SQLAlchemy (which
    sends them as one statement).
    """
    if isinstance(params, list):
        if len(params) != 1:
            return conn.execute(statement, params)
        params = params[0]
    if not _eligible(conn):
        return conn.execute(statement, params)
    key = _key(statement, params)
    plan = _PLANS.get(key, _UNKNOWN)
    if plan is _UNKNOWN:
        result = conn.execute(statement, params)
        try:
            plan = _learn(conn, result)
        except Exception:  # anything unforeseen: the ordinary path, always
            plan = None
        # Threads that learn the same statement at once learn the same plan.
        _PLANS[key] = plan
        return result
    if plan is None:
        return conn.execute(statement, params)
    bound = plan.bind(params)
    cursor = _cursor(conn)
    try:
        cursor.execute(plan.sql, bound)
        rows = plan.rows(cursor)
    except conn.dialect.loaded_dbapi.Error as exc:
        _raise_as_sqlalchemy(conn, exc, plan.sql, bound, cursor)
    return Rows(rows, cursor.rowcount)


def _key(statement: sa.Executable, params: Mapping[str, Any] | None) -> tuple:
    """What a plan is kept under: the statement and its parameters' names."""
    return (statement, tuple(params) if params else ())


def together(conn: Connection,
             statements: Sequence[tuple[sa.Executable, Mapping[str, Any]]]) -> list[list]:
    """The rows of each of ``statements``, in order, as ``execute`` gives them.

    On PostgreSQL with psycopg they go in one round trip (psycopg's
    pipeline mode), BEGIN included when they open the transaction: a
    process catching up after a write reads the feed and the trees it names
    together instead of in six round trips.  Each statement must have run
    once through ``execute`` with the same parameter names (which learns
    how); until then, and on every other backend, they run one by one.
    """
    plans = [_PLANS.get(_key(statement, params), _UNKNOWN) for statement, params in statements]
    if (len(statements) < 2 or not _eligible(conn) or not _pipeline_supported()
            or any(plan is _UNKNOWN or plan is None for plan in plans)):
        return [list(execute(conn, statement, params)) for statement, params in statements]
    driver = conn.connection.driver_connection
    cursors: list = []
    sent = None
    try:
        with driver.pipeline():
            for plan, (_statement, params) in zip(plans, statements, strict=True):
                sent = (plan.sql, plan.bind(params))
                cursor = driver.cursor()
                cursors.append(cursor)
                cursor.execute(*sent)
        # Leaving the pipeline waited for every result.
        return [plan.rows(cursor) for plan, cursor in zip(plans, cursors, strict=True)]
    except conn.dialect.loaded_dbapi.Error as exc:
        # The error names no statement: the last one sent stands for them.
        sql, bound = sent if sent is not None else ("", {})
        _raise_as_sqlalchemy(conn, exc, sql, bound, cursors[-1] if cursors else None)
    finally:
        for cursor in cursors:
            cursor.close()


@functools.cache
def _pipeline_supported() -> bool:
    """psycopg's pipeline mode needs libpq 14 or later."""
    import psycopg

    return bool(psycopg.Pipeline.is_supported())


def _raise_as_sqlalchemy(conn: Connection, exc: Exception, sql: str,
                         params: Mapping[str, Any], cursor) -> None:
    dialect = conn.dialect
    lost = dialect.is_disconnect(exc, conn.connection.driver_connection, cursor)
    if lost:
        conn.invalidate(exc)
    raise sa.exc.DBAPIError.instance(
        sql, params, exc, dialect.loaded_dbapi.Error,
        connection_invalidated=lost, dialect=dialect) from exc

"""The hottest statements, run straight on the driver's cursor: psycopg's
on PostgreSQL, PyMySQL's on MySQL and MariaDB, sqlite3's on SQLite.

SQLAlchemy's execution path costs about 110 us of CPU a statement on top of
the driver on PostgreSQL (execution context, result metadata, cursor
wrapping); psycopg's own cursor, kept for the connection and reused, costs
about 40 us.  On SQLite a one-row read costs about 9 us on sqlite3's cursor
against 34 us through SQLAlchemy.  A provider, inventory or trait write
makes four to six statements, a claim eight to eleven, and they are bound
by CPU when writes arrive together, so the difference is a quarter of a
write's whole cost or more.

Only a statement that runs exactly as SQLAlchemy would run it goes this way:
its parameters and result columns are processed by the same type processors
SQLAlchemy would apply (SQLite's dates are text to the driver), and there is
no parameter that expands at execution (``IN`` lists: callers that need one
build a statement per length, see :func:`in_`), no default computed in
Python, no column named like an attribute of a row, and no listener on
cursor executions (tests count statements that way).  The first run of each
statement, with each set of parameter names, goes through SQLAlchemy as
before, and what it learns there (the SQL as SQLAlchemy sent it, the order
of positional parameters, the processors, the names of the columns) is
reused.  Everything else, and every other driver, goes through
``Connection.execute``.

Statements that one caller needs together (:func:`together`) go to the
server in one round trip there, through psycopg's pipeline mode.

A driver error is raised as the same SQLAlchemy exception the ordinary path
raises, and a lost connection is invalidated the same way, so
storage/faults.py answers for it unchanged.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

# Per dialect, i.e. per engine (what a statement compiles to is the
# dialect's, and its plans refer to it, so it is kept as long as they are: a
# process has one engine): (statement, names of its parameters) -> _Plan, or
# None for a statement that cannot go directly.
_PLANS: dict[Any, dict[tuple, _Plan | None]] = {}
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
    __slots__ = ("compiled", "convert", "positions", "processors", "row_type", "sql")

    def __init__(self, compiled: Any, sql: str, keys: list[str] | None,
                 processors: Mapping[str, Any], positions: Sequence[str] | None,
                 convert: Sequence[tuple[int, Any]] = ()) -> None:
        self.compiled = compiled
        self.sql = sql
        # What SQLAlchemy does to a parameter's value before the driver
        # sees it, by name; the names in the order of the placeholders for
        # a driver that takes them by position (sqlite3).
        self.processors = dict(processors)
        self.positions = tuple(positions) if positions is not None else None
        # (column index, what SQLAlchemy does to the driver's value).
        self.convert = tuple(convert)
        self.row_type = None
        if keys is not None:
            # Each column an attribute read in C (as a named tuple's), not
            # through __getattr__: rows are read column by column, in loops.
            columns = {k: property(operator.itemgetter(i)) for i, k in enumerate(keys)}
            self.row_type = type("Row", (_Row,), {
                "__slots__": (), "_index": {k: i for i, k in enumerate(keys)}, **columns})

    def rows(self, cursor: Any) -> list:
        """The rows of this statement's result on ``cursor``, as rows."""
        if self.row_type is None:
            return []
        make = self.row_type
        if not self.convert:
            return [make(row) for row in cursor.fetchall()]
        found = []
        for row in cursor.fetchall():
            values = list(row)
            for index, process in self.convert:
                values[index] = process(values[index])
            found.append(make(values))
        return found

    def bind(self, params: Mapping[str, Any] | None) -> Any:
        """The parameters as the driver takes them: a dict, or a tuple in
        the placeholders' order."""
        bound = self.compiled.construct_params(params, escape_names=False)
        for name, process in self.processors.items():
            bound[name] = process(bound[name])
        if self.positions is not None:
            return tuple([bound[name] for name in self.positions])
        return bound


# The drivers whose cursor a statement may run on, by (dialect, driver).
_DRIVERS = {("postgresql", "psycopg"), ("mysql", "pymysql"), ("sqlite", "pysqlite")}


def _eligible(conn: Connection) -> bool:
    dialect = conn.dialect
    dispatch = conn.dispatch
    return ((dialect.name, dialect.driver) in _DRIVERS
            and not dispatch.before_cursor_execute and not dispatch.after_cursor_execute)


def _learn(conn: Connection, result: Any) -> _Plan | None:
    """How to run again what ``result`` came from, or None if it cannot go
    directly: SQLAlchemy's first run says how it compiled the statement (for
    an INSERT or UPDATE that depends on the parameters given), how it
    processes values in and out, and the names of the columns."""
    context = result.context
    compiled = context.compiled
    if (compiled is None or context.executemany or compiled.literal_execute_params
            or compiled.post_compile_params or compiled.insert_prefetch
            or compiled.update_prefetch or compiled.schema_translate_map
            or compiled.escaped_bind_names):
        return None
    if any(bind.expanding or bind.literal_execute for bind in compiled.binds.values()):
        return None
    processors = {name: process for name, process in compiled._bind_processors.items()
                  if process is not None}
    if any(not callable(process) for process in processors.values()):
        return None  # a tuple's, one per element
    positions = compiled.positiontup if compiled.positional else None
    if compiled.positional and positions is None:
        return None
    dialect = conn.dialect
    keys = None
    convert: list[tuple[int, Any]] = []
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
        for index, (column, (_name, type_code, *_rest)) in enumerate(
                zip(columns, described, strict=True)):
            process = column.type._cached_result_processor(dialect, type_code)
            if process is not None:
                convert.append((index, process))
    return _Plan(compiled, context.statement, keys, processors, positions, convert)


def _cursor(conn: Connection):
    """The driver's cursor kept for this driver connection (only psycopg's
    can be closed under it, by a lost connection)."""
    pooled = conn.connection
    driver = pooled.driver_connection
    kept = pooled.info.get(_CURSOR_KEY)
    if kept is not None and kept[0] is driver and not getattr(kept[1], "closed", False):
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
    plans = _plans(conn)
    key = _key(statement, params)
    plan = plans.get(key, _UNKNOWN)
    if plan is _UNKNOWN:
        result = conn.execute(statement, params)
        try:
            plan = _learn(conn, result)
        except Exception:  # anything unforeseen: the ordinary path, always
            plan = None
        # Threads that learn the same statement at once learn the same plan.
        plans[key] = plan
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


def _plans(conn: Connection) -> dict[tuple, _Plan | None]:
    """The plans learned on ``conn``'s dialect."""
    dialect = conn.dialect
    plans = _PLANS.get(dialect)
    if plans is None:
        plans = _PLANS.setdefault(dialect, {})
    return plans


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
    known = _plans(conn)
    plans = [known.get(_key(statement, params), _UNKNOWN) for statement, params in statements]
    if (len(statements) < 2 or conn.dialect.name != "postgresql" or not _eligible(conn)
            or not _pipeline_supported()
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


# Lists of up to this many values may be bound one parameter each (see in_);
# longer ones expand at execution, through SQLAlchemy.
LISTED_UP_TO = 16


def in_(column: Any, name: str, count: int) -> Any:
    """``column IN (:name_0, ... :name_<count-1>)``: a list of known length
    bound as parameters of their own, so that the statement's text is the
    same for every list of that length and it may go to the driver (an
    expanding ``IN`` is rendered afresh at every execution).  Callers keep
    one statement per length, up to ``LISTED_UP_TO``."""
    if not count:
        return sa.false()
    return column.in_([sa.bindparam(f"{name}_{k}", type_=column.type) for k in range(count)])


def listed(name: str, values: Sequence[Any]) -> dict[str, Any]:
    """The parameters of :func:`in_` for ``values``."""
    return {f"{name}_{k}": value for k, value in enumerate(values)}


def execute_sql(conn: Connection, sql: str) -> None:
    """Run a statement of fixed text that takes no parameters and returns no
    rows (``BEGIN IMMEDIATE``) as ``conn.exec_driver_sql`` would."""
    if not _eligible(conn):
        conn.exec_driver_sql(sql)
        return
    cursor = _cursor(conn)
    try:
        cursor.execute(sql)
    except conn.dialect.loaded_dbapi.Error as exc:
        _raise_as_sqlalchemy(conn, exc, sql, (), cursor)

"""Scratch MySQL/MariaDB databases on a server the caller names."""

from __future__ import annotations

import uuid

import sqlalchemy as sa

from allotment.storage import db as db_mod


def _admin(server_url: str) -> sa.Engine:
    return sa.create_engine(db_mod.normalise_url(server_url), isolation_level="AUTOCOMMIT")


def create_database(server_url: str, prefix: str = "allotment_scratch") -> str:
    """A new, empty database (utf8mb4) on the server; returns its URL."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    admin = _admin(server_url)
    with admin.connect() as conn:
        conn.execute(sa.text(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4"))
    admin.dispose()
    return (sa.engine.make_url(db_mod.normalise_url(server_url)).set(database=name)
            .render_as_string(hide_password=False))


def drop_database(database_url: str) -> None:
    url = sa.engine.make_url(db_mod.normalise_url(database_url))
    admin = _admin(url.set(database="mysql").render_as_string(hide_password=False))
    with admin.connect() as conn:
        conn.execute(sa.text(f"DROP DATABASE IF EXISTS `{url.database}`"))
    admin.dispose()

"""Persistence: SQLAlchemy Core tables, Alembic migrations and all SQL."""

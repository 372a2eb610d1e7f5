"""The database fixture, as ``placement.tests.fixtures.Database``."""

from allotment_nova_fixture.database import Database

__all__ = ["Database"]

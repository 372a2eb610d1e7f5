"""How many statements the hot writes send, and that the short forms still
behave as the long ones did.

On a database server every statement is a round trip, and loading a cloud
through the API is bound by them; these tests pin the counts where a
shorter form exists, so a change that adds round trips back is noticed.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Iterator

import pytest
from sqlalchemy import event

from allotment import errors
from allotment.service import resource_providers as provider_service
from allotment.storage import resource_providers as store


@pytest.fixture
def statements(db) -> Iterator[list[str]]:
    """The first word of every statement sent while the test runs."""
    sent: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany):
        sent.append(statement.lstrip().split(None, 1)[0].upper())

    event.listen(db.engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(db.engine, "before_cursor_execute", record)


def _uuid() -> str:
    return str(uuidlib.uuid4())


def test_a_new_root_provider_is_one_insert_on_postgresql(db, statements):
    row = provider_service.create_provider(db, name="one-insert", uuid=_uuid())
    assert row.root_provider_id == row.id and row.parent_provider_id is None
    if db.backend == "postgresql":
        # The provider's row (its own root already) and the change feed's.
        assert statements.count("SAVEPOINT") == 0
        assert [s for s in statements if s != "SELECT"] == ["WITH", "INSERT"]


def test_a_new_child_names_its_root_on_every_backend(db):
    root = provider_service.create_provider(db, name="root", uuid=_uuid())
    child = provider_service.create_provider(db, name="child", uuid=_uuid(),
                                             parent_uuid=root.uuid)
    grandchild = provider_service.create_provider(db, name="grandchild", uuid=_uuid(),
                                                  parent_uuid=child.uuid)
    assert (child.root_provider_id, child.parent_provider_id) == (root.id, root.id)
    assert (grandchild.root_provider_id, grandchild.parent_provider_id) == (root.id, child.id)
    with db.read() as conn:

        stored = store.get_by_uuid(conn, grandchild.uuid)
        assert (stored.root_provider_id, stored.root_provider_uuid) == (root.id, root.uuid)
        assert store.get_by_uuid(conn, root.uuid).root_provider_id == root.id


@pytest.mark.parametrize("taken", ["uuid", "name", "both"])
def test_a_taken_uuid_or_name_is_reported_and_nothing_is_written(db, taken):
    first = provider_service.create_provider(db, name="taken", uuid=_uuid())
    uuid = first.uuid if taken in ("uuid", "both") else _uuid()
    name = first.name if taken in ("name", "both") else "free"
    with pytest.raises(errors.Conflict) as caught:
        provider_service.create_provider(db, name=name, uuid=uuid)
    parts = {"uuid": f"uuid: {uuid}", "name": f"name: {name}",
             "both": f"uuid: {uuid}, name: {name}"}
    assert str(caught.value.detail) == (
        f"Conflicting resource provider {parts[taken]} already exists.")
    # The transaction that found the conflict wrote nothing, and the next
    # write goes through.
    with db.read() as conn:

        assert store.get_by_uuid(conn, first.uuid).id == first.id
        if uuid != first.uuid:
            assert store.get_by_uuid(conn, uuid) is None
        assert not store.name_taken(conn, "free")
    assert provider_service.create_provider(db, name="free", uuid=_uuid()).name == "free"

"""Consumers: who holds allocations, and the generation that guards them.

A consumer exists exactly while it holds allocations: it is created by the
first write that gives it some and removed by the write that takes its last
one away.  Everything here runs inside the caller's write transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import Connection, Row

from allotment import errors
from allotment.storage import consumers as store
from allotment.storage.new_claims import NewConsumer


@dataclass(frozen=True)
class ConsumerRequest:
    """What a write says about one consumer.

    ``generation`` is only compared when ``check_generation`` (microversion
    1.28 on); None there means "I expect this consumer not to exist yet".
    ``consumer_type`` is None when the request could not name one (before
    1.38); an existing consumer then keeps its type.
    """

    uuid: str
    project_id: str
    user_id: str
    generation: int | None = None
    check_generation: bool = False
    consumer_type: str | None = None


@dataclass
class ConsumerState:
    id: int | None  # None while a new consumer's row is not written yet (``new``)
    uuid: str
    generation: int
    created: bool
    # A new consumer whose row the caller writes with its allocations
    # (storage.new_claims), when it asked for that.
    new: NewConsumer | None = None


def _conflict(expected: object, got: object) -> errors.ConcurrentUpdate:
    return errors.ConcurrentUpdate(
        f"consumer generation conflict - expected {expected} but got {got}")


def check_and_write_consumer(conn: Connection, request: ConsumerRequest,
                             existing: Row | None, *, created_generation: int = 0,
                             owner: store.OwnerIds | None = None,
                             create_later: bool = False) -> ConsumerState:
    """Check the caller's view of the consumer, then create or update it.

    ``existing`` is the consumer's current row (None when it does not exist);
    ``owner``, when given, the ids of the request's project, user and type
    read with it (store.get_with_owner).  With ``create_later`` a new
    consumer is not written here: the state's ``new`` says what the caller
    is to write.
    The generation of an existing consumer is not bumped here: the
    allocation write does that once it has succeeded, with a guarded UPDATE.
    A new consumer is created at ``created_generation`` (what it will have
    once the write commits: nobody else can have seen it before).

    :raises errors.ConcurrentUpdate: the generation the caller gave does not
        match.
    """
    if existing is not None:
        if request.check_generation and existing.generation != request.generation:
            raise _conflict(existing.generation, request.generation)
    elif request.check_generation and request.generation is not None:
        raise _conflict("null", request.generation)

    project_id, user_id, type_id = store.ensure_owner(
        conn, request.project_id, request.user_id, request.consumer_type, read=owner)

    if existing is None and create_later:
        new = NewConsumer(request.uuid, project_id, user_id, type_id, created_generation)
        return ConsumerState(None, request.uuid, created_generation, created=True, new=new)
    if existing is None:
        consumer_id = store.create(conn, uuid=request.uuid, project_id=project_id,
                                   user_id=user_id, consumer_type_id=type_id,
                                   generation=created_generation)
        return ConsumerState(consumer_id, request.uuid, created_generation, created=True)

    new_type = type_id if type_id is not None else existing.consumer_type_id
    if (project_id, user_id, new_type) != (
            existing.project_id, existing.user_id, existing.consumer_type_id):
        # The latest writer names the owner, as upstream does.
        store.update_owner(conn, existing.id, project_id=project_id,
                           user_id=user_id, consumer_type_id=new_type)
    return ConsumerState(existing.id, existing.uuid, existing.generation, created=False)

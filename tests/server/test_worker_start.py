"""What a worker of allotment-api does when it starts from its parent's
world: the parent prepared the database (schema, triggers, the standard
names) just before it read that world, so the worker does not again; a
process that reads its own world still prepares the database first."""

from __future__ import annotations

import sqlalchemy as sa

from allotment.auth.policy import Policy
from allotment.server.app import create_app
from allotment.service import setup
from tests.harness.wsgi_client import Client

TRAIT = "HW_CPU_X86_SSE42"


def _drop_standard_trait(db) -> None:
    # By hand, behind allotment's back: only a start's sync puts it back.
    with db.engine.begin() as conn:
        conn.execute(sa.text("DELETE FROM traits WHERE name = :name"), {"name": TRAIT})


def test_a_worker_given_its_parents_world_leaves_the_database_as_prepared(conf, db):
    setup.prepare_database(db, conf)
    shared = setup.load_world(db)
    _drop_standard_trait(db)
    worker = Client(create_app(conf, db=db, world=shared, policy=Policy(conf)))
    assert worker.get(f"/traits/{TRAIT}").status == 404


def test_a_process_reading_its_own_world_prepares_the_database(conf, db):
    setup.prepare_database(db, conf)
    _drop_standard_trait(db)
    alone = Client(create_app(conf, db=db))
    assert alone.get(f"/traits/{TRAIT}").status == 204

"""GET /resource_providers (and a provider's usages) answered from the world equals SQL.

Random worlds are written through the services; then every combination of
filters in a battery is answered both by the in-memory listing and by the
SQL one, and the answers (and refusals) must agree.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allotment import errors
from allotment.service import resource_providers as provider_service
from allotment.service.resource_providers import ProviderFilters
from allotment.world.sync import Replica
from tests.harness import sql_answers
from tests.world.test_sync import AGGS, CLASSES, KINDS, TRAITS, Cloud

pytestmark = pytest.mark.slow


def _answer(fn, source, filters):
    try:
        rows = fn(source, filters)
    except errors.PlacementError as exc:
        return ("error", exc.status, exc.detail)
    return [(r.uuid, r.name, r.generation, r.parent_provider_uuid, r.root_provider_uuid,
             r.created_at, r.updated_at) for r in rows]


def _usages(fn, source, uuid):
    try:
        generation, usages = fn(source, uuid)
    except provider_service.ProviderNotFound:
        return None
    # The order is part of the answer: compare it too.
    return generation, list(usages.items())


def _filters(rnd: random.Random, uuids: list[str], names: list[str]) -> ProviderFilters:
    f = ProviderFilters()
    if uuids and rnd.random() < 0.15:
        f.uuid = rnd.choice([*uuids, "00000000-0000-0000-0000-00000000dead"])
    if names and rnd.random() < 0.15:
        f.name = rnd.choice([*names, "nobody"])
    if uuids and rnd.random() < 0.2:
        f.in_tree = rnd.choice([*uuids, "00000000-0000-0000-0000-00000000dead"])
    if rnd.random() < 0.3:
        f.member_of = [frozenset(rnd.sample(AGGS, rnd.randint(1, 2)))
                       for _ in range(rnd.randint(1, 2))]
    if rnd.random() < 0.15:
        f.forbidden_aggregates = set(rnd.sample(AGGS, 1))
    traits = [*TRAITS, "CUSTOM_UNKNOWN"] if rnd.random() < 0.1 else TRAITS
    if rnd.random() < 0.3:
        f.required_traits = [frozenset(rnd.sample(traits, rnd.randint(1, 2)))
                             for _ in range(rnd.randint(1, 2))]
    if rnd.random() < 0.15:
        f.forbidden_traits = set(rnd.sample(traits, 1))
    if rnd.random() < 0.4:
        classes = [*CLASSES, "CUSTOM_NOPE"] if rnd.random() < 0.1 else CLASSES
        f.resources = {rc: rnd.choice([1, 2, 3, 7, 2**31])
                       for rc in rnd.sample(classes, rnd.randint(1, 2))}
    return f


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_listing_from_the_world_equals_the_sql_listing(db, seed):
    from tests.conftest import clean

    clean(db)
    rnd = random.Random(seed)
    cloud = Cloud([db], rnd)
    cloud.prepare()
    for _ in range(40):
        cloud.attempt(db, rnd.choice(KINDS))
    replica = Replica(db)
    rows = sql_answers.list_providers_from_database(db, ProviderFilters())
    uuids = [r.uuid for r in rows]
    names = [r.name for r in rows]
    for uuid in [*uuids, "00000000-0000-0000-0000-00000000dead", "not-a-uuid"]:
        assert (_usages(provider_service.get_usages, replica, uuid)
                == _usages(sql_answers.get_usages_from_database, db, uuid)), uuid
    for _ in range(60):
        f = _filters(rnd, uuids, names)
        assert (_answer(provider_service.list_providers, replica, f)
                == _answer(sql_answers.list_providers_from_database, db, f)), f

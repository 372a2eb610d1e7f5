"""A database upstream Placement 16.0.0 filled, taken over and handed back.

On each backend: upstream builds a world through its API and its answers to
every read are recorded; ``allotment-manage db sync`` adopts the database and
allotment must give the same answers; allotment writes, its answers are
recorded; ``allotment-manage db downgrade upstream`` hands the database back,
which must then be exactly upstream's schema at its head revision (as a
fresh ``placement-manage db sync`` makes it), with upstream's ``db sync`` a
no-op, and upstream must give allotment's answers and take writes again.
"""

from __future__ import annotations

import pytest

from tests.adoption import dump, manage, reads, world, writes
from tests.adoption.http import Api
from tests.harness.backends import BACKENDS
from tests.harness.servers import start_allotment, start_upstream

pytestmark = pytest.mark.slow


def _upstream_schema(make_database, backend: str, workdir) -> dict:
    """The schema a fresh ``placement-manage db sync`` makes on ``backend``."""
    url = make_database(backend)
    result = manage.placement_manage(workdir, url, "db", "sync")
    assert result.code == 0, result.text
    return dump.schema(url)


def _report(title: str, found: list[str]) -> list[str]:
    return [f"{title}: {len(found)} differences", *found[:40]] if found else []


@pytest.mark.parametrize("backend", BACKENDS)
def test_upstream_world_survives_adoption_and_hand_back(backend, fresh_database, tmp_path):
    url = fresh_database(backend)
    problems: list[str] = []

    with start_upstream(url, tmp_path / "upstream-before") as up:
        built = world.build(Api(up.url))
        upstream_before, varying = reads.record_twice(up.url, built)
    upstream_rows = dump.rows(url)

    adopted = manage.allotment_manage(tmp_path / "manage", url, "db", "sync")
    assert adopted.code == 0, f"adoption failed:\n{adopted.text}"
    # Adoption adds to the database; it changes none of upstream's rows.
    after_rows = dump.rows(url)
    changed = [t for t in upstream_rows if after_rows.get(t) != upstream_rows[t]]
    problems += [f"adoption changed the rows of {t}" for t in changed]

    with start_allotment(url, tmp_path / "allotment") as al:
        adopted_answers = reads.record(al.url, built)
        problems += _report("allotment after adoption vs upstream before",
                            reads.differences(upstream_before, adopted_answers, varying,
                                              upstream_side="expected"))
        writes.apply(Api(al.url), built)
        allotment_answers = reads.record(al.url, built)

    handed = manage.allotment_manage(tmp_path / "manage", url, "db", "downgrade", "upstream")
    assert handed.code == 0, f"hand-back failed:\n{handed.text}"
    version = manage.placement_manage(tmp_path / "manage", url, "db", "version")
    assert (version.code, version.out.strip()) == (0, manage.UPSTREAM_HEAD), version.text

    handed_back = dump.everything(url)
    problems += _report("schema handed back vs a fresh upstream schema", dump.differences(
        _upstream_schema(fresh_database, backend, tmp_path / "fresh"), handed_back["schema"]))
    synced = manage.placement_manage(tmp_path / "manage", url, "db", "sync")
    assert synced.code == 0, synced.text
    problems += _report("upstream's db sync after hand-back (must change nothing)",
                        dump.differences(handed_back, dump.everything(url)))

    with start_upstream(url, tmp_path / "upstream-after") as up:
        upstream_after, varying = reads.record_twice(up.url, built)
        problems += _report("upstream after hand-back vs allotment before it",
                            reads.differences(allotment_answers, upstream_after, varying,
                                              upstream_side="actual"))
        # Upstream writes again: nothing allotment left behind gets in its way.
        api = Api(up.url)
        rp = built.add_provider(api, "host-after-hand-back")
        api.inventories(rp, {"VCPU": {"total": 4}})
        api.allocate(world.uid("consumer-after-hand-back"), {rp: {"VCPU": 1}},
                     project=world.PROJECTS[0], user=world.USERS[0])
        assert api.ok("GET", f"/resource_providers/{rp}/usages")["usages"] == {"VCPU": 1}

    assert not problems, "\n".join(problems)


"""A trigger MariaDB keeps disabled in a cached table (storage/faults.py,
``broken_trigger``): the write that meets it is run again once the trigger
is created anew, never a 500, and every world reads the database again.

MariaDB keeps a table instance whose triggers failed to parse in its table
cache, and every write through that instance fails with error 1064 naming
the trigger.  Here the failure is made to happen on purpose: the trigger's
stored definition is damaged on disk and the table's cached instances are
closed, so the next open parses the damaged text.  (The server's data
directory must be on this machine, as the test servers' are.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sqlalchemy as sa

from allotment.storage import feed, foreign
from tests.api.test_resource_providers import create

TRIGGER = "allotment_fw_resource_providers_upd"


def _trigger_file(conn) -> Path:
    datadir = conn.exec_driver_sql("SELECT @@datadir").scalar()
    database = conn.exec_driver_sql("SELECT DATABASE()").scalar()
    return Path(datadir) / database / "resource_providers.TRG"


def _damage(db) -> str:
    """Damage ``TRIGGER``'s stored body and make the server read it; returns
    the definition as it was."""
    with db.engine.connect() as conn:
        before = conn.exec_driver_sql(f"SHOW CREATE TRIGGER {TRIGGER}").one()[2]
        path = _trigger_file(conn)
        if not os.access(path, os.W_OK):
            pytest.skip("the MariaDB server's data directory is not on this machine")
        text = path.read_text()
        start = text.index(f"TRIGGER {TRIGGER} ")
        end = text.index("END REPEAT", start)
        path.write_text(text[:end] + "END REPAET" + text[end + len("END REPEAT"):])
        conn.exec_driver_sql("FLUSH TABLES resource_providers")
        # The damage shows: MariaDB refuses new rows in the table now.
        with pytest.raises(sa.exc.ProgrammingError, match="has an error in its body"):
            conn.exec_driver_sql("INSERT INTO resource_providers (uuid, name, generation) "
                                 "VALUES ('x', 'x', 0)")
        conn.rollback()
    return before


def test_a_write_meeting_a_disabled_trigger_is_run_again_once_it_is_created_anew(
        api, db, backend):
    if backend != "mysql":
        pytest.skip("MariaDB's table cache")
    before = _damage(db)
    with db.engine.connect() as conn:
        last = conn.execute(sa.select(sa.func.max(feed.TABLE.c.id))).scalar() or 0

    resp = api.post("/resource_providers", json={"name": "rp"},
                    headers={"OpenStack-API-Version": "placement 1.20"})

    assert resp.status == 200, resp.body
    rp = resp.json["uuid"]
    with db.engine.connect() as conn:
        after = conn.exec_driver_sql(f"SHOW CREATE TRIGGER {TRIGGER}").one()[2]
        rows = conn.execute(sa.select(feed.TABLE.c.data)
                            .where(feed.TABLE.c.id > last)).scalars().all()
        present = foreign.installed(conn)
    assert after == before
    assert present >= {name for name, _, _ in foreign.all_triggers()}
    # Every world reads the database again (a write of another program in
    # the moment the trigger was gone would not have been reported).
    assert any('"r":1' in row for row in rows)
    # The provider is there, once, and the table takes writes again.
    listed = api.get("/resource_providers?name=rp").json["resource_providers"]
    assert [p["uuid"] for p in listed] == [rp]
    assert create(api, "rp2")

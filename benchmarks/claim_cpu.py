"""The CPU one process spends on a claim, a deletion and a move.

Run: ``.venv/bin/python -m benchmarks.claim_cpu [--backend mysql] [--hosts 200]``

Makes a flat world of ``--hosts`` compute hosts (VCPU, MEMORY_MB, DISK_GB)
on a fresh database (SQLite in a temporary directory; PostgreSQL or MariaDB
on the server ``ALLOTMENT_TEST_PG_URL`` / ``ALLOTMENT_TEST_MYSQL_URL``
names), warms up, then times ``--rounds`` rounds of what nova's scheduler
and conductor send, one request after another, in this process:

* ``PUT /allocations/{consumer}``: a new instance claims one host;
* ``POST /allocations``: the instance moves to another host and a migration
  consumer takes over the first host's allocations (a resize), then the
  migration lets them go (the resize confirmed);
* ``DELETE /allocations/{consumer}``: the instance goes.

Each is timed twice: as the API's WSGI app serves it (``--level request``,
parsing, policy and rendering included) or as the service layer runs it
(``--level service``: the write transaction alone).  What is reported is
the CPU time of this thread (``time.thread_time``) per operation, median
and mean in microseconds: SQLite's own work is in it, a database server's
is not.  Asserts nothing but that every request succeeded.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
import uuid as uuidlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tests.harness import backends

INVENTORY = {"VCPU": {"total": 64, "allocation_ratio": 16.0},
             "MEMORY_MB": {"total": 262144, "reserved": 512},
             "DISK_GB": {"total": 100000}}
FLAVOR = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 10}
MICROVERSION = "1.39"


def _uuid() -> str:
    return str(uuidlib.uuid4())


def make_world(db, hosts: int) -> list[str]:
    from allotment.service import inventories, resource_providers

    uuids = []
    for i in range(hosts):
        row = resource_providers.create_provider(db, name=f"host{i}", uuid=_uuid())
        inventories.replace_inventories(db, row.uuid, row.generation, INVENTORY,
                                        reserved_may_equal_total=False)
        uuids.append(row.uuid)
    return uuids


class Service:
    """The operations as the service layer runs them."""

    def __init__(self, db) -> None:
        from allotment.service import allocations
        from allotment.service.consumers import ConsumerRequest

        self.db, self.allocations, self.request = db, allocations, ConsumerRequest

    def _one(self, consumer: str, generation: int | None, host: str | None):
        return self.allocations.ConsumerAllocations(
            self.request(consumer, "project", "user", generation=generation,
                         check_generation=True, consumer_type="INSTANCE"),
            {host: FLAVOR} if host else {})

    def claim(self, consumer: str, host: str) -> None:
        self.allocations.replace_for_consumer(self.db, self._one(consumer, None, host),
                                              attempts=10)

    def move(self, consumer: str, migration: str, source: str, dest: str) -> None:
        self.allocations.replace_many(self.db, [
            self._one(consumer, 1, dest), self._one(migration, None, source)], attempts=10)

    def confirm(self, consumer: str, migration: str, dest: str) -> None:
        self.allocations.replace_many(self.db, [
            self._one(consumer, 2, dest), self._one(migration, 1, None)], attempts=10)

    def delete(self, consumer: str) -> None:
        self.allocations.delete_for_consumer(self.db, consumer)


class Request:
    """The operations as the API's WSGI app serves them."""

    def __init__(self, db, url: str) -> None:
        from allotment import conf as conf_mod
        from allotment.server.app import create_app
        from tests.harness.wsgi_client import Client

        conf = conf_mod.load(config_files=[], overrides={
            "api": {"auth_strategy": "noauth2"}, "placement_database": {"connection": url}})
        self.client = Client(create_app(conf, db=db), version=MICROVERSION)

    def _check(self, response, status: int) -> None:
        if response.status != status:
            raise SystemExit(f"unexpected answer: {response!r}")

    @staticmethod
    def _body(generation: int | None, host: str | None) -> dict:
        return {"allocations": {host: {"resources": FLAVOR}} if host else {},
                "project_id": "project", "user_id": "user",
                "consumer_generation": generation, "consumer_type": "INSTANCE"}

    def claim(self, consumer: str, host: str) -> None:
        self._check(self.client.request("PUT", f"/allocations/{consumer}",
                                        json=self._body(None, host)), 204)

    def move(self, consumer: str, migration: str, source: str, dest: str) -> None:
        self._check(self.client.request("POST", "/allocations", json={
            consumer: self._body(1, dest), migration: self._body(None, source)}), 204)

    def confirm(self, consumer: str, migration: str, dest: str) -> None:
        self._check(self.client.request("POST", "/allocations", json={
            consumer: self._body(2, dest), migration: self._body(1, None)}), 204)

    def delete(self, consumer: str) -> None:
        self._check(self.client.request("DELETE", f"/allocations/{consumer}"), 204)


def run(ops, hosts: list[str], rounds: int) -> dict[str, list[float]]:
    """CPU seconds of each operation, by kind."""
    spent: dict[str, list[float]] = {"PUT": [], "POST move": [], "POST confirm": [],
                                     "DELETE": []}

    def timed(kind: str, work: Callable[..., None], *args: str) -> None:
        start = time.thread_time()
        work(*args)
        spent[kind].append(time.thread_time() - start)

    for i in range(rounds):
        consumer, migration = _uuid(), _uuid()
        source, dest = hosts[i % len(hosts)], hosts[(i * 7 + 1) % len(hosts)]
        timed("PUT", ops.claim, consumer, source)
        timed("POST move", ops.move, consumer, migration, source, dest)
        timed("POST confirm", ops.confirm, consumer, migration, dest)
        timed("DELETE", ops.delete, consumer)
    return spent


@contextlib.contextmanager
def flat_world(backend: str, hosts: int, prefix: str) -> Iterator[tuple[Any, str, list[str]]]:
    """(database, its URL, the hosts' UUIDs) of :func:`make_world` on a fresh
    database of ``backend``, dropped on leaving."""
    from allotment.service import setup
    from allotment.storage import db as db_mod
    from allotment.storage import migration

    with tempfile.TemporaryDirectory(prefix=f"{prefix}.") as tmp:
        url = backends.create_database(backend, Path(tmp), prefix=prefix)
        db = db_mod.Database(db_mod.create_engine(url))
        try:
            migration.upgrade(db.engine)
            setup.sync_standards(db)
            yield db, url, make_world(db, hosts)
        finally:
            db.dispose()
            backends.drop_database(backend, url)


def require_server(parser: argparse.ArgumentParser, backend: str) -> None:
    if backend != "sqlite" and backend not in backends.SERVER_URLS:
        parser.error(f"no server for {backend}: set ALLOTMENT_TEST_PG_URL or "
                     "ALLOTMENT_TEST_MYSQL_URL")


def print_medians(title: str, unit: str, spent: dict[str, list[float]]) -> None:
    """``title``, then each kind's median and mean CPU in microseconds."""
    print(f"{title}: CPU us per {unit} (median / mean)")
    width = max(map(len, spent)) + 1
    for kind, seconds in spent.items():
        print(f"  {kind:{width}s} {1e6 * statistics.median(seconds):7.0f} / "
              f"{1e6 * statistics.fmean(seconds):7.0f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql", "mysql"),
                        default="sqlite")
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--level", choices=("request", "service"), default="request")
    parser.add_argument("--warm-up", type=int, default=50,
                        help="rounds run before the timed ones (statements learned)")
    args = parser.parse_args(argv)
    require_server(parser, args.backend)
    with flat_world(args.backend, args.hosts, "claim_cpu") as (db, url, hosts):
        ops = Request(db, url) if args.level == "request" else Service(db)
        run(ops, hosts, args.warm_up)  # statements learned, caches filled
        spent = run(ops, hosts, args.rounds)
    print_medians(f"{args.backend}, {args.hosts} hosts, {args.rounds} rounds, "
                  f"{args.level} level", "operation", spent)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())

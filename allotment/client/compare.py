"""Compare two Placement services on a sample of reads.

Made for switching a cloud from one Placement implementation to another
(see docs/adopting.md): both serve the same database, so every read must
answer the same.  The sample is chosen from what the first service lists
(providers spread over the UUID range, the consumers holding resources on
them, their projects, and candidate requests bounded to single trees), and
is the same on every run for the same data.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from allotment.client._client import PlacementClient
from allotment.client.versions import LATEST


@dataclass(frozen=True)
class Read:
    path: str
    version: str
    # Candidates and traits come in an order each implementation may choose
    # (upstream's trait listing has none at all).
    unordered: bool = False


@dataclass(frozen=True)
class Difference:
    read: Read
    first: tuple[int, Any]
    second: tuple[int, Any]


def _spread(items: list[str], count: int) -> list[str]:
    """``count`` of ``items``, evenly over the sorted list."""
    items = sorted(items)
    if len(items) <= count:
        return items
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


def _answer(client: PlacementClient, read: Read) -> tuple[int, Any]:
    resp = client.request("GET", read.path, version=read.version, ok=range(100, 600))
    try:
        body = resp.json()
    except ValueError:
        body = resp.body.decode("utf-8", "replace")
    if resp.status >= 400 and isinstance(body, dict):
        # Error details name the request (its id) and word schema failures
        # each in their own way; what a client acts on is the code.
        body = [e.get("code") for e in body.get("errors", [])]
    elif read.unordered and isinstance(body, dict):
        body = {key: sorted(value, key=lambda item: json.dumps(item, sort_keys=True))
                if key in ("allocation_requests", "traits") and isinstance(value, list)
                else value for key, value in body.items()}
    return resp.status, body


def plan(client: PlacementClient, sample: int) -> Iterator[Read]:
    """The reads to compare, learnt from ``client`` as it goes."""
    yield Read("/resource_classes", "1.7")
    yield Read("/traits", "1.6", unordered=True)
    for version in ("1.0", "1.14", LATEST):
        yield Read("/resource_providers", version)
    listed = client.get("/resource_providers", version="1.14").json()["resource_providers"]
    providers = _spread([p["uuid"] for p in listed], sample)
    roots = {p["uuid"]: p["root_provider_uuid"] for p in listed}
    consumers: set[str] = set()
    classes: dict[str, set[str]] = {}
    for uuid in providers:
        base = f"/resource_providers/{uuid}"
        yield Read(base + "/traits", "1.6", unordered=True)
        for suffix, version in (("", LATEST), ("/inventories", LATEST),
                                ("/aggregates", "1.1"),
                                ("/aggregates", LATEST), ("/usages", "1.0"),
                                ("/allocations", LATEST)):
            yield Read(base + suffix, version)
        held = client.get(base + "/allocations", version=LATEST).json()
        consumers.update(held.get("allocations", {}))
        inventory = client.get(base + "/inventories", version=LATEST).json()
        for rc in inventory.get("inventories", {}):
            classes.setdefault(roots[uuid], set()).add(rc)
    projects: set[tuple[str, str]] = set()
    for consumer in _spread(list(consumers), sample):
        for version in ("1.0", "1.12", LATEST):
            yield Read(f"/allocations/{consumer}", version)
        owner = client.get(f"/allocations/{consumer}", version="1.12").json()
        if owner.get("project_id"):
            projects.add((owner["project_id"], owner["user_id"]))
    for project, user in sorted(projects)[:sample]:
        yield Read(f"/usages?project_id={project}", "1.9")
        yield Read(f"/usages?project_id={project}&user_id={user}", LATEST)
    for root, names in sorted(classes.items())[:sample]:
        for rc in sorted(names):
            query = f"/allocation_candidates?resources={rc}:1&in_tree={root}"
            for version in ("1.31", LATEST):  # in_tree came with 1.31
                yield Read(query, version, unordered=True)


def compare(first: PlacementClient, second: PlacementClient, *, sample: int = 20
            ) -> tuple[int, list[Difference]]:
    """How many reads were compared, and those whose status or body differ."""
    count, differences = 0, []
    for read in plan(first, sample):
        count += 1
        a, b = _answer(first, read), _answer(second, read)
        if a != b:
            differences.append(Difference(read, a, b))
    return count, differences

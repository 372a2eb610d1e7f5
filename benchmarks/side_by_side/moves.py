"""Moves in the scheduling mix: a resize or a cold migration, as nova 34 makes it.

nova's conductor first hands the instance's allocations on its source host
to a migration consumer (``GET /allocations/{instance}`` then ``POST
/allocations`` at microversion 1.28, with both consumers' generations), the
scheduler then claims the destination for the instance (``GET
/allocation_candidates``, ``GET /allocations/{instance}``, ``PUT
/allocations/{instance}`` at 1.36), and the move ends one of two ways:

- confirmed: the migration's allocations on the source are dropped (``GET``
  then ``PUT /allocations/{migration}`` with no allocations, at 1.28, as
  ``delete_allocation_for_instance`` does without ``force``);
- reverted: the source allocations go back to the instance, replacing its
  destination ones (``POST /allocations`` moving the migration's to the
  instance, at 1.28, as ``move_allocations`` does).

A move whose destination cannot be claimed within the attempts is reverted
too.  The books then hold the instance's allocations on whichever host it
ended on, and no migration consumer.
"""

from __future__ import annotations

import json
import random
import uuid

from benchmarks.side_by_side.client import Client
from benchmarks.side_by_side.flavors import Flavor

MOVE_VERSION = "1.28"
CONFIRM_SHARE = 0.5  # of finished moves; the others are reverted


def _allocations_of(mover, consumer: str, ledger) -> dict | None:
    status, body, took = mover.request("GET", f"/allocations/{consumer}")
    ledger.move_requests.append(took)
    if status != 200:
        ledger.note(f"move: GET /allocations {status}", body[:200].decode(errors="replace"))
        return None
    return json.loads(body)


def _hand_over(mover, source: str, target: str, ledger) -> bool:
    """Every allocation of ``source`` to ``target`` in one ``POST /allocations``."""
    have = _allocations_of(mover, source, ledger)
    want = _allocations_of(mover, target, ledger)
    if have is None or want is None or not have.get("allocations"):
        return False
    body = {
        source: {"allocations": {}, "project_id": have["project_id"],
                 "user_id": have["user_id"],
                 "consumer_generation": have.get("consumer_generation")},
        target: {"allocations": have["allocations"], "project_id": have["project_id"],
                 "user_id": have["user_id"],
                 "consumer_generation": want.get("consumer_generation")},
    }
    status, answer, took = mover.request("POST", "/allocations", body)
    ledger.move_requests.append(took)
    if status == 204:
        return True
    if status == 409:
        ledger.note("move: 409 handing over", move_conflicts=1)
    else:
        ledger.note(f"move: POST /allocations {status}", answer[:200].decode(errors="replace"))
    return False


def _plain(allocations: dict) -> dict:
    """Allocations as a claim writes them (GET adds each provider's generation)."""
    return {rp: {"resources": dict(a["resources"])} for rp, a in allocations.items()}


def _claim_destination(client, claimer, mover, instance: str, flavor: Flavor,
                       source: dict, ledger, rng: random.Random, attempts: int) -> dict | None:
    """The instance's new allocations, claimed away from its source host."""
    for _ in range(attempts):
        status, body, took = client.request("GET", flavor.path)
        ledger.move_requests.append(took)
        if status != 200:
            ledger.note(f"move: GET candidates {status}", body[:200].decode(errors="replace"))
            return None
        # Another host: a candidate sharing no provider with the source.
        candidates = [c for c in json.loads(body)["allocation_requests"][:50]
                      if not set(c["allocations"]) & set(source)][:10]
        if not candidates:
            ledger.note("move: no room", move_no_room=1)
            return None
        allocations = rng.choice(candidates)["allocations"]
        current = _allocations_of(mover, instance, ledger)
        if current is None:
            return None
        claim = {"allocations": allocations, "project_id": ledger.project,
                 "user_id": ledger.user,
                 "consumer_generation": current.get("consumer_generation")}
        status, body, took = claimer.request("PUT", f"/allocations/{instance}", claim)
        ledger.move_requests.append(took)
        if status == 204:
            return allocations
        if status != 409:
            ledger.note(f"move: PUT {status}", body[:200].decode(errors="replace"))
            return None
        ledger.note("move: 409 claiming", move_conflicts=1)
    return None


def _drop(mover, consumer: str, ledger) -> bool:
    have = _allocations_of(mover, consumer, ledger)
    if have is None:
        return False
    have["allocations"] = {}
    status, body, took = mover.request("PUT", f"/allocations/{consumer}", have)
    ledger.move_requests.append(took)
    if status != 204:
        ledger.note(f"move: dropping the migration's {status}",
                    body[:200].decode(errors="replace"))
    return status == 204


def move_one(client: Client, claimer: Client, mover: Client, flavors: dict[str, Flavor],
             ledger, rng: random.Random, attempts: int) -> bool:
    """Resize or migrate one of the instances ``ledger`` holds; False if none to move.

    ``client`` asks for candidates, ``claimer`` speaks 1.36 and ``mover``
    1.28.  The ledger's ``granted`` follows the instance to where it ends.
    """
    instance = ledger.pick_to_move(rng)
    if instance is None:
        return False
    try:
        flavor = flavors[ledger.flavor_of[instance]]
        migration = str(uuid.uuid4())
        source = ledger.granted[instance]
        if not _hand_over(mover, instance, migration, ledger):
            return True
        dest = _claim_destination(client, claimer, mover, instance, flavor, source,
                                  ledger, rng, attempts)
        confirm = dest is not None and rng.random() < CONFIRM_SHARE
        if confirm and _drop(mover, migration, ledger):
            ledger.moved(instance, _plain(dest), confirmed=True)
            return True
        # Reverted, or the migration still holds the source: put it back.
        if _hand_over(mover, migration, instance, ledger):
            ledger.moved(instance, source, confirmed=False)
        else:
            ledger.note("move: could not revert", move_stuck=1)
            # The books must still say what the service holds.
            ledger.granted[migration] = source
            ledger.granted[instance] = _plain(dest) if dest is not None else {}
        return True
    finally:
        ledger.put_back(instance)

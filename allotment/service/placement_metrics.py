"""What /metrics says about the providers, from the process's world.

The series are openstack-exporter's placement collector's, name for name and
label for label (``hostname`` is the provider's name, ``resourcetype`` the
resource class), so dashboards and alerts written for it keep working; the
exporter reads them with two or three API calls per provider, here one scrape
reads the world the API answers from.  Each provider's lines are kept with
the provider's revision and made again only when it changes, so a scrape of
a large cloud mostly joins text already made.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from allotment.engine.snapshot import RATIO, RESERVED, TOTAL
from allotment.storage import clock, exports, holdings
from allotment.world.sync import Replica

# (name, help) in the order families are written; the per-provider families
# follow the order of a provider's kept lines.
PROVIDER_FAMILIES = (
    ("openstack_placement_resource_total", "Inventory total of a resource class."),
    ("openstack_placement_resource_allocation_ratio", "Allocation ratio of an inventory."),
    ("openstack_placement_resource_reserved", "Reserved amount of an inventory."),
    ("openstack_placement_resource_usage", "Amount of a resource class in use."),
    ("openstack_placement_resource_generation", "Generation of the resource provider."),
)
UP = "openstack_placement_up"
ALLOCATIONS = "openstack_placement_resource_provider_allocations"
FEED_LAG_ROWS = "allotment_feed_lag_rows"
FEED_LAG_SECONDS = "allotment_feed_lag_seconds"
FEED_GAPS_OPEN = "allotment_feed_gaps_open"
PROVIDERS = "allotment_resource_providers"
PREEMPTIBLE = "allotment_preemptible_usage"

_MEMO = "metrics.lines"


def escape(value: str) -> str:
    """A label value as the text format writes it."""
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def number(value: float) -> str:
    if isinstance(value, float) and value.is_integer():
        return repr(value)
    return str(value)


@dataclass(frozen=True)
class Scrape:
    """The text of the provider families and the feed's state at scrape."""

    text: str
    providers: int
    lag_rows: int
    lag_seconds: float
    gaps_open: int


def _family(name: str, help_text: str, lines: Iterator[str] | list[str]) -> str:
    return f"# HELP {name} {help_text}\n# TYPE {name} gauge\n" + "".join(lines)


def _provider_lines(name: str, inventory, generation: int,
                    used: dict[str, int]) -> tuple[str, ...]:
    host = escape(name)
    total, ratio, reserved, usage, gen = [], [], [], [], []
    for rc in sorted(inventory):
        inv = inventory[rc]
        labels = f'{{hostname="{host}",resourcetype="{escape(rc)}"}} '
        total.append(f"{PROVIDER_FAMILIES[0][0]}{labels}{inv[TOTAL]}\n")
        ratio.append(f"{PROVIDER_FAMILIES[1][0]}{labels}{number(float(inv[RATIO]))}\n")
        reserved.append(f"{PROVIDER_FAMILIES[2][0]}{labels}{inv[RESERVED]}\n")
        usage.append(f"{PROVIDER_FAMILIES[3][0]}{labels}{used.get(rc, 0)}\n")
        gen.append(f"{PROVIDER_FAMILIES[4][0]}{labels}{generation}\n")
    return ("".join(total), "".join(ratio), "".join(reserved), "".join(usage),
            "".join(gen))


def scrape(replica: Replica, *, consumer_allocations: bool = False,
           preemptible_types: Sequence[str] = ()) -> Scrape:
    """The provider families of one scrape, with the feed's lag as this
    process found it before catching up; with ``preemptible_types``, what
    consumers of those types hold, per class (docs/extensions/preempt.md)."""
    db = replica.db
    with replica.lock:
        with db.autocommit() as conn:
            rows, oldest = exports.feed_behind(conn, replica.head)
        seconds = 0.0
        if rows and oldest is not None:
            seconds = max(0.0, (clock.utcnow() - oldest.replace(tzinfo=None)).total_seconds())
        with replica.current() as world:
            snap = world.snapshot
            memo = world.memo(_MEMO)
            columns: list[list[str]] = [[] for _ in PROVIDER_FAMILIES]
            count = 0
            for i in snap.live_positions():
                uuid = snap.uuids[i]
                rev = snap.revision(uuid)
                kept = memo.get(uuid)
                if kept is None or kept[0] != rev:
                    kept = memo[uuid] = (rev, _provider_lines(
                        snap.name_of(i), snap.inventory[i], snap.generation_of(i),
                        snap.used.get(uuid, {})))
                for column, text in zip(columns, kept[1], strict=True):
                    column.append(text)
                count += 1
            gaps = len(replica.gaps)
    parts = [_family(UP, "Whether the placement service answered the scrape.",
                     [f"{UP} 1\n"])]
    parts += [_family(name, help_text, column)
              for (name, help_text), column in zip(PROVIDER_FAMILIES, columns, strict=True)]
    if consumer_allocations:
        with db.read() as conn:
            lines = [f'{ALLOCATIONS}{{hostname="{escape(host)}",uuid="{escape(consumer)}",'
                     f'resourcetype="{escape(rc)}"}} {used}\n'
                     for host, consumer, rc, used in exports.consumer_allocations(conn)]
        parts.append(_family(ALLOCATIONS, "Amount a consumer holds of a provider's class.",
                             lines))
    if preemptible_types:
        with db.read() as conn:
            held = holdings.usage_of_consumer_types(conn, preemptible_types)
        parts.append(_family(
            PREEMPTIBLE, "Amount of a resource class held by preemptible consumers "
            "([allotment] preemptible_consumer_types), over every provider.",
            [f'{PREEMPTIBLE}{{resourcetype="{escape(rc)}"}} {used}\n' for rc, used in held]))
    parts.append(_family(PROVIDERS, "Resource providers in the world.",
                         [f"{PROVIDERS} {count}\n"]))
    parts.append(_family(FEED_LAG_ROWS, "Change-feed rows this process had not applied "
                         "when the scrape arrived.", [f"{FEED_LAG_ROWS} {rows}\n"]))
    parts.append(_family(FEED_LAG_SECONDS, "Age of the oldest change-feed row this process "
                         "had not applied when the scrape arrived.",
                         [f"{FEED_LAG_SECONDS} {seconds}\n"]))
    parts.append(_family(FEED_GAPS_OPEN, "Change-feed ids skipped and still awaited.",
                         [f"{FEED_GAPS_OPEN} {gaps}\n"]))
    return Scrape("".join(parts), count, rows, seconds, gaps)

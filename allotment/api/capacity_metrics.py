"""Headroom of the configured flavors on /metrics, under os-capacity's names.

``[allotment] capacity_flavors`` names requests (``NAME=QUERY``); each is
placed against the world at scrape (``engine.headroom``) and exported as

* ``openstack_free_capacity_by_flavor_total{flavor_name,public}``: instances
  that fit in the whole cloud (os-capacity's name; counted by placing them,
  so nested trees, granular groups and sharing providers count right);
* ``openstack_free_capacity_hypervisor_by_flavor{hypervisor,flavor_name,
  az_aggregate,project_aggregate}`` per host with room, when
  ``capacity_metrics_per_host`` is set (Placement knows no availability zone
  or project aggregate: those labels are empty);
* ``allotment_free_capacity_by_flavor_aggregate{flavor_name,aggregate}``;
* ``allotment_largest_free_amount{resourcetype}``: the largest amount of a
  class one provider can still take.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl

from oslo_config import cfg

from allotment import errors
from allotment.api.candidates_query import parse_allocation_candidates_query
from allotment.engine.request import AllocationCandidatesRequest
from allotment.service.allocation_candidates import compute_many
from allotment.service.placement_metrics import escape
from allotment.world.sync import Replica

LOG = logging.getLogger(__name__)
VERSION = (1, 39)


def parse_flavors(entries: list[str]) -> dict[str, AllocationCandidatesRequest]:
    """``NAME=QUERY`` entries as requests; a bad entry is logged and left out."""
    found = {}
    for entry in entries:
        name, sep, query = entry.partition("=")
        name = name.strip()
        if not sep or not name:
            LOG.error("[allotment] capacity_flavors entry %r is not NAME=QUERY", entry)
            continue
        try:
            found[name] = parse_allocation_candidates_query(
                parse_qsl(query, keep_blank_values=True), VERSION)
        except errors.PlacementError as exc:
            LOG.error("[allotment] capacity_flavors entry %r: %s", entry, exc.detail)
    return found


def _family(name: str, help_text: str, lines: list[str]) -> str:
    return f"# HELP {name} {help_text}\n# TYPE {name} gauge\n" + "".join(lines)


def text(replica: Replica, conf: cfg.ConfigOpts,
         flavors: dict[str, AllocationCandidatesRequest]) -> str:
    if not flavors:
        return ""
    private = set(conf.allotment.capacity_private_flavors)
    results = compute_many(
        replica, flavors, with_hosts=conf.allotment.capacity_metrics_per_host)
    totals, hosts, aggregates = [], [], []
    largest: dict[str, int] = {}
    for name, room in results.items():
        flavor = escape(name)
        public = "False" if name in private else "True"
        totals.append(f'openstack_free_capacity_by_flavor_total{{flavor_name="{flavor}",'
                      f'public="{public}"}} {room.total}\n')
        if conf.allotment.capacity_metrics_per_host:
            hosts.extend(
                f'openstack_free_capacity_hypervisor_by_flavor{{hypervisor="{escape(h.name)}",'
                f'flavor_name="{flavor}",az_aggregate="",project_aggregate=""}} {h.count}\n'
                for h in room.hosts)
        aggregates.extend(
            f'allotment_free_capacity_by_flavor_aggregate{{flavor_name="{flavor}",'
            f'aggregate="{escape(agg)}"}} {n}\n' for agg, n in sorted(room.aggregates.items()))
        largest = room.largest
    parts = [_family("openstack_free_capacity_by_flavor_total",
                     "Instances of the flavor that still fit in the cloud.", totals)]
    if conf.allotment.capacity_metrics_per_host:
        parts.append(_family("openstack_free_capacity_hypervisor_by_flavor",
                             "Instances of the flavor that still fit on the host.", hosts))
    parts.append(_family("allotment_free_capacity_by_flavor_aggregate",
                         "Instances of the flavor that still fit on the aggregate's hosts.",
                         aggregates))
    parts.append(_family("allotment_largest_free_amount",
                         "Largest amount of a class one provider can still take.",
                         [f'allotment_largest_free_amount{{resourcetype="{escape(rc)}"}} {n}\n'
                          for rc, n in sorted(largest.items())]))
    return "".join(parts)

"""The pages: ``/ui`` (hosts: filtered, sorted, paged, with totals) and
``/ui/trees/{uuid}``.

Each page reads through the API itself, in-process, with the caller's own
request context: every number is the one the API gives, and every read is
checked against the API's policy rules, on top of the web view's own rule.
The composition root (allotment.server.app) gives each page the routed API
as a WSGI callable, for a :class:`~allotment.client.DirectTransport`.
The host list is one read of every provider with its details (the listing
extension), so it costs the same whatever the size of the cloud; the page
shows one page of hosts at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qsl

import falcon

from allotment import errors
from allotment.auth.policies import WEB_VIEW
from allotment.client import ApiError, ClientError, DirectTransport, PlacementClient, WSGIApp
from allotment.client import report as reports
from allotment.runtime import Runtime
from allotment.web import pages

_ERRORS = {400: errors.BadRequest, 403: errors.Forbidden, 404: errors.NotFound,
           409: errors.Conflict}
PER_PAGE = 100
MAX_PER_PAGE = 1000


class _Page:
    # Pages answer HTML: an Accept header without JSON in it is fine here.
    serves = "text/html"

    def __init__(self, runtime: Runtime, api: WSGIApp) -> None:
        self.runtime = runtime
        self.api = api

    @contextmanager
    def client(self, req: falcon.Request) -> Iterator[PlacementClient]:
        transport = DirectTransport(self.api, token=None, environ={
            "allotment.context": req.context.ctx,
            "openstack.request_id": req.env.get("openstack.request_id"),
        })
        try:
            yield PlacementClient(transport)
        except ApiError as exc:
            cls = _ERRORS.get(exc.status, errors.PlacementError)
            raise cls(exc.detail) from None
        except ClientError as exc:
            raise errors.NotFound(str(exc)) from None


def _int_param(req: falcon.Request, name: str, default: int, low: int, high: int) -> int:
    raw = req.get_param(name) or ""
    if not raw:
        return default
    # ASCII digits only: int() reads other scripts' digits too, and refuses
    # more than 4,300 of them (any number that long is past ``high``).
    if not (raw.isascii() and raw.isdigit()):
        raise errors.BadRequest(f"{name} must be a whole number, not {raw!r}")
    return max(low, min(high, int(raw) if len(raw) <= len(str(high)) else high))


class Hosts(_Page):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.ctx.can(WEB_VIEW)
        query = req.get_param("q", default="") or ""
        aggregate = req.get_param("aggregate") or None
        trait = req.get_param("trait") or None
        resource_class = req.get_param("class") or None
        sort = req.get_param("sort") or "name"
        if sort not in reports.SORTS:
            raise errors.BadRequest(f"sort must be one of {', '.join(reports.SORTS)}")
        per_page = _int_param(req, "per_page", PER_PAGE, 1, MAX_PER_PAGE)
        with self.client(req) as client:
            found = reports.host_list(client, query, aggregate=aggregate, trait=trait,
                                      resource_class=resource_class, sort=sort)
        pages_count = max(1, -(-len(found.hosts) // per_page))
        page = _int_param(req, "page", 1, 1, pages_count)
        shown = found.hosts[(page - 1) * per_page:page * per_page]
        classes = sorted({rc for host in found.hosts for rc in host.usage})
        filters = {k: v for k, v in (("q", query), ("aggregate", aggregate),
                                     ("trait", trait), ("class", resource_class),
                                     ("sort", sort if sort != "name" else None),
                                     ("per_page", per_page if per_page != PER_PAGE else None))
                   if v}
        pages.render(req, resp, "hosts.html", title="Hosts", hosts=shown,
                     count=len(found.hosts), classes=classes, query=query,
                     aggregate=aggregate or "", trait=trait or "",
                     resource_class=resource_class or "", sort=sort, page=page,
                     pages_count=pages_count, filters=filters, total=found.total,
                     by_aggregate=found.by_aggregate)


class Tree(_Page):
    def on_get(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        req.context.ctx.can(WEB_VIEW)
        with self.client(req) as client:
            try:
                tree = reports.tree_report(client, uuid)
            except ClientError:
                raise errors.NotFound(
                    f"No resource provider {uuid}: it may have been deleted since "
                    "the link was made.") from None
            served = (reports.served_trees(client, tree.root)
                      if tree.root.sharing else [])
            consumers = {p.uuid: client.allocations.for_provider(p.uuid)["allocations"]
                         for p in tree.providers}
        children: dict[str | None, list] = {}
        for provider in tree.providers:
            children.setdefault(provider.parent_provider_uuid, []).append(provider)
        pages.render(req, resp, "tree.html", title=tree.root.name, tree=tree,
                     children=children, served=served, consumers=consumers)


class Capacity(_Page):
    """How many more instances of a request fit (the headroom extension)."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.ctx.can(WEB_VIEW)
        wanted = (req.get_param("request") or "").strip()
        room = None
        if wanted:
            pairs = [p for p in parse_qsl(wanted, keep_blank_values=True)
                     if p[0] not in ("limit", "headroom")]
            with self.client(req) as client:
                body = client.get("/allocation_candidates", version="1.39",
                                  params=[*pairs, ("limit", "1"), ("headroom", "true")],
                                  headers={"Allotment-Extensions": "1"}).json()
            room = body["headroom"]
            room["hosts"].sort(key=lambda h: (-h["count"], h["name"]))
        pages.render(req, resp, "capacity.html", title="Capacity", wanted=wanted, room=room)


class WhatIf(_Page):
    """Where a request fits were some consumers gone (the ignore_consumers
    and preempt extensions): each candidate with the consumers it displaces
    or would evict."""

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.ctx.can(WEB_VIEW)
        wanted = (req.get_param("request") or "").strip()
        ignore = [u.strip() for u in (req.get_param("ignore") or "").split(",") if u.strip()]
        preempt = req.get_param("preempt") in ("1", "true", "on")
        limit = _int_param(req, "limit", 20, 1, 1000)
        rows = None
        if wanted:
            pairs = [p for p in parse_qsl(wanted, keep_blank_values=True)
                     if p[0] not in ("limit", "ignore_consumers", "preempt")]
            if ignore:
                pairs.append(("ignore_consumers", "in:" + ",".join(ignore)))
            if preempt:
                pairs.append(("preempt", "true"))
            with self.client(req) as client:
                body = client.get("/allocation_candidates", version="1.39",
                                  params=[*pairs, ("limit", str(limit))],
                                  headers={"Allotment-Extensions": "1"}).json()
            summaries = body["provider_summaries"]
            rows = [{"providers": sorted(
                         (summaries.get(uuid, {}).get("root_provider_uuid", uuid), uuid,
                          alloc["resources"])
                         for uuid, alloc in ar["allocations"].items()),
                     "evicts": ar.get("evicts", []),
                     "displaces": ar.get("displaces", [])}
                    for ar in body["allocation_requests"]]
        pages.render(req, resp, "what_if.html", title="What if", wanted=wanted,
                     ignore=",".join(ignore), preempt=preempt, limit=limit, rows=rows)

"""The pages: ``/ui`` (hosts, searchable) and ``/ui/trees/{uuid}``.

Each page reads through the API itself, in-process, with the caller's own
request context: every number is the one the API gives, and every read is
checked against the API's policy rules, on top of the web view's own rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import falcon

from allotment import errors
from allotment.api.resource import authorize
from allotment.auth.policies import WEB_VIEW
from allotment.client import ApiError, ClientError, DirectTransport, PlacementClient
from allotment.client import report as reports
from allotment.web import pages

_ERRORS = {400: errors.BadRequest, 403: errors.Forbidden, 404: errors.NotFound,
           409: errors.Conflict}


class _Page:
    def __init__(self, runtime) -> None:
        self.runtime = runtime

    @contextmanager
    def client(self, req: falcon.Request) -> Iterator[PlacementClient]:
        transport = DirectTransport(self.runtime.app, token=None, environ={
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


class Hosts(_Page):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        authorize(req, WEB_VIEW)
        query = req.get_param("q", default="") or ""
        with self.client(req) as client:
            hosts = reports.host_summaries(client, query)
        classes = sorted({rc for host in hosts for rc in host.usage})
        pages.render(req, resp, "hosts.html", title="Hosts", hosts=hosts,
                     classes=classes, query=query)


class Tree(_Page):
    def on_get(self, req: falcon.Request, resp: falcon.Response, uuid: str) -> None:
        authorize(req, WEB_VIEW)
        with self.client(req) as client:
            tree = reports.tree_report(client, uuid)
        children: dict[str | None, list] = {}
        for provider in tree.providers:
            children.setdefault(provider.parent_provider_uuid, []).append(provider)
        pages.render(req, resp, "tree.html", title=tree.root.name, tree=tree,
                     children=children)

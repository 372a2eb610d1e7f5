"""GET / : the version document."""

from __future__ import annotations

import falcon

from allotment.api import microversion, rendering
from allotment.api.resource import Resource


class Root(Resource):
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        version = {
            "id": f"v{microversion.min_version_string()}",
            "max_version": microversion.max_version_string(),
            "min_version": microversion.min_version_string(),
            "status": "CURRENT",
            # Relative on purpose: the service never needs to know the
            # address it is reached through.
            "links": [{"rel": "self", "href": ""}],
        }
        rendering.send_json(req, resp, {"versions": [version]})

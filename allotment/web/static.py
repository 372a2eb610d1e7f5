"""``/ui/static/{name}``: the web view's stylesheet and script, from the package."""

from __future__ import annotations

from importlib import resources

import falcon

from allotment import errors

_TYPES = {".css": "text/css; charset=utf-8", ".js": "text/javascript; charset=utf-8",
          ".png": "image/png"}


def _load() -> dict[str, tuple[bytes, str]]:
    found = {}
    for entry in resources.files("allotment.web").joinpath("static").iterdir():
        suffix = "." + entry.name.rsplit(".", 1)[-1]
        if entry.is_file() and suffix in _TYPES:
            found[entry.name] = (entry.read_bytes(), _TYPES[suffix])
    return found


class Static:
    serves = "assets"

    def __init__(self, runtime) -> None:
        self.runtime = runtime
        # A handful of small files: read once, served from memory.
        self.files = _load()

    def on_get(self, req: falcon.Request, resp: falcon.Response, name: str) -> None:
        found = self.files.get(name)
        if found is None:
            raise errors.NotFound("")
        resp.data, resp.content_type = found
        resp.set_header("cache-control", "max-age=3600")


class Favicon:
    """``/favicon.ico``: browsers ask for it on every page.  It needs no
    credentials (a 401 there fills browser consoles with errors and asks for
    a sign-in on every page); there is no icon: a plain 404, kept for a day."""

    serves = "image/x-icon"

    def __init__(self, runtime) -> None:
        self.runtime = runtime

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        raise errors.NotFound("No icon.", headers={"cache-control": "max-age=86400"})

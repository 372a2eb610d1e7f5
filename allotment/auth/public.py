"""What needs no credentials: the paths every strategy lets through."""

from __future__ import annotations

from collections.abc import Callable, Iterable

WSGIApp = Callable[[dict, Callable], Iterable[bytes]]

# The version document and the API description need no credentials.
ROOT_PATHS = ("/", "", "/openapi.json")
# The web view's sign-in page and its static assets hold no data.
PUBLIC_PREFIXES = ("/ui/login", "/ui/logout", "/ui/static/", "/favicon.ico")


def is_root(environ: dict) -> bool:
    path = environ.get("PATH_INFO", "")
    return path in ROOT_PATHS or path.startswith(PUBLIC_PREFIXES)

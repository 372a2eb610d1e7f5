"""How requests reach the service: over HTTP, or in-process (see _wsgi.py).

A transport takes one request (method, path relative to the API root, query
pairs, JSON body, headers) and returns a :class:`Response`; it never raises
for an HTTP error status.  Turning statuses into typed exceptions, choosing
microversions and shaping bodies is the client's job, so every transport
behaves identically above this line.
"""

from __future__ import annotations

import json as jsonlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlencode

import orjson

from allotment.client.exceptions import TransportError

if TYPE_CHECKING:
    import requests

Params = Sequence[tuple[str, str]] | Mapping[str, str] | None


@dataclass
class Response:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def __post_init__(self) -> None:
        # Header names are case-insensitive; store them lower-cased once.
        self.headers = {k.lower(): v for k, v in self.headers.items()}

    def json(self) -> Any:
        # orjson: a listing of every provider of a large cloud is megabytes.
        return orjson.loads(self.body) if self.body else None

    def header(self, name: str, default: str | None = None) -> str | None:
        return self.headers.get(name.lower(), default)


class Transport(Protocol):
    def request(
        self,
        method: str,
        path: str,
        *,
        params: Params = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Response: ...

    def close(self) -> None: ...


def encode_body(json: Any) -> bytes | None:
    return None if json is None else jsonlib.dumps(json).encode("utf-8")


def query_string(params: Params) -> str:
    if not params:
        return ""
    items = list(params.items()) if isinstance(params, Mapping) else list(params)
    # Commas, colons and "!" carry meaning in Placement's query syntax and
    # read better unescaped; the server accepts either form.
    return urlencode(items, safe=",:!")


class HTTPTransport:
    """Plain HTTP(S) with ``requests``.

    ``token`` is sent as ``X-Auth-Token`` (a keystone token, or a noauth2
    ``user[:project]`` token for development servers).
    """

    def __init__(
        self,
        endpoint: str,
        *,
        token: str | None = None,
        session: requests.Session | None = None,
        timeout: float | None = 60.0,
        verify: bool | str = True,
    ) -> None:
        self.endpoint = endpoint.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.verify = verify
        # Imported here, not with the module: every serving process holds
        # the client (for the web view, which reads in-process), and never
        # speaks HTTP through it (requests and urllib3: about 4.5 MB).
        import requests

        self._failure = requests.RequestException
        self._own_session = session is None
        self.session = session or requests.Session()

    def request(self, method, path, *, params=None, json=None, headers=None) -> Response:
        url = self.endpoint + path
        qs = query_string(params)
        if qs:
            url = f"{url}?{qs}"
        hdrs = dict(headers or {})
        if self.token is not None:
            hdrs.setdefault("X-Auth-Token", self.token)
        body = encode_body(json)
        if body is not None:
            hdrs.setdefault("Content-Type", "application/json")
        try:
            resp = self.session.request(
                method, url, data=body, headers=hdrs, timeout=self.timeout,
                verify=self.verify, allow_redirects=False)
        except self._failure as exc:
            raise TransportError(f"{method} {url}: {exc}") from exc
        return Response(resp.status_code, dict(resp.headers), resp.content)

    def close(self) -> None:
        if self._own_session:
            self.session.close()


class KeystoneTransport:
    """Through a keystoneauth1 ``Session`` (or ``Adapter``).

    The session authenticates and finds the endpoint in the service catalog
    (``service_type`` / ``interface`` / ``region_name``), unless
    ``endpoint_override`` names it.  An ``Adapter`` carries its own filter.
    """

    def __init__(
        self,
        session: Any,
        *,
        service_type: str = "placement",
        interface: str | Sequence[str] | None = None,
        region_name: str | None = None,
        endpoint_override: str | None = None,
    ) -> None:
        self.session = session
        self.is_adapter = hasattr(session, "service_type") and hasattr(session, "session")
        self.endpoint_filter: dict[str, Any] = {"service_type": service_type}
        if interface is not None:
            self.endpoint_filter["interface"] = interface
        if region_name is not None:
            self.endpoint_filter["region_name"] = region_name
        self.endpoint_override = endpoint_override

    def request(self, method, path, *, params=None, json=None, headers=None) -> Response:
        from keystoneauth1 import exceptions as ks_exc

        qs = query_string(params)
        url = f"{path}?{qs}" if qs else path
        hdrs = dict(headers or {})
        body = encode_body(json)
        if body is not None:
            hdrs.setdefault("Content-Type", "application/json")
        kwargs: dict[str, Any] = {"headers": hdrs, "data": body, "raise_exc": False}
        if self.endpoint_override:
            kwargs["endpoint_override"] = self.endpoint_override
        if not self.is_adapter:
            kwargs["endpoint_filter"] = self.endpoint_filter
        try:
            resp = self.session.request(url, method, **kwargs)
        except ks_exc.ClientException as exc:
            raise TransportError(f"{method} {url}: {exc}") from exc
        return Response(resp.status_code, dict(resp.headers), resp.content)

    def close(self) -> None:
        # The caller owns the keystone session.
        pass

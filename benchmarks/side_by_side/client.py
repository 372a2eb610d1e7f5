"""A thin HTTP client, and loading a world into a service through its API.

A fresh connection per request: both services run under gunicorn's sync
workers, which close the connection after every answer.  The request is
written in one piece and the answer read to the end of the connection, with
no HTTP library in between: ``http.client`` spent 0.1-0.2 ms of the
client's own time on every request (header parsing through the email
package), the same for both services, which is noise against upstream's
tens of milliseconds and a fifth of a small allotment answer.  The smallest
client keeps the client's own cost out of the comparison.
"""

from __future__ import annotations

import json
import socket
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

from benchmarks.side_by_side.worlds import Provider, World

VERSION = "1.39"


class Client:
    def __init__(self, url: str, timeout: float = 120.0) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port
        self.timeout = timeout
        self.headers = {"X-Auth-Token": "admin", "Accept": "application/json",
                        "OpenStack-API-Version": f"placement {VERSION}"}

    def request(self, method: str, path: str, body=None) -> tuple[int, bytes, float]:
        """(status, body, seconds) of one request."""
        head = f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in self.headers.items())
        data = b""
        if body is not None:
            data = json.dumps(body).encode()
            head += f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        request = (head + "\r\n").encode("latin-1") + data
        start = time.perf_counter()
        with socket.create_connection((self.host, self.port), timeout=self.timeout) as sock:
            sock.sendall(request)
            chunks = []
            while chunk := sock.recv(262144):
                chunks.append(chunk)
        seconds = time.perf_counter() - start
        answer = b"".join(chunks)
        head_end = answer.find(b"\r\n\r\n")
        if not answer.startswith(b"HTTP/1.") or head_end < 0:
            raise ConnectionError(f"{method} {path}: no HTTP answer: {answer[:200]!r}")
        status = int(answer[9:12])
        payload = answer[head_end + 4:]
        return status, payload, seconds

    def call(self, method: str, path: str, body=None, expect: tuple[int, ...] = (200,)):
        status, payload, _ = self.request(method, path, body)
        if status not in expect:
            raise RuntimeError(f"{method} {path} -> {status}: {payload[:300]!r}")
        return json.loads(payload) if payload else None


def _load_provider(client: Client, p: Provider, parent_uuid: str | None) -> int:
    body = {"name": p.name, "uuid": p.uuid}
    if parent_uuid:
        body["parent_provider_uuid"] = parent_uuid
    gen = client.call("POST", "/resource_providers", body)["generation"]
    calls = 1
    base = f"/resource_providers/{p.uuid}"
    if p.inventories:
        gen = client.call("PUT", base + "/inventories",
                          {"resource_provider_generation": gen,
                           "inventories": p.inventories})["resource_provider_generation"]
        calls += 1
    if p.traits:
        gen = client.call("PUT", base + "/traits",
                          {"resource_provider_generation": gen,
                           "traits": p.traits})["resource_provider_generation"]
        calls += 1
    if p.aggregates:
        client.call("PUT", base + "/aggregates",
                    {"resource_provider_generation": gen, "aggregates": p.aggregates})
        calls += 1
    return calls


def _load_tree(client: Client, tree: list[Provider]) -> int:
    by_name = {p.name: p for p in tree}
    return sum(_load_provider(client, p, by_name[p.parent].uuid if p.parent else None)
               for p in tree)


def load(url: str, world: World, threads: int = 8) -> tuple[int, float]:
    """Write ``world`` through the API; (requests made, seconds)."""
    client = Client(url)
    for name in world.custom_traits:
        client.call("PUT", f"/traits/{name}", expect=(201, 204))
    for name in world.custom_classes:
        client.call("PUT", f"/resource_classes/{name}", expect=(201, 204))
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        made = sum(pool.map(lambda t: _load_tree(client, t), world.trees))
    return made, time.perf_counter() - start

"""haproxy in a namespace of its own, laid out as kolla-ansible lays it out
for MariaDB: one writer, the other nodes ``backup``, ``option httpchk``
against each node's check responder (``health.py``, kolla's clustercheck),
``inter 2000 rise 2 fall 5``, and kolla's timeouts (the database listener's
client and server timeouts of an hour, TCP keep-alive both ways).  The
PostgreSQL pair is laid out the same way (the primary, the replica as
``backup``; the check says ready only for a server not in recovery).  The
API hosts are behind a second listener, round robin, as kolla does."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.faults.lab.net import Host

API_PORT = 8780

_DEFAULTS = """global
    maxconn 4000
    nbthread 1

defaults
    mode http
    timeout http-request 10s
    timeout queue 1m
    timeout connect 10s
    timeout client 1m
    timeout server 1m
    timeout check 10s
    retries 3
"""


def config(address: str, *, db_port: int, db_nodes: list[tuple[str, str]],
           check_port: int, api_hosts: list[tuple[str, str, int]]) -> str:
    """``db_nodes``: (name, address), the writer first."""
    lines = [_DEFAULTS,
             "listen database",
             "    mode tcp",
             f"    bind {address}:{db_port}",
             "    option clitcpka",
             "    timeout client 3600s",
             "    option srvtcpka",
             "    timeout server 3600s",
             "    option httpchk"]
    for i, (name, node) in enumerate(db_nodes):
        lines.append(f"    server {name} {node}:{db_port} check port {check_port} "
                     f"inter 2000 rise 2 fall 5{' backup' if i else ''}")
    lines += ["", "listen placement_api", f"    bind {address}:{API_PORT}",
              "    balance roundrobin", "    option httpchk GET /healthcheck"]
    for name, api, port in api_hosts:
        lines.append(f"    server {name} {api}:{port} check inter 2000 rise 2 fall 5")
    return "\n".join(lines) + "\n"


class Haproxy:
    def __init__(self, host: Host, directory: Path, text: str) -> None:
        self.host = host
        self.directory = directory
        self.text = text
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        cfg = self.directory / "haproxy.cfg"
        cfg.write_text(self.text)
        self.host.run("haproxy", "-c", "-f", str(cfg))
        log = (self.directory / "haproxy.log").open("a")
        self.proc = self.host.popen(["haproxy", "-db", "-f", str(cfg)], stdout=log,
                                    stderr=subprocess.STDOUT)
        log.close()
        time.sleep(0.3)
        if self.proc.poll() is not None:
            raise RuntimeError((self.directory / "haproxy.log").read_text())

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)

"""Hosts as network namespaces on one bridge, and the faults the network
can carry: partitions (both ways or one way) with nftables on the bridge,
latency and loss with ``tc netem`` where the kernel has it.

The bridge lives in a namespace of its own, so the machine's own network
sees nothing of the lab; every address is in ``SUBNET``.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

SUBNET = "10.231.0"
PREFIX_LEN = 24
CLONE_NEWNET = 0x40000000
T = TypeVar("T")


def run(*cmd: str, check: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, check=check, capture_output=True, text=True, timeout=timeout)


class Skipped(Exception):
    """A fault this kernel cannot inject (the reason is the message)."""


@dataclass
class Host:
    name: str       # short role name: db1, haproxy, api1, client ...
    netns: str      # the namespace's name
    address: str

    def exec_args(self, *cmd: str) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *cmd]

    def run(self, *cmd: str, check: bool = True, timeout: float = 60
            ) -> subprocess.CompletedProcess:
        return run(*self.exec_args(*cmd), check=check, timeout=timeout)

    def popen(self, cmd: list[str], **kw) -> subprocess.Popen:
        return subprocess.Popen(self.exec_args(*cmd), **kw)


_libc = ctypes.CDLL(None, use_errno=True)


def enter(netns: str) -> None:
    """Move the calling *thread* into ``netns`` (sockets it opens from now
    on are the namespace's; threads it starts inherit it)."""
    fd = os.open(f"/run/netns/{netns}", os.O_RDONLY)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns {netns}: {os.strerror(err)}")
    finally:
        os.close(fd)


def call_in(netns: str, fn: Callable[[], T], timeout: float = 120) -> T:
    """``fn()`` run in a thread of its own inside ``netns``."""
    box: dict[str, object] = {}

    def body() -> None:
        try:
            enter(netns)
            box["value"] = fn()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise TimeoutError(f"{fn!r} in {netns} took more than {timeout} s")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


@dataclass
class Network:
    """One bridge and the hosts on it.  ``tag`` keeps two labs apart."""

    tag: str = field(default_factory=lambda: secrets.token_hex(2))
    hosts: dict[str, Host] = field(default_factory=dict)

    @property
    def switch(self) -> str:
        return f"fl{self.tag}-switch"

    def create(self) -> None:
        run("ip", "netns", "add", self.switch)
        run("ip", "-n", self.switch, "link", "add", "br0", "type", "bridge")
        run("ip", "-n", self.switch, "link", "set", "br0", "up")

    def add_host(self, name: str, octet: int) -> Host:
        netns = f"fl{self.tag}-{name}"
        host = Host(name, netns, f"{SUBNET}.{octet}")
        run("ip", "netns", "add", netns)
        outer = f"fl{self.tag}{name}"[:15]
        run("ip", "link", "add", outer, "type", "veth", "peer", "name", "eth0",
            "netns", netns)
        run("ip", "link", "set", outer, "netns", self.switch)
        run("ip", "-n", self.switch, "link", "set", outer, "master", "br0", "up")
        run("ip", "-n", netns, "addr", "add", f"{host.address}/{PREFIX_LEN}", "dev", "eth0")
        run("ip", "-n", netns, "link", "set", "eth0", "up")
        run("ip", "-n", netns, "link", "set", "lo", "up")
        self.hosts[name] = host
        return host

    def destroy(self) -> None:
        for host in self.hosts.values():
            run("ip", "netns", "del", host.netns, check=False)
        run("ip", "netns", "del", self.switch, check=False)
        self.hosts.clear()

    # -- faults ---------------------------------------------------------------

    @contextmanager
    def partition(self, host: Host, peers: list[Host], *, direction: str = "both",
                  port: int | None = None) -> Iterator[None]:
        """Drop ``host``'s traffic with ``peers`` on the wire (``in``: only
        what they send it; ``out``: only what it sends them; ``port``: only
        that TCP destination port, on the way out) until the block ends.

        The rules are the bridge's, not the hosts': a packet a host's own
        firewall drops never leaves it, and TCP then neither retransmits it
        nor runs out its user timeout as it does when a network loses it."""
        table = f"partition_{host.name}"
        sw = ["ip", "netns", "exec", self.switch, "nft"]
        run(*sw, "add", "table", "bridge", table)
        run(*sw, "add", "chain", "bridge", table, "forward",
            "{ type filter hook forward priority 0; }")
        only = ["tcp", "dport", str(port)] if port else []
        for peer in peers:
            if direction in ("both", "in"):
                run(*sw, "add", "rule", "bridge", table, "forward",
                    "ip", "saddr", peer.address, "ip", "daddr", host.address, "drop")
            if direction in ("both", "out"):
                run(*sw, "add", "rule", "bridge", table, "forward",
                    "ip", "saddr", host.address, "ip", "daddr", peer.address, *only, "drop")
        try:
            yield
        finally:
            run(*sw, "delete", "table", "bridge", table, check=False)

    @contextmanager
    def netem(self, host: Host, spec: str) -> Iterator[None]:
        """``tc netem`` on ``host``'s interface (e.g. ``delay 200ms loss 5%``)."""
        done = host.run("tc", "qdisc", "add", "dev", "eth0", "root", "netem",
                        *spec.split(), check=False)
        if done.returncode != 0:
            raise Skipped(f"tc netem is not available here: {done.stderr.strip()}")
        try:
            yield
        finally:
            host.run("tc", "qdisc", "del", "dev", "eth0", "root", check=False)


def netem_available(network: Network, host: Host) -> str | None:
    """None if netem works, else why not."""
    try:
        with network.netem(host, "delay 1ms"):
            return None
    except Skipped as exc:
        return str(exc)


def children(pid: int) -> list[int]:
    out = run("pgrep", "-P", str(pid), check=False).stdout
    return [int(p) for p in out.split()]


def repo() -> Path:
    return Path(__file__).resolve().parents[3]


def python() -> Path:
    """The repository's interpreter (the lab's helpers run in namespaces)."""
    venv = repo() / ".venv" / "bin" / "python"
    return venv if venv.exists() else Path(sys.executable)

"""A PostgreSQL primary with one streaming replica (``pg_basebackup -R``),
each in its own namespace, and the operator's failover: the primary
killed -9 (it and every backend, as a machine would die), the replica
promoted; haproxy's check sends the API to whichever is not in recovery.

``synchronous_commit = off`` with a WAL writer that flushes every
``wal_writer_delay``: a commit is acknowledged before its WAL is flushed,
and the replica receives only flushed WAL, so a promotion after the
primary died loses the last moments' commits -- the loss this lab must be
able to force."""

from __future__ import annotations

import contextlib
import glob
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

from tests.faults.lab.net import Host, children, python, repo

PORT = 5432
CHECK_PORT = 4569


def _bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError("PostgreSQL is not installed")
    return Path(found[-1]).parent


@dataclass
class Server:
    name: str
    host: Host
    directory: Path
    check: subprocess.Popen | None = None

    @property
    def sockets(self) -> Path:
        # Not the data directory: pg_basebackup would copy the lock file.
        return self.directory.with_name(f"sock-{self.name}")

    def pid(self) -> int | None:
        try:
            pid = int((self.directory / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None
        return pid if os.path.exists(f"/proc/{pid}") else None


class PostgresPair:
    def __init__(self, primary: Host, replica: Host, directory: Path, *,
                 synchronous_commit: str = "on", wal_writer_delay_ms: int = 200,
                 synchronous_standby: bool = False) -> None:
        self.directory = directory
        self.settings = {"synchronous_commit": synchronous_commit,
                         "wal_writer_delay": f"{wal_writer_delay_ms}ms"}
        if synchronous_standby:
            # A commit waits until the replica has flushed it too.
            self.settings["synchronous_standby_names"] = "*"
        self.primary = Server("pg1", primary, directory / "pg1")
        self.replica = Server("pg2", replica, directory / "pg2")
        self.promoted = False

    def _as_postgres(self, host: Host, *cmd: str, timeout: float = 300) -> None:
        host.run("runuser", "-u", "postgres", "--", *cmd, timeout=timeout)

    def _start(self, server: Server) -> None:
        # Each its own socket directory: the two share a port number.
        server.sockets.mkdir(exist_ok=True)
        subprocess.run(["chown", "postgres:", str(server.sockets)], check=True)
        self._as_postgres(server.host, str(_bin() / "pg_ctl"), "-D", str(server.directory),
                          "-l", str(server.directory / "server.log"), "-o",
                          f"-k {server.sockets}", "-w", "start")

    def start(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        subprocess.run(["chown", "postgres:", str(self.directory)], check=True)
        p = self.primary
        self._as_postgres(p.host, str(_bin() / "initdb"), "-D", str(p.directory),
                          "-U", "postgres", "-A", "trust", "--no-sync")
        settings = {"listen_addresses": "'*'", "port": str(PORT),
                    "max_connections": "300", "wal_level": "replica",
                    "max_wal_senders": "5", "hot_standby": "on", "fsync": "on",
                    **{k: f"'{v}'" for k, v in self.settings.items()}}
        with (p.directory / "postgresql.conf").open("a") as conf:
            conf.writelines(f"{k} = {v}\n" for k, v in settings.items())
        with (p.directory / "pg_hba.conf").open("a") as hba:
            hba.write("host all all 10.231.0.0/24 trust\n"
                      "host replication all 10.231.0.0/24 trust\n")
        self._start(p)
        r = self.replica
        self._as_postgres(r.host, str(_bin() / "pg_basebackup"), "-h", p.host.address,
                          "-p", str(PORT), "-U", "postgres", "-D", str(r.directory),
                          "-R", "-X", "stream", "-c", "fast")
        self._start(r)
        for server in (p, r):
            server.check = server.host.popen(
                [str(python()), "-m", "tests.faults.lab.health", "--port", str(CHECK_PORT),
                 "--pg-dir", str(server.sockets), "--pg-port", str(PORT)], cwd=repo(),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def stop(self) -> None:
        for server in (self.primary, self.replica):
            if server.pid() is not None:
                self._as_postgres(server.host, str(_bin() / "pg_ctl"), "-D",
                                  str(server.directory), "-m", "immediate", "stop")
            if server.check is not None and server.check.poll() is None:
                server.check.kill()
                server.check.wait(timeout=30)

    def writer(self) -> Server:
        return self.replica if self.promoted else self.primary

    def connect(self, server: Server | None = None, dbname: str = "postgres"
                ) -> psycopg.Connection:
        """Through the server's socket (sockets are not namespaced)."""
        server = server or self.writer()
        return psycopg.connect(host=str(server.sockets), port=PORT, user="postgres",
                               dbname=dbname, autocommit=True, connect_timeout=3)

    # -- faults ----------------------------------------------------------------

    def _tree(self, server: Server) -> list[int]:
        pid = server.pid()
        return [] if pid is None else [pid, *children(pid)]

    def _signal(self, server: Server, signum: int) -> None:
        # The postmaster goes first; once it runs again it reaps children
        # that exited meanwhile, so a pid listed a moment ago may be gone.
        for pid in self._tree(server):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)

    def pause(self, server: Server) -> None:
        self._signal(server, signal.SIGSTOP)

    def resume(self, server: Server) -> None:
        self._signal(server, signal.SIGCONT)

    def crash(self, server: Server) -> None:
        self._signal(server, signal.SIGKILL)
        deadline = time.monotonic() + 30
        while server.pid() is not None and time.monotonic() < deadline:
            time.sleep(0.1)

    def promote(self) -> None:
        self._as_postgres(self.replica.host, str(_bin() / "pg_ctl"), "-D",
                          str(self.replica.directory), "-w", "promote")
        self.promoted = True

    def rebuild_replica(self) -> None:
        """After a promotion: the dead primary's host made the new replica
        (its data thrown away, copied afresh from the new primary), so the
        pair can fail over again."""
        old, new = self.primary, self.replica
        self._as_postgres(old.host, "rm", "-rf", str(old.directory))
        self._as_postgres(old.host, str(_bin() / "pg_basebackup"), "-h", new.host.address,
                          "-p", str(PORT), "-U", "postgres", "-D", str(old.directory),
                          "-R", "-X", "stream", "-c", "fast")
        self._start(old)
        self.primary, self.replica, self.promoted = new, old, False

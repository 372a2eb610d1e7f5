"""Three MariaDB Galera nodes, one per namespace, and what an operator does
to them: crash, pause, and recovery of a cluster whose every node died
(``mariadbd --wsrep-recover`` on each through ``galera_recovery``, the most
advanced one bootstrapped with ``safe_to_bootstrap: 1``, the others
started after it).  The ideas are scripts/galera-test-cluster's, on real
addresses instead of loopback ports."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pymysql

from tests.faults.lab.net import Host, python, repo

SQL_PORT = 3306
CHECK_PORT = 4569
POSITION = re.compile(r"--wsrep[-_]start[-_]position=([0-9a-f-]+):(-?\d+)")


@dataclass(eq=False)
class Node:
    number: int
    host: Host
    directory: Path
    proc: subprocess.Popen | None = None
    check: subprocess.Popen | None = None

    @property
    def socket(self) -> str:
        return str(self.directory / "mysqld.sock")

    @property
    def config(self) -> Path:
        return self.directory / "my.cnf"

    @property
    def grastate(self) -> Path:
        return self.directory / "data" / "grastate.dat"

    def pid(self) -> int | None:
        if self.proc is not None and self.proc.poll() is None:
            return self.proc.pid
        return None


class GaleraCluster:
    """``flush`` is innodb_flush_log_at_trx_commit; ``flush_timeout`` how
    often (s) InnoDB writes its log when that is 0 -- larger, more lost."""

    def __init__(self, hosts: list[Host], directory: Path, *, flush: int = 1,
                 flush_timeout: int = 1) -> None:
        self.directory = directory
        self.flush = flush
        self.flush_timeout = flush_timeout
        self.nodes = [Node(i + 1, h, directory / f"node{i + 1}") for i, h in enumerate(hosts)]

    # -- set-up ----------------------------------------------------------------

    def _write_config(self, node: Node) -> None:
        peers = ",".join(f"{n.host.address}:4567" for n in self.nodes)
        a = node.host.address
        node.config.write_text(f"""[mysqld]
user = mysql
datadir = {node.directory}/data
socket = {node.socket}
pid-file = {node.directory}/mysqld.pid
log-error = {node.directory}/server.log
bind-address = {a}
port = {SQL_PORT}
skip-name-resolve
max-connections = 400
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
innodb-buffer-pool-size = 64M
innodb-flush-log-at-trx-commit = {self.flush}
innodb-flush-log-at-timeout = {self.flush_timeout}
innodb-autoinc-lock-mode = 2
binlog-format = ROW
default-storage-engine = InnoDB
wsrep-on = ON
wsrep-provider = /usr/lib/galera/libgalera_smm.so
wsrep-cluster-name = faultlab
wsrep-cluster-address = gcomm://{peers}
wsrep-node-name = node{node.number}
wsrep-node-address = {a}:4567
wsrep-node-incoming-address = {a}:{SQL_PORT}
wsrep-sst-method = rsync
wsrep-sst-receive-address = {a}:4444
wsrep-slave-threads = 2
wsrep-provider-options = "gmcast.listen_addr=tcp://{a}:4567;ist.recv_addr={a}:4568;gcache.size=64M;pc.recovery=FALSE;evs.keepalive_period=PT1S;evs.suspect_timeout=PT5S;evs.inactive_timeout=PT10S;evs.inactive_check_period=PT1S;evs.install_timeout=PT7.5S"
""")

    def start(self) -> None:
        for node in self.nodes:
            (node.directory / "data").mkdir(parents=True, exist_ok=True)
            self._write_config(node)
        subprocess.run(["chown", "-R", "mysql:", str(self.directory)], check=True)
        first = self.nodes[0]
        with (first.directory / "install.log").open("w") as log:
            subprocess.run(["mariadb-install-db", f"--defaults-file={first.config}",
                            "--skip-test-db", "--auth-root-authentication-method=normal"],
                           stdout=log, stderr=subprocess.STDOUT, check=True, timeout=300)
        self._launch(first, "--wsrep-new-cluster")
        self.wait_synced(first)
        self.sql(first, "CREATE USER IF NOT EXISTS 'lab'@'%'",
                 "GRANT ALL ON *.* TO 'lab'@'%' WITH GRANT OPTION")
        for node in self.nodes:
            node.check = node.host.popen(
                [str(python()), "-m", "tests.faults.lab.health", "--port", str(CHECK_PORT),
                 "--mysql-socket", node.socket], cwd=repo(),
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for node in self.nodes[1:]:
            self._launch(node)
            self.wait_synced(node)

    def _launch(self, node: Node, *extra: str) -> None:
        log = (node.directory / "stdout.log").open("a")
        node.proc = node.host.popen(["mariadbd", f"--defaults-file={node.config}", *extra],
                                    stdout=log, stderr=subprocess.STDOUT)
        log.close()

    def stop(self) -> None:
        for node in self.nodes:
            for proc in (node.proc, node.check):
                if proc is not None and proc.poll() is None:
                    proc.kill()
                    proc.wait(timeout=30)

    # -- state -----------------------------------------------------------------

    def connect(self, node: Node, database: str | None = None) -> pymysql.Connection:
        return pymysql.connect(unix_socket=node.socket, user="root", database=database,
                               connect_timeout=3, read_timeout=10, autocommit=True)

    def sql(self, node: Node, *statements: str) -> list:
        conn = self.connect(node)
        try:
            rows: list = []
            with conn.cursor() as cur:
                for statement in statements:
                    cur.execute(statement)
                    rows = list(cur.fetchall())
            return rows
        finally:
            conn.close()

    def state(self, node: Node) -> str:
        try:
            rows = self.sql(node, "SHOW STATUS LIKE 'wsrep_local_state_comment'")
            return rows[0][1] if rows else "?"
        except pymysql.MySQLError:
            return "down"

    def wait_synced(self, node: Node, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.state(node) == "Synced":
                return
            if node.proc is not None and node.proc.poll() is not None:
                break
            time.sleep(0.2)
        log = (node.directory / "server.log").read_text(errors="replace")[-3000:]
        raise RuntimeError(f"Galera node {node.number} is not Synced:\n{log}")

    # -- faults ----------------------------------------------------------------

    def kill(self, node: Node) -> None:
        if node.pid() is not None:
            node.proc.send_signal(signal.SIGKILL)
            node.proc.wait(timeout=30)

    def kill_all(self) -> float:
        """Every node killed -9; returns the seconds from first to last."""
        started = time.monotonic()
        for node in self.nodes:
            if node.pid() is not None:
                os.kill(node.pid(), signal.SIGKILL)
        spread = time.monotonic() - started
        for node in self.nodes:
            if node.proc is not None:
                node.proc.wait(timeout=30)
        return spread

    def pause(self, node: Node) -> None:
        os.kill(node.pid(), signal.SIGSTOP)

    def resume(self, node: Node) -> None:
        os.kill(node.pid(), signal.SIGCONT)

    def flush_logs(self) -> None:
        """Every node's InnoDB log written and synced now."""
        for node in self.nodes:
            self.sql(node, "FLUSH ENGINE LOGS")

    # -- recovery --------------------------------------------------------------

    def recovered_position(self, node: Node) -> tuple[str, int]:
        """(cluster uuid, seqno) of the last transaction the node's InnoDB holds."""
        out = node.host.run("galera_recovery", f"--defaults-file={node.config}",
                            timeout=300, check=False)
        found = POSITION.search(out.stdout)
        if not found:
            raise RuntimeError(f"galera_recovery on node {node.number}: {out.stdout} "
                               f"{out.stderr}")
        return found.group(1), int(found.group(2))

    def restart(self, node: Node) -> None:
        """One node started again after a crash while the others run."""
        uuid, seqno = self.recovered_position(node)
        self._launch(node, f"--wsrep-start-position={uuid}:{seqno}")
        self.wait_synced(node)

    def recover_all(self, bootstrapped: Callable[[Node], None] | None = None
                    ) -> dict[int, int]:
        """After every node died: the operator's procedure.  Returns each
        node's recovered seqno.  ``bootstrapped(node)`` is called once the
        first node is Synced, before the others start."""
        with ThreadPoolExecutor(len(self.nodes)) as pool:
            positions = dict(zip(self.nodes, pool.map(self.recovered_position, self.nodes),
                                 strict=True))
        first = max(self.nodes, key=lambda n: positions[n][1])
        text = first.grastate.read_text()
        first.grastate.write_text(re.sub(r"safe_to_bootstrap: 0", "safe_to_bootstrap: 1",
                                         text))
        uuid, seqno = positions[first]
        self._launch(first, "--wsrep-new-cluster", f"--wsrep-start-position={uuid}:{seqno}")
        self.wait_synced(first)
        if bootstrapped is not None:
            bootstrapped(first)
        for node in self.nodes:
            if node is not first:
                uuid, seqno = positions[node]
                self._launch(node, f"--wsrep-start-position={uuid}:{seqno}")
                self.wait_synced(node)
        return {n.number: positions[n][1] for n in self.nodes}


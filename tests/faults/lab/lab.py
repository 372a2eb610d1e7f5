"""One whole lab: the network, a database (a 3-node Galera cluster or a
PostgreSQL primary with a replica), haproxy in front of it, two allotment
API hosts behind haproxy, and a client host.

    10.231.0.2         haproxy (database on 3306/5432, API on 8780)
    10.231.0.11-13     Galera nodes db1-db3          (backend "galera")
    10.231.0.21-22     PostgreSQL pg1 (primary), pg2  (backend "postgres")
    10.231.0.31-32     API hosts api1, api2 (2 workers each)
    10.231.0.100       the clients and the checker
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests
import sqlalchemy as sa

from tests.faults.lab import galera, haproxy, net, postgres
from tests.faults.lab.api import PORT as API_PORT
from tests.faults.lab.api import ApiHost

DATABASE = "placement"


@dataclass
class Settings:
    backend: str                 # "galera" | "postgres"
    flush: int = 1               # Galera: innodb_flush_log_at_trx_commit
    flush_timeout: int = 1       # Galera: innodb_flush_log_at_timeout
    synchronous_commit: str = "on"   # PostgreSQL
    wal_writer_delay_ms: int = 200   # PostgreSQL
    synchronous_standby: bool = False  # PostgreSQL: synchronous_standby_names = '*'
    api_hosts: int = 2
    workers: int = 2


@dataclass
class Lab:
    settings: Settings
    directory: Path = field(default_factory=lambda: Path(
        tempfile.mkdtemp(prefix="faultlab-")))
    network: net.Network = field(default_factory=net.Network)
    galera: galera.GaleraCluster | None = None
    pg: postgres.PostgresPair | None = None
    proxy: haproxy.Haproxy | None = None
    apis: list[ApiHost] = field(default_factory=list)
    _truth: sa.Engine | None = None

    # -- hosts -----------------------------------------------------------------

    @property
    def client(self) -> net.Host:
        return self.network.hosts["client"]

    @property
    def proxy_host(self) -> net.Host:
        return self.network.hosts["haproxy"]

    @property
    def api_url(self) -> str:
        return f"http://{self.proxy_host.address}:{haproxy.API_PORT}"

    @property
    def db_port(self) -> int:
        return galera.SQL_PORT if self.settings.backend == "galera" else postgres.PORT

    def database_url(self) -> str:
        """As the API hosts name the database: through haproxy."""
        a = self.proxy_host.address
        if self.settings.backend == "galera":
            return f"mysql+pymysql://lab@{a}:{galera.SQL_PORT}/{DATABASE}?charset=utf8mb4"
        return f"postgresql+psycopg://postgres@{a}:{postgres.PORT}/{DATABASE}"

    def db_hosts(self) -> list[net.Host]:
        names = ("db1", "db2", "db3") if self.settings.backend == "galera" else ("pg1", "pg2")
        return [self.network.hosts[n] for n in names]

    # -- life ------------------------------------------------------------------

    def start(self) -> Lab:
        # The database servers run as their own users.
        self.directory.chmod(0o755)
        self.network.create()
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        s = self.settings
        n = self.network
        n.add_host("haproxy", 2)
        n.add_host("client", 100)
        if s.backend == "galera":
            hosts = [n.add_host(f"db{i}", 10 + i) for i in (1, 2, 3)]
            self.galera = galera.GaleraCluster(hosts, self.directory / "galera", flush=s.flush,
                                               flush_timeout=s.flush_timeout)
            self.galera.start()
            self.galera.sql(self.galera.nodes[0], f"CREATE DATABASE {DATABASE}")
            check = galera.CHECK_PORT
        else:
            hosts = [n.add_host("pg1", 21), n.add_host("pg2", 22)]
            self.pg = postgres.PostgresPair(*hosts, self.directory / "pg",
                                            synchronous_commit=s.synchronous_commit,
                                            wal_writer_delay_ms=s.wal_writer_delay_ms,
                                            synchronous_standby=s.synchronous_standby)
            self.pg.start()
            with self.pg.connect() as conn:
                conn.execute(f"CREATE DATABASE {DATABASE}")
            check = postgres.CHECK_PORT
        api_hosts = [n.add_host(f"api{i + 1}", 31 + i) for i in range(s.api_hosts)]
        self.proxy = haproxy.Haproxy(self.proxy_host, self.directory / "haproxy",
                                     haproxy.config(
                                         self.proxy_host.address, db_port=self.db_port,
                                         db_nodes=[(h.name, h.address) for h in hosts],
                                         check_port=check,
                                         api_hosts=[(h.name, h.address, API_PORT)
                                                    for h in api_hosts]))
        self.proxy.start()
        self.wait_database()
        for host in api_hosts:
            api = ApiHost(host, self.directory / host.name, self.database_url(),
                          workers=s.workers)
            self.apis.append(api)
            api.start(self.client.netns)
        self.wait_api()
        if self.galera is not None:
            # The schema and the standard classes and traits durable, however
            # lax the log's flushing: a crash may lose a fault's writes, not
            # the lab's ground (a database without VCPU answers nothing).
            self.galera.flush_logs()

    def stop(self) -> None:
        for api in self.apis:
            api.stop()
        if self.proxy is not None:
            self.proxy.stop()
        if self._truth is not None:
            self._truth.dispose()
        if self.galera is not None:
            self.galera.stop()
        if self.pg is not None:
            self.pg.stop()
        self.network.destroy()

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)

    # -- readiness -------------------------------------------------------------

    def database_answers(self) -> bool:
        """A query through haproxy from the client host succeeds."""
        def ask() -> bool:
            engine = sa.create_engine(self.database_url(),
                                      poolclass=sa.pool.NullPool,
                                      connect_args={"connect_timeout": 2})
            try:
                with engine.connect() as conn:
                    conn.execute(sa.text("SELECT 1"))
                    if self.settings.backend == "postgres":
                        return not conn.execute(sa.text("SELECT pg_is_in_recovery()")).scalar()
                return True
            except sa.exc.DBAPIError:
                return False
            finally:
                engine.dispose()
        return net.call_in(self.client.netns, ask)

    def wait_database(self, timeout: float = 120) -> float:
        """Seconds until the database answers through haproxy."""
        started = time.monotonic()
        while not self.database_answers():
            if time.monotonic() - started > timeout:
                raise RuntimeError("the database does not answer through haproxy")
            time.sleep(0.2)
        return time.monotonic() - started

    def wait_api(self, timeout: float = 60) -> None:
        def up() -> bool:
            try:
                return requests.get(self.api_url + "/", timeout=3).status_code == 200
            except requests.RequestException:
                return False
        deadline = time.monotonic() + timeout
        while not net.call_in(self.client.netns, up):
            if time.monotonic() > deadline:
                raise RuntimeError("haproxy does not reach the API hosts")
            time.sleep(0.3)

    # -- the database's truth --------------------------------------------------

    def truth(self) -> sa.Engine:
        """An engine on the database itself (not through haproxy): a synced
        Galera node's socket, or the writing PostgreSQL server's."""
        if self._truth is not None:
            self._truth.dispose()
        if self.galera is not None:
            node = next(nd for nd in self.galera.nodes if self.galera.state(nd) == "Synced")
            url = f"mysql+pymysql://root@/{DATABASE}?unix_socket={node.socket}&charset=utf8mb4"
        else:
            url = (f"postgresql+psycopg://postgres@/{DATABASE}"
                   f"?host={self.pg.writer().sockets}&port={postgres.PORT}")
        self._truth = sa.create_engine(url, poolclass=sa.pool.NullPool)
        return self._truth

    def workers(self) -> list[tuple[ApiHost, int]]:
        return [(api, pid) for api in self.apis for pid in api.worker_pids()]

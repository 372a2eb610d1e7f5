"""allotment API hosts: ``allotment-api --workers N`` in a namespace each,
its placement.conf pointing at the database through haproxy.

allotment does not say which worker answered a request, so a question for
one worker is put to the host while its other workers are stopped
(SIGSTOP): only a running worker accepts connections from the listening
socket they share.  Clients are stopped meanwhile (see checker.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import requests

from tests.faults.lab.net import Host, call_in, children, python

PORT = 8778
T = TypeVar("T")
# Short bounds, so that a fault is answered within seconds (a 503).
CONF = """[DEFAULT]
debug = false

[api]
auth_strategy = noauth2

[placement_database]
connection = {url}
sync_on_startup = true

[allotment]
database_connect_timeout = 2
database_statement_timeout = 5
"""


@dataclass
class ApiHost:
    host: Host
    directory: Path
    database_url: str
    workers: int = 2
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host.address}:{PORT}"

    def start(self, client_netns: str, timeout: float = 120) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        conf = self.directory / "placement.conf"
        conf.write_text(CONF.format(url=self.database_url))
        script = python().with_name("allotment-api")
        log = (self.directory / "server.log").open("a")
        self.proc = self.host.popen(
            [str(script), "--config-file", str(conf), "--bind", f"0.0.0.0:{PORT}",
             "--workers", str(self.workers)],
            cwd=self.directory, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout

        def up() -> bool:
            try:
                return requests.get(self.url + "/", timeout=3).status_code == 200
            except requests.RequestException:
                return False

        while not (call_in(client_netns, up) and len(self.worker_pids()) == self.workers):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.host.name} did not start:\n{self.log()[-3000:]}")
            time.sleep(0.3)

    def log(self) -> str:
        path = self.directory / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def worker_pids(self) -> list[int]:
        return [] if self.proc is None else sorted(children(self.proc.pid))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    @contextmanager
    def only(self, pid: int):
        """Every other worker of this host stopped for the block."""
        others = [p for p in self.worker_pids() if p != pid]
        for other in others:
            os.kill(other, signal.SIGSTOP)
        try:
            yield
        finally:
            for other in others:
                os.kill(other, signal.SIGCONT)

    def ask_each_worker(self, client_netns: str, question: Callable[[str], T]
                        ) -> dict[int, T]:
        """``question(url)`` answered by each worker in turn, by pid."""
        answers: dict[int, T] = {}
        for pid in self.worker_pids():
            with self.only(pid):
                answers[pid] = call_in(client_netns, lambda: question(self.url))
        return answers

"""Labs for the tests of this directory: one Galera lab and one PostgreSQL
lab per session (each takes 15-40 s to build), torn down at the end."""

from __future__ import annotations

import os
import shutil

import pytest

from tests.faults.lab.lab import Lab, Settings

# Galera with innodb_flush_log_at_trx_commit = 0 and the log written every
# 60 s: a crash of every node loses what was committed since the last
# write of the log, which the tests force when they need a durable past.
GALERA = Settings("galera", flush=0, flush_timeout=60)
# PostgreSQL: commits acknowledged before their WAL is flushed, the WAL
# writer flushing every 2 s; the replica only receives flushed WAL.
POSTGRES = Settings("postgres", synchronous_commit="off", wal_writer_delay_ms=2000)


def _needs() -> str | None:
    if os.geteuid() != 0:
        return "the fault lab needs root (network namespaces, nftables)"
    for tool in ("ip", "nft", "haproxy", "mariadbd", "galera_recovery", "pg_basebackup"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/fault-lab install)"
    return None


def _lab(settings: Settings):
    reason = _needs()
    if reason:
        pytest.skip(reason)
    try:
        lab = Lab(settings).start()
    except Exception:
        # A cluster that failed to form is formed again once from scratch,
        # as scripts/test does with its own (Lab.start cleaned up after itself).
        lab = Lab(settings).start()
    try:
        yield lab
    finally:
        lab.stop()
        lab.remove()


@pytest.fixture(scope="session")
def galera_lab():
    yield from _lab(GALERA)


@pytest.fixture(scope="session")
def postgres_lab():
    yield from _lab(POSTGRES)

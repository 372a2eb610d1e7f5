"""The service's own Prometheus metrics: what every layer counts.

Metric objects are made on first use, not at import: prometheus-client
chooses between in-process values and its multiprocess files (one file per
process under ``PROMETHEUS_MULTIPROC_DIR``) when a metric is made, and
``allotment-api`` sets that directory only once it knows it runs several
workers.  Every layer may count here (this module imports nothing of the
service); ``allotment.api.metrics`` renders what is counted.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Histogram, values

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# Request latency buckets (seconds): the API answers most reads in
# milliseconds and a large candidates answer in about a second.
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                   1.0, 2.5, 5.0, 10.0)
CANDIDATE_BUCKETS = (0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000,
                     10000, 50000)

REQUEST_LABELS = ("route", "method", "status", "microversion")


@dataclass(frozen=True)
class Metrics:
    requests: Counter
    latency: Histogram
    candidates: Histogram
    conflicts: Counter
    retries: Counter
    db_unavailable: Counter
    feed_gaps: Counter
    feed_went_back: Counter
    reloads: Counter
    kept_hits: Counter
    registry: CollectorRegistry


_LOCK = threading.Lock()
_METRICS: Metrics | None = None


def multiprocess() -> bool:
    """Whether counts go to prometheus-client's files shared by every worker."""
    return bool(os.environ.get(MULTIPROC_ENV) or os.environ.get(MULTIPROC_ENV.lower()))


def metrics() -> Metrics:
    """This process's metric objects (made on first use)."""
    global _METRICS
    found = _METRICS
    if found is not None:
        return found
    with _LOCK:
        if _METRICS is None:
            # Chosen now, not when prometheus-client was imported: the
            # directory may have been set since.
            values.ValueClass = values.get_value_class()
            registry = CollectorRegistry(auto_describe=True)
            _METRICS = Metrics(
                requests=Counter(
                    "allotment_http_requests", "API requests answered.",
                    REQUEST_LABELS, registry=registry),
                latency=Histogram(
                    "allotment_http_request_duration_seconds",
                    "Time to answer an API request, from routing to the last byte built.",
                    REQUEST_LABELS, buckets=LATENCY_BUCKETS, registry=registry),
                candidates=Histogram(
                    "allotment_allocation_candidates_returned",
                    "Allocation requests in each GET /allocation_candidates answer.",
                    buckets=CANDIDATE_BUCKETS, registry=registry),
                conflicts=Counter(
                    "allotment_generation_conflicts",
                    "Writes answered 409 placement.concurrent_update.",
                    registry=registry),
                retries=Counter(
                    "allotment_write_retries",
                    "Allocation writes run again by the server after losing a race.",
                    registry=registry),
                db_unavailable=Counter(
                    "allotment_database_unavailable",
                    "Requests answered 503 because the database failed.",
                    registry=registry),
                feed_gaps=Counter(
                    "allotment_feed_gaps",
                    "Change-feed ids found skipped (committed out of order, or rolled back).",
                    registry=registry),
                feed_went_back=Counter(
                    "allotment_feed_went_back",
                    "Times the database was found to no longer hold the change-feed row "
                    "a process's world stood on (it went back in time: a crash under "
                    "relaxed durability, a cluster bootstrap, a failover); each is "
                    "followed by a whole read of the world.",
                    registry=registry),
                reloads=Counter(
                    "allotment_world_reloads",
                    "Whole reads of the provider world (at start, after a pruned feed, "
                    "a reset or a failure).",
                    registry=registry),
                kept_hits=Counter(
                    "allotment_kept_answer_hits",
                    "Trees whose candidates were handed out from a kept answer "
                    "instead of a search.",
                    registry=registry),
                registry=registry,
            )
        return _METRICS


def mark_process_dead(pid: int) -> None:
    """Forget a worker that exited (its live gauges), in multiprocess mode."""
    if multiprocess():
        from prometheus_client import multiprocess as mp

        mp.mark_process_dead(pid)


def scrape_registry() -> CollectorRegistry:
    """A registry with every worker's counts (multiprocess mode) or this
    process's own."""
    if multiprocess():
        from prometheus_client import multiprocess as mp

        registry = CollectorRegistry()
        mp.MultiProcessCollector(registry)
        return registry
    return metrics().registry

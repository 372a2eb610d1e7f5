"""GET /metrics, GET /healthcheck, and the counting of every request.

``/metrics`` is Prometheus's text format: openstack-exporter's placement
series computed from the process's world (``service.placement_metrics``)
followed by the service's own counters (``allotment.telemetry``), summed
over every worker when ``PROMETHEUS_MULTIPROC_DIR`` is set.  On the API's
address it needs ``allotment:metrics`` (admin by default); with
``[allotment] metrics_bind`` it is served there without credentials instead,
and not on the API's address.  ``/healthcheck`` is oslo.middleware's.
"""

from __future__ import annotations

import ipaddress
import time

import falcon
from oslo_config import cfg
from oslo_middleware import healthcheck
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from allotment import errors, telemetry
from allotment.api import capacity_metrics
from allotment.api.resource import Resource, authorize
from allotment.auth import policies
from allotment.service import audit, placement_metrics

METRICS_PATH = "/metrics"
HEALTHCHECK_PATH = "/healthcheck"
# Set in the environ of requests that came in on [allotment] metrics_bind.
LISTENER_KEY = "allotment.metrics_listener"


class Metrics(Resource):
    serves = "text/plain"
    # The configured flavors, parsed on the first scrape.
    _flavors = None

    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        if not req.env.get(LISTENER_KEY):
            if self.conf.allotment.metrics_bind:
                # Kept off the public endpoint when it has a listener of its own.
                raise errors.NotFound("")
            authorize(req, policies.METRICS)
        scraped = placement_metrics.scrape(
            self.replica, consumer_allocations=self.conf.allotment.metrics_consumer_allocations,
            preemptible_types=self.conf.allotment.preemptible_consumer_types)
        text = scraped.text
        if self._flavors is None:
            self._flavors = capacity_metrics.parse_flavors(
                self.conf.allotment.capacity_flavors)
        text += capacity_metrics.text(self.replica, self.conf, self._flavors)
        interval = self.conf.allotment.audit_metrics_interval
        if interval:
            text += audit.metrics_text(audit.CACHE.get(self.db, interval))
        own = generate_latest(telemetry.scrape_registry())
        resp.content_type = CONTENT_TYPE_LATEST
        resp.data = text.encode("utf-8") + own


class CountRequests:
    """Falcon middleware: every answered request counted by route, method,
    status and microversion, with its latency.

    The counter's and the histogram's children for each set of labels are
    kept once found: ``labels()`` checks the values and takes a lock on
    every call, and a server answers a few dozen sets all day."""

    def __init__(self) -> None:
        self._found: telemetry.Metrics | None = None
        self._children: dict[tuple[str, ...], tuple] = {}

    def process_request(self, req: falcon.Request, resp: falcon.Response) -> None:
        req.context.started = time.perf_counter()

    def process_response(self, req, resp, resource, req_succeeded) -> None:
        started = getattr(req.context, "started", None)
        if started is None:
            return
        version = getattr(req.context, "microversion", None)
        labels = (req.uri_template or "unrouted", req.method, str(resp.status_code),
                  "" if version is None else f"{version[0]}.{version[1]}")
        found = telemetry.metrics()
        if found is not self._found:  # the first request, or metrics made again
            self._found, self._children = found, {}
        children = self._children.get(labels)
        if children is None:
            children = (found.requests.labels(*labels), found.latency.labels(*labels))
            self._children[labels] = children
        children[0].inc()
        children[1].observe(time.perf_counter() - started)


def count_error(exc: errors.PlacementError) -> None:
    """Count the errors operators watch: lost generation races and the
    database failing."""
    if exc.code == errors.CONCURRENT_UPDATE:
        telemetry.metrics().conflicts.inc()
    elif isinstance(exc, errors.DatabaseUnavailable):
        telemetry.metrics().db_unavailable.inc()


def _not_found(environ, start_response):
    body = b'{"errors": [{"status": 404, "title": "Not Found", "detail": ""}]}'
    start_response("404 Not Found", [("Content-Type", "application/json"),
                                     ("Content-Length", str(len(body)))])
    return [body]


def _bind_address(value: str) -> tuple[str, str]:
    """(host, port) of HOST:PORT; the host is kept only when it is an
    address, as the listener reports it (a name is not compared)."""
    host, _, port = value.rpartition(":")
    host = host.strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return "", port
    return ("" if address.is_unspecified else host), port


class Endpoints:
    """The outermost WSGI layer: ``/healthcheck`` for anyone, and the
    metrics listener's requests sent past authentication to ``/metrics``."""

    def __init__(self, application, routed, conf: cfg.ConfigOpts) -> None:
        self.application = application
        self.routed = routed
        self.health = healthcheck.Healthcheck(_not_found, conf)
        self.listener = _bind_address(conf.allotment.metrics_bind) \
            if conf.allotment.metrics_bind else None

    def _on_listener(self, environ: dict) -> bool:
        if self.listener is None:
            return False
        host, port = self.listener
        if environ.get("SERVER_PORT") != port:
            return False
        return not host or environ.get("SERVER_NAME") == host

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == HEALTHCHECK_PATH:
            return self.health(environ, start_response)
        if self._on_listener(environ):
            if path != METRICS_PATH:
                return _not_found(environ, start_response)
            environ[LISTENER_KEY] = True
            return self.routed(environ, start_response)
        return self.application(environ, start_response)

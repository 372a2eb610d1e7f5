"""GET /metrics and GET /healthcheck over HTTP, in process."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from allotment import errors, telemetry
from allotment.api import metrics as api_metrics
from allotment.server.app import create_app
from allotment.storage import db as db_mod
from tests.api.candidate_helpers import World
from tests.conftest import make_conf
from tests.harness.wsgi_client import Client

# openstack-exporter's placement collector (exporters/placement.go): every
# series it exports, with its labels, as dashboards and alerts name them.
EXPORTER_SERIES = {
    "openstack_placement_up": (),
    "openstack_placement_resource_total": ("hostname", "resourcetype"),
    "openstack_placement_resource_allocation_ratio": ("hostname", "resourcetype"),
    "openstack_placement_resource_reserved": ("hostname", "resourcetype"),
    "openstack_placement_resource_usage": ("hostname", "resourcetype"),
    "openstack_placement_resource_generation": ("hostname", "resourcetype"),
}
EXPORTER_CONSUMER_SERIES = {
    "openstack_placement_resource_provider_allocations": ("hostname", "uuid", "resourcetype"),
}


def families(text: str) -> dict[str, list]:
    """Metric name -> samples (prometheus-client's own parser)."""
    found: dict[str, list] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append(sample)
    return found


def scrape(api: Client, **kw) -> dict[str, list]:
    resp = api.get("/metrics", **kw)
    assert resp.status == 200, resp
    assert resp.headers["Content-Type"].startswith("text/plain")
    return families(resp.text)


def populate(api: Client) -> World:
    w = World(api)
    w.add("cn1", inv={"VCPU": {"total": 16, "reserved": 2, "allocation_ratio": 4.0},
                      "MEMORY_MB": {"total": 8192, "reserved": 512, "allocation_ratio": 1.5}},
          aggs=["A"])
    w.add("cn1-numa0", parent="cn1", inv={"VCPU": 8})
    w.add('odd "name"\\', inv={"DISK_GB": 100})
    w.add("pool", inv={"DISK_GB": {"total": 2000, "reserved": 100}},
          traits=["MISC_SHARES_VIA_AGGREGATE"], aggs=["A"])
    w.add("empty")
    w.use("cn1", {"VCPU": 3, "MEMORY_MB": 1024})
    w.use("cn1", {"VCPU": 1})
    w.use("cn1-numa0", {"VCPU": 2})
    w.use("pool", {"DISK_GB": 40})
    return w


def expected_from_api(api: Client) -> dict[str, set]:
    """The exporter's series as it would compute them: the provider list,
    then each provider's inventories and usages."""
    want: dict[str, set] = {name: set() for name in EXPORTER_SERIES}
    want["openstack_placement_up"].add(((), 1.0))
    for rp in api.get("/resource_providers").json["resource_providers"]:
        inv = api.get(f"/resource_providers/{rp['uuid']}/inventories").json
        usages = api.get(f"/resource_providers/{rp['uuid']}/usages").json["usages"]
        for rc, record in inv["inventories"].items():
            labels = (("hostname", rp["name"]), ("resourcetype", rc))
            want["openstack_placement_resource_total"].add((labels, float(record["total"])))
            want["openstack_placement_resource_allocation_ratio"].add(
                (labels, float(record["allocation_ratio"])))
            want["openstack_placement_resource_reserved"].add(
                (labels, float(record["reserved"])))
            want["openstack_placement_resource_generation"].add(
                (labels, float(inv["resource_provider_generation"])))
        for rc, used in usages.items():
            labels = (("hostname", rp["name"]), ("resourcetype", rc))
            want["openstack_placement_resource_usage"].add((labels, float(used)))
    return want


def as_sets(found: dict[str, list], names) -> dict[str, set]:
    return {name: {(tuple(sorted(s.labels.items())), s.value) for s in found.get(name, [])}
            for name in names}


def test_exporter_series_have_the_exporters_names_and_labels(api):
    populate(api)
    found = scrape(api)
    for name, labels in EXPORTER_SERIES.items():
        assert name in found, name
        for sample in found[name]:
            assert tuple(sorted(sample.labels)) == tuple(sorted(labels)), (name, sample)
    assert not set(EXPORTER_CONSUMER_SERIES) & set(found)


def test_values_equal_what_the_api_answers(api):
    populate(api)
    found = scrape(api)
    assert as_sets(found, EXPORTER_SERIES) == expected_from_api(api)


def test_values_follow_writes_made_since_the_last_scrape(api):
    w = populate(api)
    scrape(api)
    w.use("cn1", {"VCPU": 5})
    w.set_inventory("cn1-numa0", {"VCPU": 12})
    assert as_sets(scrape(api), EXPORTER_SERIES) == expected_from_api(api)


def test_consumer_allocations_when_configured(database_url, db):
    conf = make_conf(database_url, allotment={"metrics_consumer_allocations": True})
    api = Client(create_app(conf, db=db))
    w = populate(api)
    found = scrape(api)
    series = found["openstack_placement_resource_provider_allocations"]
    want = set()
    for name, uuid in w.uuids.items():
        allocs = api.get(f"/resource_providers/{uuid}/allocations").json["allocations"]
        for consumer, held in allocs.items():
            for rc, amount in held["resources"].items():
                want.add((name, consumer, rc, float(amount)))
    got = {(s.labels["hostname"], s.labels["uuid"], s.labels["resourcetype"], s.value)
           for s in series}
    assert got == want and len(want) == 5


def test_provider_count_and_feed_state(api):
    populate(api)
    # A read catches this process's world up with its own writes.
    assert api.get("/resource_providers").status == 200
    found = scrape(api)
    assert found["allotment_resource_providers"][0].value == 5
    assert found["allotment_feed_lag_rows"][0].value == 0
    assert found["allotment_feed_gaps_open"][0].value == 0


def test_feed_lag_counts_rows_this_process_had_not_applied(conf, db, database_url):
    writer = Client(create_app(conf, db=db))
    # Apps on one database handle share the process's world: a second
    # handle has a world of its own, which only its scrapes catch up.
    other = db_mod.Database(db_mod.create_engine(database_url))
    try:
        reader = Client(create_app(conf, db=other))
        assert scrape(reader)["allotment_feed_lag_rows"][0].value == 0
        populate(writer)
        found = scrape(reader)
        assert found["allotment_feed_lag_rows"][0].value > 0
        assert found["allotment_feed_lag_seconds"][0].value >= 0
        # Caught up by that scrape: the numbers are current.
        assert as_sets(found, EXPORTER_SERIES) == expected_from_api(writer)
        assert scrape(reader)["allotment_feed_lag_rows"][0].value == 0
    finally:
        other.dispose()


def value(found: dict[str, list], name: str, **labels) -> float:
    return sum(s.value for s in found.get(name, [])
               if all(s.labels.get(k) == v for k, v in labels.items()))


def test_requests_are_counted_by_route_method_status_and_microversion(api):
    before = scrape(api)
    for _ in range(3):
        assert api.get("/resource_providers", version="1.20").status == 200
    assert api.get("/resource_providers/nope", version="1.20").status == 404
    after = scrape(api)
    name = "allotment_http_requests_total"
    ok = {"route": "/resource_providers", "method": "GET", "status": "200",
          "microversion": "1.20"}
    missing = {"route": "/resource_providers/{uuid}", "method": "GET", "status": "404",
               "microversion": "1.20"}
    assert value(after, name, **ok) - value(before, name, **ok) == 3
    assert value(after, name, **missing) - value(before, name, **missing) == 1
    hist = "allotment_http_request_duration_seconds_count"
    assert value(after, hist, **ok) - value(before, hist, **ok) == 3


def test_each_set_of_labels_is_looked_up_once(api, monkeypatch):
    """Every request is counted, but the children of a set of labels are
    looked up (values checked, a lock taken) on its first request only;
    metrics made again are looked up again."""
    from prometheus_client.metrics import MetricWrapperBase

    looked_up: list[tuple] = []
    real = MetricWrapperBase.labels

    def labels(self, *values, **named):
        looked_up.append(values)
        return real(self, *values, **named)

    monkeypatch.setattr(MetricWrapperBase, "labels", labels)
    before = scrape(api)
    looked_up.clear()
    for _ in range(4):
        assert api.get("/resource_providers", version="1.21").status == 200
    ok = ("/resource_providers", "GET", "200", "1.21")
    assert looked_up.count(ok) <= 2  # the counter's and the histogram's, once
    after = scrape(api)
    name = "allotment_http_requests_total"
    labels_ok = dict(zip(telemetry.REQUEST_LABELS, ok, strict=True))
    assert value(after, name, **labels_ok) - value(before, name, **labels_ok) == 4
    monkeypatch.setattr(telemetry, "_METRICS", None)  # made again
    looked_up.clear()
    assert api.get("/resource_providers", version="1.21").status == 200
    assert looked_up.count(ok) == 2
    again = scrape(api)
    assert value(again, name, **labels_ok) == 1


def test_conflicts_and_candidates_are_counted(api):
    w = populate(api)
    before = scrape(api)
    stale = api.put(f"/resource_providers/{w.uuids['cn1']}/traits",
                    json={"resource_provider_generation": 0, "traits": []})
    assert stale.status == 409
    assert stale.error()["code"] == errors.CONCURRENT_UPDATE
    assert api.get("/allocation_candidates?resources=VCPU:1").status == 200
    after = scrape(api)
    assert (value(after, "allotment_generation_conflicts_total")
            - value(before, "allotment_generation_conflicts_total")) == 1
    count = "allotment_allocation_candidates_returned_count"
    total = "allotment_allocation_candidates_returned_sum"
    assert value(after, count) - value(before, count) == 1
    assert value(after, total) - value(before, total) == 2  # cn1 and its NUMA node


def test_kept_answers_are_counted(api):
    populate(api)
    query = "/allocation_candidates?resources=DISK_GB:10"
    assert api.get(query).status == 200
    before = value(scrape(api), "allotment_kept_answer_hits_total")
    assert api.get(query).status == 200
    assert value(scrape(api), "allotment_kept_answer_hits_total") > before


def test_database_failures_answered_503_are_counted():
    name = "allotment_database_unavailable_total"
    before = value(families(_own_text()), name)
    api_metrics.count_error(errors.DatabaseUnavailable("gone"))
    api_metrics.count_error(errors.BadRequest("not counted"))
    assert value(families(_own_text()), name) - before == 1


def _own_text() -> str:
    from prometheus_client import generate_latest

    return generate_latest(telemetry.scrape_registry()).decode()


def test_metrics_need_the_policy_rule(api):
    assert api.get("/metrics", token=None).status == 401
    resp = api.get("/metrics", token="someone:project")
    assert resp.status == 403
    assert "allotment:metrics" in resp.error()["detail"]


def test_healthcheck_needs_no_credentials(api):
    resp = api.get("/healthcheck", token=None)
    assert resp.status == 200
    resp = api.get("/healthcheck", token=None, headers={"Accept": "application/json"})
    assert resp.status == 200 and resp.json["reasons"] == []
    assert api.request("HEAD", "/healthcheck", token=None).status == 204


def test_separate_listener(database_url, db):
    conf = make_conf(database_url, allotment={"metrics_bind": "127.0.0.1:9178"})
    app = create_app(conf, db=db)
    public = Client(app)
    populate(public)
    # Off the API's own address ...
    assert public.get("/metrics").status == 404
    # ... and on the listener's without credentials, nothing else there.
    listener = {"SERVER_NAME": "127.0.0.1", "SERVER_PORT": "9178"}
    resp = _environ_get(app, "/metrics", listener)
    assert resp.status_code == 200
    assert as_sets(families(resp.text), EXPORTER_SERIES) == expected_from_api(public)
    assert _environ_get(app, "/resource_providers", listener).status_code == 404
    assert _environ_get(app, "/healthcheck", listener).status_code == 200
    # Another address on the same port is not the listener.
    assert _environ_get(app, "/metrics", {"SERVER_NAME": "10.0.0.1",
                                          "SERVER_PORT": "9178"}).status_code == 401


def _environ_get(app, path: str, environ: dict):
    import webob

    req = webob.Request.blank(path, environ=environ)
    return req.get_response(app)


def test_server_side_retries_are_counted(db):
    from allotment.service import allocations as alloc_service

    name = "allotment_write_retries_total"
    before = value(families(_own_text()), name)
    calls = []

    def work(conn):
        calls.append(1)
        if len(calls) < 3:
            raise alloc_service.RetryWrite()
        return "done"

    assert alloc_service.run_write(db, work, attempts=5) == "done"
    assert value(families(_own_text()), name) - before == 2


def test_whole_reloads_are_counted(api, db):
    from allotment.storage import feed

    populate(api)
    assert api.get("/resource_providers").status == 200
    before = value(scrape(api), "allotment_world_reloads_total")
    with db.write() as conn:
        feed.note_reset(conn)  # every process reads its world again
    assert api.get("/resource_providers").status == 200
    assert value(scrape(api), "allotment_world_reloads_total") - before == 1


def test_feed_gaps_are_counted_and_shown_open(api, db):
    import pytest
    import sqlalchemy as sa

    from allotment.storage import clock, tables
    from allotment.storage import feed as feed_mod

    if db.backend != "postgresql":
        pytest.skip("only PostgreSQL's feed ids can commit out of order (see storage/feed.py)")
    populate(api)
    assert api.get("/resource_providers").status == 200
    before = value(scrape(api), "allotment_feed_gaps_total")
    with db.write() as conn:
        head = feed_mod.head(conn)
    # A row two ids on: the one between is what a transaction still open
    # (or rolled back) would hold.
    with db.autocommit() as conn:
        conn.execute(sa.insert(tables.placement_changes).values(
            id=head + 2, created_at=clock.utcnow(), data="{}"))
        if db.backend == "postgresql":
            # Later writes must not be given the id just taken by hand.
            conn.execute(sa.text(
                "SELECT setval(pg_get_serial_sequence('placement_changes', 'id'), "
                "(SELECT max(id) FROM placement_changes))"))
    found = scrape(api)
    assert value(found, "allotment_feed_gaps_total") - before == 1
    assert value(found, "allotment_feed_gaps_open") == 1
    # Filled, so that the gap does not outlive the test in the database the
    # session's later tests share.
    with db.autocommit() as conn:
        conn.execute(sa.insert(tables.placement_changes).values(
            id=head + 1, created_at=clock.utcnow(), data="{}"))

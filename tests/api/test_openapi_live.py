"""Schema-driven testing of a live server: Schemathesis generates requests
from /openapi.json (valid and invalid ones) and every answer must be no
5xx, carry a documented status and content type, and match the documented
response schema.

Bounded on purpose (a few examples per operation) so it stays a short part
of the default suite; ALLOTMENT_SCHEMATHESIS_EXAMPLES raises the count for
a longer run.
"""

from __future__ import annotations

import os
import uuid

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from allotment.api import microversion, openapi
from tests.harness.servers import start_allotment

EXAMPLES = int(os.environ.get("ALLOTMENT_SCHEMATHESIS_EXAMPLES", "8"))
HEADERS = {"X-Auth-Token": "admin", "OpenStack-API-Version": "placement latest"}
VERSIONS = st.one_of(st.just("latest"), st.sampled_from(microversion.VERSIONS))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]


def _seed(url: str) -> None:
    """A small tree with inventory, traits, aggregates and an allocation, so
    that the listings answered have something in them."""
    root, child = str(uuid.uuid4()), str(uuid.uuid4())
    s = requests.Session()
    s.headers.update(HEADERS)

    def gen() -> int:
        return s.get(f"{url}/resource_providers/{root}").json()["generation"]

    s.post(f"{url}/resource_providers", json={"name": "host-1", "uuid": root}).raise_for_status()
    s.post(f"{url}/resource_providers", json={
        "name": "host-1-numa0", "uuid": child, "parent_provider_uuid": root}).raise_for_status()
    s.put(f"{url}/resource_providers/{root}/inventories", json={
        "resource_provider_generation": gen(),
        "inventories": {"VCPU": {"total": 16}, "MEMORY_MB": {"total": 32768}}}
          ).raise_for_status()
    s.put(f"{url}/resource_providers/{root}/traits", json={
        "resource_provider_generation": gen(), "traits": ["HW_CPU_X86_AVX2"]}
          ).raise_for_status()
    s.put(f"{url}/resource_providers/{root}/aggregates", json={
        "resource_provider_generation": gen(), "aggregates": [str(uuid.uuid4())]}
          ).raise_for_status()
    s.put(f"{url}/allocations/{uuid.uuid4()}", json={
        "allocations": {root: {"resources": {"VCPU": 2}}}, "project_id": "p",
        "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE"}
          ).raise_for_status()


@pytest.fixture(scope="module")
def live_schema(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("openapi-live")
    server = start_allotment(f"sqlite:///{workdir}/allotment.sqlite", workdir, workers=1)
    try:
        _seed(server.url)
        yield schemathesis.openapi.from_url(f"{server.url}/openapi.json")
    finally:
        server.stop()
    assert "Traceback" not in server.log_text(), server.log_text()[-4000:]


OPERATIONS = sorted((path, method.upper()) for path, item in openapi.build()["paths"].items()
                    for method in item)


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize("path,method", OPERATIONS)
def test_live_server_conforms(live_schema, path, method, mode):
    operation = live_schema[path][method]
    try:
        strategy = operation.as_strategy(mode)
    except Exception as exc:
        pytest.skip(f"no {mode} requests for this operation: {exc}")

    # The document's response schemas cover every microversion, so each
    # example speaks a microversion of its own (most often the latest).
    @given(case=strategy, version=VERSIONS)
    @settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
              suppress_health_check=list(HealthCheck), phases=[Phase.explicit,
                                                               Phase.generate])
    def check(case, version):
        headers = {**HEADERS, "OpenStack-API-Version": f"placement {version}"}
        case.call_and_validate(headers=headers, checks=CHECKS)

    check()

"""Random request bodies never cause a 500 or a partial write.

Each example sends one arbitrary JSON document (huge integers, floats,
unicode, NUL characters, wrong types, missing generations ...) to one of the
provider write endpoints and checks the answer is below 500 and, when it is
a 4xx, that nothing visible changed.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.api.test_resource_providers import create

KEYS = ["name", "uuid", "parent_provider_uuid", "resource_provider_generation",
        "inventories", "total", "reserved", "min_unit", "max_unit", "step_size",
        "allocation_ratio", "resource_class", "traits", "aggregates", "VCPU", "DISK_GB"]

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2 ** 70), max_value=2 ** 70),
    st.sampled_from([0, 1, 2, 2147483647, 2147483648, -1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=250),
    st.sampled_from(["VCPU", "CUSTOM_X", "HW_CPU_X86_AVX2", "\x00", "☃" * 201,
                     "2290d4af-9e6e-400b-9d65-1ee01376f71a", "not-a-uuid"]),
)
documents = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), st.text(max_size=10)),
                        children, max_size=5)),
    max_leaves=12)

ENDPOINTS = [
    ("POST", "/resource_providers"),
    ("PUT", "/resource_providers/{rp}"),
    ("PUT", "/resource_providers/{rp}/inventories"),
    ("POST", "/resource_providers/{rp}/inventories"),
    ("PUT", "/resource_providers/{rp}/inventories/VCPU"),
    ("PUT", "/resource_providers/{rp}/aggregates"),
    ("PUT", "/resource_providers/{rp}/traits"),
]


def snapshot(api, rp: str) -> str:
    parts = [api.get("/resource_providers").json]
    for sub in ("inventories", "traits", "aggregates"):
        parts.append(api.get(f"/resource_providers/{rp}/{sub}").json)
    return json.dumps(parts, sort_keys=True)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(endpoint=st.sampled_from(ENDPOINTS), document=documents,
       version=st.sampled_from(["1.0", "1.1", "1.14", "1.19", "1.26", "1.37", "1.39"]),
       path_uuid=st.one_of(st.none(), st.sampled_from(["x", "%00", "a" * 80, "☃"])))
def test_no_500_and_no_partial_write(api, endpoint, document, version, path_uuid):
    # The database persists across examples: make the target once.
    found = api.get("/resource_providers?name=fuzz-target").json["resource_providers"]
    if found:
        rp = found[0]["uuid"]
    else:
        rp = create(api, "fuzz-target")
        api.put(f"/resource_providers/{rp}/inventories", json={
            "resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}})
    method, template = endpoint
    path = template.format(rp=path_uuid if path_uuid is not None else rp)
    before = snapshot(api, rp)
    resp = api.request(method, path, body=json.dumps(document),
                       content_type="application/json", version=version)
    assert resp.status < 500, resp
    if 400 <= resp.status < 500:
        assert resp.error()["status"] == resp.status
        assert snapshot(api, rp) == before

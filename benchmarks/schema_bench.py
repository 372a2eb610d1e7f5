"""What validating a request body against its JSON schema costs.

Run: ``.venv/bin/python -m benchmarks.schema_bench [--number 20000]``

Times ``allotment.api.schema.first_error`` (what ``body.validate`` runs for
every write) on typical valid bodies of the write path, and on one invalid
body, and prints microseconds per call.  Asserts nothing.
"""

from __future__ import annotations

import argparse
import timeit
import uuid

from allotment.api import allocations, body, inventories, provider_traits, resource_providers
from allotment.api.schema import first_error

LATEST = (1, 39)
_RP = str(uuid.UUID(int=1))

CASES: list[tuple[str, dict, object]] = [
    ("inventories PUT, 2 classes", inventories.PUT_ALL_SCHEMA, {
        "resource_provider_generation": 3,
        "inventories": {
            "VCPU": {"total": 32, "reserved": 0, "min_unit": 1, "max_unit": 32,
                     "step_size": 1, "allocation_ratio": 16.0},
            "MEMORY_MB": {"total": 131072, "reserved": 512, "min_unit": 1,
                          "max_unit": 131072, "step_size": 1, "allocation_ratio": 1.5},
        },
    }),
    ("provider POST", resource_providers.post_schema(LATEST), {
        "name": "compute-0001", "uuid": _RP, "parent_provider_uuid": None,
    }),
    ("traits PUT, 5 traits", provider_traits.PUT_SCHEMA, {
        "traits": ["HW_CPU_X86_AVX", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE42",
                   "COMPUTE_VOLUME_MULTI_ATTACH", "CUSTOM_GOLD"],
        "resource_provider_generation": 7,
    }),
    ("allocations PUT", allocations.put_schema(LATEST), {
        "allocations": {_RP: {"resources": {"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 20}}},
        "project_id": "6f70656e737461636b20726f636b7321",
        "user_id": "6f70656e737461636b20726f636b7322",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }),
    ("inventories PUT, invalid (total 0)", inventories.PUT_ALL_SCHEMA, {
        "resource_provider_generation": 3, "inventories": {"VCPU": {"total": 0}},
    }),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--number", type=int, default=20000)
    args = parser.parse_args()
    for label, schema, instance in CASES:
        def call(schema=schema, instance=instance):
            return first_error(instance, schema, format_checker=body.FORMAT_CHECKER)
        call()  # build the validator outside the timing
        best = min(timeit.repeat(call, number=args.number, repeat=5))
        print(f"{label:40s} {best / args.number * 1e6:8.2f} us/call")


if __name__ == "__main__":
    main()

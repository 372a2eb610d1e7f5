"""Request-body schemas and the validators made from them."""

from __future__ import annotations

from allotment.api import allocations, body, reshaper, schema


def test_per_request_schemas_share_one_validator():
    # POST /allocations and POST /reshaper build their schema from the
    # microversion; validators are remembered by schema object, so each
    # request must get the same object or the cache grows without end.
    for build in (allocations.by_consumer, reshaper.schema):
        assert build((1, 39)) is build((1, 39))
        made = {id(schema.validator(build((1, 39)), format_checker=body.FORMAT_CHECKER))
                for _ in range(3)}
        assert len(made) == 1

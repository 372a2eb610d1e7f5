"""The compiled checks never accept what python-jsonschema refuses.

For every schema the API validates with, many near-valid instances are
drawn (tests/api/schema_instances.py) and each is judged three ways: by a
jsonschema validator made here (what ``first_error`` did before it had a
compiled check), by the compiled check alone, and by ``first_error``.
``first_error`` must give the very same error (or the same exception), and
the compiled check may only refuse more than jsonschema where fastjsonschema
reads ``$`` in a pattern as end of string: before a trailing newline.
"""

from __future__ import annotations

import json
import os
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from allotment.api import body, candidates_query
from allotment.api.compiled_schema import compile_check
from allotment.api.openapi.operations import OPERATIONS
from allotment.api.schema import first_error
from tests.api.schema_instances import near

# The microversions at which some schema changes shape.
VERSIONS = [(1, 0), (1, 3), (1, 4), (1, 7), (1, 8), (1, 12), (1, 14), (1, 16), (1, 17),
            (1, 18), (1, 19), (1, 21), (1, 25), (1, 28), (1, 31), (1, 33), (1, 34),
            (1, 35), (1, 36), (1, 38), (1, 39)]
STOCK = jsonschema.FormatChecker()


def api_schemas() -> list[tuple[str, dict, jsonschema.FormatChecker | None]]:
    """Every schema the API validates with, with the format checker it uses:
    each operation's body and query schema (as the OpenAPI document lists
    them) at every microversion where one changes shape."""
    found: dict[tuple[str, int], tuple[str, dict, Any]] = {}

    def add(label: str, schema: dict | None, checker: Any) -> None:
        # Schemas equal in content (many microversions share one) count once.
        if schema is not None:
            found.setdefault((json.dumps(schema, sort_keys=True), id(checker)),
                             (label, schema, checker))

    for op in OPERATIONS:
        for v in VERSIONS:
            at = f"{op.method} {op.path} {v[0]}.{v[1]}"
            if op.body is not None:
                add(f"{at} body", op.body(v), body.FORMAT_CHECKER)
            if op.query is not None:
                # Query strings are checked with jsonschema's stock formats,
                # except candidates queries, which name no format.
                checker = None if op.query is candidates_query.query_schema else STOCK
                add(f"{at} query", op.query(v), checker)
    return list(found.values())


SCHEMAS = api_schemas()
IDS = [label for label, _, _ in SCHEMAS]


def judge(call) -> tuple[str, object]:
    """What a validation call came to: no error, an error's text, or an exception."""
    try:
        error = call()
    except Exception as exc:  # e.g. TypeError for a non-string key and a pattern
        return ("raised", type(exc))
    return ("valid", None) if error is None else ("invalid", str(error))


def has_trailing_newline(instance: object) -> bool:
    if isinstance(instance, str):
        return instance.endswith("\n")
    if isinstance(instance, dict):
        return any(has_trailing_newline(k) or has_trailing_newline(v)
                   for k, v in instance.items())
    if isinstance(instance, list | tuple):
        return any(has_trailing_newline(v) for v in instance)
    return False


@pytest.mark.parametrize(("label", "schema", "checker"), SCHEMAS, ids=IDS)
def test_every_api_schema_gets_a_compiled_check(label, schema, checker):
    assert compile_check(schema, checker) is not None


_EXAMPLES = int(os.environ.get("SCHEMA_HYPOTHESIS_EXAMPLES", "100"))


@pytest.mark.parametrize(("label", "schema", "checker"), SCHEMAS, ids=IDS)
@settings(max_examples=_EXAMPLES, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(data=st.data())
def test_compiled_check_agrees_with_jsonschema(label, schema, checker, data):
    instance = data.draw(near(schema), label="instance")
    reference = jsonschema.validators.validator_for(schema)(schema, format_checker=checker)

    before = judge(lambda: jsonschema.exceptions.best_match(reference.iter_errors(instance)))
    assert judge(lambda: first_error(instance, schema, format_checker=checker)) == before

    fast = compile_check(schema, checker)
    try:
        fast(instance)
        fast_valid = True
    except Exception:
        fast_valid = False
    if fast_valid:
        # The dangerous direction: accepting what jsonschema refuses.
        assert before == ("valid", None)
    elif before == ("valid", None):
        assert has_trailing_newline(instance), "compiled check stricter for another reason"

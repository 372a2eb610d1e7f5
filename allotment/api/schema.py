"""JSON-schema validation with validators built once.

``jsonschema.validate`` checks the schema itself against its metaschema on
every call, which costs many times what validating a request does.  Our
schemas are fixed, so each gets one validator, made on first use; errors
are the ones ``jsonschema.validate`` would raise (``best_match``).

Even so, jsonschema's walk of a valid body costs more than the rest of
answering many writes, so a body is first put to a compiled check
(``compiled_schema``) that never accepts what jsonschema refuses; only what
it does not accept goes to jsonschema, which decides and words the error.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any, NamedTuple

import jsonschema

from allotment.api.compiled_schema import FastCheck, compile_check


class _Entry(NamedTuple):
    schema: dict
    validator: Any
    fast: FastCheck | None


_VALIDATORS: dict[Hashable, _Entry] = {}
_LOCK = threading.Lock()


def _entry(schema: dict, format_checker: jsonschema.FormatChecker | None,
           key: Hashable | None) -> _Entry:
    cache_key = (id(schema) if key is None else key, id(format_checker))
    found = _VALIDATORS.get(cache_key)
    if found is not None and (key is not None or found.schema is schema):
        return found
    made = _Entry(
        schema,
        jsonschema.validators.validator_for(schema)(schema, format_checker=format_checker),
        compile_check(schema, format_checker))
    with _LOCK:
        _VALIDATORS[cache_key] = made
    return made


def validator(schema: dict, *, format_checker: jsonschema.FormatChecker | None = None,
              key: Hashable | None = None) -> Any:
    """The validator of ``schema``, remembered under ``key`` (default: the
    schema object itself, for schemas defined once at import)."""
    return _entry(schema, format_checker, key).validator


def first_error(instance: Any, schema: dict, *,
                format_checker: jsonschema.FormatChecker | None = None,
                key: Hashable | None = None) -> jsonschema.ValidationError | None:
    """The error ``jsonschema.validate`` would raise, or None."""
    found = _entry(schema, format_checker, key)
    if found.fast is not None:
        try:
            found.fast(instance)
        except Exception:
            pass  # not accepted here (or not understood): jsonschema decides
        else:
            return None
    return jsonschema.exceptions.best_match(found.validator.iter_errors(instance))

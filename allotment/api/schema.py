"""JSON-schema validation with validators built once.

``jsonschema.validate`` checks the schema itself against its metaschema on
every call, which costs many times what validating a request does.  Our
schemas are fixed, so each gets one validator, made on first use; errors
are the ones ``jsonschema.validate`` would raise (``best_match``).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

import jsonschema

_VALIDATORS: dict[Hashable, tuple[dict, Any]] = {}
_LOCK = threading.Lock()


def validator(schema: dict, *, format_checker: jsonschema.FormatChecker | None = None,
              key: Hashable | None = None) -> Any:
    """The validator of ``schema``, remembered under ``key`` (default: the
    schema object itself, for schemas defined once at import)."""
    cache_key = (id(schema) if key is None else key, id(format_checker))
    found = _VALIDATORS.get(cache_key)
    if found is not None and (key is not None or found[0] is schema):
        return found[1]
    made = jsonschema.validators.validator_for(schema)(schema, format_checker=format_checker)
    with _LOCK:
        _VALIDATORS[cache_key] = (schema, made)
    return made


def first_error(instance: Any, schema: dict, *,
                format_checker: jsonschema.FormatChecker | None = None,
                key: Hashable | None = None) -> jsonschema.ValidationError | None:
    """The error ``jsonschema.validate`` would raise, or None."""
    found = validator(schema, format_checker=format_checker, key=key)
    return jsonschema.exceptions.best_match(found.iter_errors(instance))

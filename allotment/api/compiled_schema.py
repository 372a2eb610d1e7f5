"""Compiled validity checks for the JSON schemas the API uses.

python-jsonschema stays the reference: it decides what is valid and words
every error.  Walking a body with it costs tens to hundreds of microseconds,
so each schema also gets a check compiled to plain Python by fastjsonschema,
and a body that check passes is accepted without jsonschema looking at it.
That is only sound if the compiled check never accepts what jsonschema
(Draft 2020-12, the default for our schemas, which name no ``$schema``)
rejects.  It may reject more: the caller then asks jsonschema, which has the
last word either way.  So a schema gets a compiled check only when it uses
nothing but the keywords below, under the conditions written next to them,
where fastjsonschema's draft-07 code judges every instance as jsonschema
does or more strictly:

* ``type``: ``integer`` accepts 1.0 and refuses True in both; ``number``
  refuses booleans in both.  fastjsonschema takes tuples for arrays where
  jsonschema does not, which the generated code is corrected for (JSON never
  decodes to tuples, but the contract is every instance).
* ``pattern``: fastjsonschema searches with every unescaped ``$`` turned
  into ``\\Z``, so ``"ABC\\n"`` fails ``^[A-Z]+$`` there but passes
  jsonschema's ``re.search``.  A stronger anchor can only lose matches, as
  long as no lookaround or inline flag group (``(?``) can turn it round.
* ``patternProperties`` and ``additionalProperties``: both search keys with
  ``re.search`` and the unchanged pattern.
* ``format``: checked by the very same ``FormatChecker.conforms`` jsonschema
  calls.  fastjsonschema checks formats of strings only, so ``format`` must
  sit next to ``"type": "string"``, which refuses everything else in both.
* ``enum``: string values only (jsonschema tells True from 1, a plain
  ``in`` does not).
* ``uniqueItems``: only over string items, where equality is plain.
* ``minimum``/``maximum``: the same Python comparison, finite bounds only
  (a bound is written into the generated code as text).

Anything else (``$ref``, ``oneOf``, ``default``, which fastjsonschema would
write into the instance, unusual property names, ...) leaves the schema to
jsonschema alone.
"""

from __future__ import annotations

import functools
import logging
import math
import re
from collections.abc import Callable
from typing import Any

import fastjsonschema
import jsonschema

LOG = logging.getLogger(__name__)

FastCheck = Callable[[Any], object]
"""Returns when the instance is valid; raises anything when it may not be."""

_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
# Property names end up inside generated source code: keep to plain ones.
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]+\Z")


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _bound(value: object) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _regex(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        re.compile(value)
    except re.error:
        return False
    return True


def _type(value: object, node: dict) -> bool:
    names = value if isinstance(value, list) else [value]
    return (bool(names) and all(isinstance(n, str) and n in _TYPES for n in names)
            and len(set(names)) == len(names))


def _properties(value: object, node: dict) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and _PLAIN_NAME.match(k) and supported(v) for k, v in value.items())


def _pattern_properties(value: object, node: dict) -> bool:
    return isinstance(value, dict) and all(
        _regex(k) and supported(v) for k, v in value.items())


def _additional(value: object, node: dict) -> bool:
    return isinstance(value, bool) or supported(value)


def _required(value: object, node: dict) -> bool:
    return (isinstance(value, list) and all(isinstance(v, str) for v in value)
            and len(set(value)) == len(value))


def _pattern(value: object, node: dict) -> bool:
    return _regex(value) and "(?" not in value


def _format(value: object, node: dict) -> bool:
    return isinstance(value, str) and node.get("type") == "string"


def _enum(value: object, node: dict) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def _unique(value: object, node: dict) -> bool:
    items = node.get("items")
    return value is False or (value is True and isinstance(items, dict)
                              and items.get("type") == "string")


def _any_of(value: object, node: dict) -> bool:
    return isinstance(value, list) and bool(value) and all(supported(v) for v in value)


_WORDS: dict[str, Callable[[Any, dict], bool]] = {
    "type": _type,
    "properties": _properties,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional,
    "required": _required,
    "minProperties": lambda v, n: _count(v),
    "maxProperties": lambda v, n: _count(v),
    "items": lambda v, n: supported(v),
    "minItems": lambda v, n: _count(v),
    "maxItems": lambda v, n: _count(v),
    "uniqueItems": _unique,
    "minLength": lambda v, n: _count(v),
    "maxLength": lambda v, n: _count(v),
    "pattern": _pattern,
    "format": _format,
    "minimum": lambda v, n: _bound(v),
    "maximum": lambda v, n: _bound(v),
    "enum": _enum,
    "anyOf": _any_of,
}


def supported(node: object) -> bool:
    """Whether the compiled check of ``node`` is sound (see the module doc)."""
    return isinstance(node, dict) and all(
        word in _WORDS and _WORDS[word](value, node) for word, value in node.items())


def _formats(node: object, found: set[str]) -> set[str]:
    if isinstance(node, dict):
        if isinstance(node.get("format"), str):
            found.add(node["format"])
        for value in node.values():
            _formats(value, found)
    elif isinstance(node, list):
        for value in node:
            _formats(value, found)
    return found


def _arrays_are_lists(code: str) -> str | None:
    # fastjsonschema's "array" is (list, tuple); jsonschema's is list.
    fixed = code.replace("(list, tuple)", "(list,)")
    # What is left of tuple must be the uniqueItems helper building keys.
    if "tuple" in fixed.replace("tuple(fn(v) for v in var)", ""):
        return None
    return fixed


def compile_check(schema: dict,
                  format_checker: jsonschema.FormatChecker | None) -> FastCheck | None:
    """A compiled check of ``schema``, or None when jsonschema must decide alone."""
    if not supported(schema):
        return None
    # Every format goes through the checker jsonschema was given (unknown
    # formats conform there, as in jsonschema); without one, formats are
    # not asserted at all, as in jsonschema.
    formats = ({name: functools.partial(format_checker.conforms, format=name)
                for name in _formats(schema, set())} if format_checker else {})
    try:
        code = fastjsonschema.compile_to_code(
            schema, formats=formats, use_default=False,
            use_formats=format_checker is not None, detailed_exceptions=False)
        fixed = _arrays_are_lists(code)
        if fixed is None:
            return None
        namespace: dict[str, Any] = {}
        exec(compile(fixed, "<compiled schema>", "exec"), namespace)
        return functools.partial(namespace["validate"], custom_formats=formats)
    except Exception:  # a schema it cannot compile is simply left to jsonschema
        LOG.debug("schema left to jsonschema: %r", schema, exc_info=True)
        return None

"""Build the OpenAPI 3.1 document from the operation table.

Placement's microversions do not map onto OpenAPI's model (one shape per
operation), so the document describes the latest microversion and states
every difference in ``x-openstack-*`` extensions: the version an operation,
a query parameter or a request body shape appears in, and the body schema
in force for each range of versions.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from allotment import __version__
from allotment.api import microversion
from allotment.api.openapi import responses
from allotment.api.openapi.operations import OPERATIONS, Operation, SchemaOf

LATEST = microversion.MAX_VERSION
_PATH_PARAM = re.compile(r"{(\w+)}")
# Patterned query keys such as ``^resources([a-zA-Z0-9_-]{1,64})?$``.
_SUFFIXED = re.compile(r"^\^(\w+)\((.+)\)\?\$$")

_DESCRIPTION = """\
The Placement API as allotment serves it.

Every request names the microversion it speaks in the `OpenStack-API-Version`
header (`placement 1.39`, or `placement latest`); without it a request is
answered at 1.0. This document shows each operation at the latest
microversion; `x-openstack-min-version` says from which microversion an
operation exists (before it the route answers 404, or 405 for a method),
`x-openstack-microversions` on a request body lists the schema in force for
each range of microversions, and query parameters carry the range they are
accepted in. Error bodies carry a `code` from 1.23, and `last-modified`
and `cache-control` headers appear from 1.15. Authentication is a token in
`X-Auth-Token` (keystone, or `noauth2` where `admin` is an administrator);
`x-openstack-policy` names the policy rule that guards an operation.
"""


def _vstr(ver: tuple[int, int]) -> str:
    return f"{ver[0]}.{ver[1]}"


def _versions_from(since: str) -> list[tuple[int, int]]:
    first = tuple(int(p) for p in since.split("."))
    return [(1, minor) for minor in range(first[1], LATEST[1] + 1)]


def _key(schema: Any) -> str:
    return json.dumps(schema, sort_keys=True, default=str)


def ranges(fn: SchemaOf, since: str) -> list[dict]:
    """``fn`` over every microversion from ``since``, equal neighbours merged."""
    out: list[dict] = []
    for ver in _versions_from(since):
        schema = fn(ver)
        if out and _key(out[-1]["schema"]) == _key(schema):
            out[-1]["max_version"] = _vstr(ver)
            continue
        out.append({"min_version": _vstr(ver), "max_version": _vstr(ver),
                    "schema": copy.deepcopy(schema)})
    return out


def _query_params(op: Operation) -> list[dict]:
    params: dict[str, dict] = {}
    if op.query is not None:
        for ver in _versions_from(op.since):
            schema = op.query(ver)
            required = set(schema.get("required", []))
            found = [(name, sub, "") for name, sub in schema.get("properties", {}).items()]
            for pattern, sub in schema.get("patternProperties", {}).items():
                match = _SUFFIXED.match(pattern)
                if match:
                    found.append((match.group(1), sub,
                                  f"May carry a request group suffix matching "
                                  f"`{match.group(2)}`."))
            for name, sub, note in found:
                param = params.setdefault(name, {
                    "name": name, "in": "query", "x-openstack-min-version": _vstr(ver)})
                param["x-openstack-max-version"] = _vstr(ver)
                param["schema"] = copy.deepcopy(sub)
                param["required"] = name in required
                if note:
                    param["description"] = note
    for extra in op.params:
        params[extra.name] = {"name": extra.name, "in": extra.where, "required": False,
                              "description": extra.description,
                              "schema": copy.deepcopy(extra.schema),
                              "x-openstack-min-version": extra.since or op.since}
        if extra.extension:
            params[extra.name]["x-allotment-extension"] = True
    out = []
    for param in params.values():
        if param.get("x-openstack-max-version") == _vstr(LATEST):
            del param["x-openstack-max-version"]
        out.append(param)
    return out


def _error_statuses(op: Operation) -> list[int]:
    # 414: a query string past [allotment] max_query_string_length, on any route.
    statuses = [400, 404, 406, 414]
    if not op.public:
        # 503: the database is unreachable (see docs/reliability.md).
        statuses += [401, 403, 503]
    if op.method != "GET":
        statuses += [409, 405]
    if op.body is not None or op.form is not None:
        # 413: a body past [oslo_middleware] max_request_body_size.
        statuses += [413, 415]
    return sorted(statuses)


def _operation(op: Operation) -> dict:
    out: dict[str, Any] = {
        "operationId": f"{op.method.lower()}{_operation_suffix(op.path)}",
        "summary": op.summary,
        "tags": [op.tag],
        "x-openstack-min-version": op.since,
        "parameters": [{"$ref": "#/components/parameters/microversion"}]
        + [{"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
           for name in _PATH_PARAM.findall(op.path)]
        + _query_params(op),
        "responses": {},
    }
    if op.policy:
        out["x-openstack-policy"] = op.policy
    if op.notes:
        out["description"] = op.notes
    if op.public:
        out["security"] = []
    if op.body is not None:
        versions = ranges(op.body, op.since)
        schemas = [v["schema"] for v in versions if v["schema"] is not None]
        out["requestBody"] = {
            # Optional when some microversions take no body at all.
            "required": len(schemas) == len(versions),
            "content": {"application/json": {"schema": schemas[-1]}},
            "x-openstack-microversions": versions,
        }
    if op.form is not None:
        out["requestBody"] = {"required": True, "content": {
            "application/x-www-form-urlencoded": {"schema": op.form}}}
    for status, schema in op.ok.items():
        answer: dict[str, Any] = {"description": "Success" if status < 300 else (
            "Redirect" if status < 400 else "Refused")}
        if schema is not None:
            types = (op.media_type,) if isinstance(op.media_type, str) else op.media_type
            answer["content"] = {t: {"schema": schema} for t in types}
        out["responses"][str(status)] = answer
    for status in _error_statuses(op):
        out["responses"].setdefault(str(status), {"$ref": "#/components/responses/error"})
    return out


def _operation_suffix(path: str) -> str:
    words = re.sub(r"[{}]", "", path).replace("/", "_").strip("_") or "root"
    return "_" + words


def build() -> dict:
    """The OpenAPI 3.1 document of every route the service serves."""
    paths: dict[str, dict] = {}
    for op in OPERATIONS:
        paths.setdefault(op.path, {})[op.method.lower()] = _operation(op)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "allotment (OpenStack Placement API)",
            "version": __version__,
            "description": _DESCRIPTION,
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "x-openstack-microversions": {"min_version": microversion.min_version_string(),
                                      "max_version": microversion.max_version_string()},
        "security": [{"token": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {
                "token": {"type": "apiKey", "in": "header", "name": "X-Auth-Token"},
            },
            "parameters": {
                "microversion": {
                    "name": "OpenStack-API-Version",
                    "in": "header",
                    "required": False,
                    "description": "`placement 1.N` or `placement latest`; 1.0 when absent.",
                    "schema": {"type": "string",
                               "pattern": "^placement (latest|1\\.[0-9]+)$"},
                },
            },
            "responses": {
                "error": {
                    "description": "An error in Placement's error format",
                    "content": {"application/json": {"schema": responses.ERROR}},
                },
            },
        },
    }


def dumps(document: dict) -> str:
    """The document as written to docs/openapi.json (stable, diff-friendly)."""
    return json.dumps(document, indent=2, sort_keys=True) + "\n"

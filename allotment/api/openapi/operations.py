"""Every operation of the API: its microversion, policy rule, the request
schemas the handlers validate with, and the shape of its answers.

Request bodies and query strings are not described here but taken from the
handlers' own schema functions (one function of the microversion each), so
the document cannot drift from what is enforced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from allotment.api import (
    aggregates,
    allocations,
    candidates_query,
    inventories,
    provider_traits,
    reshaper,
    resource_classes,
    resource_providers,
    usages,
)
from allotment.api.openapi import responses as r

Version = tuple[int, int]
# A request schema at a microversion; None where the operation takes no body.
SchemaOf = Callable[[Version], dict | None]


def _always(schema: dict) -> SchemaOf:
    return lambda _ver: schema


@dataclass(frozen=True)
class Param:
    """A query parameter not described by a handler's schema."""

    name: str
    description: str
    schema: dict = field(default_factory=lambda: {"type": "string"})
    # From which microversion (None: the operation's own).
    since: str | None = None
    # Only understood with the Allotment-Extensions header (docs/extensions.md).
    extension: bool = False
    # "query", or "header".
    where: str = "query"


@dataclass(frozen=True)
class Operation:
    path: str
    method: str
    summary: str
    tag: str
    since: str = "1.0"
    policy: str | None = None
    body: SchemaOf | None = None
    query: SchemaOf | None = None
    params: tuple[Param, ...] = ()
    # Success status -> response schema (None: no body), at the latest version.
    ok: dict[int, dict | None] = field(default_factory=dict)
    notes: str = ""
    public: bool = False
    media_type: str | tuple[str, ...] = "application/json"
    # An url-encoded form body (the web view's sign-in), not validated JSON.
    form: dict | None = None


_RP = "/resource_providers/{uuid}"
_HTML = {"type": "string"}
_ASSET = {"type": "string"}
_LOGIN_FORM = {"type": "object", "properties": {"token": {"type": "string"}},
               "required": ["token"]}
_P = "placement:resource_providers"

_TRUE_FALSE = {"type": "string", "enum": ["true", "false"]}
# Extension parameters of GET /allocation_candidates (docs/extensions/).
_CANDIDATE_EXTENSIONS = (
    Param("Allotment-Extensions", "`1` opts in to allotment's extensions of this "
          "query (docs/extensions.md); refused below 1.36. Without it every extension "
          "parameter is an unknown query parameter (Placement's own 400).",
          {"type": "string", "enum": ["1"]}, since="1.36", extension=True, where="header"),
    Param("ignore_consumers", "`in:UUID1,UUID2` (repeatable): candidates as if these "
          "consumers held nothing; each allocation request then says which of them it "
          "`displaces`. Needs `placement:allocations:list` as well; unknown consumers "
          "make a 400 `allotment.consumer.unknown` (docs/extensions/ignore-consumers.md).",
          {"type": "string", "pattern": "^in:"}, since="1.36", extension=True),
    Param("preempt", "`true`: also the candidates that fit once consumers of the "
          "`[allotment] preemptible_consumer_types` go, after those that fit as things "
          "are, each allocation request with the consumers it `evicts`. Needs "
          "`placement:allocations:list` as well (docs/extensions/preempt.md).",
          _TRUE_FALSE, since="1.38", extension=True),
)

OPERATIONS: tuple[Operation, ...] = (
    Operation("/", "GET", "List API versions", "versions", public=True, ok={200: r.VERSIONS},
              notes="Reachable without credentials."),
    Operation("/openapi.json", "GET", "This OpenAPI document", "versions", public=True,
              ok={200: {"type": "object", "required": ["openapi", "paths"]}},
              notes="Reachable without credentials; the same at every microversion."),

    Operation("/resource_classes", "GET", "List resource classes", "resource classes",
              since="1.2", policy="placement:resource_classes:list",
              ok={200: r.RESOURCE_CLASSES}),
    Operation("/resource_classes", "POST", "Create a custom resource class",
              "resource classes", since="1.2", policy="placement:resource_classes:create",
              body=_always(resource_classes.CUSTOM_CLASS_SCHEMA), ok={201: None}),
    Operation("/resource_classes/{name}", "GET", "Show a resource class", "resource classes",
              since="1.2", policy="placement:resource_classes:show",
              ok={200: r.RESOURCE_CLASS}),
    Operation("/resource_classes/{name}", "PUT", "Create or confirm a custom resource class",
              "resource classes", since="1.2", policy="placement:resource_classes:update",
              body=resource_classes.put_schema, ok={200: r.RESOURCE_CLASS, 201: None, 204: None},
              notes="Before 1.7 renames the class to the name in the body (200 with the "
                    "class); from 1.7 takes no body and creates (201) or confirms (204)."),
    Operation("/resource_classes/{name}", "DELETE", "Delete a custom resource class",
              "resource classes", since="1.2", policy="placement:resource_classes:delete",
              ok={204: None}),

    Operation("/traits", "GET", "List traits", "traits", since="1.6",
              policy="placement:traits:list", ok={200: r.TRAITS},
              params=(Param("name", "in:NAME1,NAME2 or startswith:PREFIX"),
                      Param("associated", "true or false",
                            {"type": "string", "enum": ["true", "false"]}))),
    Operation("/traits/{name}", "GET", "Check that a trait exists", "traits", since="1.6",
              policy="placement:traits:show", ok={204: None}),
    Operation("/traits/{name}", "PUT", "Create or confirm a custom trait", "traits",
              since="1.6", policy="placement:traits:update", ok={201: None, 204: None}),
    Operation("/traits/{name}", "DELETE", "Delete a custom trait", "traits", since="1.6",
              policy="placement:traits:delete", ok={204: None}),

    Operation("/resource_providers", "GET", "List resource providers", "resource providers",
              policy=f"{_P}:list", query=resource_providers.list_query_schema,
              ok={200: r.PROVIDERS},
              notes="`member_of` and `required` may repeat from 1.24 and 1.39."),
    Operation("/resource_providers", "POST", "Create a resource provider",
              "resource providers", policy=f"{_P}:create",
              body=resource_providers.post_schema, ok={200: r.PROVIDER, 201: None},
              notes="201 without a body before 1.20, 200 with the provider from 1.20."),
    Operation(_RP, "GET", "Show a resource provider", "resource providers",
              policy=f"{_P}:show", ok={200: r.PROVIDER},
              notes="`parent_provider_uuid` and `root_provider_uuid` from 1.14; links to "
                    "aggregates from 1.1, traits from 1.6, allocations from 1.11."),
    Operation(_RP, "PUT", "Update a resource provider", "resource providers",
              policy=f"{_P}:update", body=resource_providers.put_schema,
              ok={200: r.PROVIDER}, notes="Re-parenting is allowed from 1.37."),
    Operation(_RP, "DELETE", "Delete a resource provider", "resource providers",
              policy=f"{_P}:delete", ok={204: None}),

    Operation(f"{_RP}/inventories", "GET", "List a provider's inventories", "inventories",
              policy=f"{_P}:inventories:list", ok={200: r.INVENTORIES}),
    Operation(f"{_RP}/inventories", "PUT", "Replace a provider's inventories", "inventories",
              policy=f"{_P}:inventories:update",
              body=_always(inventories.PUT_ALL_SCHEMA), ok={200: r.INVENTORIES}),
    Operation(f"{_RP}/inventories", "POST", "Add one inventory", "inventories",
              policy=f"{_P}:inventories:create",
              body=_always(inventories.POST_SCHEMA), ok={201: r.INVENTORY}),
    Operation(f"{_RP}/inventories", "DELETE", "Delete all of a provider's inventories",
              "inventories", since="1.5", policy=f"{_P}:inventories:delete",
              ok={204: None}),
    Operation(f"{_RP}/inventories/{{resource_class}}", "GET", "Show one inventory",
              "inventories", policy=f"{_P}:inventories:show", ok={200: r.INVENTORY}),
    Operation(f"{_RP}/inventories/{{resource_class}}", "PUT", "Update one inventory",
              "inventories", policy=f"{_P}:inventories:update",
              body=_always(inventories.RECORD_SCHEMA), ok={200: r.INVENTORY}),
    Operation(f"{_RP}/inventories/{{resource_class}}", "DELETE", "Delete one inventory",
              "inventories", policy=f"{_P}:inventories:delete", ok={204: None}),

    Operation(f"{_RP}/aggregates", "GET", "List a provider's aggregates", "aggregates",
              since="1.1", policy=f"{_P}:aggregates:list", ok={200: r.PROVIDER_AGGREGATES}),
    Operation(f"{_RP}/aggregates", "PUT", "Replace a provider's aggregates", "aggregates",
              since="1.1", policy=f"{_P}:aggregates:update", body=aggregates.put_schema,
              ok={200: r.PROVIDER_AGGREGATES},
              notes="A bare list before 1.19; with the provider generation from 1.19."),

    Operation(f"{_RP}/traits", "GET", "List a provider's traits", "traits", since="1.6",
              policy=f"{_P}:traits:list", ok={200: r.PROVIDER_TRAITS}),
    Operation(f"{_RP}/traits", "PUT", "Replace a provider's traits", "traits", since="1.6",
              policy=f"{_P}:traits:update", body=_always(provider_traits.PUT_SCHEMA),
              ok={200: r.PROVIDER_TRAITS}),
    Operation(f"{_RP}/traits", "DELETE", "Remove every trait of a provider", "traits",
              since="1.6", policy=f"{_P}:traits:delete", ok={204: None}),

    Operation(f"{_RP}/usages", "GET", "Show a provider's usage", "usages",
              policy=f"{_P}:usages", ok={200: r.PROVIDER_USAGES}),
    Operation(f"{_RP}/allocations", "GET", "List the allocations against a provider",
              "allocations", policy=f"{_P}:allocations:list",
              ok={200: r.PROVIDER_ALLOCATIONS}),
    Operation("/usages", "GET", "Show a project's usage", "usages", since="1.9",
              policy="placement:usages", query=usages.query_schema, ok={200: r.USAGES},
              notes="Grouped by consumer type from 1.38."),

    Operation("/allocations", "POST", "Replace the allocations of several consumers",
              "allocations", since="1.13", policy="placement:allocations:manage",
              body=allocations.by_consumer, ok={204: None}),
    Operation("/allocations/{consumer_uuid}", "GET", "Show a consumer's allocations",
              "allocations", policy="placement:allocations:list",
              ok={200: r.CONSUMER_ALLOCATIONS},
              notes="`project_id` and `user_id` from 1.12, `consumer_generation` from "
                    "1.28, `consumer_type` from 1.38."),
    Operation("/allocations/{consumer_uuid}", "PUT", "Replace a consumer's allocations",
              "allocations", policy="placement:allocations:update",
              body=allocations.put_schema, ok={204: None}),
    Operation("/allocations/{consumer_uuid}", "DELETE", "Delete a consumer's allocations",
              "allocations", policy="placement:allocations:delete", ok={204: None}),

    Operation("/allocation_candidates", "GET", "Find allocation candidates",
              "allocation candidates", since="1.10",
              policy="placement:allocation_candidates:list",
              query=candidates_query.query_schema, ok={200: r.ALLOCATION_CANDIDATES},
              notes="Allocation requests are lists before 1.12; provider summaries carry "
                    "traits from 1.17 and parent/root uuids from 1.29; `mappings` appear "
                    "from 1.34. From 1.25 `resources`, `required`, `member_of` (and `in_tree` "
                    "from 1.31) take a group suffix: numeric before 1.33, up to 64 "
                    "characters of [a-zA-Z0-9_-] from 1.33. With the `Allotment-Extensions: "
                    "1` header (from 1.36) the extensions of docs/extensions.md are "
                    "understood; those documented here carry `x-allotment-extension`.",
              params=_CANDIDATE_EXTENSIONS),
    # The web view (HTML for browsers; see docs/operating.md).
    Operation("/ui", "GET", "Web view: hosts with capacity and usage", "web view",
              policy="allotment:web:view", ok={200: _HTML, 303: None}, media_type="text/html",
              params=(Param("q", "Only hosts whose name contains this (any case)."),
                      Param("aggregate", "Only trees with a provider in this aggregate."),
                      Param("trait", "Only trees with a provider that has this trait."),
                      Param("class", "Only trees with inventory of this resource class."),
                      Param("sort", "name (default) or usage (fullest first)."),
                      Param("page", "Page of hosts to show (from 1).",
                            {"type": "string", "pattern": "^[0-9]+$"}),
                      Param("per_page", "Hosts per page (default 100, at most 1000).",
                            {"type": "string", "pattern": "^[0-9]+$"})),
              notes="Browsers without a token are sent to /ui/login (303)."),
    Operation("/ui/trees/{uuid}", "GET", "Web view: one provider tree", "web view",
              policy="allotment:web:view", ok={200: _HTML, 303: None},
              media_type="text/html",
              notes="Any provider of the tree may be named; the whole tree is shown."),
    Operation("/ui/capacity", "GET", "Web view: how many more instances fit", "web view",
              policy="allotment:web:view", ok={200: _HTML, 303: None}, media_type="text/html",
              params=(Param("request", "A GET /allocation_candidates query string."),)),
    Operation("/ui/what-if", "GET",
              "Web view: where a request fits were some consumers gone", "web view",
              policy="allotment:web:view", ok={200: _HTML, 303: None}, media_type="text/html",
              params=(Param("request", "A GET /allocation_candidates query string."),
                      Param("ignore", "Consumers to treat as holding nothing "
                                      "(UUIDs, comma-separated)."),
                      Param("preempt", "1: also candidates that fit once preemptible "
                                       "consumers are evicted."),
                      Param("limit", "Candidates to show (default 20, at most 1000).",
                            {"type": "string", "pattern": "^[0-9]+$"}))),
    Operation("/ui/login", "GET", "Web view: the sign-in form", "web view", public=True,
              ok={200: _HTML}, media_type="text/html"),
    Operation("/ui/login", "POST", "Web view: keep a token in a cookie", "web view",
              public=True, form=_LOGIN_FORM, ok={303: None, 400: _HTML},
              media_type="text/html"),
    Operation("/ui/static/{name}", "GET", "Web view: stylesheet and script", "web view",
              public=True, ok={200: _ASSET}, media_type=("text/css", "text/javascript")),
    Operation("/ui/logout", "POST", "Web view: forget the token", "web view", public=True,
              ok={303: None}, media_type="text/html"),
    Operation("/favicon.ico", "GET", "No icon (asked for by browsers)", "web view",
              public=True, ok={},
              notes="Always 404 (Placement's error format), without credentials."),
    # For monitoring (see docs/operating.md).
    Operation("/metrics", "GET", "Prometheus metrics", "monitoring",
              policy="allotment:metrics", ok={200: _HTML},
              media_type="text/plain",
              notes="openstack-exporter's placement series and the service's own; "
                    "not served here when [allotment] metrics_bind is set."),
    Operation("/reshaper", "POST", "Move inventories and allocations atomically",
              "reshaper", since="1.30", policy="placement:reshaper:reshape",
              body=reshaper.schema, ok={204: None}),
)

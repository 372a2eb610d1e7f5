"""Policy rule defaults, with Placement's rule names and check strings.

Operators keep their existing ``policy.yaml``: every rule name, default check
string, scope type and deprecated alias matches upstream Placement, so an
override written for Placement means the same thing here.  The same list feeds
``oslopolicy-sample-generator`` through the ``oslo.policy.policies`` entry
point (``allotment.auth.policies:list_rules``).
"""

from __future__ import annotations

from collections.abc import Sequence

from oslo_log import versionutils
from oslo_policy import policy

# Base rules, referenced by the API rules below.
ADMIN_API = "rule:admin_api"
SERVICE = "rule:service_api"
ADMIN_OR_SERVICE = "rule:admin_or_service_api"
ADMIN_OR_PROJECT_READER_OR_SERVICE = "rule:admin_or_project_reader_or_service_api"

# API rule names, for handlers calling ``ctx.can(...)``.
RESOURCE_PROVIDERS_LIST = "placement:resource_providers:list"
RESOURCE_PROVIDERS_CREATE = "placement:resource_providers:create"
RESOURCE_PROVIDERS_SHOW = "placement:resource_providers:show"
RESOURCE_PROVIDERS_UPDATE = "placement:resource_providers:update"
RESOURCE_PROVIDERS_DELETE = "placement:resource_providers:delete"

RESOURCE_CLASSES_LIST = "placement:resource_classes:list"
RESOURCE_CLASSES_CREATE = "placement:resource_classes:create"
RESOURCE_CLASSES_SHOW = "placement:resource_classes:show"
RESOURCE_CLASSES_UPDATE = "placement:resource_classes:update"
RESOURCE_CLASSES_DELETE = "placement:resource_classes:delete"

INVENTORIES_LIST = "placement:resource_providers:inventories:list"
INVENTORIES_CREATE = "placement:resource_providers:inventories:create"
INVENTORIES_SHOW = "placement:resource_providers:inventories:show"
INVENTORIES_UPDATE = "placement:resource_providers:inventories:update"
INVENTORIES_DELETE = "placement:resource_providers:inventories:delete"

AGGREGATES_LIST = "placement:resource_providers:aggregates:list"
AGGREGATES_UPDATE = "placement:resource_providers:aggregates:update"

PROVIDER_USAGES = "placement:resource_providers:usages"
TOTAL_USAGES = "placement:usages"

TRAITS_LIST = "placement:traits:list"
TRAITS_SHOW = "placement:traits:show"
TRAITS_UPDATE = "placement:traits:update"
TRAITS_DELETE = "placement:traits:delete"
PROVIDER_TRAITS_LIST = "placement:resource_providers:traits:list"
PROVIDER_TRAITS_UPDATE = "placement:resource_providers:traits:update"
PROVIDER_TRAITS_DELETE = "placement:resource_providers:traits:delete"

ALLOCATIONS_MANAGE = "placement:allocations:manage"
ALLOCATIONS_LIST = "placement:allocations:list"
ALLOCATIONS_UPDATE = "placement:allocations:update"
ALLOCATIONS_DELETE = "placement:allocations:delete"
PROVIDER_ALLOCATIONS_LIST = "placement:resource_providers:allocations:list"

ALLOCATION_CANDIDATES_LIST = "placement:allocation_candidates:list"

RESHAPE = "placement:reshaper:reshape"

# Not in upstream Placement: the read-only web view (each page also needs
# the API rules of what it reads).
WEB_VIEW = "allotment:web:view"
# Not in upstream Placement: the Prometheus metrics (every provider's
# inventory and usage, and the service's own counters).
METRICS = "allotment:metrics"

_PROJECT_SCOPE = ("project",)

_DEPRECATION_REASON = """
The default rules now distinguish admin, service and project reader roles and
take the token's scope into account. The former admin-only defaults are
deprecated and will be ignored in a future release.
"""

_RP = "/resource_providers/{uuid}"
_INVENTORIES = _RP + "/inventories"

# (name, check string, description, [(method, path), ...]) in upstream's
# order, so a generated sample policy file lists rules the same way.
_API_RULES: Sequence[tuple[str, str, str, Sequence[tuple[str, str]]]] = (
    # Resource providers.
    (RESOURCE_PROVIDERS_LIST, ADMIN_OR_SERVICE,
     "List resource providers, optionally filtered.",
     [("GET", "/resource_providers")]),
    (RESOURCE_PROVIDERS_CREATE, ADMIN_OR_SERVICE,
     "Create a resource provider.",
     [("POST", "/resource_providers")]),
    (RESOURCE_PROVIDERS_SHOW, ADMIN_OR_SERVICE,
     "Show one resource provider.",
     [("GET", _RP)]),
    (RESOURCE_PROVIDERS_UPDATE, ADMIN_OR_SERVICE,
     "Change a resource provider's name or parent.",
     [("PUT", _RP)]),
    (RESOURCE_PROVIDERS_DELETE, ADMIN_OR_SERVICE,
     "Delete a resource provider.",
     [("DELETE", _RP)]),
    # Resource classes.
    (RESOURCE_CLASSES_LIST, ADMIN_OR_SERVICE,
     "List standard and custom resource classes.",
     [("GET", "/resource_classes")]),
    (RESOURCE_CLASSES_CREATE, ADMIN_OR_SERVICE,
     "Create a custom resource class.",
     [("POST", "/resource_classes")]),
    (RESOURCE_CLASSES_SHOW, ADMIN_OR_SERVICE,
     "Show one resource class.",
     [("GET", "/resource_classes/{name}")]),
    (RESOURCE_CLASSES_UPDATE, ADMIN_OR_SERVICE,
     "Create or confirm a custom resource class by name.",
     [("PUT", "/resource_classes/{name}")]),
    (RESOURCE_CLASSES_DELETE, ADMIN_OR_SERVICE,
     "Delete a custom resource class.",
     [("DELETE", "/resource_classes/{name}")]),
    # Inventories.
    (INVENTORIES_LIST, ADMIN_OR_SERVICE,
     "List the inventories of a resource provider.",
     [("GET", _INVENTORIES)]),
    (INVENTORIES_CREATE, ADMIN_OR_SERVICE,
     "Add one inventory to a resource provider.",
     [("POST", _INVENTORIES)]),
    (INVENTORIES_SHOW, ADMIN_OR_SERVICE,
     "Show one inventory of a resource provider.",
     [("GET", _INVENTORIES + "/{resource_class}")]),
    (INVENTORIES_UPDATE, ADMIN_OR_SERVICE,
     "Replace all inventories of a resource provider, or change one.",
     [("PUT", _INVENTORIES), ("PUT", _INVENTORIES + "/{resource_class}")]),
    (INVENTORIES_DELETE, ADMIN_OR_SERVICE,
     "Remove all inventories of a resource provider, or one.",
     [("DELETE", _INVENTORIES),
      ("DELETE", _INVENTORIES + "/{resource_class}")]),
    # Aggregates.
    (AGGREGATES_LIST, ADMIN_OR_SERVICE,
     "List the aggregates a resource provider belongs to.",
     [("GET", _RP + "/aggregates")]),
    (AGGREGATES_UPDATE, ADMIN_OR_SERVICE,
     "Replace the aggregates a resource provider belongs to.",
     [("PUT", _RP + "/aggregates")]),
    # Usages.
    (PROVIDER_USAGES, ADMIN_OR_SERVICE,
     "Show the usages of one resource provider.",
     [("GET", _RP + "/usages")]),
    # An admin or service may read any project's usages; a reader only the
    # usages of the project its token is scoped to.
    (TOTAL_USAGES, ADMIN_OR_PROJECT_READER_OR_SERVICE,
     "Show the total usages of a project, optionally of one user.",
     [("GET", "/usages")]),
    # Traits.
    (TRAITS_LIST, ADMIN_OR_SERVICE,
     "List standard and custom traits.",
     [("GET", "/traits")]),
    (TRAITS_SHOW, ADMIN_OR_SERVICE,
     "Check that a trait exists.",
     [("GET", "/traits/{name}")]),
    (TRAITS_UPDATE, ADMIN_OR_SERVICE,
     "Create a custom trait.",
     [("PUT", "/traits/{name}")]),
    (TRAITS_DELETE, ADMIN_OR_SERVICE,
     "Delete a custom trait.",
     [("DELETE", "/traits/{name}")]),
    (PROVIDER_TRAITS_LIST, ADMIN_OR_SERVICE,
     "List the traits of a resource provider.",
     [("GET", _RP + "/traits")]),
    (PROVIDER_TRAITS_UPDATE, ADMIN_OR_SERVICE,
     "Replace the traits of a resource provider.",
     [("PUT", _RP + "/traits")]),
    (PROVIDER_TRAITS_DELETE, ADMIN_OR_SERVICE,
     "Remove every trait from a resource provider.",
     [("DELETE", _RP + "/traits")]),
    # Allocations.
    (ALLOCATIONS_MANAGE, ADMIN_OR_SERVICE,
     "Write allocations for several consumers at once.",
     [("POST", "/allocations")]),
    (ALLOCATIONS_LIST, ADMIN_OR_SERVICE,
     "Show the allocations of a consumer.",
     [("GET", "/allocations/{consumer_uuid}")]),
    (ALLOCATIONS_UPDATE, ADMIN_OR_SERVICE,
     "Replace the allocations of a consumer.",
     [("PUT", "/allocations/{consumer_uuid}")]),
    (ALLOCATIONS_DELETE, ADMIN_OR_SERVICE,
     "Remove every allocation of a consumer.",
     [("DELETE", "/allocations/{consumer_uuid}")]),
    (PROVIDER_ALLOCATIONS_LIST, ADMIN_OR_SERVICE,
     "List the allocations made against a resource provider.",
     [("GET", _RP + "/allocations")]),
    # Allocation candidates.
    (ALLOCATION_CANDIDATES_LIST, ADMIN_OR_SERVICE,
     "Find combinations of resource providers that can satisfy a request.",
     [("GET", "/allocation_candidates")]),
    # Reshaper: only services (nova-compute) move inventory and allocations.
    (RESHAPE, SERVICE,
     "Atomically move inventories and allocations between providers.",
     [("POST", "/reshaper")]),
    (WEB_VIEW, ADMIN_API,
     "See the web view of provider trees and usage.",
     [("GET", "/ui"), ("GET", "/ui/trees/{uuid}"), ("GET", "/ui/capacity")]),
    (METRICS, ADMIN_API,
     "Scrape the Prometheus metrics: every provider's inventory and usage "
     "and the service's own counters.",
     [("GET", "/metrics")]),
)


def _deprecated_admin_rule() -> policy.DeprecatedRule:
    return policy.DeprecatedRule(
        name=ADMIN_API,
        check_str="role:admin",
        deprecated_reason=_DEPRECATION_REASON,
        deprecated_since=versionutils.deprecated.WALLABY,
    )


def _base_rules() -> list[policy.RuleDefault]:
    return [
        policy.RuleDefault(
            "admin_api",
            "role:admin",
            description="Base rule: the caller has the admin role.",
            scope_types=list(_PROJECT_SCOPE),
        ),
        policy.RuleDefault(
            "service_api",
            "role:service",
            description="Base rule for APIs meant for other services: the "
            "caller has the service role.",
            scope_types=list(_PROJECT_SCOPE),
            deprecated_rule=_deprecated_admin_rule(),
        ),
        policy.RuleDefault(
            "admin_or_service_api",
            "role:admin or role:service",
            description="Base rule for most APIs: the caller has the admin "
            "or the service role.",
            scope_types=list(_PROJECT_SCOPE),
            deprecated_rule=_deprecated_admin_rule(),
        ),
        # Upstream gives this rule no scope type; the rules using it do.
        policy.RuleDefault(
            name="project_reader_api",
            check_str="role:reader and project_id:%(project_id)s",
            description="Base rule for read-only project APIs: the caller "
            "has the reader role in the project the target belongs to.",
            deprecated_rule=_deprecated_admin_rule(),
        ),
        policy.RuleDefault(
            "admin_or_project_reader_or_service_api",
            "role:admin or rule:project_reader_api or role:service",
            description="Base rule for project-level read-only APIs: an "
            "admin, a service, or a reader of the target project.",
            scope_types=list(_PROJECT_SCOPE),
            deprecated_rule=_deprecated_admin_rule(),
        ),
    ]


def list_rules() -> list[policy.RuleDefault]:
    """Every default rule, as new objects on each call.

    oslo.policy rewrites the check of a registered default when it merges a
    deprecated rule, so sharing objects between enforcers (one per app, many
    apps per process in tests) would leak one app's settings into another.
    """
    api_rules = [
        policy.DocumentedRuleDefault(
            name=name,
            check_str=check_str,
            description=description,
            operations=[{"method": method, "path": path}
                        for method, path in operations],
            scope_types=list(_PROJECT_SCOPE),
        )
        for name, check_str, description, operations in _API_RULES
    ]
    return _base_rules() + api_rules

"""Every URL of the Placement API and the resource that serves it.

The web view's URLs are its own (allotment.web.routes); the composition
root (allotment.server.app) mounts both on one application."""

from __future__ import annotations

from allotment.api import (
    aggregates,
    allocation_candidates,
    allocations,
    inventories,
    metrics,
    provider_allocations,
    provider_traits,
    provider_usages,
    reshaper,
    resource_classes,
    resource_providers,
    root,
    traits,
    usages,
)
from allotment.api.openapi.resource import OpenApiDocument
from allotment.runtime import Runtime

OPENAPI_PATH = "/openapi.json"


def build(runtime: Runtime) -> list[tuple[str, object]]:
    home = root.Root(runtime)
    return [
        ("/", home),
        ("/resource_classes", resource_classes.ResourceClasses(runtime)),
        ("/resource_classes/{name}", resource_classes.ResourceClass(runtime)),
        ("/traits", traits.Traits(runtime)),
        ("/traits/{name}", traits.Trait(runtime)),
        ("/allocations", allocations.Allocations(runtime)),
        ("/allocation_candidates", allocation_candidates.AllocationCandidates(runtime)),
        ("/allocations/{consumer_uuid}", allocations.ConsumerAllocationsResource(runtime)),
        ("/resource_providers", resource_providers.ResourceProviders(runtime)),
        ("/resource_providers/{uuid}", resource_providers.ResourceProvider(runtime)),
        ("/resource_providers/{uuid}/inventories", inventories.Inventories(runtime)),
        ("/resource_providers/{uuid}/inventories/{resource_class}",
         inventories.Inventory(runtime)),
        ("/resource_providers/{uuid}/aggregates",
         aggregates.ProviderAggregates(runtime)),
        ("/resource_providers/{uuid}/traits", provider_traits.ProviderTraits(runtime)),
        ("/resource_providers/{uuid}/usages", provider_usages.ProviderUsages(runtime)),
        ("/resource_providers/{uuid}/allocations",
         provider_allocations.ProviderAllocations(runtime)),
        ("/usages", usages.Usages(runtime)),
        ("/reshaper", reshaper.Reshaper(runtime)),
        (OPENAPI_PATH, OpenApiDocument(runtime)),
        (metrics.METRICS_PATH, metrics.Metrics(runtime)),
    ]

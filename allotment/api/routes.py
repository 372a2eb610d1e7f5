"""Every URL of the Placement API and the resource that serves it."""

from __future__ import annotations

from allotment.api import (
    allocations,
    provider_allocations,
    resource_classes,
    root,
    traits,
    usages,
)
from allotment.runtime import Runtime


def build(runtime: Runtime) -> list[tuple[str, object]]:
    home = root.Root(runtime)
    return [
        ("/", home),
        ("/resource_classes", resource_classes.ResourceClasses(runtime)),
        ("/resource_classes/{name}", resource_classes.ResourceClass(runtime)),
        ("/traits", traits.Traits(runtime)),
        ("/traits/{name}", traits.Trait(runtime)),
        ("/allocations", allocations.Allocations(runtime)),
        ("/allocations/{consumer_uuid}", allocations.ConsumerAllocationsResource(runtime)),
        ("/resource_providers/{uuid}/allocations",
         provider_allocations.ProviderAllocations(runtime)),
        ("/usages", usages.Usages(runtime)),
    ]

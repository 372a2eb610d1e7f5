"""Every URL of the Placement API and the resource that serves it."""

from __future__ import annotations

from allotment.api import resource_classes, root, traits
from allotment.runtime import Runtime


def build(runtime: Runtime) -> list[tuple[str, object]]:
    home = root.Root(runtime)
    return [
        ("/", home),
        ("/resource_classes", resource_classes.ResourceClasses(runtime)),
        ("/resource_classes/{name}", resource_classes.ResourceClass(runtime)),
        ("/traits", traits.Traits(runtime)),
        ("/traits/{name}", traits.Trait(runtime)),
    ]

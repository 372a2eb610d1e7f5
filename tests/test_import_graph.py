"""allotment's import graph has no circle.

The import contracts in pyproject.toml (checked by ``lint-imports`` in
scripts/test) keep the layers and forbid circles between sibling modules;
this also covers what they do not: a module importing its own package's
``__init__`` while the package imports the module, and any longer loop.
Imports made only for type checking count too.
"""

from __future__ import annotations

import grimp


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan,
    iterative: the graph is a few hundred modules deep at most)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph.modules):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.find_modules_directly_imported_by(start))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(
                        graph.find_modules_directly_imported_by(target)))))
                    break
                if target in on_stack:
                    low[module] = min(low[module], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[module])
                if low[module] == index[module]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == module:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_the_import_graph_has_no_circle() -> None:
    graph = grimp.build_graph("allotment")
    assert _circles(graph) == []


def test_a_circle_is_found() -> None:
    # The check itself: a loop through a package's __init__ is reported.
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "other"):
        graph.add_module(module)
    graph.add_import(importer="pkg", imported="pkg.a")
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg")
    graph.add_import(importer="other", imported="pkg")
    assert _circles(graph) == [["pkg", "pkg.a", "pkg.b"]]

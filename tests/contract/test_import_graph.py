"""The import graph of `src/bearagent` (issue 30): module-level, function-level and `TYPE_CHECKING` imports, read with
`ast` (nothing is imported), checked for cycles and for arrows against the layer order of docs/architecture.md.

The layers, innermost first: domain (with the leaves, `LEAVES`) < ports < runtime < adapters (store, providers, tools, sandbox, hooks, mcp, a2a, trust)
< config, registries (and `builtin`) < plugins < workspace < service < app < faces (api, cli, server, the public
namespaces). A module may import its own layer or an inner one.

There is no list of known debt: the nine circles and fifteen back arrows measured when this test was written are cut
(issue 30), and the test fails on any cycle and on any arrow against the order.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "bearagent"

LEAVES = ("bearagent._version", "bearagent.config.env", "bearagent.config.safe_yaml", "bearagent.config.workspace")
"""Leaves of the config room (and the version) every layer may read: they import only the domain."""

LAYERS: tuple[tuple[str, int], ...] = (
    ("bearagent.domain", 0),
    *((name, 0) for name in LEAVES),
    ("bearagent.ports", 1),
    ("bearagent.runtime", 2),
    ("bearagent.rewind", 2),  # the file-change capture and restore the runtime's tool calls use (domain only)
    *((f"bearagent.{name}", 3) for name in ("store", "providers", "tools", "sandbox", "hooks", "mcp", "a2a", "trust")),
    *((f"bearagent.{name}", 4) for name in ("config", "registries", "builtin")),
    ("bearagent.plugins.contributions", 4),  # what plugins contributed, as the registries read it (data only)
    ("bearagent.plugins", 5),
    ("bearagent.workspace", 6),
    ("bearagent.service", 7),
    ("bearagent.app", 8),
    *((f"bearagent.{name}", 9) for name in ("api", "cli", "server", "acp", "__main__", "plugin")),
    ("bearagent", 9),
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _owner(name: str, known: Mapping[str, Path]) -> str | None:
    """The module of ours an imported name lives in (`bearagent.x.y.Name` -> `bearagent.x.y`)."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _imported(tree: ast.AST, known: Mapping[str, Path]) -> Iterator[str | None]:
    for node in ast.walk(tree):  # every import: module level, in functions, under `if TYPE_CHECKING:`
        if isinstance(node, ast.Import):
            yield from (_owner(a.name, known) for a in node.names if a.name.startswith("bearagent"))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("bearagent"):
            module = node.module or ""
            for alias in node.names:
                full = f"{module}.{alias.name}"
                yield _owner(full, known) if full in known else _owner(module, known)


@cache
def import_graph() -> dict[str, set[str]]:
    known = modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        graph[name] = {m for m in _imported(tree, known) if m is not None and m != name}
    return graph


def layer(module: str) -> int:
    for prefix, rank in LAYERS:
        if module == prefix or module.startswith(prefix + "."):
            return rank
    raise AssertionError(f"{module} is in no layer: add its room to LAYERS and docs/architecture.md")


def cycles(graph: Mapping[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in graph:
        if root in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: set[str] = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_every_module_is_in_a_layer() -> None:
    for name in modules():
        layer(name)


def test_no_import_cycle() -> None:
    found = cycles(import_graph())
    assert not found, f"import cycles (cut them: docs/architecture.md): {[sorted(c) for c in found]}"


def test_no_arrow_against_the_layer_order() -> None:
    graph = import_graph()
    back = sorted((a, b) for a, targets in graph.items() for b in targets if layer(b) > layer(a))
    assert not back, f"imports against the layer order (docs/architecture.md): {back}"


def test_the_checks_see_a_cycle_and_a_back_arrow() -> None:
    graph = {"bearagent.domain.a": {"bearagent.service.b"}, "bearagent.service.b": {"bearagent.domain.a"}}
    assert cycles(graph) == [frozenset(graph)]
    assert layer("bearagent.service.b") > layer("bearagent.domain.a")  # so domain.a -> service.b is a back arrow

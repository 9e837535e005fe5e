"""The import graph of `src/bearagent` (issue 30): module-level, function-level and `TYPE_CHECKING` imports, read with
`ast` (nothing is imported), checked for cycles and for arrows against the layer order of docs/architecture.md.

The layers, innermost first: domain < ports < runtime < adapters (store, providers, tools, sandbox, hooks, mcp, trust)
< config, registries (and `builtin`) < plugins < workspace < service < app < faces (api, cli, server, the public
namespaces). A module may import its own layer or an inner one.

`KNOWN_CYCLES` and `KNOWN_BACK_ARROWS` are the debt measured when this test was written; the test fails on any cycle
or back arrow not listed there, AND on a listed one that is gone (remove it from the list: the list only shrinks).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"
PACKAGE = SRC / "bearagent"

LAYERS: tuple[tuple[str, int], ...] = (
    ("bearagent.domain", 0),
    ("bearagent.ports", 1),
    ("bearagent.runtime", 2),
    *((f"bearagent.{name}", 3) for name in ("store", "providers", "tools", "sandbox", "hooks", "mcp", "trust")),
    *((f"bearagent.{name}", 4) for name in ("config", "registries", "builtin")),
    ("bearagent.plugins", 5),
    ("bearagent.workspace", 6),
    ("bearagent.service", 7),
    ("bearagent.app", 8),
    *((f"bearagent.{name}", 9) for name in ("api", "cli", "server", "acp", "__main__", "plugin")),
    ("bearagent", 9),
)

KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset(
    frozenset(cycle)
    for cycle in (
        ("bearagent.providers._base", "bearagent.providers._core"),
        ("bearagent.config.files", "bearagent.config.lenient_frontmatter"),
        ("bearagent.sandbox.env", "bearagent.sandbox.settings"),
        ("bearagent.registries.actions", "bearagent.registries.commands"),
        ("bearagent.config.claude_settings", "bearagent.config.model"),
        ("bearagent.runtime.projection", "bearagent.runtime.tool_names"),
        ("bearagent.runtime.compaction_run", "bearagent.runtime.loop"),
        ("bearagent.cli._run_common", "bearagent.cli.interactive", "bearagent.cli.main"),
        (
            "bearagent",
            "bearagent.api",
            "bearagent.app.resources",
            "bearagent.mcp._sdk",
            "bearagent.mcp.calls",
            "bearagent.mcp.manager",
            "bearagent.mcp.slot",
            "bearagent.mcp.tool",
            "bearagent.plugins.manager",
            "bearagent.plugins.permission",
            "bearagent.service.admission",
            "bearagent.service.agent_plans",
            "bearagent.service.children",
            "bearagent.service.compacting",
            "bearagent.service.preflight",  # joined with run/doctor's one preflight (issue 32); cut with the rest
            "bearagent.service.replay",
            "bearagent.service.resuming",
            "bearagent.service.runner",
            "bearagent.service.session_hooks",
            "bearagent.service.sessions",
            "bearagent.workspace",
        ),
    )
)

KNOWN_BACK_ARROWS: frozenset[tuple[str, str]] = frozenset(
    {
        ("bearagent.hooks.runners", "bearagent.config.env"),
        ("bearagent.mcp._sdk", "bearagent"),
        ("bearagent.mcp.launch", "bearagent.config.env"),
        ("bearagent.plugins.manager", "bearagent"),
        ("bearagent.ports", "bearagent.runtime.run_state"),
        ("bearagent.providers.scripted", "bearagent.config.safe_yaml"),
        ("bearagent.registries.hooks", "bearagent.plugins.contributions"),
        ("bearagent.registries.mcp", "bearagent.plugins.contributions"),
        ("bearagent.registries.models", "bearagent.plugins.contributions"),
        ("bearagent.runtime.approvals", "bearagent.tools.gate"),
        ("bearagent.sandbox.request", "bearagent.config.workspace"),
        ("bearagent.sandbox.settings", "bearagent.config.files"),
        ("bearagent.service.runner", "bearagent.app.resources"),
        ("bearagent.service.sessions", "bearagent.app.resources"),
        ("bearagent.trust.store", "bearagent.config.workspace"),
    }
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


def test_no_new_import_cycle_and_the_known_ones_are_still_there() -> None:
    found = set(cycles(import_graph()))
    new = found - KNOWN_CYCLES
    assert not new, f"new import cycles (cut them): {[sorted(c) for c in new]}"
    gone = KNOWN_CYCLES - found
    assert not gone, f"these cycles are cut or changed: update KNOWN_CYCLES ({[sorted(c) for c in gone]})"


def test_no_new_arrow_against_the_layer_order() -> None:
    graph = import_graph()
    back = {(a, b) for a, targets in graph.items() for b in targets if layer(b) > layer(a)}
    new = back - KNOWN_BACK_ARROWS
    assert not new, f"imports against the layer order (docs/architecture.md): {sorted(new)}"
    gone = KNOWN_BACK_ARROWS - back
    assert not gone, f"these back arrows are gone: remove them from KNOWN_BACK_ARROWS ({sorted(gone)})"


def test_the_checks_see_a_cycle_and_a_back_arrow() -> None:
    graph = {"bearagent.domain.a": {"bearagent.service.b"}, "bearagent.service.b": {"bearagent.domain.a"}}
    assert cycles(graph) == [frozenset(graph)]
    assert layer("bearagent.service.b") > layer("bearagent.domain.a")  # so domain.a -> service.b is a back arrow

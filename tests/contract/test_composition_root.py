"""One composition root (issue 30): a store, a run writer, an MCP connection manager, a model provider, a tool gate
or an agent loop is constructed only in `src/bearagent/app/`. Every other module is read with `ast` (nothing is
imported) for a call of one of their constructors, at module level or in a function.

The few exceptions are parts an adapter builds of ITSELF, listed with their reason in `INSIDE_AN_ADAPTER`: they
are not wiring (no face or service part chooses them). Tests and benchmarks are not scanned: they build what they
test.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.contract.test_import_graph import PACKAGE, module_name

CONSTRUCTORS: dict[str, str] = {
    "SqliteEventStore": "a store",
    "PostgresRunStorage": "a store",
    "RunWriter": "a run writer",
    "McpConnectionManager": "an MCP connection manager",
    "create_provider": "a model provider",
    "ScriptedProvider": "a model provider",
    "OpenAIResponsesProvider": "a model provider",
    "OpenAIChatProvider": "a model provider",
    "AnthropicMessagesProvider": "a model provider",
    "ToolGate": "a tool gate",
    "AgentLoop": "an agent loop",
}

INSIDE_AN_ADAPTER: dict[tuple[str, str], str] = {
    ("bearagent.store.sqlite", "RunWriter"): "the store's synchronous face commits through a writer over itself",
    ("bearagent.store.postgres.sync_face", "RunWriter"): "the same, for PostgreSQL",
    ("bearagent.runtime.loop", "RunWriter"): "a loop given a store and no writer writes through one over that store",
    ("bearagent.providers.factory", "OpenAIResponsesProvider"): "the factory is the built-in providers' constructor",
    ("bearagent.providers.factory", "OpenAIChatProvider"): "the same",
    ("bearagent.providers.factory", "AnthropicMessagesProvider"): "the same",
}


def _called(node: ast.Call) -> str | None:
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def constructions(source: str) -> list[tuple[int, str]]:
    """`(line, constructor)` of every call of a listed constructor in `source`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            name = _called(node)
            if name in CONSTRUCTORS:
                found.append((node.lineno, name))
    return found


def outside_the_root() -> list[str]:
    problems: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        if module == "bearagent.app" or module.startswith("bearagent.app."):
            continue
        for line, name in constructions(path.read_text(encoding="utf-8")):
            if (module, name) not in INSIDE_AN_ADAPTER:
                where = Path(path).relative_to(PACKAGE.parent)
                problems.append(f"{where}:{line}: {name}(...) builds {CONSTRUCTORS[name]} outside app/")
    return problems


def test_only_app_constructs_stores_writers_mcp_providers_gates_and_loops() -> None:
    problems = outside_the_root()
    assert not problems, "construct these in app/ and hand them in (docs/architecture.md):\n" + "\n".join(problems)


def test_every_listed_exception_is_still_there() -> None:
    for (module, name), _reason in INSIDE_AN_ADAPTER.items():
        path = PACKAGE.parent / (module.replace(".", "/") + ".py")
        assert name in {n for _, n in constructions(path.read_text(encoding="utf-8"))}, (module, name)


def test_the_scan_sees_a_construction_in_a_function_and_through_a_module() -> None:
    source = "def f():\n    return gate.ToolGate({})\n\nloop = AgentLoop(store=s)\n"
    assert sorted(constructions(source)) == [(2, "ToolGate"), (4, "AgentLoop")]


ONE_OWNER: dict[str, frozenset[str]] = {
    # a fact appended outside the loop (recovery, a queued run's cancel or failure to start, an approval's answer,
    # a cancel over HTTP) goes through `service/facts.append_outside_loop`; the loop records its own runs
    "RunRecorder": frozenset({"bearagent.runtime.loop", "bearagent.service.facts"}),
    # every run's spec (new, resumed, child, `/compact`, replayed) is `service/run_specs`'s
    "RunSpec": frozenset({"bearagent.service.run_specs"}),
}


def owners_broken() -> list[str]:
    problems: list[str] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and (name := _called(node)) in ONE_OWNER and module not in ONE_OWNER[name]:
                where = Path(path).relative_to(PACKAGE.parent)
                problems.append(f"{where}:{node.lineno}: {name}(...) outside {sorted(ONE_OWNER[name])}")
    return problems


def test_a_rule_with_one_owner_is_built_only_there() -> None:
    """Issue 30's "one owner each": what several modules used to build themselves is built by its owner only."""
    problems = owners_broken()
    assert not problems, "call the owner instead (docs/architecture.md):\n" + "\n".join(problems)
    for name, modules in ONE_OWNER.items():
        for module in modules:  # each owner still builds it (the list is not stale)
            source = (PACKAGE.parent / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
            assert any(isinstance(n, ast.Call) and _called(n) == name for n in ast.walk(ast.parse(source))), (
                module,
                name,
            )

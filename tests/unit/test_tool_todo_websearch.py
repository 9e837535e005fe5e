"""TodoWrite validation and the WebSearch port (a plugin's backend; without one and without `web_search:` config a
call fails naming the key to set)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from tests.support.tools import call

from bearagent.tools.builtin import NATIVE_TOOL_NAMES, native_tools
from bearagent.tools.gate import ToolGate, tools_by_name
from bearagent.tools.policy import ToolPolicy
from bearagent.tools.search_hit import SearchHit, WebSearchBackend


def test_todo_write_returns_the_list(tmp_path: Path) -> None:
    todos = [
        {"content": "Read the spec", "status": "completed", "id": "a"},
        {"content": "Write the gate", "status": "in_progress"},
        {"content": "Benchmark", "status": "pending"},
    ]
    result = asyncio.run(call(tmp_path, "TodoWrite", {"todos": todos}))
    assert result.status == "succeeded"
    assert result.data is not None
    stored = [dict(t) for t in result.data["todos"]]  # type: ignore[union-attr]
    assert stored[0] == {"content": "Read the spec", "status": "completed", "id": "a"}
    assert stored[1]["id"] == "2"
    assert result.content.splitlines()[0] == "Todos updated: 1 completed, 1 in progress, 1 pending."
    assert "[~] Write the gate" in result.content


def test_todo_write_rejects_bad_items(tmp_path: Path) -> None:
    bad = asyncio.run(call(tmp_path, "TodoWrite", {"todos": [{"content": "x", "status": "done"}]}))
    assert bad.error is not None and bad.error.category == "validation" and "todos/0/status" in bad.content
    dup = asyncio.run(
        call(
            tmp_path,
            "TodoWrite",
            {
                "todos": [
                    {"content": "x", "status": "pending", "id": "1"},
                    {"content": "y", "status": "pending", "id": "1"},
                ]
            },
        )
    )
    assert dup.status == "failed" and "used twice" in dup.content


class FakeSearch:
    def __init__(self) -> None:
        self.queries: list[tuple[str, Sequence[str]]] = []

    async def search(
        self, query: str, *, max_results: int, allowed_domains: Sequence[str] = (), blocked_domains: Sequence[str] = ()
    ) -> Sequence[SearchHit]:
        self.queries.append((query, allowed_domains))
        return [SearchHit("Bear docs", "https://bear.example/docs", "All about bears")]


def test_web_search_without_a_backend_names_the_config_key_to_set(tmp_path: Path) -> None:
    names = [t.spec.name for t in native_tools()]
    assert set(names) == set(NATIVE_TOOL_NAMES)
    result = asyncio.run(call(tmp_path, "WebSearch", {"query": "bears"}))
    assert result.error is not None and result.error.code == "configuration.web_search_unconfigured"
    assert "web_search: {provider: brave}" in result.content and "BRAVE_API_KEY" in result.content


def test_web_search_with_a_backend(tmp_path: Path) -> None:
    backend = FakeSearch()
    assert isinstance(backend, WebSearchBackend)
    gate = ToolGate(tools_by_name(native_tools(web_search=backend)), policy=ToolPolicy())
    result = asyncio.run(
        call(tmp_path, "WebSearch", {"query": "bears", "allowed_domains": ["bear.example"]}, gate=gate)
    )
    assert result.status == "succeeded"
    assert "[Bear docs](https://bear.example/docs)" in result.content
    assert backend.queries == [("bears", ["bear.example"])]


def test_native_specs_have_side_effects_and_versions() -> None:
    specs = {t.spec.name: t.spec for t in native_tools(web_search=FakeSearch())}
    assert {n: s.side_effect for n, s in specs.items()} == {
        "Read": "read_only",
        "Write": "write",
        "Edit": "write",
        "MultiEdit": "write",
        "NotebookEdit": "write",
        "NotebookRead": "read_only",
        "LS": "read_only",
        "Glob": "read_only",
        "Grep": "read_only",
        "Bash": "execute",
        "BashOutput": "read_only",
        "KillShell": "execute",
        "WebFetch": "network",
        "WebSearch": "network",
        "TodoWrite": "read_only",
    }
    assert all(s.version for s in specs.values())

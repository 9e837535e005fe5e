"""Helpers for tool tests: a context for a workspace, and a one-line gate call."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from bearagent.domain._base import JsonValue, frozen_json
from bearagent.domain.ids import ToolCallId
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.ports import Tool, ToolContext
from bearagent.tools.builtin import native_tools
from bearagent.tools.gate import ToolGate, tools_by_name
from bearagent.tools.policy import ToolPolicy


def context_for(root: Path, **settings: JsonValue) -> ToolContext:
    return ToolContext(workspace_root=root, settings=settings)


def request(name: str, arguments: Mapping[str, object]) -> ToolRequest:
    return ToolRequest(tool_call_id=ToolCallId.new(), name=name, arguments=frozen_json(arguments))


_TOOLS: dict[str, Tool] = {}


def native_gate(policy: ToolPolicy | None = None) -> ToolGate:
    """A gate over the native tools (built once per test session; tools hold no state)."""
    if not _TOOLS:
        _TOOLS.update(tools_by_name(native_tools()))
    return ToolGate(_TOOLS, policy=policy or ToolPolicy(mode="bypassPermissions"))


async def call(
    root: Path, name: str, arguments: Mapping[str, object], *, gate: ToolGate | None = None, **settings: JsonValue
) -> ToolResult:
    return await (gate or native_gate()).call(request(name, arguments), context_for(root, **settings))

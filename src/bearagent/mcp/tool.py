"""`McpTool`: one server tool as a BearAgent `Tool` (ports.py), named `mcp__<server>__<tool>`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from bearagent.domain._base import JsonBoundsError, JsonMapping, frozen_json
from bearagent.domain.specs import McpServerSpec
from bearagent.domain.tools import ToolResult, ToolSpec
from bearagent.mcp.names import exact_tool_name, projected_tool_name, side_effect_from_annotations
from bearagent.ports import ToolContext

if TYPE_CHECKING:
    from bearagent.mcp._sdk import RemoteTool


class ToolCaller(Protocol):
    """What an `McpTool` calls through: the connection manager (`mcp/manager.py`, which builds the tools, so the
    tool names only this method instead of importing the manager back)."""

    async def call_tool(
        self, tool: McpTool, arguments: JsonMapping, context: ToolContext, *, exact_name: str
    ) -> ToolResult: ...


MAX_DESCRIPTION_CHARS = 16_384
DEFAULT_MAX_OUTPUT_CHARS = 100_000


class McpTool:
    """Calls `tool` on `server` through the manager. `prepare` only checks the arguments are a bounded JSON object:
    the input schema is passed through to the model and the server validates it (its error comes back as a
    failed result the model reads)."""

    def __init__(
        self, manager: ToolCaller, server: str, remote_name: str, spec: ToolSpec, annotations: JsonMapping
    ) -> None:
        self._manager = manager
        self.server = server
        self.remote_name = remote_name
        self.exact_name = exact_tool_name(server, remote_name)
        self.annotations = annotations
        self._spec = spec

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def prepare(self, arguments: JsonMapping, context: ToolContext) -> JsonMapping:
        return frozen_json(arguments)

    async def execute(self, arguments: JsonMapping, context: ToolContext) -> ToolResult:
        return await self._manager.call_tool(self, arguments, context, exact_name=self.remote_name)

    def __repr__(self) -> str:
        return f"McpTool({self._spec.name!r})"


def build_tools(
    manager: ToolCaller, spec: McpServerSpec, remote: Sequence[RemoteTool], server_version: str | None
) -> tuple[McpTool, ...]:
    """Wrap the listed tools. A tool whose schema is not a bounded JSON object is skipped (it cannot be offered to
    a model); duplicate names keep the first."""
    out: list[McpTool] = []
    seen: set[str] = set()
    timeout_ms = min(3_600_000, int((spec.call_timeout_s + spec.startup_timeout_s) * 1000) + 5_000)
    for tool in remote:
        name = projected_tool_name(spec.name, tool.name)
        if name in seen:
            continue
        try:
            schema = frozen_json(tool.input_schema or {"type": "object"})
            annotations = frozen_json(tool.annotations or {})
        except (JsonBoundsError, ValueError):
            continue
        description = tool.description or f"Tool {tool.name!r} of MCP server {spec.name!r}."
        if len(description) > MAX_DESCRIPTION_CHARS:
            description = description[: MAX_DESCRIPTION_CHARS - 1] + "…"
        version = _version(server_version, tool.name, description, tool.input_schema)
        tool_spec = ToolSpec(
            name=name,
            description=description,
            input_schema=schema,
            side_effect=side_effect_from_annotations(tool.annotations),
            version=version,
            timeout_ms=timeout_ms,
            max_output_chars=DEFAULT_MAX_OUTPUT_CHARS,
        )
        seen.add(name)
        out.append(McpTool(manager, spec.name, tool.name, tool_spec, annotations))
    return tuple(out)


def _version(server_version: str | None, name: str, description: str, schema: Mapping[str, object]) -> str:
    """Server version + a hash of what the model sees, so a run records exactly which tool definition it used."""
    blob = json.dumps([name, description, schema], sort_keys=True, default=str).encode("utf-8")
    digest = hashlib.sha256(blob).hexdigest()[:12]
    prefix = (server_version or "0")[:48]
    return f"{prefix}+{digest}"

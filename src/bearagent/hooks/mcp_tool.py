"""`mcp_tool` hook handlers: call `tool` on the configured MCP server `server`, as Claude Code does.

`arguments` (Claude Code's `input`) is sent with every `${path}` in its strings replaced by that field of the hook
input (`${tool_input.file_path}`, `${session_id}`): a string that is only `${path}` takes the field's JSON value,
a missing field is empty. The tool's text is read as a command's stdout on exit 0 (JSON when it starts with `{`,
else plain text: context on UserPromptSubmit and SessionStart); a tool error, an unknown server or tool, or a
server that is not connected is a failure (`on_failure` decides whether it blocks). The call goes to the MCP
connections of the run in progress (`current_mcp_caller`, set when they are opened), not through the tool gate: a
hook is configuration the user trusted, as in Claude Code.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from typing import TypeAlias, cast

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.specs import HookHandlerSpec
from bearagent.domain.tools import ToolResult
from bearagent.hooks.protocol import HandlerFailure, HandlerResult, JsonDict, bound_text, reply_from_command

McpCaller: TypeAlias = Callable[[str, str, JsonDict], Awaitable[ToolResult]]
"""`call(server, tool, arguments)` -> the tool's result; raises `LookupError` when the server or tool is not there."""

current_mcp_caller: ContextVar[McpCaller | None] = ContextVar("bearagent_mcp_caller", default=None)
"""The MCP caller of the runtime whose run is in progress: set when the run's MCP connections are opened
(`resources.Resources.mcp_manager`), read by `mcp_tool` handlers when their dispatcher was given none."""

_FIELD_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*)\}")


def _lookup(hook_input: JsonDict, path: str) -> JsonValue:
    value: JsonValue = hook_input
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = cast(Mapping[str, JsonValue], value)[part]
    return value


def substitute_fields(value: JsonValue, hook_input: JsonDict) -> JsonValue:
    """`value` with every `${path}` in its strings replaced by that field of the hook input (see the module
    docstring)."""
    if isinstance(value, str):
        whole = _FIELD_REF.fullmatch(value)
        if whole is not None:
            found = _lookup(hook_input, whole.group(1))
            return "" if found is None else found

        def text(match: re.Match[str]) -> str:
            found = _lookup(hook_input, match.group(1))
            if found is None:
                return ""
            return found if isinstance(found, str) else json.dumps(found, ensure_ascii=False)

        return _FIELD_REF.sub(text, value)
    if isinstance(value, Mapping):
        return {k: substitute_fields(v, hook_input) for k, v in cast(Mapping[str, JsonValue], value).items()}
    if isinstance(value, (list, tuple)):
        return [substitute_fields(v, hook_input) for v in cast(Sequence[JsonValue], value)]
    return value


async def run_mcp_tool(
    spec: HookHandlerSpec, event: str, hook_input: JsonDict, caller: McpCaller | None
) -> HandlerResult:
    """Call the handler's tool (within the handler's timeout, which the caller applies)."""
    server, tool = spec.server or "", spec.tool or ""
    if caller is None:
        return HandlerFailure(
            "unknown_handler", f"no MCP server connections are open, so {server}.{tool} cannot be called"
        )
    arguments = substitute_fields(thaw_json_mapping(spec.arguments) if spec.arguments is not None else {}, hook_input)
    try:
        result = await caller(server, tool, cast(JsonDict, arguments))
    except LookupError as exc:
        return HandlerFailure("unknown_handler", str(exc) or f"MCP tool {server}.{tool} is not available")
    if result.status != "succeeded":
        message = result.error.message if result.error is not None else result.content
        return HandlerFailure("crashed", f"MCP tool {server}.{tool} failed: {bound_text(message, 500)}")
    return reply_from_command(event, 0, result.content, "")

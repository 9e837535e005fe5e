"""One tool call on a live MCP connection, and each way it can fail as a failed `ToolResult` (category `mcp`):
the server died during the call, it did not answer in time, it refused the call (JSON-RPC error), or the call
failed otherwise. A result the server sent is mapped by `_results.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bearagent.domain._base import JsonMapping
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import ToolCallId
from bearagent.domain.specs import McpServerSpec
from bearagent.domain.tools import ToolResult
from bearagent.mcp.errors import ConnectContext, McpFailure, describe_failure
from bearagent.mcp.launch import redact, where_of
from bearagent.ports import ToolContext

if TYPE_CHECKING:
    import mcp_types

    from bearagent.mcp._sdk import Connection
    from bearagent.mcp.tool import McpTool


@dataclass(frozen=True, slots=True)
class CallFailure:
    """Why a call gave no result: `specific` is the error code under category `mcp`."""

    specific: str
    message: str
    retryable: bool = False


async def call_remote(
    conn: Connection,
    spec: McpServerSpec,
    exact_name: str,
    arguments: JsonMapping,
    *,
    on_death: Callable[[McpFailure], str],
    context: Callable[[], ConnectContext],
    meta: Mapping[str, str] | None = None,
) -> mcp_types.CallToolResult | CallFailure:
    """Call `exact_name` on `conn` within the server's `call_timeout_s`. When the connection died, `on_death`
    records it and returns what happens next (restart or not), for the message; `context` words other failures."""
    from bearagent.mcp import _sdk

    timeout = spec.call_timeout_s
    try:
        pending = conn.call_tool(exact_name, _thaw(arguments), timeout, meta)
        # A dead stdio (or in-process) server fails pending requests at once (-32000); a dead HTTP transport
        # does not always, so HTTP calls race the connection's death.
        return await (_sdk.run_with_death_watch(conn, pending) if conn.launch.transport == "http" else pending)
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        if _sdk.is_connection_closed(exc) or conn.dead.is_set():
            await asyncio.sleep(0)  # let the runner record why the transport died
            failure = conn.failure if conn.failure is not None else conn.failure_now(exc)
            then = on_death(failure)
            return CallFailure(
                "connection_lost",
                f"MCP server {spec.name!r} died during the call to {exact_name!r}: {failure.message} {then}",
                retryable=True,
            )
        if _sdk.is_timeout(exc):
            return CallFailure(
                "call_timeout",
                f"MCP tool {exact_name!r} on server {spec.name!r} did not answer within {timeout:g}s "
                f"(the call was cancelled). Fix: raise `call_timeout_s` in {where_of(spec)} if the tool "
                "is just slow.",
                retryable=True,
            )
        text = _sdk.mcp_error_text(exc)
        if text is not None:
            return CallFailure(
                "protocol_error", f"MCP server {spec.name!r} refused the call to {exact_name!r} with {text}"
            )
        return CallFailure("call_failed", describe_failure(exc, context()).text())


def failed_result(
    tool: McpTool, context: ToolContext, failure: CallFailure, duration_ms: int, secrets: tuple[str, ...]
) -> ToolResult:
    """The failed `ToolResult` of a call, its message with the server's secrets (env, header values) redacted."""
    error = ErrorInfo.of(
        "mcp", failure.specific, redact(failure.message, secrets), retryable=failure.retryable, server=tool.server
    )
    return ToolResult(
        tool_call_id=context.tool_call_id or context.ids.new(ToolCallId),
        tool_name=tool.spec.name,
        status="failed",
        content=error.message,
        error=error,
        duration_ms=duration_ms,
    )


def _thaw(arguments: JsonMapping) -> dict[str, object]:
    from bearagent.domain._base import thaw_json_mapping

    return dict(thaw_json_mapping(arguments))

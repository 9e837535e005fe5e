"""An MCP server whose one tool answers with the W3C trace keys of the request's `params._meta` (as JSON), for
the tests of trace propagation. Run: `python trace_echo.py` (stdio)."""

from __future__ import annotations

import json

from mcp.server.mcpserver import Context, MCPServer


def build_server() -> MCPServer:
    server = MCPServer("trace-echo", version="1.0.0")

    @server.tool()
    def trace(ctx: Context) -> str:  # pyright: ignore[reportMissingTypeArgument, reportUnknownParameterType]
        """Answer the trace keys the call's `_meta` carried."""
        meta = ctx.request_context.meta  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        given = dict(meta) if meta else {}  # pyright: ignore[reportUnknownArgumentType]
        return json.dumps({k: v for k, v in given.items() if k in ("traceparent", "tracestate", "baggage")})

    return server


if __name__ == "__main__":
    build_server().run("stdio")

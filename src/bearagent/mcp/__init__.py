"""MCP tool servers (SPEC §8): a connection manager over the official `mcp` SDK 2.x and the `Tool` wrappers that
project each server tool as `mcp__<server>__<tool>`.

Nothing here imports the `mcp` SDK at module import time (it costs about a second); the SDK is imported when the
first server connects. Public entry points: `bearagent.mcp.manager.McpConnectionManager`,
`bearagent.mcp.tool.McpTool`, `bearagent.mcp.names.projected_tool_name`.
"""

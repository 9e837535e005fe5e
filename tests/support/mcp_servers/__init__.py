"""MCP servers for the tests, written with the SDK's `MCPServer` (run as `python <file> stdio|http PORT`)."""

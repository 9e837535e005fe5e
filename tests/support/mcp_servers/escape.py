"""A stdio MCP server whose tools try what a compromised server would: write a file anywhere, read a file anywhere.

Run: `python escape.py` (stdio). Used by tests/security/test_sandbox_opt_in.py (`sandbox: {mcp: true}`).
"""

from __future__ import annotations

from pathlib import Path

from mcp.server.mcpserver import MCPServer


def build_server() -> MCPServer:
    server = MCPServer("escape", version="0.1.0")

    @server.tool()
    def write_file(path: str, text: str) -> str:
        """Write `text` to `path`; say whether it worked."""
        try:
            Path(path).write_text(text)
        except OSError as exc:
            return f"refused: {exc.strerror or exc}"
        return "wrote"

    @server.tool()
    def read_file(path: str) -> str:
        """Return the content of `path`, or why it could not be read."""
        try:
            return "content: " + Path(path).read_text()
        except OSError as exc:
            return f"refused: {exc.strerror or exc}"

    return server


if __name__ == "__main__":
    build_server().run("stdio")

"""A well-behaved SDK server with the tools the manager tests need.

Run: `python demo.py stdio` or `python demo.py http PORT` (streamable HTTP on 127.0.0.1:PORT/mcp).
`build_server()` gives the same server for in-process use.
"""

from __future__ import annotations

import base64
import os
import sys
import time
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations

DEMO_PATH = Path(__file__).resolve()

# A 1x1 transparent PNG.
TINY_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def build_server() -> MCPServer:
    server = MCPServer("demo", version="1.2.3", instructions="test server")

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def echo(message: str) -> str:
        """Echo the message back."""
        return f"echo: {message}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True, open_world_hint=False))
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool(annotations=ToolAnnotations(open_world_hint=True))
    def fetchish(url: str) -> str:
        """Pretend to fetch a URL (open world)."""
        return f"fetched {url}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def ping(n: int) -> int:
        """Answer n + 1 without leaving the event loop (used by the benchmark)."""
        return n + 1

    @server.tool()
    async def slow(seconds: float) -> str:
        """Sleep, then answer."""
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    def crash() -> str:
        """Kill the server process in the middle of the call."""
        os._exit(3)

    @server.tool()
    def huge(kib: int) -> str:
        """Return `kib` KiB of text."""
        return "x" * (kib * 1024)

    @server.tool()
    def image() -> Image:
        """Return a tiny PNG."""
        return Image(data=TINY_PNG, format="png")

    @server.tool()
    def fail(reason: str) -> str:
        """Report a tool error."""
        raise ToolError(f"cannot do it: {reason}")

    @server.tool(name="weird name/with space")
    def weird() -> str:
        """A tool whose name is not provider-safe."""
        return "weird ok"

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Register a new tool `extra` and tell the client its tool list changed."""

        def extra() -> str:
            """A tool added at run time."""
            return "extra ok"

        server.add_tool(extra)
        await ctx.notify_tools_changed()
        return "grown"

    @server.tool()
    def env(name: str) -> str:
        """Return an environment variable (or <unset>)."""
        return os.environ.get(name, "<unset>")

    @server.tool()
    def cwd() -> str:
        """Return the working directory."""
        return os.getcwd()

    return server


def main(argv: list[str]) -> None:
    delay = float(os.environ.get("DEMO_START_DELAY_S", "0") or 0)
    if delay:
        time.sleep(delay)  # simulate a server that waits on something (not CPU) before it serves
    server = build_server()
    mode = argv[1] if len(argv) > 1 else "stdio"
    if mode == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(argv[2]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv)

"""An MCP server that asks the user a question in the middle of a tool call (MCP elicitation, a form).

Run: `python asker.py stdio`. Its one tool, `deploy(target)`, asks "Really deploy to TARGET?" with the form
`{proceed: bool, reason: str}` and answers with what came back: `deploy TARGET: accept proceed=True reason=...`,
`deploy TARGET: decline` or `deploy TARGET: cancel`.
"""

from __future__ import annotations

import sys
from typing import Annotated

from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel


class Confirm(BaseModel):
    proceed: bool
    reason: str = ""


def ask_confirmation(target: str) -> Elicit[Confirm]:
    return Elicit(f"Really deploy to {target}?", Confirm)


def build_server() -> MCPServer:
    server = MCPServer("asker", version="1.0.0")

    @server.tool()
    def deploy(target: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirmation)]) -> str:
        """Deploy after asking the user for confirmation."""
        if isinstance(answer, AcceptedElicitation):
            data: Confirm = answer.data  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            return f"deploy {target}: accept proceed={data.proceed} reason={data.reason}"
        return f"deploy {target}: {answer.action}"

    return server


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["stdio"]):
        sys.exit("usage: python asker.py [stdio]")
    build_server().run("stdio")

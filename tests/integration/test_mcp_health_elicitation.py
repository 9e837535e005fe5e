"""MCP health pings and elicitation: a ready server answers pings (its round trip is in the status and `mcp list`);
a server that went away is marked failed by the ping with the reason, and the next call reconnects; a server that
asks the user for input (elicitation, both the 2026-07-28 input-required round trip and a URL request) gets a
clean `decline` and the model reads a note naming the question."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated

from mcp.server.elicitation import ElicitationResult
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.resolve import Elicit, Resolve
from pydantic import BaseModel
from tests.support.mcp_helpers import DEMO, http_server, http_spec

from bearagent.domain._base import frozen_json
from bearagent.domain.ids import RunId, ToolCallId
from bearagent.mcp.manager import McpConnectionManager
from bearagent.mcp.tool import McpTool
from bearagent.ports import ToolContext


class Confirm(BaseModel):
    proceed: bool


def ask_confirmation(target: str) -> Elicit[Confirm]:
    return Elicit(f"Really deploy to {target}?", Confirm)


def _asking_server() -> MCPServer:
    server = MCPServer("asker")

    @server.tool()
    def deploy(target: str, answer: Annotated[ElicitationResult[Confirm], Resolve(ask_confirmation)]) -> str:
        """Deploy after asking the user."""
        return f"the user answered: {answer.action}"

    return server


def _ctx(root: Path) -> ToolContext:
    return ToolContext(
        workspace_root=root,
        run_id=RunId("00000000-0000-4000-8000-0000000000a1"),
        tool_call_id=ToolCallId("00000000-0000-4000-8000-0000000000c1"),
    )


def _tool(manager: McpConnectionManager, name: str) -> McpTool:
    tool = next(t for t in manager.tools() if t.spec.name == name)
    assert isinstance(tool, McpTool)
    return tool


def test_a_request_for_input_is_declined_and_the_model_reads_the_question(tmp_path: Path) -> None:
    async def go() -> tuple[str, str]:
        async with McpConnectionManager([], {}, tmp_path, in_process={"asker": _asking_server()}) as manager:
            deploy = _tool(manager, "mcp__asker__deploy")
            first = await deploy.execute(frozen_json({"target": "prod"}), _ctx(tmp_path))
            second = await deploy.execute(frozen_json({"target": "staging"}), _ctx(tmp_path))
            return first.content, second.content

    first, second = asyncio.run(go())
    assert first.startswith("the user answered: decline")
    assert "BearAgent declined 1 request(s) for input from MCP server 'asker'" in first
    assert '"Really deploy to prod?"' in first and "ask the user in your reply" in first
    assert '"Really deploy to staging?"' in second and "prod" not in second  # each call names its own question


def test_ping_measures_ready_servers_and_fails_one_that_went_away(tmp_path: Path) -> None:
    with http_server([sys.executable, str(DEMO), "http", "{port}"]) as server:

        async def go() -> None:
            async with McpConnectionManager([http_spec("web", server.url)], {}, tmp_path) as manager:
                await manager.ping_all()
                status = manager.server_status("web")
                assert status.state == "ready" and status.ping_ms is not None and status.ping_ms >= 0

                server.kill()
                await manager.ping_all(timeout_s=5)
                status = manager.server_status("web")
                assert status.state == "failed" and status.ping_ms is None
                assert status.last_error is not None and "did not answer a health ping" in status.last_error
                assert manager.tools() == []  # its tools leave the model's list

        asyncio.run(go())

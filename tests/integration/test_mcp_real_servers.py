"""Third-party MCP servers, offline: `mcp-server-time` (PyPI, stdio) and `@modelcontextprotocol/server-everything`
(npm, stdio and streamable HTTP), through the manager and our Tool wrappers."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest
from tests.support.mcp_helpers import ensure_server_everything, http_server, http_spec

from bearagent.domain._base import frozen_json
from bearagent.domain.ids import RunId, ToolCallId
from bearagent.domain.specs import McpServerSpec
from bearagent.mcp.manager import McpConnectionManager
from bearagent.mcp.tool import McpTool
from bearagent.ports import ToolContext

pytestmark = pytest.mark.timeout(180)

RUN = "00000000-0000-4000-8000-0000000000a1"


def context(root: Path) -> ToolContext:
    return ToolContext(
        workspace_root=root, run_id=RunId(RUN), tool_call_id=ToolCallId("00000000-0000-4000-8000-0000000000b1")
    )


def tool_named(m: McpConnectionManager, name: str) -> McpTool:
    for tool in m.tools():
        if tool.spec.name == name:
            assert isinstance(tool, McpTool)
            return tool
    raise AssertionError(f"{name} not in {[t.spec.name for t in m.tools()]}; status: {m.status()}")


def test_mcp_server_time_over_stdio(tmp_path: Path) -> None:
    spec = McpServerSpec(
        name="time",
        transport="stdio",
        command=sys.executable,
        args=("-m", "mcp_server_time", "--local-timezone", "${TZ_FOR_TEST:-UTC}"),
        startup_timeout_s=30,
        call_timeout_s=30,
    )

    async def main() -> None:
        async with McpConnectionManager([spec], os.environ, tmp_path) as m:
            status = m.server_status("time")
            assert status.state == "ready", status
            assert {t.spec.name for t in m.tools()} >= {"mcp__time__get_current_time", "mcp__time__convert_time"}
            get = tool_named(m, "mcp__time__get_current_time")
            props = get.spec.input_schema["properties"]
            assert isinstance(props, Mapping) and "timezone" in props
            r = await get.execute(frozen_json({"timezone": "Europe/Paris"}), context(tmp_path))
            assert r.status == "succeeded", r.content
            assert r.data is not None and r.data["timezone"] == "Europe/Paris"
            assert isinstance(r.data["datetime"], str) and r.data["datetime"][:2] == "20"
            r = await tool_named(m, "mcp__time__convert_time").execute(
                frozen_json({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
                context(tmp_path),
            )
            assert r.status == "succeeded" and r.data is not None
            assert r.data["time_difference"] == "+9.0h"
            r = await get.execute(frozen_json({"timezone": "Not/AZone"}), context(tmp_path))
            assert r.status == "failed" and r.error is not None and r.error.code == "mcp.tool_error"
            assert "Not/AZone" in r.content

    asyncio.run(main())


async def _exercise_everything(m: McpConnectionManager, server: str, root: Path) -> None:
    status = m.server_status(server)
    assert status.state == "ready", status
    assert status.protocol_version == "2025-11-25"
    assert status.tool_count >= 12
    r = await tool_named(m, f"mcp__{server}__echo").execute(frozen_json({"message": "hi"}), context(root))
    assert r.status == "succeeded" and r.content == "Echo: hi"
    r = await tool_named(m, f"mcp__{server}__get-sum").execute(frozen_json({"a": 2, "b": 40}), context(root))
    assert "42" in r.content
    r = await tool_named(m, f"mcp__{server}__get-tiny-image").execute(frozen_json({}), context(root))
    assert r.status == "succeeded" and len(r.artifacts) == 1
    art = r.artifacts[0]
    assert art.media_type == "image/png" and art.size_bytes > 1000
    assert (root / art.path).stat().st_size == art.size_bytes
    r = await tool_named(m, f"mcp__{server}__get-structured-content").execute(
        frozen_json({"location": "Chicago"}), context(root)
    )
    assert r.data is not None and "temperature" in r.data
    r = await tool_named(m, f"mcp__{server}__get-sum").execute(frozen_json({"a": "nope", "b": 1}), context(root))
    assert r.status == "failed" and r.error is not None and r.error.code == "mcp.tool_error"


def test_server_everything_over_stdio(tmp_path: Path) -> None:
    index = ensure_server_everything()
    node = shutil.which("node")
    assert node is not None
    spec = McpServerSpec(
        name="everything", transport="stdio", command=node, args=(str(index), "stdio"), startup_timeout_s=30
    )

    async def main() -> None:
        async with McpConnectionManager([spec], os.environ, tmp_path) as m:
            await _exercise_everything(m, "everything", tmp_path)

    asyncio.run(main())


def test_server_everything_over_streamable_http(tmp_path: Path) -> None:
    index = ensure_server_everything()
    node = shutil.which("node")
    assert node is not None
    with http_server([node, str(index), "streamableHttp"]) as server:

        async def main() -> None:
            async with McpConnectionManager([http_spec("ev", server.url)], {}, tmp_path) as m:
                await _exercise_everything(m, "ev", tmp_path)

        asyncio.run(main())

"""`bearagent mcp list` / `mcp tools`: with a test loader, and end to end through `load_workspace` + trust."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.support.mcp_helpers import DEMO, MISBEHAVING, stdio_spec

from bearagent.cli.main import main
from bearagent.cli.mcp import McpCliLoader, McpCliWorkspace, make_mcp_command
from bearagent.domain.errors import BearAgentError, ErrorInfo

pytestmark = pytest.mark.timeout(120)


def loader_for(ws: McpCliWorkspace) -> McpCliLoader:
    def load(_workspace: Path | None) -> McpCliWorkspace:
        return ws

    return load


def test_list_shows_state_tools_and_errors(tmp_path: Path) -> None:
    ws = McpCliWorkspace(
        root=tmp_path,
        specs=(stdio_spec("demo", DEMO), stdio_spec("dead", MISBEHAVING, "exit-at-start")),
        env=dict(os.environ),
    )
    cmd = make_mcp_command(loader_for(ws))
    result = CliRunner().invoke(cmd, ["list"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["SERVER", "STATE", "TRANSPORT", "TOOLS", "PING", "LAST", "ERROR"]
    assert lines[1].split()[:4] == ["demo", "ready", "stdio", "13"]
    assert lines[1].split()[5] == "ms" and float(lines[1].split()[4]) >= 0  # the health ping's round trip
    assert lines[2].split()[4] == "-"
    assert lines[2].split()[:4] == ["dead", "failed", "stdio", "0"]
    assert "fatal: DEMO_TOKEN is not configured" in result.output
    assert "  fix: run `" in result.output

    result = CliRunner().invoke(cmd, ["list", "--json"])
    data = json.loads(result.output)
    assert [(d["name"], d["state"], d["tools"]) for d in data] == [("demo", "ready", 13), ("dead", "failed", 0)]
    assert data[1]["error"] and data[1]["fix"]
    assert isinstance(data[0]["ping_ms"], float) and data[1]["ping_ms"] is None


def test_tools_lists_projected_names_and_schemas(tmp_path: Path) -> None:
    ws = McpCliWorkspace(root=tmp_path, specs=(stdio_spec("demo", DEMO),), env=dict(os.environ))
    cmd = make_mcp_command(loader_for(ws))
    result = CliRunner().invoke(cmd, ["tools", "demo", "--json"])
    assert result.exit_code == 0, result.output
    tools = {t["name"]: t for t in json.loads(result.output)}
    assert tools["mcp__demo__add"]["side_effect"] == "read_only"
    assert tools["mcp__demo__add"]["input_schema"]["required"] == ["a", "b"]
    weird = next(t for t in tools.values() if t["remote_name"] == "weird name/with space")
    assert weird["name"].startswith("mcp__demo__weird_name_with_space_")

    result = CliRunner().invoke(cmd, ["tools", "demo"])
    assert "mcp__demo__echo" in result.output and "read_only" in result.output

    result = CliRunner().invoke(cmd, ["tools", "dmeo"])
    assert result.exit_code == 2
    assert "no MCP server named 'dmeo' (did you mean 'demo'?)" in result.output
    assert "bearagent mcp list" in result.output


def test_tools_of_a_failing_server_exits_1_with_the_fix(tmp_path: Path) -> None:
    ws = McpCliWorkspace(
        root=tmp_path, specs=(stdio_spec("gone", DEMO, command=str(tmp_path / "nope")),), env=dict(os.environ)
    )
    result = CliRunner().invoke(make_mcp_command(loader_for(ws)), ["tools", "gone"])
    assert result.exit_code == 1
    assert "was not found" in result.output and "fix: install it" in result.output


def test_untrusted_workspace_is_refused_before_anything_starts(tmp_path: Path) -> None:
    def refuse() -> None:
        raise BearAgentError(
            ErrorInfo.of("permission", "untrusted_workspace", "workspace is not trusted"), hint="run: bearagent trust"
        )

    ws = McpCliWorkspace(
        root=tmp_path,
        specs=(stdio_spec("demo", DEMO, args=(str(DEMO), "stdio", str(tmp_path / "started"))),),
        check_trust=refuse,
    )
    result = CliRunner().invoke(make_mcp_command(loader_for(ws)), ["list"])
    assert result.exit_code == 2
    assert "workspace is not trusted" in result.output and "bearagent trust" in result.output


def test_end_to_end_through_load_workspace_and_trust(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    home = tmp_path / "home"
    ws.mkdir()
    mcp_json = {"mcpServers": {"demo": {"command": sys.executable, "args": [str(DEMO)]}}}
    (ws / ".mcp.json").write_text(json.dumps(mcp_json))
    env = {**os.environ, "BEARAGENT_HOME": str(home), "NO_COLOR": "1"}
    runner = CliRunner(env=env)

    result = runner.invoke(main, ["mcp", "list", "-w", str(ws)])
    assert result.exit_code == 2, result.output
    assert "not trusted" in result.output and "bearagent trust" in result.output

    assert runner.invoke(main, ["trust", "-w", str(ws)]).exit_code == 0
    result = runner.invoke(main, ["mcp", "list", "-w", str(ws), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data[0]["name"] == "demo" and data[0]["state"] == "ready" and data[0]["tools"] == 13

"""Real MCP servers used by an agent in end-to-end runs with the scripted model: stdio servers started from
config.yaml, `mcp-server-time` from PyPI, a server that cannot start, and no process left behind."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
from pathlib import Path

from tests.support.config_ws import isolated_env, load
from tests.support.mcp_helpers import pids_with_arg, wait_until_gone
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.api import open_workspace, runtime_of
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

DEMO = Path(__file__).resolve().parents[1] / "support" / "mcp_servers" / "demo.py"


def _config(servers: str) -> str:
    return (
        "default_agent: main\ndefault_model: scripted\n"
        "models:\n  scripted: {provider: scripted, script: script.yaml}\n"
        f"mcp_servers:\n{servers}"
    )


def _trusted(root: Path, home: Path) -> None:
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))


def test_agent_calls_tools_of_a_real_stdio_server(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: mcp__demo__add, arguments: {a: 2, b: 3}}]
  - tool_calls: [{name: mcp__demo__echo, arguments: {message: bears}}]
  - text: "2 + 3 = 5"
"""
    # a copy of its own: the leftover check below looks for processes by the script's path, and other tests (in
    # other xdist workers) run the shared demo.py at the same time
    demo = tmp_path / "demo.py"
    shutil.copyfile(DEMO, demo)
    servers = f"  demo: {{command: {sys.executable}, args: [{demo}, stdio], startup_timeout_s: 30}}\n"
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]", mcp="[demo]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=_config(servers))
    home = tmp_path / "home"
    _trusted(root, home)
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        result = ws.run_sync("add two and three")
        assert result.status == "succeeded", result.error
        events = [e.model_dump(mode="json") for e in ws.events(str(result.run_id))]
    completed = [e["payload"]["result"] for e in events if e["event_type"] == "ToolCallCompleted"]
    assert completed[0]["tool_name"] == "mcp__demo__add"
    assert "5" in completed[0]["content"]
    assert completed[1]["content"].startswith("echo: bears")
    requested = [e["payload"] for e in events if e["event_type"] == "ToolCallRequested"]
    assert requested[0]["source"] == "mcp"
    assert wait_until_gone(pids_with_arg(str(demo))) == []


def test_mcp_server_time_from_pypi(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: mcp__time__get_current_time, arguments: {timezone: UTC}}]
  - text: "got the time"
"""
    servers = f"  time: {{command: {sys.executable}, args: ['-m', mcp_server_time], startup_timeout_s: 60}}\n"
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]", mcp="[time]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=_config(servers))
    home = tmp_path / "home"
    _trusted(root, home)
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        result = ws.run_sync("what time is it in UTC?")
        assert result.status == "succeeded", result.error
        events = [e.model_dump(mode="json") for e in ws.events(str(result.run_id))]
    done = next(e["payload"]["result"] for e in events if e["event_type"] == "ToolCallCompleted")
    assert "UTC" in json.dumps(done)


def test_a_server_that_cannot_start_does_not_fail_the_run(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: mcp__broken__anything, arguments: {}}]
  - text: "worked without it"
"""
    servers = "  broken: {command: /nonexistent/bearagent-mcp-server, startup_timeout_s: 5}\n"
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]", mcp="[broken]")}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=_config(servers))
    home = tmp_path / "home"
    _trusted(root, home)
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        result = ws.run_sync("try the broken server")
        assert result.status == "succeeded", result.error
        assert result.final == "worked without it"
        events = [e.model_dump(mode="json") for e in ws.events(str(result.run_id))]
        plan = asyncio.run(runtime_of(ws).plans.plan("main", session_key="probe"))
    assert "# Unavailable tool servers" in plan.system_prompt
    assert "broken" in plan.system_prompt
    failed = next(e["payload"]["result"] for e in events if e["event_type"] == "ToolCallFailed")
    assert "no tool named 'mcp__broken__anything'" in failed["content"]

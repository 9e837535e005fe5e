"""`execution_policy` through a real `bearagent serve`: a workspace the server config marks `none` and a chat
workspace run no tool, MCP server or hook; a chat session may pick an agent (the CLI's rule); a bad value stops the
server naming the entry."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from tests.server.test_http_api import BEARAGENT, start, wait_for
from tests.support.config_ws import isolated_env
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.cli import main

pytestmark = pytest.mark.timeout(120)  # a real server process and its runs

WRITE_SCRIPT = """
turns:
  - tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "x"}}]
  - text: "done"
  - tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "x"}}]
  - text: "done again"
"""
AGENTS = {
    "main": agent_md("Main agent.", mode="primary", tools="[Read, Write]"),
    "other": agent_md("Another primary.", mode="primary", tools="[Read, Write]"),
}


def test_marked_and_chat_workspaces_execute_nothing_and_chat_may_pick_an_agent(tmp_path: Path) -> None:
    started, hooked = tmp_path / "mcp-started", tmp_path / "hook-ran"
    hooks = f'\nhooks:\n  UserPromptSubmit:\n    - hooks: [{{type: command, command: "touch {hooked}"}}]\n'
    proj = scripted_workspace(tmp_path / "proj", WRITE_SCRIPT, agents=AGENTS, config=CONFIG + hooks)
    chat = scripted_workspace(tmp_path / "chat", WRITE_SCRIPT, agents=AGENTS, config="kind: chat\n" + CONFIG)
    code = f"import pathlib; pathlib.Path({str(started)!r}).touch()"
    for root in (proj, chat):
        (root / ".mcp.json").write_text(
            json.dumps({"mcpServers": {"m": {"command": sys.executable, "args": ["-c", code]}}})
        )
        trusted = CliRunner().invoke(main, ["trust", "-w", str(root)], env=isolated_env(tmp_path / "home"))
        assert trusted.exit_code == 0, trusted.output
    config = f"""
workspaces:
  - {{id: proj, path: {proj}, execution_policy: none}}
  - {{id: chat, path: {chat}}}
"""
    server = start(tmp_path, config=config)
    try:
        with server.client() as c:
            listed = {w["id"]: w for w in c.get("/v1/workspaces").json()["workspaces"]}
            assert listed["proj"]["execution_policy"] == "none" and listed["proj"]["kind"] == "project"
            assert listed["chat"]["execution_policy"] == "none" and listed["chat"]["kind"] == "chat"

            made = c.post("/v1/workspaces/proj/sessions", json={})
            assert made.status_code == 201, made.text
            sid = made.json()["id"]
            run = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "write it"})
            assert run.status_code == 202, run.text
            wait_for(c, run.json()["run_id"])

            sid = c.post("/v1/workspaces/chat/sessions", json={}).json()["id"]
            run = c.post(f"/v1/sessions/{sid}/runs", json={"prompt": "write it", "agent": "other"})
            assert run.status_code == 202, run.text
            record = wait_for(c, run.json()["run_id"])
            assert record["agent_name"] == "other", record
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=15)
    assert not (proj / "out.txt").exists() and not (chat / "out.txt").exists()
    assert not started.exists() and not hooked.exists()


def test_a_bad_execution_policy_stops_the_server_naming_the_entry(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", WRITE_SCRIPT, agents=AGENTS)
    config = tmp_path / "server.yaml"
    config.write_text(f"workspaces:\n  - {{id: ws, path: {root}, execution_policy: {{mode: off}}}}\n")
    env = isolated_env(tmp_path / "home", BEARAGENT_SERVE_TOKEN="t")
    result = subprocess.run(
        [BEARAGENT, "serve", "--port", "0", "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "workspaces[0].execution_policy must be local or none" in result.stderr
    assert "execution_policy: none" in result.stderr  # the fix

"""Seed 002's `execution_policy` through the CLI: `none` (a chat workspace, or a config file saying so) runs no tool,
MCP server or hook from any command; runs still answer; the commands that only execute refuse, naming the fix."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.cli import main

pytestmark = pytest.mark.timeout(120)  # real MCP subprocesses could start if the policy failed open

WRITE_SCRIPT = """
turns:
  - tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "x"}}]
  - text: "done"
"""
AGENTS = {
    "main": agent_md("Main agent.", mode="primary", tools="[Read, Write]"),
    "other": agent_md("Another primary.", mode="primary", tools="[Read]"),
}


def invoke(args: list[str], home: Path, *, input: str | None = None) -> Result:
    return CliRunner().invoke(main, args, env=isolated_env(home), input=input, prog_name="bearagent")


def marker_server(root: Path, marker: Path) -> None:
    """A `.mcp.json` whose one server, were it ever started, leaves `marker` behind."""
    code = f"import pathlib; pathlib.Path({str(marker)!r}).touch()"
    (root / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"m": {"command": sys.executable, "args": ["-c", code]}}})
    )


def chat_workspace(tmp_path: Path) -> Path:
    return scripted_workspace(tmp_path / "ws", WRITE_SCRIPT, agents=AGENTS, config="kind: chat\n" + CONFIG)


def test_a_chat_workspace_starts_no_mcp_server_from_any_command(tmp_path: Path) -> None:
    root = chat_workspace(tmp_path)
    marker = tmp_path / "started"
    marker_server(root, marker)
    assert invoke(["trust", "-w", str(root)], tmp_path).exit_code == 0

    for args in (["mcp", "list"], ["mcp", "tools", "m"], ["mcp", "list", "--json"]):
        result = invoke([*args, "-w", str(root)], tmp_path)
        assert result.exit_code == 2, result.output
        assert "starting MCP servers is refused: this is a chat workspace (kind: chat)" in result.output
        assert "kind: project" in result.output  # the fix

    run = invoke(["run", "-w", str(root), "--json", "write it"], tmp_path)
    assert run.exit_code == 0, run.output
    assert json.loads(run.output)["status"] == "succeeded"
    assert not marker.exists()
    assert not (root / "out.txt").exists()


def test_a_chat_session_may_pick_an_agent_on_the_cli(tmp_path: Path) -> None:
    """The one rule for both faces (the HTTP one: tests/server/test_http_execution_policy.py): a chat run may name a
    primary agent; its prompt and model apply, its tools never run."""
    root = chat_workspace(tmp_path)
    result = invoke(["run", "-w", str(root), "-a", "other", "--json", "write it"], tmp_path)
    assert result.exit_code == 0, result.output
    record = json.loads(result.output)
    assert record["agent"] == "other" and record["status"] == "succeeded"
    assert not (root / "out.txt").exists()


def test_a_project_marked_none_runs_no_tool_and_no_hook(tmp_path: Path) -> None:
    hook_marker = tmp_path / "hook-ran"
    config = (
        "execution_policy: none\n"
        + CONFIG
        + f"""
hooks:
  UserPromptSubmit:
    - hooks: [{{type: command, command: "touch {hook_marker}"}}]
"""
    )
    root = scripted_workspace(tmp_path / "ws", WRITE_SCRIPT, agents=AGENTS, config=config)
    assert invoke(["trust", "-w", str(root)], tmp_path).exit_code == 0

    run = invoke(["run", "-w", str(root), "--json", "write it"], tmp_path)
    assert run.exit_code == 0, run.output
    assert not (root / "out.txt").exists() and not hook_marker.exists()

    test = invoke(["hooks", "test", "UserPromptSubmit", "-w", str(root)], tmp_path, input="{}")
    assert test.exit_code == 2, test.output
    assert "running hooks is refused: this workspace's execution_policy is none" in test.output
    assert str(root / ".bearagent" / "config.yaml") in test.output  # what set it
    assert "execution_policy: none" in test.output  # and the fix
    assert not hook_marker.exists()

    listed = invoke(["hooks", "list", "-w", str(root)], tmp_path)
    assert "hooks are ignored: execution_policy is none" in listed.output


def test_the_users_none_is_not_loosened_by_the_workspace(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", WRITE_SCRIPT, agents=AGENTS, config="execution_policy: local\n" + CONFIG)
    marker = tmp_path / "started"
    marker_server(root, marker)
    user_config = write(tmp_path, "bearagent/config.yaml", "execution_policy: none\n")
    assert invoke(["trust", "-w", str(root)], tmp_path).exit_code == 0

    result = invoke(["mcp", "list", "-w", str(root)], tmp_path)
    assert result.exit_code == 2, result.output
    assert f"execution_policy is none (set by {user_config})" in result.output
    assert not marker.exists()


def test_a_bad_policy_value_names_the_file_and_the_choices(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws", WRITE_SCRIPT, agents=AGENTS, config="execution_policy: sandbox\n" + CONFIG
    )
    result = invoke(["doctor", "-w", str(root)], tmp_path)
    assert "execution_policy: must be local or none, got 'sandbox'" in result.output

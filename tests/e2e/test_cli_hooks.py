"""`bearagent hooks list|test` and `bearagent trust` as a user runs them: the real executable, a real workspace
config, Claude Code doc scripts, and the trust file in a temp BEARAGENT_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.hooks import install_doc_script

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
RM_PAYLOAD = json.dumps({"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}, "tool_use_id": "toolu_1"})

CONFIG = """\
hooks:
  PreToolUse:
    - matcher: Bash
      hooks:
        - {type: command, command: .claude/hooks/block-rm.sh, timeout: 30, on_failure: block}
    - matcher: "mcp__memory__.*"
      hooks:
        - {type: command, command: .claude/hooks/pretooluse_deny.py, capabilities: [block]}
  UserPromptSubmit:
    - hooks:
        - {type: command, command: .claude/hooks/user_prompt_context.py, capabilities: [context, block]}
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / ".bearagent").mkdir(parents=True)
    for name in ("block-rm.sh", "pretooluse_deny.py", "user_prompt_context.py"):
        install_doc_script(ws, name)
    (ws / ".bearagent" / "config.yaml").write_text(CONFIG)
    return ws


def cli(workspace: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "BEARAGENT_HOME": str(workspace.parent / "home"), "NO_COLOR": "1"}
    return subprocess.run(
        [BEARAGENT, *args], input=stdin, capture_output=True, text=True, cwd=workspace, env=env, timeout=60, check=False
    )


def test_hooks_list_shows_every_hook(workspace: Path) -> None:
    result = cli(workspace, "hooks", "list")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("PreToolUse  matcher=Bash  command: .claude/hooks/block-rm.sh")
    assert "capabilities=all (undeclared)  on_failure=block" in lines[0]  # the boundary shown (seed 002)
    assert "matcher=mcp__memory__.*" in lines[1] and "capabilities=block  on_failure=allow" in lines[1]
    rows = [json.loads(line) for line in cli(workspace, "hooks", "list", "--json").stdout.splitlines()]
    assert rows[2]["event"] == "UserPromptSubmit" and rows[2]["capabilities"] == ["block", "context"]
    assert rows[0]["capabilities"] == ["block", "context", "rewrite"] and rows[0]["capabilities_declared"] is False
    assert rows[2]["capabilities_declared"] is True


def test_doctor_and_the_trust_listing_show_each_handlers_capabilities(workspace: Path) -> None:
    doctor = cli(workspace, "doctor")
    assert "hook          PreToolUse[Bash] command: .claude/hooks/block-rm.sh: all (undeclared)" in doctor.stdout
    assert "hook          UserPromptSubmit[*] command: .claude/hooks/user_prompt_context.py: block,context" in (
        doctor.stdout
    )
    rows = json.loads(cli(workspace, "doctor", "--json").stdout)["hooks"]
    assert [r["capabilities_label"] for r in rows] == ["all (undeclared)", "block", "block,context"]
    listing = cli(workspace, "trust", "--list", "-w", str(workspace))
    # the listing wraps a long item at 100 characters onto "    " continuation lines (never cuts it): undo that
    shown = (listing.stdout + listing.stderr).replace("\n    ", "")
    assert "runs '.claude/hooks/block-rm.sh'; capabilities: all (undeclared)" in shown
    assert "capabilities: block,context" in shown
    assert rows[0]["source"] == str(workspace / ".bearagent" / "config.yaml")


def test_untrusted_workspace_refuses_and_says_how_to_trust(workspace: Path) -> None:
    result = cli(workspace, "hooks", "test", "PreToolUse", stdin=RM_PAYLOAD)
    assert result.returncode == 2
    assert f"error: workspace {workspace.resolve()} is not trusted" in result.stderr
    assert "  - .bearagent/config.yaml:" in result.stderr and "command hook on PreToolUse (Bash)" in result.stderr
    assert f"fix: review the items above, then run: bearagent trust -w {workspace.resolve()}" in result.stderr
    assert not (workspace / "tool-log").exists()


def test_trust_then_test_then_change_then_revoke(workspace: Path) -> None:
    trusted = cli(workspace, "trust", "-w", str(workspace))
    assert trusted.returncode == 0, trusted.stderr
    assert f"Trusted {workspace.resolve()}: 3 hooks, 3 script files." in trusted.stdout
    assert "  - .bearagent/config.yaml:" in trusted.stdout  # the list is shown before anything is recorded
    assert (workspace.parent / "home" / "trust.json").is_file()
    assert sorted(p.name for p in (workspace / ".bearagent").iterdir()) == ["config.yaml"]

    blocked = cli(workspace, "hooks", "test", "PreToolUse", stdin=RM_PAYLOAD)
    assert blocked.returncode == 0, blocked.stderr
    assert "decision: block — Blocked: rm -rf commands are not allowed" in blocked.stdout

    mcp = json.dumps({"tool_name": "mcp__memory__delete", "tool_input": {"command": "rm -rf all"}, "tool_use_id": "t"})
    denied = json.loads(cli(workspace, "hooks", "test", "PreToolUse", "--json", stdin=mcp).stdout)
    assert denied["permissionDecision"] == "deny" and denied["matched"] == 1
    assert denied["permissionDecisionReason"] == "Destructive command blocked by hook"

    prompt = json.loads(
        cli(workspace, "hooks", "test", "UserPromptSubmit", "--json", stdin='{"prompt": "hello"}').stdout
    )
    assert prompt["additionalContext"].startswith("Current time: ") and not prompt["blocked"]

    config = workspace / ".bearagent" / "config.yaml"
    config.write_text(CONFIG.replace("timeout: 30", "timeout: 31"))
    changed = cli(workspace, "hooks", "test", "PreToolUse", stdin=RM_PAYLOAD)
    assert changed.returncode == 2 and "changed since you trusted it (changed: hook" in changed.stderr

    cli(workspace, "trust")
    revoked = cli(workspace, "trust", "--revoke")
    assert revoked.returncode == 0 and f"Revoked trust for {workspace.resolve()}" in revoked.stdout
    assert cli(workspace, "hooks", "test", "PreToolUse", stdin=RM_PAYLOAD).returncode == 2


def test_hooks_test_input_errors_name_the_problem(workspace: Path) -> None:
    cli(workspace, "trust")
    typo = cli(workspace, "hooks", "test", "preToolUse", stdin=RM_PAYLOAD)
    assert typo.returncode == 2 and "unknown hook event 'preToolUse' (did you mean 'PreToolUse'?)" in typo.stderr
    bad_json = cli(workspace, "hooks", "test", "PreToolUse", stdin="{oops")
    assert bad_json.returncode == 2 and "stdin is not valid JSON" in bad_json.stderr
    wrong = cli(
        workspace, "hooks", "test", "PreToolUse", stdin='{"tool_name": "Bash", "tool_input": "ls", "tool_use_id": "t"}'
    )
    assert wrong.returncode == 2 and "PreToolUse hook payload: tool_input" in wrong.stderr
    assert "fix: give the fields of a PreToolUse hook input" in wrong.stderr


def test_full_claude_code_payload_is_accepted(workspace: Path) -> None:
    cli(workspace, "trust")
    payload = {
        "session_id": "abc",
        "transcript_path": "/tmp/x.jsonl",
        "cwd": str(workspace),
        "hook_event_name": "PreToolUse",
        "permission_mode": "default",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": "toolu_1",
    }
    result = cli(workspace, "hooks", "test", "PreToolUse", stdin=json.dumps(payload))
    assert result.returncode == 0, result.stderr
    assert "decision: proceed" in result.stdout


def test_missing_hook_script_is_a_load_diagnostic(workspace: Path) -> None:
    (workspace / ".bearagent" / "config.yaml").write_text(
        "hooks:\n  Stop:\n    - hooks:\n        - {type: command, command: .bearagent/hooks/missing.sh}\n"
    )
    result = cli(workspace, "hooks", "list")
    assert "missing.sh" in result.stderr and "does not exist" in result.stderr


def test_agent_hooks_are_listed_and_mcp_servers_are_part_of_trust(workspace: Path) -> None:
    (workspace / ".bearagent" / "agents").mkdir()
    (workspace / ".bearagent" / "agents" / "reviewer.md").write_text(
        "---\nname: reviewer\ndescription: Reviews changes.\nhooks:\n  PostToolUse:\n"
        "    - matcher: Edit\n      hooks:\n        - {type: command, command: .claude/hooks/block-rm.sh}\n---\nReview.\n"
    )
    rows = [json.loads(line) for line in cli(workspace, "hooks", "list", "--json").stdout.splitlines()]
    agent_rows = [row for row in rows if row["agent"] == "reviewer"]
    assert len(agent_rows) == 1 and agent_rows[0]["event"] == "PostToolUse" and agent_rows[0]["matcher"] == "Edit"

    trusted = cli(workspace, "trust")
    assert "Trusted" in trusted.stdout and "4 hooks" in trusted.stdout
    assert ".bearagent/agents/reviewer.md:8: command hook on PostToolUse (Edit)" in trusted.stdout, trusted.stdout
    (workspace / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}})
    )
    changed = cli(workspace, "hooks", "test", "PreToolUse", stdin=RM_PAYLOAD)
    assert changed.returncode == 2 and "added: mcp time" in changed.stderr
    again = cli(workspace, "trust")
    assert ".mcp.json:1: MCP server 'time' (stdio) runs 'uvx mcp-server-time'" in again.stdout
    assert cli(workspace, "hooks", "test", "PreToolUse", stdin=RM_PAYLOAD).returncode == 0


def test_bash_allow_rules_are_part_of_trust_and_run_agrees(workspace: Path) -> None:
    from bearagent.trust import trust_status, workspace_trust_surface
    from bearagent.workspace import load_workspace

    env = {**os.environ, "BEARAGENT_HOME": str(workspace.parent / "home"), "BEARAGENT_LOAD_PLUGINS": ""}
    assert cli(workspace, "trust").returncode == 0
    assert trust_status(workspace, workspace_trust_surface(load_workspace(workspace, env=env)), env=env) == "trusted"
    config = workspace / ".bearagent" / "config.yaml"
    config.write_text(CONFIG + 'permissions:\n  allow: [Read, "Bash(make *)"]\n')
    changed = cli(workspace, "hooks", "test", "PreToolUse", stdin=RM_PAYLOAD)
    assert (
        changed.returncode == 2 and "added: " in changed.stderr and "permissions.allow Bash(make *)" in changed.stderr
    )
    assert trust_status(workspace, workspace_trust_surface(load_workspace(workspace, env=env)), env=env) == "changed"
    listed = cli(workspace, "trust").stdout
    assert ".bearagent/config.yaml:" in listed and "permissions.allow 'Bash(make *)' lets calls run" in listed
    assert trust_status(workspace, workspace_trust_surface(load_workspace(workspace, env=env)), env=env) == "trusted"

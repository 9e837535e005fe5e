"""Custom commands and skills' `allowed-tools` in real runs (Python API): a command's `allowed-tools` pre-approve its
run only, a skill's pre-approve the rest of the run once the skill is loaded; deny rules still win."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import open_ws, scripted_workspace

from bearagent.api import Workspace
from bearagent.domain._base import thaw_json_mapping
from bearagent.trust import trust, workspace_trust_surface

CONFIG = """
default_model: scripted
permission_mode: dontAsk
permissions: {deny: ["Bash(echo forbidden:*)"]}
models:
  scripted: {provider: scripted, script: script.yaml}
"""


def _outcomes(ws: Workspace, run_id: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for event in ws.events(run_id):
        if event.event_type in ("ToolCallCompleted", "ToolCallFailed"):
            out.append((event.event_type, json.dumps(thaw_json_mapping(event.payload))))
    return out


def test_a_commands_allowed_tools_pre_approve_its_run_only(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "echo from-command"}}]
  - tool_calls: [{name: Bash, arguments: {command: "echo forbidden now"}}]
  - text: "done"
  - tool_calls: [{name: Bash, arguments: {command: "echo from-plain-run"}}]
  - text: "done again"
"""
    root = scripted_workspace(tmp_path / "ws", script, config=CONFIG)
    write(
        root,
        ".claude/commands/greet.md",
        "---\ndescription: Greets: loudly\nallowed-tools: Bash(echo:*)\n---\nSay hello to $1.\n",
    )
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))  # allowed-tools widen: trust
    with open_ws(root, home) as ws:
        result = asyncio.run(ws.run_action("greet", {"arguments": "Ada"}))
        assert result.status == "succeeded", result.error
        outcomes = _outcomes(ws, str(result.run_id))
        assert outcomes[0][0] == "ToolCallCompleted" and "from-command" in outcomes[0][1]
        assert outcomes[1][0] == "ToolCallFailed" and "Bash(echo forbidden:*)" in outcomes[1][1]  # deny still wins
        created = next(e for e in ws.events(str(result.run_id)) if e.event_type == "RunCreated")
        assert "Say hello to Ada." in json.dumps(thaw_json_mapping(created.payload))
        plain = ws.run_sync("now without the command")
        failed = _outcomes(ws, str(plain.run_id))
        assert failed[0][0] == "ToolCallFailed" and "dontAsk" in failed[0][1]  # the grant was for that run only


def test_a_skills_allowed_tools_apply_once_the_skill_is_loaded(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "echo before"}}]
  - tool_calls: [{name: Skill, arguments: {name: greeter}}]
  - tool_calls: [{name: Bash, arguments: {command: "echo after"}}]
  - text: "done"
"""
    root = scripted_workspace(tmp_path / "ws", script, config=CONFIG)
    write(
        root,
        ".claude/skills/greeter/SKILL.md",
        "---\nname: greeter\ndescription: Greets.\nallowed-tools: Bash(echo after:*), Bash(git add:*)\n---\nGreet.\n",
    )
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))  # the skill widens: trust it
    with open_ws(root, home) as ws:
        result = ws.run_sync("greet")
        assert result.status == "succeeded", result.error
        outcomes = _outcomes(ws, str(result.run_id))
        assert outcomes[0][0] == "ToolCallFailed" and "dontAsk" in outcomes[0][1]
        assert (
            outcomes[1][0] == "ToolCallCompleted"
            and "these calls run without asking: Bash(echo after:*)" in (outcomes[1][1])
        )
        assert outcomes[2][0] == "ToolCallCompleted" and "after" in outcomes[2][1]

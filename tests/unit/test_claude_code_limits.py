"""What BearAgent does with the Claude Code keys it does not implement: each is named, never dropped silently, and
none widens anything (docs/claude-code.md lists them)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.config_ws import codes, load, write

from bearagent.hooks.matching import matcher_matches


def test_agent_keys_without_an_equivalent_are_warnings(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".claude/agents/a.md",
        "---\ndescription: A.\nmemory: project\neffort: high\nbackground: true\nisolation: worktree\n"
        "initialPrompt: hi\nmcpServers:\n  - notes\n  - inline: {command: evil}\n---\nbody\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    agent = ws.agents.get("a")
    assert agent is not None and agent.mcp == ("notes",)  # a server reference is kept, an inline one is not
    found = codes(ws.diagnostics())
    assert found.count("agent.unsupported_key") == 5 and "agent.inline_mcp_unsupported" in found


def test_hook_handler_keys_beyond_bearagents_are_named_and_mcp_tool_handlers_stop_the_run(tmp_path: Path) -> None:
    settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": "true", "if": "Bash(git *)", "statusMessage": "checking"},
                        {"type": "mcp_tool", "server": "notes", "tool": "note_env"},
                    ],
                }
            ]
        }
    }
    write(tmp_path, ".claude/settings.json", json.dumps(settings))
    ws = load(tmp_path, tmp_path / "home")
    unknown = [d for d in ws.hooks.diagnostics if d.code == "config.unknown_key"]
    assert {d.message.split("'")[1] for d in unknown} == {"if", "statusMessage", "server", "tool"}
    assert ws.hooks.has_errors  # the mcp_tool handler cannot run, so the run is refused (`check_hooks`)
    group = ws.hooks.all()[0]
    assert [h.command for h in group.hooks] == ["true"]  # ... and the command handler runs without its `if`


def test_the_delegation_tool_answers_to_agent_and_task_in_matchers() -> None:
    from bearagent.hooks.hook_input import hook_tool_name

    assert hook_tool_name("Task") == "Agent" and hook_tool_name("Bash") == "Bash"  # what Claude Code sends
    for matcher in ("Agent", "Task", "Task|Bash", "^Agent$", "Ag.*"):
        assert matcher_matches(matcher, "Agent"), matcher
    assert not matcher_matches("Bash", "Agent")


def test_command_keys_without_an_equivalent_are_warnings(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".claude/commands/fork.md",
        "---\ndescription: Forks.\ncontext: fork\nagent: explore\narguments: [a, b]\n---\nDo $1.\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    command = ws.actions.get("fork")
    assert command is not None and command.agent == "explore"  # `agent` picks who runs it
    unsupported = [d.field or "" for d in ws.actions.diagnostics if d.code == "command.unsupported_key"]
    assert sorted(unsupported) == ["arguments", "context"]


def test_claude_codes_user_and_local_memory_files_are_not_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home, ".claude/settings.json", '{"permissions": {"allow": ["Bash"]}}')
    write(home, ".claude/CLAUDE.md", "USER-MEMORY\n")
    write(tmp_path / "ws", "CLAUDE.local.md", "LOCAL-MEMORY\n")
    write(tmp_path / "ws", ".claude/CLAUDE.md", "DOT-CLAUDE-MEMORY\n")
    ws = load(tmp_path / "ws", home)
    assert ws.config.permissions.allow == () and ws.config_files == [] and ws.instructions is None

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
    assert agent.initial_prompt == "hi"  # read (tests/e2e/test_agent_initial_prompt.py)
    assert agent.memory == "project"  # read (tests/e2e/test_agent_memory.py)
    found = codes(ws.diagnostics())
    assert found.count("agent.unsupported_key") == 3 and "agent.inline_mcp_unsupported" in found


def test_claude_code_handler_keys_load_with_their_meaning_and_the_others_are_named(tmp_path: Path) -> None:
    settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {"type": "command", "command": "true", "if": "Bash(git *)", "statusMessage": "checking"},
                        {
                            "type": "command",
                            "command": "true",
                            "async": True,
                            "once": True,
                            "statusMessage": "a\x1b]0;x",
                        },
                        {"type": "mcp_tool", "server": "notes", "tool": "note_env", "input": {"p": "${cwd}"}},
                        {"type": "http", "url": "http://127.0.0.1:1/h", "async": True},
                    ],
                }
            ],
            "Stop": [{"hooks": [{"type": "command", "command": "true", "if": "Bash"}]}],
        }
    }
    write(tmp_path, ".claude/settings.json", json.dumps(settings))
    ws = load(tmp_path, tmp_path / "home")
    assert not ws.hooks.has_errors
    pre, stop = ws.hooks.all()
    guarded, background, mcp, http = pre.hooks
    assert guarded.condition == "Bash(git *)" and not guarded.run_async and guarded.status_message == "checking"
    assert background.status_message is None  # a control sequence is never shown: a warning, the text dropped
    assert background.run_async and not background.once  # `once` is Claude Code's: ignored in its settings files
    assert (
        mcp.type == "mcp_tool" and (mcp.server, mcp.tool) == ("notes", "note_env") and mcp.arguments == {"p": "${cwd}"}
    )
    assert not http.run_async  # `async` is for command handlers
    assert stop.hooks[0].condition == "Bash"
    found = codes(ws.hooks.diagnostics)
    assert "hooks.unsupported_key" not in found  # statusMessage is honoured
    assert found.count("hooks.invalid_status_message") == 1
    assert {"hooks.once_ignored", "hooks.async_ignored", "hooks.condition_never_matches"} <= set(found)


def test_once_is_honoured_in_bearagents_own_files_and_a_bad_if_stops_the_run(tmp_path: Path) -> None:
    write(
        tmp_path,
        ".bearagent/config.yaml",
        "hooks:\n  SessionStart:\n    - hooks: [{type: command, command: 'true', once: true}]\n"
        "  PreToolUse:\n    - hooks: [{type: command, command: 'true', if: 'Cd(x)'}]\n",
    )
    ws = load(tmp_path, tmp_path / "home")
    assert ws.hooks.all()[0].hooks[0].once
    bad = [d for d in ws.hooks.diagnostics if d.severity == "error"]
    assert ws.hooks.has_errors and ".if must be one permission rule" in bad[0].message


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
    assert command.argument_names == ("a", "b")  # read (tests/unit/test_command_named_arguments.py)
    unsupported = [d.field or "" for d in ws.actions.diagnostics if d.code == "command.unsupported_key"]
    assert sorted(unsupported) == ["context"]


def test_the_user_and_local_memory_files_are_read_and_the_others_are_not(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(home, ".claude/settings.json", '{"permissions": {"allow": ["Bash"]}}')
    write(home, ".claude/CLAUDE.md", "USER-MEMORY\n")
    write(tmp_path / "ws", "CLAUDE.local.md", "LOCAL-MEMORY\n")
    write(tmp_path / "ws", ".claude/CLAUDE.md", "DOT-CLAUDE-MEMORY\n")
    write(tmp_path / "ws", "sub/CLAUDE.md", "SUBDIR-MEMORY\n")
    ws = load(tmp_path / "ws", home)
    assert ws.config.permissions.allow == () and ws.config_files == []
    assert ws.instructions is not None
    assert ws.instructions.sources == ("~/.claude/CLAUDE.md", "CLAUDE.local.md")
    text = ws.instructions.text
    assert text.index("USER-MEMORY") < text.index("LOCAL-MEMORY")
    assert "DOT-CLAUDE-MEMORY" not in text and "SUBDIR-MEMORY" not in text


def test_a_local_memory_file_that_leaves_the_workspace_is_never_read(tmp_path: Path) -> None:
    home = tmp_path / "home"
    write(tmp_path, "secret.txt", "SECRET\n")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "CLAUDE.local.md").symlink_to(tmp_path / "secret.txt")
    ws = load(tmp_path / "ws", home)
    assert ws.instructions is None
    assert any("CLAUDE.local.md" in d.message for d in ws.diagnostics() if d.severity == "error")

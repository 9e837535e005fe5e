"""The Claude Code settings and files issue 17 left partial, through the real `bearagent` executable: hook handler
keys (`if`, `once`, `async`), `mcp_tool` handlers, the `Agent` matcher, `permissions.additionalDirectories`,
`disableBypassPermissionsMode`, agents in subdirectories of `.claude/agents/`, and skills as slash commands.

Each test builds a small project the way Claude Code users write it (no `.bearagent/` unless the test needs one),
with the user's own scripted model in the user config, and runs it after `bearagent trust`. Hook scripts run as
real subprocesses and write what they saw to files the test reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from tests.support.cli_events import tool_outcomes

BEARAGENT = str(Path(sys.executable).parent / "bearagent")

LOG_HOOK = """#!/bin/sh
# log.sh LABEL: one line "LABEL <stdin JSON>" per call
printf '%s %s\\n' "$1" "$(cat)" >> "$CLAUDE_PROJECT_DIR/hook-log.txt"
"""
SLOW_HOOK = """#!/bin/sh
# an async PostToolUse hook: takes its time, then asks to block (which an async hook cannot do)
cat > /dev/null
sleep 1
echo async-ran >> "$CLAUDE_PROJECT_DIR/hook-log.txt"
echo "an async hook cannot block" >&2
exit 2
"""
NOTES_SERVER = '''"""A stdio MCP server: `note(text)` appends a line to mcp-log.txt in its working directory."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")


@server.tool()
def note(text: str) -> str:
    """Append `text` to mcp-log.txt."""
    with open("mcp-log.txt", "a", encoding="utf-8") as handle:
        handle.write(text + "\\n")
    return "noted"


if __name__ == "__main__":
    server.run("stdio")
'''


class Project:
    """A workspace `ws/` and a home `home/` whose user config holds the scripted model (the user's own, trusted)."""

    def __init__(self, tmp_path: Path, script: str, files: dict[str, str]) -> None:
        self.ws = tmp_path / "ws"
        self.home = tmp_path / "home"
        (self.home / "bearagent").mkdir(parents=True)
        (self.home / "script.yaml").write_text(textwrap.dedent(script))
        self.user_config(
            f"default_model: main\nmodels:\n  main: {{provider: scripted, script: {self.home / 'script.yaml'}}}\n"
        )
        for rel, text in files.items():
            path = self.ws / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            if rel.endswith(".sh"):
                path.chmod(0o755)
        self.ws.mkdir(exist_ok=True)

    def user_config(self, text: str) -> None:
        (self.home / "bearagent" / "config.yaml").write_text(text)

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "BEARAGENT_HOME": str(self.home / "bearagent"),
            "BEARAGENT_LOAD_PLUGINS": "",
            "NO_COLOR": "1",
            "PYTHON": sys.executable,
        }

    def bear(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [BEARAGENT, *args], cwd=self.ws, env=self.env, capture_output=True, text=True, timeout=120, check=False
        )

    def trusted_run(self, *args: str) -> subprocess.CompletedProcess[str]:
        trusted = self.bear("trust", "-y")
        assert trusted.returncode == 0, trusted.stderr
        return self.bear("run", *args)

    def events(self) -> list[dict[str, Any]]:
        result = self.bear("events", "last", "--json")
        assert result.returncode == 0, result.stderr
        return [json.loads(line) for line in result.stdout.splitlines()]

    def payloads(self, event_type: str) -> list[dict[str, Any]]:
        return [e["payload"] for e in self.events() if e["event_type"] == event_type]

    def outcomes(self) -> list[tuple[str, str, str]]:
        """(tool name, Completed|Failed, result payload) of the last top-level run, in order."""
        return [(name, kind.removeprefix("ToolCall"), payload) for name, kind, payload in tool_outcomes(self.events())]

    def goal(self) -> str:
        return str(self.payloads("RunCreated")[0]["goal"])

    def log(self) -> list[str]:
        path = self.ws / "hook-log.txt"
        return path.read_text().splitlines() if path.exists() else []


# ---- hook handler keys, mcp_tool, the Agent matcher ----------------------------------------------------------

HOOKS_SCRIPT = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "echo one"}}]
  - tool_calls: [{name: Bash, arguments: {command: "git --version"}}]
  - tool_calls: [{name: Task, arguments: {subagent_type: explore, prompt: "look around"}}]
  - text: "explored"
  - text: "All done."
"""
HOOK_SETTINGS = {
    "permissions": {"allow": ["Bash(echo:*)", "Bash(git --version)"]},
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": ".claude/hooks/log.sh if-git", "if": "Bash(git *)"}],
            },
            {"matcher": "Agent", "hooks": [{"type": "command", "command": ".claude/hooks/log.sh agent-matcher"}]},
            {"matcher": "Task", "hooks": [{"type": "command", "command": ".claude/hooks/log.sh task-matcher"}]},
        ],
        "PostToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": ".claude/hooks/slow.sh", "async": True}]},
            {
                "matcher": "Bash",
                "hooks": [
                    {
                        "type": "mcp_tool",
                        "server": "notes",
                        "tool": "note",
                        "input": {"text": "post ${tool_input.command}"},
                    }
                ],
            },
        ],
    },
}
ONCE_CONFIG = """hooks:
  PreToolUse:
    - hooks: [{type: command, command: .claude/hooks/log.sh once, once: true}]
"""
MCP_JSON = json.dumps({"mcpServers": {"notes": {"command": "${PYTHON:-python3}", "args": [".claude/mcp/notes.py"]}}})


def test_if_once_async_mcp_tool_and_the_agent_matcher_behave_as_in_claude_code(tmp_path: Path) -> None:
    project = Project(
        tmp_path,
        HOOKS_SCRIPT,
        {
            ".claude/settings.json": json.dumps(HOOK_SETTINGS),
            ".claude/hooks/log.sh": LOG_HOOK,
            ".claude/hooks/slow.sh": SLOW_HOOK,
            ".claude/mcp/notes.py": NOTES_SERVER,
            ".mcp.json": MCP_JSON,
            ".bearagent/config.yaml": ONCE_CONFIG,
        },
    )
    result = project.trusted_run("do the work")
    assert result.returncode == 0, result.stderr
    assert "All done." in result.stdout
    # an async hook that exits 2 blocks nothing: both Bash calls ran
    assert [(name, kind) for name, kind, _ in project.outcomes()] == [
        ("Bash", "Completed"),
        ("Bash", "Completed"),
        ("Task", "Completed"),
    ]
    log = project.log()
    labels = [line.split(" ", 1)[0] for line in log]
    assert labels.count("once") == 1  # `once: true` (BearAgent's config.yaml): the first PreToolUse only
    git = [json.loads(line.split(" ", 1)[1]) for line in log if line.startswith("if-git ")]
    assert [g["tool_input"]["command"] for g in git] == ["git --version"]  # `if: Bash(git *)`
    for label in ("agent-matcher", "task-matcher"):  # both names select the delegation tool ...
        seen = [json.loads(line.split(" ", 1)[1]) for line in log if line.startswith(label + " ")]
        assert len(seen) == 1, label
        assert seen[0]["tool_name"] == "Agent"  # ... which hooks receive by Claude Code's name
        assert seen[0]["tool_input"]["subagent_type"] == "explore"
    assert labels.count("async-ran") == 2  # the run waited for its background hooks before it ended
    assert (project.ws / "mcp-log.txt").read_text().splitlines() == ["post echo one", "post git --version"]
    executed = project.payloads("HookExecuted")
    background = [p for p in executed if str(p["handler"]).startswith("async command:")]
    assert len(background) == 2 and all(p["decision"] == "none" for p in background)  # logged, decided nothing
    mcp = [p for p in executed if p["handler_type"] == "mcp_tool"]
    assert len(mcp) == 2 and all(p["error"] is None for p in mcp)


# ---- agents in subdirectories of .claude/agents ---------------------------------------------------------------

WIZARD_AGENT = """---
name: security-reviewer
description: Use this agent when code touches authentication or secrets. Examples:

<example>
Context: The user changed the login flow.
user: "I rewrote the session handling"
assistant: "Let me use the security-reviewer agent to check it."
</example>
model: sonnet
tools: Read, Grep
---
You review code for security problems.
"""


def test_agents_in_subdirectories_are_delegated_to_and_a_shared_name_says_where(tmp_path: Path) -> None:
    script = """
    turns:
      - tool_calls: [{name: Task, arguments: {subagent_type: security-reviewer, prompt: "check the login"}}]
      - text: "no findings"
      - text: "Reviewed."
    """
    project = Project(
        tmp_path,
        script,
        {
            ".claude/agents/review/security-reviewer.md": WIZARD_AGENT,
            ".claude/agents/team-a/tester.md": "---\ndescription: Tests A.\n---\nTest.\n",
            ".claude/agents/team-b/tester.md": "---\ndescription: Tests B.\n---\nTest.\n",
        },
    )
    result = project.trusted_run("review it")
    assert result.returncode == 0, result.stderr
    assert [(name, kind) for name, kind, _ in project.outcomes()] == [("Task", "Completed")]
    assert "no findings" in project.outcomes()[0][2]
    started = project.payloads("ChildRunStarted")
    assert [p["agent_name"] for p in started] == ["security-reviewer"]
    duplicate = project.bear("run", "-a", "tester", "hello")
    assert duplicate.returncode == 2
    for part in ("'tester' is defined twice", "team-a/tester.md", "team-b/tester.md"):
        assert part in duplicate.stderr, duplicate.stderr


# ---- skills as slash commands ----------------------------------------------------------------------------------

SKILL = """---
name: commit-helper
description: Writes a commit message from the staged changes. Use when: the user asks to commit.
argument-hint: [summary]
allowed-tools: Bash(git diff:*)
---

1. Run `git diff --cached --stat` to see what is staged.
2. Write a commit message about $ARGUMENTS.
"""
SAME_FILE = "git diff --no-index --stat notes.md notes.md"
SKILL_SCRIPT = f"""
turns:
  - tool_calls: [{{name: Bash, arguments: {{command: "{SAME_FILE}"}}}}]
  - text: "Committed."
  - tool_calls: [{{name: Bash, arguments: {{command: "{SAME_FILE}"}}}}]
  - text: "Committed again."
"""
SKILL_FILES = {
    ".claude/skills/commit-helper/SKILL.md": SKILL,
    ".claude/skills/commit-helper/template.md": "Summary line\n",
    ".claude/skills/internal/SKILL.md": "---\nname: internal\ndescription: Model only.\nuser-invocable: false\n---\nx\n",
    ".claude/settings.json": json.dumps({"permissions": {"defaultMode": "dontAsk"}}),
    "notes.md": "notes\n",
}


def test_a_skill_is_a_slash_command_in_the_session_and_in_action_run(tmp_path: Path) -> None:
    import pexpect

    project = Project(tmp_path, SKILL_SCRIPT, SKILL_FILES)
    assert project.bear("trust", "-y").returncode == 0
    child: pexpect.spawn[str] = pexpect.spawn(
        BEARAGENT,
        ["-w", str(project.ws)],
        env={**project.env, "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    try:
        child.expect("build>")
        child.sendline("/help")
        child.expect("skills \\(as commands\\):")
        child.expect(r"/commit-helper \[summary\] +Writes a commit message")
        child.expect("build>")
        child.sendline("/commit-helper the typo fix")
        child.expect("Committed.")
        child.expect("build>")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    goal = project.goal()
    assert "Write a commit message about the typo fix." in goal  # $ARGUMENTS, as in a command
    assert "its folder is" in goal and "- template.md" in goal  # the bundled files are named, not read
    assert project.outcomes()[0][1] == "Completed"  # allowed-tools pre-approve it, in dontAsk
    # the same from the command line
    result = project.bear("action", "run", "commit-helper", "the", "docs")
    assert result.returncode == 0, result.stderr
    assert "Write a commit message about the docs." in project.goal()
    assert project.outcomes()[0][1] == "Completed"
    hidden = project.bear("action", "run", "internal")
    assert hidden.returncode != 0  # `user-invocable: false`: no slash command


# ---- disableBypassPermissionsMode ------------------------------------------------------------------------------


def test_disable_bypass_permissions_mode_keeps_a_bypass_from_any_source_off(tmp_path: Path) -> None:
    script = """
    turns:
      - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
      - text: "done"
      - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
      - text: "done again"
    """
    settings = {
        "permissions": {"defaultMode": "bypassPermissions", "disableBypassPermissionsMode": "disable"},
        "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": ".claude/hooks/log.sh mode"}]}]},
    }
    project = Project(
        tmp_path,
        script,
        {".claude/settings.json": json.dumps(settings), ".claude/hooks/log.sh": LOG_HOOK, "notes.md": "n\n"},
    )
    result = project.trusted_run("read it")
    assert result.returncode == 0, result.stderr
    assert "permission mode bypassPermissions (permission_mode) is disabled by disableBypassPermissionsMode" in (
        result.stderr
    )
    flagged = project.bear("run", "--permission-mode", "bypassPermissions", "read it again")
    assert flagged.returncode == 0, flagged.stderr
    assert "bypassPermissions (--permission-mode) is disabled" in flagged.stderr
    modes = [json.loads(line.split(" ", 1)[1])["permission_mode"] for line in project.log()]
    assert modes == ["acceptEdits", "acceptEdits"]  # what the hooks (and the gate) got instead


# ---- permissions.additionalDirectories -------------------------------------------------------------------------


def test_additional_directories_are_reachable_after_trust_and_nothing_else_is(tmp_path: Path) -> None:
    shared, outside = tmp_path / "shared", tmp_path / "outside"
    (shared / ".git" / "hooks").mkdir(parents=True)
    outside.mkdir()
    (shared / "notes.md").write_text("SHARED-NOTES\n")
    (outside / "secret.txt").write_text("OUTSIDE-SECRET\n")
    script = f"""
    turns:
      - tool_calls: [{{name: Read, arguments: {{file_path: ../shared/notes.md}}}}]
      - tool_calls: [{{name: Write, arguments: {{file_path: {shared}/out.md, content: "from the agent"}}}}]
      - tool_calls: [{{name: Read, arguments: {{file_path: {outside}/secret.txt}}}}]
      - tool_calls: [{{name: Bash, arguments: {{command: "echo sandboxed > {shared}/bash.txt"}}}}]
      - tool_calls: [{{name: Bash, arguments: {{command: "echo nope > {outside}/bash.txt"}}}}]
      - tool_calls: [{{name: Bash, arguments: {{command: "echo nope > {shared}/.git/hooks/pre-commit"}}}}]
      - text: "done"
    """
    settings = {"permissions": {"additionalDirectories": ["../shared"]}}
    project = Project(tmp_path, script, {".claude/settings.json": json.dumps(settings, indent=2)})
    record = project.home / "record.sh"
    record.write_text(
        f'#!/bin/sh\ncat >> "{project.home}/requests.jsonl"\nprintf "\\n" >> "{project.home}/requests.jsonl"\n'
    )
    record.chmod(0o755)
    config = (project.home / "bearagent" / "config.yaml").read_text()
    project.user_config(config + f"hooks:\n  PreModelRequest:\n    - hooks: [{{type: command, command: {record}}}]\n")

    refused = project.bear("run", "look around")  # a stranger's repository cannot widen access silently
    assert refused.returncode == 2
    assert f".claude/settings.json:3: additional directory {shared.resolve()} lets the file tools" in refused.stderr
    result = project.trusted_run("look around")
    assert result.returncode == 0, result.stderr
    outcomes = project.outcomes()
    assert [(name, kind) for name, kind, _ in outcomes] == [
        ("Read", "Completed"),
        ("Write", "Completed"),
        ("Read", "Failed"),
        ("Bash", "Completed"),
        ("Bash", "Failed"),
        ("Bash", "Failed"),
    ]
    assert "SHARED-NOTES" in outcomes[0][2] and "OUTSIDE-SECRET" not in outcomes[2][2]
    assert (shared / "out.md").read_text() == "from the agent"
    assert (shared / "bash.txt").read_text() == "sandboxed\n"  # the sandbox binds it writable ...
    assert not (outside / "bash.txt").exists()  # ... and nothing else
    assert not (shared / ".git" / "hooks" / "pre-commit").exists()  # its control files stay read-only
    first = json.loads((project.home / "requests.jsonl").read_text().splitlines()[0])["model_request"]
    assert f"Additional working directories (use their absolute paths): {shared.resolve()}" in json.dumps(first)

    settings["permissions"]["additionalDirectories"].append(str(outside))
    (project.ws / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2))
    widened = project.bear("run", "look again")  # a new directory is a new widening: trusted again or refused
    assert widened.returncode == 2 and f"additional directory {outside.resolve()}" in widened.stderr

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
        events = self.events()
        names = {
            call["tool_call_id"]: call["name"]
            for e in events
            if e["event_type"] == "ModelCallCompleted"
            for call in e["payload"].get("tool_calls", [])
        }
        out: list[tuple[str, str, str]] = []
        for e in events:
            if e["event_type"] in ("ToolCallCompleted", "ToolCallFailed"):
                payload = e["payload"]
                kind = str(e["event_type"]).removeprefix("ToolCall")
                out.append((str(names.get(payload.get("tool_call_id"), "?")), kind, json.dumps(payload)))
        return out

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

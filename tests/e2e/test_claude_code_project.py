"""A Claude Code project runs unchanged (issue 17), through the real `bearagent` executable.

The fixture `tests/fixtures/claude_project/` has no `.bearagent/`: `.claude/settings.json` (allow, ask and deny rules,
a PreToolUse guard hook, `env`), `.claude/settings.local.json` (`defaultMode: dontAsk`, a PostToolUse hook),
`.claude/agents/` in the `/agents` wizard's style with `Examples:` and `<example>` blocks, with unquoted colons, a
dotted name, a multi-line description, a misspelt key and a broken file, `.claude/commands/` (with `$ARGUMENTS`,
`$1`, `allowed-tools`, a `!` line and an `@file`), a skill with `allowed-tools`, `.mcp.json` and a `CLAUDE.md` with
imports. The model is the user's own (a scripted entry in the user config, with a user PreModelRequest hook that
records each request), so what the project decides is exactly what its files say.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from tests.support.cli_events import tool_outcomes

BEARAGENT = str(Path(sys.executable).parent / "bearagent")
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "claude_project"
SAME_FILE = "git diff --no-index --stat docs/conventions.md docs/conventions.md"

MAIN = f"""
turns:
  - tool_calls: [{{name: Bash, arguments: {{command: "echo bash-env=${{FIXTURE_ENV:-unset}}"}}}}]
  - tool_calls: [{{name: Bash, arguments: {{command: "curl https://example.com"}}}}]
  - tool_calls: [{{name: Bash, arguments: {{command: "echo rm -rf build"}}}}]
  - tool_calls: [{{name: Bash, arguments: {{command: "git push origin main"}}}}]
  - tool_calls: [{{name: Read, arguments: {{file_path: .env}}}}]
  - tool_calls: [{{name: Write, arguments: {{file_path: .env, content: "overwritten"}}}}]
  - tool_calls: [{{name: mcp__notes__note_env, arguments: {{}}}}]
  - tool_calls: [{{name: Task, arguments: {{subagent_type: code-reviewer, prompt: "review the change"}}}}]
  - text: "LGTM from code-reviewer"
  - tool_calls: [{{name: Task, arguments: {{subagent_type: powershell-5.1-expert, prompt: "check deploy.ps1"}}}}]
  - text: "PowerShell looks fine"
  - tool_calls: [{{name: Bash, arguments: {{command: "{SAME_FILE}"}}}}]
  - tool_calls: [{{name: Skill, arguments: {{name: commit-helper}}}}]
  - tool_calls: [{{name: Bash, arguments: {{command: "{SAME_FILE}"}}}}]
  - text: "All done."
"""
COMMAND = f"""
turns:
  - tool_calls: [{{name: Bash, arguments: {{command: "{SAME_FILE}"}}}}]
  - tool_calls: [{{name: Bash, arguments: {{command: "echo not-pre-approved && ls"}}}}]
  - text: "Reviewed the pull request."
"""


class Project:
    def __init__(self, tmp_path: Path) -> None:
        self.ws = tmp_path / "ws"
        shutil.copytree(FIXTURE, self.ws)
        self.home = tmp_path / "home"
        (self.home / "bearagent").mkdir(parents=True)
        self.requests = self.home / "requests.jsonl"
        record = self.home / "record.sh"
        record.write_text(f'#!/bin/sh\ncat >> "{self.requests}"\nprintf "\\n" >> "{self.requests}"\n')
        record.chmod(0o755)
        for name, script in (("main", MAIN), ("command", COMMAND)):
            (self.home / f"{name}.yaml").write_text(script)
        self.use("main")

    def use(self, model: str) -> None:
        """The user's own config (trusted): the scripted model of this step and the request recorder."""
        (self.home / "bearagent" / "config.yaml").write_text(
            f"default_model: {model}\nmodels:\n"
            f"  main: {{provider: scripted, script: {self.home / 'main.yaml'}}}\n"
            f"  command: {{provider: scripted, script: {self.home / 'command.yaml'}}}\n"
            f"hooks:\n  PreModelRequest:\n    - hooks: [{{type: command, command: {self.home / 'record.sh'}}}]\n"
        )

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "BEARAGENT_HOME": str(self.home / "bearagent"),
            "BEARAGENT_LOAD_PLUGINS": "",
            "NO_COLOR": "1",
            "PYTHON": sys.executable,  # .mcp.json starts its server with ${PYTHON:-python3}
        }

    def bear(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [BEARAGENT, *args], cwd=self.ws, env=self.env, capture_output=True, text=True, timeout=120, check=False
        )

    def outcomes(self) -> list[tuple[str, str, str]]:
        """(tool name, ToolCallCompleted|ToolCallFailed, result text) of the last top-level run, in order."""
        result = self.bear("events", "last", "--json")
        assert result.returncode == 0, result.stderr
        return tool_outcomes([json.loads(line) for line in result.stdout.splitlines()])

    def goal(self) -> str:
        result = self.bear("events", "last", "--json")
        created = next(json.loads(line) for line in result.stdout.splitlines() if '"RunCreated"' in line)
        return str(created["payload"]["goal"])


@pytest.fixture
def project(tmp_path: Path) -> Project:
    return Project(tmp_path)


def test_refused_before_trust_and_nothing_of_the_project_runs(project: Project) -> None:
    result = project.bear("run", "do the work")
    assert result.returncode == 2, result.stderr
    for item in (
        ".claude/settings.json:4: permissions.allow 'Bash(echo:*)' lets calls run without asking",
        ".claude/settings.json:9: env FIXTURE_ENV is set for hook commands and MCP servers",
        ".claude/settings.json:15: command hook on PreToolUse (Bash) runs",
        ".claude/settings.local.json:7: command hook on PostToolUse (mcp__notes__.*) runs '.claude/hooks/after-mcp.sh'",
        ".claude/hooks/guard.sh: file run by hook PreToolUse[Bash]#1",
        ".mcp.json:3: MCP server 'notes' (stdio) runs '${PYTHON:-python3} .claude/mcp/notes_server.py'",
        ".claude/skills/commit-helper/SKILL.md:4: skill commit-helper pre-approves 'Bash(git add:*)'",
        ".claude/commands/review.md:4: command /review pre-approves 'Bash(git diff:*)'",
    ):
        assert item in result.stderr, (item, result.stderr)
    assert f"bearagent trust -w {project.ws.resolve()}" in result.stderr
    assert not (project.ws / "hook-log.txt").exists() and not project.requests.exists()  # no hook, no model call
    # the warnings are shown before anything else, folded, even when the run is refused
    assert "(those files were skipped)" in result.stderr  # typo-agent's `tool:` skips it
    assert "hook event 'WorktreeCreate' is a Claude Code event BearAgent never fires" in result.stderr


def test_after_trust_every_rule_hook_delegation_and_grant_behaves_as_in_claude_code(project: Project) -> None:
    assert project.bear("trust", "-y").returncode == 0
    result = project.bear("run", "do the work")
    assert result.returncode == 0, result.stderr
    assert "All done." in result.stdout
    outcomes = project.outcomes()
    assert [(name, kind.removeprefix("ToolCall")) for name, kind, _ in outcomes] == [
        ("Bash", "Completed"),  # allow rule Bash(echo:*), in dontAsk (settings.local.json)
        ("Bash", "Failed"),  # deny Bash(curl:*)
        ("Bash", "Failed"),  # the PreToolUse guard hook exits 2
        ("Bash", "Failed"),  # ask Bash(git push:*): nobody to approve in a non-interactive run
        ("Read", "Failed"),  # deny Read(./.env)
        ("Write", "Failed"),  # ... which also denies writing it
        ("mcp__notes__note_env", "Completed"),  # .mcp.json server, allowed by its rule
        ("Task", "Completed"),  # delegation to a wizard-style agent by name
        ("Task", "Completed"),  # ... and to one with a dot in its name
        ("Bash", "Failed"),  # dontAsk: not pre-approved
        ("Skill", "Completed"),
        ("Bash", "Completed"),  # the skill's allowed-tools Bash(git diff:*) now pre-approve it
    ]
    texts = [text for _, _, text in outcomes]
    assert "bash-env=unset" in texts[0]  # settings env never reaches Bash
    assert "Bash(curl:*)" in texts[1] and "permissions.deny" in texts[1]
    assert "blocked by the fixture guard: no recursive deletes" in texts[2]
    assert "Bash(git push:*)" in texts[3] and "needs approval" in texts[3]
    assert "Read(./.env)" in texts[4] and "Read(./.env)" in texts[5]
    assert (project.ws / ".env").read_text() == "SECRET_TOKEN=do-not-read\n"
    assert "FIXTURE_ENV=from-claude-settings" in texts[6]  # settings env reaches MCP servers
    assert "LGTM from code-reviewer" in texts[7] and "PowerShell looks fine" in texts[8]
    assert "dontAsk" in texts[9]
    assert "these calls run without asking: Bash(git add:*), Bash(git diff:*)" in texts[10]

    log = (project.ws / "hook-log.txt").read_text().splitlines()
    pre = [json.loads(line.removeprefix("pre ").rsplit(" env=", 1)[0]) for line in log if line.startswith("pre ")]
    assert pre[0]["hook_event_name"] == "PreToolUse" and pre[0]["tool_name"] == "Bash"
    assert pre[0]["tool_input"]["command"] == "echo bash-env=${FIXTURE_ENV:-unset}"
    assert all(line.endswith("env=from-claude-settings") for line in log if line.startswith("pre "))
    post = [json.loads(line.removeprefix("post ")) for line in log if line.startswith("post ")]
    assert [p["tool_name"] for p in post] == ["mcp__notes__note_env"]  # settings.local.json's hook

    first = json.loads(project.requests.read_text().splitlines()[0])["model_request"]
    system = json.dumps(first["messages"][0])
    assert "# Project notes" in system and "FIXTURE-CONVENTIONS-MARKER" in system and "FIXTURE-TESTING-MARKER" in system
    assert "NOT-IMPORTED-MARKER" not in system  # an @path in a code block is text
    task = next(t for t in first["tools"] if t["name"] == "Task")
    enum = task["input_schema"]["properties"]["subagent_type"]["enum"]
    # typo-agent (`tool:` for `tools:`) is skipped rather than run with every tool (issue 32)
    assert enum == ["code-reviewer", "data-analyst", "explore", "powershell-5.1-expert", "release-notes"]
    assert (
        "- data-analyst: Use when analysing experiment results. Triggers on: 'analyze A/B test'" in task["description"]
    )
    assert "- code-reviewer: Use this agent when you need to review code" in task["description"]


def test_a_custom_command_runs_with_its_arguments_file_and_allowed_tools(project: Project) -> None:
    assert project.bear("trust", "-y").returncode == 0
    project.use("command")
    result = project.bear("action", "run", "review", "42", "security")
    assert result.returncode == 0, result.stderr
    assert "note: not run: `git diff HEAD`" in result.stderr
    goal = project.goal()
    assert "Review pull request #42 with a focus on security. The full request was: 42 security" in goal
    assert "[not run: `git diff HEAD`" in goal
    assert '<file path="docs/conventions.md">\n# Conventions' in goal
    outcomes = project.outcomes()
    assert outcomes[0][1] == "ToolCallCompleted"  # allowed-tools: Bash(git diff:*)
    assert outcomes[1][1] == "ToolCallFailed" and "dontAsk" in outcomes[1][2]  # `ls` is not pre-approved


def test_the_same_command_in_the_interactive_session(project: Project) -> None:
    assert project.bear("trust", "-y").returncode == 0
    project.use("command")
    child: pexpect.spawn[str] = pexpect.spawn(
        BEARAGENT,
        ["-w", str(project.ws)],
        env={**project.env, "TERM": "xterm"},
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 200),
    )
    try:
        child.expect("those files were skipped")  # the start of the session counts the skipped typo-agent
        child.expect("build>")
        child.sendline("/help")
        child.expect(r"/frontend:component +Scaffold a UI component")
        child.expect(r"/review \[pr-number\] \[focus\] +Review a pull request")
        child.expect("build>")
        child.sendline("/review 7 docs")
        child.expect("not run: `git diff HEAD`")
        child.expect("Reviewed the pull request.")
        child.expect("build>")
        child.sendline("/exit")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert "Review pull request #7 with a focus on docs." in project.goal()
    assert project.outcomes()[0][1] == "ToolCallCompleted"


def test_a_skipped_agent_and_a_broken_settings_file_say_why(project: Project) -> None:
    assert project.bear("trust", "-y").returncode == 0
    broken = project.bear("run", "-a", "broken", "hello")
    assert broken.returncode == 2
    assert "error: agent 'broken' was not loaded: " in broken.stderr and "broken.md:4: invalid YAML" in broken.stderr
    settings = project.ws / ".claude" / "settings.json"
    settings.write_text(settings.read_text().replace('"Bash(curl:*)",', '"Bash(curl:*)",,'))
    stopped = project.bear("run", "hello")
    assert stopped.returncode == 2
    assert f"{settings}:6: invalid JSON in .claude/settings.json" in stopped.stderr
    assert "BearAgent will not run without it" in stopped.stderr

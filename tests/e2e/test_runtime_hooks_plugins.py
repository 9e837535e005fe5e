"""Claude Code hook scripts and plugins in real runs: gate, rewrite, observe; event sinks; plugin permissions."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent import hookimpl
from bearagent.api import open_workspace
from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import Event
from bearagent.plugins.contributions import PythonHookHandler
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

SCRIPTS = Path(__file__).resolve().parents[1] / "support" / "hook_scripts"
MAIN = {"main": agent_md("Main.", mode="primary", tools="[Read, Bash]")}


def _trusted(root: Path, home: Path) -> None:
    env = isolated_env(home)
    loaded = load(root, home)
    trust(root, workspace_trust_surface(loaded), env=env)


def test_claude_code_scripts_gate_add_context_and_observe_a_run(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "rm -rf build"}}]
  - tool_calls: [{name: Bash, arguments: {command: "echo safe"}}]
  - text: "done"
"""
    config = (
        CONFIG
        + """
permissions: {allow: ["Bash(echo *)", "Bash(rm *)"]}
hooks:
  UserPromptSubmit:
    - hooks: [{type: command, command: .claude/hooks/user_prompt_context.py}]
  PreToolUse:
    - matcher: Bash
      hooks: [{type: command, command: .claude/hooks/block-rm.sh}]
  PostToolUse:
    - matcher: "*"
      hooks: [{type: command, command: .claude/hooks/log-tool-use.sh}]
"""
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    hooks_dir = root / ".claude" / "hooks"
    hooks_dir.mkdir(parents=True)
    for name in ("block-rm.sh", "log-tool-use.sh", "user_prompt_context.py"):
        shutil.copy2(SCRIPTS / name, hooks_dir / name)
    home = tmp_path / "home"
    # log-tool-use.sh appends to .claude/tool-log.jsonl, a control file: after the model's Bash call hooks run in
    # the sandbox (docs/security.md), where .claude/ is read-only, so this user runs them as configured
    write(home / "bearagent", "config.yaml", "sandbox: {hooks_after_writes: unconfined}\n")
    _trusted(root, home)
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        result = ws.run_sync("clean up please")
        assert result.status == "succeeded", result.error
        events = ws.events(str(result.run_id))
    results = [e for e in events if e.event_type in ("ToolCallCompleted", "ToolCallFailed")]
    assert results[0].event_type == "ToolCallFailed"
    assert "Blocked: rm -rf commands are not allowed" in json.dumps(results[0].model_dump(mode="json")["payload"])
    assert results[1].event_type == "ToolCallCompleted"
    hook_runs = [e.payload for e in events if e.event_type == "HookExecuted"]
    assert {str(p["hook_event"]) for p in hook_runs} >= {"UserPromptSubmit", "PreToolUse", "PostToolUse"}
    blocked = [p for p in hook_runs if p["hook_event"] == "PreToolUse" and p["decision"] == "block"]
    assert len(blocked) == 1
    log_lines = (root / ".claude" / "tool-log.jsonl").read_text().splitlines()
    logged = json.loads(log_lines[-1])
    assert logged["tool"] == "Bash"
    assert logged["input"]["command"] == "echo safe"
    assert set(logged["response"]) >= {"stdout", "stderr", "exit_code", "interrupted"}
    assert logged["response"]["stdout"].strip() == "safe"
    # the UserPromptSubmit hook's context ("Current time: ...") reached the model's first request
    transcript_dir = root / ".bearagent" / "transcripts"
    assert list(transcript_dir.glob("*.jsonl"))


REWRITE_HOOK = """#!/usr/bin/env python3
import json
import sys

data = json.load(sys.stdin)
command = data["tool_input"]["command"]
if command.startswith("echo "):
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "updatedInput": {"command": command.replace("echo ", "echo rewritten: ", 1)},
        }
    }))
sys.exit(0)
"""


def test_a_pretooluse_hook_rewrites_the_tool_input_of_a_real_run(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "echo hello"}}]
  - text: "done"
"""
    config = (
        CONFIG
        + """
hooks:
  PreToolUse:
    - matcher: Bash
      hooks: [{type: command, command: .claude/hooks/rewrite.py, capabilities: [rewrite, block]}]
"""
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    write(root, ".claude/hooks/rewrite.py", REWRITE_HOOK, executable=True)
    home = tmp_path / "home"
    _trusted(root, home)
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        result = ws.run_sync("say hello")
        assert result.status == "succeeded", result.error
        events = [e.model_dump(mode="json") for e in ws.events(str(result.run_id))]
    done = next(e["payload"]["result"] for e in events if e["event_type"] == "ToolCallCompleted")
    assert done["data"]["stdout"].strip() == "rewritten: hello"
    hook = next(e["payload"] for e in events if e["event_type"] == "HookExecuted")
    assert hook["hook_event"] == "PreToolUse"


def test_a_hook_whose_command_is_missing_refuses_the_run(tmp_path: Path) -> None:
    config = (
        CONFIG
        + """
hooks:
  PreToolUse:
    - matcher: Bash
      hooks: [{type: command, command: .claude/hooks/does-not-exist.sh, on_failure: block}]
"""
    )
    root = scripted_workspace(tmp_path / "ws", "turns:\n  - text: hi\n", agents=MAIN, config=config)
    home = tmp_path / "home"
    _trusted(root, home)
    with (
        open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws,
        pytest.raises(BearAgentError, match="hook entr"),
    ):
        ws.run_sync("hi")


class _Recorder:
    def __init__(self) -> None:
        self.seen: list[Event] = []

    @hookimpl
    def register_event_sinks(self, register: object) -> None:
        assert callable(register)
        register(self.seen.append)
        register(self._explode)

    def _explode(self, event: Event) -> None:
        raise RuntimeError("a broken sink")


class _NoBash:
    @hookimpl
    def resolve_permission(
        self, tool_name: str, tool_input: object, agent_name: str, workspace_root: Path
    ) -> str | None:
        return "deny" if tool_name == "Bash" else None


def test_event_sinks_see_every_committed_event_and_cannot_break_the_run(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", "turns:\n  - text: hi\n", agents=MAIN)
    recorder = _Recorder()
    host = PluginHost()
    host.register(recorder, "recorder")
    with open_workspace(root, env=isolated_env(tmp_path / "home"), plugins=host) as ws:
        result = ws.run_sync("hi")
        assert result.status == "succeeded"
        stored = ws.events(str(result.run_id))
    assert [e.event_id for e in recorder.seen] == [e.event_id for e in stored]


def test_a_permission_plugin_denies_a_tool_call(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "echo hi"}}]
  - text: "ok"
"""
    config = (
        CONFIG
        + """
permissions: {allow: ["Bash(echo *)"]}
"""
    )
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    _trusted(root, tmp_path / "home")
    host = PluginHost()
    host.register(_NoBash(), "nobash")
    with open_workspace(root, env=isolated_env(tmp_path / "home"), plugins=host) as ws:
        result = ws.run_sync("run it")
        failed = [e.model_dump(mode="json") for e in ws.events(str(result.run_id)) if e.event_type == "ToolCallFailed"]
    assert len(failed) == 1
    assert failed[0]["payload"]["result"]["error"]["category"] == "permission"


class _NoForcePush:
    @hookimpl
    def register_hook_handlers(self, register: Callable[[PythonHookHandler], None]) -> None:
        register(
            PythonHookHandler(
                event="PreToolUse",
                matcher="Bash",
                callback=self.guard,
                name="no-force-push",
                capabilities=frozenset({"block"}),
                on_failure="block",
            )
        )

    @staticmethod
    def guard(hook_input: Mapping[str, JsonValue]) -> Mapping[str, JsonValue] | None:
        tool_input = hook_input.get("tool_input")
        command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
        if isinstance(command, str) and "--force" in command:
            return {"decision": "block", "reason": "force push is not allowed here"}
        return None


def test_a_plugin_python_hook_gates_a_real_run(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Bash, arguments: {command: "git push --force"}}]
  - tool_calls: [{name: Bash, arguments: {command: "echo fine"}}]
  - text: "ok"
"""
    # both commands are allowed by rule, so only the plugin's hook can stop the first
    config = CONFIG + 'permissions: {allow: ["Bash(git push *)", "Bash(echo *)"]}\n'
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    _trusted(root, tmp_path / "home")
    host = PluginHost()
    host.register(_NoForcePush(), "noforce")
    with open_workspace(root, env=isolated_env(tmp_path / "home"), plugins=host) as ws:
        result = ws.run_sync("push it")
        events = [e.model_dump(mode="json") for e in ws.events(str(result.run_id))]
    outcomes = [e for e in events if e["event_type"] in ("ToolCallCompleted", "ToolCallFailed")]
    assert [e["event_type"] for e in outcomes] == ["ToolCallFailed", "ToolCallCompleted"]
    assert "force push is not allowed here" in outcomes[0]["payload"]["result"]["content"]
    hooks = [e["payload"] for e in events if e["event_type"] == "HookExecuted"]
    decisions = [h["decision"] for h in hooks if h["handler_type"] == "python"]
    assert decisions[0] in ("block", "deny"), decisions
    assert decisions[1] == "none", decisions


def test_a_subagents_own_stop_hook_fires_as_subagent_stop(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "look around"}}]
  - text: "scout done"
  - text: "all done"
"""
    scout = (
        "---\ndescription: Finds things.\nmode: subagent\ntools: [Read]\n"
        "hooks:\n  Stop:\n    - hooks: [{type: command, command: .claude/hooks/log-stop.sh}]\n---\nLook around.\n"
    )
    agents = {"main": agent_md("Main.", mode="primary", tools="[Read]", subagents="[scout]"), "scout": scout}
    root = scripted_workspace(tmp_path / "ws", script, agents=agents)
    write(
        root,
        ".claude/hooks/log-stop.sh",
        '#!/bin/sh\njq -c "{event: .hook_event_name, agent: .agent_name}" >> "$CLAUDE_PROJECT_DIR/stop-log.jsonl"\n',
        executable=True,
    )
    home = tmp_path / "home"
    _trusted(root, home)
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        result = ws.run_sync("delegate")
        assert result.status == "succeeded", result.error
    logged = [json.loads(line) for line in (root / "stop-log.jsonl").read_text().splitlines()]
    assert logged == [{"event": "SubagentStop", "agent": "scout"}]


def test_every_lifecycle_hook_fires_in_order_with_claude_code_fields(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Task, arguments: {subagent_type: scout, prompt: "look around"}}]
  - text: "scout done"
  - tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "all done"
"""
    events = [
        "SessionStart",
        "UserPromptSubmit",
        "PreModelRequest",
        "PreToolUse",
        "PostToolUse",
        "SubagentStart",
        "SubagentStop",
        "Stop",
        "SessionEnd",
    ]
    hooks = "".join(f"  {e}:\n    - hooks: [{{type: command, command: .claude/hooks/log.sh}}]\n" for e in events)
    agents = {
        "main": agent_md("Main.", mode="primary", tools="[Read]", subagents="[scout]"),
        "scout": agent_md("Finds things.", mode="subagent", tools="[Read]"),
    }
    root = scripted_workspace(tmp_path / "ws", script, agents=agents, config=CONFIG + "hooks:\n" + hooks)
    write(root, "notes.md", "notes\n")
    write(
        root,
        ".claude/hooks/log.sh",
        '#!/bin/sh\njq -c "{e: .hook_event_name, s: .session_id, t: .transcript_path, a: .agent_name}"'
        ' >> "$CLAUDE_PROJECT_DIR/hook-log.jsonl"\n',
        executable=True,
    )
    home = tmp_path / "home"
    _trusted(root, home)
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        result = ws.run_sync("go")
        assert result.status == "succeeded", result.error
    logged = [json.loads(line) for line in (root / "hook-log.jsonl").read_text().splitlines()]
    order = [entry["e"] for entry in logged]
    assert order[0] == "SessionStart"
    assert order[-1] == "SessionEnd"
    for name in events:
        assert name in order, (name, order)
    assert order.index("SubagentStart") < order.index("SubagentStop") < order.index("Stop")
    sessions = {entry["s"] for entry in logged}
    assert sessions == {str(result.session_id)}
    assert all(Path(entry["t"]).is_file() for entry in logged)

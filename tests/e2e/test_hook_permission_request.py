"""Claude Code's PermissionRequest hook event in real runs: a hook script (Python or shell, reading its stdin JSON)
answers the approval prompt before anyone sees it, as Claude Code's `hookSpecificOutput.decision` writes it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.events import Event
from bearagent.trust import trust, workspace_trust_surface

MAIN = {"main": agent_md("Main.", mode="primary", tools="[Read, Write]")}

PY_HOOK = """#!/usr/bin/env python3
import json
import os
import sys

data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "permission-log.jsonl"), "a") as log:
    log.write(json.dumps(data) + "\\n")
path = data["tool_input"].get("file_path", "")
if path == "ok.txt":
    decision = {"behavior": "allow", "updatedInput": {"file_path": "ok.txt", "content": "rewritten by the hook\\n"}}
elif path == "no.txt":
    decision = {"behavior": "deny", "message": "no.txt is off limits"}
else:
    sys.exit(0)  # no opinion: the prompt goes on as before
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": decision}}))
"""

SH_HOOK = """#!/bin/sh
# approve every prompt (a person still answers for control files)
input=$(cat)
printf '%s\\n' "$input" >> "$CLAUDE_PROJECT_DIR/shell-permission-log.jsonl"
printf '{"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}}\\n'
"""


def _workspace(tmp_path: Path, script: str, hooks: str) -> tuple[Path, Path]:
    config = CONFIG + "permission_mode: default\n" + hooks
    root = scripted_workspace(tmp_path / "ws", script, agents=MAIN, config=config)
    write(root, ".claude/hooks/permission.py", PY_HOOK, executable=True)
    write(root, ".claude/hooks/permission.sh", SH_HOOK, executable=True)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, home


def _lines(path: Path) -> list[dict[str, JsonValue]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _facts(events: Sequence[Event], event: str) -> list[Mapping[str, JsonValue]]:
    return [e.payload for e in events if e.event_type == "HookExecuted" and e.payload["hook_event"] == event]


def _log_text(events: Sequence[Event]) -> str:
    return "\n".join(json.dumps(thaw_json_mapping(e.payload)) for e in events)


def test_a_python_permission_request_hook_allows_rewrites_and_denies_before_anyone_is_asked(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: seen.txt}}]
  - tool_calls: [{name: Write, arguments: {file_path: ok.txt, content: "from the model\\n"}}]
  - tool_calls: [{name: Write, arguments: {file_path: no.txt, content: "x\\n"}}]
  - tool_calls: [{name: Write, arguments: {file_path: other.txt, content: "x\\n"}}]
  - text: "Done."
"""
    hooks = """
hooks:
  PermissionRequest:
    - matcher: Write
      hooks: [{type: command, command: .claude/hooks/permission.py}]
"""
    root, home = _workspace(tmp_path, script, hooks)
    (root / "seen.txt").write_text("seen\n")

    async def go() -> str:
        async with open_ws(root, home) as ws:
            result = await ws.run("write the files")  # nobody can answer a prompt in this run
            assert result.status == "succeeded", result.error
            events = list(ws.events(str(result.run_id)))
            assert [f["decision"] for f in _facts(events, "PermissionRequest")] == ["allow", "deny", "none"]
            return _log_text(events)

    log = asyncio.run(go())
    assert (root / "ok.txt").read_text() == "rewritten by the hook\n"  # allowed, with the hook's input
    assert not (root / "no.txt").exists() and not (root / "other.txt").exists()
    assert "Write call was denied by a PermissionRequest hook: no.txt is off limits" in log  # the model reads why
    assert "Nobody can approve it in this non-interactive run" in log  # other.txt: no opinion, denied as before
    inputs = _lines(root / "permission-log.jsonl")
    assert [i["tool_input"]["file_path"] for i in inputs] == ["ok.txt", "no.txt", "other.txt"]  # type: ignore[index]
    first = inputs[0]
    assert first["hook_event_name"] == "PermissionRequest" and first["tool_name"] == "Write"
    assert "tool_use_id" not in first  # as in Claude Code
    suggestion = {"toolName": "Edit", "ruleContent": "/ok.txt"}  # the rule "allow always" would add
    assert first["permission_suggestions"] == [
        {"type": "addRules", "rules": [suggestion], "behavior": "allow", "destination": "session"}
    ]
    assert {"session_id", "transcript_path", "cwd", "permission_mode"} <= set(first)
    assert first["permission_mode"] == "default"


def test_a_shell_hooks_allow_answers_prompts_but_not_those_only_a_person_may_answer(tmp_path: Path) -> None:
    script = """
turns:
  - tool_calls: [{name: Write, arguments: {file_path: out.txt, content: "made\\n"}}]
  - tool_calls: [{name: Write, arguments: {file_path: AGENTS.md, content: "# new rules\\n"}}]
  - text: "Done."
"""
    hooks = """
hooks:
  PermissionRequest:
    - hooks: [{type: command, command: .claude/hooks/permission.sh}]
"""
    root, home = _workspace(tmp_path, script, hooks)

    async def go() -> None:
        async with open_ws(root, home) as ws:
            waiting = await ws.run("write both", wait_approvals=True)
            assert (root / "out.txt").read_text() == "made\n"  # the hook answered this prompt
            assert waiting.status == "waiting" and not (root / "AGENTS.md").exists()  # a control file: a person
            info = ws.run_info(str(waiting.run_id))
            assert info.pending_approval is not None and info.pending_approval.tool_name == "Write"
            events = list(ws.events(str(waiting.run_id)))
            assert [f["decision"] for f in _facts(events, "PermissionRequest")] == ["allow", "allow"]
            done = await ws.answer_approval(str(waiting.run_id), info.pending_approval.approval_id, "deny")
            assert done is not None and done.status == "succeeded"

    asyncio.run(go())
    logged = _lines(root / "shell-permission-log.jsonl")
    assert [i["tool_input"]["file_path"] for i in logged] == ["out.txt", "AGENTS.md"]  # type: ignore[index]
    assert not (root / "AGENTS.md").exists()

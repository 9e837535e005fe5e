"""Claude Code's Elicitation / ElicitationResult hooks around a real MCP server that asks a question mid-call
(tests/support/mcp_servers/asker.py over stdio): a shell Elicitation hook reading its stdin JSON answers the form
for staging and declines prod with exit 2; a Python ElicitationResult hook sees every answer and amends the
accepted one; the server gets the answers, the model reads the tool results, and the log keeps each hook's facts."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.mcp_helpers import server_in_workspace
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.trust import trust, workspace_trust_surface

SCRIPT = """
turns:
  - tool_calls: [{name: mcp__asker__deploy, arguments: {target: staging}}]
  - tool_calls: [{name: mcp__asker__deploy, arguments: {target: prod}}]
  - text: "done"
"""

ELICIT_HOOK = """#!/bin/sh
# answer the deploy question: staging is fine, prod never from an agent
input=$(cat)
printf '%s\\n' "$input" >> "$CLAUDE_PROJECT_DIR/elicit-log.jsonl"
case "$input" in
  *"deploy to prod"*) echo "no prod deploys from an agent" >&2; exit 2 ;;
esac
echo '{"hookSpecificOutput": {"hookEventName": "Elicitation", "action": "accept", "content": {"proceed": true, "reason": "staging is fine"}}}'
"""

RESULT_HOOK = """#!/usr/bin/env python3
import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "result-log.jsonl"), "a") as log:
    log.write(json.dumps(data) + "\\n")
if data["action"] == "accept":
    content = dict(data["content"], reason=data["content"]["reason"] + " (reviewed)")
    print(json.dumps({"hookSpecificOutput": {"hookEventName": "ElicitationResult", "action": "accept",
                                             "content": content}}))
"""


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    agents = {"main": agent_md("Main.", mode="primary", tools="[]", mcp="[asker]")}
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents=agents, config=CONFIG)
    write(
        root,
        ".mcp.json",
        json.dumps(
            {"mcpServers": {"asker": {"command": sys.executable, "args": [str(server_in_workspace(root, "asker.py"))]}}}
        ),
    )
    settings: dict[str, JsonValue] = {
        "hooks": {
            "Elicitation": [{"matcher": "asker", "hooks": [{"type": "command", "command": ".claude/hooks/elicit.sh"}]}],
            "ElicitationResult": [{"hooks": [{"type": "command", "command": ".claude/hooks/result.py"}]}],
        }
    }
    write(root, ".claude/settings.json", json.dumps(settings))
    write(root, ".claude/hooks/elicit.sh", ELICIT_HOOK, executable=True)
    write(root, ".claude/hooks/result.py", RESULT_HOOK, executable=True)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, home


def _lines(path: Path) -> list[dict[str, JsonValue]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_elicitation_hooks_answer_and_amend_a_servers_question(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path)

    async def go() -> list[dict[str, JsonValue]]:
        async with open_ws(root, home) as ws:
            result = await ws.run("deploy it")
            assert result.status == "succeeded", result.error
            return [{"type": e.event_type, **thaw_json_mapping(e.payload)} for e in ws.events(str(result.run_id))]

    events = asyncio.run(go())
    results = [json.dumps(e) for e in events if e["type"] == "ToolCallCompleted"]
    assert len(results) == 2
    assert "deploy staging: accept proceed=True reason=staging is fine (reviewed)" in results[0]
    assert "deploy prod: decline" in results[1]
    assert "BearAgent declined" not in results[1]  # a hook answered: no "ask the user" note

    asked = _lines(root / "elicit-log.jsonl")
    assert [a["message"] for a in asked] == ["Really deploy to staging?", "Really deploy to prod?"]
    first = asked[0]
    assert first["hook_event_name"] == "Elicitation" and first["mcp_server_name"] == "asker"
    assert first["mode"] == "form"
    schema = first["requested_schema"]
    assert isinstance(schema, dict) and set(schema["properties"]) == {"proceed", "reason"}  # pyright: ignore[reportArgumentType]
    assert {"session_id", "transcript_path", "cwd", "permission_mode"} <= set(first)

    seen = _lines(root / "result-log.jsonl")
    assert [(s["action"], s.get("content")) for s in seen] == [
        ("accept", {"proceed": True, "reason": "staging is fine"}),
        ("decline", None),
    ]
    assert all(s["hook_event_name"] == "ElicitationResult" and s["mcp_server_name"] == "asker" for s in seen)

    # the log: each hook execution is a fact, with the answer the hook gave
    hooks = [e for e in events if e["type"] == "HookExecuted"]
    elicit = [h for h in hooks if h["hook_event"] == "Elicitation"]
    assert [h["decision"] for h in elicit] == ["none", "block"]
    assert '"action": "accept"' in json.dumps(elicit[0]["output"])
    assert elicit[1]["reason"] == "no prod deploys from an agent"
    assert [h["hook_event"] for h in hooks].count("ElicitationResult") == 2

"""Context a hook gives outside a prompt reaches the model with the session's next prompt, as in Claude Code: a
SessionStart hook's `additionalContext` (a Python script reading its stdin JSON) arrives with the session's first
prompt, and what a plain `async` hook (a shell script) answers as `systemMessage` / `additionalContext` arrives with
the prompt after the one whose tool call fired it, in the same process or, kept on the session record, in the next."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.trust import trust, workspace_trust_surface

SCRIPT = """
turns:
  - tool_calls: [{name: Read, arguments: {file_path: notes.txt}}]
  - text: "first answer"
  - text: "second answer"
  - text: "third answer"
"""

START_HOOK = """#!/usr/bin/env python3
import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "start-log.jsonl"), "a") as log:
    log.write(json.dumps(data) + "\\n")
print(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart",
                  "additionalContext": "Explain each choice you make (source: " + data["source"] + ")."}}))
"""

ASYNC_HOOK = """#!/bin/sh
# a slow linter run in the background: its verdict is for the model's next turn
input=$(cat)
case "$input" in *notes.txt*) ;; *) exit 1 ;; esac
sleep 0.3
echo '{"systemMessage": "lint: 2 warnings in notes.txt", "hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "fix them before you go on"}}'
"""

SETTINGS: dict[str, JsonValue] = {
    "hooks": {
        "SessionStart": [{"hooks": [{"type": "command", "command": ".claude/hooks/start.py"}]}],
        "PostToolUse": [
            {"matcher": "Read", "hooks": [{"type": "command", "command": ".claude/hooks/lint.sh", "async": True}]}
        ],
    }
}


def _workspace(tmp_path: Path) -> tuple[Path, Path]:
    root = scripted_workspace(
        tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary")}, config=CONFIG
    )
    write(root, ".claude/settings.json", json.dumps(SETTINGS))
    write(root, ".claude/hooks/start.py", START_HOOK, executable=True)
    write(root, ".claude/hooks/lint.sh", ASYNC_HOOK, executable=True)
    write(root, "notes.txt", "some notes\n")
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, home


def _injected(events: list[object]) -> list[str]:
    out: list[str] = []
    for e in events:
        if getattr(e, "event_type", None) == "MessageInjected":
            payload = thaw_json_mapping(e.payload)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownArgumentType]
            assert payload["kind"] == "prompt_context"
            out.append(str(payload["text"]))
    return out


def test_session_start_context_comes_with_the_first_prompt_and_async_output_with_the_next(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path)

    async def go() -> tuple[list[str], list[str]]:
        async with open_ws(root, home) as ws:
            first = await ws.run("read the notes")
            assert first.status == "succeeded", first.error
            second = await ws.run("and now?", session="continue")
            assert second.status == "succeeded", second.error
            return _injected(list(ws.events(str(first.run_id)))), _injected(list(ws.events(str(second.run_id))))

    first, second = asyncio.run(go())
    assert first == ["Explain each choice you make (source: startup)."]  # with the first prompt, once
    assert second == ["lint: 2 warnings in notes.txt\nfix them before you go on"]  # the async verdict, next prompt
    starts = [json.loads(line) for line in (root / "start-log.jsonl").read_text().splitlines()]
    assert [s["source"] for s in starts] == ["startup"]  # one SessionStart for the two runs


def test_async_output_waiting_at_exit_is_kept_for_the_next_process(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path)

    async def one(prompt: str, session: str | None) -> list[str]:
        async with open_ws(root, home) as ws:
            result = await ws.run(prompt, session=session)
            assert result.status == "succeeded", result.error
            return _injected(list(ws.events(str(result.run_id))))

    assert asyncio.run(one("read the notes", None)) == ["Explain each choice you make (source: startup)."]
    # a new process: SessionStart fires again (resume), and the async verdict the first process kept comes first
    assert asyncio.run(one("and now?", "continue")) == [
        "lint: 2 warnings in notes.txt\nfix them before you go on\n\nExplain each choice you make (source: resume)."
    ]

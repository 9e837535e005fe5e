"""Claude Code's InstructionsLoaded hook event in a real run: the project instructions (CLAUDE.md here) and each file
it imports are announced once per session, after SessionStart, to a shell hook reading its stdin JSON."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, open_ws, scripted_workspace

from bearagent.domain._base import JsonValue
from bearagent.trust import trust, workspace_trust_surface

HOOK = """#!/bin/sh
# one line per event: what Claude Code's InstructionsLoaded hooks read
cat >> "$CLAUDE_PROJECT_DIR/instructions-log.jsonl"
echo >> "$CLAUDE_PROJECT_DIR/instructions-log.jsonl"
"""
HOOKS = """
hooks:
  SessionStart:
    - hooks: [{type: command, command: .claude/hooks/log.sh}]
  InstructionsLoaded:
    - matcher: "session_start|include"
      hooks: [{type: command, command: .claude/hooks/log.sh}]
"""


def test_instructions_and_their_imports_are_announced_once_per_session(tmp_path: Path) -> None:
    script = 'turns:\n  - text: "One."\n  - text: "Two."\n'
    root = scripted_workspace(
        tmp_path / "ws", script, agents={"main": agent_md("Main.", mode="primary")}, config=CONFIG + HOOKS
    )
    write(root, "CLAUDE.md", "# Project\nSee @docs/conventions.md for the rules.\n")
    write(root, "docs/conventions.md", "Use tabs.\n")
    write(root, ".claude/hooks/log.sh", HOOK, executable=True)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))

    async def go() -> None:
        async with open_ws(root, home) as ws:
            first = await ws.run("hello")
            assert first.status == "succeeded", first.error
            again = await ws.run("again", session=str(first.session_id))  # the same session: not announced again
            assert again.status == "succeeded", again.error

    asyncio.run(go())
    lines = (root / "instructions-log.jsonl").read_text().splitlines()
    logged: list[dict[str, JsonValue]] = [json.loads(line) for line in lines if line.strip()]
    assert [e["hook_event_name"] for e in logged] == ["SessionStart", "InstructionsLoaded", "InstructionsLoaded"]
    main, imported = logged[1], logged[2]
    assert main["file_path"] == str(root / "CLAUDE.md") and main["load_reason"] == "session_start"
    assert main["memory_type"] == "Project" and "parent_file_path" not in main
    assert imported["file_path"] == str(root / "docs/conventions.md") and imported["load_reason"] == "include"
    assert imported["parent_file_path"] == str(root / "CLAUDE.md")

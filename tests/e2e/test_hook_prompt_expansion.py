"""Claude Code's UserPromptExpansion hook event: a typed slash command (`bearagent action run NAME args`, `/name args`
in the session, the Python API's `run_action`) fires it before UserPromptSubmit, with the command's name, arguments
and source; a hook script (Python or shell, reading its stdin JSON) can add context or block the command."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from click.testing import CliRunner
from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import agent_md, open_ws, scripted_workspace

from bearagent.cli import main
from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.trust import trust, workspace_trust_surface

CONFIG = """
default_agent: main
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml}
"""
SCRIPT = """
turns:
  - text: "Reviewed."
  - text: "Plain."
"""

CONTEXT_HOOK = """#!/usr/bin/env python3
import json
import os
import sys

data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "expansion-log.jsonl"), "a") as log:
    log.write(json.dumps(data) + "\\n")
print("Ticket " + data["command_args"].split()[0] + " is about the login page.")  # plain stdout: context
"""

BLOCK_HOOK = """#!/bin/sh
# refuse /deploy on a Friday (here: always), as Claude Code's exit 2 blocks an expansion
input=$(cat)
printf '%s\\n' "$input" >> "$CLAUDE_PROJECT_DIR/block-log.jsonl"
echo "no deploys from an agent" >&2
exit 2
"""

SETTINGS = {
    "hooks": {
        "UserPromptExpansion": [
            {"matcher": "review", "hooks": [{"type": "command", "command": ".claude/hooks/context.py"}]},
            {"matcher": "deploy", "hooks": [{"type": "command", "command": ".claude/hooks/block.sh"}]},
        ],
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": ".claude/hooks/context.py"}]}],
    }
}


def _workspace(tmp_path: Path, settings: dict[str, JsonValue] | None = None) -> tuple[Path, Path]:
    root = scripted_workspace(
        tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary")}, config=CONFIG
    )
    write(root, ".claude/settings.json", json.dumps(settings or SETTINGS))
    write(root, ".claude/commands/review.md", "---\ndescription: Review a ticket\n---\nReview ticket $1 carefully.\n")
    write(root, ".claude/commands/deploy.md", "---\ndescription: Deploy\n---\nDeploy $ARGUMENTS.\n")
    write(root, ".claude/hooks/context.py", CONTEXT_HOOK, executable=True)
    write(root, ".claude/hooks/block.sh", BLOCK_HOOK, executable=True)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))
    return root, home


def _lines(path: Path) -> list[dict[str, JsonValue]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_command_fires_user_prompt_expansion_whose_context_reaches_the_model(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path)
    result = CliRunner().invoke(
        main, ["action", "run", "-w", str(root), "review", "T-42 urgent"], env=isolated_env(home), prog_name="bearagent"
    )
    assert result.exit_code == 0, result.output
    logged = _lines(root / "expansion-log.jsonl")
    expansion, submit = logged  # UserPromptExpansion first, then UserPromptSubmit
    assert expansion["hook_event_name"] == "UserPromptExpansion"
    assert expansion["expansion_type"] == "slash_command"
    assert (expansion["command_name"], expansion["command_args"]) == ("review", "T-42 urgent")
    assert expansion["command_source"] == "project" and expansion["prompt"] == "/review T-42 urgent"
    assert {"session_id", "transcript_path", "cwd", "permission_mode"} <= set(expansion)
    assert submit["hook_event_name"] == "UserPromptSubmit" and submit["prompt"] == "Review ticket T-42 carefully."

    async def first_request() -> str:
        async with open_ws(root, home) as ws:
            (run,) = ws.runs()
            events = list(ws.events(str(run.run_id)))
            injected = [e.payload for e in events if e.event_type == "MessageInjected"]
            assert len(injected) == 1  # both hooks' context in one fact
            return json.dumps(thaw_json_mapping(injected[0]))

    injected = asyncio.run(first_request())
    assert "Ticket T-42 is about the login page." in injected


def test_a_blocking_expansion_hook_refuses_the_command_and_a_plain_prompt_does_not_fire_it(tmp_path: Path) -> None:
    root, home = _workspace(tmp_path)

    async def go() -> None:
        async with open_ws(root, home) as ws:
            refused = await ws.run_action("deploy", {"arguments": "prod"})
            assert refused.status == "failed" and refused.error is not None
            assert refused.error.code == "hook.prompt_blocked"
            assert "UserPromptExpansion hook blocked the command '/deploy prod': no deploys from an agent" in (
                refused.error.message
            )
            plain = await ws.run("/deploy prod typed as a prompt")  # `run` sends the text as typed: no expansion
            assert plain.status == "succeeded", plain.error

    asyncio.run(go())
    (blocked,) = _lines(root / "block-log.jsonl")
    assert blocked["command_name"] == "deploy" and blocked["command_args"] == "prod"
    assert [e["hook_event_name"] for e in _lines(root / "expansion-log.jsonl")] == ["UserPromptSubmit"]

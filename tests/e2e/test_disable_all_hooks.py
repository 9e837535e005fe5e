"""Claude Code's `disableAllHooks: true` in a project settings file turns off every hook the workspace defines (its
settings files, `.bearagent/config.yaml`, its agent files) in a real run; the user's own hooks keep running."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.api import open_workspace
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

LOG_HOOK = """#!/bin/sh
# append this hook's label and the event name it read on stdin
event=$(sed -n 's/.*"hook_event_name": *"\\([A-Za-z]*\\)".*/\\1/p')
echo "$1 $event" >> "$LOG_FILE"
"""


def _hook(label: str, script: Path) -> str:
    return f"{{type: command, command: {script}, args: [{label}]}}"


def test_disable_all_hooks_keeps_the_workspaces_hooks_off_and_the_users_on(tmp_path: Path) -> None:
    home = tmp_path / "home"
    script = write(tmp_path / "bin", "log.sh", LOG_HOOK, executable=True)
    log = tmp_path / "hooks.log"
    config = CONFIG + f"hooks:\n  UserPromptSubmit:\n    - hooks: [{_hook('config-yaml', script)}]\n"
    agent = agent_md(
        "Main.", mode="primary", hooks=f"\n  UserPromptSubmit:\n    - hooks: [{_hook('agent-file', script)}]"
    )
    root = scripted_workspace(tmp_path / "ws", 'turns:\n  - text: "Hi."\n', agents={"main": agent}, config=config)
    local_hooks = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": str(script), "args": ["local"]}]}]}
    write(root, ".claude/settings.local.json", json.dumps({"hooks": local_hooks}))
    write(root, ".claude/settings.json", json.dumps({"disableAllHooks": True}))
    write(home / "bearagent", "config.yaml", f"hooks:\n  UserPromptSubmit:\n    - hooks: [{_hook('user', script)}]\n")
    env = isolated_env(home, LOG_FILE=str(log))
    loaded = load(root, home, env=env)
    assert loaded.hooks.disabled_by == str(root / ".claude/settings.json")
    off = [d for d in loaded.diagnostics() if d.code == "claude.hooks_disabled"]
    assert {d.source for d in off} == {str(root / ".claude/settings.local.json"), str(root / ".bearagent/config.yaml")}
    trust(root, workspace_trust_surface(loaded), env=env)

    async def go() -> None:
        async with open_workspace(root, env=env, plugins=PluginHost()) as ws:
            result = await ws.run("hello")
            assert result.status == "succeeded", result.error

    asyncio.run(go())
    assert log.read_text().splitlines() == ["user UserPromptSubmit"]

"""The set-up of the hook-code attack tests (tests/security/test_hook_code.py, test_hook_data_code.py): a trusted
workspace whose PostToolUse hook runs workspace code while the scripted model rewrites that code, and the run that
shows what each hook did."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import cast

import yaml

from bearagent.api import open_workspace
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface
from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, scripted_workspace

PY = os.path.realpath(sys.executable)
PYVER = f"python{sys.version_info.major}.{sys.version_info.minor}"

Plant = Callable[[Path], tuple[str, str]]
"""Writes the hook's code into a workspace; returns the hook's command and the file an attack rewrites."""


def hooked_workspace(
    ws: Path,
    home: Path,
    *,
    turns: Sequence[Mapping[str, object]],
    agents: Mapping[str, str],
    plant: Plant,
    matcher: str,
) -> str:
    """A workspace whose scripted model plays `turns` and then says "done", with a PostToolUse hook on `matcher`
    running what `plant` wrote, trusted (with the user config already in `home`). Returns the file the attack
    rewrites."""
    script = yaml.safe_dump({"turns": [*turns, {"text": "done"}]}, sort_keys=False)
    scripted_workspace(ws, script, agents=dict(agents))
    command, target = plant(ws)
    hooks = {"hooks": {"PostToolUse": [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}}
    write(ws, ".bearagent/config.yaml", CONFIG + yaml.safe_dump(hooks))
    trust(ws, workspace_trust_surface(load(ws, home)), env=isolated_env(home))
    return target


def hook_events(ws: Path, home: Path) -> list[dict[str, object]]:
    """Runs "go" in the workspace (it must succeed); the payloads of its HookExecuted events, in order."""
    with open_workspace(ws, env=isolated_env(home), plugins=PluginHost()) as workspace:
        result = workspace.run_sync("go")
        assert result.status == "succeeded", result.error
        return [
            cast(dict[str, object], json.loads(json.dumps(e.model_dump(mode="json")["payload"])))
            for e in workspace.events(str(result.run_id))
            if e.event_type == "HookExecuted"
        ]

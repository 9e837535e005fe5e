"""Claude Code's `statusLine` command in the interactive session's status line: a real script reads Claude Code's
JSON on stdin and its first line replaces BearAgent's own; it is trust surface (an untrusted workspace keeps
BearAgent's line and never runs it), and a failing command falls back to BearAgent's line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import CONFIG, agent_md, scripted_workspace

from bearagent.app.runtime import open_runtime
from bearagent.cli.interactive import _status_command  # pyright: ignore[reportPrivateUsage]
from bearagent.cli.session_commands import SessionTotals, StatusLine
from bearagent.plugins.manager import PluginHost
from bearagent.service.runner import WorkspaceRuntime
from bearagent.trust import trust, workspace_trust_surface
from bearagent.workspace import load_workspace

PY_STATUS = """#!/usr/bin/env python3
import json
import os
import sys

data = json.load(sys.stdin)
with open(os.path.join(data["workspace"]["project_dir"], "status-input.json"), "w") as out:
    json.dump(data, out)
print(f"[{data['model']['display_name']}] {os.path.basename(data['cwd'])} ${data['cost']['total_cost_usd']:.2f}")
print("a second line is not shown")
"""
SH_FAILING = """#!/bin/sh
cat > /dev/null
echo "half a line"
exit 1
"""


def _runtime(tmp_path: Path, command: str, *, trusted: bool) -> WorkspaceRuntime:
    root = scripted_workspace(
        tmp_path / "ws", 'turns:\n  - text: "Hi."\n', agents={"main": agent_md("M.", mode="primary")}, config=CONFIG
    )
    write(root, "statusline.py", PY_STATUS, executable=True)
    write(root, "failing.sh", SH_FAILING, executable=True)
    write(root, ".claude/settings.json", json.dumps({"statusLine": {"type": "command", "command": command}}))
    home = tmp_path / "home"
    if trusted:
        surface = workspace_trust_surface(load(root, home))
        assert any(item.key == "statusLine .claude/settings.json" for item in surface.items)
        trust(root, surface, env=isolated_env(home))
    return open_runtime(load_workspace(root, env=isolated_env(home), plugins=PluginHost()))


def test_the_command_draws_the_status_line_from_claude_codes_json(tmp_path: Path) -> None:
    runtime = _runtime(tmp_path, "./statusline.py", trusted=True)
    totals = SessionTotals(runs=1, cost_microusd=1_250_000, wall_time_s=2.5)
    line = StatusLine(runtime, "off", _status_command(runtime))("main", None, totals, "sess-1")
    assert line == "[scripted] ws $1.25"
    seen = json.loads((runtime.root / "status-input.json").read_text())
    assert seen["hook_event_name"] == "Status" and seen["session_id"] == "sess-1"
    assert seen["workspace"] == {"current_dir": str(runtime.root), "project_dir": str(runtime.root)}
    assert seen["model"] == {"id": "scripted", "display_name": "scripted"}
    assert seen["output_style"] == {"name": "default"} and seen["cost"]["total_duration_ms"] == 2500
    assert seen["transcript_path"].endswith("sess-1.jsonl")


def test_an_untrusted_workspace_never_runs_it_and_a_failing_command_falls_back(tmp_path: Path) -> None:
    untrusted = _runtime(tmp_path / "a", "./statusline.py", trusted=False)
    assert _status_command(untrusted) is None
    own = StatusLine(untrusted, "off", None)("main", None, SessionTotals())
    assert own.startswith("main · scripted") and not (untrusted.root / "status-input.json").exists()
    failing = _runtime(tmp_path / "b", "./failing.sh", trusted=True)
    line = StatusLine(failing, "off", _status_command(failing))("main", None, SessionTotals())
    assert line.startswith("main · scripted") and "half a line" not in line

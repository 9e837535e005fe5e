"""Session-level hook executions are facts of the log: SessionStart is recorded by the session's first run, and
SessionEnd (fired when the process closes the session, after its last run) by the session's next run, in another
process."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tests.support.config_ws import isolated_env, load, write
from tests.support.run_ws import agent_md, scripted_workspace

from bearagent.api import open_workspace
from bearagent.domain.events import Event
from bearagent.plugins.manager import PluginHost
from bearagent.trust import trust, workspace_trust_surface

HOOK = """#!/usr/bin/env python3
import json, os, sys
data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "hooks.log"), "a") as log:
    log.write(data["hook_event_name"] + "\\n")
"""

CONFIG = """
default_agent: main
default_model: scripted
models:
  scripted: {provider: scripted, script: script.yaml}
hooks:
  SessionStart:
    - hooks: [{type: command, command: .bearagent/hooks/h.py}]
  SessionEnd:
    - hooks: [{type: command, command: .bearagent/hooks/h.py}]
"""

SCRIPT = """
turns:
  - text: "first"
  - text: "second"
"""


def test_session_end_of_one_process_is_recorded_by_the_next_run_of_the_session(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary", tools="[Read]")}, config=CONFIG
    )
    write(root, ".bearagent/hooks/h.py", HOOK, executable=True)
    home = tmp_path / "home"
    trust(root, workspace_trust_surface(load(root, home)), env=isolated_env(home))

    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        first = ws.run_sync("one")
        assert first.status == "succeeded", first.error
    assert (root / "hooks.log").read_text().split() == ["SessionStart", "SessionEnd"]
    with open_workspace(root, env=isolated_env(home), plugins=PluginHost()) as ws:
        second = ws.run_sync("two", session=str(first.session_id))
        assert second.status == "succeeded" and second.final == "second"
        events_first = ws.events(str(first.run_id))
        events_second = ws.events(str(second.run_id))

    def hooks_of(events: Sequence[Event]) -> list[str]:
        return [str(e.payload["hook_event"]) for e in events if e.event_type == "HookExecuted"]

    assert hooks_of(events_first) == ["SessionStart"]
    # the first process's SessionEnd comes first (kept on the session record), then this process's SessionStart
    assert hooks_of(events_second) == ["SessionEnd", "SessionStart"]

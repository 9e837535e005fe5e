"""`@path` in the interactive session (issue 32), in a real terminal (tmux): Tab completes a workspace path after
`@`, the mentioned file is attached to the prompt the run records, and a path outside the workspace is refused with
the fix before anything runs (the session goes on)."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.support.config_ws import write
from tests.support.run_ws import agent_md, open_ws, scripted_workspace
from tests.support.tmux import TmuxScreen, base_env, require_tmux

from bearagent.domain._base import thaw_json_mapping


def test_tab_completes_an_at_path_and_the_file_is_attached(tmp_path: Path) -> None:
    require_tmux()
    root = scripted_workspace(
        tmp_path / "ws", 'turns:\n  - text: "Seen it."\n', agents={"main": agent_md("Main.", mode="primary")}
    )
    write(root, "src/application.py", "print('from the app')\n")
    home = tmp_path / "home"
    with TmuxScreen(
        [sys.executable, "-m", "bearagent", "-w", str(root)], width=100, env=base_env(home), cwd=root
    ) as term:
        term.wait_for("main>")
        term.send_text("look at @../elsewhere.txt")
        term.send("Enter")
        term.wait_for(r"error: @\.\./elsewhere\.txt: .*outside the workspace")
        term.wait_for(r"fix: mention a file inside the workspace")
        term.send_text("explain @sr")
        term.send("Tab")
        term.wait_for(r"explain @src/")
        term.send_text("app")
        term.send("Tab")
        term.wait_for(r"explain @src/application\.py")
        term.send("Enter")
        term.wait_for(r"attached: src/application\.py")
        term.wait_for(r"succeeded · ")
        term.send_text("/exit")
        term.send("Enter")
    with open_ws(root, home) as ws:
        runs = list(ws.runs())
        assert len(runs) == 1  # the refused prompt started nothing
        created = next(e for e in ws.events(str(runs[0].run_id)) if e.event_type == "RunCreated")
        goal = str(thaw_json_mapping(created.payload)["goal"])
    assert goal.startswith("explain @src/application.py")
    assert "<file path=\"src/application.py\">\nprint('from the app')\n</file>" in goal

"""`bearagent sessions list` (issue 32, Claude Code's `--resume` list): the workspace's sessions, most recently
active first, with their titles, through real `bearagent` processes; one is continued by its listed id."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, scripted_workspace

SCRIPT = 'turns:\n  - text: "one"\n  - text: "two"\n  - text: "three"\n'


def _bearagent(root: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "bearagent", *args],
        cwd=root,
        env={**isolated_env(home), "PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_sessions_are_listed_newest_first_and_one_is_continued_by_its_id(tmp_path: Path) -> None:
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.", mode="primary")})
    home = tmp_path / "home"
    none = _bearagent(root, home, "sessions", "list")
    assert "Traceback" not in none.stderr
    assert _bearagent(root, home, "run", "first question\nwith a second line").returncode == 0
    assert _bearagent(root, home, "run", "the \x1b[31mred\x1b[0m question").returncode == 0
    listed = _bearagent(root, home, "sessions", "list")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert "SESSION" in lines[0] and "TITLE" in lines[0]
    assert "the ␛[31mred␛[0m question" in lines[1]  # newest first; terminal controls shown, not interpreted
    assert "first question" in lines[2] and "second line" not in listed.stdout
    assert "bearagent --session ID" in listed.stdout
    data = json.loads(_bearagent(root, home, "sessions", "list", "--json").stdout)
    assert [d["title"].split("\n")[0] for d in data] == ["the \x1b[31mred\x1b[0m question", "first question"]
    older = data[1]["session_id"]
    assert older in lines[2]
    again = _bearagent(root, home, "run", "--session", older, "and more")
    assert again.returncode == 0, again.stderr
    assert json.loads(_bearagent(root, home, "sessions", "list", "--json").stdout)[0]["session_id"] == older

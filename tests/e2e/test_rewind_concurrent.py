"""Two runs in one workspace at once, one of them killed (kill -9) during its Bash call: each call has its own
marker (`rewind/markers.py`), so the other run's capture is intact (its `FilesChanged` is its own call's) and the
dead call's changes are recorded late in the dead run, the ones the other run's looks took in while it ran
included; rewinding the dead run's files puts them back. On SQLite and PostgreSQL alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.support.config_ws import write
from tests.support.rewind_ws import MAIN, bearagent, run_killed_in_bash, store_env, tool_call, tree
from tests.support.run_ws import scripted_workspace

from bearagent.sandbox.probe import find_bwrap

pytestmark = [
    pytest.mark.skipif(
        not sys.platform.startswith("linux") or find_bwrap(None) is None,
        reason="Bash changes are tested in the sandbox: Linux and bubblewrap",
    ),
]


@pytest.fixture(params=["sqlite", "postgres"])
def env(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return store_env(request.param, tmp_path / "home")


# the first run to get here takes the slot and is the one killed; the second writes its own files and ends
BASH = (
    "if mkdir slot 2>/dev/null; then printf changed > a.txt && printf new > made-a.txt && touch started-a && "
    "sleep 60; else printf b > b.txt && mkdir -p bdir && printf b2 > bdir/b2.txt; fi"
)


def test_kill_9_of_one_of_two_concurrent_runs(tmp_path: Path, env: dict[str, str]) -> None:
    turns = [tool_call("Bash", command=BASH), {"text": "done"}]
    root = scripted_workspace(tmp_path / "ws", json.dumps({"turns": turns}), agents=MAIN)
    write(root, "a.txt", "one\n")
    before = tree(root)
    run_env = {**os.environ, **env, "NO_COLOR": "1"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return bearagent(root, run_env, *args, timeout=180)

    with run_killed_in_bash(root, run_env, "the one killed", root / "started-a", timeout=90):
        cli("run", "the one that ends")  # runs its Bash call while the first one's is in flight
        proc_markers = list((root / ".bearagent" / "rewind" / "pending").glob("*.json"))
        assert len(proc_markers) == 1, "the first call's marker is its own, still there"

    runs = json.loads(cli("runs", "list", "--json").stdout)
    by_goal = {r.get("goal") or r.get("prompt") or "": r["run_id"] for r in runs}
    dead_run = next(v for k, v in by_goal.items() if "killed" in k)
    other_run = next(v for k, v in by_goal.items() if "ends" in k)

    def file_facts(run_id: str) -> list[tuple[set[str], str]]:
        """Each `FilesChanged` of the run: the paths it names and its note."""
        events: list[Any] = [json.loads(line) for line in cli("events", run_id, "--json").stdout.splitlines()]
        return [
            ({str(c["path"]) for c in e["payload"]["changes"]}, str(e["payload"].get("note") or ""))
            for e in events
            if e["event_type"] == "FilesChanged"
        ]

    own = file_facts(other_run)
    assert len(own) == 1 and own[0][0] >= {"b.txt", "bdir", "bdir/b2.txt"}, own
    assert not {"a.txt", "made-a.txt", "started-a"} & own[0][0], "not the other's"

    done = cli("rewind", dead_run, "--code")
    assert "stopped before recording them" in done.stderr, done.stderr
    late = [paths for paths, note in file_facts(dead_run) if "recorded late" in note]
    assert len(late) == 1 and {"a.txt", "made-a.txt", "started-a", "slot"} <= late[0], late
    assert not list((root / ".bearagent" / "rewind" / "pending").iterdir())
    # the dead run's files are back; the other run's stay (the killed sandbox's empty mount points aside)
    now = tree(root)
    assert now["a.txt"] == before["a.txt"] and not {"made-a.txt", "started-a", "slot"} & set(now)
    assert now["b.txt"][2] == b"b" and now["bdir/b2.txt"][2] == b"b2"

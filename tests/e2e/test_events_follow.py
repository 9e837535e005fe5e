"""`bearagent events RUN --follow` through the store's one follower (`runtime/log_follower.py`, issue 30): a run
another `bearagent` process is writing is printed as it grows, from its first event, without repeats, and the
command exits 0 after the terminal event."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.support.config_ws import isolated_env, write
from tests.support.run_ws import agent_md, scripted_workspace

SCRIPT = """
turns:
  - text: "Released."
    wait_for_file: release
    wait_timeout_ms: 120000
"""
DEADLINE_S = 120.0
"""Generous: two `bearagent` processes on a loaded 2-core machine; it bounds a hang, not the product's speed."""


def _bearagent(*args: str, home: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "bearagent", *args],
        env=isolated_env(home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_events_follow_prints_a_run_another_process_writes_until_it_ends(tmp_path: Path) -> None:
    home = tmp_path / "home"
    root = scripted_workspace(tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main.")})
    write(root, "notes.md", "notes\n")
    running = _bearagent("run", "-w", str(root), "--json", "say something", home=home)
    follower: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + DEADLINE_S
        while True:  # the run exists (its model call waits for `release`)
            listed = subprocess.run(
                [sys.executable, "-m", "bearagent", "runs", "list", "-w", str(root), "--json"],
                env=isolated_env(home),
                capture_output=True,
                text=True,
                timeout=DEADLINE_S,
            )
            if listed.returncode == 0 and json.loads(listed.stdout or "[]"):
                break
            assert running.poll() is None, running.communicate()
            assert time.monotonic() < deadline, "the run never appeared in the store"
            time.sleep(0.2)
        follower = _bearagent("events", "last", "-w", str(root), "--json", "--follow", home=home)
        time.sleep(1.0)
        assert follower.poll() is None  # the run goes on: the command keeps following
        write(root, ".bearagent/release", "")
        out, err = follower.communicate(timeout=DEADLINE_S)
        assert follower.returncode == 0, err
        envelopes = [json.loads(line) for line in out.splitlines()]
        assert [e["sequence"] for e in envelopes] == list(range(1, len(envelopes) + 1))  # from 1, no gap, no repeat
        assert envelopes[0]["event_type"] == "RunCreated"
        assert envelopes[-1]["event_type"] == "RunSucceeded"
        done, run_err = running.communicate(timeout=DEADLINE_S)
        assert running.returncode == 0, run_err
        assert json.loads(done)["run_id"] == envelopes[0]["run_id"]
    finally:
        for process in (running, follower):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()

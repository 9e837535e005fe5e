"""`runs: {resume_on_start: true}`: a server started after a crash continues the interrupted runs of its workspaces
(a real `bearagent run` killed with SIGKILL, then a real `bearagent serve`)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.server.test_http_api import start
from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, scripted_workspace

SCRIPT = """
turns:
  - text: "Reading."
    tool_calls: [{name: Read, arguments: {file_path: notes.md}}]
  - text: "Thinking slowly."
    wait_for_file: release
    wait_timeout_ms: 120000
"""
# the second model call is held until the test creates .bearagent/release (after the SIGKILL), so the process is
# always killed during that call: a fixed 3 s delay could run out first on a loaded machine


def _status(db: Path) -> tuple[str, list[str]]:
    try:
        return _read_status(db)
    except sqlite3.Error:  # the file exists but its schema is not written yet
        return "none", []


def _read_status(db: Path) -> tuple[str, list[str]]:
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT data FROM run_projections WHERE parent_run_id IS NULL").fetchone()
        if row is None:
            return "none", []
        (data,) = row
        texts = [
            json.loads(p).get("text")
            for (p,) in conn.execute("SELECT payload FROM events WHERE event_type = 'ModelCallCompleted'")
        ]
    return json.loads(data)["status"], texts


def test_the_server_resumes_a_run_its_crashed_process_left(tmp_path: Path) -> None:
    root = scripted_workspace(
        tmp_path / "ws", SCRIPT, agents={"main": agent_md("Main agent.", mode="primary", tools="[Read]")}
    )
    (root / "notes.md").write_text("notes\n")
    db = root / ".bearagent" / "state.db"
    home = tmp_path / "home"
    proc = subprocess.Popen(
        [sys.executable, "-m", "bearagent", "run", "-w", str(root), "read the notes"],
        env=isolated_env(home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:  # killed during the slow second model call
        if db.exists() and len(_status(db)[1]) == 1 and "ToolCallCompleted" in _types(db):
            break
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert _status(db)[1] == ["Reading."], "the run was killed during its held second model call"
    (root / ".bearagent" / "release").touch()  # the resumed run's call may now answer
    server = start(tmp_path, config=f"workspaces:\n  - {{id: ws, path: {root}}}\nruns: {{resume_on_start: true}}\n")
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _status(db)[0] != "succeeded":
            time.sleep(0.1)
        status, texts = _status(db)
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=15)
    assert status == "succeeded"
    assert texts == ["Reading.", "Thinking slowly."], "the completed call is not made again; the cut one is"
    types = _types(db)
    assert types.count("RunInterrupted") == 1 and types.count("RunResumed") == 1


def _types(db: Path) -> list[str]:
    if not db.exists():  # connecting would create an empty file, which BearAgent refuses as a shipped store
        return []
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return [t for (t,) in conn.execute("SELECT event_type FROM events ORDER BY seq_no")]
    except sqlite3.Error:
        return []

"""`bearagent run --stream-json | head` (issue 32): when the reader closes the pipe, the run ends quietly with exit 0
(it printed a BrokenPipeError traceback per event)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.config_ws import isolated_env
from tests.support.run_ws import agent_md, scripted_workspace


def test_a_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    words = " ".join(f"w{i}" for i in range(20_000))  # ~2 MB of events: far more than a pipe buffer holds
    root = scripted_workspace(
        tmp_path / "ws", f'turns:\n  - text: "{words}"\n', agents={"main": agent_md("Main.", mode="primary")}
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "bearagent", "run", "-w", str(root), "--stream-json", "hi"],
        env=isolated_env(tmp_path / "home"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()  # what `head -1` reads, then it closes the pipe
    proc.stdout.close()
    err = proc.stderr.read().decode()
    code = proc.wait(timeout=120)  # a cold CLI start on a loaded machine; the scripted answer itself is instant
    assert b'"type":"run.started"' in first
    assert "Traceback" not in err and "BrokenPipeError" not in err, err[:2000]
    assert code == 0, err[:2000]

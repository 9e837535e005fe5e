"""The per-call markers of `rewind/markers.py`: a name a call id cannot take out of the pending directory, this
process's call alive only while in flight, another process alive while it is the same process, the legacy
`pending.json` read as one more marker, and a damaged marker taken for a dead call (never ignored)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bearagent.rewind import markers


def test_the_name_stays_in_the_pending_directory() -> None:
    name = markers.marker_name(12, 34, "../../etc/passwd")
    assert "/" not in name and name.startswith("12-34-") and name.endswith(".json")


def test_liveness_dead_calls_and_the_legacy_marker(tmp_path: Path) -> None:
    rewind = tmp_path / "rewind"
    mine = markers.mark(rewind, "run-1", "call-1", "Bash")
    assert markers.alive(mine, {"call-1"}) and not markers.alive(mine, ())
    assert markers.dead(rewind, {"call-1"}) == []
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (rewind / "pending.json").write_text(
        json.dumps({"run_id": "run-0", "tool_call_id": "old", "tool_name": "Bash", "pid": str(gone.pid)})
    )
    (rewind / "pending" / "1-2-torn.json").write_text('{"run_id": "ru')  # killed while writing it
    dead = markers.dead(rewind, {"call-1"})
    assert {(m.run_id, m.tool_call_id) for m in dead} == {("run-0", "old"), ("?", "")}
    for marker in dead:
        markers.remove(marker)
    markers.unmark(rewind, "call-1")
    assert markers.markers(rewind) == [] and not (rewind / "pending.json").exists()
    assert os.listdir(rewind / "pending") == []

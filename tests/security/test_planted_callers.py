"""A worker never runs a planted run as a caller other than the one that started it (issue 28, item 2).

A worker takes the subject it executes a queued run as from the run's session row (`service/lane_memory.py`
`LaneMemory.subject_of`); the run's own initiator is inside the sealed `RunCreated` (`trust/run_seals.py`). The session row is
not sealed: whoever can write to the store (a shipped `state.db`, another writer of a shared PostgreSQL database) can
rename the session's caller. The worker then refuses the run (`unsealed_run`: started by one caller, not by the other),
on SQLite and on PostgreSQL, and executes nothing; a run whose session still names its initiator executes.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from tests.security.test_shipped_logs import BEARAGENT, wait_for, workspace
from tests.security.test_shipped_logs_postgres import enqueue, pg_schema, refused, run_row, user_env
from tests.support import postgres_cluster
from tests.support.config_ws import isolated_env


def _sqlite_row(root: Path, run_id: str) -> dict[str, object]:
    with sqlite3.connect(root / ".bearagent" / "state.db") as conn:
        (data,) = conn.execute("SELECT data FROM run_projections WHERE run_id = ?", (run_id,)).fetchone()
    return json.loads(data)


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
@pytest.mark.slow
def test_a_worker_refuses_a_run_whose_session_names_another_caller(tmp_path: Path, backend: str) -> None:
    clone = workspace(tmp_path / "clone")
    own = workspace(tmp_path / "own")
    dsn = ""
    if backend == "postgres":
        postgres_cluster.require()
        dsn = postgres_cluster.new_database()
        alice = user_env(tmp_path / "alice", dsn)
    else:
        alice = isolated_env(tmp_path / "alice")

    def row(root: Path, run_id: str) -> dict[str, object]:
        return run_row(dsn, root, run_id) if dsn else _sqlite_row(root, run_id)

    # both recorded by alice's own process for the API subject bob (as her server does), so both seals verify
    planted = enqueue(clone, alice, caller="bob")
    mine = enqueue(own, alice, caller="bob")
    session_id = str(row(clone, planted)["session_id"])
    if dsn:
        with psycopg.connect(dsn) as conn:
            update = sql.SQL("UPDATE {}.sessions SET caller = %s WHERE session_id = %s").format(pg_schema(clone))
            assert conn.execute(update, ("mallory", session_id)).rowcount == 1
    else:
        with sqlite3.connect(clone / ".bearagent" / "state.db") as conn:
            changed = conn.execute("UPDATE sessions SET caller = ? WHERE session_id = ?", ("mallory", session_id))
            assert changed.rowcount == 1
    worker = subprocess.Popen(
        [BEARAGENT, "worker", "-w", str(clone), "-w", str(own), "--poll", "0.1"],
        env=alice,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:  # generous: a loaded CI machine starts a worker slowly
        wait_for(lambda: row(clone, planted)["status"] != "queued", 120, "the planted run")
        wait_for(lambda: row(own, mine)["status"] == "succeeded", 120, "bob's own run")
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)
    planted_row = row(clone, planted)
    refused(planted_row)
    assert "started by bob, not by mallory" in str(planted_row["error"]), planted_row["error"]
    assert not (clone / "planted.txt").exists(), "the run executed nothing"
    assert (own / "planted.txt").read_text() == "owned\n", "bob's run, in bob's session, executes"

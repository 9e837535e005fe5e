"""Crash safety for real: a subprocess appending in a loop is SIGKILLed at random moments, several rounds on one file.

After every kill the file must reopen with every stored run valid: each event whole and valid, sequences 1..n without
gaps, projections equal to a replay of the events, and no event without its run projection.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bearagent.domain.run_events import parse_run_event_payload
from bearagent.store.sqlite import SqliteEventStore

REPO = Path(__file__).resolve().parents[2]


def check_store(path: Path) -> tuple[int, int]:
    """Every invariant a crash must not break; returns (runs, events)."""
    with SqliteEventStore(path) as store:
        store.check_integrity()
        runs = store.list_runs(limit=1_000_000)
        total = 0
        for run in runs:
            events = store.read_events(run.run_id)
            assert [e.sequence for e in events] == list(range(1, len(events) + 1)), run.run_id
            assert run.last_sequence == len(events)
            for event in events:
                parse_run_event_payload(event.event_type, event.schema_version, event.payload)
            replayed = store.replay_run(run.run_id)
            assert replayed == (run, list(store.list_activities(run.run_id)))
            if run.status in ("succeeded", "failed", "cancelled"):
                assert run.active_activity_id is None
            total += len(events)
        with sqlite3.connect(path) as conn:
            assert conn.execute("SELECT count(*) FROM events").fetchone()[0] == total
            orphans = conn.execute(
                "SELECT count(*) FROM events WHERE run_id NOT IN (SELECT run_id FROM run_projections)"
            ).fetchone()[0]
            assert orphans == 0
        before = {r.run_id: r for r in runs}
        store.rebuild_projections(validate=True)
        assert {r.run_id: r for r in store.list_runs(limit=1_000_000)} == before
        return len(runs), total


@pytest.mark.slow
def test_sigkill_at_random_moments_never_breaks_the_store(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    rng = random.Random(20260818)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    events_seen = 0
    for round_no in range(6):
        worker = subprocess.Popen(
            [sys.executable, "-m", "tests.support.store_worker", "crash", str(path), str(round_no)],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert worker.stdout is not None
        ready = worker.stdout.readline()
        assert ready.strip() == "ready", worker.stderr.read() if worker.stderr else ready
        time.sleep(rng.uniform(0.3, 1.2))
        assert worker.poll() is None, worker.stderr.read() if worker.stderr else "worker exited early"
        worker.send_signal(signal.SIGKILL)
        worker.wait(timeout=30)
        assert worker.returncode == -signal.SIGKILL
        runs, events = check_store(path)
        assert events > events_seen, f"round {round_no}: the worker appended nothing"
        events_seen = events
        assert runs >= 1

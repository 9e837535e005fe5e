"""The run row's `status` column (what `list_runs(status=...)` and the recovery scan read) follows every commit,
also when the store skips the status UPDATE of a commit that does not change it (issue 22)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.events import EventFactory

from bearagent.domain.events import Event
from bearagent.domain.ids import DeterministicIdGenerator, RunId
from bearagent.store.sqlite import SqliteEventStore

RUN = RunId("12345678-0000-4000-8000-000000000001")


def _status_column(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT status FROM run_projections WHERE run_id = ?", (str(RUN),)).fetchone()[0]
    finally:
        conn.close()


def test_the_status_column_follows_each_commit(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    f = EventFactory(RUN, ids=DeterministicIdGenerator())
    with SqliteEventStore(path) as store:
        steps: list[list[Event]] = [
            [f.run_created()],
            [f.run_started()],
            f.model_call(),
            f.tool_call(),
            [f.run_succeeded()],
        ]
        for batch in steps:
            projection = store.append_many(batch)
            assert _status_column(path) == projection.status
            listed = store.list_runs(status=projection.status)
            assert [run.run_id for run in listed] == [RUN]
    assert _status_column(path) == "succeeded"

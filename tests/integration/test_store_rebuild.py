"""`rebuild_projections` folds the log in a loop of its own (`store/maintenance.py`, issue 22): the rows it writes
must be the rows the appends wrote, byte for byte and in the same order, with or without payload validation, and
a log it cannot fold must be refused with the message `Replayer` gives."""

from __future__ import annotations

import sqlite3
from datetime import timedelta
from pathlib import Path

import pytest
from tests.support.events import EventFactory

from bearagent.domain.ids import Uuid4IdGenerator
from bearagent.runtime.replay import Replayer, ReplayError
from bearagent.store.errors import StoreError
from bearagent.store.run_commit import dumps_json
from bearagent.store.sqlite import SqliteEventStore

_RUN_ROWS = (
    "SELECT rowid, run_id, session_id, parent_run_id, status, created_at, last_sequence, data, active_activity, goal"
    " FROM run_projections ORDER BY rowid"
)
_ACTIVITY_ROWS = "SELECT run_id, activity_id, requested_sequence, status, data FROM activity_projections ORDER BY 1, 2"
_REPLAY_ROWS = "SELECT run_id, sequence, event_type, schema_version, occurred_at, payload FROM events ORDER BY seq_no"


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _a_store(path: Path) -> None:
    """Runs of every ending, one left with an active activity, interleaved, one commit sharing a time."""
    ids = Uuid4IdGenerator()
    runs = [EventFactory(ids=ids) for _ in range(3)] + [EventFactory(ids=ids, step=timedelta(0))]  # d: one time
    with SqliteEventStore(path) as store:
        for f in runs:
            store.append_many([f.run_created(), f.run_started()])
        for f in runs:
            store.append_many(f.model_call(120, 30, 7))
            store.append_many(f.tool_call("Read"))
        a, b, c, d = runs
        store.append_many([a.model_requested(), a.model_started(), a.model_failed(5, 1, 2)])
        store.append(a.run_failed())
        store.append_many([b.tool_requested(), b.tool_started()])
        store.append(b.run_cancelled())  # closes the running tool call
        store.append(c.run_succeeded())
        store.append_many([d.model_requested(), d.model_started(), d.model_completed(1, 1)])
        store.append(d.tool_requested())  # left active


def test_rebuild_writes_the_rows_the_appends_wrote(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    _a_store(path)
    runs, activities = _rows(path, _RUN_ROWS), _rows(path, _ACTIVITY_ROWS)
    for validate in (False, True):
        with SqliteEventStore(path) as store:
            report = store.rebuild_projections(validate=validate)
        assert (report.runs, report.events) == (4, len(_rows(path, _REPLAY_ROWS)))
        assert _rows(path, _RUN_ROWS) == runs
        assert _rows(path, _ACTIVITY_ROWS) == activities


def _replayer_message(path: Path) -> str:
    with pytest.raises(ReplayError) as refused:
        Replayer().feed_rows(_rows(path, _REPLAY_ROWS))  # pyright: ignore[reportArgumentType]
    return refused.value.info.message


@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE events SET payload = '{}' WHERE sequence = 3",  # no activity_id
        "UPDATE events SET payload = 'not json' WHERE sequence = 4",
        "UPDATE events SET occurred_at = 'yesterday' WHERE sequence = 5",
        "UPDATE events SET event_type = 'NoSuchEvent' WHERE sequence = 6",
        "UPDATE events SET sequence = sequence + 100 WHERE sequence = 7",
        "UPDATE events SET payload = replace(payload, activity_id, 'x') WHERE sequence = 4",
    ],
)
def test_a_log_that_cannot_be_folded_is_refused_as_replay_refuses_it(tmp_path: Path, sql: str) -> None:
    path = tmp_path / "state.db"
    _a_store(path)
    conn = sqlite3.connect(path)
    try:
        conn.execute(sql.replace("activity_id, 'x'", "json_extract(payload, '$.activity_id'), 'x'"))
        conn.commit()
    finally:
        conn.close()
    expected = _replayer_message(path)
    runs = _rows(path, _RUN_ROWS)
    with SqliteEventStore(path) as store, pytest.raises(StoreError) as refused:
        store.rebuild_projections()
    assert expected in str(refused.value)
    assert _rows(path, _RUN_ROWS) == runs  # nothing changed


@pytest.mark.parametrize(
    "spelling",
    [
        "replace(occurred_at, 'Z', '+00:00')",
        "replace(occurred_at, 'Z', '.000000Z')",
        "replace(occurred_at, 'Z', '.250000Z')",
        "replace(occurred_at, 'Z', '+02:00')",
        "replace(occurred_at, 'T', ' ')",
    ],
)
def test_times_spelled_otherwise_fold_as_replay_folds_them(tmp_path: Path, spelling: str) -> None:
    path = tmp_path / "state.db"
    _a_store(path)
    conn = sqlite3.connect(path)
    try:
        conn.execute(f"UPDATE events SET occurred_at = {spelling} WHERE seq_no % 3 = 0")
        conn.commit()
    finally:
        conn.close()
    replayer = Replayer()
    replayer.feed_rows(_rows(path, _REPLAY_ROWS))  # pyright: ignore[reportArgumentType]
    with SqliteEventStore(path) as store:
        store.rebuild_projections()
    data = {row[1]: (row[7], row[8]) for row in _rows(path, _RUN_ROWS)}
    for run_id, run in replayer.runs.items():
        active = replayer.active_of(run_id)
        assert data[run_id] == (
            dumps_json(run.to_json(with_goal=False)),
            None if active is None else dumps_json(active.to_json()),
        )
    ended = {(row[0], row[1]): row[4] for row in _rows(path, _ACTIVITY_ROWS)}
    assert ended == {
        (a.run_id, a.activity_id): dumps_json(a.to_json())
        for a in replayer.activities
        if a.status not in ("pending", "running")
    }


def _conn_do(path: Path, *statements: str) -> None:
    conn = sqlite3.connect(path)
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


@pytest.mark.parametrize(
    "damage",
    [
        [],  # sound: the activity rows are left as they are
        ["DELETE FROM activity_projections WHERE requested_sequence % 2 = 0"],
        ["DELETE FROM activity_projections"],
        [
            "UPDATE activity_projections SET data = replace(data, 'succeeded', 'failed'), status = 'failed'"
            " WHERE requested_sequence % 3 = 0"
        ],
        ["UPDATE activity_projections SET requested_sequence = CAST(requested_sequence AS TEXT)"],
        [
            "INSERT INTO activity_projections VALUES ('00000000-0000-4000-8000-000000000000', 'a', 1, 'x', '{}')",
            "INSERT INTO activity_projections VALUES ('zzzz', 'b', 1, 'x', '{}')",
            "INSERT INTO activity_projections VALUES (X'00', X'01', 1, 'x', '{}')",
            "INSERT INTO activity_projections VALUES (7, 8, 1, 'x', '{}')",
        ],
    ],
)
def test_rebuild_leaves_exactly_the_activity_rows_of_the_log(tmp_path: Path, damage: list[str]) -> None:
    path = tmp_path / "state.db"
    _a_store(path)
    typed = "SELECT run_id, typeof(run_id), activity_id, requested_sequence, typeof(requested_sequence), status, data"
    expected = _rows(path, f"{typed} FROM activity_projections ORDER BY 1, 3")
    _conn_do(path, *damage)
    with SqliteEventStore(path) as store:
        conn = store._conn  # pyright: ignore[reportPrivateUsage]
        before = conn.total_changes
        store.rebuild_projections()
        changed = conn.total_changes - before
    assert _rows(path, f"{typed} FROM activity_projections ORDER BY 1, 3") == expected
    if not damage:  # only the run rows were written again
        assert changed == 2 * len(_rows(path, _RUN_ROWS))

"""Schema migrations (`PRAGMA user_version`): from nothing, from an empty file, from version 1 and from the previous
version 2 (both written by hand here, not by the store)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from tests.support.events import SEED_RUN_ID, EventFactory, seed_001_steps

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.run_events import RunCreatedV2
from bearagent.runtime.replay import replay_events
from bearagent.runtime.run_state import ActivityState, RunState, iso
from bearagent.store.errors import StoreError
from bearagent.store.schema import APPLICATION_ID, SCHEMA_VERSION
from bearagent.store.sqlite import SqliteEventStore, dumps_json

# Version 1 of the schema exactly as it shipped, typed out by hand (not imported) so that a change to the released
# migration shows up here.
SCHEMA_V1 = [
    """CREATE TABLE events (
        seq_no INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL,
        sequence INTEGER NOT NULL CHECK (sequence >= 1),
        event_id TEXT NOT NULL UNIQUE,
        event_type TEXT NOT NULL,
        schema_version INTEGER NOT NULL,
        occurred_at TEXT NOT NULL,
        causation_id TEXT,
        correlation_id TEXT,
        payload TEXT NOT NULL,
        UNIQUE (run_id, sequence)
    )""",
    """CREATE TABLE run_projections (
        run_id TEXT PRIMARY KEY,
        session_id TEXT,
        parent_run_id TEXT,
        status TEXT NOT NULL,
        created_at TEXT NOT NULL,
        last_sequence INTEGER NOT NULL,
        data TEXT NOT NULL,
        active_activity TEXT
    )""",
    "CREATE INDEX run_projections_session ON run_projections (session_id)",
    "CREATE INDEX run_projections_status ON run_projections (status)",
    "CREATE INDEX run_projections_parent ON run_projections (parent_run_id)",
    """CREATE TABLE activity_projections (
        run_id TEXT NOT NULL,
        activity_id TEXT NOT NULL,
        requested_sequence INTEGER NOT NULL,
        status TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (run_id, activity_id)
    ) WITHOUT ROWID""",
]


def schema_of(path: Path) -> dict[str, str]:
    """Table and index definitions, whitespace-normalised."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL").fetchall()
    return {name: " ".join(sql.split()) for name, sql in rows}


def header(path: Path) -> tuple[int, int]:
    with sqlite3.connect(path) as conn:
        return (
            conn.execute("PRAGMA application_id").fetchone()[0],
            conn.execute("PRAGMA user_version").fetchone()[0],
        )


def test_a_missing_file_becomes_the_latest_schema(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "er" / "state.db"
    with SqliteEventStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 9
    assert header(path) == (APPLICATION_ID, SCHEMA_VERSION)
    assert {"events", "run_projections", "activity_projections", "sessions", "run_leases"} <= set(schema_of(path))
    assert "auth_context TEXT" in schema_of(path)["sessions"]  # 5: the caller context a session was created with
    assert "workspace_id TEXT NOT NULL UNIQUE" in schema_of(path)["workspaces"]  # 7: workspace records
    assert {"run_text", "run_text_state", "run_pins"} <= set(schema_of(path))  # 8: run search and pins
    assert "forked_from TEXT" in schema_of(path)["sessions"]  # 9: where a session was forked from


def test_an_empty_file_is_refused_never_initialised(tmp_path: Path) -> None:
    """BearAgent makes a new store whole beside its path and links it in, so an empty file at the path is none of
    its making (issue 28: a repository may ship one): refused, untouched (tests/security/test_store_bad_files.py)."""
    path = tmp_path / "state.db"
    path.touch()
    with pytest.raises(StoreError) as caught:
        SqliteEventStore(path)
    assert caught.value.info.code == "storage.empty_file"
    assert path.stat().st_size == 0


def test_a_new_store_is_made_whole_and_0600(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with SqliteEventStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
    assert path.stat().st_mode & 0o777 == 0o600
    assert schema_of(path) == schema_of_fresh(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no temporary file left


def schema_of_fresh(tmp_path: Path) -> dict[str, str]:
    fresh = tmp_path / "fresh.db"
    SqliteEventStore(fresh).close()
    return schema_of(fresh)


def test_version_1_migrates_to_the_latest_keeping_every_event(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    steps = seed_001_steps()
    with sqlite3.connect(path) as conn:  # a v1 store holding seed 001's run, made without the store
        for statement in SCHEMA_V1:
            conn.execute(statement)
        for step in steps:
            e = step.event
            conn.execute(
                "INSERT INTO events (run_id, sequence, event_id, event_type, schema_version, occurred_at,"
                " causation_id, correlation_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    str(e.run_id),
                    e.sequence,
                    str(e.event_id),
                    e.event_type,
                    e.schema_version,
                    iso(e.occurred_at),
                    str(e.causation_id),
                    str(e.correlation_id),
                    dumps_json(e.payload),
                ),
            )
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 1")
    assert "sessions" not in schema_of(path)
    with SqliteEventStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION
        assert list(store.read_events(SEED_RUN_ID)) == [s.event for s in steps]
        report = store.rebuild_projections(validate=True)
        assert (report.runs, report.activities, report.events) == (1, 5, 18)
        run = store.get_run(SEED_RUN_ID)
        assert run is not None and run.status == "succeeded" and run.last_sequence == 18
        assert run.usage.total_tokens == 1300
        assert store.list_sessions() == []
    assert header(path) == (APPLICATION_ID, SCHEMA_VERSION)
    assert schema_of(path) == schema_of_fresh(tmp_path)
    with SqliteEventStore(path) as again:  # reopening runs nothing twice
        assert again.schema_version == SCHEMA_VERSION
        assert again.get_run(SEED_RUN_ID) == run


SCHEMA_V2_ADDS = [
    """CREATE TABLE sessions (
        session_id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        agent_name TEXT,
        active_agent_name TEXT,
        title TEXT,
        caller TEXT
    )""",
    "CREATE INDEX sessions_updated ON sessions (updated_at)",
]


def test_version_2_moves_goals_out_of_the_run_json(tmp_path: Path) -> None:
    """Version 2 kept the goal inside `run_projections.data`; version 3 moves it to its own column."""
    path = tmp_path / "state.db"
    f = EventFactory()
    goal = "write the intro " * 100
    events = [
        f.event(RunCreatedV2(budget_limits=BudgetLimits(), goal=goal, agent_name="build", prompt_hash="c" * 64)),
        f.run_started(),
        f.model_requested(),
    ]
    run, activities = replay_events(events)
    state = RunState.from_projection(run)
    assert activities[0].status == "pending"
    with sqlite3.connect(path) as conn:  # a v2 store as the previous BearAgent wrote it
        for statement in [*SCHEMA_V1, *SCHEMA_V2_ADDS]:
            conn.execute(statement)
        for e in events:
            conn.execute(
                "INSERT INTO events (run_id, sequence, event_id, event_type, schema_version, occurred_at,"
                " causation_id, correlation_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    str(e.run_id),
                    e.sequence,
                    str(e.event_id),
                    e.event_type,
                    e.schema_version,
                    iso(e.occurred_at),
                    str(e.causation_id),
                    str(e.correlation_id),
                    dumps_json(e.payload),
                ),
            )
        conn.execute(
            "INSERT INTO run_projections (run_id, session_id, parent_run_id, status, created_at, last_sequence, data,"
            " active_activity) VALUES (?, NULL, NULL, 'running', ?, 3, ?, ?)",
            (
                str(f.run_id),
                iso(run.created_at),
                dumps_json(state.to_json()),  # with the goal inside, as version 2 stored it
                dumps_json(ActivityState.from_projection(activities[0]).to_json()),
            ),
        )
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute("PRAGMA user_version = 2")
    with SqliteEventStore(path) as store:
        assert store.schema_version == SCHEMA_VERSION == 9
        assert store.get_run(f.run_id) == run
        assert store.list_activities(f.run_id) == activities
        assert store.append(f.model_started()).goal == goal
    with sqlite3.connect(path) as conn:
        data, stored_goal = conn.execute("SELECT data, goal FROM run_projections").fetchone()
    assert stored_goal == goal
    assert '"goal"' not in data
    assert schema_of(path) == schema_of_fresh(tmp_path)


def test_many_stores_opening_a_new_file_at_once_migrate_it_once(tmp_path: Path) -> None:
    """Openers racing on a new file: one migrates, the others see either nothing or the whole schema."""
    expected = schema_of_fresh(tmp_path)
    for attempt in range(25):
        path = tmp_path / f"state{attempt}.db"
        barrier = threading.Barrier(4)
        errors: list[BaseException] = []

        def opener(
            path: Path = path, barrier: threading.Barrier = barrier, errors: list[BaseException] = errors
        ) -> None:
            barrier.wait()
            try:
                SqliteEventStore(path).close()
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=opener) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert header(path) == (APPLICATION_ID, SCHEMA_VERSION)
        assert schema_of(path) == expected

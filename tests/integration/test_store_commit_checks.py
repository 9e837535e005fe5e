"""The checks of a SQLite commit (`store/run_commit.py`): the run's version and, in the same UPDATE when the commit
requests one activity, that the activity is new to the run (issue 22). Which check failed is told as before: a run
that moved on first, then a taken activity; nothing is written either way."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from tests.support.events import EventFactory

from bearagent.ports import ActivityIdTaken, VersionConflict
from bearagent.runtime.run_writer import RunWriter, prepare_commit
from bearagent.store.sqlite import SqliteEventStore


def _rows(path: Path) -> tuple[int, str, int]:
    with SqliteEventStore(path) as store:
        conn = store._conn  # pyright: ignore[reportPrivateUsage]
        events = conn.execute("SELECT count(*) FROM events").fetchone()[0]
        data = conn.execute("SELECT data FROM run_projections").fetchone()[0]
        activities = conn.execute("SELECT count(*) FROM activity_projections").fetchone()[0]
    return events, data, activities


def test_a_taken_activity_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    f = EventFactory()
    with SqliteEventStore(path) as store:
        store.append_many([f.run_created(), f.run_started()])
        store.append_many(f.model_call(1, 1))
        taken = f.activity_id
        before = _rows(path)

        async def go() -> None:
            stored = await store.load_run(f.run_id)
            with pytest.raises(ActivityIdTaken) as refused:
                await store.commit(prepare_commit(stored, [f.model_requested(activity_id=taken)]))
            assert refused.value.activity_id == str(taken)

        asyncio.run(go())
    assert _rows(path) == before


def test_a_stale_commit_that_also_requests_a_taken_activity_is_a_version_conflict(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    f = EventFactory()
    with SqliteEventStore(path) as store:

        async def go() -> None:
            writer = RunWriter(store)
            await writer.append_many([f.run_created(), f.run_started()])
            await writer.append_many(f.model_call(1, 1))
            stale = prepare_commit(await store.load_run(f.run_id), [f.model_requested(activity_id=f.activity_id)])
            f.rejected()
            await writer.append_many(f.tool_call())  # the run moves on
            with pytest.raises(VersionConflict) as refused:
                await store.commit(stale)
            assert refused.value.stored_version == 8

        asyncio.run(go())


def test_a_commit_requesting_two_activities_checks_both(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    f = EventFactory()
    with SqliteEventStore(path) as store:
        store.append_many([f.run_created(), f.run_started()])
        store.append_many(f.model_call(1, 1))
        taken = f.activity_id
        before = _rows(path)

        async def go() -> None:
            stored = await store.load_run(f.run_id)
            both = [*f.tool_call(), f.model_requested(activity_id=taken)]  # a new activity, then a taken one
            commit = prepare_commit(stored, both)
            assert len(commit.requested_activity_ids) == 2
            with pytest.raises(ActivityIdTaken) as refused:
                await store.commit(commit)
            assert refused.value.activity_id == str(taken)
            with pytest.raises(VersionConflict):  # and a stale one is told as such
                await store.commit(replace(commit, expected_version=3))

        asyncio.run(go())
    assert _rows(path) == before

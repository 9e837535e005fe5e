"""The worker's scan reads as many of the queue's lane heads as it could take (`service/worker.py`), not the whole
queue; its own lanes whose runs it is starting (still `queued` until their RunStarted commits) can fill those
places, and then it reads past them. A real run manager, its in-process worker and SQLite store; the RunStarted
commits are held, so "four of its lanes still starting when a slot frees" is a state, not a race."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from tests.support.run_manager import done_workspace, serving

from bearagent.domain.ids import RunId
from bearagent.ports import RunCommit
from bearagent.service.run_types import RunOptions
from bearagent.store.sqlite import SqliteEventStore


async def _until(done: Callable[[], bool], within_s: float = 20.0) -> bool:
    deadline = time.monotonic() + within_s
    while not done() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return done()


def test_a_slot_that_frees_while_its_own_lanes_are_starting_takes_the_next_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # concurrency 5 takes 5 sessions' runs; their RunStarted commits wait. One is let go and ends: 1 slot free, so
    # the scan asks for 4 heads (1 x SPREAD), and the 4 oldest are the worker's own lanes, still queued. It must read
    # past them and take the next session's run; reading only the 4 it took nothing, at every poll, until one of
    # its own started
    root, env = done_workspace(tmp_path)
    came: list[RunId] = []  # the runs whose RunStarted commit came, in order
    gates: dict[RunId, asyncio.Event] = {}
    real_commit, real_now = SqliteEventStore.commit, SqliteEventStore.commit_now

    def gate(run_id: RunId) -> asyncio.Event:
        return gates.setdefault(run_id, asyncio.Event())

    def now_unless_start(self: SqliteEventStore, commit: RunCommit) -> bool:
        return commit.events[0].event_type != "RunStarted" and real_now(self, commit)

    async def held(self: SqliteEventStore, commit: RunCommit) -> None:
        if commit.events[0].event_type == "RunStarted":
            came.append(commit.events[0].run_id)
            await gate(commit.events[0].run_id).wait()
        await real_commit(self, commit)

    monkeypatch.setattr(SqliteEventStore, "commit_now", now_unless_start)
    monkeypatch.setattr(SqliteEventStore, "commit", held)

    async def scenario() -> tuple[list[RunId], list[RunId], list[str]]:
        async with serving(root, env, workers=1, concurrency=5) as manager:
            first = [(await manager.start("ws", "local:tester", "hello", RunOptions())).run_id for _ in range(5)]
            assert await _until(lambda: len(came) == 5), came
            more = [(await manager.start("ws", "local:tester", "hello", RunOptions())).run_id for _ in range(4)]
            gate(first[0]).set()  # it starts, answers and ends: one slot free, four of the worker's lanes starting
            took = await _until(lambda: len(came) == 6, within_s=10.0)
            taken = list(came)
            for run_id in [*first, *more]:
                gate(run_id).set()
            store = manager.runtime("ws").store

            async def statuses() -> list[str]:
                return [r.status for r in await store.fetch_runs(limit=20)]

            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and any(s != "succeeded" for s in await statuses()):
                await asyncio.sleep(0.05)
            assert took, f"no run taken while the worker's own lanes were starting: {taken}"
            return taken, more, await statuses()

    taken, more, finals = asyncio.run(scenario())
    assert taken[5] == more[0], (taken, more)  # the oldest session after its own
    assert finals == ["succeeded"] * 9, finals

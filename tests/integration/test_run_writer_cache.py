"""The run writer's state cache keeps the runs it committed to most recently: a run written again moves last, and
the one written longest ago is the one forgotten (its next commit loads it from the store). Real SQLite; the
store's loads are counted by a subclass that lets them through."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.support.events import EventFactory

from bearagent.domain.ids import DeterministicIdGenerator, RunId
from bearagent.domain.run_events import HookExecutedV1
from bearagent.ports import StoredRun
from bearagent.runtime.run_writer import RunWriter
from bearagent.store.sqlite import SqliteEventStore


class CountingLoads(SqliteEventStore):
    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.loads: list[RunId] = []

    async def load_run(self, run_id: RunId) -> StoredRun | None:
        self.loads.append(run_id)
        return await super().load_run(run_id)


def test_the_run_written_longest_ago_is_forgotten_first(tmp_path: Path) -> None:
    store = CountingLoads(tmp_path / "state.db")
    ids = DeterministicIdGenerator()
    a, b, c = (EventFactory(ids=ids) for _ in range(3))
    hook = HookExecutedV1(hook_event="Stop", handler="h", handler_type="command", duration_ms=0)

    async def go() -> None:
        writer = RunWriter(store, cache_size=2)
        for f in (a, b):
            await writer.append(f.run_created())
            await writer.append(f.run_started())
        await writer.append(a.event(hook))  # a is written last now: b is the oldest
        await writer.append(c.run_created())  # the cache holds a and c; b is forgotten
        store.loads.clear()

        await writer.append(a.event(hook))
        await writer.append(c.run_started())
        assert store.loads == [], "a run written recently was loaded again"
        await writer.append(b.event(hook))
        assert store.loads == [b.run_id]

    try:
        asyncio.run(go())
    finally:
        store.close()

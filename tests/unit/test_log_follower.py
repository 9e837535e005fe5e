"""`runtime.log_follower`: the one follower of a workspace store's log (issue 30). Over a real SQLite store and a
real run writer: every reader of a run (`follow_run`, the server's streams, the feed, `events --follow`) is served by
the store's one follower; readers of one run share its store reads; one joining a run under way still gets it from
sequence 1, without gaps or repeats; a run written through another handle (another process) is read by the poll; a
workspace watcher hears of runs it did not follow; nothing stays subscribed after the run ends."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from tests.support.events import EventFactory

from bearagent.domain.budgets import BudgetLimits
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId, Uuid4IdGenerator
from bearagent.domain.run_events import RunCreatedV2, RunSucceededV2
from bearagent.domain.state import RunProjection
from bearagent.runtime.log_follower import LogFollower, follow_log
from bearagent.runtime.run_writer import RunWriter, TokenDelta
from bearagent.store.sqlite import SqliteEventStore

CREATED = {"goal": "g", "agent_name": "build", "prompt_hash": "0" * 64}


class CountingStore(SqliteEventStore):
    """A real SQLite store that counts the reads of a run's events."""

    reads = 0

    async def fetch_events(self, run_id: RunId, after_sequence: int = 0, limit: int | None = None) -> Sequence[Event]:
        self.reads += 1
        return await super().fetch_events(run_id, after_sequence, limit)


class Seen:
    def __init__(self) -> None:
        self.events: list[int] = []
        self.tokens: list[str] = []
        self.done = asyncio.Event()

    def event(self, event: Event) -> None:
        self.events.append(event.sequence)

    def token(self, delta: TokenDelta) -> None:
        self.tokens.append(delta.text)

    def ended(self) -> None:
        self.done.set()


async def started_run(store: SqliteEventStore) -> tuple[RunWriter, EventFactory]:
    """A writer over `store` and a run it has created and started (sequences 1 and 2)."""
    writer = RunWriter(store)
    f = EventFactory()
    await writer.append(f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})))
    await writer.append(f.run_started())
    return writer, f


def test_readers_of_one_run_share_the_follower_and_a_late_one_gets_it_from_the_start(tmp_path: Path) -> None:
    async def go() -> None:
        with CountingStore(tmp_path / "state.db") as store:
            writer, f = await started_run(store)
            follower = LogFollower.of(store)
            assert LogFollower.of(store) is follower  # one per store
            follower.watch(writer)
            follower.watch(writer)  # once per writer
            first, second = Seen(), Seen()
            stop_first = await follower.follow(f.run_id, first, poll_s=30, max_poll_s=30)
            reads = store.reads
            assert first.events == [1, 2] and follower.followed == 1
            writer.publish_token(f.run_id, "a1", 0, "hel")  # live: after the last event delivered
            for event in f.model_call(3, 2):
                await writer.append(event)
            upto = list(range(1, f.sequence + 1))
            stop_second = await follower.follow(f.run_id, second, poll_s=30, max_poll_s=30)  # joins under way
            assert second.events == upto and first.events == upto
            assert first.tokens == ["hel"] and second.tokens == []
            assert store.reads == reads + 1  # the joiner read what came before it; the commits themselves came live
            await writer.append(f.event(RunSucceededV2(final_text="done")))
            await asyncio.wait_for(asyncio.gather(first.done.wait(), second.done.wait()), 5)
            assert first.events == second.events == [*upto, upto[-1] + 1]
            assert follower.followed == 0  # the ended run is no longer followed
            stop_first()
            stop_second()

    asyncio.run(go())


def test_a_run_another_handle_writes_is_read_by_the_poll(tmp_path: Path) -> None:
    async def go() -> None:
        with SqliteEventStore(tmp_path / "state.db") as reading, SqliteEventStore(tmp_path / "state.db") as writing:
            writer = RunWriter(writing)  # another process's writer: nothing it commits is published to `reading`
            f = EventFactory()
            await writer.append(f.event(RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})))
            got: list[int] = []

            async def read() -> None:
                async for item in follow_log(reading, None, f.run_id, poll_s=0.02, max_poll_s=0.05):
                    assert not isinstance(item, TokenDelta)
                    got.append(item.sequence)

            reader = asyncio.create_task(read())
            await asyncio.sleep(0.1)
            await writer.append(f.run_started())
            await writer.append(f.event(RunSucceededV2(final_text="done")))
            await asyncio.wait_for(reader, 5)
            assert got == [1, 2, 3]
            assert LogFollower.of(reading).followed == 0

    asyncio.run(go())


def test_a_run_written_here_is_not_looked_up_while_quiet_and_a_commit_from_elsewhere_still_comes(
    tmp_path: Path,
) -> None:
    """A writer of this process publishes every commit, so a quiet run it writes (a model thinking) is looked up in
    the store only at the longest poll, not at the shortest: under a thousand live runs those looks were a tenth
    of a server's time. A commit another process makes is still found by that look."""

    async def go() -> None:
        with CountingStore(tmp_path / "state.db") as store, SqliteEventStore(tmp_path / "state.db") as other:
            writer, f = await started_run(store)
            follower = LogFollower.of(store)
            follower.watch(writer)
            seen = Seen()
            stop = await follower.follow(f.run_id, seen, poll_s=0.02, max_poll_s=0.5)
            for event in f.model_call(3, 2):
                await writer.append(event)
            reads = store.reads
            await asyncio.sleep(0.3)  # quiet: a run written elsewhere would be looked up at 0.02, 0.04, 0.08, 0.16 s
            assert store.reads == reads
            elsewhere = RunWriter(other)  # another process: what it commits is not published here
            await elsewhere.append(f.event(RunSucceededV2(final_text="done")))
            await asyncio.wait_for(seen.done.wait(), 5)
            assert seen.events == list(range(1, f.sequence + 1))
            stop()

    asyncio.run(go())


def test_a_workspace_watcher_hears_of_runs_published_here_and_written_elsewhere(tmp_path: Path) -> None:
    async def go() -> None:
        with SqliteEventStore(tmp_path / "state.db") as store, SqliteEventStore(tmp_path / "state.db") as other:
            follower = LogFollower.of(store)
            here = RunWriter(store)
            follower.watch(here)
            heard: dict[RunId, RunProjection | None] = {}

            def hear(run_id: RunId, run: RunProjection | None) -> None:
                if heard.get(run_id) is None:
                    heard[run_id] = run

            stop = follower.watch_workspace(hear, discover_s=0.02)
            local, remote = EventFactory(), EventFactory(ids=Uuid4IdGenerator())  # two runs
            created = RunCreatedV2.model_validate({"budget_limits": BudgetLimits(), **CREATED})
            await here.append(local.event(created))
            assert local.run_id in heard  # told at once, by the publication
            await RunWriter(other).append(remote.event(created))
            for _ in range(250):
                if remote.run_id in heard:
                    break
                await asyncio.sleep(0.02)
            found = heard.get(remote.run_id)
            assert found is not None and found.last_sequence == 1  # found by reading the newest runs
            stop()

    asyncio.run(go())


def test_a_failed_first_read_raises_and_leaves_nothing_subscribed(tmp_path: Path) -> None:
    class Broken(SqliteEventStore):
        async def fetch_events(
            self, run_id: RunId, after_sequence: int = 0, limit: int | None = None
        ) -> Sequence[Event]:
            raise OSError("disk gone")

    async def go() -> None:
        with Broken(tmp_path / "state.db") as store:
            follower = LogFollower.of(store)
            try:
                await follower.follow(EventFactory().run_id, Seen())
            except OSError as exc:
                assert "disk gone" in str(exc)
            else:
                raise AssertionError("the read failed: follow must raise")
            assert follower.followed == 0

    asyncio.run(go())


def test_a_token_published_while_the_store_is_read_comes_before_the_commit_the_read_finds(tmp_path: Path) -> None:
    """The race of a loaded machine (a reconnecting consumer lost the last token of an answer, 2026-12-07): the tail
    reads the store (its poll), the model publishes its last token and the writer commits the next event, and the
    read, finishing, finds that commit. The token must still be delivered, before the event."""

    class Gated(SqliteEventStore):
        gate: asyncio.Event | None = None
        entered = asyncio.Event()

        async def fetch_events(
            self, run_id: RunId, after_sequence: int = 0, limit: int | None = None
        ) -> Sequence[Event]:
            if self.gate is not None:
                self.entered.set()
                await self.gate.wait()  # the read is in flight: what is published now waits for it
            return await super().fetch_events(run_id, after_sequence, limit)

    class Ordered(Seen):
        def __init__(self) -> None:
            super().__init__()
            self.order: list[str] = []

        def event(self, event: Event) -> None:
            super().event(event)
            self.order.append(f"event {event.sequence}")

        def token(self, delta: TokenDelta) -> None:
            super().token(delta)
            self.order.append(f"token {delta.text}")

    async def go() -> None:
        with Gated(tmp_path / "state.db") as store:
            writer, f = await started_run(store)
            follower = LogFollower.of(store)
            follower.watch(writer)
            seen = Ordered()
            stop = await follower.follow(f.run_id, seen, poll_s=0.02, max_poll_s=0.02)
            writer.publish_token(f.run_id, "a1", 0, "twice ")  # live, delivered at once
            store.gate = asyncio.Event()
            Gated.entered = asyncio.Event()
            await asyncio.wait_for(Gated.entered.wait(), 5)  # the poll is reading the store
            writer.publish_token(f.run_id, "a1", 6, "over.")
            await writer.append(f.event(RunSucceededV2(final_text="twice over.")))
            store.gate.set()
            await asyncio.wait_for(seen.done.wait(), 5)
            assert seen.order == ["event 1", "event 2", "token twice ", "token over.", "event 3"]
            stop()

    asyncio.run(go())

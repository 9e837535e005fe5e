"""`server.streams.RunStreams`: every SSE connection to a run is served by one follower of that run. Connections that
come together share one read of the log; each frame is encoded once for all of them;
live commits reach them without a timer; a late connection to a finished run reads no store; a resume delivers the
rest once; a run another process writes is read from the store by the one follower, not by each connection."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence

import pytest
from tests.support.events import EventFactory

from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.events import Event
from bearagent.domain.ids import ActivityId, ModelCallId, RunId
from bearagent.domain.run_events import ModelCallCompletedV2, RunCreatedV2, RunStartedV1, RunSucceededV2
from bearagent.domain.stream import StreamEventModel, encode_stream_event
from bearagent.ports import CommitNotice
from bearagent.runtime.run_writer import Committed, Published, TokenDelta
from bearagent.server import streams as streams_module
from bearagent.server.streams import RunStreams


class FakeWriter:
    def __init__(self) -> None:
        self.subscribers: list[Callable[[Published], None]] = []

    def subscribe(self, subscriber: Callable[[Published], None]) -> Callable[[], None]:
        self.subscribers.append(subscriber)
        return lambda: self.subscribers.remove(subscriber)


class FakeLog:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.reads = 0

    async def fetch_events(self, run_id: RunId, after_sequence: int = 0, limit: int | None = None) -> Sequence[Event]:
        self.reads += 1
        await asyncio.sleep(0.01)  # a read takes a while: connections arriving meanwhile wait for the same one
        rest = [e for e in self.events if e.run_id == run_id and e.sequence > after_sequence]
        return rest if limit is None else rest[:limit]


class FakeRuntime:
    def __init__(self) -> None:
        self.writer = FakeWriter()
        self.store = FakeLog()

    def commit(self, event: Event, *, publish: bool = True) -> None:
        self.store.events.append(event)
        if publish:
            for subscriber in tuple(self.writer.subscribers):
                subscriber(Committed(event.run_id, event.sequence, event))

    def token(self, run_id: RunId, text: str, after: int) -> None:
        for subscriber in tuple(self.writer.subscribers):
            subscriber(TokenDelta(run_id, "a1", 0, text, after))


class Manager:
    def __init__(self, *runtimes: FakeRuntime) -> None:
        self.runtimes = list(runtimes)

    def runtimes_of(self, workspace_id: str) -> Sequence[FakeRuntime]:
        return self.runtimes


def a_run() -> tuple[EventFactory, list[Event]]:
    f = EventFactory()
    limits = BudgetLimits()
    events = [
        f.event(RunCreatedV2(budget_limits=limits, goal="hi", agent_name="main", prompt_hash="0" * 64)),
        f.event(RunStartedV1()),
        f.event(
            ModelCallCompletedV2(
                activity_id=f.ids.new(ActivityId),
                model_call_id=f.ids.new(ModelCallId),
                usage=TokenUsage(input_tokens=1, output_tokens=1),
                text="ok",
                stop_reason="end_turn",
            )
        ),
        f.event(RunSucceededV2(final_text="ok")),
    ]
    return f, events


async def collect(streams: RunStreams, runtime: FakeRuntime, run_id: RunId, resume: str = "") -> list[bytes]:
    """The SSE frames of a connection (the writes it gets may hold several)."""
    frames: list[bytes] = []
    async for chunk in streams.frames(runtime, "ws", run_id, resume):
        assert chunk.endswith(b"\n\n")
        frames += [part + b"\n\n" for part in chunk.split(b"\n\n")[:-1]]
    return frames


def test_connections_share_one_read_one_encoding_and_get_commits_live(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[str] = []

    def counting(event: StreamEventModel) -> str:
        encoded.append(event.model_dump()["type"])
        return encode_stream_event(event)

    monkeypatch.setattr(streams_module, "encode_stream_event", counting)

    async def go() -> None:
        runtime = FakeRuntime()
        streams = RunStreams(Manager(runtime), poll_s=30)  # no poll in this test: everything live
        f, events = a_run()
        runtime.commit(events[0], publish=False)  # before anybody follows the run
        runtime.commit(events[1], publish=False)
        readers = [asyncio.ensure_future(collect(streams, runtime, f.run_id)) for _ in range(5)]
        await asyncio.sleep(0.05)
        assert runtime.store.reads == 1  # one read of the log for five connections
        runtime.token(f.run_id, "o", after=2)
        runtime.commit(events[2])
        runtime.token(f.run_id, "k", after=3)
        runtime.commit(events[3])
        got = await asyncio.wait_for(asyncio.gather(*readers), 5)
        assert runtime.store.reads == 1  # the commits came live
        first = got[0]
        kinds = [next(line for line in frame.split(b"\n") if line.startswith(b"event:")) for frame in first]
        assert kinds == [
            b"event: run.started",
            b"event: token",
            b"event: token",
            b"event: step",
            b"event: final",
            b"event: run.succeeded",
        ]
        assert first[0].startswith(b"id: 2-1\n") and first[-1].startswith(b"id: 4-3\n")
        assert all(other == first for other in got[1:])
        assert len(encoded) == len(first)  # each event encoded once for the five connections

        late = await collect(streams, runtime, f.run_id)  # finished: from memory, no read
        assert late == [frame for frame in first if b"event: token" not in frame]
        assert runtime.store.reads == 1
        resumed = await collect(streams, runtime, f.run_id, "4-1")
        assert [frame.split(b"\n")[0] for frame in resumed] == [b"id: 4-2", b"id: 4-3"]

    asyncio.run(go())


def test_a_run_another_process_writes_is_read_by_one_follower() -> None:
    async def go() -> None:
        runtime = FakeRuntime()
        streams = RunStreams(Manager(runtime), poll_s=0.05, max_poll_s=0.2)
        f, events = a_run()
        runtime.commit(events[0], publish=False)
        readers = [asyncio.ensure_future(collect(streams, runtime, f.run_id)) for _ in range(4)]
        await asyncio.sleep(0.05)
        for event in events[1:]:
            runtime.commit(event, publish=False)  # written elsewhere: nothing is published here
            await asyncio.sleep(0.1)
        got = await asyncio.wait_for(asyncio.gather(*readers), 5)
        assert all(len(frames) == 4 for frames in got)  # run.started, step, final, run.succeeded
        assert all(frames == got[0] for frames in got)
        # one follower polled (a few looks), not four connections each
        assert runtime.store.reads <= 12, runtime.store.reads

    asyncio.run(go())


class NoticedLog(FakeLog):
    """A store that sends commit notices from other processes (what PostgreSQL's LISTEN/NOTIFY gives)."""

    def __init__(self) -> None:
        super().__init__()
        self.commits = self
        self.listeners: list[Callable[[CommitNotice], None]] = []
        self.channels: list[str | None] = []

    def subscribe(self, listener: Callable[[CommitNotice], None], run_id: str | None = None) -> Callable[[], None]:
        self.listeners.append(listener)
        self.channels.append(run_id)
        return lambda: self.listeners.remove(listener)


def test_a_commit_notice_from_another_process_wakes_the_follower_at_once() -> None:
    async def go() -> None:
        runtime = FakeRuntime()
        log = runtime.store = NoticedLog()
        streams = RunStreams(Manager(runtime), poll_s=30, max_poll_s=30)  # only a notice can wake it in time
        f, events = a_run()
        runtime.commit(events[0], publish=False)
        reader = asyncio.ensure_future(collect(streams, runtime, f.run_id))
        await asyncio.sleep(0.05)
        assert len(log.listeners) == 1  # one subscription for the followed run
        assert log.channels == [str(f.run_id)]  # to that run's own notices, not every commit of the store
        started = time.monotonic()
        for event in events[1:]:
            runtime.commit(event, publish=False)  # written elsewhere: nothing is published here, a notice comes
            for listener in tuple(log.listeners):
                listener(CommitNotice(str(f.run_id), event.sequence, "running"))
            await asyncio.sleep(0.02)
        frames = await asyncio.wait_for(reader, 5)
        assert len(frames) == 4 and time.monotonic() - started < 5
        assert log.listeners == []  # the finished run unsubscribed

    asyncio.run(go())


def test_a_gap_in_what_is_published_is_read_from_the_store() -> None:
    async def go() -> None:
        runtime = FakeRuntime()
        streams = RunStreams(Manager(runtime), poll_s=30)
        f, events = a_run()
        runtime.commit(events[0])
        reader = asyncio.ensure_future(collect(streams, runtime, f.run_id))
        await asyncio.sleep(0.05)
        runtime.commit(events[1], publish=False)  # its publication was lost
        runtime.commit(events[2])
        runtime.commit(events[3])
        frames = await asyncio.wait_for(reader, 5)
        assert [frame.split(b"\n")[0] for frame in frames] == [
            b"id: 2-1",  # run.started, of the commit nobody published
            b"id: 4-1",
            b"id: 4-2",
            b"id: 4-3",
        ]

    asyncio.run(go())


def test_frames_dropped_from_memory_are_read_from_the_store_by_who_needs_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(streams_module, "RUN_BYTES", 1)  # keep next to nothing: every commit drops what came before

    async def go() -> None:
        runtime = FakeRuntime()
        streams = RunStreams(Manager(runtime), poll_s=30)
        f, events = a_run()
        runtime.commit(events[0])
        runtime.commit(events[1])
        first = asyncio.ensure_future(collect(streams, runtime, f.run_id))
        await asyncio.sleep(0.05)
        runtime.commit(events[2])
        late = asyncio.ensure_future(collect(streams, runtime, f.run_id))  # from the start, after the drop
        resumed = asyncio.ensure_future(collect(streams, runtime, f.run_id, "2-1"))
        await asyncio.sleep(0.05)
        runtime.commit(events[3])
        whole = await asyncio.wait_for(first, 5)
        ids = [frame.split(b"\n")[0] for frame in whole]
        assert ids == [b"id: 2-1", b"id: 4-1", b"id: 4-2", b"id: 4-3"]
        assert await asyncio.wait_for(late, 5) == whole  # run.started came from the store, the rest live
        assert await asyncio.wait_for(resumed, 5) == whole[1:]
        reads = runtime.store.reads
        assert await collect(streams, runtime, f.run_id) == whole  # not all of it was in memory: read again
        assert runtime.store.reads > reads

    asyncio.run(go())

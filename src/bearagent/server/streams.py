"""The event routes: one run's events (a JSON page, or SSE) and the workspace feed (SSE of every run).

A run's SSE stream: its stream-protocol events (SPEC §14), caught up from the log and then live (tokens included)
until the terminal event. Each committed event's `id:` is `<log sequence>-<n>` (one log event can make several
stream events); a client that reconnects with that `Last-Event-ID` gets every later event exactly once. Tokens are
live only and carry no id. The feed's ids and resume rules are `feed.py`'s. Limits and keep-alives: `sse.py`.

`RunStreams` serves every connection to a run's stream from one follower of that run, not one each: it subscribes
once to each runtime's writer of the workspace (so a run executed for another subject's runtime is live too), reads
the run's log from the store once when its first connection comes, turns each committed event into stream events
once (one `LogStream` per run) and encodes each SSE frame once; every connection is a position in that run's list of
frames plus the frames that follow, pushed to it as the writer commits them (no timer). A run another process writes
(a `bearagent worker`, the CLI) is read from the store by that one follower at once when the store sends a commit
notice (PostgreSQL's LISTEN/NOTIFY, `ports.commit_feed`), else when nothing came live for `POLL_S`, less often the
longer it stays still (up to `MAX_POLL_S`). A finished run's frames are kept for a while (the newest
`KEEP_FINISHED` runs, at most `KEEP_BYTES`), so a late or replaying connection reads no store either.

Why it is over 400 lines: the follower (live frames, the store read on a commit notice or a poll, the kept frames of
finished runs) and the SSE routes over it are one mechanism; resumption by `Last-Event-ID` is only gap-free if the
follower and the routes agree on the same frames and sequence numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Protocol

from fastapi import FastAPI, Header, Request
from fastapi.responses import Response

from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.stream import StreamEventModel, encode_stream_event
from bearagent.ports import CommitNotice, commit_feed
from bearagent.runtime.run_writer import Committed, Published, TokenDelta
from bearagent.runtime.streaming import LogStream
from bearagent.server.access import Access, Caller
from bearagent.server.auth import CallerContext
from bearagent.server.feed import FeedFrame, Feeds, FeedSubscription
from bearagent.server.shapes import SKIP_ALL, event_json, resume_point
from bearagent.server.sse import KEEPALIVE, Beat, Paced, SlotStream, StreamSlots, frame
from bearagent.service.runner import WorkspaceRuntime

_log = logging.getLogger("bearagent.server")

POLL_S = 0.25
"""How long a followed run may go without a live event before its follower looks in the store."""
MAX_POLL_S = 2.0
"""The longest a still run (waiting for an approval, written by another process) goes without a look."""
KEEP_FINISHED = 256
KEEP_BYTES = 64 * 1024 * 1024
"""The finished runs whose frames stay in memory (the newest first), and their bytes at most."""
RUN_BYTES = 16 * 1024 * 1024
"""The most frames one followed run keeps; past that they are dropped, and a connection that needs the dropped ones
(from the start, or resuming before them) reads them from the store for itself."""
BACKLOG_FRAMES = 10_000
"""Frames one connection may fall behind by; a slower one is closed (it resumes with its Last-Event-ID)."""


class _Writer(Protocol):
    def subscribe(self, subscriber: Callable[[Published], None]) -> Callable[[], None]: ...


class _Log(Protocol):
    async def fetch_events(
        self, run_id: RunId, after_sequence: int = 0, limit: int | None = None
    ) -> Sequence[Event]: ...


class FollowedRuntime(Protocol):
    """What `RunStreams` uses of a `WorkspaceRuntime`: its writer's publications and its store's log reads."""

    @property
    def writer(self) -> _Writer: ...

    @property
    def store(self) -> _Log: ...


class Runtimes(Protocol):
    def runtimes_of(self, workspace_id: str) -> Sequence[FollowedRuntime]: ...


@dataclass(eq=False)
class _Connection:
    """One SSE connection to a run: what it has seen (`after_seq`, for tokens) and the frames pushed to it."""

    after_seq: int
    queue: asyncio.Queue[bytes | None] = field(default_factory=lambda: asyncio.Queue[bytes | None]())
    closed: bool = False

    def push(self, item: bytes | None) -> None:
        if self.closed:
            return
        if item is None or self.queue.qsize() >= BACKLOG_FRAMES:
            self.closed = True
            self.queue.put_nowait(None)  # the end (or too slow: the client resumes with its Last-Event-ID)
            return
        self.queue.put_nowait(item)


@dataclass(eq=False)
class _FollowedRun:
    run_id: RunId
    storage: _Log
    stream: LogStream
    known: int = 0
    """The last log sequence turned into frames."""
    frames: list[tuple[int, int, bytes]] = field(default_factory=list[tuple[int, int, bytes]])
    """(log sequence, n-th stream event of it, the SSE frame), in order."""
    size: int = 0
    kept_from: int = 1
    """The first log sequence whose frames `frames` still holds (`RUN_BYTES`)."""
    connections: set[_Connection] = field(default_factory=set[_Connection])
    loading: asyncio.Task[None] | None = None
    pending: list[Committed] = field(default_factory=list[Committed])
    """Commits published while the first read of the log was under way."""
    poller: asyncio.Task[None] | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    last_fed: float = field(default_factory=time.monotonic)
    unnotice: Callable[[], None] | None = None
    """Ends the subscription to the store's commit notices (PostgreSQL: another process committed to this run)."""

    @property
    def finished(self) -> bool:
        return self.stream.finished


class RunStreams:
    """The followers of the runs that SSE connections follow (see the module docstring)."""

    def __init__(self, runtimes: Runtimes, *, poll_s: float = POLL_S, max_poll_s: float = MAX_POLL_S) -> None:
        self._runtimes = runtimes
        self._poll_s = poll_s
        self._max_poll_s = max_poll_s
        self._runs: dict[RunId, _FollowedRun] = {}
        self._finished: OrderedDict[RunId, _FollowedRun] = OrderedDict()
        self._finished_bytes = 0
        self._watched: set[int] = set()

    # ---- writers -------------------------------------------------------------------------------------------------

    def watch(self, runtime: FollowedRuntime) -> None:
        writer = runtime.writer
        if id(writer) not in self._watched:
            self._watched.add(id(writer))
            writer.subscribe(self._take)

    def runtime_made(self, workspace_id: str, runtime: FollowedRuntime) -> None:
        self.watch(runtime)

    def _take(self, item: Published) -> None:
        """A writer's publication (synchronous, on the event loop): only runs somebody follows are looked at."""
        run = self._runs.get(item.run_id)
        if run is None:
            return
        if run.loading is not None and not run.loading.done():
            if isinstance(item, Committed):
                run.pending.append(item)
            return  # a token while the log is read: tokens are live only
        if isinstance(item, TokenDelta):
            if item.after == run.known:
                data = frame("token", encode_stream_event(run.stream.token(item)))
                for connection in tuple(run.connections):
                    if item.after >= connection.after_seq:
                        connection.push(data)
            elif item.after > run.known:
                run.wake.set()  # commits this follower has not seen: look in the store
            return
        assert isinstance(item, Committed)
        if item.sequence == run.known + 1:
            self._feed(run, item.event)
        elif item.sequence > run.known + 1:
            run.wake.set()  # a gap (a commit published before this follower existed): the store has it

    # ---- one run -------------------------------------------------------------------------------------------------

    def _feed(self, run: _FollowedRun, event: Event) -> None:
        made = run.stream.committed(event)
        run.known = event.sequence
        run.last_fed = time.monotonic()
        if run.size > RUN_BYTES and not run.finished:
            run.frames, run.size, run.kept_from = [], 0, event.sequence
        for n, out in enumerate(made, start=1):
            framed = _framed(out, event.sequence, n)
            run.frames.append((event.sequence, n, framed))
            run.size += len(framed)
            for connection in tuple(run.connections):
                connection.push(framed)
        if run.finished:
            for connection in tuple(run.connections):
                connection.push(None)
            run.connections.clear()
            self._retire(run)

    def _retire(self, run: _FollowedRun) -> None:
        if self._runs.get(run.run_id) is run:
            del self._runs[run.run_id]
        _stop_polling(run)
        if run.unnotice is not None:
            run.unnotice()
            run.unnotice = None
        if run.kept_from > 1:
            return  # not all of it in memory: a later connection reads the log
        self._finished[run.run_id] = run
        self._finished_bytes += run.size
        while self._finished and (len(self._finished) > KEEP_FINISHED or self._finished_bytes > KEEP_BYTES):
            _, dropped = self._finished.popitem(last=False)
            self._finished_bytes -= dropped.size

    async def _read_store(self, run: _FollowedRun) -> bool:
        """Feed what the log has after `run.known`; True if there was something."""
        events = await run.storage.fetch_events(run.run_id, after_sequence=run.known)
        fed = False
        for event in events:
            if run.finished:
                break
            if event.sequence == run.known + 1:
                self._feed(run, event)
                fed = True
        return fed

    async def _load(self, run: _FollowedRun) -> None:
        await self._read_store(run)
        while run.pending and not run.finished:  # commits published during the read, in order, without repeats
            pending, run.pending = run.pending, []
            for item in pending:
                if item.sequence == run.known + 1:
                    self._feed(run, item.event)
                elif item.sequence > run.known + 1:
                    await self._read_store(run)
        run.pending = []

    async def _poll(self, run: _FollowedRun) -> None:
        """Look in the store when nothing came live for a while (a run another process writes), and at once when a
        publication showed a gap; each empty look doubles the wait, up to `max_poll_s`."""
        delay = self._poll_s
        while not run.finished:
            due = run.last_fed + delay - time.monotonic()
            if due > 0 and not run.wake.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(run.wake.wait(), due)
                if not run.wake.is_set() and time.monotonic() - run.last_fed < delay:
                    continue  # something came live meanwhile
            run.wake.clear()
            try:
                found = await self._read_store(run)
            except asyncio.CancelledError:
                raise
            except Exception:  # a store error: look again later
                _log.warning("run stream %s: reading the log failed", run.run_id, exc_info=True)
                found = False
            delay = self._poll_s if found else min(delay * 2, self._max_poll_s)
            if not found:
                run.last_fed = time.monotonic()  # the wait starts again from this look

    async def _followed(self, runtime: FollowedRuntime, workspace_id: str, run_id: RunId) -> _FollowedRun:
        finished = self._finished.get(run_id)
        if finished is not None:
            self._finished.move_to_end(run_id)
            return finished
        run = self._runs.get(run_id)
        if run is None:
            self.watch(runtime)
            for other in self._runtimes.runtimes_of(workspace_id):
                self.watch(other)
            run = self._runs[run_id] = _FollowedRun(run_id, runtime.store, LogStream(run_id))
            feed = commit_feed(runtime.store)
            if feed is not None:  # a commit by another process (a worker) wakes the follower now, not at its poll
                followed = run

                def noticed(notice: CommitNotice) -> None:
                    if notice.run_id == str(run_id) and notice.last_sequence > followed.known:
                        followed.wake.set()

                run.unnotice = feed.subscribe(noticed)
            run.loading = asyncio.ensure_future(self._load(run))
        assert run.loading is not None
        try:
            await asyncio.shield(run.loading)
        except Exception:
            if self._runs.get(run_id) is run and not run.connections:
                del self._runs[run_id]  # the next connection reads again
            raise
        return run

    async def frames(
        self, runtime: FollowedRuntime, workspace_id: str, run_id: RunId, resume: str
    ) -> AsyncIterator[bytes]:
        """The SSE frames of run `run_id` after the `Last-Event-ID` `resume` ("" = from the start), until its
        terminal event (or the connection falls `BACKLOG_FRAMES` behind)."""
        seq, skip = resume_point(resume)
        run = await self._followed(runtime, workspace_id, run_id)
        # from here to the registration nothing awaits: no frame is missed between the backlog and the live ones
        backlog = [framed for s, n, framed in run.frames if s > seq or (s == seq and n > skip)]
        early = run.kept_from - 1 if seq < run.kept_from else 0
        if run.finished:
            if early:
                backlog[:0] = await _early_frames(run, early, seq, skip)
            if backlog:
                yield b"".join(backlog)
            return
        connection = _Connection(after_seq=max(seq - 1, 0))
        run.connections.add(connection)
        if run.poller is None:
            run.poller = asyncio.ensure_future(self._poll(run))
        try:
            if early:  # live frames wait in the connection's queue meanwhile
                backlog[:0] = await _early_frames(run, early, seq, skip)
            if backlog:
                yield b"".join(backlog)
            while True:
                # what is queued goes out as one write: the frames of one commit (step, final, run.succeeded) and a
                # burst of tokens cost one send, not one each
                batch = [await connection.queue.get()]
                while not connection.queue.empty() and batch[-1] is not None:
                    batch.append(connection.queue.get_nowait())
                ended = batch[-1] is None
                chunk = b"".join(item for item in batch if item is not None)
                if chunk:
                    yield chunk
                if ended:
                    return
        finally:
            connection.closed = True
            run.connections.discard(connection)
            if not run.connections and not run.finished and self._runs.get(run_id) is run:
                del self._runs[run_id]  # nobody follows it any more: the next connection reads the log again
                _stop_polling(run)


def _framed(out: StreamEventModel, sequence: int, n: int) -> bytes:
    """The SSE frame of stream event `out`, the `n`-th made from log event `sequence` (tokens have no id)."""
    kind = str(getattr(out, "type", "message"))
    data = encode_stream_event(out)
    if kind == "token" or out.seq is None:
        return frame(kind, data)
    return frame(kind, data, f"{sequence}-{n}")


async def _early_frames(run: _FollowedRun, upto: int, seq: int, skip: int) -> list[bytes]:
    """The frames of log events 1..`upto` after the resume point (`seq`, `skip`), made from the store: those a run
    dropped from memory (`RUN_BYTES`)."""
    stream = LogStream(run.run_id)
    out: list[bytes] = []
    for event in await run.storage.fetch_events(run.run_id, limit=upto):
        for n, made in enumerate(stream.committed(event), start=1):
            if event.sequence > seq or (event.sequence == seq and n > skip):
                out.append(_framed(made, event.sequence, n))
    return out


def _stop_polling(run: _FollowedRun) -> None:
    if run.poller is not None:
        run.poller.cancel()
        run.poller = None


async def run_frames(
    streams: RunStreams, runtime: WorkspaceRuntime, workspace_id: str, run_id: RunId, resume: str, idle_s: float
) -> AsyncIterator[bytes]:
    async for item in Paced(streams.frames(runtime, workspace_id, run_id, resume), idle_s=idle_s):
        yield KEEPALIVE if isinstance(item, Beat) else item


async def feed_frames(
    access: Access, who: CallerContext, runtime: WorkspaceRuntime, sub: FeedSubscription, idle_s: float
) -> AsyncIterator[bytes]:
    """The feed's frames the caller may see: the runs it may see (`Access.may_see`, decided once per run)."""
    allowed: dict[RunId, bool] = {}

    async def visible(run_id: RunId) -> bool:
        if who.has("admin"):
            return True
        if run_id not in allowed:
            run = await runtime.store.fetch_run(run_id)
            allowed[run_id] = run is not None and await access.may_see(who, runtime, run)
        return allowed[run_id]

    async def frames() -> AsyncIterator[FeedFrame]:
        try:
            for item in sub.backlog:
                if item.run_id is None or await visible(item.run_id):
                    yield item
            while True:
                item = await sub.queue.get()
                if item is None:
                    return  # the feed closed this connection (too slow, or shutting down)
                if item.run_id is None or await visible(item.run_id):
                    yield item
        finally:
            sub.close()

    async for item in Paced(frames(), idle_s=idle_s):
        if isinstance(item, Beat):
            yield KEEPALIVE
        else:
            yield frame(item.kind, item.data, item.frame_id)


def register(app: FastAPI, access: Access, feeds: Feeds, slots: StreamSlots, *, idle_s: float) -> None:
    streams = RunStreams(access.manager)
    access.manager.on_runtime(streams.runtime_made)

    @app.get("/v1/runs/{run_id}/events", response_model=None)
    async def run_events(  # pyright: ignore[reportUnusedFunction]
        run_id: str,
        who: Caller,
        request: Request,
        after: int = 0,
        last_event_id: Annotated[str | None, Header()] = None,
    ) -> Response | dict[str, object]:
        """The run's stored events after sequence `after` as JSON pages (1,000 each), or with `Accept:
        text/event-stream` its stream-protocol events as SSE, resumable with `Last-Event-ID`."""
        access.need(who, "runs:read")
        ws, runtime, run = await access.find_run(who, run_id)
        accept = request.headers.get("accept", "")
        if "text/event-stream" not in accept:
            events = await runtime.store.fetch_events(run.run_id, after, limit=1000)
            return {"events": [event_json(e) for e in events], "next": events[-1].sequence if events else after}
        release = slots.take(who.subject_ref)
        resume = last_event_id or (f"{after}-{SKIP_ALL}" if after > 0 else "")
        return SlotStream(run_frames(streams, runtime, ws.id, run.run_id, resume, idle_s), release)

    @app.get("/v1/workspaces/{ws_id}/events", response_model=None)
    async def workspace_events(  # pyright: ignore[reportUnusedFunction]
        ws_id: str, who: Caller, last_event_id: Annotated[str | None, Header()] = None
    ) -> Response:
        """SSE of every run of the workspace the caller may see, live; ids `<run_id>:<seq>-<n>`, resumable with
        `Last-Event-ID` (a `feed.reset` frame first when the feed no longer holds that id)."""
        access.need(who, "runs:read")
        ws = access.workspace(who, ws_id)
        runtime = access.runtime_for(who, ws)
        release = slots.take(who.subject_ref)
        try:
            feed = await feeds.feed(ws.id)
        except BaseException:
            release()
            raise
        sub = feed.subscribe(last_event_id)

        def done() -> None:
            sub.close()
            release()

        return SlotStream(feed_frames(access, who, runtime, sub, idle_s), done)

"""The event routes: one run's events (a JSON page, or SSE) and the workspace feed (SSE of every run).

A run's SSE stream: its stream-protocol events (SPEC §14), caught up from the log and then live (tokens included)
until the terminal event. Each committed event's `id:` is `<log sequence>-<n>` (one log event can make several
stream events); a client that reconnects with that `Last-Event-ID` gets every later event exactly once. Tokens are
live only and carry no id. The feed's ids and resume rules are `feed.py`'s. Limits and keep-alives: `sse.py`.

`RunStreams` serves every connection to a run's stream from one subscription to the store's one follower
(`runtime.log_follower.LogFollower`, which the workspace feed, `Workspace.stream` and `events --follow` share): it
turns each committed event into stream events once (one `LogStream` per run) and encodes each SSE frame once; every
connection is a position in that run's list of frames plus the frames that follow, pushed to it as the follower
hands them on (live from the writer, or read from the store on a commit notice or a poll: the follower's job). A
finished run's frames are kept for a while (the newest `KEEP_FINISHED` runs, at most `KEEP_BYTES`), so a late or
replaying connection reads no store either.

The frames of followed runs and the SSE routes over them live together: resumption by `Last-Event-ID` is only
gap-free if the frames and the routes agree on the same sequence numbers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Protocol

from fastapi import FastAPI, Header, Request
from fastapi.responses import Response

from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.stream import StreamEventModel, encode_stream_event
from bearagent.runtime.log_follower import MAX_POLL_S, POLL_S, LogFollower
from bearagent.runtime.run_writer import Published, TokenDelta
from bearagent.runtime.streaming import LogStream
from bearagent.server.access import Access, Caller
from bearagent.server.auth import CallerContext
from bearagent.server.feed import FeedFrame, Feeds, FeedSubscription
from bearagent.server.shapes import SKIP_ALL, event_json, resume_point
from bearagent.server.sse import KEEPALIVE, Beat, Paced, SlotStream, StreamSlots, frame
from bearagent.service.runner import WorkspaceRuntime

_log = logging.getLogger("bearagent.server")

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
    """One run's frames, fed by the store's follower (a `LogListener`)."""

    owner: RunStreams
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
    unfollow: Callable[[], None] | None = None
    """Ends the follower's subscription."""

    @property
    def finished(self) -> bool:
        return self.stream.finished

    def event(self, event: Event) -> None:
        self.owner.feed(self, event)

    def token(self, delta: TokenDelta) -> None:
        data = frame("token", encode_stream_event(self.stream.token(delta)))
        for connection in tuple(self.connections):
            if delta.after >= connection.after_seq:
                connection.push(data)

    def ended(self) -> None:
        """The terminal event was fed (`feed` retired the run)."""


class RunStreams:
    """The frames of the runs that SSE connections follow (see the module docstring)."""

    def __init__(self, runtimes: Runtimes, *, poll_s: float = POLL_S, max_poll_s: float = MAX_POLL_S) -> None:
        self._runtimes = runtimes
        self._poll_s = poll_s
        self._max_poll_s = max_poll_s
        self._runs: dict[RunId, _FollowedRun] = {}
        self._finished: OrderedDict[RunId, _FollowedRun] = OrderedDict()
        self._finished_bytes = 0

    def runtime_made(self, workspace_id: str, runtime: FollowedRuntime) -> None:
        """A runtime the registry made: its store's follower takes its writer's publications."""
        with contextlib.suppress(RuntimeError):  # made outside the event loop: watched when first followed
            LogFollower.of(runtime.store).watch(runtime.writer)

    # ---- one run -------------------------------------------------------------------------------------------------

    def feed(self, run: _FollowedRun, event: Event) -> None:
        made = run.stream.committed(event)
        run.known = event.sequence
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
        if run.unfollow is not None:
            run.unfollow()
            run.unfollow = None
        if run.kept_from > 1:
            return  # not all of it in memory: a later connection reads the log
        self._finished[run.run_id] = run
        self._finished_bytes += run.size
        while self._finished and (len(self._finished) > KEEP_FINISHED or self._finished_bytes > KEEP_BYTES):
            _, dropped = self._finished.popitem(last=False)
            self._finished_bytes -= dropped.size

    async def _subscribe(self, run: _FollowedRun, follower: LogFollower) -> None:
        unfollow = await follower.follow(run.run_id, run, poll_s=self._poll_s, max_poll_s=self._max_poll_s)
        if run.finished or self._runs.get(run.run_id) is not run:
            unfollow()
        else:
            run.unfollow = unfollow

    async def _followed(self, runtime: FollowedRuntime, workspace_id: str, run_id: RunId) -> _FollowedRun:
        finished = self._finished.get(run_id)
        if finished is not None:
            self._finished.move_to_end(run_id)
            return finished
        run = self._runs.get(run_id)
        if run is None:
            follower = LogFollower.of(runtime.store)
            follower.watch(runtime.writer)
            for other in self._runtimes.runtimes_of(workspace_id):
                LogFollower.of(other.store).watch(other.writer)
            run = self._runs[run_id] = _FollowedRun(self, run_id, runtime.store, LogStream(run_id))
            run.loading = asyncio.ensure_future(self._subscribe(run, follower))
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
                if run.unfollow is not None:
                    run.unfollow()
                    run.unfollow = None


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

"""The workspace feed (`GET /v1/workspaces/{ws}/events`): every run of a workspace, live, as one SSE stream of the
stream protocol (protocol 2: every event carries its `run_id` and `seq`), resumable with `Last-Event-ID`.

One `WorkspaceFeed` per workspace, shared by all its connections: it follows every run of the workspace (the
writers of this server's runtimes, live and with tokens; the store, polled, for runs other processes write), turns
each run's log into stream events with that run's own `LogStream` (the same events `/v1/runs/{id}/events` gives)
and appends them, in the order it saw them, to a bounded journal. A connection is a position in that journal plus
live frames.

The SSE id of a frame is `<run_id>:<seq>-<n>`: the n-th stream event made from event `seq` of run `run_id`'s log
(for `subagent.*` the parent's log, whose `ChildRunStarted` it comes from). Resuming with a `Last-Event-ID` the
journal still holds delivers every later frame of the feed, in the same order, once. An id it does not hold (the
server restarted, or the client was away for more than the journal keeps) starts the stream with a `feed.reset`
frame: the client must reload what it shows from the run routes, as the feed cannot know what it missed. Tokens are
live only and carry no id; a fresh connection (no `Last-Event-ID`) starts with what happens from then on.

Why not a global cursor: the store's port has no "events of every run after position X" read (SQLite's `seq_no`
would give one, PostgreSQL needs care with commit order), and the feed must not read past the port. The
`<run_id>:<seq>-<n>` id names an event, not a server's memory, so such a read can later make resumes survive a
restart without changing what clients send.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.state import RunStatus
from bearagent.domain.stream import StreamEventModel, encode_stream_event
from bearagent.ports import RunStorage
from bearagent.runtime.run_writer import Committed, Published, TokenDelta
from bearagent.runtime.streaming import LogStream
from bearagent.service.runner import WorkspaceRuntime

_log = logging.getLogger("bearagent.server")

POLL_S = 0.5
"""How often the feed looks in the store for events other processes wrote."""
JOURNAL_FRAMES = 10_000
JOURNAL_BYTES = 32 * 1024 * 1024
"""What the journal keeps (the oldest frames go first): how far back a reconnecting client can resume."""
BACKLOG_FRAMES = 10_000
"""Frames one connection may fall behind by; a slower one is closed and resumes from the journal."""
DISCOVER_RUNS = 50
"""The newest runs each poll reads, to find runs other processes started."""
SLOW_POLL_S = 10.0
"""The longest a followed run that is not among the newest goes without a look in the store."""
_ACTIVE: tuple[RunStatus, ...] = ("queued", "running", "waiting", "interrupted")


@dataclass(frozen=True, slots=True)
class FeedFrame:
    number: int
    """Position in the journal (1, 2, …); 0 for frames that are not journaled (tokens, `feed.reset`)."""
    run_id: RunId | None
    """The run whose log the frame comes from."""
    frame_id: str | None
    kind: str
    data: str


@dataclass
class _Track:
    stream: LogStream
    known: int = 0
    """The last sequence of the run fed to `stream`."""
    silent_until: int = 0
    """Events up to this sequence happened before the feed started: fed to the stream, never framed."""
    still: int = 0
    """Polls in a row that found nothing new in the store."""
    next_look: float = 0.0
    """When the poll looks at this run again (`time.monotonic()`), if it is not among the newest."""


@dataclass
class FeedSubscription:
    """One connection: the journal frames it missed (`backlog`), then live frames as they come."""

    backlog: list[FeedFrame]
    queue: asyncio.Queue[FeedFrame | None] = field(default_factory=lambda: asyncio.Queue[FeedFrame | None]())
    closed: bool = False
    _detach: Callable[[FeedSubscription], None] | None = None

    def push(self, item: FeedFrame) -> None:
        if self.closed:
            return
        if self.queue.qsize() >= BACKLOG_FRAMES:  # too slow: end the stream; the client resumes from the journal
            self.queue.put_nowait(None)
            self.close()
            return
        self.queue.put_nowait(item)

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            if self._detach is not None:
                self._detach(self)


class WorkspaceFeed:
    """The feed of one workspace (see the module docstring)."""

    def __init__(
        self,
        workspace_id: str,
        storage: RunStorage,
        *,
        poll_s: float = POLL_S,
        journal_frames: int = JOURNAL_FRAMES,
        journal_bytes: int = JOURNAL_BYTES,
    ) -> None:
        self.workspace_id = workspace_id
        self._storage = storage
        self._poll_s = poll_s
        self._journal: deque[FeedFrame] = deque()
        self._journal_frames = journal_frames
        self._journal_bytes = journal_bytes
        self._bytes = 0
        self._index: dict[str, int] = {}
        self._number = 0
        self._tracks: dict[RunId, _Track] = {}
        self._ended: set[RunId] = set()
        """Runs the feed has nothing more to say of: ended before it started, or since (their track is dropped)."""
        self._inbox: asyncio.Queue[Published] = asyncio.Queue()
        self._subs: list[FeedSubscription] = []
        self._unsubscribe: list[Callable[[], None]] = []
        self._watched: set[int] = set()
        self._task: asyncio.Task[None] | None = None

    # ---- lifecycle ---------------------------------------------------------------------------------------------

    async def start(self, runtimes: Iterable[WorkspaceRuntime]) -> None:
        """Follow the writers of `runtimes` (and of every runtime `watch`ed later), note where every run stands
        now, and start following. Subscribing first means nothing committed from here on is missed."""
        for runtime in runtimes:
            self.watch(runtime)
        snapshot = list(await self._storage.fetch_runs(limit=DISCOVER_RUNS))
        for status in _ACTIVE:
            snapshot += await self._storage.fetch_runs(status=status, limit=10_000)
        for run in snapshot:
            if run.run_id in self._tracks or run.run_id in self._ended:
                continue
            if run.status in _ACTIVE:
                self._tracks[run.run_id] = _Track(LogStream(run.run_id), silent_until=run.last_sequence)
            else:
                self._ended.add(run.run_id)
        self._task = asyncio.create_task(self._follow())

    def watch(self, runtime: WorkspaceRuntime) -> None:
        writer = runtime.writer
        if id(writer) in self._watched:
            return
        self._watched.add(id(writer))
        self._unsubscribe.append(writer.subscribe(self._inbox.put_nowait))

    async def aclose(self) -> None:
        for unsubscribe in self._unsubscribe:
            with contextlib.suppress(Exception):
                unsubscribe()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        for sub in list(self._subs):
            sub.queue.put_nowait(None)
            sub.close()

    # ---- connections -------------------------------------------------------------------------------------------

    def subscribe(self, last_event_id: str | None) -> FeedSubscription:
        """A connection from `last_event_id` on (None: from now). Atomic with respect to new frames: nothing
        between the backlog and the first live frame is lost or repeated."""
        backlog: list[FeedFrame] = []
        if last_event_id:
            number = self._index.get(last_event_id.strip())
            if number is None:
                backlog.append(self._reset(last_event_id))
            elif self._journal:
                start = number - self._journal[0].number + 1
                backlog.extend(list(self._journal)[start:])
        sub = FeedSubscription(backlog=backlog, _detach=self._detach)
        self._subs.append(sub)
        return sub

    def _detach(self, sub: FeedSubscription) -> None:
        if sub in self._subs:
            self._subs.remove(sub)

    def _reset(self, last_event_id: str) -> FeedFrame:
        oldest = self._journal[0].frame_id if self._journal else None
        data = {
            "type": "feed.reset",
            "last_event_id": last_event_id[:200],
            "oldest_event_id": oldest,
            "message": "the feed no longer holds that event (the server restarted, or it was too long ago): "
            "reload the runs you show from /v1/runs/{id} and /v1/runs/{id}/events; the feed goes on from now",
        }
        return FeedFrame(0, None, None, "feed.reset", json.dumps(data, separators=(",", ":")))

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    # ---- following the runs ------------------------------------------------------------------------------------

    async def _follow(self) -> None:
        next_poll = time.monotonic() + self._poll_s
        while True:
            item: Published | None = None
            with contextlib.suppress(TimeoutError):
                item = await asyncio.wait_for(self._inbox.get(), max(next_poll - time.monotonic(), 0.0))
            try:
                if item is not None:
                    await self._take(item)
                if time.monotonic() >= next_poll:
                    await self._poll()
                    next_poll = time.monotonic() + self._poll_s
            except asyncio.CancelledError:
                raise
            except Exception:  # a store error: the next poll reads what is missing
                _log.warning("workspace feed %s: reading the log failed", self.workspace_id, exc_info=True)
                next_poll = time.monotonic() + self._poll_s

    def _track(self, run_id: RunId) -> _Track | None:
        track = self._tracks.get(run_id)
        if track is None and run_id not in self._ended:
            track = self._tracks[run_id] = _Track(LogStream(run_id))  # a run that started after the feed did
        return track

    async def _take(self, item: Published) -> None:
        track = self._track(item.run_id)
        if track is None:
            return
        if isinstance(item, TokenDelta):
            if item.after > track.known:
                await self._catch_up(item.run_id, track, upto=item.after)
            if item.after == track.known:
                token = track.stream.token(item)
                self._fan_out(FeedFrame(0, item.run_id, None, "token", encode_stream_event(token)))
            return
        assert isinstance(item, Committed)
        if item.sequence <= track.known:
            return  # already read from the store
        if item.sequence > track.known + 1:
            await self._catch_up(item.run_id, track, upto=item.sequence - 1)
        if item.sequence == track.known + 1:
            self._feed(item.run_id, track, item.event)

    async def _poll(self) -> None:
        """One look at the store for what other processes wrote: the newest runs (to find new ones) and the runs this
        feed follows that are not among them, each looked at again later the longer it stays still (up to
        `SLOW_POLL_S`: a run waiting for days costs a read a few times a minute, not twice a second)."""
        runs = list(await self._storage.fetch_runs(limit=DISCOVER_RUNS))
        seen = {r.run_id for r in runs}
        now = time.monotonic()
        for run_id, track in list(self._tracks.items()):
            if run_id in seen or now < track.next_look:
                continue
            run = await self._storage.fetch_run(run_id)
            if run is not None:
                runs.append(run)
        for run in runs:
            track = self._track(run.run_id)
            if track is None:
                continue
            if run.last_sequence > track.known:
                await self._catch_up(run.run_id, track)
                track.still = 0
            else:
                track.still += 1
            track.next_look = now + min(self._poll_s * 2**track.still, SLOW_POLL_S)

    async def _catch_up(self, run_id: RunId, track: _Track, *, upto: int | None = None) -> None:
        limit = None if upto is None else upto - track.known
        if limit is not None and limit <= 0:
            return
        for event in await self._storage.fetch_events(run_id, after_sequence=track.known, limit=limit):
            if event.sequence != track.known + 1 or run_id in self._ended:
                break  # never skip: the rest comes with the next read
            self._feed(run_id, track, event)

    def _feed(self, run_id: RunId, track: _Track, event: Event) -> None:
        made: list[StreamEventModel] = track.stream.committed(event)
        track.known = event.sequence
        if track.stream.finished:  # its terminal event: nothing can follow it
            self._tracks.pop(run_id, None)
            self._ended.add(run_id)
        if event.sequence <= track.silent_until:
            return
        for n, out in enumerate(made, start=1):
            self._number += 1
            item = FeedFrame(
                self._number,
                run_id,
                f"{run_id}:{event.sequence}-{n}",
                str(getattr(out, "type", "message")),
                encode_stream_event(out),
            )
            self._keep(item)
            self._fan_out(item)

    def _keep(self, item: FeedFrame) -> None:
        assert item.frame_id is not None
        self._journal.append(item)
        self._index[item.frame_id] = item.number
        self._bytes += len(item.data)
        while self._journal and (len(self._journal) > self._journal_frames or self._bytes > self._journal_bytes):
            dropped = self._journal.popleft()
            self._bytes -= len(dropped.data)
            if dropped.frame_id is not None:
                self._index.pop(dropped.frame_id, None)

    def _fan_out(self, item: FeedFrame) -> None:
        for sub in tuple(self._subs):
            sub.push(item)


class Feeds:
    """The feeds of a server's workspaces, each started on its first connection and kept until shutdown (so a
    client that reconnects finds what it missed)."""

    def __init__(self, storage_of: Callable[[str], RunStorage], runtimes_of: Callable[[str], list[WorkspaceRuntime]]):
        self._storage_of = storage_of
        self._runtimes_of = runtimes_of
        self._feeds: dict[str, WorkspaceFeed] = {}
        self._lock = asyncio.Lock()

    async def feed(self, workspace_id: str) -> WorkspaceFeed:
        existing = self._feeds.get(workspace_id)
        if existing is not None:
            return existing
        async with self._lock:
            existing = self._feeds.get(workspace_id)
            if existing is None:
                existing = self._feeds[workspace_id] = WorkspaceFeed(workspace_id, self._storage_of(workspace_id))
                try:  # registered first: a runtime made while it starts is watched too
                    await existing.start(self._runtimes_of(workspace_id))
                except BaseException:
                    del self._feeds[workspace_id]
                    raise
            return existing

    def runtime_made(self, workspace_id: str, runtime: WorkspaceRuntime) -> None:
        feed = self._feeds.get(workspace_id)
        if feed is not None:
            feed.watch(runtime)

    async def aclose(self) -> None:
        for feed in self._feeds.values():
            await feed.aclose()
        self._feeds.clear()

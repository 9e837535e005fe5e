"""The workspace feed (`GET /v1/workspaces/{ws}/events`): every run of a workspace, live, as one SSE stream of the
stream protocol (protocol 2: every event carries its `run_id` and `seq`), resumable with `Last-Event-ID`.

One `WorkspaceFeed` per workspace, shared by all its connections: it follows every active run of the workspace
through the store's one follower (`runtime.log_follower`: this server's writers, live and with tokens; the store's
notices, the newest runs read every `POLL_S` and a poll of each followed run, for runs other processes write), turns
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
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.state import RunStatus
from bearagent.domain.stream import StreamEventModel, encode_stream_event
from bearagent.ports import RunStorage
from bearagent.runtime.log_follower import DISCOVER_RUNS, LogFollower
from bearagent.runtime.run_writer import TokenDelta
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


@dataclass(eq=False)
class _Track:
    """One run the feed follows: a subscriber (`LogListener`) of the store's follower."""

    feed: WorkspaceFeed
    run_id: RunId
    stream: LogStream
    silent_until: int = 0
    """Events up to this sequence happened before the feed started: fed to the stream, never framed."""
    unfollow: Callable[[], None] | None = None

    def event(self, event: Event) -> None:
        self.feed.framed(self, event)

    def token(self, delta: TokenDelta) -> None:
        token = self.stream.token(delta)
        self.feed.fan_out(FeedFrame(0, self.run_id, None, "token", encode_stream_event(token)))

    def ended(self) -> None:
        self.feed.ended(self)


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
        self._subs: list[FeedSubscription] = []
        self._follower: LogFollower | None = None
        self._stop_watching: Callable[[], None] | None = None
        self._seen_early: list[RunId] | None = None
        self._joins: set[asyncio.Task[None]] = set()
        self._closed = False

    # ---- lifecycle ---------------------------------------------------------------------------------------------

    async def start(self, runtimes: Iterable[WorkspaceRuntime]) -> None:
        """Follow the store through its one follower (with the writers of `runtimes`, and of every runtime
        `watch`ed later), note where every run stands now, and follow the active ones. Watching first means no run
        that moves from here on is missed (a followed run is read from the store from its first event)."""
        follower = self._follower = LogFollower.of(self._storage)
        for runtime in runtimes:
            self.watch(runtime)
        self._seen_early = []
        self._stop_watching = follower.watch_workspace(self._seen, discover_s=self._poll_s)
        snapshot = list(await self._storage.fetch_runs(limit=DISCOVER_RUNS))
        for status in _ACTIVE:
            snapshot += await self._storage.fetch_runs(status=status, limit=10_000)
        for run in snapshot:
            if run.run_id in self._tracks or run.run_id in self._ended:
                continue
            if run.status in _ACTIVE:
                self._join(run.run_id, silent_until=run.last_sequence)
            else:
                self._ended.add(run.run_id)
        early, self._seen_early = self._seen_early, None
        for run_id in early:  # moved while the snapshot was read: started after the feed did
            self._seen(run_id, None)

    def watch(self, runtime: WorkspaceRuntime) -> None:
        if self._follower is not None:
            self._follower.watch(runtime.writer)

    async def aclose(self) -> None:
        self._closed = True
        if self._stop_watching is not None:
            self._stop_watching()
            self._stop_watching = None
        for task in list(self._joins):
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        for track in list(self._tracks.values()):
            if track.unfollow is not None:
                track.unfollow()
        self._tracks.clear()
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

    def _seen(self, run_id: RunId, run: object) -> None:
        """The follower saw `run_id` move (cheap: called for every publication of every run)."""
        if self._seen_early is not None:
            self._seen_early.append(run_id)
        elif run_id not in self._tracks and run_id not in self._ended and not self._closed:
            self._join(run_id, silent_until=0)  # a run that started after the feed did

    def _join(self, run_id: RunId, *, silent_until: int) -> None:
        track = self._tracks[run_id] = _Track(self, run_id, LogStream(run_id), silent_until=silent_until)
        task = asyncio.ensure_future(self._follow(track))
        self._joins.add(task)
        task.add_done_callback(self._joins.discard)

    async def _follow(self, track: _Track) -> None:
        assert self._follower is not None
        try:
            unfollow = await self._follower.follow(track.run_id, track, poll_s=self._poll_s, max_poll_s=SLOW_POLL_S)
        except asyncio.CancelledError:
            raise
        except Exception:  # a store error: the run is looked for again the next time it is seen
            _log.warning("workspace feed %s: reading run %s failed", self.workspace_id, track.run_id, exc_info=True)
            if self._tracks.get(track.run_id) is track:
                del self._tracks[track.run_id]
            return
        if self._tracks.get(track.run_id) is track and not self._closed:
            track.unfollow = unfollow
        else:
            unfollow()

    def ended(self, track: _Track) -> None:
        if self._tracks.get(track.run_id) is track:
            del self._tracks[track.run_id]
        self._ended.add(track.run_id)

    def framed(self, track: _Track, event: Event) -> None:
        made: list[StreamEventModel] = track.stream.committed(event)
        if event.sequence <= track.silent_until:
            return
        run_id = track.run_id
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
            self.fan_out(item)

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

    def fan_out(self, item: FeedFrame) -> None:
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

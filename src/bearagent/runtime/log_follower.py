"""The one follower of a workspace store's log: every reader of a run as it grows is served by it (issue 30).

`bearagent events --follow`, `Workspace.stream` (`runtime.streaming.follow_run`), the server's run SSE routes
(`server/streams.RunStreams`) and its workspace feed (`server/feed.WorkspaceFeed`) all subscribe here instead of
each polling on its own. There is one `LogFollower` per store object (`LogFollower.of(storage)`); it is woken

- in this process by the run writers it `watch`es (each subscribed once: every commit and token delta they publish),
- across processes by the store's commit notices (`ports.commit_feed`: PostgreSQL's LISTEN/NOTIFY; each followed
  run's own channel while it is followed, the lifecycle channel while a workspace watcher watches), and else by
  polling: a followed run the writer has said nothing of for a
  while is read from the store, less often the longer it stays still. A run a writer of this process commits (it
  published one of its commits, and not its interruption) is read only at the longest poll: that writer publishes
  every commit it makes, and a gap in what it published wakes the tail at once, so its silence is the run's own (a
  model thinking, a tool running); the look is left for what another process may write meanwhile (an answer, a
  cancel), which a store with commit notices says at once anyway. Under a thousand live runs those looks were a
  tenth of a server's time (issue 37).

Each followed run has one tail: what the follower has delivered of it (`known`, a log sequence) and its subscribers.
A subscriber gets the run's committed events from sequence 1 in order, with no gap and no repeat, then its token
deltas as they come (tokens are live only: one is delivered when it follows the last event delivered), and `ended`
after the terminal event. A subscriber that joins a tail already under way reads the events before it joined from
the store for itself; the tail's store reads (the first, after a gap in what was published, after a notice, on a
poll) are one for all its subscribers. A workspace watcher (`watch_workspace`, the feed) is also told of every run
it sees move (a writer's publication, a notice, or the newest runs read every `discover_s`).

It lives in `runtime/`, over the storage port and the run writer, because `runtime.streaming.follow_run` is built on
it; the faces above only subscribe. Why it is over 400 lines: joining a tail under way, the reads a gap or a notice
asks for, and the poll's back-off are one ordering argument (no gap, no repeat) that splits badly.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol, cast

from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.state import RunProjection
from bearagent.ports import CommitNotice, commit_feed
from bearagent.runtime.run_writer import Committed, Published, TokenDelta

_log = logging.getLogger("bearagent.follower")

POLL_S = 0.25
"""How long a followed run may go without a live event before the follower looks in the store."""
MAX_POLL_S = 2.0
"""The longest a still run (waiting for an approval, written by another process) goes without a look."""
DISCOVER_S = 0.5
"""How often a workspace watcher's follower reads the newest runs, to find runs other processes started."""
DISCOVER_RUNS = 50
"""The newest runs each of those reads returns."""
_JOIN_READS = 3
"""Store reads a first load makes in a row while publications show a gap, before it leaves the rest to the poll."""
TERMINAL_EVENTS = frozenset({"RunSucceeded", "RunFailed", "RunCancelled"})


class LogListener(Protocol):
    """A subscriber of one run: its events in order from sequence 1, its live token deltas, then `ended`."""

    def event(self, event: Event) -> None: ...

    def token(self, delta: TokenDelta) -> None: ...

    def ended(self) -> None: ...


class Publisher(Protocol):
    """What the follower uses of a run writer: its publications."""

    def subscribe(self, subscriber: Callable[[Published], None]) -> Callable[[], None]: ...


class FollowedLog(Protocol):
    """What the follower reads of a store: a run's events (and, for a workspace watcher, the newest runs)."""

    async def fetch_events(
        self, run_id: RunId, after_sequence: int = 0, limit: int | None = None
    ) -> Sequence[Event]: ...


WorkspaceWatcher = Callable[[RunId, "RunProjection | None"], None]
"""Told of every run the follower sees move (a publication, a notice; with its projection when a read of the newest
runs found it): the workspace feed decides whether to follow it. Called often: it must be cheap."""


_END = object()


@dataclass(eq=False)
class _Sub:
    listener: LogListener
    poll_s: float
    max_poll_s: float
    buffer: list[object] | None = None
    """While the subscriber reads what came before it joined: what the tail delivered meanwhile, in order."""
    closed: bool = False


@dataclass(eq=False)
class _Tail:
    run_id: RunId
    known: int = 0
    """The last log sequence delivered to the subscribers."""
    finished: bool = False
    reading: bool = False
    subs: list[_Sub] = field(default_factory=list[_Sub])
    pending: list[Published] = field(default_factory=list[Published])
    """Publications that came during a store read, or after a gap: looked at again after the next read."""
    loading: asyncio.Task[None] | None = None
    poller: asyncio.Task[None] | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    last_fed: float = field(default_factory=time.monotonic)
    unnotice: Callable[[], None] | None = None
    """Ends the subscription to the run's commit notices (other processes' commits), where the store has them."""
    local: bool = False
    """A writer of this process commits the run: it published a commit, and not the run's interruption since."""

    def poll_range(self) -> tuple[float, float]:
        """The shortest and the longest wait between looks in the store; a run written here waits the longest."""
        live = [sub for sub in self.subs if not sub.closed]
        low, high = (
            (min(sub.poll_s for sub in live), min(sub.max_poll_s for sub in live)) if live else (POLL_S, MAX_POLL_S)
        )
        return (high, high) if self.local else (low, high)


_FOLLOWERS: weakref.WeakKeyDictionary[object, LogFollower] = weakref.WeakKeyDictionary()


class LogFollower:
    """The follower of one store's log (see the module docstring)."""

    def __init__(self, storage: FollowedLog) -> None:
        self._storage_ref: Callable[[], FollowedLog | None]
        try:
            self._storage_ref = weakref.ref(storage)
        except TypeError:  # not weakly referable: held for good
            self._storage_ref = lambda: storage
        self._tails: dict[str, _Tail] = {}
        self._watched: set[int] = set()
        self._watchers: list[tuple[WorkspaceWatcher, float]] = []
        self._discoverer: asyncio.Task[None] | None = None
        self._unnotice: Callable[[], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    @staticmethod
    def of(storage: FollowedLog) -> LogFollower:
        """The one follower of `storage` (made on first use). A store followed on another event loop at the same
        time gets a follower of its own for this loop."""
        loop = asyncio.get_running_loop()
        try:
            follower = _FOLLOWERS.get(storage)
        except TypeError:
            return LogFollower(storage)
        if follower is None or (follower._loop is not None and follower._loop is not loop and follower._busy):
            follower = LogFollower(storage)
            with contextlib.suppress(TypeError):
                _FOLLOWERS[storage] = follower
        return follower

    @property
    def storage(self) -> FollowedLog:
        storage = self._storage_ref()
        if storage is None:
            raise RuntimeError("the store this follower read is gone")
        return storage

    @property
    def _busy(self) -> bool:
        return bool(self._tails or self._watchers)

    def watch(self, writer: Publisher) -> None:
        """Take `writer`'s publications (once per writer, for good: a writer outlives no store it writes)."""
        if id(writer) not in self._watched:
            self._watched.add(id(writer))
            writer.subscribe(self._take)

    @property
    def followed(self) -> int:
        """How many runs the follower follows now."""
        return len(self._tails)

    # ---- subscriptions ---------------------------------------------------------------------------------------------

    async def follow(
        self, run_id: RunId, listener: LogListener, *, poll_s: float = POLL_S, max_poll_s: float = MAX_POLL_S
    ) -> Callable[[], None]:
        """Subscribe `listener` to run `run_id`; returns once it was handed what the store holds (from sequence 1),
        with the function that ends the subscription. A failed store read raises (and nothing stays subscribed)."""
        self._bind()
        key = str(run_id)
        tail = self._tails.get(key)
        if tail is None:
            tail = self._tails[key] = _Tail(run_id)
            tail.unnotice = self._run_notices(run_id)
            tail.loading = asyncio.ensure_future(self._load(tail))
        joined_at = tail.known
        sub = _Sub(listener, poll_s, max_poll_s, buffer=[] if joined_at else None)
        tail.subs.append(sub)
        if tail.poller is None:
            tail.poller = asyncio.ensure_future(self._poll(tail))
        try:
            assert tail.loading is not None
            await asyncio.shield(tail.loading)
            if joined_at:  # the tail was under way: what it delivered before, from the store, for this one
                for event in await self.storage.fetch_events(run_id, limit=joined_at):
                    if not sub.closed:
                        listener.event(event)
                buffered, sub.buffer = sub.buffer or [], None
                for item in buffered:
                    if not sub.closed:
                        _hand(sub, item)
        except BaseException:
            self._leave(tail, sub)
            raise
        return lambda: self._leave(tail, sub)

    def watch_workspace(self, watcher: WorkspaceWatcher, *, discover_s: float = DISCOVER_S) -> Callable[[], None]:
        """Tell `watcher` of every run this follower sees move, and read the newest runs every `discover_s` for the
        runs other processes start; returns how to stop."""
        self._bind()
        entry = (watcher, discover_s)
        self._watchers.append(entry)
        self._notices_on()
        if self._discoverer is None:
            self._discoverer = asyncio.ensure_future(self._discover())

        def stop() -> None:
            if entry in self._watchers:
                self._watchers.remove(entry)
            if not self._watchers and self._discoverer is not None:
                self._discoverer.cancel()
                self._discoverer = None
            self._idle()

        return stop

    def _bind(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is not loop and not self._busy:
            self._loop = loop

    def _leave(self, tail: _Tail, sub: _Sub) -> None:
        sub.closed = True
        if sub in tail.subs:
            tail.subs.remove(sub)
        if not tail.subs:
            self._drop(tail)

    def _drop(self, tail: _Tail) -> None:
        if self._tails.get(str(tail.run_id)) is tail:
            del self._tails[str(tail.run_id)]
        if tail.poller is not None:
            tail.poller.cancel()
            tail.poller = None
        if tail.unnotice is not None:
            with contextlib.suppress(Exception):
                tail.unnotice()
            tail.unnotice = None
        self._idle()

    def _idle(self) -> None:
        if not self._watchers and self._unnotice is not None:
            with contextlib.suppress(Exception):
                self._unnotice()
            self._unnotice = None

    def _notices_on(self) -> None:
        """The lifecycle notices, for the workspace watchers: a run another process creates, starts or ends."""
        if self._unnotice is None:
            feed = commit_feed(self.storage)
            if feed is not None:
                self._unnotice = feed.subscribe(self._noticed)

    def _run_notices(self, run_id: RunId) -> Callable[[], None] | None:
        """The run's own notices: a commit by another process wakes its tail now, not at its poll."""
        feed = commit_feed(self.storage)
        return None if feed is None else feed.subscribe(self._noticed, str(run_id))

    # ---- what comes in -----------------------------------------------------------------------------------------

    def _take(self, item: Published) -> None:
        """A writer's publication (synchronous, on the event loop)."""
        if self._watchers:
            self._tell_watchers(item.run_id, None)
        tail = self._tails.get(str(item.run_id))
        if tail is not None:
            self._published(tail, item)

    def _noticed(self, notice: CommitNotice) -> None:
        if self._watchers:
            with contextlib.suppress(ValueError):
                self._tell_watchers(RunId(notice.run_id), None)
        tail = self._tails.get(notice.run_id)
        if tail is not None and notice.last_sequence > tail.known:
            tail.wake.set()

    def _tell_watchers(self, run_id: RunId, run: RunProjection | None) -> None:
        for watcher, _ in tuple(self._watchers):
            try:
                watcher(run_id, run)
            except Exception:
                _log.warning("log follower: a workspace watcher failed", exc_info=True)

    def _published(self, tail: _Tail, item: Published) -> None:
        if tail.finished:
            return
        if tail.reading:
            tail.pending.append(item)
            return
        if isinstance(item, TokenDelta):
            if item.after == tail.known:
                self._deliver(tail, item)
            elif item.after > tail.known:
                tail.pending.append(item)
                tail.wake.set()  # commits this follower has not seen: look in the store
            return
        assert isinstance(item, Committed)
        tail.local = item.event.event_type != "RunInterrupted"
        if not tail.local:  # interrupted: another worker may take it on, and the short polls start again now
            tail.wake.set()
        if item.sequence == tail.known + 1:
            self._deliver(tail, item.event)
        elif item.sequence > tail.known + 1:
            tail.pending.append(item)
            tail.wake.set()  # a gap (a commit published before this follower followed the run): the store has it

    def _deliver(self, tail: _Tail, item: Event | TokenDelta) -> None:
        if isinstance(item, Event):
            tail.known = item.sequence
            tail.last_fed = time.monotonic()
            if item.event_type in TERMINAL_EVENTS:
                tail.finished = True
        for sub in tuple(tail.subs):
            if sub.closed:
                continue
            if sub.buffer is not None:
                sub.buffer.append(item)
            else:
                _hand(sub, item)
        if tail.finished:
            for sub in tuple(tail.subs):
                if sub.buffer is not None:
                    sub.buffer.append(_END)
                elif not sub.closed:
                    _hand(sub, _END)
            self._drop(tail)

    # ---- the store ---------------------------------------------------------------------------------------------

    async def _read(self, tail: _Tail) -> bool:
        """Deliver what the log has after `tail.known`, then the publications that waited; True if it had some."""
        tail.reading = True
        try:
            events = await self.storage.fetch_events(tail.run_id, after_sequence=tail.known)
        finally:
            tail.reading = False
        fed = False
        pending, tail.pending = tail.pending, []
        for event in events:
            if tail.finished:
                break
            if event.sequence == tail.known + 1:
                # Tokens published while the store was read, after the event before this one: they were generated
                # before this event was committed (a token names the last commit when it is published), so they
                # go first. Left for after the loop, they would be older than what the read delivered, and dropped.
                early = [i for i in pending if isinstance(i, TokenDelta) and i.after == tail.known]
                if early:
                    pending = [i for i in pending if not (isinstance(i, TokenDelta) and i.after == tail.known)]
                    for token in early:
                        self._deliver(tail, token)
                self._deliver(tail, event)
                fed = True
        for item in pending:  # in the order published; a gap left is stashed again (and wakes the poll)
            self._published(tail, item)
        return fed

    async def _load(self, tail: _Tail) -> None:
        try:
            await self._read(tail)
            reads = 1
            while tail.pending and not tail.finished and reads < _JOIN_READS:
                await self._read(tail)
                reads += 1
        except BaseException:
            if self._tails.get(str(tail.run_id)) is tail:
                self._drop(tail)  # the next subscriber reads again
            raise

    async def _poll(self, tail: _Tail) -> None:
        """Look in the store when nothing came live for a while (a run another process writes), and at once when a
        publication showed a gap or a notice came; each empty look doubles the wait, up to the longest asked for."""
        if tail.loading is not None:
            with contextlib.suppress(BaseException):
                await asyncio.shield(tail.loading)
        delay = tail.poll_range()[0]
        local = tail.local
        while not tail.finished and self._tails.get(str(tail.run_id)) is tail:
            if tail.local != local:  # a writer here took the run on, or let it go: the waits start again
                local = tail.local
                delay = tail.poll_range()[0]
            due = tail.last_fed + delay - time.monotonic()
            if due > 0 and not tail.wake.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(tail.wake.wait(), due)
                if not tail.wake.is_set() and time.monotonic() - tail.last_fed < delay:
                    continue  # something came live meanwhile
            tail.wake.clear()
            try:
                found = await self._read(tail)
            except asyncio.CancelledError:
                raise
            except Exception:  # a store error: look again later
                _log.warning("log follower: reading run %s failed", tail.run_id, exc_info=True)
                found = False
            low, high = tail.poll_range()
            delay = low if found else min(delay * 2, high)
            if not found:
                tail.last_fed = time.monotonic()  # the wait starts again from this look

    async def _discover(self) -> None:
        """For workspace watchers: read the newest runs every `discover_s`; a run no tail follows is told to the
        watchers, a followed one that moved wakes its tail."""
        while self._watchers:
            await asyncio.sleep(min(every for _, every in self._watchers))
            fetch_runs = getattr(self.storage, "fetch_runs", None)
            if not callable(fetch_runs):
                continue
            try:
                listed = cast("Callable[..., Awaitable[Sequence[RunProjection]]]", fetch_runs)
                runs = await listed(limit=DISCOVER_RUNS)
            except asyncio.CancelledError:
                raise
            except Exception:
                _log.warning("log follower: reading the newest runs failed", exc_info=True)
                continue
            for run in runs:
                self._tell_watchers(run.run_id, run)
                tail = self._tails.get(str(run.run_id))
                if tail is not None and run.last_sequence > tail.known:
                    tail.wake.set()


def _hand(sub: _Sub, item: object) -> None:
    try:
        if item is _END:
            sub.closed = True
            sub.listener.ended()
        elif isinstance(item, TokenDelta):
            sub.listener.token(item)
        else:
            assert isinstance(item, Event)
            sub.listener.event(item)
    except Exception:
        _log.warning("log follower: a subscriber failed", exc_info=True)


class _Queued:
    """A listener that queues what it gets, for an async iterator."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Event | TokenDelta | None] = asyncio.Queue()

    def event(self, event: Event) -> None:
        self.queue.put_nowait(event)

    def token(self, delta: TokenDelta) -> None:
        self.queue.put_nowait(delta)

    def ended(self) -> None:
        self.queue.put_nowait(None)


async def follow_log(
    storage: FollowedLog,
    writer: Publisher | None,
    run_id: RunId,
    *,
    poll_s: float = POLL_S,
    max_poll_s: float = MAX_POLL_S,
) -> AsyncIterator[Event | TokenDelta]:
    """Run `run_id`'s events from sequence 1 and its live token deltas, through the store's one follower, until
    the terminal event."""
    follower = LogFollower.of(storage)
    if writer is not None:
        follower.watch(writer)
    queued = _Queued()
    stop = await follower.follow(run_id, queued, poll_s=poll_s, max_poll_s=max_poll_s)
    try:
        while True:
            item = await queued.queue.get()
            if item is None:
                return
            yield item
    finally:
        stop()

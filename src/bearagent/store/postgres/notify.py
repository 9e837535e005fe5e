"""Commit notices over LISTEN/NOTIFY: a commit of a run tells the processes listening for it which run moved, to which
sequence and state, so readers in other processes (an SSE stream of a run a worker executes, a worker waiting for
queued runs) wake at once instead of at their next poll.

The store stays the source of truth: a notice only says "look now"; a reader that missed one (its connection
dropped, it subscribed late) still catches up from the log at its next poll. The notice is sent inside the commit's
transaction (`pg_notify`), so PostgreSQL delivers it only if the commit happens, after it is visible.

Two kinds of channel (issue 37: no broadcast of every commit to every process):
- `bearagent_runs`, the lifecycle channel: the commits that change what a run is doing (created/queued, started or
  resumed, waiting, interrupted, ended) and cancel requests. Workers (the runs they may take) and workspace feeds
  listen here. A running run's step commits are not sent here.
- `bearagent_run_<digest>`, one per run: every commit of that run. Only a process that follows the run (an SSE
  stream, `events --follow`) listens to it. `<digest>` is 32 hex digits of SHA-256 over `<schema> <run_id>`, so
  the name stays under PostgreSQL's 63-byte limit, is a plain identifier, and differs between schemas.
Both are shared by every schema of the database; the payload is `<schema> <run_id> <last_sequence> <status>` and
listeners drop other schemas' notices. One LISTEN connection per store handle serves every channel it listens on
(LISTEN / UNLISTEN as followers come and go). It connects to the store's `listen_dsn`: the store's own DSN, or, where
that goes through a transaction pooler (PgBouncer's transaction mode, which cannot keep a LISTEN), a direct one; with
none, nothing listens and every reader polls (docs/scale-out.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import LiteralString

import psycopg
from psycopg import sql

from bearagent.ports import CommitNotice
from bearagent.store.postgres.io_loop import IoLoop
from bearagent.store.postgres.location import Conn, Location

LIFECYCLE_CHANNEL = "bearagent_runs"
RUN_CHANNEL_PREFIX = "bearagent_run_"
CANCEL_REQUESTED = "cancel_requested"
"""The status word of a notice that someone asked to cancel the run (not a commit: its sequence is 0)."""
RECONNECT_S = 1.0
LIFECYCLE_EVENTS = frozenset({"RunCreated", "RunStarted", "RunResumed"})
"""Event types that put a run (back) into `running` or create it: a commit holding one is a lifecycle notice even
though the run's state after it is `running`."""

_log = logging.getLogger("bearagent.store")


Listener = Callable[[CommitNotice], None]


def run_channel(schema: str, run_id: str) -> str:
    """The channel of every commit of `run_id` in `schema`."""
    return RUN_CHANNEL_PREFIX + hashlib.sha256(f"{schema} {run_id}".encode()).hexdigest()[:32]


def payload_of(schema: str, run_id: str, last_sequence: int, status: str) -> str:
    return f"{schema} {run_id} {last_sequence} {status}"


def is_lifecycle(status: str, event_types: Sequence[str]) -> bool:
    """Whether a commit leaving the run in `status`, holding events of `event_types`, goes to the lifecycle channel."""
    return status != "running" or any(t in LIFECYCLE_EVENTS for t in event_types)


def notify_statement(
    schema: str, run_id: str, last_sequence: int, status: str, *, lifecycle: bool
) -> tuple[LiteralString, tuple[str, ...]]:
    """The one statement (and its parameters) that sends a commit's notices: to the run's channel, and to the
    lifecycle channel when `lifecycle`."""
    payload = payload_of(schema, run_id, last_sequence, status)
    channel = run_channel(schema, run_id)
    if lifecycle:
        return "SELECT pg_notify(%s, %s), pg_notify(%s, %s)", (channel, payload, LIFECYCLE_CHANNEL, payload)
    return "SELECT pg_notify(%s, %s)", (channel, payload)


def _parse(schema: str, payload: str) -> CommitNotice | None:
    parts = payload.split(" ")
    if len(parts) != 4 or parts[0] != schema or not parts[2].isdigit():
        return None
    return CommitNotice(parts[1], int(parts[2]), parts[3])


class CommitListeners:
    """The listeners of one store in this process, fed by one LISTEN connection on the store's loop (opened with the
    first listener, closed with the last) that listens on the channels its listeners need. Each listener is called on
    the event loop it subscribed from."""

    def __init__(self, io: IoLoop, location: Location) -> None:
        self._io = io
        self._location = location
        self._listeners: dict[int, tuple[asyncio.AbstractEventLoop, Listener, str]] = {}
        self._next = 0
        self._task: asyncio.Task[None] | None = None
        self._changed = asyncio.Event()
        self.listening: frozenset[str] = frozenset()
        """The channels the LISTEN connection listens on now (empty while it is down)."""
        self.connected = asyncio.Event()
        """Set (on the store's loop) while the LISTEN connection is up: tests wait for it before committing."""

    def subscribe(self, listener: Listener, run_id: str | None = None) -> Callable[[], None]:
        """Call `listener(notice)` for every lifecycle notice of this store from now on (by any process), or with
        `run_id` for every commit of that run; returns how to unsubscribe. Must be called from a running event loop."""
        loop = asyncio.get_running_loop()
        key = self._next
        self._next += 1
        channel = LIFECYCLE_CHANNEL if run_id is None else run_channel(self._location.schema, run_id)
        self._listeners[key] = (loop, listener, channel)
        self._io.submit(self._kick())

        def unsubscribe() -> None:
            if self._listeners.pop(key, None) is not None:
                with contextlib.suppress(RuntimeError):  # the store is closed: nothing listens any more
                    self._io.submit(self._kick())

        return unsubscribe

    async def wait_listening(self, timeout_s: float = 10.0, run_id: str | None = None) -> None:
        """Until the LISTEN connection listens on the lifecycle channel (or `run_id`'s): a commit from now on is
        noticed."""
        channel = LIFECYCLE_CHANNEL if run_id is None else run_channel(self._location.schema, run_id)

        async def listening() -> None:
            while channel not in self.listening:
                await asyncio.sleep(0.005)

        await self._io.call(asyncio.wait_for(listening(), timeout_s))

    def _wanted(self) -> frozenset[str]:
        return frozenset(channel for _loop, _listener, channel in list(self._listeners.values()))

    async def _kick(self) -> None:
        self._changed.set()
        if self._location.listen_dsn is None:
            return  # behind a transaction pooler with no direct connection: nothing is heard, the readers poll
        if self._listeners and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._listen(), name=f"bearagent-listen-{self._location.schema}")

    async def _listen(self) -> None:
        schema, dsn = self._location.schema, self._location.listen_dsn
        while self._listeners and dsn is not None:
            try:
                conn: Conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
                async with conn:
                    self.connected.set()
                    while self._listeners:
                        self._changed.clear()
                        await self._sync_channels(conn)
                        await self._read_until_changed(conn, schema)
                    return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database went away: readers still poll; listen again soon
                _log.debug("LISTEN on %s failed: %s", self._location.display, exc)
            finally:
                self.connected.clear()
                self.listening = frozenset()
            await asyncio.sleep(RECONNECT_S)

    async def _sync_channels(self, conn: Conn) -> None:
        wanted = self._wanted()
        for channel in sorted(wanted - self.listening):
            await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
        for channel in sorted(self.listening - wanted):
            await conn.execute(sql.SQL("UNLISTEN {}").format(sql.Identifier(channel)))
        self.listening = wanted

    async def _read_until_changed(self, conn: Conn, schema: str) -> None:
        """Deliver notices until the set of channels changes (or the connection fails: raised)."""

        async def read() -> None:
            async for note in conn.notifies():
                notice = _parse(schema, note.payload)
                if notice is not None:
                    self._tell(note.channel, notice)

        reader = asyncio.create_task(read())
        changed = asyncio.create_task(self._changed.wait())
        try:
            await asyncio.wait({reader, changed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            changed.cancel()
            if not reader.done():
                reader.cancel()  # waiting for the socket only: a notice already read is kept in psycopg's backlog
                with contextlib.suppress(asyncio.CancelledError):
                    await reader
        if reader.done() and not reader.cancelled():
            reader.result()  # the connection failed: raise, reconnect

    def _tell(self, channel: str, notice: CommitNotice) -> None:
        for loop, listener, wanted in list(self._listeners.values()):
            if wanted == channel:
                with contextlib.suppress(RuntimeError):  # that loop is closed: its listener is gone with it
                    loop.call_soon_threadsafe(listener, notice)

    async def close(self) -> None:
        self._listeners.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

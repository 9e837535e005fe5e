"""Commit notices over LISTEN/NOTIFY: every commit of a run tells every process listening on the database which run
moved, to which sequence and state, so readers in other processes (an SSE stream of a run a worker executes, a worker
waiting for queued runs) wake at once instead of at their next poll.

The store stays the source of truth: a notice only says "look now"; a reader that missed one (its connection
dropped, it subscribed late) still catches up from the log at its next poll. The notice is sent inside the commit's
transaction (`pg_notify`), so PostgreSQL delivers it only if the commit happens, after it is visible.

One channel for every schema of the database (`bearagent_commits`, a channel name must stay under 64 bytes); the
payload is `<schema> <run_id> <last_sequence> <status>` and listeners drop other schemas' notices.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

import psycopg

from bearagent.ports import CommitNotice
from bearagent.store.postgres.io_loop import IoLoop
from bearagent.store.postgres.location import Conn, Location

CHANNEL = "bearagent_commits"
NOTIFY_SQL = "SELECT pg_notify('bearagent_commits', %s)"
CANCEL_REQUESTED = "cancel_requested"
"""The status word of a notice that someone asked to cancel the run (not a commit: its sequence is 0)."""
RECONNECT_S = 1.0

_log = logging.getLogger("bearagent.store")


Listener = Callable[[CommitNotice], None]


def payload_of(schema: str, run_id: str, last_sequence: int, status: str) -> str:
    return f"{schema} {run_id} {last_sequence} {status}"


def _parse(schema: str, payload: str) -> CommitNotice | None:
    parts = payload.split(" ")
    if len(parts) != 4 or parts[0] != schema or not parts[2].isdigit():
        return None
    return CommitNotice(parts[1], int(parts[2]), parts[3])


class CommitListeners:
    """The listeners of one store in this process, fed by one LISTEN connection on the store's loop (opened with the
    first listener, closed with the last). Each listener is called on the event loop it subscribed from."""

    def __init__(self, io: IoLoop, location: Location) -> None:
        self._io = io
        self._location = location
        self._listeners: dict[int, tuple[asyncio.AbstractEventLoop, Listener]] = {}
        self._next = 0
        self._task: asyncio.Task[None] | None = None
        self.connected = asyncio.Event()
        """Set (on the store's loop) while the LISTEN connection is up: tests wait for it before committing."""

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(notice)` for every commit to this store from now on, by any process; returns how to
        unsubscribe. Must be called from a running event loop."""
        loop = asyncio.get_running_loop()
        key = self._next
        self._next += 1
        self._listeners[key] = (loop, listener)
        self._io.submit(self._ensure_listening())

        def unsubscribe() -> None:
            self._listeners.pop(key, None)

        return unsubscribe

    async def wait_listening(self, timeout_s: float = 10.0) -> None:
        """Until the LISTEN connection is up (a commit from now on is noticed)."""
        await self._io.call(asyncio.wait_for(self.connected.wait(), timeout_s))

    async def _ensure_listening(self) -> None:
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._listen(), name=f"bearagent-listen-{self._location.schema}")

    async def _listen(self) -> None:
        schema = self._location.schema
        while self._listeners:
            try:
                conn: Conn = await psycopg.AsyncConnection.connect(self._location.dsn, autocommit=True)
                async with conn:
                    await conn.execute(f"LISTEN {CHANNEL}")
                    self.connected.set()
                    async for note in conn.notifies():
                        notice = _parse(schema, note.payload)
                        if notice is not None:
                            self._tell(notice)
                        if not self._listeners:
                            return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database went away: readers still poll; listen again soon
                _log.debug("LISTEN on %s failed: %s", self._location.display, exc)
            finally:
                self.connected.clear()
            await asyncio.sleep(RECONNECT_S)

    def _tell(self, notice: CommitNotice) -> None:
        for loop, listener in list(self._listeners.values()):
            with contextlib.suppress(RuntimeError):  # that loop is closed: its listener is gone with it
                loop.call_soon_threadsafe(listener, notice)

    async def close(self) -> None:
        self._listeners.clear()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

"""One active run per session across processes and hosts: a PostgreSQL session-level advisory lock
(`pg_try_advisory_lock`) on a 64-bit hash of the schema and the session id, held on a connection of its own for as
long as the run is active.

Dedicated, because advisory locks belong to a server session and are re-entrant within it: two runs of one
session in one process must hold the lock on two connections to exclude each other, and a pooled connection
handed on would hand the lock on with it. The lock dies with its holder: a process that exits or is killed closes
its connection, and the server releases the lock as the backend ends; a host that vanishes is noticed by TCP
keepalives (set on the lock connection, both sides: about 30 s). A waiter polls (`POLL_INTERVAL_S`) on its own
loop, so waiting never blocks it, honours `timeout_s` and is cancelled like any await.

What it does not survive: the server restarting, or the lock connection breaking, while the run goes on. The lock
is then gone without the holder knowing (see docs/store.md).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from types import TracebackType

import psycopg

from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import SessionId
from bearagent.store.postgres.errors import translate
from bearagent.store.postgres.io_loop import IoLoop
from bearagent.store.postgres.location import Conn, Location
from bearagent.store.postgres.schema import lock_key
from bearagent.store.session_lock import SessionBusy

POLL_INTERVAL_S = 0.05
IDLE_KEPT = 4


class LockConnections:
    """The dedicated connections of one store's session locks; a few released ones are kept for the next lock.
    Used on the store's loop only."""

    def __init__(self, where: Location) -> None:
        self._where = where
        self._idle: list[Conn] = []
        self._all: set[Conn] = set()

    async def get(self) -> Conn:
        while self._idle:
            conn = self._idle.pop()
            if not conn.closed and not conn.broken:
                return conn
            self._all.discard(conn)
        try:
            conn = await psycopg.AsyncConnection.connect(
                self._where.dsn,
                autocommit=True,
                keepalives=1,
                keepalives_idle=10,
                keepalives_interval=5,
                keepalives_count=4,
            )
            settings = ["tcp_keepalives_idle", "10", "tcp_keepalives_interval", "5", "tcp_keepalives_count", "4"]
            if conn.info.server_version >= 140000:
                settings += ["idle_session_timeout", "0"]  # an idle holder must not be cut off
            await conn.execute(
                "SELECT set_config(name, value, false) FROM unnest(%s::text[], %s::text[]) AS s (name, value)",
                (settings[0::2], settings[1::2]),
            )
        except psycopg.Error as exc:
            raise translate(self._where.display, exc, "opening a session lock connection") from exc
        self._all.add(conn)
        return conn

    async def try_lock(self, conn: Conn, key: int) -> bool:
        try:
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
            row = await cur.fetchone()
        except psycopg.Error as exc:
            raise translate(self._where.display, exc, "taking a session lock") from exc
        return bool(row and row[0])

    async def release(self, conn: Conn, key: int) -> None:
        """Unlock and keep the connection for the next lock; on any trouble close it (which unlocks too)."""
        try:
            cur = await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
            row = await cur.fetchone()
            if row is not None and row[0] and len(self._idle) < IDLE_KEPT:
                self._idle.append(conn)
                return
        except psycopg.Error:
            pass
        await self.discard(conn)

    async def discard(self, conn: Conn) -> None:
        """Close `conn`: whatever it held (maybe a lock a cancelled attempt took) goes with it."""
        self._all.discard(conn)
        with contextlib.suppress(psycopg.Error):
            await conn.close()

    async def close_all(self) -> None:
        """Close every lock connection, idle or holding (the store is closing: its locks go)."""
        self._idle = []
        for conn in list(self._all):
            await self.discard(conn)


class PgSessionLock:
    def __init__(
        self,
        io: IoLoop,
        connections: LockConnections,
        where: Location,
        session_id: SessionId,
        *,
        wait: bool,
        on_wait: Callable[[], None] | None,
        timeout_s: float | None,
    ) -> None:
        self._io = io
        self._connections = connections
        self._key = lock_key(where.schema, f"session:{session_id}")
        self._session_id = session_id
        self._wait = wait
        self._on_wait = on_wait
        self._timeout_s = timeout_s
        self._conn: Conn | None = None

    async def __aenter__(self) -> PgSessionLock:
        conn = await self._io.call(self._connections.get())
        loop = asyncio.get_running_loop()
        started = loop.time()
        told = False
        try:
            while not await self._io.call(self._connections.try_lock(conn, self._key)):
                if not self._wait or (self._timeout_s is not None and loop.time() - started > self._timeout_s):
                    raise SessionBusy(
                        ErrorInfo.of(
                            "conflict", "session_busy", f"session {self._session_id} already has an active run"
                        ),
                        hint="wait for it to finish, or start a new session (omit --session / --continue)",
                    )
                if not told and self._on_wait is not None:
                    self._on_wait()
                    told = True
                await asyncio.sleep(POLL_INTERVAL_S)
        except BaseException:
            # not awaited: it must run even while this task is being cancelled; a cancelled attempt may have taken
            # the lock on the server, so the connection is closed, never kept
            with contextlib.suppress(RuntimeError):  # the store was closed meanwhile: the connection is gone too
                self._io.submit(self._connections.discard(conn))
            raise
        self._conn = conn
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._io.call_shielded(self._connections.release(conn, self._key))

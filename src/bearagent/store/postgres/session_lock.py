"""One active run per session across processes and hosts: a PostgreSQL session-level advisory lock
(`pg_try_advisory_lock`) on a 64-bit hash of the schema and the session id, held for as long as the run is active.

All the session locks a store handle holds share ONE connection (`SharedLocks`), so the connections a process
opens do not grow with its sessions (issue 37: a thousand sessions of one server, a default `max_connections`).
Advisory locks are re-entrant within a server session, so two runs of one session in this process cannot both take
the lock on that connection and exclude each other there: the handle keeps the keys it holds (`_held`, each with
the token of the lock object that took it) and a second local run of a session is refused (or waits) before the
server is asked. The lock dies with its holder: a process that exits or is killed closes the connection, and the
server releases its locks as the backend ends; a host that vanishes is noticed by TCP keepalives (set on the lock
connection, both sides: about 30 s). A waiter polls (`POLL_INTERVAL_S`) on its own loop, so waiting never blocks
it, honours `timeout_s` and is cancelled like any await.

What it does not survive: the server restarting, or the lock connection breaking, while runs go on. Their locks are
then gone without the holders knowing (see docs/store.md); with one shared connection that is every session this
handle holds at once. The next lock opens a new connection and, since the server released the old one's locks,
re-takes what it asks for.
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


class SharedLocks:
    """The session locks of one store handle, on one connection of their own (opened on first use, reopened when it
    broke). Used on the store's loop only."""

    def __init__(self, where: Location) -> None:
        self._where = where
        self._conn: Conn | None = None
        self._held: dict[int, object] = {}
        """Lock key -> the token of the lock object holding (or taking) it in this process."""
        self._taking: set[int] = set()
        """Keys whose `pg_try_advisory_lock` is under way (kept when a broken connection clears the rest)."""

    async def _connection(self) -> Conn:
        conn = self._conn
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        if conn is not None:  # broke: the server released what it held; what we believed held is gone too
            self._held = {key: token for key, token in self._held.items() if key in self._taking}
            self._conn = None
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
            raise translate(self._where.display, exc, "opening the session lock connection") from exc
        self._conn = conn
        return conn

    async def try_lock(self, key: int, token: object) -> bool:
        """Take `key` for `token`: False when a run of this process holds it, or another process does."""
        if key in self._held:
            return False
        self._held[key] = token  # before the await: a second local taker must not ask the server meanwhile
        self._taking.add(key)
        try:
            conn = await self._connection()
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))
            row = await cur.fetchone()
        except BaseException as exc:
            self._taking.discard(key)
            if self._held.get(key) is token:
                del self._held[key]
            if isinstance(exc, psycopg.Error):
                raise translate(self._where.display, exc, "taking a session lock") from exc
            raise
        self._taking.discard(key)
        got = bool(row and row[0])
        if not got and self._held.get(key) is token:
            del self._held[key]
        return got

    async def release(self, key: int, token: object) -> None:
        """Unlock `key` if `token` holds it (a no-op otherwise: an attempt that never got it, a lock already lost
        with a broken connection)."""
        if self._held.get(key) is not token:
            return
        del self._held[key]
        conn = self._conn
        if conn is None or conn.closed or conn.broken:
            return
        try:
            await conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
        except psycopg.Error:
            # unknown state: closing the connection is the only way to be sure the key is free, and frees the other
            # sessions' locks with it (their runs go on unlocked, as after any broken lock connection)
            await self.close_all()

    async def close_all(self) -> None:
        """Close the lock connection (the store is closing, or it is in doubt): every lock it held goes."""
        conn, self._conn = self._conn, None
        self._held.clear()
        if conn is not None:
            with contextlib.suppress(psycopg.Error):
                await conn.close()


class PgSessionLock:
    def __init__(
        self,
        io: IoLoop,
        locks: SharedLocks,
        where: Location,
        session_id: SessionId,
        *,
        wait: bool,
        on_wait: Callable[[], None] | None,
        timeout_s: float | None,
    ) -> None:
        self._io = io
        self._locks = locks
        self._key = lock_key(where.schema, f"session:{session_id}")
        self._session_id = session_id
        self._wait = wait
        self._on_wait = on_wait
        self._timeout_s = timeout_s
        self._token = object()
        self._holding = False

    async def __aenter__(self) -> PgSessionLock:
        loop = asyncio.get_running_loop()
        started = loop.time()
        told = False
        try:
            # shielded: a cancelled caller must not cut the server's answer off mid-way (it may have taken the lock)
            while not await self._io.call_shielded(self._locks.try_lock(self._key, self._token)):
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
            # not awaited: it must run even while this task is being cancelled; it runs after a try still in
            # flight (same loop, same connection) and frees the key if that try took it
            with contextlib.suppress(RuntimeError):  # the store was closed meanwhile: the connection is gone too
                self._io.submit(self._locks.release(self._key, self._token))
            raise
        self._holding = True
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._holding:
            self._holding = False
            await self._io.call_shielded(self._locks.release(self._key, self._token))

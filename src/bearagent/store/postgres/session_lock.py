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

Behind a transaction pooler (PgBouncer's `pool_mode = transaction`: `Location.transaction_pooler`) a lock cannot stay
on a server connection, so the locks are leases instead (`LeasedLocks`): a row of `{s}.session_locks` per held lock,
naming the store handle that holds it and when it expires; the handle renews its rows every third of `LEASE_S` while
it holds any, and deletes a row when its run ends. A holder that dies stops renewing: its sessions are free once
their leases run out (at most `LEASE_S`, where the advisory lock went with the connection at once, or after the
~30 s of TCP keepalives for a vanished host). The times are the database's clock, so hosts need not agree.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType
from typing import Protocol, TypeVar

import psycopg

from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import SessionId
from bearagent.store.postgres.errors import translate
from bearagent.store.postgres.io_loop import IoLoop
from bearagent.store.postgres.location import Conn, Location, Queries
from bearagent.store.postgres.schema import lock_key
from bearagent.store.session_lock import SessionBusy

POLL_INTERVAL_S = 0.05
LEASE_S = 30.0
"""How long a leased session lock (`LeasedLocks`) stays taken after its holder's last renewal."""

_T = TypeVar("_T")
_log = logging.getLogger("bearagent.store")


class OnConnection(Protocol):
    """Runs `work` on one of the store's connections (the store's `_with`)."""

    def __call__(self, work: Callable[[Conn], Awaitable[_T]], /) -> Awaitable[_T]: ...


class Locks(Protocol):
    """The session locks of one store handle (`SharedLocks` or `LeasedLocks`), used on the store's loop only."""

    async def try_lock(self, key: int, token: object) -> bool: ...

    async def release(self, key: int, token: object) -> None: ...

    async def close_all(self) -> None: ...


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


class LeasedLocks:
    """The session locks of one store handle as leases in `{s}.session_locks` (a store behind a transaction pooler):
    each statement runs on any pooled connection (`run`, the store's), so nothing stays on a server connection.
    Used on the store's loop only."""

    def __init__(
        self,
        where: Location,
        run: OnConnection,
        *,
        lease_s: float = LEASE_S,
    ) -> None:
        self._where = where
        self._run = run
        self._q = Queries(where.schema)
        self._lease_s = lease_s
        self.holder = secrets.token_hex(16)
        """This handle's name in the table: a lock row with it is this handle's."""
        self._held: dict[int, object] = {}
        """Lock key -> the token of the lock object holding (or taking) it in this process."""
        self._renewing: asyncio.Task[None] | None = None
        self._lost: set[int] = set()

    async def try_lock(self, key: int, token: object) -> bool:
        """Take `key` for `token`: False when a run of this process holds it, or another holder's lease is live."""
        if key in self._held:
            return False
        self._held[key] = token  # before the await: a second local taker must not ask the server meanwhile
        try:
            got = await self._run(lambda conn: self._take(conn, key))
        except BaseException as exc:
            if self._held.get(key) is token:
                del self._held[key]
            if isinstance(exc, psycopg.Error):
                raise translate(self._where.display, exc, "taking a session lock") from exc
            raise
        if not got:
            if self._held.get(key) is token:
                del self._held[key]
            return False
        if self._renewing is None or self._renewing.done():
            self._renewing = asyncio.create_task(self._renew(), name=f"bearagent-leases-{self._where.schema}")
        return True

    async def _take(self, conn: Conn, key: int) -> bool:
        # a row of another holder is taken over only once its lease ran out; a row of this handle's (left by a try
        # whose answer was lost) is taken again, since `_held` already keeps two local runs apart
        cur = await conn.execute(
            self._q(
                "INSERT INTO {s}.session_locks AS l (lock_key, holder, expires_at)"
                " VALUES (%s, %s, now() + make_interval(secs => %s))"
                " ON CONFLICT (lock_key) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at"
                " WHERE l.expires_at < now() OR l.holder = excluded.holder RETURNING 1"
            ),
            (key, self.holder, self._lease_s),
        )
        return await cur.fetchone() is not None

    async def _renew(self) -> None:
        """Renew this handle's leases every third of `LEASE_S` while it holds any. A lease found taken by another
        holder (this one's ran out: the database was unreachable for that long) is logged, as a broken lock
        connection is for advisory locks: the runs go on, without the lock."""
        while self._held:
            await asyncio.sleep(self._lease_s / 3)
            keys = sorted(self._held)
            if not keys:
                break
            try:
                kept = await self._run(functools.partial(self._extend, keys=keys))
            except Exception as exc:  # the database is away: the next tick tries again, within the lease
                _log.warning("renewing the session locks of %s failed: %s", self._where.display, exc)
                continue
            lost = set(keys) - kept - self._lost
            if lost:
                self._lost |= lost
                _log.warning("%d session lock(s) of %s expired while held", len(lost), self._where.display)

    async def _extend(self, conn: Conn, *, keys: Sequence[int]) -> set[int]:
        cur = await conn.execute(
            self._q(
                "UPDATE {s}.session_locks SET expires_at = now() + make_interval(secs => %s)"
                " WHERE holder = %s AND lock_key = ANY(%s) RETURNING lock_key"
            ),
            (self._lease_s, self.holder, list(keys)),
        )
        return {int(row[0]) for row in await cur.fetchall()}

    async def _drop(self, keys: Sequence[int]) -> None:
        async def delete(conn: Conn) -> None:
            await conn.execute(
                self._q("DELETE FROM {s}.session_locks WHERE holder = %s AND lock_key = ANY(%s)"),
                (self.holder, list(keys)),
            )

        try:
            await self._run(delete)
        except Exception as exc:  # the leases run out on their own
            _log.debug("releasing session locks of %s failed: %s", self._where.display, exc)

    async def release(self, key: int, token: object) -> None:
        """Delete `key`'s lease if `token` holds it (a no-op otherwise)."""
        if self._held.get(key) is not token:
            return
        del self._held[key]
        self._lost.discard(key)
        await self._drop([key])

    async def close_all(self) -> None:
        """Stop renewing and delete every lease this handle holds (the store is closing)."""
        task, self._renewing = self._renewing, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        keys, self._held = sorted(self._held), {}
        self._lost.clear()
        if keys:
            await self._drop(keys)


class PgSessionLock:
    def __init__(
        self,
        io: IoLoop,
        locks: Locks,
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

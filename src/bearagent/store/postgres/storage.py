"""The PostgreSQL store: the event log and its projections in one schema of a PostgreSQL database, shared by every
process on every host that opens the same DSN and schema.

`PostgresRunStorage` implements the async storage port (`ports.RunStorage`) of the run writer
(`runtime/run_writer.py`): the writer reduces, this store commits if the run is still at the version the writer
reduced on (`run_commit.py`). Every connection lives on the store's own event loop thread (`io_loop.py`): port calls
await it from any loop without blocking it, and the synchronous face (`sync_face.py`, for the CLI's read commands)
waits for it. A small psycopg pool serves the port; the held session locks share one connection of their own, or
behind a transaction pooler are leases written through the pool (`session_lock.py`). The first use connects and applies the missing migrations (`schema.py`), so opening a store
never blocks, and a bad DSN or an unreachable server is a `StoreError` of the first call.

This class only composes: the SQL of runs is `run_commit.py` and `run_reads.py`, of sessions `sessions.py`, of
leases `leases.py`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Self, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.retention import PruneResult
from bearagent.domain.search import RunSearch, RunSearchHit
from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus, SessionRecord, WorkspaceRecord
from bearagent.ports import RunCommit, StoredRun
from bearagent.store import workspace_rows
from bearagent.store.postgres import leases, retention, run_commit, run_reads, search, sessions
from bearagent.store.postgres.errors import translate
from bearagent.store.postgres.io_loop import IoLoop
from bearagent.store.postgres.location import Conn, Location, Queries
from bearagent.store.postgres.naming import DEFAULT_SCHEMA
from bearagent.store.postgres.notify import CommitListeners
from bearagent.store.postgres.schema import applied_version, migrate
from bearagent.store.postgres.session_lock import LEASE_S, LeasedLocks, Locks, PgSessionLock, SharedLocks
from bearagent.store.postgres.sync_face import SyncFace

_T = TypeVar("_T")

DEFAULT_POOL_SIZE = 4


class PostgresRunStorage(SyncFace):
    """`RunStorage` (and the synchronous `EventStore` + `SessionStore` faces) over one schema of a PostgreSQL
    database. Thread-safe; any number of processes and hosts may share the schema."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = DEFAULT_SCHEMA,
        pool_size: int = DEFAULT_POOL_SIZE,
        connect_timeout_s: float = 30.0,
        create: bool = True,
        transaction_pooler: bool = False,
        listen_dsn: str | None = None,
        lock_lease_s: float = LEASE_S,
    ) -> None:
        """`create=False`: a schema that holds no store yet is `not_found.no_state` (nothing has run), not created.
        `transaction_pooler` and `listen_dsn`: how the store is reached (`location.Location`); `lock_lease_s`: how
        long a session lock outlives a dead holder behind a transaction pooler (`session_lock.LeasedLocks`)."""
        self.location = Location.of(dsn, schema, transaction_pooler=transaction_pooler, listen_dsn=listen_dsn)
        self.path: str = self.location.display
        """What messages and errors name the store by: host, port, database, user and schema (no password)."""
        self._q = Queries(schema)
        self._pool_size = max(1, pool_size)
        self._connect_timeout_s = connect_timeout_s
        self._create = create
        self._io = IoLoop(f"bearagent-pg-{schema}")
        self._pool: AsyncConnectionPool[Conn] | None = None
        self._opening: asyncio.Lock | None = None
        self._locks: Locks = (
            LeasedLocks(self.location, self._with, lease_s=lock_lease_s)
            if transaction_pooler
            else SharedLocks(self.location)
        )
        self.commits = CommitListeners(self._io, self.location)
        """Commit notices of this store from every process (LISTEN/NOTIFY): `commits.subscribe(listener)`."""
        super().__init__()

    # ---- connections (on the store's loop) --------------------------------------------------------------------

    async def _open(self) -> AsyncConnectionPool[Conn]:
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                dsn = self.location.dsn
                try:
                    conn = await psycopg.AsyncConnection.connect(dsn, **self.location.connect_kwargs)
                    async with conn:  # the real error of a bad DSN or a down server, not a pool timeout
                        await self._prepare(conn)
                except psycopg.Error as exc:
                    raise translate(self.path, exc, "opening the store") from exc
                pool = AsyncConnectionPool(
                    dsn,
                    connection_class=psycopg.AsyncConnection,
                    kwargs=self.location.connect_kwargs,
                    min_size=1,
                    max_size=self._pool_size,
                    open=False,
                    timeout=self._connect_timeout_s,
                    name=f"bearagent-{self.location.schema}",
                )
                await pool.open()
                self._pool = pool
        return self._pool

    async def _prepare(self, conn: Conn) -> None:
        """What opening the store does first: the schema must exist unless `create`; missing migrations applied."""
        if not self._create and await applied_version(conn, self.location) is None:
            raise BearAgentError(
                ErrorInfo.of("not_found", "no_state", f"no runs have been stored in {self.path} yet"),
                hint='start a run with `bearagent run "..."` in this workspace first',
            )
        await migrate(conn, self.location)

    async def _with(self, work: Callable[[Conn], Awaitable[_T]], doing: str = "using the store") -> _T:
        """`work` on a pooled connection (on the store's loop), or on a connection of its own for a synchronous call
        made on the thread of a process's own store loop (`IoLoop.run`: rare, and slower by a connection)."""
        if not self._io.serves(asyncio.get_running_loop()):
            return await self._one_shot(work, doing)
        pool = await self._open()
        try:
            async with pool.connection() as conn:
                return await work(conn)
        except PoolTimeout as exc:
            raise translate(self.path, exc, doing) from exc

    async def _one_shot(self, work: Callable[[Conn], Awaitable[_T]], doing: str) -> _T:
        try:
            conn = await psycopg.AsyncConnection.connect(self.location.dsn, **self.location.connect_kwargs)
            async with conn:
                if self._pool is None:  # the store not opened yet
                    await self._prepare(conn)
                return await work(conn)
        except psycopg.Error as exc:
            raise translate(self.path, exc, doing) from exc

    def _port(self, work: Callable[[Conn], Awaitable[_T]]) -> Awaitable[_T]:
        return self._io.call(self._with(work))

    def _blocking(self, work: Callable[[Conn], Awaitable[_T]]) -> _T:
        return self._io.run(self._with(work))

    @property
    def schema_version(self) -> int:
        """The last migration applied to the store's schema (opening the store applies the missing ones)."""

        async def version(conn: Conn) -> int:
            return await applied_version(conn, self.location) or 0

        return self._blocking(version)

    # ---- the async storage port (ports.RunStorage) -------------------------------------------------------------

    async def load_run(self, run_id: RunId) -> StoredRun | None:
        return await self._port(lambda conn: run_commit.load_run(conn, self._q, self.path, str(run_id)))

    async def commit(self, commit: RunCommit) -> None:
        await self._port(lambda conn: run_commit.commit(conn, self._q, self.path, commit))

    async def fetch_events(self, run_id: RunId, after_sequence: int = 0, limit: int | None = None) -> Sequence[Event]:
        return await self._port(lambda conn: run_reads.events(conn, self._q, self.path, run_id, after_sequence, limit))

    async def fetch_run(self, run_id: RunId) -> RunProjection | None:
        return await self._port(lambda conn: run_reads.run(conn, self._q, self.path, run_id))

    async def fetch_run_statuses(self, run_ids: Sequence[RunId]) -> Mapping[RunId, RunStatus]:
        if not run_ids:
            return {}
        return await self._port(lambda conn: run_reads.statuses(conn, self._q, self.path, run_ids))

    async def fetch_runs(
        self,
        *,
        session_id: SessionId | None = None,
        status: RunStatus | None = None,
        parent_run_id: RunId | None = None,
        limit: int = 50,
        oldest_first: bool = False,
        answered: bool = False,
    ) -> Sequence[RunProjection]:
        return await self._port(
            lambda conn: run_reads.runs(
                conn, self._q, self.path, session_id, status, parent_run_id, limit, oldest_first, answered
            )
        )

    async def fetch_queue_heads(self, limit: int) -> Sequence[RunProjection]:
        return await self._port(lambda conn: run_reads.queue_heads(conn, self._q, self.path, limit))

    async def fetch_activities(self, run_id: RunId) -> Sequence[ActivityProjection]:
        return await self._port(lambda conn: run_reads.activities(conn, self._q, self.path, run_id))

    async def find_runs(self, prefix: str, *, top_level: bool = False, limit: int = 6) -> Sequence[RunId]:
        return await self._port(lambda conn: run_reads.find(conn, self._q, self.path, prefix, top_level, limit))

    async def renew_leases(self, run_ids: Sequence[RunId], at: datetime) -> None:
        if run_ids:
            await self._port(lambda conn: leases.renew(conn, self._q, self.path, run_ids, at))

    async def fetch_heartbeats(self, run_ids: Sequence[RunId]) -> Mapping[RunId, datetime]:
        if not run_ids:
            return {}
        return await self._port(lambda conn: leases.heartbeats(conn, self._q, self.path, run_ids))

    async def request_cancel(self, run_id: RunId, reason: str, at: datetime) -> None:
        await self._port(lambda conn: leases.request_cancel(conn, self._q, self.path, run_id, reason, at))

    async def fetch_cancel_requests(self, run_ids: Sequence[RunId]) -> Mapping[RunId, str]:
        if not run_ids:
            return {}
        return await self._port(lambda conn: leases.cancel_requests(conn, self._q, self.path, run_ids))

    async def allow_in_session(self, session_id: SessionId, rule: str) -> None:
        await self._port(lambda conn: sessions.allow(conn, self._q, self.path, session_id, rule))

    async def queue_session_facts(self, session_id: SessionId, facts: Sequence[JsonValue]) -> None:
        if facts:
            await self._port(lambda conn: sessions.queue_facts(conn, self._q, self.path, session_id, facts))

    async def take_session_facts(self, session_id: SessionId) -> list[JsonValue]:
        return await self._port(lambda conn: sessions.take_facts(conn, self._q, self.path, session_id))

    async def insert_session(self, session: SessionRecord) -> SessionRecord:
        return await self._port(lambda conn: sessions.insert(conn, self._q, self.path, session))

    async def save_session(self, session: SessionRecord) -> SessionRecord:
        return await self._port(lambda conn: sessions.save(conn, self._q, self.path, session))

    async def fetch_session(self, session_id: SessionId) -> SessionRecord | None:
        return await self._port(lambda conn: sessions.fetch(conn, self._q, self.path, session_id))

    async def fetch_sessions(self, *, caller: str | None = None, limit: int = 50) -> Sequence[SessionRecord]:
        return await self._port(lambda conn: sessions.listing(conn, self._q, self.path, caller, limit))

    async def record_workspace(self, record: WorkspaceRecord) -> WorkspaceRecord:
        return await self._port(lambda conn: workspace_rows.record_pg(conn, self._q, record))

    async def fetch_search(self, query: RunSearch) -> list[RunSearchHit]:
        return await self._port(lambda conn: search.search_caught_up(conn, self._q, self.path, query))

    def search_runs(self, query: RunSearch) -> list[RunSearchHit]:
        return self._blocking(lambda conn: search.search_caught_up(conn, self._q, self.path, query))

    def prune_runs(self, before: datetime, *, dry_run: bool = False) -> PruneResult:
        return self._blocking(lambda conn: retention.prune(conn, self._q, self.path, before, dry_run=dry_run))

    def set_pinned(self, run_id: RunId, pinned: bool) -> bool:
        now = datetime.now(UTC)
        return self._blocking(lambda conn: retention.set_pinned(conn, self._q, self.path, run_id, pinned, now))

    def pinned_runs(self) -> list[RunId]:
        return self._blocking(lambda conn: retention.pinned(conn, self._q, self.path))

    def size_bytes(self) -> int:
        return self._blocking(lambda conn: retention.size(conn, self._q, self.path))

    def vacuum(self) -> None:
        self._blocking(lambda conn: retention.vacuum(conn, self._q, self.path))

    def session_lock(
        self,
        session_id: SessionId,
        *,
        wait: bool = True,
        on_wait: Callable[[], None] | None = None,
        timeout_s: float | None = None,
    ) -> PgSessionLock:
        """The session's lock across processes and hosts: a PostgreSQL advisory lock on the one connection all of
        this handle's session locks share, or behind a transaction pooler a lease (`session_lock.py`)."""
        return PgSessionLock(
            self._io, self._locks, self.location, session_id, wait=wait, on_wait=on_wait, timeout_s=timeout_s
        )

    # ---- lifecycle -------------------------------------------------------------------------------------------

    async def _shutdown(self) -> None:
        await self.commits.close()
        await self._locks.close_all()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def close(self) -> None:
        """Close every connection (a held session lock goes with its connection) and stop the store's loop."""
        self._close_sync_writer()
        self._io.close(self._shutdown())

    async def aclose(self) -> None:
        """`close` from a running loop; on a process's own store loop (`io_loop.use_this_loop`) it awaits the
        connections' closing there instead of waiting for its own loop."""
        self._close_sync_writer()
        await self._io.aclose(self._shutdown())

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = ["DEFAULT_POOL_SIZE", "PostgresRunStorage"]

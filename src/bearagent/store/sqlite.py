"""The default store: one SQLite file (WAL) holding the event log and its Run/Activity projections.

It implements the async storage port (`ports.RunStorage`) of the run writer (`runtime/run_writer.py`): the writer
reduces, this store commits (`store/run_commit.py`: one `BEGIN IMMEDIATE` transaction that checks the run's version;
the loser of a race gets `VersionConflict`, which the writer turns into `SequenceConflict`). Port calls run on the
store's own writer and reader threads (`store/connection.py`), so a commit waiting for another process's write lock
never blocks the event loop.

The synchronous methods (reads, sessions, `append`, maintenance) serve the CLI's read-only commands, tools and tests.
This class only composes: opening and migrating are `connection.py` and `schema.py`, the SQL of runs is
`run_commit.py` and `run_reads.py`, of sessions `sessions.py`, replay and rebuild `maintenance.py`.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Self, TypeVar, cast

from bearagent.domain._base import JsonValue
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.retention import PruneResult
from bearagent.domain.search import RunSearch, RunSearchHit
from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus, SessionRecord, WorkspaceRecord
from bearagent.ports import RunCommit, StoredRun
from bearagent.runtime.run_refs import MATCH_LIMIT, pick_run, run_ref_prefix
from bearagent.runtime.run_writer import RunWriter
from bearagent.store import leases, maintenance, retention, run_reads, search, sessions, workspace_rows
from bearagent.store.connection import Durability, Worker, connect_more, open_primary
from bearagent.store.errors import StoreError
from bearagent.store.maintenance import RebuildReport
from bearagent.store.run_commit import commit_on, dumps_json, load_on
from bearagent.store.session_lock import SessionLock

_T = TypeVar("_T")


class _InlineCommits:
    """The writer's side of the port run on the calling thread, for the synchronous `append` (which blocks anyway):
    no hop to the writer thread."""

    def __init__(self, load: Callable[[RunId], StoredRun | None], commit: Callable[[RunCommit], None]) -> None:
        self._load = load
        self._commit = commit

    async def load_run(self, run_id: RunId) -> StoredRun | None:
        return self._load(run_id)

    async def commit(self, commit: RunCommit) -> None:
        self._commit(commit)

    def commit_now(self, commit: RunCommit) -> bool:
        self._commit(commit)
        return True


class SqliteEventStore:
    """EventStore + SessionStore over one SQLite file. Thread-safe; several processes may share the file."""

    def __init__(
        self,
        path: str | Path,
        *,
        durability: Durability = "normal",
        busy_timeout_ms: int = 10_000,
        cache_size: int = 256,
    ) -> None:
        if durability not in ("normal", "full"):
            raise BearAgentError(
                ErrorInfo.of(
                    "configuration",
                    "invalid_durability",
                    f"store durability {durability!r} is not supported; use 'normal' (WAL, synchronous=NORMAL: "
                    "a power loss may drop the last commits) or 'full' (synchronous=FULL: every commit survives)",
                )
            )
        self.path = Path(path)
        self.durability: Durability = durability
        self._lock = threading.RLock()
        self._cache_size = cache_size
        self._conn = open_primary(self.path, durability, busy_timeout_ms)
        self._cursors: dict[int, sqlite3.Cursor] = {}
        # inline (on the caller's loop when SQLite answers without waiting, `connection.Worker`) where a commit does
        # not fsync: the two thread hand-offs of a call cost more than such a commit
        self._writer = Worker(
            "bearagent-store-writer",
            lambda: connect_more(self.path, durability, busy_timeout_ms),
            inline=durability == "normal",
        )
        self._reader = Worker("bearagent-store-reader", lambda: connect_more(self.path, durability, busy_timeout_ms))
        self._sync_lock = threading.Lock()
        self._sync_loop: asyncio.AbstractEventLoop | None = None
        self._sync_writer: RunWriter | None = None

    @property
    def schema_version(self) -> int:
        with self._lock:
            return cast(tuple[int], self._conn.execute("PRAGMA user_version").fetchone())[0]

    # ---- append ---------------------------------------------------------------------------------------------

    def append(self, event: Event) -> RunProjection:
        """Validate, reduce and store one event with its projections, atomically. Returns the new run projection.

        Raises `SequenceConflict` (another writer took the sequence), `InvalidTransition`, `BudgetExceeded`,
        `BearAgentError(validation.*)` for a payload that does not match its type, `StoreError` for storage trouble.
        """
        return self.append_many((event,))

    def append_many(self, events: Sequence[Event]) -> RunProjection:
        """Append consecutive events of ONE run in one transaction: all of them become facts, or none does (a
        budget refusal of any of them rolls the whole batch back). Returns the run projection after the last.

        For synchronous callers (tools, tests, workers): the runtime's `RunWriter` on a private event loop, its
        loads and commits run inline on this thread. Async code awaits a `RunWriter` over the store instead (off the
        loop); this must not run inside an event loop."""
        with self._sync_lock:
            if self._sync_loop is None:
                self._sync_loop = asyncio.new_event_loop()
                inline = _InlineCommits(
                    lambda run_id: self._sync_read(lambda conn: load_on(conn, self.path, str(run_id))),
                    lambda commit: self._sync_read(lambda conn: self._commit_on(conn, commit)),
                )
                self._sync_writer = RunWriter(inline, cache_size=self._cache_size)
            assert self._sync_writer is not None
            return self._sync_loop.run_until_complete(self._sync_writer.append_many(events))

    def _commit_on(self, conn: sqlite3.Connection, commit: RunCommit) -> None:
        cursor = self._cursors.get(id(conn))
        if cursor is None:  # one reused cursor per connection: cheaper than a new one per statement
            cursor = self._cursors[id(conn)] = conn.cursor()
        commit_on(cursor, self.path, commit)

    # ---- the async storage port (ports.RunStorage) -------------------------------------------------------------
    #
    # Blocking SQLite calls run on this store's own threads, never on the event loop: one writer thread (its own
    # connection; a write waiting for another process's lock waits there, up to the busy timeout) and one reader
    # thread (its own connection: WAL readers never wait for writers).

    async def load_run(self, run_id: RunId) -> StoredRun | None:
        return await self._writer.call(lambda conn: load_on(conn, self.path, str(run_id)))

    async def commit(self, commit: RunCommit) -> None:
        await self._writer.call(lambda conn: self._commit_on(conn, commit))

    def commit_now(self, commit: RunCommit) -> bool:
        """`ports.commit_now_of`: the commit made at once on this thread when SQLite needs no wait for it."""
        done, _ = self._writer.try_now(lambda conn: self._commit_on(conn, commit))
        return done

    async def fetch_events(self, run_id: RunId, after_sequence: int = 0, limit: int | None = None) -> Sequence[Event]:
        return await self._reader.call(
            lambda conn: run_reads.events_on(conn, self.path, run_id, after_sequence + 1, limit)
        )

    async def fetch_run(self, run_id: RunId) -> RunProjection | None:
        return await self._reader.call(lambda conn: run_reads.run_on(conn, self.path, run_id))

    async def fetch_run_statuses(self, run_ids: Sequence[RunId]) -> Mapping[RunId, RunStatus]:
        if not run_ids:
            return {}
        return await self._reader.call(lambda conn: run_reads.statuses_on(conn, self.path, run_ids))

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
        return await self._reader.call(
            lambda conn: run_reads.runs_on(
                conn, self.path, session_id, status, parent_run_id, limit, oldest_first, answered
            )
        )

    async def fetch_queue_heads(self, limit: int) -> Sequence[RunProjection]:
        return await self._reader.call(lambda conn: run_reads.queue_heads_on(conn, self.path, limit))

    async def fetch_activities(self, run_id: RunId) -> Sequence[ActivityProjection]:
        return await self._reader.call(lambda conn: run_reads.activities_on(conn, self.path, run_id))

    async def find_runs(self, prefix: str, *, top_level: bool = False, limit: int = 6) -> Sequence[RunId]:
        return await self._reader.call(lambda conn: run_reads.find_on(conn, self.path, prefix, top_level, limit))

    async def renew_leases(self, run_ids: Sequence[RunId], at: datetime) -> None:
        if run_ids:
            await self._writer.call(lambda conn: leases.renew_on(conn, self.path, run_ids, at))

    async def fetch_heartbeats(self, run_ids: Sequence[RunId]) -> Mapping[RunId, datetime]:
        if not run_ids:
            return {}
        return await self._reader.call(lambda conn: leases.heartbeats_on(conn, self.path, run_ids))

    async def request_cancel(self, run_id: RunId, reason: str, at: datetime) -> None:
        await self._writer.call(lambda conn: leases.request_cancel_on(conn, self.path, run_id, reason, at))

    async def fetch_cancel_requests(self, run_ids: Sequence[RunId]) -> Mapping[RunId, str]:
        if not run_ids:
            return {}
        return await self._reader.call(lambda conn: leases.cancel_requests_on(conn, self.path, run_ids))

    async def allow_in_session(self, session_id: SessionId, rule: str) -> None:
        await self._writer.call(lambda conn: sessions.allow_in_session_on(conn, self.path, session_id, rule))

    async def queue_session_facts(self, session_id: SessionId, facts: Sequence[JsonValue]) -> None:
        if facts:
            await self._writer.call(lambda conn: sessions.queue_facts_on(conn, self.path, session_id, list(facts)))

    async def take_session_facts(self, session_id: SessionId) -> list[JsonValue]:
        return await self._writer.call(lambda conn: sessions.take_facts_on(conn, self.path, session_id))

    async def insert_session(self, session: SessionRecord) -> SessionRecord:
        return await self._writer.call(lambda conn: sessions.insert_session_on(conn, self.path, session))

    async def save_session(self, session: SessionRecord) -> SessionRecord:
        return await self._writer.call(lambda conn: sessions.save_session_on(conn, self.path, session))

    async def fetch_session(self, session_id: SessionId) -> SessionRecord | None:
        return await self._reader.call(lambda conn: sessions.session_on(conn, self.path, session_id))

    async def fetch_sessions(self, *, caller: str | None = None, limit: int = 50) -> Sequence[SessionRecord]:
        return await self._reader.call(lambda conn: sessions.sessions_on(conn, self.path, caller, limit))

    async def record_workspace(self, record: WorkspaceRecord) -> WorkspaceRecord:
        return await self._writer.call(lambda conn: workspace_rows.record_on(conn, self.path, record))

    def session_lock(
        self,
        session_id: SessionId,
        *,
        wait: bool = True,
        on_wait: Callable[[], None] | None = None,
        timeout_s: float | None = None,
    ) -> SessionLock:
        """An exclusive `flock` on `locks/session-<id>.lock` beside the database: one host, like the file."""
        return SessionLock(self.path.parent / "locks", session_id, wait=wait, on_wait=on_wait, timeout_s=timeout_s)

    # ---- synchronous reads (on the store's own connection) ---------------------------------------------------

    def _sync_read(self, read: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            return read(self._conn)

    def read_events(self, run_id: RunId, from_sequence: int = 1, *, limit: int | None = None) -> Sequence[Event]:
        """The stored events of a run from `from_sequence` on, in sequence order, exactly as appended."""
        return self._sync_read(lambda conn: run_reads.events_on(conn, self.path, run_id, from_sequence, limit))

    def get_run(self, run_id: RunId) -> RunProjection | None:
        return self._sync_read(lambda conn: run_reads.run_on(conn, self.path, run_id))

    def list_runs(
        self,
        *,
        session_id: SessionId | None = None,
        status: RunStatus | None = None,
        parent_run_id: RunId | None = None,
        limit: int = 50,
    ) -> Sequence[RunProjection]:
        """Runs, newest first (by creation), optionally of one session, one status and/or one parent run."""
        return self._sync_read(
            lambda conn: run_reads.runs_on(conn, self.path, session_id, status, parent_run_id, limit)
        )

    def list_activities(self, run_id: RunId) -> Sequence[ActivityProjection]:
        return self._sync_read(lambda conn: run_reads.activities_on(conn, self.path, run_id))

    def resolve_run_ref(self, ref: str) -> RunId:
        """A run id from a full id, a unique prefix of one, or `last` (`runtime/run_refs.py`), for sync callers."""
        prefix = run_ref_prefix(ref)
        found = self._sync_read(
            lambda conn: run_reads.find_on(
                conn, self.path, prefix or "", prefix is None, 1 if prefix is None else MATCH_LIMIT
            )
        )
        return pick_run(ref, prefix, found, str(self.path))

    # ---- search (`store/search.py`) --------------------------------------------------------------------------

    @staticmethod
    def _search_on(conn: sqlite3.Connection, path: Path, query: RunSearch) -> list[RunSearchHit]:
        search.index_on(conn, path)
        return search.search_on(conn, path, query)

    def search_runs(self, query: RunSearch) -> list[RunSearchHit]:
        """Runs whose prompt, answers, tool calls or results hold every word of `query` (the index caught up with
        the log first), newest first."""
        return self._sync_read(lambda conn: self._search_on(conn, self.path, query))

    async def fetch_search(self, query: RunSearch) -> list[RunSearchHit]:
        """`search_runs` off the event loop (on the reader thread's connection)."""
        return await self._reader.call(lambda conn: self._search_on(conn, self.path, query))

    # ---- retention (`store/retention.py`) ------------------------------------------------------------------

    def prune_runs(self, before: datetime, *, dry_run: bool = False) -> PruneResult:
        """Remove finished top-level runs created before `before`, with their subagents' runs, unless pinned
        (`domain/retention.py`); with `dry_run`, only say what would go."""
        return self._sync_read(lambda conn: retention.prune_on(conn, self.path, before, dry_run=dry_run))

    def set_pinned(self, run_id: RunId, pinned: bool) -> bool:
        """Pin (kept by every prune) or unpin a run; False when it already was so."""
        return self._sync_read(lambda conn: retention.set_pinned_on(conn, self.path, run_id, pinned, datetime.now(UTC)))

    def pinned_runs(self) -> list[RunId]:
        return self._sync_read(lambda conn: retention.pinned_on(conn, self.path))

    def size_bytes(self) -> int:
        """The bytes the store takes on disk (the file and its write-ahead log)."""
        return retention.size_on(self.path)

    def vacuum(self) -> None:
        """Give the space of pruned runs back to the file system (rewrites the file)."""
        self._sync_read(lambda conn: retention.vacuum_on(conn, self.path))

    # ---- maintenance -----------------------------------------------------------------------------------------

    def replay_run(self, run_id: RunId) -> tuple[RunProjection, list[ActivityProjection]] | None:
        """The projections of one run rebuilt from its events alone (validating every payload); nothing is written."""
        rows = self._sync_read(lambda conn: maintenance.replay_query(conn, self.path, run_id))
        return maintenance.replay_rows(self.path, run_id, rows)

    def rebuild_projections(self, *, validate: bool = False) -> RebuildReport:
        """Recompute every Run/Activity projection from the event log alone and replace the stored ones.

        One transaction; on any error nothing changes. `validate=True` also re-validates every payload against its
        typed model (slower; appended events were validated already).
        """
        return self._sync_read(lambda conn: maintenance.rebuild_projections(conn, self.path, validate=validate))

    def check_integrity(self) -> None:
        """Run SQLite's full integrity check; `StoreError(storage.corrupt)` naming the first problem if any."""
        self._sync_read(lambda conn: maintenance.check_integrity(conn, self.path))

    # ---- sessions --------------------------------------------------------------------------------------------

    def create_session(self, session: SessionRecord) -> SessionRecord:
        return self._sync_read(lambda conn: sessions.insert_session_on(conn, self.path, session))

    def update_session(self, session: SessionRecord) -> SessionRecord:
        """Replace a stored session's fields (its id must exist)."""
        return self._sync_read(lambda conn: sessions.save_session_on(conn, self.path, session))

    def get_session(self, session_id: SessionId) -> SessionRecord | None:
        return self._sync_read(lambda conn: sessions.session_on(conn, self.path, session_id))

    def latest_session(self, *, caller: str | None = None) -> SessionRecord | None:
        """The most recently updated session (of `caller`, when given)."""
        found = self.list_sessions(caller=caller, limit=1)
        return found[0] if found else None

    def list_sessions(self, *, caller: str | None = None, limit: int = 50) -> Sequence[SessionRecord]:
        """Sessions, most recently updated first."""
        return self._sync_read(lambda conn: sessions.sessions_on(conn, self.path, caller, limit))

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def close(self) -> None:
        with self._sync_lock:
            if self._sync_loop is not None:
                self._sync_loop.close()
                self._sync_loop = None
                self._sync_writer = None
        self._writer.close()
        self._reader.close()
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


__all__ = ["Durability", "RebuildReport", "SqliteEventStore", "StoreError", "dumps_json"]

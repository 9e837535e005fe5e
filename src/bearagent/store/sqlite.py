"""The default store: one SQLite file (WAL) holding the event log and its Run/Activity projections.

It implements the async storage port (`ports.RunStorage`) of the run writer (`runtime/run_writer.py`): the writer
reduces, this store commits. A commit is one `BEGIN IMMEDIATE` transaction: check the run row is still at the version
the writer reduced on, write the run row (with its active activity), INSERT the events and the ended activities,
COMMIT; anything failing rolls all of it back. The write lock of `BEGIN IMMEDIATE` plus the version check (and
`UNIQUE (run_id, sequence)`) make racing writers, threads or processes, safe: the loser gets `VersionConflict`, which
the writer turns into `SequenceConflict`. Port calls run on the store's own writer and reader threads, so a commit
waiting for another process's write lock never blocks the event loop.

The synchronous methods (reads, sessions, `append`, maintenance) serve the CLI's read-only commands, tools and tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Literal, Self, TypeVar, cast

import orjson

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus, SessionRecord
from bearagent.ports import ActivityIdTaken, EventIdTaken, RunCommit, StoredRun, VersionConflict
from bearagent.runtime.replay import EventRow, Replayer, ReplayError
from bearagent.runtime.run_refs import MATCH_LIMIT, pick_run, run_ref_prefix
from bearagent.runtime.run_state import ActivityState, RunState, iso
from bearagent.runtime.run_writer import RunWriter
from bearagent.runtime.state_files import SQLITE_SIDE_FILES, prepare_sqlite_file, refuse_symlinks
from bearagent.store.errors import StoreError, translate_sqlite_error
from bearagent.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from bearagent.store.session_lock import SessionLock

Durability = Literal["normal", "full"]
_T = TypeVar("_T")

_INSERT_EVENT = (
    "INSERT INTO events (run_id, sequence, event_id, event_type, schema_version, occurred_at, causation_id,"
    " correlation_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_RUN = (
    "INSERT INTO run_projections (run_id, session_id, parent_run_id, status, created_at, last_sequence, data,"
    " active_activity, goal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT_RUN = "SELECT data, goal FROM run_projections"
_VERSION_OF = "SELECT last_sequence FROM run_projections WHERE run_id = ?"
_UPDATE_RUN_IF_AT = (
    "UPDATE run_projections SET last_sequence = ?, data = ?, active_activity = ? WHERE run_id = ? AND last_sequence = ?"
)
# a separate statement that writes (and touches the status index) only when the status changed
_UPDATE_STATUS = "UPDATE run_projections SET status = ? WHERE run_id = ? AND status != ?"
_INSERT_ACTIVITY = (
    "INSERT INTO activity_projections (run_id, activity_id, requested_sequence, status, data) VALUES (?, ?, ?, ?, ?)"
)
_ACTIVITY_EXISTS = "SELECT 1 FROM activity_projections WHERE run_id = ? AND activity_id = ?"
_EVENT_COLUMNS = (
    "event_id, run_id, sequence, event_type, schema_version, occurred_at, causation_id, correlation_id, payload"
)


def _thaw(value: object) -> object:
    if isinstance(value, MappingProxyType):
        return dict(cast(Mapping[str, object], value))
    raise TypeError(f"{type(value).__name__} is not JSON")


def dumps_json(value: Mapping[str, JsonValue]) -> str:
    """Compact JSON text of a (possibly frozen) JSON object; orjson, or the stdlib for integers beyond 64 bits."""
    try:
        return orjson.dumps(value, default=_thaw).decode()
    except TypeError:
        return json.dumps(thaw_json_mapping(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


@dataclass(frozen=True, slots=True)
class RebuildReport:
    runs: int
    activities: int
    events: int


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


class _Worker:
    """One thread with its own connection, opened there on first use; async callers await its results."""

    def __init__(self, name: str, connect: Callable[[], sqlite3.Connection]) -> None:
        self._name = name
        self._connect = connect
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        self._guard = threading.Lock()

    def _run(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._conn is None:
            self._conn = self._connect()
        return work(self._conn)

    async def call(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._guard:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=self._name)
            executor = self._executor
        return await asyncio.get_running_loop().run_in_executor(executor, self._run, work)

    def close(self) -> None:
        with self._guard:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)  # a commit under way finishes first
        if self._conn is not None:
            self._conn.close()
            self._conn = None


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
        self._conn = self._open(busy_timeout_ms)
        self._cursors: dict[int, sqlite3.Cursor] = {}
        self._writer = _Worker("bearagent-store-writer", lambda: self._connect_more(busy_timeout_ms))
        self._reader = _Worker("bearagent-store-reader", lambda: self._connect_more(busy_timeout_ms))
        self._sync_lock = threading.Lock()
        self._sync_loop: asyncio.AbstractEventLoop | None = None
        self._sync_writer: RunWriter | None = None

    # ---- opening and migrating -------------------------------------------------------------------------------

    def _open(self, busy_timeout_ms: int) -> sqlite3.Connection:
        path = self.path
        try:
            # SQLite opens the database and its side files by name, following symlinks: refuse them first
            refuse_symlinks([path, *(path.with_name(path.name + suffix) for suffix in SQLITE_SIDE_FILES)])
            is_dir = path.is_dir()
        except OSError as exc:
            raise StoreError(
                path,
                "read_only",
                f"cannot reach the event store ({exc.strerror})",
                "Make its directory accessible to this user, or use a writable workspace",
            ) from exc
        if is_dir:
            raise StoreError(path, "not_a_file", "the event store path is a directory", "Point it at a file instead")
        try:
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                path,
                "read_only",
                f"cannot create the directory of the event store ({exc.strerror})",
                "Create it yourself or make its parent writable, or use a writable workspace",
            ) from exc
        try:
            prepare_sqlite_file(path)  # a new store is created 0600, never through a symlink
        except OSError as exc:
            raise StoreError(
                path,
                "read_only",
                f"cannot create the event store ({exc.strerror})",
                "Make the directory and the file writable (the store also creates -wal and -shm files next to it), "
                "or use a writable workspace",
            ) from exc
        try:
            conn = sqlite3.connect(
                str(path), isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
            )
        except sqlite3.Error as exc:
            raise translate_sqlite_error(path, exc, "opening the event store") from exc
        try:
            self._prepare(conn, busy_timeout_ms)
        except BaseException:
            conn.close()
            raise
        return conn

    def _connect_more(self, busy_timeout_ms: int) -> sqlite3.Connection:
        """Another connection to the file `_open` checked, set up and migrated. It must not open and close the
        file itself as `_open` does: closing any descriptor of the file drops the POSIX locks this process's other
        connections hold on it (SQLite's locks), which can corrupt the database mid-transaction."""
        try:
            conn = sqlite3.connect(
                str(self.path), isolation_level=None, check_same_thread=False, timeout=busy_timeout_ms / 1000
            )
        except sqlite3.Error as exc:
            raise translate_sqlite_error(self.path, exc, "opening the event store") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            conn.execute("PRAGMA synchronous = " + ("FULL" if self.durability == "full" else "NORMAL"))
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as exc:
            conn.close()
            raise translate_sqlite_error(self.path, exc, "opening the event store") from exc
        return conn

    def _prepare(self, conn: sqlite3.Connection, busy_timeout_ms: int) -> None:
        path = self.path
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            app_id, version, tables = self._identify(conn)
            self._check_identity(app_id, version, tables)
            mode = self._enable_wal(conn, busy_timeout_ms)
            if mode != "wal":
                raise StoreError(
                    path,
                    "no_wal",
                    f"the event store could not switch to WAL mode (journal_mode is {mode})",
                    "Keep the store on a local filesystem that supports shared memory (not a network share)",
                )
            conn.execute("PRAGMA synchronous = " + ("FULL" if self.durability == "full" else "NORMAL"))
            conn.execute("PRAGMA foreign_keys = ON")
            if version < SCHEMA_VERSION:
                self._migrate(conn)
            conn.execute("SELECT count(*) FROM run_projections WHERE rowid = 1").fetchone()
        except sqlite3.Error as exc:
            raise translate_sqlite_error(path, exc, "opening the event store") from exc

    @staticmethod
    def _enable_wal(conn: sqlite3.Connection, busy_timeout_ms: int) -> str:
        """Switch a new file to WAL (persistent: later opens find it set). Switching needs the file to itself and
        SQLite does not wait for that, so retry while other openers hold it, up to the busy timeout."""
        deadline = time.monotonic() + busy_timeout_ms / 1000
        while True:
            mode = cast(tuple[str], conn.execute("PRAGMA journal_mode").fetchone())[0].lower()
            if mode == "wal":
                return mode
            try:
                return cast(tuple[str], conn.execute("PRAGMA journal_mode = WAL").fetchone())[0].lower()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc).lower() or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    @staticmethod
    def _identify(conn: sqlite3.Connection) -> tuple[int, int, int]:
        # one statement, so one snapshot: another process may be migrating the file right now
        row = conn.execute(
            "SELECT a.application_id, v.user_version, (SELECT count(*) FROM sqlite_master)"
            " FROM pragma_application_id() AS a, pragma_user_version() AS v"
        ).fetchone()
        return cast(tuple[int, int, int], row)

    def _check_identity(self, app_id: int, version: int, tables: int) -> None:
        if app_id == 0 and version == 0 and tables == 0:
            return  # a new, empty file: ours to initialise
        if app_id != APPLICATION_ID:
            raise StoreError(
                self.path,
                "foreign_file",
                "this SQLite file is not a BearAgent event store (application_id "
                f"{app_id:#x}, {tables} schema objects)",
                "Move it aside or point BearAgent at another file; BearAgent never writes into foreign databases",
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                self.path,
                "newer_schema",
                f"the event store has schema version {version}, newer than this BearAgent supports ({SCHEMA_VERSION})",
                "Upgrade BearAgent (pip install -U bearagent) to open it; older versions never downgrade a store",
            )

    def _migrate(self, conn: sqlite3.Connection) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            app_id, version, tables = self._identify(conn)  # another process may have migrated meanwhile
            self._check_identity(app_id, version, tables)
            for number in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[number - 1]:
                    conn.execute(statement)
            conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

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
                    lambda run_id: self._sync_read(lambda conn: self._load_on(conn, str(run_id))),
                    lambda commit: self._sync_read(lambda conn: self._commit_on(conn, commit)),
                )
                self._sync_writer = RunWriter(inline, cache_size=self._cache_size)
            assert self._sync_writer is not None
            return self._sync_loop.run_until_complete(self._sync_writer.append_many(events))

    def _commit_on(self, conn: sqlite3.Connection, commit: RunCommit) -> None:
        """The commit of the storage port, on the writer thread: one `BEGIN IMMEDIATE` transaction."""
        run_id = str(commit.run_id)
        state, active = commit.state, commit.active
        rows = [
            (
                run_id,
                event.sequence,
                str(event.event_id),
                event.event_type,
                event.schema_version,
                iso(event.occurred_at),
                None if event.causation_id is None else str(event.causation_id),
                None if event.correlation_id is None else str(event.correlation_id),
                dumps_json(event.payload),
            )
            for event in commit.events
        ]
        data = dumps_json(state.to_json(with_goal=False))
        active_data = None if active is None else dumps_json(active.to_json())
        cursor = self._writer_cursor(conn)
        try:
            cursor.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            raise translate_sqlite_error(self.path, exc, "starting an append") from exc
        first = commit.events[0]
        try:
            if commit.expected_version == 0:
                stored = cursor.execute(_VERSION_OF, (run_id,)).fetchone()
                if stored is not None:
                    raise VersionConflict(commit.run_id, cast(int, stored[0]))
                cursor.execute(
                    _INSERT_RUN,
                    (
                        run_id,
                        state.session_id,
                        state.parent_run_id,
                        state.status,
                        iso(state.created_at),
                        state.last_sequence,
                        data,
                        active_data,
                        state.goal,
                    ),
                )
            else:
                cursor.execute(
                    _UPDATE_RUN_IF_AT, (state.last_sequence, data, active_data, run_id, commit.expected_version)
                )
                if cursor.rowcount != 1:
                    stored = cursor.execute(_VERSION_OF, (run_id,)).fetchone()
                    raise VersionConflict(commit.run_id, 0 if stored is None else cast(int, stored[0]))
                cursor.execute(_UPDATE_STATUS, (state.status, run_id, state.status))
            for activity_id in commit.requested_activity_ids:
                if cursor.execute(_ACTIVITY_EXISTS, (run_id, activity_id)).fetchone() is not None:
                    raise ActivityIdTaken(activity_id)
            cursor.executemany(_INSERT_EVENT, rows)
            for ended in commit.finished:
                cursor.execute(
                    _INSERT_ACTIVITY,
                    (run_id, ended.activity_id, ended.requested_sequence, ended.status, dumps_json(ended.to_json())),
                )
            cursor.execute("COMMIT")
        except BaseException as exc:
            with contextlib.suppress(sqlite3.Error):
                cursor.execute("ROLLBACK")
            if isinstance(exc, sqlite3.IntegrityError):
                raise self._integrity_error(cursor, exc, commit) from exc
            if isinstance(exc, sqlite3.Error):
                raise translate_sqlite_error(
                    self.path, exc, f"appending event {first.sequence} of run {run_id}"
                ) from exc
            raise

    def _writer_cursor(self, conn: sqlite3.Connection) -> sqlite3.Cursor:
        cursor = self._cursors.get(id(conn))
        if cursor is None:  # one reused cursor per connection: cheaper than a new one per statement
            cursor = self._cursors[id(conn)] = conn.cursor()
        return cursor

    @staticmethod
    def _run_values(run: RunState, active: ActivityState | None) -> tuple[object, ...]:
        return (
            run.status,
            run.last_sequence,
            dumps_json(run.to_json(with_goal=False)),
            None if active is None else dumps_json(active.to_json()),
        )

    def _load_on(self, conn: sqlite3.Connection, run_id: str) -> StoredRun | None:
        try:
            row = conn.execute(
                "SELECT data, goal, active_activity FROM run_projections WHERE run_id = ?", (run_id,)
            ).fetchone()
        except sqlite3.Error as exc:
            raise translate_sqlite_error(self.path, exc, f"reading run {run_id}") from exc
        if row is None:
            return None
        data, goal, active_data = cast(tuple[str, str | None, str | None], row)
        run = RunState.from_json(_run_json(data, goal))
        active: ActivityState | None = None
        if run.active_activity_id is not None:
            if active_data is None:
                raise StoreError(
                    self.path,
                    "inconsistent",
                    f"run {run_id} points at active activity {run.active_activity_id}, which is not stored",
                    "Rebuild the projections from the event log (SqliteEventStore.rebuild_projections)",
                )
            active = ActivityState.from_json(cast(Mapping[str, JsonValue], json.loads(active_data)))
        return StoredRun(run, active)

    def _integrity_error(self, cursor: sqlite3.Cursor, exc: sqlite3.IntegrityError, commit: RunCommit) -> Exception:
        text = str(exc)
        run_id = str(commit.run_id)
        if "events.run_id" in text and "events.sequence" in text:
            row = cursor.execute("SELECT max(sequence) FROM events WHERE run_id = ?", (run_id,)).fetchone()
            return VersionConflict(commit.run_id, cast(int | None, row[0] if row else None) or 0)
        if "events.event_id" in text:
            taken = {str(event.event_id) for event in commit.events}
            found = [
                cast(str, row[0])
                for row in cursor.execute(
                    f"SELECT event_id FROM events WHERE event_id IN ({', '.join('?' * len(taken))})", tuple(taken)
                )
            ]
            return EventIdTaken(found[0] if found else str(commit.events[0].event_id))
        if "activity_projections" in text:
            return ActivityIdTaken(commit.finished[0].activity_id if commit.finished else "?")
        if "run_projections.run_id" in text:
            row = cursor.execute(_VERSION_OF, (run_id,)).fetchone()
            return VersionConflict(commit.run_id, 0 if row is None else cast(int, row[0]))
        return translate_sqlite_error(
            self.path, exc, f"appending event {commit.events[0].sequence} of run {commit.run_id}"
        )

    # ---- the async storage port (ports.RunStorage) -------------------------------------------------------------
    #
    # Blocking SQLite calls run on this store's own threads, never on the event loop: one writer thread (its own
    # connection; a write waiting for another process's lock waits there, up to the busy timeout) and one reader
    # thread (its own connection: WAL readers never wait for writers).

    async def load_run(self, run_id: RunId) -> StoredRun | None:
        return await self._writer.call(lambda conn: self._load_on(conn, str(run_id)))

    async def commit(self, commit: RunCommit) -> None:
        await self._writer.call(lambda conn: self._commit_on(conn, commit))

    async def fetch_events(self, run_id: RunId, after_sequence: int = 0, limit: int | None = None) -> Sequence[Event]:
        return await self._reader.call(lambda conn: self._events_on(conn, run_id, after_sequence + 1, limit))

    async def fetch_run(self, run_id: RunId) -> RunProjection | None:
        return await self._reader.call(lambda conn: self._run_on(conn, run_id))

    async def fetch_runs(
        self,
        *,
        session_id: SessionId | None = None,
        status: RunStatus | None = None,
        parent_run_id: RunId | None = None,
        limit: int = 50,
    ) -> Sequence[RunProjection]:
        return await self._reader.call(lambda conn: self._runs_on(conn, session_id, status, parent_run_id, limit))

    async def fetch_activities(self, run_id: RunId) -> Sequence[ActivityProjection]:
        return await self._reader.call(lambda conn: self._activities_on(conn, run_id))

    async def find_runs(self, prefix: str, *, top_level: bool = False, limit: int = 6) -> Sequence[RunId]:
        return await self._reader.call(lambda conn: self._find_on(conn, prefix, top_level, limit))

    async def insert_session(self, session: SessionRecord) -> SessionRecord:
        return await self._writer.call(lambda conn: self._insert_session_on(conn, session))

    async def save_session(self, session: SessionRecord) -> SessionRecord:
        return await self._writer.call(lambda conn: self._save_session_on(conn, session))

    async def fetch_session(self, session_id: SessionId) -> SessionRecord | None:
        return await self._reader.call(lambda conn: self._session_on(conn, session_id))

    async def fetch_sessions(self, *, caller: str | None = None, limit: int = 50) -> Sequence[SessionRecord]:
        return await self._reader.call(lambda conn: self._sessions_on(conn, caller, limit))

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

    # ---- reads -----------------------------------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[object], doing: str) -> list[tuple[object, ...]]:
        with self._lock:
            return self._query_on(self._conn, sql, params, doing)

    def _query_on(
        self, conn: sqlite3.Connection, sql: str, params: Sequence[object], doing: str
    ) -> list[tuple[object, ...]]:
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise translate_sqlite_error(self.path, exc, doing) from exc

    def _sync_read(self, read: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            return read(self._conn)

    def read_events(self, run_id: RunId, from_sequence: int = 1, *, limit: int | None = None) -> Sequence[Event]:
        """The stored events of a run from `from_sequence` on, in sequence order, exactly as appended."""
        return self._sync_read(lambda conn: self._events_on(conn, run_id, from_sequence, limit))

    def _events_on(
        self, conn: sqlite3.Connection, run_id: RunId, from_sequence: int, limit: int | None
    ) -> Sequence[Event]:
        sql = f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ? AND sequence >= ? ORDER BY sequence"
        params: list[object] = [str(run_id), from_sequence]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self._query_on(conn, sql, params, f"reading events of run {run_id}")
        return [self._event_of(row) for row in rows]

    def _event_of(self, row: tuple[object, ...]) -> Event:
        try:
            return Event.model_validate(
                {
                    "event_id": row[0],
                    "run_id": row[1],
                    "sequence": row[2],
                    "event_type": row[3],
                    "schema_version": row[4],
                    "occurred_at": row[5],
                    "causation_id": row[6],
                    "correlation_id": row[7],
                    "payload": json.loads(cast(str, row[8])),
                }
            )
        except ValueError as exc:
            raise StoreError(
                self.path,
                "invalid_event",
                f"stored event {row[2]} of run {row[1]} cannot be read ({str(exc).splitlines()[0]})",
                "The file was changed outside BearAgent; restore it from a backup",
            ) from exc

    def get_run(self, run_id: RunId) -> RunProjection | None:
        return self._sync_read(lambda conn: self._run_on(conn, run_id))

    def _run_on(self, conn: sqlite3.Connection, run_id: RunId) -> RunProjection | None:
        rows = self._query_on(conn, f"{_SELECT_RUN} WHERE run_id = ?", (str(run_id),), f"reading run {run_id}")
        return _run_of(rows[0]) if rows else None

    def list_runs(
        self,
        *,
        session_id: SessionId | None = None,
        status: RunStatus | None = None,
        parent_run_id: RunId | None = None,
        limit: int = 50,
    ) -> Sequence[RunProjection]:
        """Runs, newest first (by creation), optionally of one session, one status and/or one parent run."""
        return self._sync_read(lambda conn: self._runs_on(conn, session_id, status, parent_run_id, limit))

    def _runs_on(
        self,
        conn: sqlite3.Connection,
        session_id: SessionId | None,
        status: RunStatus | None,
        parent_run_id: RunId | None,
        limit: int,
    ) -> Sequence[RunProjection]:
        where: list[str] = []
        params: list[object] = []
        for column, value in (("session_id", session_id), ("status", status), ("parent_run_id", parent_run_id)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(str(value))
        sql = _SELECT_RUN
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY rowid DESC LIMIT ?"
        params.append(limit)
        rows = self._query_on(conn, sql, params, "listing runs")
        return [_run_of(row) for row in rows]

    def list_activities(self, run_id: RunId) -> Sequence[ActivityProjection]:
        return self._sync_read(lambda conn: self._activities_on(conn, run_id))

    def _activities_on(self, conn: sqlite3.Connection, run_id: RunId) -> Sequence[ActivityProjection]:
        rows = self._query_on(
            conn,
            "SELECT requested_sequence, data FROM activity_projections WHERE run_id = ?"
            " UNION ALL SELECT 0, active_activity FROM run_projections WHERE run_id = ? AND active_activity IS NOT NULL"
            " ORDER BY 1",
            (str(run_id), str(run_id)),
            f"reading activities of run {run_id}",
        )
        activities = [ActivityProjection.model_validate_json(cast(str, row[1])) for row in rows]
        return sorted(activities, key=lambda a: a.requested_sequence)

    def _find_on(self, conn: sqlite3.Connection, prefix: str, top_level: bool, limit: int) -> Sequence[RunId]:
        if any(ch not in "0123456789abcdef-" for ch in prefix):
            return []  # run ids are lower-case hex and '-': nothing else can match (and GLOB stays literal)
        sql = "SELECT run_id FROM run_projections WHERE run_id GLOB ?"
        if top_level:
            sql += " AND parent_run_id IS NULL"
        sql += " ORDER BY rowid DESC LIMIT ?"
        rows = self._query_on(conn, sql, (prefix + "*", limit), f"finding runs starting with {prefix!r}")
        return [RunId(cast(str, row[0])) for row in rows]

    def resolve_run_ref(self, ref: str) -> RunId:
        """A run id from a full id, a unique prefix of one, or `last` (`runtime/run_refs.py`), for sync callers."""
        prefix = run_ref_prefix(ref)
        found = self._sync_read(
            lambda conn: self._find_on(conn, prefix or "", prefix is None, 1 if prefix is None else MATCH_LIMIT)
        )
        return pick_run(ref, prefix, found, str(self.path))

    # ---- replay ----------------------------------------------------------------------------------------------

    _REPLAY_COLUMNS = "run_id, sequence, event_type, schema_version, occurred_at, payload"

    def _replay_error(self, exc: ReplayError) -> StoreError:
        return StoreError(
            self.path,
            "invalid_log",
            exc.info.message,
            "The log was changed outside BearAgent; restore the file from a backup",
        )

    def replay_run(self, run_id: RunId) -> tuple[RunProjection, list[ActivityProjection]] | None:
        """The projections of one run rebuilt from its events alone (validating every payload); nothing is written."""
        rows = self._query(
            f"SELECT {self._REPLAY_COLUMNS} FROM events WHERE run_id = ? ORDER BY sequence",
            (str(run_id),),
            f"replaying run {run_id}",
        )
        replayer = Replayer(validate=True)
        try:
            replayer.feed_rows(cast(list[EventRow], rows))
        except ReplayError as exc:
            raise self._replay_error(exc) from exc
        run = replayer.runs.get(str(run_id))
        if run is None:
            return None
        return run.to_projection(), [a.to_projection() for a in replayer.activities_of(str(run_id))]

    def rebuild_projections(self, *, validate: bool = False) -> RebuildReport:
        """Recompute every Run/Activity projection from the event log alone and replace the stored ones.

        One transaction; on any error nothing changes. `validate=True` also re-validates every payload against its
        typed model (slower; appended events were validated already).
        """
        replayer = Replayer(validate=validate)
        with self._lock:
            conn = self._conn
            try:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    cursor = conn.execute(f"SELECT {self._REPLAY_COLUMNS} FROM events ORDER BY seq_no")
                    replayer.feed_rows(cast(Iterator[EventRow], cursor))
                    conn.execute("DELETE FROM activity_projections")
                    conn.execute("DELETE FROM run_projections")
                    conn.executemany(
                        _INSERT_RUN,
                        (
                            (
                                r.run_id,
                                r.session_id,
                                r.parent_run_id,
                                r.status,
                                iso(r.created_at),
                                *self._run_values(r, replayer.active_of(r.run_id))[1:],
                                r.goal,
                            )
                            for r in replayer.runs.values()
                        ),
                    )
                    conn.executemany(
                        _INSERT_ACTIVITY,
                        (
                            (a.run_id, a.activity_id, a.requested_sequence, a.status, dumps_json(a.to_json()))
                            for a in replayer.activities
                            if a.status not in ("pending", "running")
                        ),
                    )
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise
            except ReplayError as exc:
                raise self._replay_error(exc) from exc
            except sqlite3.Error as exc:
                raise translate_sqlite_error(self.path, exc, "rebuilding projections") from exc
        return RebuildReport(runs=len(replayer.runs), activities=len(replayer.activities), events=replayer.events)

    def check_integrity(self) -> None:
        """Run SQLite's full integrity check; `StoreError(storage.corrupt)` naming the first problem if any."""
        rows = self._query("PRAGMA integrity_check", (), "checking integrity")
        problems = [cast(str, row[0]) for row in rows if row[0] != "ok"]
        if problems:
            raise StoreError(
                self.path,
                "corrupt",
                f"the event store file is damaged ({problems[0]})",
                "Move the file aside and restore it from a backup; `sqlite3 FILE .recover` may salvage the events",
            )

    # ---- sessions --------------------------------------------------------------------------------------------

    def create_session(self, session: SessionRecord) -> SessionRecord:
        return self._sync_read(lambda conn: self._insert_session_on(conn, session))

    def _insert_session_on(self, conn: sqlite3.Connection, session: SessionRecord) -> SessionRecord:
        try:
            conn.execute(
                "INSERT INTO sessions (session_id, created_at, updated_at, agent_name, active_agent_name, title,"
                " caller) VALUES (?, ?, ?, ?, ?, ?, ?)",
                _session_row(session),
            )
        except sqlite3.IntegrityError as exc:
            raise BearAgentError(
                ErrorInfo.of(
                    "conflict",
                    "session_exists",
                    f"session {session.session_id} already exists; continue it with --session or create a new id",
                )
            ) from exc
        except sqlite3.Error as exc:
            raise translate_sqlite_error(self.path, exc, f"creating session {session.session_id}") from exc
        return session

    def update_session(self, session: SessionRecord) -> SessionRecord:
        """Replace a stored session's fields (its id must exist)."""
        return self._sync_read(lambda conn: self._save_session_on(conn, session))

    def _save_session_on(self, conn: sqlite3.Connection, session: SessionRecord) -> SessionRecord:
        try:
            cursor = conn.execute(
                "UPDATE sessions SET created_at = ?, updated_at = ?, agent_name = ?, active_agent_name = ?,"
                " title = ?, caller = ? WHERE session_id = ?",
                (*_session_row(session)[1:], str(session.session_id)),
            )
        except sqlite3.Error as exc:
            raise translate_sqlite_error(self.path, exc, f"updating session {session.session_id}") from exc
        if cursor.rowcount == 0:
            raise BearAgentError(
                ErrorInfo.of(
                    "not_found",
                    "session",
                    f"session {session.session_id} does not exist; create it first (create_session)",
                )
            )
        return session

    def get_session(self, session_id: SessionId) -> SessionRecord | None:
        return self._sync_read(lambda conn: self._session_on(conn, session_id))

    def _session_on(self, conn: sqlite3.Connection, session_id: SessionId) -> SessionRecord | None:
        rows = self._query_on(conn, f"{_SESSION_SELECT} WHERE session_id = ?", (str(session_id),), "reading a session")
        return _session_of(rows[0]) if rows else None

    def latest_session(self, *, caller: str | None = None) -> SessionRecord | None:
        """The most recently updated session (of `caller`, when given)."""
        found = self.list_sessions(caller=caller, limit=1)
        return found[0] if found else None

    def list_sessions(self, *, caller: str | None = None, limit: int = 50) -> Sequence[SessionRecord]:
        """Sessions, most recently updated first."""
        return self._sync_read(lambda conn: self._sessions_on(conn, caller, limit))

    def _sessions_on(self, conn: sqlite3.Connection, caller: str | None, limit: int) -> Sequence[SessionRecord]:
        sql = _SESSION_SELECT
        params: list[object] = []
        if caller is not None:
            sql += " WHERE caller = ?"
            params.append(caller)
        sql += " ORDER BY updated_at DESC, rowid DESC LIMIT ?"
        params.append(limit)
        return [_session_of(row) for row in self._query_on(conn, sql, params, "listing sessions")]

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


def _run_json(data: str, goal: str | None) -> dict[str, JsonValue]:
    run = cast(dict[str, JsonValue], json.loads(data))
    run["goal"] = goal
    return run


def _run_of(row: tuple[object, ...]) -> RunProjection:
    return RunProjection.model_validate(_run_json(cast(str, row[0]), cast(str | None, row[1])))


_SESSION_SELECT = (
    "SELECT session_id, created_at, updated_at, agent_name, active_agent_name, title, caller FROM sessions"
)


def _session_row(session: SessionRecord) -> tuple[str | None, ...]:
    return (
        str(session.session_id),
        iso(session.created_at.astimezone(UTC)),
        iso(session.updated_at.astimezone(UTC)),
        session.agent_name,
        session.active_agent_name,
        session.title,
        session.caller,
    )


def _session_of(row: tuple[object, ...]) -> SessionRecord:
    return SessionRecord.model_validate(
        {
            "session_id": row[0],
            "created_at": row[1],
            "updated_at": row[2],
            "agent_name": row[3],
            "active_agent_name": row[4],
            "title": row[5],
            "caller": row[6],
        }
    )


__all__ = ["Durability", "RebuildReport", "SqliteEventStore", "StoreError"]

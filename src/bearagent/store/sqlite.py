"""The default EventStore: one SQLite file (WAL) holding the event log and its Run/Activity projections.

`append` is one `BEGIN IMMEDIATE` transaction: read the run row (and its active activity), reduce, INSERT the event,
write the projections, COMMIT; anything failing rolls all of it back. The write lock of `BEGIN IMMEDIATE` plus the
sequence check (backed by `UNIQUE (run_id, sequence)`) make racing writers, threads or processes, safe: the loser gets
`SequenceConflict`. An in-process cache of each run's state is trusted only while the stored `last_sequence` still
matches, so appending costs the same on the 10th and the 10,000th event.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Literal, Self, cast

import orjson

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.run_events import parse_run_event_payload
from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus, SessionRecord
from bearagent.runtime.reducer import InvalidTransition, SequenceConflict, apply
from bearagent.runtime.replay import EventRow, Replayer, ReplayError
from bearagent.runtime.run_state import ActivityState, RunState, iso
from bearagent.runtime.state_files import SQLITE_SIDE_FILES, prepare_sqlite_file, refuse_symlinks
from bearagent.store.errors import StoreError, translate_sqlite_error
from bearagent.store.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION

Durability = Literal["normal", "full"]

_INSERT_EVENT = (
    "INSERT INTO events (run_id, sequence, event_id, event_type, schema_version, occurred_at, causation_id,"
    " correlation_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_RUN = (
    "INSERT INTO run_projections (run_id, session_id, parent_run_id, status, created_at, last_sequence, data,"
    " active_activity, goal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_SELECT_RUN = "SELECT data, goal FROM run_projections"
_UPDATE_RUN = "UPDATE run_projections SET status = ?, last_sequence = ?, data = ?, active_activity = ? WHERE run_id = ?"
# the same without `status` (and so without touching its index) for the common case of an unchanged status
_UPDATE_RUN_IF_AT = (
    "UPDATE run_projections SET last_sequence = ?, data = ?, active_activity = ? WHERE run_id = ? AND last_sequence = ?"
)
_UPDATE_RUN_STATUS_IF_AT = _UPDATE_RUN + " AND last_sequence = ?"
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
        self._cache: dict[str, tuple[RunState, ActivityState | None]] = {}
        self._cache_size = cache_size
        self._conn = self._open(busy_timeout_ms)
        self._cursor = self._conn.cursor()

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

    # ---- append ----------------------------------------------------------------------------------------------

    def append(self, event: Event) -> RunProjection:
        """Validate, reduce and store one event with its projections, atomically. Returns the new run projection.

        Raises `SequenceConflict` (another writer took the sequence), `InvalidTransition`, `BudgetExceeded`,
        `BearAgentError(validation.*)` for a payload that does not match its type, `StoreError` for storage trouble.
        """
        return self.append_many((event,))

    def append_many(self, events: Sequence[Event]) -> RunProjection:
        """Append consecutive events of ONE run in one transaction: all of them become facts, or none does (a
        budget refusal of any of them rolls the whole batch back). Returns the run projection after the last."""
        if not events:
            raise ValueError("append_many needs at least one event")
        run_id = str(events[0].run_id)
        rows: list[tuple[object, ...]] = []
        for event in events:
            if str(event.run_id) != run_id:
                raise ValueError("append_many takes events of one run")
            parse_run_event_payload(event.event_type, event.schema_version, event.payload)
            rows.append(
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
            )
        with self._lock:
            conn = self._cursor  # one reused cursor: cheaper than a new one per statement
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise translate_sqlite_error(self.path, exc, "starting an append") from exc
            states: list[tuple[RunState, ActivityState | None]] = []
            event = events[0]
            try:
                for event, event_row in zip(events, rows, strict=True):
                    new_run, changed, active = self._reduce_and_write_run(conn, run_id, event)
                    conn.execute(_INSERT_EVENT, event_row)
                    if changed is not None and active is None:  # the activity ended: it moves to its own table
                        conn.execute(
                            _INSERT_ACTIVITY,
                            (
                                run_id,
                                changed.activity_id,
                                changed.requested_sequence,
                                changed.status,
                                dumps_json(changed.to_json()),
                            ),
                        )
                    states.append((new_run, active))
                    # the next event of the batch reduces on top of this one (inside the same transaction)
                    self._cache[run_id] = (new_run, active)
                conn.execute("COMMIT")
            except BaseException as exc:
                self._cache.pop(run_id, None)  # states written in the rolled-back transaction are not facts
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                if isinstance(exc, sqlite3.IntegrityError):
                    raise self._integrity_error(exc, event) from exc
                if isinstance(exc, sqlite3.Error):
                    raise translate_sqlite_error(
                        self.path, exc, f"appending event {event.sequence} of run {run_id}"
                    ) from exc
                raise
            new_run, active = states[-1]
            cache = self._cache
            cache[run_id] = (new_run, active)
            if len(cache) > self._cache_size:
                del cache[next(iter(cache))]
        return new_run.to_projection()

    def _reduce_and_write_run(
        self, conn: sqlite3.Cursor, run_id: str, event: Event
    ) -> tuple[RunState, ActivityState | None, ActivityState | None]:
        """Inside the write transaction: reduce the event and write the run row (with its active activity).

        Returns the run, the activity the event changed and the run's active activity afterwards. Fast path: the
        cached state of the run is trusted when the conditional UPDATE finds the stored row still at the cached
        `last_sequence` (no other writer got in between); otherwise, or when the cached state refuses the event,
        the run is read from the file and the event reduced again.
        """
        cached = self._cache.pop(run_id, None)  # put back only after COMMIT
        if cached is not None:
            run, active = cached
            prior, prior_status = run.last_sequence, run.status
            try:
                new_run, changed = self._apply(conn, run, active, event, run_id)
            except BearAgentError:
                pass  # maybe stale: decide on what the file says
            else:
                new_active = (changed or active) if new_run.active_activity_id is not None else None
                data = dumps_json(new_run.to_json(with_goal=False))
                active_data = None if new_active is None else dumps_json(new_active.to_json())
                if new_run.status == prior_status:
                    cursor = conn.execute(_UPDATE_RUN_IF_AT, (new_run.last_sequence, data, active_data, run_id, prior))
                else:
                    cursor = conn.execute(
                        _UPDATE_RUN_STATUS_IF_AT,
                        (new_run.status, new_run.last_sequence, data, active_data, run_id, prior),
                    )
                if cursor.rowcount == 1:
                    return new_run, changed, new_active
        run, active = self._load(conn, run_id)
        new_run, changed = self._apply(conn, run, active, event, run_id)
        new_active = (changed or active) if new_run.active_activity_id is not None else None
        if run is not None:
            conn.execute(_UPDATE_RUN, (*self._run_values(new_run, new_active), run_id))
        else:
            conn.execute(
                _INSERT_RUN,
                (
                    run_id,
                    new_run.session_id,
                    new_run.parent_run_id,
                    new_run.status,
                    iso(new_run.created_at),
                    *self._run_values(new_run, None)[1:],
                    new_run.goal,
                ),
            )
        return new_run, changed, new_active

    @staticmethod
    def _run_values(run: RunState, active: ActivityState | None) -> tuple[object, ...]:
        return (
            run.status,
            run.last_sequence,
            dumps_json(run.to_json(with_goal=False)),
            None if active is None else dumps_json(active.to_json()),
        )

    @staticmethod
    def _apply(
        conn: sqlite3.Cursor, run: RunState | None, active: ActivityState | None, event: Event, run_id: str
    ) -> tuple[RunState, ActivityState | None]:
        new_run, changed = apply(
            run,
            active,
            event.event_type,
            event.schema_version,
            event.sequence,
            event.occurred_at,
            event.payload,
            run_id=run_id,
        )
        if (
            changed is not None
            and changed.requested_sequence == event.sequence
            and conn.execute(_ACTIVITY_EXISTS, (run_id, changed.activity_id)).fetchone() is not None
        ):
            raise InvalidTransition(
                event.event_type,
                "already has this activity",
                f"activity {changed.activity_id} was requested before; every activity needs a new id",
                run_id=run_id,
            )
        return new_run, changed

    def _load(self, conn: sqlite3.Cursor, run_id: str) -> tuple[RunState | None, ActivityState | None]:
        row = conn.execute(
            "SELECT data, goal, active_activity FROM run_projections WHERE run_id = ?", (run_id,)
        ).fetchone()
        if row is None:
            return None, None
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
        return run, active

    def _integrity_error(self, exc: sqlite3.IntegrityError, event: Event) -> BearAgentError:
        text = str(exc)
        if "events.run_id" in text and "events.sequence" in text:
            row = self._conn.execute(
                "SELECT max(sequence) FROM events WHERE run_id = ?", (str(event.run_id),)
            ).fetchone()
            last = cast(int | None, row[0] if row else None) or 0
            return SequenceConflict(str(event.run_id), expected=last + 1, got=event.sequence)
        if "events.event_id" in text:
            return InvalidTransition(
                event.event_type,
                "already holds this event id",
                f"event {event.event_id} is already stored; every event needs a new event_id",
                run_id=str(event.run_id),
            )
        if "activity_projections" in text:
            return InvalidTransition(
                event.event_type,
                "already has this activity",
                f"activity {event.payload.get('activity_id')} was requested before; every activity needs a new id",
                run_id=str(event.run_id),
            )
        return translate_sqlite_error(self.path, exc, f"appending event {event.sequence} of run {event.run_id}")

    # ---- reads -----------------------------------------------------------------------------------------------

    def _query(self, sql: str, params: Sequence[object], doing: str) -> list[tuple[object, ...]]:
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except sqlite3.Error as exc:
                raise translate_sqlite_error(self.path, exc, doing) from exc

    def read_events(self, run_id: RunId, from_sequence: int = 1, *, limit: int | None = None) -> Sequence[Event]:
        """The stored events of a run from `from_sequence` on, in sequence order, exactly as appended."""
        sql = f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ? AND sequence >= ? ORDER BY sequence"
        params: list[object] = [str(run_id), from_sequence]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        rows = self._query(sql, params, f"reading events of run {run_id}")
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
        rows = self._query(f"{_SELECT_RUN} WHERE run_id = ?", (str(run_id),), f"reading run {run_id}")
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
        rows = self._query(sql, params, "listing runs")
        return [_run_of(row) for row in rows]

    def list_activities(self, run_id: RunId) -> Sequence[ActivityProjection]:
        rows = self._query(
            "SELECT requested_sequence, data FROM activity_projections WHERE run_id = ?"
            " UNION ALL SELECT 0, active_activity FROM run_projections WHERE run_id = ? AND active_activity IS NOT NULL"
            " ORDER BY 1",
            (str(run_id), str(run_id)),
            f"reading activities of run {run_id}",
        )
        activities = [ActivityProjection.model_validate_json(cast(str, row[1])) for row in rows]
        return sorted(activities, key=lambda a: a.requested_sequence)

    def resolve_run_ref(self, ref: str) -> RunId:
        """A run id from a full id, a unique prefix of one, or `last` (the newest run a caller started: child runs
        of `Task` and action tools are created after their parent, so they are not what `last` means)."""
        text = ref.strip().lower()
        if text == "last":
            rows = self._query(
                "SELECT run_id FROM run_projections WHERE parent_run_id IS NULL ORDER BY rowid DESC LIMIT 1",
                (),
                "finding the last run",
            )
            if not rows:
                raise BearAgentError(
                    ErrorInfo.of(
                        "not_found",
                        "no_runs",
                        f"there are no runs in {self.path} yet, so 'last' names nothing; start one with `bearagent run`",
                    )
                )
            return RunId(cast(str, rows[0][0]))
        if not text or any(ch not in "0123456789abcdef-" for ch in text):
            raise BearAgentError(
                ErrorInfo.of(
                    "invalid_request",
                    "bad_run_ref",
                    f"run reference {ref!r} is not a run id, a prefix of one or 'last'; "
                    "copy an id from `bearagent runs list`",
                )
            )
        rows = self._query(
            "SELECT run_id FROM run_projections WHERE run_id GLOB ? ORDER BY rowid DESC LIMIT 6",
            (text + "*",),
            f"resolving run reference {ref!r}",
        )
        if not rows:
            raise BearAgentError(
                ErrorInfo.of(
                    "not_found",
                    "run",
                    f"no run id starts with {ref!r} in {self.path}; list the runs with `bearagent runs list`",
                )
            )
        if len(rows) > 1:
            ids = ", ".join(cast(str, row[0]) for row in rows[:5])
            more = " and more" if len(rows) > 5 else ""
            raise BearAgentError(
                ErrorInfo.of(
                    "invalid_request",
                    "ambiguous_run_ref",
                    f"run reference {ref!r} matches several runs ({ids}{more}); type more characters of the id",
                )
            )
        return RunId(cast(str, rows[0][0]))

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
            self._cache.clear()
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
        with self._lock:
            try:
                self._conn.execute(
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
        with self._lock:
            try:
                cursor = self._conn.execute(
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
        rows = self._query(f"{_SESSION_SELECT} WHERE session_id = ?", (str(session_id),), "reading a session")
        return _session_of(rows[0]) if rows else None

    def latest_session(self, *, caller: str | None = None) -> SessionRecord | None:
        """The most recently updated session (of `caller`, when given)."""
        found = self.list_sessions(caller=caller, limit=1)
        return found[0] if found else None

    def list_sessions(self, *, caller: str | None = None, limit: int = 50) -> Sequence[SessionRecord]:
        """Sessions, most recently updated first."""
        sql = _SESSION_SELECT
        params: list[object] = []
        if caller is not None:
            sql += " WHERE caller = ?"
            params.append(caller)
        sql += " ORDER BY updated_at DESC, rowid DESC LIMIT ?"
        params.append(limit)
        return [_session_of(row) for row in self._query(sql, params, "listing sessions")]

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def close(self) -> None:
        with self._lock:
            self._cache.clear()
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

"""Reading runs back out of the SQLite store: events in sequence order, run rows, activities, runs by id prefix.

Each function takes the connection to read on (the store's own, or its reader thread's) and the store's path, which
every `StoreError` names.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

from bearagent.domain._base import JsonValue, frozen_json
from bearagent.domain.events import EVENT_TYPE_RE, Event
from bearagent.domain.ids import CausationId, CorrelationId, EventId, RunId, SessionId
from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus
from bearagent.runtime.run_state import trusted_model
from bearagent.store.errors import StoreError, translate_sqlite_error

SELECT_RUN = "SELECT data, goal FROM run_projections"
_EVENT_COLUMNS = (
    "event_id, run_id, sequence, event_type, schema_version, occurred_at, causation_id, correlation_id, payload"
)


def query_on(
    conn: sqlite3.Connection, path: Path, sql: str, params: Sequence[object], doing: str
) -> list[tuple[object, ...]]:
    """All rows of one statement; a raw sqlite3 error becomes a `StoreError` saying what was being done."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, doing) from exc


def run_json(data: str, goal: str | None) -> dict[str, JsonValue]:
    """A run row's JSON with its goal (kept in a column of its own) put back."""
    run = cast(dict[str, JsonValue], json.loads(data))
    run["goal"] = goal
    return run


def _run_of(row: tuple[object, ...]) -> RunProjection:
    return RunProjection.model_validate(run_json(cast(str, row[0]), cast(str | None, row[1])))


def events_on(
    conn: sqlite3.Connection, path: Path, run_id: RunId, from_sequence: int, limit: int | None
) -> Sequence[Event]:
    sql = f"SELECT {_EVENT_COLUMNS} FROM events WHERE run_id = ? AND sequence >= ? ORDER BY sequence"
    params: list[object] = [str(run_id), from_sequence]
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    rows = query_on(conn, path, sql, params, f"reading events of run {run_id}")
    seen: dict[object, object] = {}
    return [_event_of(path, row, seen) for row in rows]


def _once(seen: dict[object, object], kind: type[RunId] | type[CorrelationId], text: object) -> object:
    """The id of `text`, parsed once per read: every event of a run repeats its run and correlation ids. Text that
    is no id is passed on as it is, for the envelope's validation to refuse."""
    key = (kind, text)
    found = seen.get(key)
    if found is None:
        try:
            found = kind(text) if isinstance(text, str) else text
        except ValueError:
            found = text
        seen[key] = found
    return found


# what `iso()` writes: a UTC time with whole or microsecond seconds and a Z
_STORED_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{6})?Z\Z")


def _plain_event(row: tuple[object, ...], seen: dict[object, object]) -> Event | None:
    """The event of a row written the way this store writes rows, checked field by field by the rules `Event`
    applies (each id a version-4 UUID of its kind, sequence >= 1, the type's pattern and length, version 1-1000, a
    UTC time, the payload a JSON object within the bounds); None for anything else, which `Event.model_validate`
    then judges (and refuses with its own message)."""
    event_id, _run, sequence, event_type, version, occurred, causation, _corr, payload = row
    run_id = _once(seen, RunId, row[1])
    correlation_id = _once(seen, CorrelationId, row[7])
    if not (
        type(event_id) is str
        and type(run_id) is RunId
        and type(sequence) is int
        and sequence >= 1
        and type(event_type) is str
        and 2 <= len(event_type) <= 64
        and EVENT_TYPE_RE.match(event_type) is not None
        and type(version) is int
        and 1 <= version <= 1_000
        and type(occurred) is str
        and _STORED_TIME.match(occurred) is not None
        and (causation is None or type(causation) is str)
        and (correlation_id is None or type(correlation_id) is CorrelationId)
        and type(payload) is str
    ):
        return None
    try:
        values = {
            "event_id": EventId(event_id),
            "run_id": run_id,
            "sequence": sequence,
            "event_type": event_type,
            "schema_version": version,
            "occurred_at": datetime.fromisoformat(occurred).astimezone(UTC),
            "causation_id": None if causation is None else CausationId(causation),
            "correlation_id": correlation_id,
            "payload": frozen_json(cast(dict[str, object], json.loads(payload))),
        }
    except (ValueError, TypeError):
        return None
    return trusted_model(Event, values)


def _event_of(path: Path, row: tuple[object, ...], seen: dict[object, object]) -> Event:
    plain = _plain_event(row, seen)
    if plain is not None:
        return plain
    try:
        return Event.model_validate(
            {
                "event_id": row[0],
                "run_id": _once(seen, RunId, row[1]),
                "sequence": row[2],
                "event_type": row[3],
                "schema_version": row[4],
                "occurred_at": row[5],
                "causation_id": row[6],
                "correlation_id": _once(seen, CorrelationId, row[7]),
                "payload": json.loads(cast(str, row[8])),
            }
        )
    except ValueError as exc:
        raise StoreError(
            path,
            "invalid_event",
            f"stored event {row[2]} of run {row[1]} cannot be read ({str(exc).splitlines()[0]})",
            "The file was changed outside BearAgent; restore it from a backup",
        ) from exc


def run_on(conn: sqlite3.Connection, path: Path, run_id: RunId) -> RunProjection | None:
    rows = query_on(conn, path, f"{SELECT_RUN} WHERE run_id = ?", (str(run_id),), f"reading run {run_id}")
    return _run_of(rows[0]) if rows else None


def runs_on(
    conn: sqlite3.Connection,
    path: Path,
    session_id: SessionId | None,
    status: RunStatus | None,
    parent_run_id: RunId | None,
    limit: int,
    oldest_first: bool = False,
) -> Sequence[RunProjection]:
    """Runs, newest first (by creation; `oldest_first` the other way), optionally of one session, one status and/or
    one parent run."""
    where: list[str] = []
    params: list[object] = []
    for column, value in (("session_id", session_id), ("status", status), ("parent_run_id", parent_run_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(str(value))
    sql = SELECT_RUN
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY rowid ASC LIMIT ?" if oldest_first else " ORDER BY rowid DESC LIMIT ?"
    params.append(limit)
    rows = query_on(conn, path, sql, params, "listing runs")
    return [_run_of(row) for row in rows]


def activities_on(conn: sqlite3.Connection, path: Path, run_id: RunId) -> Sequence[ActivityProjection]:
    """The ended activities of a run and its active one (kept in the run row), by requested sequence."""
    rows = query_on(
        conn,
        path,
        "SELECT requested_sequence, data FROM activity_projections WHERE run_id = ?"
        " UNION ALL SELECT 0, active_activity FROM run_projections WHERE run_id = ? AND active_activity IS NOT NULL"
        " ORDER BY 1",
        (str(run_id), str(run_id)),
        f"reading activities of run {run_id}",
    )
    activities = [ActivityProjection.model_validate_json(cast(str, row[1])) for row in rows]
    return sorted(activities, key=lambda a: a.requested_sequence)


def find_on(conn: sqlite3.Connection, path: Path, prefix: str, top_level: bool, limit: int) -> Sequence[RunId]:
    """Ids of the runs starting with `prefix`, newest first."""
    if any(ch not in "0123456789abcdef-" for ch in prefix):
        return []  # run ids are lower-case hex and '-': nothing else can match (and GLOB stays literal)
    sql = "SELECT run_id FROM run_projections WHERE run_id GLOB ?"
    if top_level:
        sql += " AND parent_run_id IS NULL"
    sql += " ORDER BY rowid DESC LIMIT ?"
    rows = query_on(conn, path, sql, (prefix + "*", limit), f"finding runs starting with {prefix!r}")
    return [RunId(cast(str, row[0])) for row in rows]

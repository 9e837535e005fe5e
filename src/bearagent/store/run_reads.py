"""Reading runs back out of the SQLite store: events in sequence order, run rows, activities, runs by id prefix.

Each function takes the connection to read on (the store's own, or its reader thread's) and the store's path, which
every `StoreError` names.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import cast

import orjson

from bearagent.domain._base import JsonBoundsError, JsonMapping, JsonValue, frozen_json, frozen_parsed_json
from bearagent.domain.events import EVENT_TYPE_RE, Event
from bearagent.domain.ids import CANONICAL_V4, CausationId, CorrelationId, EventId, RunId, SessionId
from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus
from bearagent.runtime.run_state import trusted_model
from bearagent.store.errors import StoreError, translate_sqlite_error

SELECT_RUN = "SELECT data, goal FROM run_projections"
_EVENT_COLUMNS = (
    "event_id, run_id, sequence, event_type, schema_version, occurred_at, causation_id, correlation_id, payload"
)
# a run's rows without their run_id, which the WHERE clause fixes (text equal to the one asked for)
_RUN_EVENT_COLUMNS = (
    "event_id, sequence, event_type, schema_version, occurred_at, causation_id, correlation_id, payload"
)


def query_on(
    conn: sqlite3.Connection, path: Path, sql: str, params: Sequence[object], doing: str
) -> list[tuple[object, ...]]:
    """All rows of one statement; a raw sqlite3 error becomes a `StoreError` saying what was being done."""
    try:
        return conn.execute(sql, params).fetchall()
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, doing) from exc


def rows_of_runs(
    conn: sqlite3.Connection, path: Path, select: str, table: str, run_ids: Sequence[RunId], doing: str
) -> list[tuple[object, ...]]:
    """`SELECT {select} FROM {table} WHERE run_id IN (...)` for `run_ids`, in bounded parameter lists."""
    rows: list[tuple[object, ...]] = []
    ids = [str(run_id) for run_id in run_ids]
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows += query_on(conn, path, f"SELECT {select} FROM {table} WHERE run_id IN ({marks})", chunk, doing)
    return rows


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
    run_text = str(run_id)
    sql = f"SELECT {_RUN_EVENT_COLUMNS} FROM events WHERE run_id = ? AND sequence >= ? ORDER BY sequence"
    params: list[object] = [run_text, from_sequence]
    if limit is not None:
        sql += " LIMIT ?"
        params.append(limit)
    rows = query_on(conn, path, sql, params, f"reading events of run {run_id}")
    return events_of_rows(path, run_text, rows)


def events_of_rows(path: Path, run_text: str, rows: Sequence[tuple[object, ...]]) -> list[Event]:
    """The events of the stored rows of the run whose id is `run_text` (`_RUN_EVENT_COLUMNS`, in sequence order). A
    row written the way this store writes rows is checked field by field by the rules `Event` applies (each id a
    version-4 UUID of its kind, sequence >= 1, the type's pattern and length, version 1-1000, a UTC time, the
    payload a JSON object within the bounds); any other row is judged by `Event.model_validate` (and refused with
    its message). What the rows repeat (the run and correlation ids, the time of one commit's events, the event
    types, a cause that is the event before) is parsed and checked once."""
    seen: dict[object, object] = {}
    types: set[str] = set()
    run_id = _once(seen, RunId, run_text)
    corr_text: object = None
    corr: object = None
    time_text: object = None
    at: datetime | None = None
    prev_text: object = None
    events: list[Event] = []
    for row in rows:
        event_id, sequence, event_type, version, occurred, causation, corr_t, payload = row
        if corr_t is None:
            correlation_id = None
        else:
            if corr_t != corr_text or corr is None:
                corr, corr_text = _once(seen, CorrelationId, corr_t), corr_t
            correlation_id = corr
        event: Event | None = None
        if (
            type(event_id) is str
            and type(run_id) is RunId
            and type(sequence) is int
            and sequence >= 1
            and type(event_type) is str
            and (event_type in types or _new_event_type(event_type, types))
            and type(version) is int
            and 1 <= version <= 1_000
            and type(occurred) is str
            and (causation is None or type(causation) is str)
            and (correlation_id is None or type(correlation_id) is CorrelationId)
            and type(payload) is str
        ):
            try:
                if occurred != time_text:
                    at = time_text = None
                    if _is_stored_time(occurred) is not None:
                        at = datetime.fromisoformat(occurred).astimezone(UTC)
                        time_text = occurred  # the events of one commit share their time
                if at is not None:
                    if _is_canonical_v4(event_id):
                        typed_id = EventId._of_canonical(event_id)  # pyright: ignore[reportPrivateUsage]
                        canonical = event_id  # the next event's cause, when it names this one
                    else:
                        typed_id = EventId(event_id)
                        canonical = None
                    if causation is None:
                        cause = None
                    elif causation == prev_text or _is_canonical_v4(causation):  # usually the event before's id
                        cause = CausationId._of_canonical(causation)  # pyright: ignore[reportPrivateUsage]
                    else:
                        cause = CausationId(causation)
                    event = trusted_model(
                        Event,
                        {
                            "event_id": typed_id,
                            "run_id": run_id,
                            "sequence": sequence,
                            "event_type": event_type,
                            "schema_version": version,
                            "occurred_at": at,
                            "causation_id": cause,
                            "correlation_id": correlation_id,
                            "payload": _payload_of(payload),
                        },
                    )
                    prev_text = canonical
            except (ValueError, TypeError):
                event = None
        events.append(event if event is not None else _event_of(path, (event_id, run_text, *row[1:]), seen))
    return events


def _new_event_type(event_type: str, checked: set[str]) -> bool:
    """Whether `event_type` has the envelope's length and pattern; noted in `checked` when it does."""
    if 2 <= len(event_type) <= 64 and _is_event_type(event_type) is not None:
        checked.add(event_type)
        return True
    return False


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
_is_stored_time = _STORED_TIME.match
_is_event_type = EVENT_TYPE_RE.match
_is_canonical_v4 = CANONICAL_V4.match
_orjson_loads = orjson.loads


def _payload_of(text: str) -> JsonMapping:
    """A stored payload's JSON text as a frozen object within the bounds, exactly as `json.loads` reads it: orjson
    where its result is exact (it reads integers beyond 64 bits as floats, so a payload holding any float is read
    again by the stdlib), the stdlib for anything orjson refuses. Raises `ValueError` for what is not such an
    object."""
    try:
        parsed = _orjson_loads(text)
    except orjson.JSONDecodeError:
        parsed = None
    if type(parsed) is dict:
        try:
            frozen, floats = frozen_parsed_json(text, parsed)  # pyright: ignore[reportUnknownArgumentType]
        except JsonBoundsError:
            floats = True  # the stdlib's reading decides (and words) it
        else:
            if not floats:
                return frozen
    return frozen_json(cast(dict[str, object], json.loads(text)))


def _event_of(path: Path, row: tuple[object, ...], seen: dict[object, object]) -> Event:
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


def statuses_on(conn: sqlite3.Connection, path: Path, run_ids: Sequence[RunId]) -> Mapping[RunId, RunStatus]:
    """The status of each of `run_ids` that exists (one indexed lookup per id, no projection decoded)."""
    rows = rows_of_runs(conn, path, "run_id, status", "run_projections", run_ids, "reading run statuses")
    return {RunId(str(run_id)): cast(RunStatus, status) for run_id, status in rows}


QUEUE_HEADS = (
    SELECT_RUN + " AS r WHERE r.status = 'queued' AND r.parent_run_id IS NULL AND (r.session_id IS NULL OR ("
    " NOT EXISTS (SELECT 1 FROM run_projections AS o WHERE o.session_id = r.session_id AND +o.status = 'queued'"
    " AND o.parent_run_id IS NULL AND o.rowid < r.rowid)"
    " AND NOT EXISTS (SELECT 1 FROM run_projections AS b WHERE b.session_id = r.session_id AND +b.status = 'running'"
    " AND b.parent_run_id IS NULL))) ORDER BY r.rowid ASC LIMIT ?"
)
"""`fetch_queue_heads`: the oldest queued top-level run of each session whose lane is not busy, and every queued
top-level run without one, oldest first. The `+` keeps the status index out of the two look-ups (without table
statistics SQLite picked it, and each candidate scanned every older queued run and every running one): a session's
own runs, by the session index, are what they look at."""


def queue_heads_on(conn: sqlite3.Connection, path: Path, limit: int) -> Sequence[RunProjection]:
    """The queue's lane heads, oldest first (`ports.RunStorage.fetch_queue_heads`)."""
    return [_run_of(row) for row in query_on(conn, path, QUEUE_HEADS, [limit], "reading the queue's heads")]


def runs_on(
    conn: sqlite3.Connection,
    path: Path,
    session_id: SessionId | None,
    status: RunStatus | None,
    parent_run_id: RunId | None,
    limit: int,
    oldest_first: bool = False,
    answered: bool = False,
) -> Sequence[RunProjection]:
    """Runs, newest first (by creation; `oldest_first` the other way), optionally of one session, one status and/or
    one parent run; `answered`: only those whose pending approval has its answer."""
    where: list[str] = []
    params: list[object] = []
    for column, value in (("session_id", session_id), ("status", status), ("parent_run_id", parent_run_id)):
        if value is not None:
            where.append(f"{column} = ?")
            params.append(str(value))
    if answered:
        where.append("json_extract(data, '$.pending_approval.decision') IS NOT NULL")
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

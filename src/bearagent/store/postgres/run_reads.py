"""Reading runs back out of the PostgreSQL store: events in sequence order, run rows, activities, runs by id prefix.

Each function takes a connection (autocommit: every read is one statement, one snapshot), the store's queries and
the store's display name, which every `StoreError` names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import LiteralString, cast

import psycopg

from bearagent.domain._base import JsonValue
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus
from bearagent.store.errors import StoreError
from bearagent.store.postgres.errors import translate
from bearagent.store.postgres.location import Conn, Queries

_EVENTS = (
    "SELECT event_id, run_id, sequence, event_type, schema_version, occurred_at, causation_id, correlation_id,"
    " payload FROM {s}.events WHERE run_id = %s AND sequence > %s ORDER BY sequence"
)
_RUN = "SELECT data, goal FROM {s}.run_projections"


async def rows_of(
    conn: Conn, statement: bytes, params: Sequence[object], where: str, doing: str
) -> list[tuple[object, ...]]:
    """All rows of one statement; a psycopg error becomes a `StoreError` saying what was being done."""
    try:
        cur = await conn.execute(statement, params)
        return await cur.fetchall()
    except psycopg.Error as exc:
        raise translate(where, exc, doing) from exc


def _run_of(row: tuple[object, ...]) -> RunProjection:
    data = cast(dict[str, JsonValue], row[0])
    data["goal"] = cast(JsonValue, row[1])
    return RunProjection.model_validate(data)


def _event_of(where: str, row: tuple[object, ...]) -> Event:
    try:
        return Event.model_validate(
            {
                "event_id": row[0],
                "run_id": row[1],
                "sequence": row[2],
                "event_type": row[3],
                "schema_version": row[4],
                "occurred_at": cast(datetime, row[5]).astimezone(UTC),
                "causation_id": row[6],
                "correlation_id": row[7],
                "payload": row[8],
            }
        )
    except ValueError as exc:
        raise StoreError(
            where,
            "invalid_event",
            f"stored event {row[2]} of run {row[1]} cannot be read ({str(exc).splitlines()[0]})",
            "The table was changed outside BearAgent; restore it from a backup",
        ) from exc


async def events(
    conn: Conn, q: Queries, where: str, run_id: RunId, after_sequence: int, limit: int | None
) -> Sequence[Event]:
    template: LiteralString = _EVENTS if limit is None else _EVENTS + " LIMIT %s"
    params: list[object] = [str(run_id), after_sequence] if limit is None else [str(run_id), after_sequence, limit]
    rows = await rows_of(conn, q(template), params, where, f"reading events of run {run_id}")
    return [_event_of(where, row) for row in rows]


async def run(conn: Conn, q: Queries, where: str, run_id: RunId) -> RunProjection | None:
    rows = await rows_of(conn, q(_RUN + " WHERE run_id = %s"), (str(run_id),), where, f"reading run {run_id}")
    return _run_of(rows[0]) if rows else None


async def statuses(conn: Conn, q: Queries, where: str, run_ids: Sequence[RunId]) -> Mapping[RunId, RunStatus]:
    """The status of each of `run_ids` that exists (no projection decoded)."""
    rows = await rows_of(
        conn,
        q("SELECT run_id, status FROM {s}.run_projections WHERE run_id = ANY(%s)"),
        ([str(run_id) for run_id in run_ids],),
        where,
        "reading run statuses",
    )
    return {RunId(cast(str, row[0])): cast(RunStatus, row[1]) for row in rows}


_QUEUE_HEADS: LiteralString = (
    "SELECT r.data, r.goal FROM {s}.run_projections AS r"
    " WHERE r.status = 'queued' AND r.parent_run_id IS NULL AND (r.session_id IS NULL OR ("
    " NOT EXISTS (SELECT 1 FROM {s}.run_projections AS o WHERE o.session_id = r.session_id AND o.status = 'queued'"
    " AND o.parent_run_id IS NULL AND o.created_order < r.created_order)"
    " AND NOT EXISTS (SELECT 1 FROM {s}.run_projections AS b WHERE b.session_id = r.session_id"
    " AND b.status = 'running' AND b.parent_run_id IS NULL)))"
    " ORDER BY r.created_order ASC LIMIT %s"
)


async def queue_heads(conn: Conn, q: Queries, where: str, limit: int) -> Sequence[RunProjection]:
    """The queue's lane heads, oldest first (`ports.RunStorage.fetch_queue_heads`)."""
    rows = await rows_of(conn, q(_QUEUE_HEADS), [limit], where, "reading the queue's heads")
    return [_run_of(row) for row in rows]


_ANSWERED: LiteralString = "(data -> 'pending_approval' ->> 'decision') IS NOT NULL"
"""A run whose pending approval has its answer (`fetch_runs(answered=True)`)."""

# every combination of the three filters, as literal SQL (prepared once each)
_FILTERS: dict[tuple[bool, bool, bool], LiteralString] = {
    (False, False, False): "",
    (True, False, False): " WHERE session_id = %s",
    (False, True, False): " WHERE status = %s",
    (False, False, True): " WHERE parent_run_id = %s",
    (True, True, False): " WHERE session_id = %s AND status = %s",
    (True, False, True): " WHERE session_id = %s AND parent_run_id = %s",
    (False, True, True): " WHERE status = %s AND parent_run_id = %s",
    (True, True, True): " WHERE session_id = %s AND status = %s AND parent_run_id = %s",
}


async def runs(
    conn: Conn,
    q: Queries,
    where: str,
    session_id: SessionId | None,
    status: RunStatus | None,
    parent_run_id: RunId | None,
    limit: int,
    oldest_first: bool = False,
    answered: bool = False,
) -> Sequence[RunProjection]:
    """Runs, newest first (by creation; `oldest_first` the other way), optionally of one session, one status and/or
    one parent run; `answered`: only those whose pending approval has its answer."""
    given = [value for value in (session_id, status, parent_run_id) if value is not None]
    template = _FILTERS[(session_id is not None, status is not None, parent_run_id is not None)]
    if answered:
        template += (" AND " if template else " WHERE ") + _ANSWERED
    order = " ORDER BY created_order ASC LIMIT %s" if oldest_first else " ORDER BY created_order DESC LIMIT %s"
    statement = q(_RUN + template + order)
    rows = await rows_of(conn, statement, [*(str(v) for v in given), limit], where, "listing runs")
    return [_run_of(row) for row in rows]


async def activities(conn: Conn, q: Queries, where: str, run_id: RunId) -> Sequence[ActivityProjection]:
    """The ended activities of a run and its active one (kept in the run row), by requested sequence."""
    rows = await rows_of(
        conn,
        q(
            "SELECT requested_sequence, data FROM {s}.activity_projections WHERE run_id = %s"
            " UNION ALL SELECT 0, active_activity FROM {s}.run_projections"
            " WHERE run_id = %s AND active_activity IS NOT NULL"
        ),
        (str(run_id), str(run_id)),
        where,
        f"reading activities of run {run_id}",
    )
    found = [ActivityProjection.model_validate(cast(Mapping[str, JsonValue], row[1])) for row in rows]
    return sorted(found, key=lambda a: a.requested_sequence)


async def find(conn: Conn, q: Queries, where: str, prefix: str, top_level: bool, limit: int) -> Sequence[RunId]:
    """Ids of the runs starting with `prefix`, newest first."""
    if any(ch not in "0123456789abcdef-" for ch in prefix):
        return []  # run ids are lower-case hex and '-': nothing else can match (and LIKE stays literal)
    template: LiteralString = "SELECT run_id FROM {s}.run_projections WHERE run_id LIKE %s"
    if top_level:
        template += " AND parent_run_id IS NULL"
    template += " ORDER BY created_order DESC LIMIT %s"
    rows = await rows_of(conn, q(template), (prefix + "%", limit), where, f"finding runs starting with {prefix!r}")
    return [RunId(cast(str, row[0])) for row in rows]

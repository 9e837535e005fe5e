"""The writer's side of the storage port on PostgreSQL: load a run's state and version, and commit one `RunCommit`.

A commit is one transaction. Its first statement is the version check: a new run is `INSERT ... ON CONFLICT DO
NOTHING`, a known one `UPDATE ... WHERE last_sequence = <the version the writer reduced on>`. Either writes one
row or none, and takes the run row's lock: a second writer of the same run waits for the first to commit, then
finds the version moved and writes nothing (`VersionConflict`); processes on any number of hosts are safe. Then the
events and the ended activities are inserted; `UNIQUE (event_id)`, `UNIQUE (run_id, sequence)` and the activity
primary key back the rules up, their violations map to `EventIdTaken`, `VersionConflict`, `ActivityIdTaken`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import orjson
import psycopg
from psycopg import errors as pg_errors

from bearagent.domain._base import JsonValue
from bearagent.ports import ActivityIdTaken, CommitRefused, EventIdTaken, RunCommit, StoredRun, VersionConflict
from bearagent.runtime.run_state import ActivityState, RunState
from bearagent.store.errors import StoreError
from bearagent.store.postgres.errors import translate
from bearagent.store.postgres.location import Conn, Queries
from bearagent.store.postgres.notify import is_lifecycle, notify_statement
from bearagent.store.run_commit import dumps_json, payload_text

INSERT_RUN = (
    "INSERT INTO {s}.run_projections (run_id, session_id, parent_run_id, status, created_at, last_sequence, data,"
    " active_activity, goal) VALUES (%s, %s, %s, %s, %s, %s, %s::json, %s::json, %s::json)"
)
_INSERT_RUN_IF_NEW = INSERT_RUN + " ON CONFLICT (run_id) DO NOTHING"
_UPDATE_RUN_IF_AT = (
    "UPDATE {s}.run_projections SET last_sequence = %s, status = %s, data = %s::json, active_activity = %s::json"
    " WHERE run_id = %s AND last_sequence = %s"
)
_VERSION_OF = "SELECT last_sequence FROM {s}.run_projections WHERE run_id = %s"
_INSERT_EVENT = (
    "INSERT INTO {s}.events (run_id, sequence, event_id, event_type, schema_version, occurred_at, causation_id,"
    " correlation_id, payload) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s::json)"
)
INSERT_ACTIVITY = (
    "INSERT INTO {s}.activity_projections (run_id, activity_id, requested_sequence, status, data)"
    " VALUES (%s, %s, %s, %s, %s::json)"
)
_ACTIVITY_TAKEN = "SELECT activity_id FROM {s}.activity_projections WHERE run_id = %s AND activity_id = ANY(%s) LIMIT 1"
_EVENT_TAKEN = "SELECT event_id FROM {s}.events WHERE event_id = ANY(%s) LIMIT 1"


class _Moved(Exception):
    """The version check wrote nothing: the run is not at the expected version (rolled back, then looked up)."""


def json_string(text: str) -> str:
    """A string as the text of a `json` column (a `text` column cannot hold "\\u0000")."""
    return orjson.dumps(text).decode()


async def load_run(conn: Conn, q: Queries, where: str, run_id: str) -> StoredRun | None:
    """A run's reducer state and its active activity, as the last commit left them (None: no such run)."""
    try:
        cur = await conn.execute(
            q("SELECT data, goal, active_activity FROM {s}.run_projections WHERE run_id = %s"), (run_id,)
        )
        row = await cur.fetchone()
    except psycopg.Error as exc:
        raise translate(where, exc, f"reading run {run_id}") from exc
    if row is None:
        return None
    data, goal, active_data = cast(tuple[dict[str, JsonValue], str | None, Mapping[str, JsonValue] | None], row)
    data["goal"] = goal
    run = RunState.from_json(data)
    active: ActivityState | None = None
    if run.active_activity_id is not None:
        if active_data is None:
            raise StoreError(
                where,
                "inconsistent",
                f"run {run_id} points at active activity {run.active_activity_id}, which is not stored",
                "Rebuild the projections from the event log",
            )
        active = ActivityState.from_json(active_data)
    return StoredRun(run, active)


async def commit(conn: Conn, q: Queries, where: str, commit: RunCommit) -> None:
    """The commit of the storage port, in one transaction on `conn` (autocommit mode outside it)."""
    run_id = str(commit.run_id)
    state, active = commit.state, commit.active
    data = dumps_json(state.to_json(with_goal=False))
    active_data = None if active is None else dumps_json(active.to_json())
    events = [
        (
            run_id,
            event.sequence,
            str(event.event_id),
            event.event_type,
            event.schema_version,
            event.occurred_at,
            None if event.causation_id is None else str(event.causation_id),
            None if event.correlation_id is None else str(event.correlation_id),
            payload_text(commit, index),
        )
        for index, event in enumerate(commit.events)
    ]
    try:
        async with conn.transaction():
            if commit.expected_version == 0:
                cur = await conn.execute(
                    q(_INSERT_RUN_IF_NEW),
                    (
                        run_id,
                        state.session_id,
                        state.parent_run_id,
                        state.status,
                        state.created_at,
                        state.last_sequence,
                        data,
                        active_data,
                        None if state.goal is None else json_string(state.goal),
                    ),
                )
            else:
                cur = await conn.execute(
                    q(_UPDATE_RUN_IF_AT),
                    (state.last_sequence, state.status, data, active_data, run_id, commit.expected_version),
                )
            if cur.rowcount != 1:
                raise _Moved
            if commit.requested_activity_ids:
                cur = await conn.execute(q(_ACTIVITY_TAKEN), (run_id, list(commit.requested_activity_ids)))
                taken = await cur.fetchone()
                if taken is not None:
                    raise ActivityIdTaken(str(taken[0]))
            async with conn.cursor() as cursor:
                await cursor.executemany(q(_INSERT_EVENT), events)
                # delivered at commit (`notify.py`): to the run's own channel, and to the lifecycle channel when the
                # commit changes what the run is doing; readers elsewhere wake now
                lifecycle = is_lifecycle(state.status, [event.event_type for event in commit.events])
                await cursor.execute(
                    *notify_statement(q.schema, run_id, state.last_sequence, state.status, lifecycle=lifecycle)
                )
                if commit.finished:
                    await cursor.executemany(
                        q(INSERT_ACTIVITY),
                        [
                            (run_id, a.activity_id, a.requested_sequence, a.status, dumps_json(a.to_json()))
                            for a in commit.finished
                        ],
                    )
    except _Moved:
        raise VersionConflict(commit.run_id, await _version(conn, q, where, run_id)) from None
    except CommitRefused:
        raise
    except pg_errors.UniqueViolation as exc:
        raise await _refusal(conn, q, where, commit, exc) from None
    except psycopg.Error as exc:
        raise translate(where, exc, f"appending event {commit.events[0].sequence} of run {run_id}") from exc


async def _version(conn: Conn, q: Queries, where: str, run_id: str) -> int:
    try:
        cur = await conn.execute(q(_VERSION_OF), (run_id,))
        row = await cur.fetchone()
    except psycopg.Error as exc:
        raise translate(where, exc, f"reading run {run_id}") from exc
    return 0 if row is None else int(row[0])


async def _refusal(conn: Conn, q: Queries, where: str, commit: RunCommit, exc: pg_errors.UniqueViolation) -> Exception:
    """What a unique violation of a commit means for the writer (the transaction was rolled back)."""
    constraint = exc.diag.constraint_name or ""
    run_id = str(commit.run_id)
    if constraint == "events_event_id_key":
        try:
            cur = await conn.execute(q(_EVENT_TAKEN), ([str(e.event_id) for e in commit.events],))
            row = await cur.fetchone()
        except psycopg.Error as again:
            return translate(where, again, f"appending to run {run_id}")
        return EventIdTaken(str(row[0]) if row is not None else str(commit.events[0].event_id))
    if constraint == "activity_projections_pkey":
        return ActivityIdTaken(commit.finished[0].activity_id if commit.finished else "?")
    if constraint in ("events_run_sequence_key", "run_projections_pkey"):
        return VersionConflict(commit.run_id, await _version(conn, q, where, run_id))
    return translate(where, exc, f"appending event {commit.events[0].sequence} of run {run_id}")

"""The writer's side of the storage port on SQLite: load a run's state and version, and commit one `RunCommit`.

A commit is one `BEGIN IMMEDIATE` transaction: check the run row is still at the version the writer reduced on,
write the run row (with its active activity), INSERT the events and the ended activities, COMMIT; anything failing
rolls all of it back. The write lock of `BEGIN IMMEDIATE` plus the version check (and `UNIQUE (run_id, sequence)`)
make racing writers, threads or processes, safe: the loser gets `VersionConflict`.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import cast

import orjson

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.events import Event
from bearagent.domain.ids import same_uuid
from bearagent.domain.recent import remember
from bearagent.ports import ActivityIdTaken, CommitRefused, EventIdTaken, RunCommit, StoredRun, VersionConflict
from bearagent.runtime.run_state import ActivityState, RunState, iso
from bearagent.store.errors import StoreError, translate_sqlite_error
from bearagent.store.run_reads import run_json

_INSERT_EVENT = (
    "INSERT INTO events (run_id, sequence, event_id, event_type, schema_version, occurred_at, causation_id,"
    " correlation_id, payload) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
INSERT_RUN = (
    "INSERT INTO run_projections (run_id, session_id, parent_run_id, status, created_at, last_sequence, data,"
    " active_activity, goal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_VERSION_OF = "SELECT last_sequence FROM run_projections WHERE run_id = ?"
_UPDATE_RUN_IF_AT = (
    "UPDATE run_projections SET last_sequence = ?, data = ?, active_activity = ? WHERE run_id = ? AND last_sequence = ?"
)
# the same, and only if the one activity the commit requests is new to the run: one statement for both checks (a
# commit that requests an activity is most commits); when it changes no row, `_refusal` tells which check failed
_UPDATE_RUN_IF_AT_AND_NEW = (
    _UPDATE_RUN_IF_AT + " AND NOT EXISTS (SELECT 1 FROM activity_projections WHERE run_id = ? AND activity_id = ?)"
)
# a separate statement that writes (and touches the status index) only when the status changed
_UPDATE_STATUS = "UPDATE run_projections SET status = ? WHERE run_id = ? AND status != ?"
INSERT_ACTIVITY = (
    "INSERT INTO activity_projections (run_id, activity_id, requested_sequence, status, data) VALUES (?, ?, ?, ?, ?)"
)
_ACTIVITY_EXISTS = "SELECT 1 FROM activity_projections WHERE run_id = ? AND activity_id = ?"

# The status each run had at the version this process last committed. A run's status at a version is a function of
# its events up to that version, so when a commit finds the row at that version (the version check of its UPDATE
# passed) the stored status is known, and the status UPDATE is skipped when it does not change (most commits).
_STATUS_AT: dict[tuple[str, str], tuple[int, str]] = {}
_STATUS_AT_LIMIT = 4096
_STATUS_AT_LOCK = threading.Lock()  # commits of several stores and threads share it


def _thaw(value: object) -> object:
    if type(value) is MappingProxyType:
        return value.copy()  # pyright: ignore[reportUnknownVariableType, reportUnknownMemberType]  # the dict it views
    if isinstance(value, MappingProxyType):
        return dict(cast(Mapping[str, object], value))
    raise TypeError(f"{type(value).__name__} is not JSON")


def dumps_json(value: Mapping[str, JsonValue]) -> str:
    """Compact JSON text of a (possibly frozen) JSON object; orjson, or the stdlib for integers beyond 64 bits."""
    try:
        return orjson.dumps(value, default=_thaw).decode()
    except TypeError:
        return json.dumps(thaw_json_mapping(value), ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def load_on(conn: sqlite3.Connection, path: Path, run_id: str) -> StoredRun | None:
    """A run's reducer state and its active activity, as the last commit left them (None: no such run)."""
    try:
        row = conn.execute(
            "SELECT data, goal, active_activity FROM run_projections WHERE run_id = ?", (run_id,)
        ).fetchone()
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, f"reading run {run_id}") from exc
    if row is None:
        return None
    data, goal, active_data = cast(tuple[str, str | None, str | None], row)
    run = RunState.from_json(run_json(data, goal))
    active: ActivityState | None = None
    if run.active_activity_id is not None:
        if active_data is None:
            raise StoreError(
                path,
                "inconsistent",
                f"run {run_id} points at active activity {run.active_activity_id}, which is not stored",
                "Rebuild the projections from the event log (SqliteEventStore.rebuild_projections)",
            )
        active = ActivityState.from_json(cast(Mapping[str, JsonValue], json.loads(active_data)))
    return StoredRun(run, active)


def payload_text(commit: RunCommit, index: int) -> str:
    """The stored JSON text of the payload of `commit.events[index]`: the writer's, when it encoded it already."""
    texts = commit.payload_texts
    text = texts[index] if texts else None
    return dumps_json(commit.events[index].payload) if text is None else text


def _event_rows(run_id: str, commit: RunCommit) -> list[tuple[object, ...]]:
    rows: list[tuple[object, ...]] = []
    previous: Event | None = None
    previous_text = ""
    for index, event in enumerate(commit.events):
        event_text = str(event.event_id)
        cause = event.causation_id
        if cause is None:
            cause_text = None
        elif previous is not None and same_uuid(cause, previous.event_id):
            cause_text = previous_text  # the usual cause: the event before, whose id is formatted already
        else:
            cause_text = str(cause)
        correlation = event.correlation_id
        rows.append(
            (
                run_id,
                event.sequence,
                event_text,
                event.event_type,
                event.schema_version,
                iso(event.occurred_at),
                cause_text,
                None if correlation is None else str(correlation),
                payload_text(commit, index),
            )
        )
        previous, previous_text = event, event_text
    return rows


def commit_on(cursor: sqlite3.Cursor, path: Path, commit: RunCommit) -> None:
    """The commit of the storage port: one `BEGIN IMMEDIATE` transaction on `cursor`'s connection."""
    run_id = str(commit.run_id)
    state, active = commit.state, commit.active
    rows = _event_rows(run_id, commit)
    data = dumps_json(state.to_json(with_goal=False))
    active_data = None if active is None else dumps_json(active.to_json())
    requested = commit.requested_activity_ids
    status_key = (str(path), run_id)
    try:
        cursor.execute("BEGIN IMMEDIATE")
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "starting an append") from exc
    first = commit.events[0]
    try:
        if commit.expected_version == 0:
            stored = cursor.execute(_VERSION_OF, (run_id,)).fetchone()
            if stored is not None:
                raise VersionConflict(commit.run_id, cast(int, stored[0]))
            cursor.execute(
                INSERT_RUN,
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
            _check_new_activities(cursor, run_id, requested)
        else:
            values = (state.last_sequence, data, active_data, run_id, commit.expected_version)
            if len(requested) == 1:
                cursor.execute(_UPDATE_RUN_IF_AT_AND_NEW, (*values, run_id, requested[0]))
            else:
                cursor.execute(_UPDATE_RUN_IF_AT, values)
            if cursor.rowcount != 1:
                raise _refusal(cursor, commit, run_id)
            if len(requested) > 1:
                _check_new_activities(cursor, run_id, requested)
            if _STATUS_AT.get(status_key) != (commit.expected_version, state.status):
                cursor.execute(_UPDATE_STATUS, (state.status, run_id, state.status))
        cursor.executemany(_INSERT_EVENT, rows)
        for ended in commit.finished:
            cursor.execute(
                INSERT_ACTIVITY,
                (run_id, ended.activity_id, ended.requested_sequence, ended.status, dumps_json(ended.to_json())),
            )
        cursor.execute("COMMIT")
    except BaseException as exc:
        with _STATUS_AT_LOCK:
            _STATUS_AT.pop(status_key, None)
        with contextlib.suppress(sqlite3.Error):
            cursor.execute("ROLLBACK")
        if isinstance(exc, sqlite3.IntegrityError):
            raise _integrity_error(cursor, path, exc, commit) from exc
        if isinstance(exc, sqlite3.Error):
            raise translate_sqlite_error(path, exc, f"appending event {first.sequence} of run {run_id}") from exc
        raise
    _remember_status(status_key, state.last_sequence, state.status)


def _check_new_activities(cursor: sqlite3.Cursor, run_id: str, requested: Sequence[str]) -> None:
    for activity_id in requested:
        if cursor.execute(_ACTIVITY_EXISTS, (run_id, activity_id)).fetchone() is not None:
            raise ActivityIdTaken(activity_id)


def _refusal(cursor: sqlite3.Cursor, commit: RunCommit, run_id: str) -> CommitRefused:
    """Why the conditional UPDATE of the run row changed nothing: the run moved on (checked first, as before the
    two checks were one statement), or the one activity it requests is taken."""
    stored = cursor.execute(_VERSION_OF, (run_id,)).fetchone()
    if stored is None or cast(int, stored[0]) != commit.expected_version:
        return VersionConflict(commit.run_id, 0 if stored is None else cast(int, stored[0]))
    return ActivityIdTaken(commit.requested_activity_ids[0])


def _remember_status(key: tuple[str, str], version: int, status: str) -> None:
    with _STATUS_AT_LOCK:
        remember(_STATUS_AT, key, (version, status), _STATUS_AT_LIMIT)


def _integrity_error(cursor: sqlite3.Cursor, path: Path, exc: sqlite3.IntegrityError, commit: RunCommit) -> Exception:
    """What a constraint failure of a commit means for the writer: a lost race, or an id already taken."""
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
    return translate_sqlite_error(path, exc, f"appending event {commit.events[0].sequence} of run {commit.run_id}")

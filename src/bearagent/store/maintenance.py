"""Maintenance of the SQLite store: replay a run from its events, rebuild every projection, check the file.

The projections are a cache of the log: `rebuild_projections` recomputes them all from the events alone (the fold
of `runtime/replay.py`'s `Replayer`) and replaces the stored ones in one transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import cast

from bearagent.domain.ids import RunId
from bearagent.domain.state import ActivityProjection, RunProjection
from bearagent.runtime.replay import EventRow, Replayer, ReplayError
from bearagent.runtime.run_state import ActivityState, RunState, iso
from bearagent.store.errors import StoreError, translate_sqlite_error
from bearagent.store.run_commit import INSERT_ACTIVITY, INSERT_RUN, dumps_json
from bearagent.store.run_reads import query_on

_REPLAY_COLUMNS = "run_id, sequence, event_type, schema_version, occurred_at, payload"


@dataclass(frozen=True, slots=True)
class RebuildReport:
    runs: int
    activities: int
    events: int


def _replay_error(path: Path, exc: ReplayError) -> StoreError:
    return StoreError(
        path,
        "invalid_log",
        exc.info.message,
        "The log was changed outside BearAgent; restore the file from a backup",
    )


def _run_values(run: RunState, active: ActivityState | None) -> tuple[object, ...]:
    return (
        run.status,
        run.last_sequence,
        dumps_json(run.to_json(with_goal=False)),
        None if active is None else dumps_json(active.to_json()),
    )


def replay_rows(
    path: Path, run_id: RunId, rows: list[tuple[object, ...]]
) -> tuple[RunProjection, list[ActivityProjection]] | None:
    """The projections of one run rebuilt from its event rows (`replay_query`), validating every payload."""
    replayer = Replayer(validate=True)
    try:
        replayer.feed_rows(cast(list[EventRow], rows))
    except ReplayError as exc:
        raise _replay_error(path, exc) from exc
    run = replayer.runs.get(str(run_id))
    if run is None:
        return None
    return run.to_projection(), [a.to_projection() for a in replayer.activities_of(str(run_id))]


def replay_query(conn: sqlite3.Connection, path: Path, run_id: RunId) -> list[tuple[object, ...]]:
    """The event rows of one run, as the replayer reads them."""
    return query_on(
        conn,
        path,
        f"SELECT {_REPLAY_COLUMNS} FROM events WHERE run_id = ? ORDER BY sequence",
        (str(run_id),),
        f"replaying run {run_id}",
    )


def rebuild_projections(conn: sqlite3.Connection, path: Path, *, validate: bool) -> RebuildReport:
    """Recompute every Run/Activity projection from the event log alone and replace the stored ones, in one
    transaction; on any error nothing changes."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            cursor = conn.execute(f"SELECT {_REPLAY_COLUMNS} FROM events ORDER BY seq_no")
            fold = Replayer(validate=validate)
            fold.feed_rows(cast(Iterator[EventRow], cursor))
            conn.execute("DELETE FROM run_projections")
            conn.executemany(
                INSERT_RUN,
                (
                    (
                        r.run_id,
                        r.session_id,
                        r.parent_run_id,
                        r.status,
                        iso(r.created_at),
                        *_run_values(r, fold.active_of(r.run_id))[1:],
                        r.goal,
                    )
                    for r in fold.runs.values()
                ),
            )
            _write_activities(conn, fold.activities)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except ReplayError as exc:
        raise _replay_error(path, exc) from exc
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "rebuilding projections") from exc
    return RebuildReport(runs=len(fold.runs), activities=len(fold.activities), events=fold.events)


def _activity_row(a: ActivityState) -> tuple[object, ...]:
    return (a.run_id, a.activity_id, a.requested_sequence, a.status, dumps_json(a.to_json()))


def _write_activities(conn: sqlite3.Connection, activities: list[ActivityState]) -> None:
    """Make `activity_projections` hold exactly the rows of the ended `activities`: stored rows equal to theirs stay,
    every other stored row is deleted and every missing or different one inserted. A rebuild of a sound store then
    rewrites no activity (most of its rows): the table has no rowid, so its rows are all that it holds.

    The stored rows are read in key order and merged with the activities sorted by key (text keys: SQLite's BINARY
    order of UTF-8 is Python's order of code points); a stored row whose key is not text is stale. Nothing is
    written while the rows are read, and only the keys to delete and the positions to insert are kept."""
    ended = sorted(
        (a for a in activities if a.status not in ("pending", "running")), key=lambda a: (a.run_id, a.activity_id)
    )
    stale: list[tuple[object, object]] = []
    insert: list[int] = []
    i, n = 0, len(ended)
    for run_id, activity_id, requested_sequence, status, data in conn.execute(
        "SELECT run_id, activity_id, requested_sequence, status, data FROM activity_projections"
        " ORDER BY run_id, activity_id"
    ):
        if type(run_id) is not str or type(activity_id) is not str:
            stale.append((run_id, activity_id))
            continue
        key = (run_id, activity_id)
        while i < n and (ended[i].run_id, ended[i].activity_id) < key:
            insert.append(i)  # not stored
            i += 1
        if i < n and (ended[i].run_id, ended[i].activity_id) == key:
            if _activity_row(ended[i])[2:] != (requested_sequence, status, data):
                stale.append(key)
                insert.append(i)
            i += 1
        else:
            stale.append(key)  # stored, and no activity has it
    insert.extend(range(i, n))
    conn.executemany("DELETE FROM activity_projections WHERE run_id = ? AND activity_id = ?", stale)
    conn.executemany(INSERT_ACTIVITY, (_activity_row(ended[k]) for k in insert))


def check_integrity(conn: sqlite3.Connection, path: Path) -> None:
    """SQLite's full integrity check; `StoreError(storage.corrupt)` naming the first problem if any."""
    rows = query_on(conn, path, "PRAGMA integrity_check", (), "checking integrity")
    problems = [cast(str, row[0]) for row in rows if row[0] != "ok"]
    if problems:
        raise StoreError(
            path,
            "corrupt",
            f"the event store file is damaged ({problems[0]})",
            "Move the file aside and restore it from a backup; `sqlite3 FILE .recover` may salvage the events",
        )

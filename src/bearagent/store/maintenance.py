"""Maintenance of the SQLite store: replay a run from its events, rebuild every projection, check the file.

The projections are a cache of the log: `rebuild_projections` recomputes them all from the events alone
(`runtime/replay.py`) and replaces the stored ones in one transaction.
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
    replayer = Replayer(validate=validate)
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            cursor = conn.execute(f"SELECT {_REPLAY_COLUMNS} FROM events ORDER BY seq_no")
            replayer.feed_rows(cast(Iterator[EventRow], cursor))
            conn.execute("DELETE FROM activity_projections")
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
                        *_run_values(r, replayer.active_of(r.run_id))[1:],
                        r.goal,
                    )
                    for r in replayer.runs.values()
                ),
            )
            conn.executemany(
                INSERT_ACTIVITY,
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
        raise _replay_error(path, exc) from exc
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "rebuilding projections") from exc
    return RebuildReport(runs=len(replayer.runs), activities=len(replayer.activities), events=replayer.events)


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

"""Run leases in the SQLite store: the heartbeat of every run a live process executes (`run_leases`), and the
requests to cancel such a run from another process (`run_cancel_requests`).

A heartbeat is written every few seconds per run, so it lives in a small table of its own instead of the run row:
renewing it never rewrites the run's JSON nor moves its version.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path

from bearagent.domain.ids import RunId
from bearagent.runtime.run_state import iso
from bearagent.store.errors import translate_sqlite_error
from bearagent.store.run_reads import rows_of_runs


def renew_on(conn: sqlite3.Connection, path: Path, run_ids: Sequence[RunId], at: datetime) -> None:
    """Set the heartbeat of `run_ids` to `at` (one transaction)."""
    stamp = iso(at.astimezone(UTC))
    try:
        with conn:
            conn.executemany(
                "INSERT INTO run_leases (run_id, heartbeat_at) VALUES (?, ?)"
                " ON CONFLICT (run_id) DO UPDATE SET heartbeat_at = excluded.heartbeat_at",
                [(str(run_id), stamp) for run_id in run_ids],
            )
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "renewing run leases") from exc


def heartbeats_on(conn: sqlite3.Connection, path: Path, run_ids: Sequence[RunId]) -> Mapping[RunId, datetime]:
    """The last heartbeat of each of `run_ids` that has one."""
    rows = rows_of_runs(conn, path, "run_id, heartbeat_at", "run_leases", run_ids, "reading run leases")
    return {RunId(str(run_id)): datetime.fromisoformat(str(at)) for run_id, at in rows}


def request_cancel_on(conn: sqlite3.Connection, path: Path, run_id: RunId, reason: str, at: datetime) -> None:
    """Record a request to cancel `run_id` (the first one stays)."""
    try:
        conn.execute(
            "INSERT INTO run_cancel_requests (run_id, reason, requested_at) VALUES (?, ?, ?)"
            " ON CONFLICT (run_id) DO NOTHING",
            (str(run_id), reason[:500], iso(at.astimezone(UTC))),
        )
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, f"asking to cancel run {run_id}") from exc


def cancel_requests_on(conn: sqlite3.Connection, path: Path, run_ids: Sequence[RunId]) -> Mapping[RunId, str]:
    """The reason of each of `run_ids` someone asked to cancel."""
    rows = rows_of_runs(conn, path, "run_id, reason", "run_cancel_requests", run_ids, "reading cancel requests")
    return {RunId(str(run_id)): str(reason) for run_id, reason in rows}

"""Pruning and pinning on the SQLite store (`domain/retention.py` says which runs may go). A prune is one
`BEGIN IMMEDIATE` transaction: the runs' events, projections, leases, cancel requests, search rows and pins go
together or not at all. The file keeps its size (SQLite reuses the freed pages) until `VACUUM`."""

from __future__ import annotations

import contextlib
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import cast

from bearagent.domain.ids import RunId
from bearagent.domain.retention import PRUNABLE_STATUSES, PruneResult, choose_prunable
from bearagent.runtime.run_state import iso
from bearagent.store.errors import translate_sqlite_error

_STATUSES = ",".join(f"'{status}'" for status in PRUNABLE_STATUSES)
_TREES = (
    "WITH RECURSIVE tree(root, run_id) AS ("
    f" SELECT run_id, run_id FROM run_projections WHERE parent_run_id IS NULL AND status IN ({_STATUSES})"
    " AND created_at < ?"
    " UNION ALL SELECT tree.root, p.run_id FROM run_projections p JOIN tree ON p.parent_run_id = tree.run_id)"
)
_TABLES = (
    "events",
    "activity_projections",
    "run_leases",
    "run_cancel_requests",
    "run_text",
    "run_text_state",
    "run_pins",
)


def prune_on(conn: sqlite3.Connection, path: Path, before: datetime, *, dry_run: bool) -> PruneResult:
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            rows = cast(
                list[tuple[str, str, int, str]],
                conn.execute(
                    f"{_TREES} SELECT tree.root, tree.run_id, (SELECT count(*) FROM run_pins k WHERE"
                    " k.run_id = tree.run_id), p.status FROM tree JOIN run_projections p ON p.run_id = tree.run_id",
                    (iso(before),),
                ).fetchall(),
            )
            choice = choose_prunable((root, run_id, bool(pins), status) for root, run_id, pins, status in rows)
            run_ids = list(choice.run_ids)
            events = bytes_ = 0
            calls: list[str] = []
            for chunk in _chunks(run_ids):
                marks = ",".join("?" * len(chunk))
                count, size = cast(
                    tuple[int, int | None],
                    conn.execute(
                        f"SELECT count(*), sum(length(payload)) FROM events WHERE run_id IN ({marks})", chunk
                    ).fetchone(),
                )
                events += count
                bytes_ += size or 0
                calls.extend(
                    cast(str, row[0])
                    for row in conn.execute(
                        "SELECT json_extract(payload, '$.tool_call_id') FROM events"
                        f" WHERE run_id IN ({marks}) AND event_type = 'ToolCallRequested'",
                        chunk,
                    )
                    if row[0]
                )
                if not dry_run:
                    for table in _TABLES:
                        conn.execute(f"DELETE FROM {table} WHERE run_id IN ({marks})", chunk)
                    conn.execute(f"DELETE FROM run_projections WHERE run_id IN ({marks})", chunk)
            conn.execute("ROLLBACK" if dry_run else "COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "pruning old runs") from exc
    return PruneResult(choice.run_ids, choice.top_level, events, bytes_, tuple(calls), choice.kept_pinned)


def _chunks(items: list[str], size: int = 500) -> list[list[str]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def set_pinned_on(conn: sqlite3.Connection, path: Path, run_id: RunId, pinned: bool, at: datetime) -> bool:
    """Pin or unpin a run; False when it was already so."""
    try:
        if pinned:
            cur = conn.execute(
                "INSERT INTO run_pins (run_id, pinned_at) VALUES (?, ?) ON CONFLICT (run_id) DO NOTHING",
                (str(run_id), iso(at)),
            )
        else:
            cur = conn.execute("DELETE FROM run_pins WHERE run_id = ?", (str(run_id),))
        return cur.rowcount > 0
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, f"pinning run {run_id}") from exc


def pinned_on(conn: sqlite3.Connection, path: Path) -> list[RunId]:
    try:
        rows = conn.execute("SELECT run_id FROM run_pins ORDER BY pinned_at").fetchall()
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "reading pinned runs") from exc
    return [RunId(cast(str, row[0])) for row in rows]


def size_on(path: Path) -> int:
    """The store's bytes on disk: the file and its write-ahead log."""
    total = 0
    for name in (path, path.with_name(path.name + "-wal")):
        with contextlib.suppress(OSError):  # no WAL file: nothing to add
            total += name.stat().st_size
    return total


def vacuum_on(conn: sqlite3.Connection, path: Path) -> None:
    """Give the freed pages back to the file system (rewrites the file; waits for other writers)."""
    try:
        conn.execute("VACUUM")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, "vacuuming the store") from exc

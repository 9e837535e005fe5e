"""Workspace records (seed 002's Workspace, `domain.state.WorkspaceRecord`) in a store: one row per served workspace
key, its content as JSON. Recording is an upsert that keeps `workspace_id` and `created_at` and moves `updated_at`
only when the content changed. The SQL of both backends is here (a few statements each)."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from bearagent.domain.state import WorkspaceRecord
from bearagent.runtime.run_state import iso
from bearagent.store.errors import translate_sqlite_error

if TYPE_CHECKING:
    from bearagent.store.postgres.location import Conn, Queries

_CONTENT_EXCLUDE = {"key", "workspace_id", "created_at", "updated_at"}


def _content(record: WorkspaceRecord) -> str:
    return json.dumps(record.model_dump(mode="json", exclude=_CONTENT_EXCLUDE), sort_keys=True)


def _merged(stored: tuple[object, ...] | None, record: WorkspaceRecord) -> tuple[WorkspaceRecord, bool]:
    """The record to keep and whether it must be written: the stored id and creation time, the new content, and
    `updated_at` moved only when the content changed."""
    if stored is None:
        return record, True
    workspace_id, content, created_at, updated_at = stored
    kept = record.model_copy(
        update={
            "workspace_id": workspace_id,
            "created_at": _time(created_at),
            "updated_at": _time(updated_at),
        }
    )
    if json.loads(cast(str, content)) == json.loads(_content(record)):
        return WorkspaceRecord.model_validate(kept.model_dump()), False
    return WorkspaceRecord.model_validate({**kept.model_dump(), "updated_at": record.updated_at}), True


def _time(value: object) -> datetime:
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(cast(str, value)).astimezone(UTC)


def record_on(conn: sqlite3.Connection, path: Path, record: WorkspaceRecord) -> WorkspaceRecord:
    """SQLite: upsert `record` by its key (in one transaction: two servers may start at once)."""
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            row = conn.execute(
                "SELECT workspace_id, content, created_at, updated_at FROM workspaces WHERE key = ?", (record.key,)
            ).fetchone()
            kept, write = _merged(cast("tuple[object, ...] | None", row), record)
            if write:
                conn.execute(
                    "INSERT INTO workspaces (key, workspace_id, content, created_at, updated_at)"
                    " VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET content = excluded.content,"
                    " updated_at = excluded.updated_at",
                    (
                        kept.key,
                        str(kept.workspace_id),
                        _content(kept),
                        iso(kept.created_at.astimezone(UTC)),
                        iso(kept.updated_at.astimezone(UTC)),
                    ),
                )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    except sqlite3.Error as exc:
        raise translate_sqlite_error(path, exc, f"recording workspace {record.key}") from exc
    return kept


async def record_pg(conn: Conn, q: Queries, record: WorkspaceRecord) -> WorkspaceRecord:
    """PostgreSQL: the same upsert, the row locked while it is decided."""
    async with conn.transaction():
        cur = await conn.execute(
            q(
                "SELECT workspace_id, content::text, created_at, updated_at FROM {s}.workspaces WHERE key = %s FOR UPDATE"
            ),
            (record.key,),
        )
        row = await cur.fetchone()
        kept, write = _merged(cast("tuple[object, ...] | None", row), record)
        if write:
            await conn.execute(
                q(
                    "INSERT INTO {s}.workspaces (key, workspace_id, content, created_at, updated_at)"
                    " VALUES (%s, %s, %s::json, %s, %s) ON CONFLICT (key) DO UPDATE SET content = excluded.content,"
                    " updated_at = excluded.updated_at"
                ),
                (kept.key, str(kept.workspace_id), _content(kept), kept.created_at, kept.updated_at),
            )
    return kept

"""Seed 002's Workspace records of a server: each served workspace is recorded in its store when the server starts
(`store/workspace_rows.py`: the first start makes its `workspace_id` and `created_at`; a later start with another
name, kind, external ref, execution policy or metadata in the server config moves `updated_at`), and
`GET /v1/workspaces` shows the records as kept."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

from bearagent.domain._base import frozen_json
from bearagent.domain.ids import Uuid4IdGenerator, WorkspaceId
from bearagent.domain.state import WorkspaceRecord
from bearagent.server.registry import RunManager, WorkspaceEntry

_log = logging.getLogger("bearagent.server")


def record_of(entry: WorkspaceEntry, now: datetime) -> WorkspaceRecord:
    """What the server config says of `entry`, as a new record made at `now`."""
    return WorkspaceRecord(
        key=entry.id,
        workspace_id=Uuid4IdGenerator().new(WorkspaceId),
        name=entry.name,
        kind="chat" if entry.kind == "chat" else "project",
        external_ref=entry.external_ref,
        execution_policy=entry.execution_policy,
        status="active",
        metadata=frozen_json(dict(entry.metadata)),
        created_at=now,
        updated_at=now,
    )


async def record_served(manager: RunManager) -> dict[str, WorkspaceRecord]:
    """Record every served workspace in its store; the records as kept, by key. A store that cannot be written is a
    warning (its workspace is listed from the server config until a restart records it; `/health` says why)."""
    now = datetime.now(UTC)
    kept: dict[str, WorkspaceRecord] = {}
    for key, entry in manager.workspaces.items():
        try:
            kept[key] = await manager.runtime(key).store.record_workspace(record_of(entry, now))
        except Exception as exc:  # a broken store must not stop the other workspaces from being served
            _log.warning("workspace %s: its record was not written (%s)", key, exc)
    return kept


def workspace_json(entry: WorkspaceEntry, record: WorkspaceRecord | None, *, admin: bool) -> dict[str, object]:
    """`GET /v1/workspaces`'s item: the entry, with the stored record's id and times when there is one."""
    out = entry.to_json(admin=admin)
    if record is not None:
        out.update(
            {
                "workspace_id": str(record.workspace_id),
                "status": record.status,
                "created_at": record.created_at.isoformat(),
                "updated_at": record.updated_at.isoformat(),
            }
        )
    else:
        out["workspace_id"] = None
    return out

"""The JSON records of sessions and runs (seed 002's fields), with what the store keeps no column for derived:

- a run's `trigger_ref` and `metadata` (`model_ref`, `depth`, `prompt_hash`) come from its `RunCreated` (the plan's
  fields, for a run queued unplanned, from its `RunStarted` v3: null until a worker starts it);
- its `initiator_ref` is the subject it belongs to (`Access.initiator`: the one its root run recorded, the caller's
  subject or `local:<uid>` for a run started on the machine; else the root run's session's subject, or the subject
  that started a detached run through this server; null when none is known);
- a session's `last_run_at` is the creation time of its newest top-level run (null before its first run), its
  `status` is `running` (a run of it executes or is queued), `waiting` (its newest run waits for an approval) or
  `active`, and its `auth_context` the caller context it was created with, kept in this server's memory (null
  for a session made elsewhere or before a restart).
"""

from __future__ import annotations

from collections.abc import Mapping

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.state import RunProjection, SessionRecord
from bearagent.server.access import Access
from bearagent.server.registry import WorkspaceEntry
from bearagent.server.shapes import run_json, session_json
from bearagent.service.runner import WorkspaceRuntime

_RECENT_RUNS = 50
"""Runs of a session read to find its newest top-level one (its child runs share its session id)."""


async def run_record(
    access: Access, ws: WorkspaceEntry, runtime: WorkspaceRuntime, run: RunProjection
) -> dict[str, object]:
    first = await runtime.store.fetch_events(run.run_id, 0, limit=2)
    created: Mapping[str, JsonValue] = first[0].payload if first and first[0].event_type == "RunCreated" else {}
    plan: Mapping[str, JsonValue] = created
    if created.get("planned") is False:  # queued unplanned (RunCreated v4): the plan is its RunStarted v3's, if any
        started = first[1].payload.get("plan") if len(first) > 1 and first[1].event_type == "RunStarted" else None
        plan = started if isinstance(started, Mapping) else {}
    trigger_ref = created.get("trigger_ref")
    return run_json(
        ws,
        run,
        {
            "trigger_ref": trigger_ref if isinstance(trigger_ref, str) else None,
            "initiator_ref": await access.initiator(runtime, run),
            "auth_context": thaw_json_mapping(run.request.auth_context)
            if run.request is not None and run.request.auth_context is not None
            else None,
            "metadata": {
                **(thaw_json_mapping(run.request.metadata) if run.request is not None and run.request.metadata else {}),
                "model_ref": plan.get("model_ref"),
                "depth": created.get("depth", 0),
                "prompt_hash": plan.get("prompt_hash"),
            },
        },
    )


async def session_record(
    access: Access, ws: WorkspaceEntry, runtime: WorkspaceRuntime, record: SessionRecord
) -> dict[str, object]:
    runs = await runtime.store.fetch_runs(session_id=record.session_id, limit=_RECENT_RUNS)
    newest = next((r for r in runs if r.parent_run_id is None), None)
    status = "active"
    if access.manager.session_running(record.session_id) or (
        newest is not None and newest.status in ("queued", "running")
    ):
        status = "running"
    elif newest is not None and newest.status == "waiting":
        status = "waiting"
    return session_json(
        ws,
        record,
        status=status,
        last_run_at=newest.created_at if newest is not None else None,
        auth_context=thaw_json_mapping(record.auth_context) if record.auth_context is not None else None,
    )

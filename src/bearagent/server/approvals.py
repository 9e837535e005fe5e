"""Approvals over HTTP: the approvals runs wait for, listed per workspace and per run, and answered once.

An MCP server's question mid-call (MCP elicitation, `service/elicitations.py`) is listed and answered here too, with
`kind: "elicitation"`, its id (`el_...`) as `approval_id`, the server's form as `requested_schema`, and
`decision` accept/decline/cancel with `content` (checked against the form: a field that does not fit is a 422 naming
it); the run stays `running` while its call waits.

A server run that reaches a tool call needing approval (`wait_approvals`, true by default) records
`ApprovalRequested` and waits (status `waiting`, no process holds it). `POST /v1/runs/{id}/approvals/{approval_id}`
records the answer with `resuming.answer_approval` (who answered: the caller's subject) and continues the run in the
background as the subject it belongs to, registered with the RunManager like a started run (cancel, the
per-caller limit and the session's queue see it). A second answer, a late one (the run moved on) or one naming
another approval is a 409 `conflict.*` saying what the run waits for.
"""

from __future__ import annotations

from collections.abc import Sequence

from fastapi import FastAPI

from bearagent.domain._base import JsonValue, thaw_json_mapping
from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId
from bearagent.domain.run_events import APPROVAL_CHOICES
from bearagent.domain.state import RunProjection
from bearagent.server.access import Access, Caller
from bearagent.server.shapes import ApiError, ApprovalAnswer
from bearagent.service.elicitations import answer_elicitation, elicitations_of, pending_elicitations
from bearagent.service.resuming import answer_approval, attached_elsewhere
from bearagent.service.runner import WorkspaceRuntime

REFUSED = frozenset({"no_pending_approval", "wrong_approval", "already_answered", "no_pending_elicitation"})
"""`answer_approval`'s refusals: the answer does not fit the run's state (409)."""
_TAIL = 16
"""Events read from the end of a waiting run's log to find its request (the whole log if it is not there)."""


def approvals_of(run: RunProjection, events: Sequence[Event]) -> list[dict[str, JsonValue]]:
    """Every approval a run asked for, in order, with its answer when it has one. Pure."""
    out: list[dict[str, JsonValue]] = []
    by_id: dict[str, dict[str, JsonValue]] = {}
    for event in events:
        payload = event.payload
        approval_id = str(payload.get("approval_id", ""))
        if event.event_type == "ApprovalRequested":
            record: dict[str, JsonValue] = {
                "run_id": str(run.run_id),
                "session_id": str(run.session_id) if run.session_id is not None else None,
                "approval_id": approval_id,
                "tool_call_id": payload.get("tool_call_id"),
                "tool": payload.get("tool_name"),
                "arguments": payload.get("arguments", {}),
                "reason": payload.get("reason", ""),
                "suggested_rule": payload.get("suggested_rule"),
                "choices": payload.get("choices", ["allow_once", "allow_always", "deny"]),
                "requested_at": event.occurred_at.isoformat(),
                "status": "pending",
                "decision": None,
                "answered_by": None,
                "answered_at": None,
                "message": None,
            }
            by_id[approval_id] = record
            out.append(record)
        elif event.event_type == "ApprovalResolved" and approval_id in by_id:
            by_id[approval_id].update(
                status="answered",
                decision=payload.get("decision"),
                answered_by=payload.get("answered_by"),
                answered_at=event.occurred_at.isoformat(),
                message=payload.get("message"),
            )
    return [thaw_json_mapping(r) for r in out]


async def pending_of(runtime: WorkspaceRuntime, run: RunProjection) -> dict[str, JsonValue] | None:
    """The approval a waiting run waits for (answered or not, until a process continues the run)."""
    pending = run.pending_approval
    if run.status != "waiting" or pending is None:
        return None
    tail = await runtime.store.fetch_events(run.run_id, after_sequence=max(run.last_sequence - _TAIL, 0))
    found = [a for a in approvals_of(run, tail) if a["approval_id"] == pending.approval_id]
    if not found:
        found = [
            a
            for a in approvals_of(run, await runtime.store.fetch_events(run.run_id))
            if a["approval_id"] == pending.approval_id
        ]
    return found[-1] if found else None


async def _answer_question(
    runtime: WorkspaceRuntime, run_id: RunId, elicitation_id: str, body: ApprovalAnswer, subject: str
) -> dict[str, object]:
    """Answer an MCP server's question a running run's call waits on (`service/elicitations.py`)."""
    if body.decision not in ("accept", "decline", "cancel"):
        raise ApiError(
            422,
            "validation",
            "validation.decision",
            f"{elicitation_id} is an MCP server's question: decision is accept, decline or cancel",
        )
    try:
        await answer_elicitation(
            runtime, run_id, elicitation_id, body.decision, body.content, answered_by=subject, message=body.message
        )
    except BearAgentError as exc:
        reason = exc.info.code.rsplit(".", 1)[-1]
        if reason in REFUSED:
            raise ApiError(409, "conflict", f"conflict.{reason}", exc.info.message) from None
        raise
    return {
        "run_id": str(run_id),
        "approval_id": elicitation_id,
        "decision": body.decision,
        "answered_by": subject,
        "continuing": True,
        "status": "running",
    }


def register(app: FastAPI, access: Access) -> None:
    manager = access.manager

    @app.get("/v1/workspaces/{ws_id}/approvals")
    async def list_approvals(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        """The approvals the caller's runs of the workspace wait for, oldest first."""
        access.need(who, "runs:read")
        ws = access.workspace(who, ws_id)
        runtime = access.runtime_for(who, ws)
        found: list[dict[str, JsonValue]] = []
        for run in reversed(await runtime.store.fetch_runs(status="waiting", limit=1_000)):
            if not await access.may_see(who, runtime, run):
                continue
            pending = await pending_of(runtime, run)
            if pending is not None:
                found.append(pending)
        for run in reversed(await runtime.store.fetch_runs(status="running", limit=1_000)):
            if await access.may_see(who, runtime, run):  # MCP servers' questions its calls wait on
                found.extend(pending_elicitations(run, await runtime.store.fetch_events(run.run_id)))
        found.sort(key=lambda a: str(a["requested_at"]))
        return {"approvals": found}

    @app.get("/v1/runs/{run_id}/approvals")
    async def run_approvals(run_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        """Every approval the run asked for, with its answer."""
        access.need(who, "runs:read")
        _, runtime, run = await access.find_run(who, run_id)
        events = await runtime.store.fetch_events(run.run_id)
        both = [*approvals_of(run, events), *elicitations_of(run, events)]
        return {"approvals": sorted(both, key=lambda a: str(a["requested_at"]))}

    @app.post("/v1/runs/{run_id}/approvals/{approval_id}", status_code=202)
    async def answer(run_id: str, approval_id: str, body: ApprovalAnswer, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        """Answer the approval the run waits for, once; the run continues in the background."""
        access.need(who, "approvals:write")
        ws, runtime, run = await access.find_run(who, run_id)
        owner = await access.initiator(runtime, run) or who.subject_ref
        if approval_id.startswith("el_"):
            return await _answer_question(runtime, run.run_id, approval_id[:64], body, who.subject_ref)
        if body.decision not in APPROVAL_CHOICES or body.content is not None:
            raise ApiError(
                422,
                "validation",
                "validation.decision",
                f"approval {approval_id[:64]} is a tool approval: decision is one of {', '.join(APPROVAL_CHOICES)}, "
                "without content (accept/decline/cancel answer an MCP server's question, an el_ id)",
            )
        try:
            after = await answer_approval(
                runtime,
                run.run_id,
                approval_id[:64],
                body.decision,
                answered_by=who.subject_ref,
                message=body.message,
            )
        except BearAgentError as exc:
            reason = exc.info.code.rsplit(".", 1)[-1]
            if reason in REFUSED:
                raise ApiError(409, "conflict", f"conflict.{reason}", exc.info.message) from None
            raise
        continuing = not attached_elsewhere(after)
        if continuing:
            manager.resume(ws.id, owner, after)
        return {
            "run_id": str(run.run_id),
            "approval_id": approval_id,
            "decision": body.decision,
            "answered_by": who.subject_ref,
            "continuing": continuing,
            "status": "running" if continuing else after.status,
        }

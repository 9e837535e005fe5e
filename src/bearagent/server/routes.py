"""The resource routes: workspaces, sessions and their messages, runs and their steps, cancellation, actions and
the read-only listings. Access rules: `access.py`; record fields: `records.py`; events and the feed: `streams.py`;
approvals: `approvals.py`."""

from __future__ import annotations

import asyncio
from dataclasses import replace

from fastapi import FastAPI

from bearagent.domain._base import thaw_json_mapping
from bearagent.domain.errors import BearAgentError
from bearagent.runtime.message_records import session_message_records, timeline_message_records
from bearagent.runtime.step_records import run_step_records
from bearagent.server.access import Access, Caller
from bearagent.server.auth import CallerContext
from bearagent.server.records import run_record, session_record
from bearagent.server.shapes import ActionRunCreate, ApiError, RunAccepted, RunCreate, SessionCreate, not_found
from bearagent.server.workspace_records import workspace_json
from bearagent.service.runner import RunOptions

CANCEL_WAIT_S = 5.0


def register(app: FastAPI, access: Access, *, max_active_runs_per_caller: int) -> None:
    manager = access.manager
    need = access.need

    async def room_for_a_run(who: CallerContext) -> None:
        if not await manager.has_room(who.subject_ref, max_active_runs_per_caller):
            raise ApiError(
                429,
                "rate_limit",
                "rate_limit.active_runs",
                f"you have {max_active_runs_per_caller} runs queued or executing already"
                " (limits.max_active_runs_per_caller)",
                retryable=True,
            )

    @app.get("/health")
    async def health() -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        """No auth: per workspace its store's backend, schema version and queued/running counts (server/health.py)."""
        from bearagent.server.health import health_report

        return await health_report(manager)

    @app.get("/v1/workspaces")
    async def list_workspaces(who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:read")
        records = manager.workspace_records
        admin = who.has("admin")
        return {"workspaces": [workspace_json(w, records.get(w.id), admin=admin) for w in access.visible(who)]}

    # ---- sessions ----

    @app.post("/v1/workspaces/{ws_id}/sessions", status_code=201)
    async def create_session(ws_id: str, body: SessionCreate, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:write")
        ws = access.workspace(who, ws_id)
        runtime = access.runtime_for(who, ws)
        record = await runtime.create_session(
            body.agent, caller=who.subject_ref, title=body.title, auth_context=who.snapshot()
        )
        return await session_record(access, ws, runtime, record)

    @app.get("/v1/workspaces/{ws_id}/sessions")
    async def list_sessions(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:read")
        ws = access.workspace(who, ws_id)
        runtime = access.runtime_for(who, ws)
        records = await runtime.store.fetch_sessions(caller=None if who.has("admin") else who.subject_ref, limit=200)
        return {"sessions": [await session_record(access, ws, runtime, r) for r in records]}

    @app.get("/v1/sessions/{session_id}")
    async def get_session(session_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:read")
        ws, runtime, record = await access.find_session(who, session_id)
        return await session_record(access, ws, runtime, record)

    @app.get("/v1/sessions/{session_id}/messages")
    async def session_messages(  # pyright: ignore[reportUnusedFunction]
        session_id: str, who: Caller, include_rewound: bool = False
    ) -> dict[str, object]:
        """The session's conversation as message records, oldest first: what its next run is given (its rewinds
        applied, a fork's origin first; `session_history.py`), or with `include_rewound` every run's messages."""
        need(who, "runs:read")
        _, runtime, record = await access.find_session(who, session_id)
        if not include_rewound:
            timeline = await asyncio.to_thread(runtime.sessions.timeline, record.session_id)
            return {
                "messages": [m.to_json() for m in timeline_message_records(str(record.session_id), timeline.messages)]
            }
        runs = [
            r
            for r in await runtime.store.fetch_runs(session_id=record.session_id, limit=100_000)
            if r.parent_run_id is None
        ]
        logs = [(str(r.run_id), await runtime.store.fetch_events(r.run_id)) for r in reversed(runs)]
        return {"messages": [m.to_json() for m in session_message_records(str(record.session_id), logs)]}

    # ---- runs ----

    @app.post("/v1/sessions/{session_id}/runs", status_code=202)
    async def create_run(session_id: str, body: RunCreate, who: Caller) -> RunAccepted:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:write")
        ws, _, record = await access.find_session(who, session_id)
        await room_for_a_run(who)
        # a chat workspace's session may pick an agent as the CLI's `-a` does: its prompt and model apply, its tools
        # never run (execution_policy none: docs/config.md#execution_policy)
        above = access.runtime_for(who, ws).loaded.config.budgets.above(body.budgets)
        if above:  # a caller lowers the budgets of the server's config, never raises them
            raise ApiError(
                403,
                "permission",
                "budget_above_ceiling",
                f"budgets above this server's ceiling: {', '.join(above)}; ask for at most the ceiling "
                "(the server operator's config sets it)",
            )
        options = RunOptions(
            agent=body.agent,
            model=body.model,
            session=str(record.session_id),
            budgets=dict(body.budgets),
            wait_approvals=body.wait_approvals,
            initiator_ref=who.subject_ref,
            auth_context=who.snapshot(),
            metadata=body.metadata,
        )
        prompt, attached, notes = body.prompt, list[str](), list[str]()
        if body.mentions:  # `@path`: the CLI's rule (service/mentions.py); a refusal is a 400 before anything runs
            from bearagent.service.mentions import request_mentions

            mentioned = request_mentions(access.runtime_for(who, ws).loaded, body.prompt)
            prompt, attached, notes = mentioned.prompt, list(mentioned.attached), list(mentioned.notes)
        run = await manager.start(ws.id, who.subject_ref, prompt, options, strategy=body.strategy)
        return RunAccepted(run_id=str(run.run_id), status=run.status, attached=attached, notes=notes)

    @app.get("/v1/runs/{run_id}")
    async def get_run(run_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:read")
        ws, runtime, run = await access.find_run(who, run_id)
        return await run_record(access, ws, runtime, run)

    @app.get("/v1/runs/{run_id}/steps")
    async def run_steps(run_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        """The run's RunSteps: model calls, tool calls, delegations and agent switches, from its log."""
        need(who, "runs:read")
        _, runtime, run = await access.find_run(who, run_id)
        events = await runtime.store.fetch_events(run.run_id)
        steps = run_step_records(str(run.run_id), events, status=run.status)
        return {"run_id": str(run.run_id), "status": run.status, "steps": [s.to_json() for s in steps]}

    @app.post("/v1/runs/{run_id}/cancel", status_code=202)
    async def cancel_run(run_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        """Cancel a run: the one this server executes is stopped (its log ends with `RunCancelled`); one nobody
        executes (waiting for an approval, interrupted) gets its `RunCancelled` at once."""
        need(who, "runs:write")
        _, runtime, run = await access.find_run(who, run_id)
        reason = f"cancelled over the HTTP API by {who.subject_ref}"
        cancelling = await manager.stop(runtime, run.run_id, reason, wait_s=CANCEL_WAIT_S)
        now = await runtime.store.fetch_run(run.run_id) or run
        return {"run_id": str(run.run_id), "cancelling": cancelling, "status": now.status}

    # ---- actions and listings ----

    @app.get("/v1/workspaces/{ws_id}/actions")
    async def list_actions(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        runtime = access.readable(who, ws_id)
        return {
            "actions": [
                {"name": a.name, "description": a.description, "agent": a.agent, "inputs": thaw_json_mapping(a.inputs)}
                for a in runtime.loaded.actions.all()
            ]
        }

    @app.post("/v1/workspaces/{ws_id}/actions/{name}/runs", status_code=202)
    async def run_action(ws_id: str, name: str, body: ActionRunCreate, who: Caller) -> RunAccepted:  # pyright: ignore[reportUnusedFunction]
        need(who, "actions:run")
        ws = access.workspace(who, ws_id)
        await room_for_a_run(who)
        runtime = access.runtime_for(who, ws)
        try:  # the same rule as `bearagent action run`: a command's rendering, model and allowed-tools
            prompt, options = runtime.action_request(name, body.inputs, trigger_type="api_action")
        except BearAgentError as exc:
            if exc.info.code == "not_found.action":
                raise not_found("action", name) from None
            raise
        options = replace(
            options, wait_approvals=body.wait_approvals, initiator_ref=who.subject_ref, auth_context=who.snapshot()
        )
        run = await manager.start(ws.id, who.subject_ref, prompt, options)
        return RunAccepted(run_id=str(run.run_id), status=run.status)

    @app.get("/v1/workspaces/{ws_id}/agents")
    async def list_agents(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        runtime = access.readable(who, ws_id)
        return {
            "agents": [
                {"name": a.name, "description": a.description, "mode": a.mode, "level": a.level}
                for a in runtime.loaded.agents.all()
            ]
        }

    @app.get("/v1/workspaces/{ws_id}/skills")
    async def list_skills(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        runtime = access.readable(who, ws_id)
        return {"skills": [{"name": s.name, "description": s.description} for s in runtime.loaded.skills.all()]}

    @app.get("/v1/workspaces/{ws_id}/tools")
    async def list_tools(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        runtime = access.readable(who, ws_id)
        return {
            "tools": [
                {"name": e.name, "description": e.tool.spec.description, "side_effect": e.tool.spec.side_effect}
                for e in runtime.loaded.tools.entries()
            ]
        }

"""`bearagent serve`: the HTTP API of SPEC §16 as a FastAPI app (OpenAPI 3.1 at `/openapi.json`, docs at `/docs`).

FastAPI over plain Starlette because the request and response models are the documentation: the OpenAPI schema
clients and schemathesis read is generated from the same types the handlers use. Every route under `/v1` needs a
bearer token (`auth.py`); a workspace, session or run the caller may not see is a 404 (never a 403, which would
confirm it exists), a missing scope a 403. Errors are `{"error": {category, code, message, retryable}}`, never a
traceback. The error shape, the bodies and the JSON of sessions, runs and events are `shapes.py`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, cast

from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from bearagent.domain._base import thaw_json_mapping
from bearagent.domain.errors import BearAgentError
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.state import RunProjection, SessionRecord
from bearagent.domain.stream import encode_stream_event
from bearagent.runner import RunOptions, WorkspaceRuntime
from bearagent.runtime.streaming import follow_run
from bearagent.server.auth import Authenticator, AuthError, CallerContext
from bearagent.server.registry import RunManager, WorkspaceEntry
from bearagent.server.shapes import (
    SKIP_ALL,
    STATUS_OF,
    ActionRunCreate,
    ApiError,
    RunAccepted,
    RunCreate,
    SessionCreate,
    error_response,
    event_json,
    not_found,
    resume_point,
    run_json,
    session_json,
)

_log = logging.getLogger("bearagent.server")
SSE_KEEPALIVE_S = 15.0


# ---- who is calling -------------------------------------------------------------------------------------------


def _caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> CallerContext:
    authenticator = cast(Authenticator, request.app.state.auth)
    try:
        return authenticator.authenticate(authorization)
    except AuthError as exc:
        raise ApiError(401, "authentication", "authentication.token", str(exc)) from None


Caller = Annotated[CallerContext, Depends(_caller)]


# ---- the app --------------------------------------------------------------------------------------------------


def create_app(
    manager: RunManager,
    auth: Authenticator,
    *,
    max_body_bytes: int = 1_048_576,
    max_active_runs_per_caller: int = 8,
    resume_on_start: bool = False,
) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncGenerator[None]:
        if resume_on_start:  # runs interrupted by a crash (and answered waiting ones) continue here
            resumed = await manager.resume_interrupted()
            if resumed:
                _log.warning("resumed %d interrupted run(s): %s", len(resumed), ", ".join(str(r)[:8] for r in resumed))
        yield
        await manager.aclose()

    app = FastAPI(title="BearAgent", version="1", lifespan=lifespan)
    app.state.auth = auth

    @app.exception_handler(ApiError)
    async def _api_error(_r: Request, exc: ApiError) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        return error_response(exc.status, exc.category, exc.code, exc.message, exc.retryable)

    @app.exception_handler(BearAgentError)
    async def _bear_error(_r: Request, exc: BearAgentError) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        info = exc.info
        message = info.message + (f" (fix: {exc.hint})" if exc.hint else "")
        return error_response(STATUS_OF.get(info.category, 500), info.category, info.code, message, info.retryable)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_r: Request, exc: RequestValidationError) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return error_response(422, "validation", "validation.request", f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_r: Request, exc: StarletteHTTPException) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        return error_response(exc.status_code, "invalid_request", f"http.{exc.status_code}", str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_r: Request, exc: Exception) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        return error_response(
            500, "internal", "internal.unexpected", f"internal error ({type(exc).__name__}); see the server log"
        )

    @app.middleware("http")
    async def _limit_body(request: Request, call_next: Any) -> Response:  # pyright: ignore[reportUnusedFunction]
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > max_body_bytes:
            return error_response(
                413, "invalid_request", "request_too_large", f"the body is over {max_body_bytes} bytes"
            )
        return cast(Response, await call_next(request))

    def need(who: CallerContext, scope: str) -> None:
        if not who.has(scope):
            raise ApiError(403, "permission", "permission.scope", f"this route needs the {scope!r} scope")

    def room_for_a_run(who: CallerContext) -> None:
        if manager.active_count(who.subject_ref) >= max_active_runs_per_caller:
            raise ApiError(
                429,
                "rate_limit",
                "rate_limit.active_runs",
                f"you have {max_active_runs_per_caller} runs executing already (limits.max_active_runs_per_caller)",
                retryable=True,
            )

    def workspace(who: CallerContext, ws_id: str) -> WorkspaceEntry:
        entry = manager.workspaces.get(ws_id)
        if entry is None or not who.may_see(ws_id):
            raise not_found("workspace", ws_id)
        return entry

    def visible(who: CallerContext) -> list[WorkspaceEntry]:
        return [w for w in manager.workspaces.values() if who.may_see(w.id)]

    def runtime_for(who: CallerContext, ws: WorkspaceEntry) -> WorkspaceRuntime:
        return manager.runtime(ws.id, who.subject_ref)

    def readable(who: CallerContext, ws_id: str) -> WorkspaceRuntime:
        """The caller's runtime of a workspace it may read (a listing route)."""
        need(who, "runs:read")
        return runtime_for(who, workspace(who, ws_id))

    async def find_session(who: CallerContext, ref: str) -> tuple[WorkspaceEntry, WorkspaceRuntime, SessionRecord]:
        try:
            session_id = SessionId(ref)
        except (TypeError, ValueError):
            raise not_found("session", ref) from None
        for ws in visible(who):
            runtime = runtime_for(who, ws)
            record = await runtime.store.fetch_session(session_id)
            if record is not None and (record.caller == who.subject_ref or who.has("admin")):
                return ws, runtime, record
        raise not_found("session", ref)

    async def find_run(who: CallerContext, ref: str) -> tuple[WorkspaceEntry, WorkspaceRuntime, RunProjection]:
        try:
            run_id = RunId(ref)
        except (TypeError, ValueError):
            raise not_found("run", ref) from None
        for ws in visible(who):
            runtime = runtime_for(who, ws)
            run = await runtime.store.fetch_run(run_id)
            if run is None:
                continue
            if who.has("admin") or await _owns(runtime, run, who):
                return ws, runtime, run
        raise not_found("run", ref)

    async def _owns(runtime: WorkspaceRuntime, run: RunProjection, who: CallerContext) -> bool:
        root = run
        while root.parent_run_id is not None:
            parent = await runtime.store.fetch_run(root.parent_run_id)
            if parent is None:
                break
            root = parent
        if root.session_id is not None:
            session = await runtime.store.fetch_session(root.session_id)
            return session is not None and session.caller == who.subject_ref
        return manager.owner_of(root.run_id) == who.subject_ref

    # ---- routes ----

    @app.get("/health")
    async def health() -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        return {"status": "ok", "workspaces": len(manager.workspaces)}

    @app.get("/v1/workspaces")
    async def list_workspaces(who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:read")
        return {"workspaces": [w.to_json(admin=who.has("admin")) for w in visible(who)]}

    @app.post("/v1/workspaces/{ws_id}/sessions", status_code=201)
    async def create_session(ws_id: str, body: SessionCreate, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:write")
        ws = workspace(who, ws_id)
        runtime = runtime_for(who, ws)
        runtime.check_guards()
        runtime.check_trust()
        agent = body.agent or runtime.loaded.config.default_agent
        runtime.loaded.agents.require(agent)
        now = runtime.clock.now()
        record = await runtime.store.insert_session(
            SessionRecord(
                session_id=runtime.ids.new(SessionId),
                created_at=now,
                updated_at=now,
                agent_name=agent,
                active_agent_name=agent,
                title=body.title,
                caller=who.subject_ref,
            )
        )
        return session_json(ws, record)

    @app.get("/v1/workspaces/{ws_id}/sessions")
    async def list_sessions(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:read")
        ws = workspace(who, ws_id)
        runtime = runtime_for(who, ws)
        records = await runtime.store.fetch_sessions(caller=None if who.has("admin") else who.subject_ref, limit=200)
        return {"sessions": [session_json(ws, r) for r in records]}

    @app.get("/v1/sessions/{session_id}")
    async def get_session(session_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:read")
        ws, _, record = await find_session(who, session_id)
        return session_json(ws, record)

    @app.post("/v1/sessions/{session_id}/runs", status_code=202)
    async def create_run(session_id: str, body: RunCreate, who: Caller) -> RunAccepted:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:write")
        ws, _, record = await find_session(who, session_id)
        room_for_a_run(who)
        if ws.kind == "chat" and body.agent is not None:
            raise ApiError(400, "invalid_request", "chat_agent", "a chat workspace serves prompts only")
        options = RunOptions(
            agent=body.agent, model=body.model, session=str(record.session_id), budgets=dict(body.budgets)
        )
        run_id = await manager.start(ws.id, who.subject_ref, body.prompt, options, strategy=body.strategy)
        return RunAccepted(run_id=str(run_id), status="running")

    @app.get("/v1/runs/{run_id}")
    async def get_run(run_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:read")
        ws, _, run = await find_run(who, run_id)
        return run_json(ws, run)

    @app.post("/v1/runs/{run_id}/cancel", status_code=202)
    async def cancel_run(run_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:write")
        _, _, run = await find_run(who, run_id)
        cancelled = manager.cancel(run.run_id)
        return {"run_id": str(run.run_id), "cancelling": cancelled, "status": run.status}

    @app.get("/v1/runs/{run_id}/events", response_model=None)
    async def run_events(  # pyright: ignore[reportUnusedFunction]
        run_id: str,
        who: Caller,
        request: Request,
        after: int = 0,
        last_event_id: Annotated[str | None, Header()] = None,
    ) -> Response | dict[str, object]:
        need(who, "runs:read")
        _, runtime, run = await find_run(who, run_id)
        accept = request.headers.get("accept", "")
        if "text/event-stream" not in accept:
            events = await runtime.store.fetch_events(run.run_id, after, limit=1000)
            return {"events": [event_json(e) for e in events], "next": events[-1].sequence if events else after}
        resume = last_event_id or (f"{after}-{SKIP_ALL}" if after > 0 else "")
        return StreamingResponse(
            _sse(runtime, run.run_id, resume, request),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache", "x-accel-buffering": "no"},
        )

    async def _sse(runtime: WorkspaceRuntime, run_id: RunId, resume: str, request: Request) -> AsyncIterator[bytes]:
        """The run's stream-protocol events (SPEC §14), caught up from the log and then live (tokens included) until
        the terminal event. Each committed event's `id:` is `<log sequence>-<n>` (one log event can make several
        stream events); a client that reconnects with that `Last-Event-ID` gets every later event exactly once.
        Tokens are live only and carry no id."""
        seq, skip = resume_point(resume)
        events = follow_run(runtime.store, runtime.writer, run_id, after_seq=max(seq - 1, 0)).__aiter__()
        current, index = 0, 0
        while True:
            try:
                event = await asyncio.wait_for(events.__anext__(), SSE_KEEPALIVE_S)
            except StopAsyncIteration:
                return
            except TimeoutError:
                if await request.is_disconnected():
                    return
                yield b": keep-alive\n\n"
                continue
            kind = str(getattr(event, "type", "message"))
            data = encode_stream_event(event)
            if kind == "token" or event.seq is None:
                yield f"event: {kind}\ndata: {data}\n\n".encode()
                continue
            index = index + 1 if event.seq == current else 1
            current = event.seq
            if current == seq and index <= skip:
                continue  # delivered before the reconnect
            yield f"id: {current}-{index}\nevent: {kind}\ndata: {data}\n\n".encode()

    @app.get("/v1/workspaces/{ws_id}/actions")
    async def list_actions(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        runtime = readable(who, ws_id)
        return {
            "actions": [
                {"name": a.name, "description": a.description, "agent": a.agent, "inputs": thaw_json_mapping(a.inputs)}
                for a in runtime.loaded.actions.all()
            ]
        }

    @app.post("/v1/workspaces/{ws_id}/actions/{name}/runs", status_code=202)
    async def run_action(ws_id: str, name: str, body: ActionRunCreate, who: Caller) -> RunAccepted:  # pyright: ignore[reportUnusedFunction]
        need(who, "actions:run")
        ws = workspace(who, ws_id)
        room_for_a_run(who)
        runtime = runtime_for(who, ws)
        action = runtime.loaded.actions.get(name)
        if action is None:
            raise not_found("action", name)
        from bearagent.registries.actions import render_action

        prompt = render_action(action, body.inputs)
        options = RunOptions(
            agent=action.agent or runtime.loaded.config.default_agent,
            model=action.model,
            trigger_type="api_action",
            trigger_ref=name,
        )
        run_id = await manager.start(ws.id, who.subject_ref, prompt, options)
        return RunAccepted(run_id=str(run_id), status="running")

    @app.get("/v1/workspaces/{ws_id}/agents")
    async def list_agents(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        runtime = readable(who, ws_id)
        return {
            "agents": [
                {"name": a.name, "description": a.description, "mode": a.mode, "level": a.level}
                for a in runtime.loaded.agents.all()
            ]
        }

    @app.get("/v1/workspaces/{ws_id}/skills")
    async def list_skills(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        runtime = readable(who, ws_id)
        return {"skills": [{"name": s.name, "description": s.description} for s in runtime.loaded.skills.all()]}

    @app.get("/v1/workspaces/{ws_id}/tools")
    async def list_tools(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        runtime = readable(who, ws_id)
        return {
            "tools": [
                {"name": e.name, "description": e.tool.spec.description, "side_effect": e.tool.spec.side_effect}
                for e in runtime.loaded.tools.entries()
            ]
        }

    return app

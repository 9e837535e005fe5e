"""`bearagent serve`: the HTTP API of SPEC §16 as a FastAPI app (OpenAPI 3.1 at `/openapi.json`, docs at `/docs`).

FastAPI over plain Starlette because the request and response models are the documentation: the OpenAPI schema
clients and schemathesis read is generated from the same types the handlers use. Every route under `/v1` needs a
bearer token (`auth.py`); a workspace, session or run the caller may not see is a 404 (never a 403, which would
confirm it exists), a missing scope a 403. Errors are `{"error": {category, code, message, retryable}}`, never a
traceback.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal, cast

from fastapi import Depends, FastAPI, Header, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException

from bearagent.domain._base import thaw_json_mapping
from bearagent.domain.errors import BearAgentError
from bearagent.domain.events import Event
from bearagent.domain.ids import RunId, SessionId
from bearagent.domain.state import RunProjection, SessionRecord
from bearagent.domain.stream import encode_stream_event
from bearagent.runner import RunOptions, WorkspaceRuntime
from bearagent.runtime.streaming import follow_run
from bearagent.server.auth import Authenticator, AuthError, CallerContext
from bearagent.server.registry import RunManager, WorkspaceEntry

SSE_KEEPALIVE_S = 15.0
SKIP_ALL = 1_000_000


def _resume_point(last_event_id: str) -> tuple[int, int]:
    """`(log sequence, stream events of it already delivered)` from an SSE id `<seq>-<n>` (or a bare `<seq>`: all
    of it delivered); `(0, 0)` means from the start."""
    head, _, tail = last_event_id.strip().partition("-")
    if not head.isdigit():
        return 0, 0
    return int(head), int(tail) if tail.isdigit() else SKIP_ALL


_STATUS_OF: Mapping[str, int] = {
    "invalid_request": 400,
    "validation": 422,
    "not_found": 404,
    "permission": 403,
    "configuration": 409,
    "budget": 409,
}


class ApiError(Exception):
    def __init__(self, status: int, category: str, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.status, self.category, self.code, self.message, self.retryable = status, category, code, message, retryable


def _error(status: int, category: str, code: str, message: str, retryable: bool = False) -> JSONResponse:
    body = {"error": {"category": category, "code": code, "message": message, "retryable": retryable}}
    return JSONResponse(body, status_code=status)


def _not_found(what: str, ref: str) -> ApiError:
    return ApiError(404, "not_found", f"not_found.{what}", f"there is no {what} {ref[:80]!r} you can see")


# ---- request and response bodies -------------------------------------------------------------------------------


class SessionCreate(BaseModel):
    agent: str | None = Field(default=None, max_length=64)
    title: str | None = Field(default=None, max_length=512)


class RunCreate(BaseModel):
    prompt: str = Field(min_length=1, max_length=1_048_576)
    agent: str | None = Field(default=None, max_length=64)
    model: str | None = Field(default=None, max_length=256)
    budgets: dict[str, int] = Field(default_factory=dict[str, int])
    strategy: Literal["enqueue", "reject", "interrupt"] = "enqueue"


class ActionRunCreate(BaseModel):
    inputs: dict[str, Any] = Field(default_factory=dict[str, Any])


class RunAccepted(BaseModel):
    run_id: str
    status: str


def _session_json(ws: WorkspaceEntry, record: SessionRecord) -> dict[str, object]:
    return {
        "id": str(record.session_id),
        "workspace_id": ws.id,
        "subject_ref": record.caller,
        "agent": record.agent_name,
        "active_agent": record.active_agent_name,
        "title": record.title,
        "status": "active",
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
        "last_run_at": record.updated_at.isoformat(),
    }


def _run_json(ws: WorkspaceEntry, run: RunProjection) -> dict[str, object]:
    data = cast(dict[str, object], run.model_dump(mode="json"))
    data["workspace_id"] = ws.id
    limits = run.budget_limits.model_dump()
    used = run.usage.model_dump()
    data["budgets"] = {
        "max_model_iterations": {"limit": limits["max_model_iterations"], "used": used["model_iterations"]},
        "max_tool_calls": {"limit": limits["max_tool_calls"], "used": used["tool_calls"]},
        "max_tokens": {"limit": limits["max_tokens"], "used": used["input_tokens"] + used["output_tokens"]},
        "max_cost_microusd": {"limit": limits["max_cost_microusd"], "used": used["cost_microusd"]},
        "max_wall_time_ms": {"limit": limits["max_wall_time_ms"], "used": used["wall_time_ms"]},
    }
    return data


def _event_json(event: Event) -> dict[str, object]:
    return cast(dict[str, object], event.model_dump(mode="json"))


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
    manager: RunManager, auth: Authenticator, *, max_body_bytes: int = 1_048_576, max_active_runs_per_caller: int = 8
) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncGenerator[None]:
        yield
        await manager.aclose()

    app = FastAPI(title="BearAgent", version="1", lifespan=lifespan)
    app.state.auth = auth

    @app.exception_handler(ApiError)
    async def _api_error(_r: Request, exc: ApiError) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        return _error(exc.status, exc.category, exc.code, exc.message, exc.retryable)

    @app.exception_handler(BearAgentError)
    async def _bear_error(_r: Request, exc: BearAgentError) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        info = exc.info
        message = info.message + (f" (fix: {exc.hint})" if exc.hint else "")
        return _error(_STATUS_OF.get(info.category, 500), info.category, info.code, message, info.retryable)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_r: Request, exc: RequestValidationError) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid request"}
        where = ".".join(str(p) for p in first.get("loc", ()))
        return _error(422, "validation", "validation.request", f"{where}: {first.get('msg', 'invalid')}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(_r: Request, exc: StarletteHTTPException) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        return _error(exc.status_code, "invalid_request", f"http.{exc.status_code}", str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(_r: Request, exc: Exception) -> JSONResponse:  # pyright: ignore[reportUnusedFunction]
        return _error(
            500, "internal", "internal.unexpected", f"internal error ({type(exc).__name__}); see the server log"
        )

    @app.middleware("http")
    async def _limit_body(request: Request, call_next: Any) -> Response:  # pyright: ignore[reportUnusedFunction]
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > max_body_bytes:
            return _error(413, "invalid_request", "request_too_large", f"the body is over {max_body_bytes} bytes")
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
            raise _not_found("workspace", ws_id)
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
            raise _not_found("session", ref) from None
        for ws in visible(who):
            runtime = runtime_for(who, ws)
            record = await runtime.store.fetch_session(session_id)
            if record is not None and (record.caller == who.subject_ref or who.has("admin")):
                return ws, runtime, record
        raise _not_found("session", ref)

    async def find_run(who: CallerContext, ref: str) -> tuple[WorkspaceEntry, WorkspaceRuntime, RunProjection]:
        try:
            run_id = RunId(ref)
        except (TypeError, ValueError):
            raise _not_found("run", ref) from None
        for ws in visible(who):
            runtime = runtime_for(who, ws)
            run = await runtime.store.fetch_run(run_id)
            if run is None:
                continue
            if who.has("admin") or await _owns(runtime, run, who):
                return ws, runtime, run
        raise _not_found("run", ref)

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
        return _session_json(ws, record)

    @app.get("/v1/workspaces/{ws_id}/sessions")
    async def list_sessions(ws_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:read")
        ws = workspace(who, ws_id)
        runtime = runtime_for(who, ws)
        records = await runtime.store.fetch_sessions(caller=None if who.has("admin") else who.subject_ref, limit=200)
        return {"sessions": [_session_json(ws, r) for r in records]}

    @app.get("/v1/sessions/{session_id}")
    async def get_session(session_id: str, who: Caller) -> dict[str, object]:  # pyright: ignore[reportUnusedFunction]
        need(who, "runs:read")
        ws, _, record = await find_session(who, session_id)
        return _session_json(ws, record)

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
        return _run_json(ws, run)

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
            return {"events": [_event_json(e) for e in events], "next": events[-1].sequence if events else after}
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
        seq, skip = _resume_point(resume)
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
            raise _not_found("action", name)
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

"""A2A v1.0 on `bearagent serve`: agent cards and the JSON-RPC binding, mapped to sessions and runs (docs/a2a.md).

A served workspace's agent is an A2A agent at `/a2a/{ws_id}` (its default agent) or `/a2a/{ws_id}/{agent}`, its card
at `<that>/.well-known/agent-card.json` (and `/.well-known/agent-card.json`: the first workspace the caller sees).
Methods: `SendMessage`, `SendStreamingMessage` (SSE), `GetTask`, `ListTasks`, `CancelTask`. A task is a run (its id
the run id), a context a session (its id the session id). Every route needs a caller as the rest of the API does
(`access.py`): a workspace the token may not see is the same 404, a task it may not see is TaskNotFound. A run
waiting for an approval is `TASK_STATE_INPUT_REQUIRED`; a message to that task answers it (`allow`, `always`,
`deny`) and the run continues. Runs are queued and executed by the server's worker, as `POST /v1/.../runs` does.

Why it is over 400 lines: it is one binding, the A2A JSON-RPC methods and the wire shapes they answer with (task,
message and agent card JSON, and v0.3's method names and shapes for clients not on v1.0 yet); a method's result and
its shape change together whenever the A2A version does, so they are read side by side. The runs themselves are the
run service's (`service/`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, cast

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from bearagent.domain.errors import BearAgentError
from bearagent.domain.state import RunProjection, SessionRecord
from bearagent.runtime.run_writer import Published, TokenDelta
from bearagent.server.access import Access, Caller
from bearagent.server.auth import CallerContext
from bearagent.server.registry import WorkspaceEntry
from bearagent.server.shapes import ApiError
from bearagent.server.sse import SlotStream, StreamSlots
from bearagent.service.runner import RunOptions, WorkspaceRuntime

PROTOCOL_VERSION = "1.0"
MAX_TEXT_CHARS = 200_000
"""The most characters a message's text parts may add up to."""
MAX_WAIT_S = 600.0
"""How long a blocking `SendMessage` waits for its task to stop before answering with the task as it is."""
POLL_S = 0.2
"""How often a waiting `SendMessage` or a stream looks at its run in the store (a worker may run it elsewhere)."""
MAX_LIST = 100
MAX_QUEUED_TOKENS = 10_000
"""The most model-text pieces a stream holds before it sends them; past that they are dropped (the final artifact
still carries the whole answer)."""

_STATES = {
    "queued": "TASK_STATE_SUBMITTED",
    "running": "TASK_STATE_WORKING",
    "interrupted": "TASK_STATE_WORKING",
    "waiting": "TASK_STATE_INPUT_REQUIRED",
    "succeeded": "TASK_STATE_COMPLETED",
    "failed": "TASK_STATE_FAILED",
    "cancelled": "TASK_STATE_CANCELED",
}
_STOPPED = ("waiting", "succeeded", "failed", "cancelled")
_ENDED = ("succeeded", "failed", "cancelled")
_ANSWERS = {
    "allow": "allow_once",
    "yes": "allow_once",
    "y": "allow_once",
    "allow_once": "allow_once",
    "always": "allow_always",
    "allow_always": "allow_always",
    "deny": "deny",
    "no": "deny",
    "n": "deny",
}

# JSON-RPC / A2A error codes (A2A v1.0 §9)
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
TASK_NOT_FOUND, TASK_NOT_CANCELABLE, PUSH_NOT_SUPPORTED, UNSUPPORTED, CONTENT_TYPE = (
    -32001,
    -32002,
    -32003,
    -32004,
    -32005,
)


class RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def _rpc_result(rpc_id: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "result": result}


def _rpc_error(rpc_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": code, "message": message[:2_000]}}


def _iso(value: Any) -> str | None:
    return value.isoformat().replace("+00:00", "Z") if value is not None else None


def _text_message(
    role: str, text: str, *, context_id: str | None, task_id: str | None, message_id: str
) -> dict[str, Any]:
    out: dict[str, Any] = {"messageId": message_id, "role": role, "parts": [{"text": text}]}
    if context_id:
        out["contextId"] = context_id
    if task_id:
        out["taskId"] = task_id
    return out


def task_json(run: RunProjection, agent: str | None = None) -> dict[str, Any]:
    """A run as an A2A Task: its state, the answer as an artifact once it succeeded, the question of a waiting run
    as the status message, the error of a failed one."""
    task_id = str(run.run_id)
    context_id = str(run.session_id) if run.session_id is not None else task_id
    status: dict[str, Any] = {"state": _STATES.get(run.status, "TASK_STATE_WORKING")}
    timestamp = _iso(run.ended_at or run.started_at or run.created_at)
    if timestamp:
        status["timestamp"] = timestamp
    said: str | None = None
    if run.status == "waiting" and run.pending_approval is not None:
        said = (
            f"The call {run.pending_approval.tool_name} needs approval. Reply 'allow' (once), 'always' (for this "
            "context) or 'deny' in a message to this task."
        )
    elif run.status == "failed" and run.error is not None:
        said = f"{run.error.category}: {run.error.message}"
    if said is not None:
        status["message"] = _text_message(
            "ROLE_AGENT", said, context_id=context_id, task_id=task_id, message_id=f"{task_id}-status"
        )
    task: dict[str, Any] = {
        "id": task_id,
        "contextId": context_id,
        "status": status,
        "metadata": {"agent": run.effective_agent_name or run.agent_name or agent or "", "bearagentStatus": run.status},
    }
    if run.status == "succeeded" and run.final_text:
        task["artifacts"] = [_answer(task_id, run.final_text)]
    return task


def _answer(task_id: str, text: str) -> dict[str, Any]:
    return {"artifactId": f"{task_id}-answer", "name": "answer", "parts": [{"text": text}]}


def _message_text(message: Any) -> str:
    """The text of a message's parts; a part that is not text is refused (the card offers text only)."""
    if not isinstance(message, Mapping):
        raise RpcError(INVALID_PARAMS, "params.message must be a Message object")
    parts = message.get("parts")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    if not isinstance(parts, list) or not parts:
        raise RpcError(INVALID_PARAMS, "params.message.parts must be a non-empty list of parts")
    texts: list[str] = []
    for i, part in enumerate(parts[:1_000]):  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        text: object = cast("Mapping[str, object]", part).get("text") if isinstance(part, Mapping) else None
        if not isinstance(text, str):
            raise RpcError(CONTENT_TYPE, f"params.message.parts[{i}] is not a text part; this agent accepts text/plain")
        texts.append(text)
    text = "\n".join(texts)
    if not text.strip():
        raise RpcError(INVALID_PARAMS, "params.message has no text")
    if len(text) > MAX_TEXT_CHARS:
        raise RpcError(INVALID_PARAMS, f"params.message has {len(text)} characters, more than {MAX_TEXT_CHARS}")
    return text


def agent_card(runtime: WorkspaceRuntime, agent: str, url: str) -> dict[str, Any]:
    """The card of `agent` in a served workspace: its description, a skill for the agent and one per action."""
    spec = runtime.loaded.agents.get(agent)
    description = (spec.description if spec is not None else "") or f"The BearAgent agent {agent}."
    skills = [{"id": agent, "name": agent, "description": description[:2_000], "tags": ["agent"]}]
    for action in runtime.loaded.actions.all()[:100]:
        if action.agent in (None, agent):
            skills.append(
                {
                    "id": f"action:{action.name}",
                    "name": action.name,
                    "description": (action.description or action.name)[:2_000],
                    "tags": ["action"],
                }
            )
    from bearagent import __version__

    return {
        "name": f"{runtime.root.name}/{agent}",
        "description": description[:2_000],
        "version": __version__,
        "supportedInterfaces": [{"url": url, "protocolBinding": "JSONRPC", "protocolVersion": PROTOCOL_VERSION}],
        "provider": {"organization": "BearAgent", "url": "https://github.com/bearagent"},
        "capabilities": {"streaming": True, "pushNotifications": False},
        "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
        "securityRequirements": [{"schemes": {"bearer": {"list": []}}}],
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": skills,
    }


LEGACY_METHODS = {
    "message/send": "SendMessage",
    "message/stream": "SendStreamingMessage",
    "tasks/get": "GetTask",
    "tasks/list": "ListTasks",
    "tasks/cancel": "CancelTask",
}
"""A2A v0.3's method names, served with v0.3's shapes (`legacy_result`) for clients not on v1.0 yet."""
_LEGACY_ENDS = ("completed", "failed", "canceled", "rejected", "input-required", "auth-required")


def _legacy_parts(parts: Any) -> list[dict[str, Any]]:
    return [{"kind": "text", "text": p.get("text", "")} for p in parts]


def _legacy_message(message: dict[str, Any]) -> dict[str, Any]:
    out = {**message, "kind": "message", "role": "agent" if message.get("role") == "ROLE_AGENT" else "user"}
    out["parts"] = _legacy_parts(message.get("parts", []))
    return out


def _legacy_status(status: dict[str, Any]) -> dict[str, Any]:
    state = str(status.get("state", "")).removeprefix("TASK_STATE_").lower().replace("_", "-")
    out: dict[str, Any] = {**status, "state": state}
    if "message" in status:
        out["message"] = _legacy_message(status["message"])
    return out


def _legacy_artifact(artifact: dict[str, Any]) -> dict[str, Any]:
    return {**artifact, "parts": _legacy_parts(artifact.get("parts", []))}


def _legacy_task(task: dict[str, Any]) -> dict[str, Any]:
    out = {**task, "kind": "task", "status": _legacy_status(task["status"])}
    if "artifacts" in task:
        out["artifacts"] = [_legacy_artifact(a) for a in task["artifacts"]]
    return out


def legacy_result(result: dict[str, Any]) -> dict[str, Any]:
    """A v1.0 result in A2A v0.3's shapes: a Task (`kind: task`, lower-case states, `kind: text` parts), a
    `status-update` with `final`, an `artifact-update`; a list of tasks as is, each in v0.3's shape."""
    if "task" in result:
        return _legacy_task(result["task"])
    if "statusUpdate" in result:
        update = result["statusUpdate"]
        status = _legacy_status(update["status"])
        return {**update, "kind": "status-update", "status": status, "final": status["state"] in _LEGACY_ENDS}
    if "artifactUpdate" in result:
        update = result["artifactUpdate"]
        return {**update, "kind": "artifact-update", "artifact": _legacy_artifact(update["artifact"])}
    if "tasks" in result:
        return {**result, "tasks": [_legacy_task(t) for t in result["tasks"]]}
    if "status" in result and "id" in result:
        return _legacy_task(result)
    return result


def register(app: FastAPI, access: Access, slots: StreamSlots, *, max_active_runs_per_caller: int = 8) -> None:
    def resolve(who: CallerContext, ws_id: str, agent: str | None) -> tuple[WorkspaceEntry, WorkspaceRuntime, str]:
        ws = access.workspace(who, ws_id)  # the same 404 as the rest of the API
        runtime = access.runtime_for(who, ws)
        name = agent or runtime.loaded.config.default_agent
        if runtime.loaded.agents.get(name) is None:
            raise ApiError(404, "not_found", "not_found.agent", f"no agent {name[:64]!r} in workspace {ws_id}")
        return ws, runtime, name

    def base(request: Request, ws_id: str, agent: str | None) -> str:
        root = str(request.base_url).rstrip("/")
        return f"{root}/a2a/{ws_id}" + (f"/{agent}" if agent else "")

    @app.get("/.well-known/agent-card.json")
    async def first_card(who: Caller, request: Request) -> dict[str, Any]:  # pyright: ignore[reportUnusedFunction]
        """The card of the default agent of the first workspace the caller sees."""
        access.need(who, "runs:read")
        seen = access.visible(who)
        if not seen:
            raise ApiError(404, "not_found", "not_found.workspace", "no workspace is served to this caller")
        _ws, runtime, agent = resolve(who, seen[0].id, None)
        return agent_card(runtime, agent, base(request, seen[0].id, None))

    @app.get("/a2a/{ws_id}/.well-known/agent-card.json")
    async def workspace_card(ws_id: str, who: Caller, request: Request) -> dict[str, Any]:  # pyright: ignore[reportUnusedFunction]
        access.need(who, "runs:read")
        _ws, runtime, agent = resolve(who, ws_id, None)
        return agent_card(runtime, agent, base(request, ws_id, None))

    @app.get("/a2a/{ws_id}/{agent}/.well-known/agent-card.json")
    async def agent_card_route(ws_id: str, agent: str, who: Caller, request: Request) -> dict[str, Any]:  # pyright: ignore[reportUnusedFunction]
        access.need(who, "runs:read")
        _ws, runtime, name = resolve(who, ws_id, agent)
        return agent_card(runtime, name, base(request, ws_id, agent))

    @app.post("/a2a/{ws_id}", response_model=None)
    async def rpc_default(ws_id: str, who: Caller, request: Request) -> Response:  # pyright: ignore[reportUnusedFunction]
        return await rpc(ws_id, None, who, request)

    @app.post("/a2a/{ws_id}/{agent}", response_model=None)
    async def rpc_agent(ws_id: str, agent: str, who: Caller, request: Request) -> Response:  # pyright: ignore[reportUnusedFunction]
        return await rpc(ws_id, agent, who, request)

    async def rpc(ws_id: str, agent: str | None, who: Caller, request: Request) -> Response:
        ws, runtime, name = resolve(who, ws_id, agent)
        try:
            body = json.loads(await request.body())
        except (ValueError, UnicodeDecodeError):
            return JSONResponse(_rpc_error(None, PARSE_ERROR, "the body is not JSON"))
        if not isinstance(body, dict):
            return JSONResponse(_rpc_error(None, INVALID_REQUEST, "a JSON-RPC request object is expected (no batches)"))
        rpc_id: Any = body.get("id")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        method, params = body.get("method"), body.get("params", {})  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if body.get("jsonrpc") != "2.0" or not isinstance(method, str):  # pyright: ignore[reportUnknownMemberType]
            return JSONResponse(_rpc_error(rpc_id, INVALID_REQUEST, "jsonrpc must be '2.0' and method a string"))
        if not isinstance(params, dict):
            return JSONResponse(_rpc_error(rpc_id, INVALID_PARAMS, "params must be an object"))
        legacy = method in LEGACY_METHODS
        method = LEGACY_METHODS.get(method, method)
        call = _Call(access, who, ws, runtime, name, params, max_active_runs_per_caller, legacy=legacy)  # pyright: ignore[reportUnknownArgumentType]
        try:
            if method == "SendStreamingMessage":
                release = slots.take(who.subject_ref)  # 429 past limits.max_sse_per_caller, as the other streams
                try:
                    run = await call.send()
                except BaseException:
                    release()
                    raise
                return SlotStream(_sse(call, run, rpc_id), release)
            handler = {
                "SendMessage": call.send_and_wait,
                "GetTask": call.get,
                "ListTasks": call.list,
                "CancelTask": call.cancel,
            }.get(method)
            if handler is None:
                if "PushNotification" in method or method == "SubscribeToTask":
                    raise RpcError(
                        PUSH_NOT_SUPPORTED if "Push" in method else UNSUPPORTED, f"{method} is not supported"
                    )
                raise RpcError(METHOD_NOT_FOUND, f"unknown method {method[:100]!r}")
            result = await handler()
            return JSONResponse(_rpc_result(rpc_id, legacy_result(result) if legacy else result))
        except RpcError as exc:
            return JSONResponse(_rpc_error(rpc_id, exc.code, str(exc)))
        except BearAgentError as exc:
            message = exc.info.message + (f" (fix: {exc.hint})" if exc.hint else "")
            return JSONResponse(_rpc_error(rpc_id, INVALID_PARAMS, message))


class _Call:
    """One JSON-RPC call on one workspace agent, for one caller."""

    def __init__(
        self,
        access: Access,
        who: CallerContext,
        ws: WorkspaceEntry,
        runtime: WorkspaceRuntime,
        agent: str,
        params: dict[str, Any],
        max_active: int,
        *,
        legacy: bool = False,
    ) -> None:
        self.access, self.who, self.ws, self.runtime, self.agent, self.params = access, who, ws, runtime, agent, params
        self.max_active = max_active
        self.legacy = legacy
        """A v0.3 method name (`message/send`, ...): the v0.3 shapes are answered."""

    async def _run(self, ref: Any) -> RunProjection:
        if not isinstance(ref, str) or not ref:
            raise RpcError(INVALID_PARAMS, "params.id must be a task id")
        try:
            ws, _runtime, run = await self.access.find_run(self.who, ref)
        except ApiError:
            raise RpcError(TASK_NOT_FOUND, f"no task {ref[:100]!r}") from None
        if ws.id != self.ws.id:
            raise RpcError(TASK_NOT_FOUND, f"no task {ref[:100]!r} in this workspace")
        return run

    async def _session(self, context_id: Any) -> SessionRecord:
        if context_id is not None:
            if not isinstance(context_id, str):
                raise RpcError(INVALID_PARAMS, "params.message.contextId must be a string")
            try:
                ws, _runtime, record = await self.access.find_session(self.who, context_id)
            except ApiError:
                raise RpcError(INVALID_PARAMS, f"no context {context_id[:100]!r}; send without contextId") from None
            if ws.id != self.ws.id:
                raise RpcError(INVALID_PARAMS, f"no context {context_id[:100]!r} in this workspace")
            return record
        return await self.runtime.create_session(
            self.agent, caller=self.who.subject_ref, title="A2A", auth_context=self.who.snapshot()
        )

    async def send(self) -> RunProjection:
        """Start a run of the message in its context (a new one without `contextId`), or answer the approval the
        task it names waits for."""
        self.access.need(self.who, "runs:write")
        message = self.params.get("message")
        text = _message_text(message)
        assert isinstance(message, Mapping)
        task_ref = message.get("taskId")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if task_ref:
            return await self._answer(await self._run(task_ref), text)
        manager = self.access.manager
        if not await manager.has_room(self.who.subject_ref, self.max_active):
            raise RpcError(
                INVALID_REQUEST,
                f"you have {self.max_active} tasks submitted or working already (limits.max_active_runs_per_caller); "
                "wait for one to end",
            )
        record = await self._session(message.get("contextId"))  # pyright: ignore[reportUnknownMemberType]
        options = RunOptions(
            agent=self.agent,
            session=str(record.session_id),
            wait_approvals=True,
            initiator_ref=self.who.subject_ref,
            auth_context=self.who.snapshot(),
            metadata={"a2a_message_id": str(message.get("messageId", ""))[:200]},  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        )
        return await manager.start(self.ws.id, self.who.subject_ref, text, options)

    async def _answer(self, run: RunProjection, text: str) -> RunProjection:
        from bearagent.server.approvals import attached_elsewhere
        from bearagent.service.resuming import answer_approval

        self.access.need(self.who, "approvals:write")
        if run.status != "waiting" or run.pending_approval is None:
            raise RpcError(
                INVALID_PARAMS,
                f"task {run.run_id} is {run.status}, not waiting for input; send without taskId to continue its context",
            )
        decision = _ANSWERS.get(text.strip().lower().rstrip("."))
        if decision is None:
            raise RpcError(INVALID_PARAMS, "answer the task with 'allow', 'always' or 'deny'")
        owner = await self.access.initiator(self.runtime, run) or self.who.subject_ref
        after = await answer_approval(
            self.runtime,
            run.run_id,
            run.pending_approval.approval_id,
            decision,  # pyright: ignore[reportArgumentType]
            answered_by=self.who.subject_ref,
        )
        if not attached_elsewhere(after):
            self.access.manager.resume(self.ws.id, owner, after)
        return after

    async def send_and_wait(self) -> dict[str, Any]:
        run = await self.send()
        configuration = self.params.get("configuration")
        empty: dict[str, object] = {}
        settings = cast("Mapping[str, object]", configuration) if isinstance(configuration, Mapping) else empty
        immediately = bool(settings.get("returnImmediately")) or (self.legacy and settings.get("blocking") is False)
        if not immediately:
            run = await self._until_stopped(run, after_status=run.status)
        return {"task": task_json(run, self.agent)}

    async def _until_stopped(self, run: RunProjection, *, after_status: str) -> RunProjection:
        deadline = time.monotonic() + MAX_WAIT_S
        answered = after_status == "waiting"  # an answered approval: wait until it moved on
        while time.monotonic() < deadline:
            now = await self.runtime.store.fetch_run(run.run_id) or run
            if now.status in _ENDED or (
                now.status == "waiting" and not (answered and now.last_sequence == run.last_sequence)
            ):
                return now
            await asyncio.sleep(POLL_S)
        return await self.runtime.store.fetch_run(run.run_id) or run

    async def get(self) -> dict[str, Any]:
        self.access.need(self.who, "runs:read")
        run = await self._run(self.params.get("id"))
        return task_json(run, self.agent)

    async def list(self) -> dict[str, Any]:
        self.access.need(self.who, "runs:read")
        store = self.runtime.store
        context = self.params.get("contextId")
        if context:
            sessions = [await self._session(context)]
        else:
            sessions = list(await store.fetch_sessions(caller=self.who.subject_ref, limit=MAX_LIST))
        size = self.params.get("pageSize")
        limit = size if isinstance(size, int) and 0 < size <= MAX_LIST else 50
        tasks: list[dict[str, Any]] = []
        for session in sessions:
            for run in await store.fetch_runs(session_id=session.session_id, limit=limit):
                if run.parent_run_id is None and await self.access.may_see(self.who, self.runtime, run):
                    tasks.append(task_json(run, self.agent))
            if len(tasks) >= limit:
                break
        return {"tasks": tasks[:limit], "nextPageToken": "", "pageSize": limit, "totalSize": min(len(tasks), limit)}

    async def cancel(self) -> dict[str, Any]:
        self.access.need(self.who, "runs:write")
        run = await self._run(self.params.get("id"))
        if run.status in _ENDED:
            raise RpcError(TASK_NOT_CANCELABLE, f"task {run.run_id} is {run.status} already")
        reason = f"cancelled over A2A by {self.who.subject_ref}"
        await self.access.manager.stop(self.runtime, run.run_id, reason, wait_s=5.0)
        return task_json(await self.runtime.store.fetch_run(run.run_id) or run, self.agent)


async def _sse(call: _Call, run: RunProjection, rpc_id: Any) -> AsyncIterator[bytes]:
    """`SendStreamingMessage`: the task, then a status update at each change (working, each tool call as a status
    message, input-required, the end), the model's text as it streams as chunks of the artifact `answer` (each
    model call's text starts it again: `append: false`, then `append: true`), the whole answer as that artifact
    before the final status. The run's steps are read from the store, so a run a worker executes elsewhere streams
    the same (its tokens, which only this server's own writer publishes, excepted)."""

    def frame(result: dict[str, Any]) -> bytes:
        shaped = legacy_result(result) if call.legacy else result
        return f"data: {json.dumps(_rpc_result(rpc_id, shaped), ensure_ascii=False)}\n\n".encode()

    task_id = str(run.run_id)
    context_id = str(run.session_id) if run.session_id is not None else task_id
    tokens: asyncio.Queue[TokenDelta] = asyncio.Queue(maxsize=MAX_QUEUED_TOKENS)

    def take(item: Published) -> None:  # the writer's live publication: this run's model text as it streams
        if isinstance(item, TokenDelta) and item.run_id == run.run_id:
            with contextlib.suppress(asyncio.QueueFull):  # the final artifact carries the whole answer anyway
                tokens.put_nowait(item)

    unsubscribe = call.runtime.writer.subscribe(take)
    try:
        async for data in _task_frames(call, run, frame, tokens, task_id, context_id):
            yield data
    finally:
        unsubscribe()


async def _task_frames(
    call: _Call,
    run: RunProjection,
    frame: Callable[[dict[str, Any]], bytes],
    tokens: asyncio.Queue[TokenDelta],
    task_id: str,
    context_id: str,
) -> AsyncIterator[bytes]:
    yield frame({"task": task_json(run, call.agent)})
    streaming: list[str] = [""]  # the model call whose text the streamed answer artifact holds

    async def streamed() -> AsyncIterator[bytes]:
        """Wait up to `POLL_S` for model text; each model call's text is the answer artifact, chunk by chunk."""
        with contextlib.suppress(TimeoutError):
            first = await asyncio.wait_for(tokens.get(), POLL_S)
            pending = [first]
            while not tokens.empty():
                pending.append(tokens.get_nowait())
            for delta in pending:
                fresh = delta.activity_id != streaming[0] or delta.offset == 0
                streaming[0] = delta.activity_id
                yield frame(
                    {
                        "artifactUpdate": {
                            "taskId": task_id,
                            "contextId": context_id,
                            "artifact": _answer(task_id, delta.text),
                            "append": not fresh,
                            "lastChunk": False,
                        }
                    }
                )

    store = call.runtime.store
    seen_status = run.status
    after = 0
    answered = run.status == "waiting"
    first_sequence = run.last_sequence
    deadline = time.monotonic() + MAX_WAIT_S
    while time.monotonic() < deadline:
        for event in await store.fetch_events(run.run_id, after, limit=1000):
            after = event.sequence
            if event.event_type == "ToolCallRequested":
                name = str(event.payload.get("tool_name", "tool"))
                note = _text_message(
                    "ROLE_AGENT",
                    f"calling {name}",
                    context_id=context_id,
                    task_id=task_id,
                    message_id=f"{task_id}-{after}",
                )
                yield frame(
                    {
                        "statusUpdate": {
                            "taskId": task_id,
                            "contextId": context_id,
                            "status": {"state": "TASK_STATE_WORKING", "message": note},
                        }
                    }
                )
        now = await store.fetch_run(run.run_id) or run
        if answered and now.status == "waiting" and now.last_sequence == first_sequence:
            await asyncio.sleep(POLL_S)  # the answer is recorded; the run has not moved on yet
            continue
        if answered or now.status != seen_status:
            answered = False
            seen_status = now.status
            task = task_json(now, call.agent)
            if now.status == "succeeded" and now.final_text:
                yield frame(
                    {
                        "artifactUpdate": {
                            "taskId": task_id,
                            "contextId": context_id,
                            "artifact": _answer(task_id, now.final_text),
                            "lastChunk": True,
                        }
                    }
                )
            yield frame({"statusUpdate": {"taskId": task_id, "contextId": context_id, "status": task["status"]}})
            if now.status in _STOPPED:
                return
        async for data in streamed():
            yield data

"""What the HTTP API speaks: the error shape (`{"error": {category, code, message, retryable}}` and the status of each
category), the request and response bodies (the OpenAPI schema is generated from them), the JSON of sessions, runs
and events, and the SSE resume id (`<seq>-<n>`)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, cast

from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from bearagent.domain.events import Event
from bearagent.domain.state import RunProjection, SessionRecord
from bearagent.server.registry import WorkspaceEntry

SKIP_ALL = 1_000_000


def resume_point(last_event_id: str) -> tuple[int, int]:
    """`(log sequence, stream events of it already delivered)` from an SSE id `<seq>-<n>` (or a bare `<seq>`: all
    of it delivered); `(0, 0)` means from the start."""
    head, _, tail = last_event_id.strip().partition("-")
    if not head.isdigit():
        return 0, 0
    return int(head), int(tail) if tail.isdigit() else SKIP_ALL


STATUS_OF: Mapping[str, int] = {
    "invalid_request": 400,
    "validation": 422,
    "not_found": 404,
    "permission": 403,
    "conflict": 409,
    "configuration": 409,
    "budget": 409,
}


class ApiError(Exception):
    def __init__(self, status: int, category: str, code: str, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.status, self.category, self.code, self.message, self.retryable = status, category, code, message, retryable


def error_response(status: int, category: str, code: str, message: str, retryable: bool = False) -> JSONResponse:
    body = {"error": {"category": category, "code": code, "message": message, "retryable": retryable}}
    return JSONResponse(body, status_code=status)


def not_found(what: str, ref: str) -> ApiError:
    return ApiError(404, "not_found", f"not_found.{what}", f"there is no {what} {ref[:80]!r} you can see")


# ---- request and response bodies -------------------------------------------------------------------------------


class SessionCreate(BaseModel):
    agent: str | None = Field(default=None, max_length=64)
    title: str | None = Field(default=None, max_length=512)


WAIT_APPROVALS = (
    "When a tool call needs an approval: true (the default: nobody is attached to a server run) leaves the run "
    "`waiting` until someone answers it (POST /v1/runs/{id}/approvals/{approval_id}); false denies the call at once."
)


class RunCreate(BaseModel):
    prompt: str = Field(min_length=1, max_length=1_048_576)
    agent: str | None = Field(default=None, max_length=64)
    model: str | None = Field(default=None, max_length=256)
    budgets: dict[str, int] = Field(default_factory=dict[str, int])
    strategy: Literal["enqueue", "reject", "interrupt"] = "enqueue"
    wait_approvals: bool = Field(default=True, description=WAIT_APPROVALS)
    metadata: dict[str, str | int | float | bool | None] | None = Field(
        default=None,
        description="The client's own fields for the run (seed 002's Run.metadata): at most 32 keys of up to 64 "
        "characters, scalar values of up to 1,024; none naming a secret or the runtime's own keys",
    )
    mentions: bool = Field(
        default=True,
        description="Attach the files and directories the prompt's `@path` words name (as `bearagent run` does, "
        "through the file tools' path safety); false sends the prompt as typed",
    )


class ActionRunCreate(BaseModel):
    inputs: dict[str, Any] = Field(default_factory=dict[str, Any])
    wait_approvals: bool = Field(default=True, description=WAIT_APPROVALS)


class ApprovalAnswer(BaseModel):
    decision: Literal["allow_once", "allow_always", "deny", "accept", "decline", "cancel"] = Field(
        description="A tool approval: allow_once, allow_always or deny; an MCP server's question (an `el_` id): "
        "accept, decline or cancel"
    )
    message: str | None = Field(default=None, max_length=2_000, description="A note kept with the answer in the log")
    content: dict[str, Any] | None = Field(
        default=None,
        description="Accepting an MCP server's form: its fields' values, as its `requested_schema` asks "
        "(strings, numbers, booleans, enum values)",
    )


class RunAccepted(BaseModel):
    run_id: str
    status: str
    attached: list[str] = Field(
        default_factory=list[str], description="The paths the prompt's `@path` mentions attached, in order"
    )
    notes: list[str] = Field(
        default_factory=list[str],
        description="What the caller should know about the mentions (a file cut to its bound, a path sent as text)",
    )


def session_json(
    ws: WorkspaceEntry,
    record: SessionRecord,
    *,
    status: str = "active",
    last_run_at: datetime | None = None,
    auth_context: Mapping[str, object] | None = None,
) -> dict[str, object]:
    return {
        "id": str(record.session_id),
        "workspace_id": ws.id,
        "subject_ref": record.caller,
        "agent_name": record.agent_name,
        "active_agent_name": record.active_agent_name,
        "agent": record.agent_name,  # the names before seed 002's, kept for existing clients
        "active_agent": record.active_agent_name,
        "title": record.title,
        "status": status,
        "auth_context": dict(auth_context) if auth_context is not None else None,
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
        "last_run_at": last_run_at.isoformat() if last_run_at is not None else None,
    }


def run_json(ws: WorkspaceEntry, run: RunProjection, extra: Mapping[str, object] | None = None) -> dict[str, object]:
    """The run projection plus `workspace_id`, `budgets` (limit and use of each) and `extra` (the record fields the
    projection has no column for: `trigger_ref`, `initiator_ref`, `metadata`)."""
    data = cast(dict[str, object], run.model_dump(mode="json"))
    data["workspace_id"] = ws.id
    data["error_code"] = run.error.code if run.error is not None else None  # seed 002's names beside `error`
    data["error_message"] = run.error.message if run.error is not None else None
    data.update(extra or {})
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


def event_json(event: Event) -> dict[str, object]:
    return cast(dict[str, object], event.model_dump(mode="json"))

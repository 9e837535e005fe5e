"""Read models of the event log: the Run and Activity projections the reducer computes and the store keeps."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, TypeAlias

from pydantic import Field

from bearagent.domain._base import DomainModel, JsonObject, frozen_json
from bearagent.domain.budgets import BudgetLimits, BudgetUsage
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import ActivityId, ModelCallId, RunId, SessionId, ToolCallId, WorkspaceId
from bearagent.domain.run_events import RunOwner, RunRequest

RunStatus: TypeAlias = Literal["queued", "running", "waiting", "interrupted", "succeeded", "failed", "cancelled"]
"""`waiting`: an approval is pending (wall time paused); `interrupted`: its process died, `runs resume` continues it."""
RUN_STATUSES: tuple[RunStatus, ...] = (
    "queued",
    "running",
    "waiting",
    "interrupted",
    "succeeded",
    "failed",
    "cancelled",
)
ActivityStatus: TypeAlias = Literal["pending", "running", "succeeded", "failed"]
ActivityKind: TypeAlias = Literal["model_call", "tool_call"]
TERMINAL_RUN_STATUSES: frozenset[str] = frozenset({"succeeded", "failed", "cancelled"})
ACTIVE_ACTIVITY_STATUSES: frozenset[str] = frozenset({"pending", "running"})


class ActivityProjection(DomainModel):
    run_id: RunId
    activity_id: ActivityId
    kind: ActivityKind
    status: ActivityStatus
    model_call_id: ModelCallId | None = None
    tool_call_id: ToolCallId | None = None
    name: str | None = Field(default=None, max_length=256)
    requested_sequence: int = Field(ge=1)
    last_sequence: int = Field(ge=1)
    requested_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None
    error: ErrorInfo | None = None


class PendingApproval(DomainModel):
    """The approval a `waiting` run waits for (`resolved` once answered, until a process continues the run)."""

    approval_id: str
    tool_call_id: ToolCallId
    tool_name: str
    requested_at: datetime
    decision: str | None = None
    answered_by: str | None = None


class RunProjection(DomainModel):
    run_id: RunId
    session_id: SessionId | None = None
    parent_run_id: RunId | None = None
    status: RunStatus
    budget_limits: BudgetLimits
    usage: BudgetUsage = Field(default_factory=BudgetUsage)
    last_sequence: int = Field(ge=1)
    active_activity_id: ActivityId | None = None
    agent_name: str | None = None
    effective_agent_name: str | None = None
    switch_count: int = Field(default=0, ge=0)
    trigger_type: str = "message"
    goal: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    ended_at: datetime | None = None
    error: ErrorInfo | None = None
    final_text: str | None = None
    stop_reason: str | None = Field(default=None, max_length=64)
    owner: RunOwner | None = None
    """The process executing the run (its lease), from RunStarted v2 / RunResumed; None when nobody holds it."""
    wall_origin: datetime | None = None
    """`started_at` shifted later by the time the run spent not running (waiting for an approval, interrupted):
    while the run runs, its wall time is `now - wall_origin`. None while it does not run (or for a log written
    before runs could pause, where `started_at` is the origin)."""
    pending_approval: PendingApproval | None = None
    request: RunRequest | None = None
    """Who started the run and its per-run choices (RunCreated v3); None for a log written before."""


class WorkspaceRecord(DomainModel):
    """Seed 002's Workspace as its store keeps it: what the server config says of it (name, kind, external ref,
    execution policy, metadata), its status, and when it was first recorded and last changed
    (`store/workspaces.py`). The server records each workspace it serves when it starts. `key` is the id the
    server config gives it (the `{ws}` of the routes); `workspace_id` is made when it is first recorded and never
    changes."""

    key: str = Field(min_length=1, max_length=256)
    workspace_id: WorkspaceId
    name: str = Field(max_length=256)
    kind: Literal["project", "chat"] = "project"
    external_ref: str | None = Field(default=None, max_length=1024)
    execution_policy: Literal["local", "none"] = "local"
    status: Literal["active", "archived"] = "active"
    metadata: JsonObject = Field(default_factory=lambda: frozen_json({}))
    created_at: datetime
    updated_at: datetime

    def same_content(self, other: WorkspaceRecord) -> bool:
        """Whether `other` says the same of the workspace (times aside)."""
        keep = {"created_at", "updated_at"}
        return self.model_dump(mode="json", exclude=keep) == other.model_dump(mode="json", exclude=keep)


class SessionFork(DomainModel):
    """A point in a session's log a fork starts from: the conversation up to the end of run `run_id` (`sequence`
    None), or up to and including its event `sequence`."""

    session_id: SessionId
    run_id: RunId
    sequence: int | None = Field(default=None, ge=1)


class SessionRecord(DomainModel):
    """One conversation of one caller in one workspace, as the store keeps it (runs point at it by session_id)."""

    session_id: SessionId
    created_at: datetime
    updated_at: datetime
    agent_name: str | None = Field(default=None, max_length=64)
    active_agent_name: str | None = Field(default=None, max_length=64)
    title: str | None = Field(default=None, max_length=512)
    caller: str | None = Field(default=None, max_length=256)
    auth_context: JsonObject | None = None
    """The caller context the session was created with over the HTTP API (never a token); kept as created."""
    forked_from: SessionFork | None = None
    """Where this session was forked from: its history begins with that session's conversation up to that point
    (`bearagent sessions fork`); kept as created."""
    allowed_rules: tuple[str, ...] = Field(default=(), max_length=500)
    """Permission rules answered "allow always" in this session (`Bash(git status)`, `Write`): the one place that
    memory lives, so every run, process and face of the session sees the same answers."""

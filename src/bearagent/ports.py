"""Ports: the protocols the runtime depends on. Adapters (store, providers, tools, hooks, mcp) implement them;
only `app.py` knows the concrete classes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from bearagent.domain._base import JsonMapping, JsonValue
from bearagent.domain.events import Event
from bearagent.domain.ids import IdGenerator, RunId, SessionId, ToolCallId, Uuid4IdGenerator
from bearagent.domain.models import ModelEvent, ModelRequest
from bearagent.domain.state import ActivityProjection, RunProjection, RunStatus, SessionRecord
from bearagent.domain.tools import ToolRequest, ToolResult, ToolSpec


class Clock(Protocol):
    def now(self) -> datetime:
        """Wall-clock time, timezone-aware UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin, for durations."""
        ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()


class EventStore(Protocol):
    """Append-only run logs plus their Run/Activity projections, kept consistent in one transaction.

    `append` checks that `event.sequence` is the run's last sequence + 1 (optimistic concurrency), runs the
    reducer (state machines and budgets) and commits event and projections together, or nothing.
    """

    def append(self, event: Event) -> RunProjection: ...

    def append_many(self, events: Sequence[Event]) -> RunProjection:
        """Consecutive events of one run in one transaction: all become facts, or none does."""
        ...

    def read_events(self, run_id: RunId, from_sequence: int = 1) -> Sequence[Event]: ...

    def get_run(self, run_id: RunId) -> RunProjection | None: ...

    def list_runs(
        self,
        *,
        session_id: SessionId | None = None,
        status: RunStatus | None = None,
        parent_run_id: RunId | None = None,
        limit: int = 50,
    ) -> Sequence[RunProjection]: ...

    def list_activities(self, run_id: RunId) -> Sequence[ActivityProjection]: ...

    def close(self) -> None: ...


class SessionStore(Protocol):
    """Sessions (one conversation of one caller in one workspace); the runtime's serial run queue keys on them."""

    def create_session(self, session: SessionRecord) -> SessionRecord: ...

    def get_session(self, session_id: SessionId) -> SessionRecord | None: ...

    def update_session(self, session: SessionRecord) -> SessionRecord: ...

    def latest_session(self, *, caller: str | None = None) -> SessionRecord | None: ...

    def list_sessions(self, *, caller: str | None = None, limit: int = 50) -> Sequence[SessionRecord]: ...


class ModelProvider(Protocol):
    """Turns a `ModelRequest` into a stream of `ModelEvent`s. Raises `BearAgentError` (with `ErrorInfo`) on failure;
    never retries; SDK objects never leave the adapter. Closing the iterator closes the HTTP stream."""

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]: ...


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool executor may know about the call it serves."""

    workspace_root: Path
    run_id: RunId | None = None
    session_id: SessionId | None = None
    tool_call_id: ToolCallId | None = None
    agent_name: str | None = None
    ids: IdGenerator = field(default_factory=Uuid4IdGenerator)
    settings: Mapping[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    deadline: float | None = None
    """`time.monotonic()` by which the run must end (its wall-time budget), None when unknown. Work a tool cannot
    cancel mid-way (a regex search in a worker thread) bounds itself by it, so it stops when the run does."""


@runtime_checkable
class Tool(Protocol):
    """One executable tool. `prepare` validates and normalises arguments (raising `BearAgentError` with category
    `validation`); `execute` does the work within the spec's limits and returns a `ToolResult`."""

    @property
    def spec(self) -> ToolSpec: ...

    def prepare(self, arguments: JsonMapping, context: ToolContext) -> JsonMapping: ...

    async def execute(self, arguments: JsonMapping, context: ToolContext) -> ToolResult: ...


@dataclass(frozen=True, slots=True)
class PreToolDecision:
    """What the PreToolUse hooks decided about one call. `permission=None` means no hook had an opinion.

    `block=True` (exit code 2 or `decision: block`) refuses the call with `reason` fed back to the model.
    `updated_arguments` replaces the arguments and is re-validated by the tool's `prepare`.
    """

    permission: Literal["allow", "deny", "ask"] | None = None
    reason: str | None = None
    block: bool = False
    updated_arguments: JsonMapping | None = None
    additional_context: str | None = None
    stop_reason: str | None = None
    """Set when a hook answered `continue: false`: the run must stop after this call (shown to the user)."""
    system_message: str | None = None
    """Warnings for the user (hook `systemMessage`s and hook errors); not shown to the model."""


@dataclass(frozen=True, slots=True)
class PostToolDecision:
    """What the PostToolUse / PostToolUseFailure hooks added: context for the model, or a block reason."""

    block_reason: str | None = None
    additional_context: str | None = None
    stop_reason: str | None = None
    """Set when a hook answered `continue: false`: the run must stop (shown to the user)."""
    system_message: str | None = None
    """Warnings for the user (hook `systemMessage`s and hook errors); not shown to the model."""


class ToolInterceptor(Protocol):
    """The hook side of the tool gate (implemented by `bearagent.hooks`)."""

    async def before_tool(self, request: ToolRequest, spec: ToolSpec, context: ToolContext) -> PreToolDecision: ...

    async def after_tool(
        self, request: ToolRequest, spec: ToolSpec, result: ToolResult, context: ToolContext
    ) -> PostToolDecision: ...

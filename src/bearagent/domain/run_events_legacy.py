"""Run event payload versions that BearAgent no longer writes, read only from logs written by older releases.

They live apart from `run_events.py` so that a run, which writes only the latest versions, does not build their
models at start-up (issue 37: each pydantic model costs about a millisecond to define). `run_events` loads this
module the first time an old `(event_type, schema_version)` pair is looked up (`RUN_EVENT_PAYLOADS`,
`payload_type_for`) or one of these names is imported from it, so every caller still finds them there. A payload
never changes meaning: these classes are exactly what `run_events.py` defined before they moved.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.ids import ActivityId, ModelCallId, RunId, SessionId, ToolCallId
from bearagent.domain.run_event_payload import RunEventPayload


class RunCreatedV1(RunEventPayload):
    session_id: SessionId | None = None
    budget_limits: BudgetLimits


class RunSucceededV1(RunEventPayload):
    pass


class RunFailedV1(RunEventPayload):
    pass


class ModelCallRequestedV1(RunEventPayload):
    activity_id: ActivityId
    model_call_id: ModelCallId


class ModelCallRequestedV2(RunEventPayload):
    activity_id: ActivityId
    model_call_id: ModelCallId
    model_ref: str = Field(min_length=1, max_length=256)
    attempt: int = Field(default=1, ge=1, le=100)


class ModelCallCompletedV1(RunEventPayload):
    activity_id: ActivityId
    model_call_id: ModelCallId
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_microusd: int = Field(default=0, ge=0)


class ModelCallFailedV1(RunEventPayload):
    activity_id: ActivityId
    model_call_id: ModelCallId
    usage: TokenUsage = Field(default_factory=TokenUsage)
    cost_microusd: int = Field(default=0, ge=0)


class ToolCallRequestedV1(RunEventPayload):
    activity_id: ActivityId
    tool_call_id: ToolCallId
    tool_name: str = Field(min_length=1, max_length=256)


class ToolCallCompletedV1(RunEventPayload):
    activity_id: ActivityId
    tool_call_id: ToolCallId


class ToolCallFailedV1(RunEventPayload):
    activity_id: ActivityId
    tool_call_id: ToolCallId


class ChildRunFinishedV1(RunEventPayload):
    child_run_id: RunId
    status: Literal["succeeded", "failed", "cancelled"]


LEGACY_RUN_EVENT_PAYLOADS: dict[tuple[str, int], type[RunEventPayload]] = {
    ("RunCreated", 1): RunCreatedV1,
    ("RunSucceeded", 1): RunSucceededV1,
    ("RunFailed", 1): RunFailedV1,
    ("ModelCallRequested", 1): ModelCallRequestedV1,
    ("ModelCallRequested", 2): ModelCallRequestedV2,
    ("ModelCallCompleted", 1): ModelCallCompletedV1,
    ("ModelCallFailed", 1): ModelCallFailedV1,
    ("ToolCallRequested", 1): ToolCallRequestedV1,
    ("ToolCallCompleted", 1): ToolCallCompletedV1,
    ("ToolCallFailed", 1): ToolCallFailedV1,
    ("ChildRunFinished", 1): ChildRunFinishedV1,
}
"""The pairs this module defines; `run_events.LEGACY_PAIRS` names the same pairs without importing it (a test checks
that the two agree)."""

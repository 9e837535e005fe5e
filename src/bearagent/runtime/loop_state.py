"""The working state of one run inside the agent loop, shared by its parts (`loop.py`, `model_calls.py`,
`tool_calls.py`): the activity in flight, the model turn being taken, the loop's counters, and the one way an
activity's Requested + Started facts are admitted."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bearagent.domain.budgets import BudgetUsage, TokenUsage
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import ActivityId, ModelCallId, RunId, ToolCallId
from bearagent.domain.messages import Message, TextPart, ToolCallPart
from bearagent.domain.models import ModelCompleted, ModelRequest, ModelToolCall, StopReason
from bearagent.domain.run_events import (
    ModelCallRequestedV3,
    ModelCallStartedV1,
    ToolCallRequestedV2,
    ToolCallStartedV1,
)
from bearagent.domain.state import ActivityKind
from bearagent.runtime.context_size import ContextState
from bearagent.runtime.plan import AgentPlan
from bearagent.runtime.recorder import RunRecorder

if TYPE_CHECKING:
    from bearagent.domain.run_events_legacy import ModelCallRequestedV2  # an old log's; loaded only to read one

SWITCH_TOOL = "SwitchAgent"
TODO_TOOL = "TodoWrite"


class RunFailure(Exception):
    """Ends the run as failed with `error` (and the text the model had sent so far)."""

    def __init__(self, error: ErrorInfo, partial_text: str = "") -> None:
        super().__init__(error.message)
        self.error = error
        self.partial_text = partial_text


@dataclass(slots=True)
class Active:
    """The activity in flight: closed as failed if the run stops underneath it."""

    kind: ActivityKind
    activity_id: ActivityId
    model_call_id: ModelCallId | None = None
    tool_call_id: ToolCallId | None = None
    tool_name: str = ""
    partial_text: str = ""


@dataclass(slots=True)
class ModelTurn:
    """What one completed model call said: its text and tool calls, bounded."""

    text: str
    tool_calls: list[ModelToolCall]
    completed: ModelCompleted
    text_chars: int = 0
    """Characters of text the model sent; `text` keeps at most `MAX_TURN_TEXT_CHARS` of them."""
    calls_asked: int = 0
    """Tool calls the model asked for; `tool_calls` keeps at most `MAX_TOOL_CALLS_PER_TURN` of them."""
    call_errors: dict[ToolCallId, ErrorInfo] = field(default_factory=dict[ToolCallId, ErrorInfo])
    """Calls that break a limit of the turn (`turn_bounds`): they fail with this error instead of running."""


@dataclass(slots=True)
class LoopState:
    """The loop's state of one run: the current agent's plan (it changes on a switch), counters, the request
    template, the wall-time deadline."""

    plan: AgentPlan
    active: Active | None = None
    switch_count: int = 0
    partial_text: str = ""
    steps: int = 0
    template: ModelRequest | None = None
    template_plan: AgentPlan | None = None
    deadline: float | None = None
    """`time.monotonic()` at which the wall-time budget ends: tools get it to bound work they cannot cancel."""
    continuations_left: int = 0
    """How often the answer being given may still be continued when the output limit cuts it."""
    context: ContextState = field(default_factory=ContextState)
    """Context accounting of the run (`runtime/context_size.py`): estimates, the model's window, compactions."""
    conversation_calls: int | None = None
    """The conversation's place to tell `position_provider` on its first call of this run (`RunSpec.
    conversation_calls`); cleared once told."""
    position_provider: object | None = None
    """The provider of the run's conversation (the starting plan's): a summary model is not told the place."""


async def admit(
    recorder: RunRecorder,
    requested: ModelCallRequestedV2 | ModelCallRequestedV3 | ToolCallRequestedV2,
    started: ModelCallStartedV1 | ToolCallStartedV1,
) -> None:
    """Append an activity's Requested and Started facts in one transaction (both or neither); a budget refusal
    of the request ends the run as a budget stop, with no activity written."""
    try:
        await recorder.append_many((requested, started))
    except BearAgentError as exc:
        if exc.info.category == "budget":
            raise RunFailure(exc.info) from exc
        raise


def assistant_message(turn: ModelTurn) -> Message | None:
    """The assistant message a turn adds to the conversation (None for an empty turn)."""
    parts: list[TextPart | ToolCallPart] = []
    if turn.text:
        parts.append(TextPart(text=turn.text))
    parts.extend(
        ToolCallPart(
            tool_call_id=call.tool_call_id,
            provider_call_id=call.provider_call_id,
            name=call.name,
            arguments=call.arguments,
        )
        for call in turn.tool_calls
    )
    if not parts:
        return None
    return Message(role="assistant", parts=tuple(parts))


def usage_of(exc: BaseException) -> TokenUsage:
    """The usage a failed provider call reports on its exception (none when it has none)."""
    usage = getattr(exc, "usage", None)
    return usage if isinstance(usage, TokenUsage) else TokenUsage()


@dataclass(frozen=True, slots=True)
class RunOutcome:
    run_id: RunId
    status: str
    agent_name: str
    final_text: str
    usage: BudgetUsage
    steps: int
    error: ErrorInfo | None = None
    stop_reason: StopReason | None = None
    new_messages: tuple[Message, ...] = field(default=(), repr=False)

"""A run's log read as steps: model turns, each followed by the tool calls it asked for, and how the run ended.
Pure: events in, `RunSteps` out; what `bearagent replay` re-drives and `bearagent diff` aligns.

A step is a model turn that completed, or that failed for good (the run ended on it). A failed attempt that was
tried again (`ModelCallFailed` followed by another `ModelCallRequested`, whatever its `will_retry` said, so v1 logs
read the same) or that was cut by an interruption belongs to the turn that followed it, as `failed_attempts`. The
tool steps of a turn are the `ToolCallRequested` events after it (what really ran), each with the event that ended
it. Facts recorded while a tool call ran (hook executions, an approval, the child runs of a Task) are attributed to
that call.

Older logs: a v1 `ModelCallCompleted` records no text and no tool calls, a v1 `ToolCallRequested` no arguments and a
v1 result no content. Those fields are `None` here (not recorded), never an empty value that would compare equal
to something. The seeds' tool names (`workspace.read`) are today's `Read` / `Write` (`canonical_tool_name`).

Why one long module: it is the one reader of a log as steps (replay, diff, `inspect`, the server's RunSteps), and
every event type and version it reads must be handled beside the others, or a new one is silently dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from bearagent.domain._base import JsonMapping, JsonValue
from bearagent.domain.budgets import BudgetLimits, TokenUsage
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.models import StopReason
from bearagent.domain.run_events import (
    AgentSwitchedV1,
    ChildRunFinishedV1,
    ChildRunFinishedV2,
    ChildRunStartedV1,
    ContextCompactedV1,
    HookExecutedV1,
    MessageInjectedV1,
    MessageInjectedV2,
    ModelCallCompletedV1,
    ModelCallCompletedV2,
    ModelCallFailedV1,
    ModelCallFailedV2,
    ModelCallRequestedV1,
    ModelCallRequestedV2,
    ModelCallRequestedV3,
    RecordedToolCall,
    RunCancelledV1,
    RunCreatedV1,
    RunCreatedV2,
    RunEventPayload,
    RunFailedV2,
    RunStartedV3,
    RunSucceededV2,
    ToolCallCompletedV1,
    ToolCallCompletedV2,
    ToolCallFailedV1,
    ToolCallFailedV2,
    ToolCallRequestedV1,
    ToolCallRequestedV2,
    parse_run_event_payload,
    run_plan_facts,
)
from bearagent.domain.tools import ToolResult

LEGACY_TOOL_NAMES: Mapping[str, str] = {"workspace.read": "Read", "workspace.write": "Write"}
"""Tool names of the seed documents' logs and what they are called today."""

STOP_FEEDBACK_PREFIX = "Stop hook feedback: "
"""How the loop words the message a blocking Stop hook adds (`MessageInjected` kind `stop_feedback`)."""


def canonical_tool_name(name: str) -> str:
    return LEGACY_TOOL_NAMES.get(name, name)


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """A model call attempt that did not become the turn: `retried` (it failed and was tried again) or
    `interrupted` (the run stopped while it was in flight, and a resumed run asked again)."""

    sequence: int
    kind: str
    code: str
    message: str


@dataclass(frozen=True, slots=True)
class ToolStep:
    tool_call_id: str
    name: str
    requested_sequence: int
    arguments: JsonMapping | None
    """None: not recorded (a v1 `ToolCallRequested`)."""
    provider_call_id: str | None = None
    outcome: str = "unfinished"
    """`succeeded`, `failed`, `abandoned` (a resumed run never redid it), or `unfinished` (no result in the log)."""
    content: str | None = None
    """What the model read; None when not recorded (v1) or when the call has no result."""
    is_error: bool | None = None
    error: ErrorInfo | None = None
    result: ToolResult | None = None
    """The full recorded result (v2)."""
    result_sequence: int | None = None
    hook_decisions: tuple[str, ...] = ()
    """Decisions of the hooks that ran during the call (`HookExecuted`), e.g. `block`, `context`."""
    approval: str | None = None
    """`asked`, or the answer to the approval the call waited for."""
    child_facts: tuple[Event, ...] = ()
    """`ChildRunStarted` / `ChildRunFinished` of the child runs the call started (a Task or an action tool)."""

    @property
    def child_run_ids(self) -> tuple[str, ...]:
        return tuple(str(e.payload["child_run_id"]) for e in self.child_facts if e.event_type == "ChildRunStarted")


@dataclass(frozen=True, slots=True)
class ModelStep:
    index: int
    """1-based position among the run's turns."""
    requested_sequence: int
    agent: str | None
    usage: TokenUsage
    text: str | None
    """None: not recorded (a v1 `ModelCallCompleted`); for a failed turn, the partial text."""
    tool_calls: tuple[RecordedToolCall, ...] | None
    """What the model asked for; None when not recorded (v1)."""
    stop_reason: StopReason | None = None
    provider_request_id: str | None = None
    model: str | None = None
    refusal: str | None = None
    error: ErrorInfo | None = None
    """Set when the call failed for good (the run ended on it)."""
    failed_attempts: tuple[FailedAttempt, ...] = ()
    tools: tuple[ToolStep, ...] = ()
    switched_to: str | None = None
    stop_feedback: str | None = None
    """The reason a Stop hook gave for keeping the agent going after this turn."""
    ended_sequence: int | None = None
    """The `ModelCallCompleted` (or final `ModelCallFailed`) that ended the turn; None while it is in flight."""
    switched_sequence: int | None = None
    """The `AgentSwitched` after this turn's `SwitchAgent` call, when there was one."""


@dataclass(frozen=True, slots=True)
class RunSteps:
    run_id: str
    created_version: int
    budgets: BudgetLimits
    turns: tuple[ModelStep, ...]
    status: str
    agent_name: str | None = None
    goal: str | None = None
    parent_run_id: str | None = None
    depth: int = 0
    trigger_type: str = "message"
    trigger_ref: str | None = None
    model_ref: str | None = None
    prompt_hash: str | None = None
    tool_spec_versions: Mapping[str, str] = field(default_factory=dict[str, str])
    prompt_context: str | None = None
    final_text: str | None = None
    error: ErrorInfo | None = None
    children: tuple[str, ...] = ()
    """Every child run, in the order they started (Task and action calls, hook judges)."""
    hook_executions: int = 0
    interruptions: int = 0
    last_sequence: int = 0
    model_call_in_flight: int | None = None
    """The sequence of a `ModelCallRequested` the log has no end for (the call is running, or was cut)."""
    compactions: int = 0
    """`ContextCompacted` facts: the summary calls are not turns (a replay, which does not compact, skips them)."""

    @property
    def tool_steps(self) -> tuple[ToolStep, ...]:
        return tuple(tool for turn in self.turns for tool in turn.tools)

    @property
    def recorded_with_v1(self) -> bool:
        """The model turns or tool calls were recorded by v1 events (no text, arguments or results)."""
        return any(t.tool_calls is None for t in self.turns) or any(t.arguments is None for t in self.tool_steps)


# ---- reading a log -------------------------------------------------------------------------------------------


class _Turn:
    def __init__(self, index: int, sequence: int, agent: str | None, attempts: list[FailedAttempt]) -> None:
        self.index = index
        self.sequence = sequence
        self.agent = agent
        self.attempts = attempts
        self.usage = TokenUsage()
        self.text: str | None = None
        self.tool_calls: tuple[RecordedToolCall, ...] | None = None
        self.stop_reason: StopReason | None = None
        self.provider_request_id: str | None = None
        self.model: str | None = None
        self.refusal: str | None = None
        self.error: ErrorInfo | None = None
        self.tools: list[ToolStep] = []
        self.switched_to: str | None = None
        self.stop_feedback: str | None = None
        self.ended_sequence: int | None = None
        self.switched_sequence: int | None = None

    def freeze(self) -> ModelStep:
        return ModelStep(
            index=self.index,
            requested_sequence=self.sequence,
            agent=self.agent,
            usage=self.usage,
            text=self.text,
            tool_calls=self.tool_calls,
            stop_reason=self.stop_reason,
            provider_request_id=self.provider_request_id,
            model=self.model,
            refusal=self.refusal,
            error=self.error,
            failed_attempts=tuple(self.attempts),
            tools=tuple(self.tools),
            switched_to=self.switched_to,
            stop_feedback=self.stop_feedback,
            ended_sequence=self.ended_sequence,
            switched_sequence=self.switched_sequence,
        )


class _Reader:
    """Folds one run's events into steps (one pass, in sequence order)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.created: RunCreatedV2 | None = None
        self.started_plan: RunStartedV3 | None = None
        """The RunStarted of a run recorded unplanned (RunCreated v4 `planned: false`): it carries the plan."""
        self.created_version = 0
        self.budgets = BudgetLimits()
        self.agent: str | None = None
        self.turns: list[_Turn] = []
        self.attempts: list[FailedAttempt] = []
        self.requested: int | None = None
        """Sequence of the model call in flight (requested, not yet ended)."""
        self.failed: tuple[int, ModelCallFailedV1 | ModelCallFailedV2] | None = None
        """The last model call failure, until a new request shows it was retried (or the run ends on it)."""
        self.failed_at: int | None = None
        """The sequence of that `ModelCallFailed`."""
        self.open_tool: ToolStep | None = None
        self.status: str | None = None
        self.final_text: str | None = None
        self.error: ErrorInfo | None = None
        self.children: list[str] = []
        self.prompt_context: str | None = None
        self.hooks = 0
        self.interruptions = 0
        self.last_sequence = 0
        self.compacting: int | None = None
        """Sequence of a compaction's summary call in flight (`ModelCallRequested` v3, purpose `compaction`)."""
        self.compactions = 0

    # -- model calls --

    def _settle_failure(self, *, retried: bool | None) -> None:
        """The pending failure becomes a failed attempt (`retried`) or the run's last, failed turn. None: as its
        `will_retry` says (a log that stops right after a failure)."""
        if self.failed is None:
            return
        sequence, failure = self.failed
        self.failed = None
        v2 = failure if isinstance(failure, ModelCallFailedV2) else None
        if retried is None:
            retried = v2 is not None and v2.will_retry
        if retried:
            code, message = (v2.error.code, v2.error.message) if v2 is not None else ("unknown", "not recorded (v1)")
            self.attempts.append(FailedAttempt(sequence, "retried", code, message))
            return
        turn = self._new_turn(sequence)
        turn.usage = failure.usage
        turn.ended_sequence = self.failed_at
        if v2 is not None:
            turn.text, turn.tool_calls, turn.error = v2.partial_text, (), v2.error
        else:
            turn.error = ErrorInfo.of("internal", "not_recorded", "the model call failed (a v1 log says no more)")

    def _new_turn(self, sequence: int) -> _Turn:
        turn = _Turn(len(self.turns) + 1, self.requested or sequence, self.agent, self.attempts)
        self.attempts = []
        self.requested = None
        self.turns.append(turn)
        return turn

    def model_requested(self, sequence: int) -> None:
        self._close_tool()
        self._settle_failure(retried=True)
        if self.requested is not None:  # the previous call never ended: the run was interrupted and resumed
            self.attempts.append(
                FailedAttempt(self.requested, "interrupted", "run.interrupted", "the run stopped during this call")
            )
        self.requested = sequence

    def model_completed(self, sequence: int, payload: ModelCallCompletedV1 | ModelCallCompletedV2) -> None:
        turn = self._new_turn(sequence)
        turn.usage = payload.usage
        turn.ended_sequence = sequence
        if isinstance(payload, ModelCallCompletedV2):
            turn.text, turn.tool_calls, turn.stop_reason = payload.text, payload.tool_calls, payload.stop_reason
            turn.provider_request_id, turn.model, turn.refusal = (
                payload.provider_request_id,
                payload.model,
                payload.refusal,
            )

    # -- tool calls --

    def tool_requested(self, sequence: int, payload: ToolCallRequestedV1 | ToolCallRequestedV2) -> None:
        self._close_tool()
        self.open_tool = ToolStep(
            tool_call_id=str(payload.tool_call_id),
            name=payload.tool_name,
            requested_sequence=sequence,
            arguments=payload.arguments if isinstance(payload, ToolCallRequestedV2) else None,
            provider_call_id=payload.provider_call_id if isinstance(payload, ToolCallRequestedV2) else None,
        )

    def tool_ended(self, sequence: int, outcome: str, result: ToolResult | None, *, is_error: bool) -> None:
        tool = self.open_tool
        if tool is None:
            return
        self.open_tool = _replace(
            tool,
            outcome=outcome,
            result=result,
            result_sequence=sequence,
            content=result.content if result is not None else None,
            is_error=result.is_error if result is not None else is_error,
            error=result.error if result is not None else None,
        )
        self._close_tool()

    def tool_abandoned(self, sequence: int, payload: Mapping[str, JsonValue]) -> None:
        tool = self.open_tool
        if tool is None or str(payload.get("tool_call_id")) != tool.tool_call_id:
            return
        message = str(payload.get("message") or "the run was interrupted during this call; its outcome is unknown")
        error = ErrorInfo.of("tool", "abandoned", message[:2_000])
        self.open_tool = _replace(
            tool, outcome="abandoned", result_sequence=sequence, content=message, is_error=True, error=error
        )
        self._close_tool()

    def _close_tool(self) -> None:
        tool, self.open_tool = self.open_tool, None
        if tool is None:
            return
        turn = self.turns[-1] if self.turns else self._new_turn(tool.requested_sequence)
        for i, earlier in enumerate(turn.tools):  # requested again (a resumed run retried a read-only call)
            if earlier.tool_call_id == tool.tool_call_id and earlier.outcome == "unfinished":
                turn.tools[i] = tool
                return
        turn.tools.append(tool)

    # -- the rest --

    def feed(self, event: Event, payload: RunEventPayload | None) -> None:
        sequence = event.sequence
        self.last_sequence = sequence
        kind = event.event_type
        if payload is None:  # an event type this reader does not type (newer facts are read by name)
            self._by_name(kind, sequence, event.payload)
            return
        if isinstance(payload, (RunCreatedV1, RunCreatedV2)):
            self.created_version = event.schema_version
            self.budgets = payload.budget_limits
            if isinstance(payload, RunCreatedV2):
                self.agent = payload.agent_name
                self.created = payload
        elif isinstance(payload, RunStartedV3):
            self.started_plan = payload
        elif isinstance(payload, ModelCallRequestedV3) and payload.purpose == "compaction":
            self._close_tool()
            self.compacting = sequence
        elif isinstance(payload, ContextCompactedV1):
            self.compacting = None
            self.compactions += 1
        elif isinstance(payload, (ModelCallFailedV1, ModelCallFailedV2)) and self.compacting is not None:
            self.compacting = None  # a failed summary call is no turn (RunFailed says so when the run ended on it)
        elif isinstance(payload, (ModelCallRequestedV1, ModelCallRequestedV2, ModelCallRequestedV3)):
            self.model_requested(sequence)
        elif isinstance(payload, (ModelCallCompletedV1, ModelCallCompletedV2)):
            self.model_completed(sequence, payload)
        elif isinstance(payload, (ModelCallFailedV1, ModelCallFailedV2)):
            self.failed = (self.requested or sequence, payload)
            self.failed_at = sequence
            self.requested = None
        elif isinstance(payload, (ToolCallRequestedV1, ToolCallRequestedV2)):
            self.tool_requested(sequence, payload)
        elif isinstance(payload, (ToolCallCompletedV1, ToolCallCompletedV2)):
            self.tool_ended(sequence, "succeeded", getattr(payload, "result", None), is_error=False)
        elif isinstance(payload, (ToolCallFailedV1, ToolCallFailedV2)):
            self.tool_ended(sequence, "failed", getattr(payload, "result", None), is_error=True)
        elif isinstance(payload, HookExecutedV1):
            self.hooks += 1
            if self.open_tool is not None:
                decisions = (*self.open_tool.hook_decisions, payload.decision)
                self.open_tool = _replace(self.open_tool, hook_decisions=decisions)
        elif isinstance(payload, ChildRunStartedV1):
            self.children.append(str(payload.child_run_id))
            tool = self.open_tool
            if tool is not None and str(payload.tool_call_id) == tool.tool_call_id:
                self.open_tool = _replace(tool, child_facts=(*tool.child_facts, event))
        elif isinstance(payload, (ChildRunFinishedV1, ChildRunFinishedV2)):
            tool = self.open_tool
            if tool is not None and str(payload.child_run_id) in tool.child_run_ids:
                self.open_tool = _replace(tool, child_facts=(*tool.child_facts, event))
        elif isinstance(payload, AgentSwitchedV1):
            self.agent = payload.to_agent
            if self.turns:
                self.turns[-1].switched_to = payload.to_agent
                self.turns[-1].switched_sequence = sequence
        elif isinstance(payload, MessageInjectedV1 | MessageInjectedV2):
            if payload.kind == "continuation":
                pass  # the loop asks for the rest of a cut answer itself, on replay too
            elif payload.kind == "prompt_context":
                self.prompt_context = payload.text
            elif self.turns:
                text = payload.text
                self.turns[-1].stop_feedback = text.removeprefix(STOP_FEEDBACK_PREFIX)
        elif kind in ("RunSucceeded", "RunFailed", "RunCancelled"):
            self._close_tool()
            self._settle_failure(retried=False)
            self.status = {"RunSucceeded": "succeeded", "RunFailed": "failed", "RunCancelled": "cancelled"}[kind]
            if isinstance(payload, RunSucceededV2):
                self.final_text = payload.final_text
            elif isinstance(payload, RunFailedV2):
                self.error = payload.error
            elif isinstance(payload, RunCancelledV1):
                self.error = ErrorInfo.of("cancelled", "by_caller", payload.reason or "cancelled")
        else:
            self._by_name(kind, sequence, event.payload)

    def _by_name(self, kind: str, sequence: int, payload: Mapping[str, JsonValue]) -> None:
        if kind == "ToolCallAbandoned":
            self.tool_abandoned(sequence, payload)
        elif kind == "RunInterrupted":
            self.interruptions += 1
        elif kind in ("ApprovalRequested", "ApprovalResolved") and self.open_tool is not None:
            decision = payload.get("decision") if kind == "ApprovalResolved" else "asked"
            self.open_tool = _replace(self.open_tool, approval=str(decision))

    def result(self, status: str | None) -> RunSteps:
        self._close_tool()
        self._settle_failure(retried=None)
        c = self.created
        plan = run_plan_facts(c, self.started_plan) if c is not None else None
        return RunSteps(
            run_id=self.run_id,
            created_version=self.created_version,
            budgets=self.budgets,
            turns=tuple(turn.freeze() for turn in self.turns),
            status=self.status or status or "unknown",
            agent_name=c.agent_name if c is not None else None,
            goal=c.goal if c is not None else None,
            parent_run_id=str(c.parent_run_id) if c is not None and c.parent_run_id is not None else None,
            depth=c.depth if c is not None else 0,
            trigger_type=c.trigger_type if c is not None else "message",
            trigger_ref=c.trigger_ref if c is not None else None,
            model_ref=plan.model_ref if plan is not None else None,
            prompt_hash=plan.prompt_hash if plan is not None else None,
            tool_spec_versions=dict(plan.tool_spec_versions) if plan is not None else {},
            prompt_context=self.prompt_context,
            final_text=self.final_text,
            error=self.error,
            children=tuple(self.children),
            hook_executions=self.hooks,
            interruptions=self.interruptions,
            last_sequence=self.last_sequence,
            model_call_in_flight=self.requested,
            compactions=self.compactions,
        )


def _replace(step: ToolStep, **changes: object) -> ToolStep:
    return replace(step, **changes)  # pyright: ignore[reportArgumentType]


def _parsed(event: Event) -> RunEventPayload | None:
    try:
        return parse_run_event_payload(event.event_type, event.schema_version, event.payload)
    except BearAgentError:
        return None  # unknown or broken: `log_check` says so; the steps are read from what can be read


def steps_of(run_id: str, events: Iterable[Event], *, status: str | None = None) -> RunSteps:
    """The steps of one run from its events (in sequence order). `status` is the run's status as the reducer
    folded it (used when the log has no terminal event: `running`, `interrupted`, `waiting`)."""
    reader = _Reader(run_id)
    for event in events:
        reader.feed(event, _parsed(event))
    return reader.result(status)

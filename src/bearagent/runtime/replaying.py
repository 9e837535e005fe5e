"""The parts that let the real `AgentLoop` re-drive a recorded run: a model provider that answers with the
recorded turns, a tool caller that re-executes only read-only calls, and loop hooks that repeat what the
recorded hooks decided without running them. Ports only (no adapter); `service/replay.py` wires them to a workspace.

Ids: the provider hands the loop every tool call with its recorded `tool_call_id` and provider call id, so the
replayed log names the same calls and each result is compared with the recorded result of the same id. Activity,
model call and event ids are new (they name facts of the replay, not of the recorded run).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field

from bearagent.domain.budgets import TokenUsage
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.ids import ToolCallId
from bearagent.domain.models import (
    ModelCompleted,
    ModelEvent,
    ModelRequest,
    ModelToolCall,
    StopReason,
    text_deltas,
)
from bearagent.domain.run_events import RecordedToolCall, parse_run_event_payload
from bearagent.domain.state import TERMINAL_RUN_STATUSES
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.ports import ToolContext
from bearagent.runtime.plan import BatchedCall, ModelRequestDecision, PromptDecision, StopDecision, ToolCaller
from bearagent.runtime.run_context import current_run
from bearagent.runtime.run_steps import ModelStep, RunSteps, ToolStep, canonical_tool_name

SHAPING_HOOK_DECISIONS = frozenset({"deny", "block", "ask", "rewrite", "context"})
"""Hook decisions that changed a tool call or its result: on replay (no hooks) the recorded result is reused."""
UNFINISHED_CATEGORIES = frozenset({"cancelled", "budget"})
"""A recorded failure of these categories means the call was stopped, not that the tool said so."""


class ReplayedModelFailure(BearAgentError):
    """A recorded model call that failed for good, raised again (with its usage) so the loop ends the same way."""

    def __init__(self, info: ErrorInfo, usage: TokenUsage) -> None:
        super().__init__(info)
        self.usage = usage


class RecordedTurnsProvider:
    """A `ModelProvider` that streams the recorded turns of one run, in order; no model is called. Asking for more
    turns than the log holds ends the run as the recorded run ended (its error), or fails with
    `validation.replay_diverged` when the recorded run had succeeded by then."""

    def __init__(self, steps: RunSteps) -> None:
        self._steps = steps
        self.position = 0
        self.requests: list[ModelRequest] = []

    @property
    def turns(self) -> tuple[ModelStep, ...]:
        return self._steps.turns

    def current(self) -> ModelStep | None:
        """The turn streamed last."""
        return self.turns[self.position - 1] if self.position > 0 else None

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self._stream(request)

    async def _stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        self.requests.append(request)
        if self.position >= len(self.turns):
            raise self._exhausted()
        turn = self.turns[self.position]
        self.position += 1
        for delta in text_deltas(turn.text or ""):
            yield delta
        if turn.error is not None:
            raise ReplayedModelFailure(turn.error.model_copy(update={"retryable": False}), turn.usage)
        calls = calls_of(turn)
        for call in calls:
            yield ModelToolCall(
                tool_call_id=call.tool_call_id,
                provider_call_id=call.provider_call_id,
                name=call.name,
                arguments=call.arguments,
                invalid_arguments=call.invalid_arguments,
            )
        stop: StopReason = turn.stop_reason or ("tool_use" if calls else "end_turn")
        yield ModelCompleted(
            provider_request_id=turn.provider_request_id,
            model=turn.model,
            stop_reason=stop,
            usage=turn.usage,
            refusal=turn.refusal,
        )

    def _exhausted(self) -> BearAgentError:
        steps = self._steps
        if steps.status in TERMINAL_RUN_STATUSES and steps.status != "succeeded" and steps.error is not None:
            return BearAgentError(steps.error.model_copy(update={"retryable": False}))
        return BearAgentError(
            ErrorInfo.of(
                "validation",
                "replay_diverged",
                f"the replay asked for model call {self.position + 1}, but the log of run {steps.run_id} records "
                f"{len(self.turns)}",
            )
        )


def calls_of(turn: ModelStep) -> tuple[RecordedToolCall, ...]:
    """The tool calls a turn asked for: as recorded (v2), else rebuilt from the tool calls that followed it (v1:
    today's tool names, the arguments were not recorded)."""
    if turn.tool_calls is not None:
        return turn.tool_calls
    return tuple(
        RecordedToolCall(
            tool_call_id=ToolCallId(tool.tool_call_id),
            provider_call_id=tool.provider_call_id,
            name=canonical_tool_name(tool.name),
            arguments=tool.arguments or {},
        )
        for tool in turn.tools
    )


def reuse_reason(tool: ToolStep, side_effect: str | None) -> str | None:
    """Why a recorded call is not executed again on replay (its recorded result is used), or None when it is
    re-executed: only a finished read-only call with recorded arguments that no hook or person decided runs again."""
    if side_effect is None:
        return "not a tool of this agent today: recorded result reused"
    if side_effect != "read_only":
        return f"{side_effect} tool: not executed, recorded result reused"
    if tool.arguments is None:
        return "v1 log: the arguments were not recorded, recorded outcome reused"
    if tool.outcome in ("unfinished", "abandoned") or (
        tool.error is not None and tool.error.category in UNFINISHED_CATEGORIES
    ):
        return "the call did not finish: recorded outcome reused"
    if tool.approval is not None:
        return "a person answered an approval for it: recorded result reused"
    if SHAPING_HOOK_DECISIONS & set(tool.hook_decisions):
        return "a hook decided this call (hooks do not fire on replay): recorded result reused"
    return None


def recorded_result(tool: ToolStep, request: ToolRequest) -> ToolResult:
    """The recorded result of `tool`, or the outcome a v1 log recorded (succeeded or failed, nothing more)."""
    if tool.result is not None:
        return tool.result.model_copy(update={"tool_call_id": request.tool_call_id, "tool_name": request.name})
    if tool.is_error or tool.outcome in ("unfinished", "abandoned"):
        error = tool.error or ErrorInfo.of("tool", "not_recorded", "the log records that this call failed, not why")
        return ToolResult.failure(request, error)
    return ToolResult(tool_call_id=request.tool_call_id, tool_name=request.name, status="succeeded", content="")


@dataclass(slots=True)
class ReplayToolCaller:
    """The loop's tool caller on replay: a read-only call (as `side_effects` classes the agent's tools) goes through
    the real `gate`; every other call returns its recorded result without executing. The child runs a recorded call
    started (Task, action tools) are recorded again with it (their usage is charged to the run as before); the
    child runs themselves are replayed from their own logs."""

    gate: ToolCaller
    recorded: Mapping[str, ToolStep]
    side_effects: Callable[[str], str | None]
    executed: set[str] = field(default_factory=set[str])
    reused: dict[str, str] = field(default_factory=dict[str, str])

    async def call(self, request: ToolRequest, context: ToolContext) -> ToolResult:
        call_id = str(request.tool_call_id)
        tool = self.recorded.get(call_id)
        if tool is None:
            return ToolResult.failure(
                request,
                ErrorInfo.of("validation", "replay_unrecorded", f"the log records no call {call_id} of {request.name}"),
            )
        await _record_child_facts(tool)
        reason = reuse_reason(tool, self.side_effects(request.name))
        if reason is None:
            self.executed.add(call_id)
            return await self.gate.call(request, context)
        self.reused[call_id] = reason
        return recorded_result(tool, request)


async def _record_child_facts(tool: ToolStep) -> None:
    run = current_run.get()
    if run is None:
        return
    for event in tool.child_facts:
        await run.recorder.append(parse_run_event_payload(event.event_type, event.schema_version, event.payload))


class ReplayedLoopHooks:
    """The loop's hook points on replay. No hook runs; what the recorded hooks decided that shaped the loop is
    repeated: the context a UserPromptSubmit hook added, the reasons Stop hooks gave to keep the agent going, and a
    blocked prompt or model request that ended the run."""

    def __init__(self, steps: RunSteps, provider: RecordedTurnsProvider) -> None:
        self._steps = steps
        self._provider = provider

    def _blocked(self, code: str, prefix: str) -> str | None:
        error = self._steps.error
        if error is None or error.code != code:
            return None
        return error.message.split(prefix, 1)[-1] if prefix in error.message else error.message

    async def user_prompt_submit(self, run_id: object, agent: str, prompt: str) -> PromptDecision:
        blocked = self._blocked("hook.prompt_blocked", "blocked the prompt: ") if not self._steps.turns else None
        return PromptDecision(block_reason=blocked, additional_context=self._steps.prompt_context)

    async def pre_model_request(self, run_id: object, agent: str, request: ModelRequest) -> ModelRequestDecision:
        blocked = None
        if self._provider.position >= len(self._steps.turns):
            blocked = self._blocked("hook.model_request_blocked", "blocked the call: ")
        return ModelRequestDecision(request=request, block_reason=blocked)

    async def stop(self, run_id: object, agent: str, final_text: str, stop_hook_active: bool) -> StopDecision:
        turn = self._provider.current()
        return StopDecision(block_reason=turn.stop_feedback if turn is not None else None)

    async def post_tool_batch(self, run_id: object, agent: str, calls: Sequence[BatchedCall]) -> StopDecision:
        blocked = None
        if self._provider.position >= len(self._steps.turns):
            blocked = self._blocked("hook.batch_blocked", "after a parallel batch: ")
        return StopDecision(block_reason=blocked)

    async def pre_compact(self, run_id: object, agent: str, trigger: str, custom_instructions: str) -> StopDecision:
        return StopDecision()  # a replay does not compact (`service/replay.py`)

    async def post_compact(self, run_id: object, agent: str, trigger: str, summary: str) -> None:
        return None

    async def stop_failure(self, run_id: object, agent: str, error: ErrorInfo, partial_text: str) -> None:
        return None  # observation only: nothing it did shaped the run

    async def notification(self, run_id: object, agent: str, message: str, notification_type: str) -> None:
        return None  # observation only

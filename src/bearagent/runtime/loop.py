"""AgentLoop: the trusted scheduler of one run, from the user's goal to success, failure, cancel or budget stop.

goal -> bounded ModelRequest -> ModelCallRequested (budget check) -> provider stream -> ModelCallCompleted ->
each tool call through the gate -> ToolCallCompleted/Failed -> bounded result into the next messages -> ... ->
RunSucceeded | RunFailed | RunCancelled. Every step is a fact appended through the reducer before the next starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Literal

from bearagent.domain.budgets import BudgetUsage, TokenUsage
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import ActivityId, IdGenerator, ModelCallId, RunId, ToolCallId
from bearagent.domain.messages import Message, TextPart, ToolCallPart, ToolResultPart
from bearagent.domain.models import (
    MAX_TOOL_CALLS_PER_TURN,
    MAX_TURN_TEXT_CHARS,
    ModelCompleted,
    ModelRequest,
    ModelToolCall,
    StopReason,
    TextDelta,
)
from bearagent.domain.pricing import cost_microusd
from bearagent.domain.run_events import (
    AgentSwitchedV1,
    MessageInjectedV1,
    ModelCallCompletedV2,
    ModelCallFailedV2,
    ModelCallRequestedV2,
    ModelCallStartedV1,
    RecordedToolCall,
    RunCancelledV1,
    RunCreatedV2,
    RunFailedV2,
    RunOwner,
    RunResumedV1,
    RunStartedV1,
    RunStartedV2,
    RunSucceededV2,
    TodosUpdatedV1,
    ToolCallAbandonedV1,
    ToolCallCompletedV2,
    ToolCallFailedV2,
    ToolCallRequestedV2,
    ToolCallStartedV1,
)
from bearagent.domain.state import ActivityKind
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.ports import Clock, RunStorage, ToolContext
from bearagent.runtime.approvals import RunSuspended
from bearagent.runtime.context import ContextBuilder, bound_for_model
from bearagent.runtime.cursor import InFlightCall, RunCursor
from bearagent.runtime.observer import NullObserver, RunObserver
from bearagent.runtime.plan import STOP_BLOCK_CAP, AgentPlan, LoopHooks, Planner, RunSpec
from bearagent.runtime.recorder import RunRecorder
from bearagent.runtime.retry import RetryPolicy
from bearagent.runtime.run_context import CurrentRun, current_run
from bearagent.runtime.run_writer import RunWriter
from bearagent.runtime.turn_bounds import bound_turn

_log = logging.getLogger("bearagent.runtime")

SWITCH_TOOL = "SwitchAgent"
ABANDONED_MESSAGE = (
    "interrupted; the outcome is unknown: check before you redo it. (The run was interrupted while {tool} was "
    "running, and BearAgent never runs a call that may have had effects twice on its own.)"
)
TODO_TOOL = "TodoWrite"
DEFAULT_STOP_HOOK_CAP = STOP_BLOCK_CAP


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


class _RunFailure(Exception):
    def __init__(self, error: ErrorInfo, partial_text: str = "") -> None:
        super().__init__(error.message)
        self.error = error
        self.partial_text = partial_text


@dataclass(slots=True)
class _Active:
    kind: ActivityKind
    activity_id: ActivityId
    model_call_id: ModelCallId | None = None
    tool_call_id: ToolCallId | None = None
    tool_name: str = ""
    partial_text: str = ""


@dataclass(slots=True)
class _ModelTurn:
    text: str
    tool_calls: list[ModelToolCall]
    completed: ModelCompleted
    text_chars: int = 0
    """Characters of text the model sent; `text` keeps at most `MAX_TURN_TEXT_CHARS` of them."""
    calls_asked: int = 0
    """Tool calls the model asked for; `tool_calls` keeps at most `MAX_TOOL_CALLS_PER_TURN` of them."""
    call_errors: dict[ToolCallId, ErrorInfo] = field(default_factory=dict[ToolCallId, ErrorInfo])
    """Calls that break a limit of the turn (`turn_bounds`): they fail with this error instead of running."""


class AgentLoop:
    def __init__(
        self,
        *,
        store: RunStorage,
        clock: Clock,
        ids: IdGenerator,
        retry: RetryPolicy | None = None,
        hooks: LoopHooks | None = None,
        observer: RunObserver | None = None,
        stop_hook_cap: int = DEFAULT_STOP_HOOK_CAP,
        context_builder: ContextBuilder | None = None,
        event_sinks: Sequence[Callable[[Event], None]] = (),
        writer: RunWriter | None = None,
        owner: RunOwner | None = None,
        hold: Callable[[RunId], AbstractAsyncContextManager[None]] | None = None,
    ) -> None:
        """`writer` is the process's writer of `store` (its cache and subscribers); one of its own by default.
        `owner` is recorded as the run's lease holder (RunStarted v2, RunResumed) and `hold` keeps its heartbeat
        while the loop executes it."""
        self._writer = writer if writer is not None else RunWriter(store)
        self._clock = clock
        self._ids = ids
        self._retry = retry or RetryPolicy()
        self._hooks = hooks
        self._observer: RunObserver = observer or NullObserver()
        self._stop_hook_cap = stop_hook_cap
        self._context = context_builder or ContextBuilder()
        self._sinks = tuple(event_sinks)
        self._owner = owner
        self._hold = hold

    async def run(self, spec: RunSpec, plan: AgentPlan, planner: Planner | None = None) -> RunOutcome:
        """Run to a terminal state. Cancellation is recorded (RunCancelled) and then re-raised."""
        run_id = spec.run_id or self._ids.new(RunId)
        recorder = RunRecorder(writer=self._writer, clock=self._clock, ids=self._ids, run_id=run_id, sinks=self._sinks)
        state = _LoopState(plan=plan)
        try:
            await recorder.append(
                RunCreatedV2(
                    session_id=spec.session_id,
                    budget_limits=spec.budgets,
                    goal=spec.goal,
                    agent_name=plan.agent_name,
                    prompt_hash=self._context.prompt_hash(plan.system_prompt),
                    tool_spec_versions=plan.tool_spec_versions,
                    model_ref=plan.model_ref,
                    parent_run_id=spec.parent_run_id,
                    trigger_type=spec.trigger_type,
                    trigger_ref=spec.trigger_ref,
                    depth=spec.depth,
                )
            )
            await recorder.append(RunStartedV1() if self._owner is None else RunStartedV2(owner=self._owner))
            if spec.prelude:
                await recorder.append_many(spec.prelude)
        except asyncio.CancelledError:
            # cancelled while the run was being recorded (a commit finishes before the cancellation goes on): once
            # the run exists, its log still ends with RunCancelled instead of staying queued or running forever
            if recorder.projection is not None:
                with contextlib.suppress(BearAgentError):
                    await recorder.append(RunCancelledV1(reason="cancelled by the caller"))
            raise
        self._observer.run_started(run_id, plan.agent_name)
        return await self._execute(spec, recorder, state, planner, None, spec.budgets.max_wall_time_ms)

    async def resume(
        self,
        spec: RunSpec,
        plan: AgentPlan,
        planner: Planner | None,
        cursor: RunCursor,
        *,
        changes: Sequence[str] = (),
        wall_time_used_ms: int = 0,
        reason: Literal["interrupted", "approval"] = "interrupted",
    ) -> RunOutcome:
        """Continue the stopped run `spec.run_id` from `cursor` (its events): record `RunResumed` with this loop's
        owner, then run on from where it stood, never repeating a completed model call nor running a side-effecting
        tool call a second time. Its wall-time budget is what the run has left."""
        assert spec.run_id is not None
        recorder = RunRecorder(
            writer=self._writer,
            clock=self._clock,
            ids=self._ids,
            run_id=spec.run_id,
            sinks=self._sinks,
            last_sequence=cursor.last_sequence,
        )
        state = _LoopState(plan=plan, switch_count=cursor.switch_count, steps=cursor.steps)
        if self._owner is None:
            raise ValueError("resuming a run needs the owner that takes it over")
        await recorder.append(RunResumedV1(owner=self._owner, reason=reason, changes=tuple(changes)))
        self._observer.run_started(spec.run_id, plan.agent_name)
        for change in changes:
            self._observer.notice(spec.run_id, f"since this run started: {change}")
        remaining = max(0, spec.budgets.max_wall_time_ms - wall_time_used_ms)
        return await self._execute(spec, recorder, state, planner, cursor, remaining)

    async def _execute(
        self,
        spec: RunSpec,
        recorder: RunRecorder,
        state: _LoopState,
        planner: Planner | None,
        cursor: RunCursor | None,
        remaining_ms: int,
    ) -> RunOutcome:
        run_id = recorder.run_id
        scope = asyncio.timeout(remaining_ms / 1000.0)
        state.deadline = time.monotonic() + remaining_ms / 1000.0

        def extend_deadline(seconds: float) -> None:
            when = scope.when()
            if when is not None:
                scope.reschedule(when + seconds)
            if state.deadline is not None:
                state.deadline += seconds

        token = current_run.set(
            CurrentRun(
                recorder=recorder,
                spec=spec,
                observer=self._observer,
                agent_name=lambda: state.plan.agent_name,
                tool_names=lambda: frozenset(state.plan.tools),
                model_ref=lambda: state.plan.model_ref,
                extend_deadline=extend_deadline,
            )
        )
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self._hold is not None:
                    await stack.enter_async_context(self._hold(run_id))
                async with scope:
                    if cursor is None:
                        start = await self._begin(spec, recorder, state)
                    else:
                        start = self._continue(spec, state, cursor)
                    return await self._drive(spec, recorder, state, planner, start)
        except RunSuspended as suspended:
            self._observer.notice(run_id, f"the run waits for approval {suspended.approval_id}")
            projection = recorder.projection
            return RunOutcome(
                run_id=run_id,
                status="waiting",
                agent_name=state.plan.agent_name,
                final_text="",
                usage=projection.usage if projection is not None else BudgetUsage(),
                steps=state.steps,
            )
        except TimeoutError:
            if not scope.expired():
                error = ErrorInfo.of("timeout", "unexpected", "an operation of the run timed out")
                return await self._fail(recorder, state, error, state.partial_text)
            error = ErrorInfo.of(
                "budget",
                "max_wall_time_ms",
                f"the run exceeded its wall-time budget of {spec.budgets.max_wall_time_ms} ms",
                limit=spec.budgets.max_wall_time_ms,
            )
            return await self._fail(recorder, state, error, state.partial_text)
        except _RunFailure as failure:
            return await self._fail(recorder, state, failure.error, failure.partial_text)
        except BearAgentError as exc:
            return await self._fail(recorder, state, exc.info, state.partial_text)
        except Exception as exc:  # a bug must still end the run in the log, never leave it dangling
            _log.exception("run %s failed unexpectedly", run_id)
            error = ErrorInfo.of(
                "internal", "unexpected", f"the run failed unexpectedly ({type(exc).__name__}); see the log for details"
            )
            return await self._fail(recorder, state, error, state.partial_text)
        except asyncio.CancelledError:
            cancelled = ErrorInfo.of("cancelled", "by_caller", "the run was cancelled")
            await self._close_active(recorder, state, cancelled)
            with contextlib.suppress(BearAgentError):
                await recorder.append(RunCancelledV1(reason="cancelled by the caller"))
            self._observer.run_failed(run_id, cancelled)
            raise
        finally:
            current_run.reset(token)

    # ---- the loop --------------------------------------------------------------------------------------------

    async def _begin(self, spec: RunSpec, recorder: RunRecorder, state: _LoopState) -> _Start:
        """A new run's first messages: the goal, with what a UserPromptSubmit hook adds (or its block)."""
        goal = spec.goal
        if self._hooks is not None:
            decision = await self._hooks.user_prompt_submit(recorder.run_id, state.plan.agent_name, goal)
            if decision.block_reason is not None:
                raise _RunFailure(
                    ErrorInfo.of(
                        "hook", "prompt_blocked", f"a UserPromptSubmit hook blocked the prompt: {decision.block_reason}"
                    )
                )
            if decision.additional_context:
                goal = f"{goal}\n\n{decision.additional_context}"
                await recorder.append(MessageInjectedV1(kind="prompt_context", text=decision.additional_context))
        messages: list[Message] = [Message.system(state.plan.system_prompt), *spec.history, Message.user(goal)]
        return _Start(messages=messages, first_new=len(messages) - 1)

    def _continue(self, spec: RunSpec, state: _LoopState, cursor: RunCursor) -> _Start:
        """A resumed run's messages and where its last turn stands, from its events."""
        messages: list[Message] = [Message.system(state.plan.system_prompt), *spec.history, *cursor.messages]
        turn: _ModelTurn | None = None
        last = cursor.last_turn
        if last is not None and (cursor.pending or not last.tool_calls):
            turn = _ModelTurn(
                text=last.text,
                tool_calls=[
                    ModelToolCall(
                        tool_call_id=call.tool_call_id,
                        provider_call_id=call.provider_call_id,
                        name=call.name,
                        arguments=call.arguments,
                        invalid_arguments=call.invalid_arguments,
                    )
                    for call in last.tool_calls
                ],
                completed=ModelCompleted(stop_reason=last.stop_reason, refusal=last.refusal),  # pyright: ignore[reportArgumentType]
            )
        first_new = len(messages) - len(cursor.messages)
        return _Start(
            messages, first_new, turn=turn, answered=last.answered if last else frozenset(), in_flight=cursor.in_flight
        )

    async def _drive(
        self, spec: RunSpec, recorder: RunRecorder, state: _LoopState, planner: Planner | None, start: _Start
    ) -> RunOutcome:
        run_id = recorder.run_id
        messages = start.messages
        first_new = start.first_new
        resumed_turn = start.turn
        stop_blocks = 0
        while True:
            if resumed_turn is not None:
                turn, resumed_turn = resumed_turn, None
            else:
                turn = await self._model_turn(recorder, state, messages)
                assistant = _assistant_message(turn)
                if assistant is not None:
                    messages.append(assistant)
                start.answered, start.in_flight = frozenset(), None
            if not turn.tool_calls:
                final_text = turn.text
                if turn.completed.stop_reason == "refusal" and turn.completed.refusal:
                    final_text = turn.completed.refusal
                if self._hooks is not None and turn.completed.stop_reason != "refusal":
                    decision = await self._hooks.stop(run_id, state.plan.agent_name, final_text, stop_blocks > 0)
                    if decision.block_reason is not None and stop_blocks < self._stop_hook_cap:
                        stop_blocks += 1
                        self._observer.notice(run_id, f"Stop hook asked to continue: {decision.block_reason}")
                        feedback = f"Stop hook feedback: {decision.block_reason}"
                        await recorder.append(MessageInjectedV1(kind="stop_feedback", text=feedback))
                        messages.append(Message.user(feedback))
                        continue
                    if decision.block_reason is not None:
                        self._observer.notice(
                            run_id,
                            f"Stop hook blocked {self._stop_hook_cap} times in a row; finishing the run anyway",
                        )
                stop_blocks = 0
                state.steps += 1
                self._observer.step(run_id, state.steps - 1, "final")
                self._observer.final(run_id, final_text)
                projection = await recorder.append(
                    RunSucceededV2(final_text=final_text, stop_reason=turn.completed.stop_reason)
                )
                self._observer.run_succeeded(run_id, state.steps)
                return RunOutcome(
                    run_id=run_id,
                    status="succeeded",
                    agent_name=state.plan.agent_name,
                    final_text=final_text,
                    usage=projection.usage,
                    steps=state.steps,
                    stop_reason=turn.completed.stop_reason,
                    new_messages=tuple(messages[first_new:]),
                )
            stop_blocks = 0
            state.steps += 1
            self._observer.step(run_id, state.steps - 1, "tool_call")
            switch_to: str | None = None
            for call in turn.tool_calls:
                if call.tool_call_id in start.answered:
                    continue  # a resumed turn: this call has its result in the log (and in `messages`)
                in_flight = start.in_flight
                if in_flight is not None and in_flight.tool_call_id == call.tool_call_id:
                    result = await self._resume_call(spec, recorder, state, call, in_flight)
                else:
                    result = await self._tool_call(spec, recorder, state, call, turn.call_errors.get(call.tool_call_id))
                messages.append(
                    Message.tool(
                        ToolResultPart(
                            tool_call_id=call.tool_call_id,
                            provider_call_id=call.provider_call_id,
                            name=call.name,
                            content=bound_for_model(result.content or ("ok" if not result.is_error else "error")),
                            is_error=result.is_error,
                        )
                    )
                )
                if not result.is_error and result.tool_name == SWITCH_TOOL and result.data is not None:
                    target = result.data.get("agent")
                    if isinstance(target, str):
                        switch_to = target
            if switch_to is not None and switch_to != state.plan.agent_name:
                if planner is None:
                    raise _RunFailure(
                        ErrorInfo.of("configuration", "switch_unavailable", "agent switching is not wired for this run")
                    )
                previous = state.plan.agent_name
                state.plan = await planner(switch_to)
                state.switch_count += 1
                await recorder.append(
                    AgentSwitchedV1(from_agent=previous, to_agent=switch_to, switch_count=state.switch_count)
                )
                messages[0] = Message.system(state.plan.system_prompt)
                self._observer.agent_switched(run_id, previous, switch_to)

    async def _model_turn(self, recorder: RunRecorder, state: _LoopState, messages: list[Message]) -> _ModelTurn:
        attempt = 1
        while True:
            plan = state.plan
            request_messages: Sequence[Message] = messages
            reminder = self._context.reminder_message(plan.system_reminder)
            if reminder is not None:
                request_messages = [*messages, reminder]
            if state.template is None or state.template_plan is not plan:
                state.template = ModelRequest(
                    model=plan.model_name,
                    messages=(messages[0],),
                    tools=plan.descriptors,
                    max_output_tokens=plan.max_output_tokens,
                    temperature=plan.temperature,
                    timeout_ms=plan.timeout_ms,
                )
                state.template_plan = plan
            request = state.template.with_messages(request_messages)
            if self._hooks is not None:
                decision = await self._hooks.pre_model_request(recorder.run_id, plan.agent_name, request)
                if decision.block_reason is not None:
                    raise _RunFailure(
                        ErrorInfo.of(
                            "hook",
                            "model_request_blocked",
                            f"a PreModelRequest hook blocked the call: {decision.block_reason}",
                        )
                    )
                request = decision.request
            activity = _Active(
                kind="model_call", activity_id=self._ids.new(ActivityId), model_call_id=self._ids.new(ModelCallId)
            )
            assert activity.model_call_id is not None
            await self._admit(
                recorder,
                ModelCallRequestedV2(
                    activity_id=activity.activity_id,
                    model_call_id=activity.model_call_id,
                    model_ref=plan.model_ref,
                    attempt=attempt,
                ),
                ModelCallStartedV1(activity_id=activity.activity_id, model_call_id=activity.model_call_id),
            )
            state.active = activity
            try:
                turn = await self._stream(recorder.run_id, plan, request, activity)
            except BearAgentError as exc:
                usage = _usage_of(exc)
                partial = activity.partial_text
                delay = self._retry.delay_for(exc.info, attempt)
                await recorder.append(
                    ModelCallFailedV2(
                        activity_id=activity.activity_id,
                        model_call_id=activity.model_call_id,
                        usage=usage,
                        cost_microusd=cost_microusd(usage, plan.price),
                        error=exc.info,
                        partial_text=partial,
                        will_retry=delay is not None,
                    )
                )
                state.active = None
                if delay is None:
                    state.partial_text = partial
                    raise _RunFailure(exc.info, partial) from exc
                self._observer.notice(
                    recorder.run_id,
                    f"model call failed ({exc.info.code}); retrying in {delay:.1f}s (attempt {attempt + 1})",
                )
                await asyncio.sleep(delay)
                attempt += 1
                continue
            completed = turn.completed
            bounded = bound_turn(turn.text, turn.text_chars, turn.tool_calls, turn.calls_asked)
            turn.text, turn.tool_calls, turn.call_errors = bounded.text, bounded.tool_calls, bounded.call_errors
            await recorder.append(
                ModelCallCompletedV2(
                    activity_id=activity.activity_id,
                    model_call_id=activity.model_call_id,
                    usage=completed.usage,
                    cost_microusd=cost_microusd(completed.usage, plan.price),
                    text=turn.text,
                    tool_calls=tuple(
                        RecordedToolCall(
                            tool_call_id=call.tool_call_id,
                            provider_call_id=call.provider_call_id,
                            name=call.name,
                            arguments=call.arguments,
                            invalid_arguments=call.invalid_arguments,
                        )
                        for call in turn.tool_calls
                    ),
                    provider_request_id=completed.provider_request_id,
                    model=completed.model,
                    stop_reason=completed.stop_reason,
                    refusal=completed.refusal,
                )
            )
            state.active = None
            if bounded.error is not None:
                raise _RunFailure(bounded.error)
            return turn

    async def _stream(self, run_id: RunId, plan: AgentPlan, request: ModelRequest, activity: _Active) -> _ModelTurn:
        text_parts: list[str] = []
        text_chars = 0
        tool_calls: list[ModelToolCall] = []
        calls_asked = 0
        completed: ModelCompleted | None = None
        stream = plan.provider.stream(request)
        try:
            async for event in stream:
                if isinstance(event, TextDelta):
                    piece = event.text
                    if piece:
                        text_chars += len(piece)
                        if text_chars > MAX_TURN_TEXT_CHARS:  # kept up to the limit; the turn will fail
                            piece = piece[: max(0, MAX_TURN_TEXT_CHARS - (text_chars - len(piece)))]
                            if not piece:
                                continue
                        text_parts.append(piece)
                        self._writer.publish_token(run_id, str(activity.activity_id), len(activity.partial_text), piece)
                        activity.partial_text += piece
                        self._observer.token(run_id, piece)
                elif isinstance(event, ModelToolCall):
                    calls_asked += 1
                    if calls_asked <= MAX_TOOL_CALLS_PER_TURN:
                        tool_calls.append(event)
                else:
                    completed = event
        except BearAgentError:
            raise
        except (asyncio.CancelledError, TimeoutError):
            raise
        except Exception as exc:
            raise BearAgentError(
                ErrorInfo.of(
                    "internal", "provider_crashed", f"the model provider failed unexpectedly: {type(exc).__name__}"
                )
            ) from exc
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    await aclose()
        if completed is None:
            raise BearAgentError(
                ErrorInfo.of(
                    "truncated_stream",
                    "no_completion",
                    "the model stream ended without a completion event",
                    retryable=True,
                )
            )
        return _ModelTurn(
            text="".join(text_parts),
            tool_calls=tool_calls,
            completed=completed,
            text_chars=text_chars,
            calls_asked=calls_asked,
        )

    async def _tool_call(
        self,
        spec: RunSpec,
        recorder: RunRecorder,
        state: _LoopState,
        call: ModelToolCall,
        limit_error: ErrorInfo | None = None,
        continuing: ActivityId | None = None,
    ) -> ToolResult:
        """Run one tool call through the gate as a new activity (or, `continuing`, in the activity a resumed run
        left running: a call whose approval was answered while the run waited)."""
        plan = state.plan
        bound = plan.tools.get(call.name)
        internal = bound.internal_name if bound is not None else call.name
        activity = _Active(
            kind="tool_call",
            activity_id=continuing if continuing is not None else self._ids.new(ActivityId),
            tool_call_id=call.tool_call_id,
            tool_name=internal,
        )
        if continuing is None:
            await self._admit(
                recorder,
                ToolCallRequestedV2(
                    activity_id=activity.activity_id,
                    tool_call_id=call.tool_call_id,
                    tool_name=internal,
                    arguments=call.arguments,
                    provider_call_id=call.provider_call_id,
                    source=bound.source if bound is not None else "unknown",
                ),
                ToolCallStartedV1(activity_id=activity.activity_id, tool_call_id=call.tool_call_id),
            )
        state.active = activity
        self._observer.tool_call(recorder.run_id, str(call.tool_call_id), call.name, call.arguments)
        request = ToolRequest(tool_call_id=call.tool_call_id, name=internal, arguments=call.arguments)
        if limit_error is not None:
            result = ToolResult.failure(request, limit_error)
        elif call.invalid_arguments is not None:
            result = ToolResult.failure(
                request,
                ErrorInfo.of(
                    "validation",
                    "invalid_tool_arguments",
                    f"the arguments for {call.name} could not be used: {call.invalid_arguments}. "
                    "Call the tool again with a valid JSON object.",
                ),
            )
        elif internal == SWITCH_TOOL and state.switch_count >= plan.max_switches:
            result = ToolResult.failure(
                request,
                ErrorInfo.of(
                    "permission",
                    "switch_limit",
                    f"this run already switched agents {state.switch_count} time(s), the most agent "
                    f"{plan.agent_name}'s policy allows (policy.max_switches: {plan.max_switches}); continue the "
                    "task with the current agent",
                ),
            )
        elif bound is None:
            available = ", ".join(sorted(plan.tools)) or "none"
            result = ToolResult.failure(
                request,
                ErrorInfo.of(
                    "tool",
                    "unknown_tool",
                    f"there is no tool named {call.name!r} for agent {plan.agent_name}; available tools: {available}",
                ),
            )
        else:
            context = ToolContext(
                workspace_root=spec.workspace_root,
                run_id=recorder.run_id,
                session_id=spec.session_id,
                tool_call_id=call.tool_call_id,
                agent_name=plan.agent_name,
                ids=self._ids,
                settings=plan.tool_settings,
                deadline=state.deadline,
            )
            result = await plan.gate.call(request, context)
        if result.is_error:
            await recorder.append(
                ToolCallFailedV2(activity_id=activity.activity_id, tool_call_id=call.tool_call_id, result=result)
            )
        else:
            await recorder.append(
                ToolCallCompletedV2(activity_id=activity.activity_id, tool_call_id=call.tool_call_id, result=result)
            )
        state.active = None
        if not result.is_error and internal == TODO_TOOL and result.data is not None:
            todos = result.data.get("todos")
            if isinstance(todos, (list, tuple)):
                await recorder.append(TodosUpdatedV1.model_validate({"todos": todos}))
        self._observer.tool_result(recorder.run_id, str(call.tool_call_id), call.name, result.content, result.is_error)
        return result

    async def _resume_call(
        self, spec: RunSpec, recorder: RunRecorder, state: _LoopState, call: ModelToolCall, in_flight: InFlightCall
    ) -> ToolResult:
        """The call a stopped run had in flight. Answered approval: it never ran, so it runs now (the broker has the
        answer). Otherwise it may have run: a read-only tool runs again; any other is abandoned, never repeated."""
        projection = recorder.projection
        active = projection.active_activity_id if projection is not None else None
        if in_flight.decision is not None and active == in_flight.activity_id:
            if in_flight.decision == "deny":  # the answer decides, whatever the mode of the resuming process
                request = ToolRequest(
                    tool_call_id=call.tool_call_id, name=in_flight.tool_name, arguments=call.arguments
                )
                denied = ErrorInfo.of("permission", "denied", f"{call.name} call was denied by the user.")
                result = ToolResult.failure(request, denied)
                await recorder.append(
                    ToolCallFailedV2(activity_id=in_flight.activity_id, tool_call_id=call.tool_call_id, result=result)
                )
                self._observer.tool_result(recorder.run_id, str(call.tool_call_id), call.name, result.content, True)
                return result
            return await self._tool_call(spec, recorder, state, call, continuing=in_flight.activity_id)
        side_effect = state.plan.side_effect(call.name)
        if side_effect == "read_only":
            self._observer.notice(recorder.run_id, f"{call.name} was running when the run stopped; running it again")
            return await self._tool_call(spec, recorder, state, call)
        message = ABANDONED_MESSAGE.format(tool=call.name)
        await recorder.append(
            ToolCallAbandonedV1(
                tool_call_id=call.tool_call_id, tool_name=in_flight.tool_name, side_effect=side_effect, message=message
            )
        )
        self._observer.notice(
            recorder.run_id, f"{call.name} was running when the run stopped; its outcome is unknown, not run again"
        )
        request = ToolRequest(tool_call_id=call.tool_call_id, name=in_flight.tool_name, arguments=call.arguments)
        result = ToolResult.failure(request, ErrorInfo.of("tool", "abandoned", message))
        self._observer.tool_result(recorder.run_id, str(call.tool_call_id), call.name, message, True)
        return result.model_copy(update={"content": message})

    # ---- bookkeeping -----------------------------------------------------------------------------------------

    async def _admit(
        self,
        recorder: RunRecorder,
        requested: ModelCallRequestedV2 | ToolCallRequestedV2,
        started: ModelCallStartedV1 | ToolCallStartedV1,
    ) -> None:
        """Append an activity's Requested and Started facts in one transaction (both or neither); a budget refusal
        of the request ends the run as a budget stop, with no activity written."""
        try:
            await recorder.append_many((requested, started))
        except BearAgentError as exc:
            if exc.info.category == "budget":
                raise _RunFailure(exc.info) from exc
            raise

    async def _close_active(self, recorder: RunRecorder, state: _LoopState, error: ErrorInfo) -> None:
        active = state.active
        if active is None:
            return
        state.active = None
        with contextlib.suppress(BearAgentError):
            if active.kind == "model_call" and active.model_call_id is not None:
                await recorder.append(
                    ModelCallFailedV2(
                        activity_id=active.activity_id,
                        model_call_id=active.model_call_id,
                        error=error,
                        partial_text=active.partial_text,
                    )
                )
            elif active.tool_call_id is not None:
                request = ToolRequest(
                    tool_call_id=active.tool_call_id, name=active.tool_name or "unknown", arguments={}
                )
                await recorder.append(
                    ToolCallFailedV2(
                        activity_id=active.activity_id,
                        tool_call_id=active.tool_call_id,
                        result=ToolResult.failure(request, error),
                    )
                )

    async def _fail(self, recorder: RunRecorder, state: _LoopState, error: ErrorInfo, partial_text: str) -> RunOutcome:
        await self._close_active(recorder, state, error)
        projection = await recorder.append(RunFailedV2(error=error, partial_text=partial_text))
        self._observer.run_failed(recorder.run_id, error)
        return RunOutcome(
            run_id=recorder.run_id,
            status="failed",
            agent_name=state.plan.agent_name,
            final_text="",
            usage=projection.usage,
            steps=state.steps,
            error=error,
        )


@dataclass(slots=True)
class _Start:
    """Where the loop starts: the messages so far, and for a resumed run the turn it stopped in."""

    messages: list[Message]
    first_new: int
    turn: _ModelTurn | None = None
    answered: frozenset[ToolCallId] = frozenset()
    in_flight: InFlightCall | None = None


@dataclass(slots=True)
class _LoopState:
    plan: AgentPlan
    active: _Active | None = None
    switch_count: int = 0
    partial_text: str = ""
    steps: int = 0
    template: ModelRequest | None = None
    template_plan: AgentPlan | None = None
    deadline: float | None = None
    """`time.monotonic()` at which the wall-time budget ends: tools get it to bound work they cannot cancel."""


def _assistant_message(turn: _ModelTurn) -> Message | None:
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


def _usage_of(exc: BaseException) -> TokenUsage:
    usage = getattr(exc, "usage", None)
    return usage if isinstance(usage, TokenUsage) else TokenUsage()

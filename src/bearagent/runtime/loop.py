"""AgentLoop: the trusted scheduler of one run, from the user's goal to success, failure, cancel or budget stop.

goal -> bounded ModelRequest -> ModelCallRequested (budget check) -> provider stream -> ModelCallCompleted ->
each tool call through the gate -> ToolCallCompleted/Failed -> bounded result into the next messages -> ... ->
RunSucceeded | RunFailed | RunCancelled. Every step is a fact appended through the reducer before the next starts.

This module is the order of the steps: starting or resuming a run (from its cursor), the turn loop with its Stop
hooks and agent switches, suspension for an approval, and how a run ends (wall time, failure, cancellation). A
model turn is `model_calls.py`, a tool call `tool_calls.py`, the state they share `loop_state.py`. It is over
400 lines because the endings are one `try` around one loop and the continuation of cut answers and the grouping
of parallel calls are steps of that loop: they read best in one place.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Literal

from bearagent.domain.budgets import BudgetUsage
from bearagent.domain.errors import BearAgentError, ErrorInfo
from bearagent.domain.events import Event
from bearagent.domain.ids import IdGenerator, RunId, ToolCallId
from bearagent.domain.messages import Message
from bearagent.domain.models import (
    ModelCompleted,
    ModelToolCall,
)
from bearagent.domain.run_events import (
    UNPLANNED_PROMPT_HASH,
    AgentSwitchedV1,
    InFlight,
    MessageInjectedV1,
    MessageInjectedV2,
    ModelCallFailedV2,
    RunCancelledV1,
    RunCreatedV3,
    RunCreatedV4,
    RunEventPayload,
    RunFailedV2,
    RunInterruptedV1,
    RunOwner,
    RunPlanFacts,
    RunResumedV1,
    RunStartedV1,
    RunStartedV2,
    RunStartedV3,
    RunSucceededV2,
    ToolCallFailedV2,
)
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.ports import Clock, RunStorage
from bearagent.runtime.approvals import RunSuspended
from bearagent.runtime.compaction_run import COMPACT_TRIGGER_REF, end_resumed_compaction
from bearagent.runtime.context import ContextBuilder, tool_result_message
from bearagent.runtime.continuation import join_parts
from bearagent.runtime.cursor import InFlightCall, RunCursor
from bearagent.runtime.loop_state import (
    SWITCH_TOOL,
    LoopState,
    ModelTurn,
    RunFailure,
    RunOutcome,
    assistant_message,
)
from bearagent.runtime.model_calls import ModelCalls
from bearagent.runtime.observer import NullObserver, RunObserver
from bearagent.runtime.plan import (
    STOP_BLOCK_CAP,
    AgentPlan,
    BatchedCall,
    ExpansionHooks,
    LoopHooks,
    Planner,
    RunSpec,
)
from bearagent.runtime.recorder import RunRecorder
from bearagent.runtime.retry import RetryPolicy
from bearagent.runtime.run_context import CurrentRun, current_run
from bearagent.runtime.run_writer import RunWriter
from bearagent.runtime.tool_calls import ToolCalls

_log = logging.getLogger("bearagent.runtime")
CONTINUE_PROMPT = (
    "Your previous answer was cut off by the output limit. Continue exactly where it stopped, without repeating "
    "anything and without any preamble."
)

DEFAULT_STOP_HOOK_CAP = STOP_BLOCK_CAP


HAND_BACK = "bearagent:hand-back"
"""The message of a cancellation that hands a run back instead of cancelling it (`Worker.stop`): the loop records
`RunInterrupted`, not `RunCancelled`."""


async def _cancel_recorded(recorder: RunRecorder, reason: str = "cancelled by the caller") -> None:
    """Cancelled while the run was being recorded (a commit finishes before the cancellation goes on): once the run
    exists, its log still ends with RunCancelled instead of staying queued or running forever."""
    if recorder.projection is not None:
        with contextlib.suppress(BearAgentError):
            await recorder.append(RunCancelledV1(reason=reason[:500]))


def _reason_of(cancelled: asyncio.CancelledError) -> str | None:
    """The reason passed with a cancellation (`task.cancel(reason)`: a worker cancelling on a request), if any."""
    said = cancelled.args[0] if len(cancelled.args) == 1 else None
    return said if isinstance(said, str) and said else None


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
        self._store = store
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
        self._models = ModelCalls(
            writer=self._writer,
            ids=ids,
            retry=self._retry,
            hooks=hooks,
            observer=self._observer,
            context=self._context,
        )
        self._tools = ToolCalls(ids=ids, observer=self._observer, recorder_of=self._recorder_of)

    async def _recorder_of(self, run_id: RunId) -> RunRecorder | None:
        """A recorder of another run of this store at its last sequence (None: no such run): where a dead call's
        file changes are recorded when the next call finds them (`rewind/capture.py`)."""
        stored = await self._writer.storage.load_run(run_id)
        if stored is None:
            return None
        return RunRecorder(
            writer=self._writer,
            clock=self._clock,
            ids=self._ids,
            run_id=run_id,
            sinks=self._sinks,
            last_sequence=stored.state.last_sequence,
        )

    async def run(self, spec: RunSpec, plan: AgentPlan, planner: Planner | None = None) -> RunOutcome:
        """Run to a terminal state. Cancellation is recorded (RunCancelled) and then re-raised."""
        recorder = await self.create(spec, plan)
        return await self.start(spec, plan, planner, recorder)

    async def create(self, spec: RunSpec, plan: AgentPlan) -> RunRecorder:
        """Record the run (`RunCreated`: it is `queued`) and return its recorder; `start` executes it, in this
        process or, for a queued run, in whichever worker claims it."""
        run_id = spec.run_id or self._ids.new(RunId)
        recorder = RunRecorder(writer=self._writer, clock=self._clock, ids=self._ids, run_id=run_id, sinks=self._sinks)
        created = RunCreatedV3(
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
            request=spec.request,
        )
        try:
            await recorder.append(created)
        except asyncio.CancelledError:
            await _cancel_recorded(recorder)
            raise
        return recorder

    async def create_unplanned(self, spec: RunSpec, agent_name: str) -> RunRecorder:
        """Record a queued run before it is planned (RunCreated v4 `planned: false`: no MCP server started, no
        provider built); the worker that starts it plans it and records the plan (`start(..., record_plan=True)`)."""
        run_id = spec.run_id or self._ids.new(RunId)
        recorder = RunRecorder(writer=self._writer, clock=self._clock, ids=self._ids, run_id=run_id, sinks=self._sinks)
        created = RunCreatedV4(
            session_id=spec.session_id,
            budget_limits=spec.budgets,
            goal=spec.goal,
            agent_name=agent_name,
            prompt_hash=UNPLANNED_PROMPT_HASH,
            parent_run_id=spec.parent_run_id,
            trigger_type=spec.trigger_type,
            trigger_ref=spec.trigger_ref,
            depth=spec.depth,
            request=spec.request,
            planned=False,
        )
        await recorder.append(created)
        return recorder

    def recorder_for(self, created: Event) -> RunRecorder:
        """The recorder of a queued run whose only event is `created` (its RunCreated): appends go on after it, in
        its correlation."""
        return RunRecorder(
            writer=self._writer,
            clock=self._clock,
            ids=self._ids,
            run_id=created.run_id,
            sinks=self._sinks,
            last_sequence=created.sequence,
            correlation_id=created.correlation_id,
            last_event_id=created.event_id,
        )

    async def start(
        self,
        spec: RunSpec,
        plan: AgentPlan,
        planner: Planner | None,
        recorder: RunRecorder,
        *,
        record_plan: bool = False,
    ) -> RunOutcome:
        """Start the queued run of `recorder` (`RunStarted` with this loop's owner: appended at the next sequence,
        so of two processes starting one queued run only one can) and run it to a terminal state. `record_plan`:
        the run was recorded unplanned (`create_unplanned`), so its RunStarted (v3) records `plan`."""
        run_id = recorder.run_id
        state = LoopState(plan=plan, conversation_calls=spec.conversation_calls, position_provider=plan.provider)
        started: RunEventPayload = RunStartedV1() if self._owner is None else RunStartedV2(owner=self._owner)
        if record_plan and self._owner is not None:
            facts = RunPlanFacts(
                prompt_hash=self._context.prompt_hash(plan.system_prompt),
                tool_spec_versions=plan.tool_spec_versions,
                model_ref=plan.model_ref,
            )
            started = RunStartedV3(owner=self._owner, plan=facts)
        try:
            await recorder.append(started)
            if spec.prelude:
                await recorder.append_many(spec.prelude)
        except asyncio.CancelledError as exc:
            await self._stopped_while_taking(recorder, exc)
            raise
        self._observer.run_started(run_id, plan.agent_name)
        self._tools.warm(spec, plan)
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
        state = LoopState(
            plan=plan,
            switch_count=cursor.switch_count,
            steps=cursor.steps,
            conversation_calls=spec.conversation_calls,
            position_provider=plan.provider,
        )
        if self._owner is None:
            raise ValueError("resuming a run needs the owner that takes it over")
        try:
            await recorder.append(RunResumedV1(owner=self._owner, reason=reason, changes=tuple(changes)))
            await self._tools.settle(spec, recorder)
        except asyncio.CancelledError as exc:
            await self._stopped_while_taking(recorder, exc)
            raise
        self._observer.run_started(spec.run_id, plan.agent_name)
        for change in changes:
            self._observer.notice(spec.run_id, f"since this run started: {change}")
        if cursor.trigger_ref == COMPACT_TRIGGER_REF:  # an interrupted /compact ends; it is not asked again
            return await end_resumed_compaction(recorder, state, cursor, self._observer)
        remaining = max(0, spec.budgets.max_wall_time_ms - wall_time_used_ms)
        return await self._execute(spec, recorder, state, planner, cursor, remaining)

    async def compact(self, spec: RunSpec, plan: AgentPlan, focus: str | None = None) -> RunOutcome:
        """Compact the session's history (`spec.history`) now, in a run of its own (`/compact [focus]`): see
        `runtime/compaction_run.py`."""
        from bearagent.runtime.compaction_run import compaction_run

        run_id = spec.run_id or self._ids.new(RunId)
        recorder = RunRecorder(writer=self._writer, clock=self._clock, ids=self._ids, run_id=run_id, sinks=self._sinks)
        return await compaction_run(
            self._models,
            recorder,
            spec,
            plan,
            focus,
            owner=self._owner,
            hold=self._hold,
            observer=self._observer,
            prompt_hash=self._context.prompt_hash(plan.system_prompt),
        )

    async def _execute(
        self,
        spec: RunSpec,
        recorder: RunRecorder,
        state: LoopState,
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
            if self._hooks is not None:
                with contextlib.suppress(BearAgentError):
                    await self._hooks.notification(
                        run_id,
                        state.plan.agent_name,
                        f"the run waits for approval {suspended.approval_id}",
                        "permission_prompt",
                    )
            await recorder.flush()
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
        except RunFailure as failure:
            return await self._fail(recorder, state, failure.error, failure.partial_text)
        except BearAgentError as exc:
            return await self._fail(recorder, state, exc.info, state.partial_text)
        except Exception as exc:  # a bug must still end the run in the log, never leave it dangling
            _log.exception("run %s failed unexpectedly", run_id)
            error = ErrorInfo.of(
                "internal", "unexpected", f"the run failed unexpectedly ({type(exc).__name__}); see the log for details"
            )
            return await self._fail(recorder, state, error, state.partial_text)
        except asyncio.CancelledError as exc:
            if exc.args == (HAND_BACK,):  # the worker stops: the run is left interrupted, for another to resume
                with contextlib.suppress(BearAgentError):
                    await self._hand_back(recorder)
                raise
            cancelled = ErrorInfo.of("cancelled", "by_caller", "the run was cancelled")
            await self._close_active(recorder, state, cancelled)
            with contextlib.suppress(BearAgentError):  # with the reason passed with the cancellation, if any
                await recorder.append(RunCancelledV1(reason=(_reason_of(exc) or "cancelled by the caller")[:500]))
            self._observer.run_failed(run_id, cancelled)
            raise
        finally:
            current_run.reset(token)

    async def _stopped_while_taking(self, recorder: RunRecorder, cancelled: asyncio.CancelledError) -> None:
        """Cancelled while the facts that take a run over were recorded (RunStarted, RunResumed and what settles the
        calls a crash left open), before the loop's own handling: a stopping worker's hand-back leaves it interrupted
        once it runs (and as it was before, queued or stopped, otherwise); anyone else's cancel ends it cancelled
        once it runs. Without this, a run whose RunResumed had committed stayed `running` with nobody executing it
        and was resumed again later, the cancel lost; a handed-back one was recorded cancelled."""
        if cancelled.args == (HAND_BACK,):
            with contextlib.suppress(BearAgentError):
                await self._hand_back(recorder)
        else:
            await _cancel_recorded(recorder, _reason_of(cancelled) or "cancelled by the caller")

    async def _hand_back(self, recorder: RunRecorder) -> None:
        """Record `RunInterrupted` for a run this process stops executing without ending it (a worker's graceful
        stop): whatever was in flight is closed as the lease scan would close it, and the run can be resumed."""
        await recorder.flush()  # the projection below must show every fact
        run = recorder.projection
        if run is None or run.status != "running":
            return
        in_flight: InFlight | None = None
        if run.active_activity_id is not None:
            activities = await self._store.fetch_activities(run.run_id)
            active = next((a for a in activities if a.activity_id == run.active_activity_id), None)
            if active is not None:
                in_flight = InFlight.of(active)
        await recorder.append(
            RunInterruptedV1(
                reason="its worker stopped and handed it back",
                owner=self._owner,
                last_seen_at=self._clock.now(),
                in_flight=in_flight,
            )
        )

    # ---- the loop --------------------------------------------------------------------------------------------

    async def _begin(self, spec: RunSpec, recorder: RunRecorder, state: LoopState) -> _Start:
        """A new run's first messages: the goal, with what a UserPromptSubmit hook adds (or its block)."""
        goal = spec.goal
        if self._hooks is not None:
            contexts: list[str] = []
            if spec.expansion is not None and isinstance(self._hooks, ExpansionHooks):
                expanded = await self._hooks.user_prompt_expansion(
                    recorder.run_id, state.plan.agent_name, spec.expansion
                )
                if expanded.block_reason is not None:
                    raise RunFailure(
                        ErrorInfo.of(
                            "hook",
                            "prompt_blocked",
                            f"a UserPromptExpansion hook blocked the command {spec.expansion.prompt[:200]!r}: "
                            f"{expanded.block_reason}",
                        )
                    )
                if expanded.additional_context:
                    contexts.append(expanded.additional_context)
            decision = await self._hooks.user_prompt_submit(recorder.run_id, state.plan.agent_name, goal)
            if decision.block_reason is not None:
                raise RunFailure(
                    ErrorInfo.of(
                        "hook", "prompt_blocked", f"a UserPromptSubmit hook blocked the prompt: {decision.block_reason}"
                    )
                )
            if decision.additional_context:
                contexts.append(decision.additional_context)
            if contexts:  # one fact: a replay repeats it as the prompt's context
                added = "\n\n".join(contexts)
                goal = f"{goal}\n\n{added}"
                await recorder.append(MessageInjectedV1(kind="prompt_context", text=added))
        messages: list[Message] = [Message.system(state.plan.system_prompt), *spec.history, Message.user(goal)]
        return _Start(messages=messages, first_new=len(messages) - 1)

    def _continue(self, spec: RunSpec, state: LoopState, cursor: RunCursor) -> _Start:
        """A resumed run's messages and where its last turn stands, from its events."""
        # the session's history, then this run's messages, with the run's compactions applied
        messages: list[Message] = [Message.system(state.plan.system_prompt), *cursor.conversation(spec.history)]
        turn: ModelTurn | None = None
        last = cursor.last_turn
        if last is not None and (cursor.pending or not last.tool_calls):
            turn = ModelTurn(
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
        first_new = max(1, len(messages) - len(cursor.messages))
        return _Start(
            messages, first_new, turn=turn, answered=last.answered if last else frozenset(), in_flight=cursor.in_flight
        )

    async def _drive(
        self, spec: RunSpec, recorder: RunRecorder, state: LoopState, planner: Planner | None, start: _Start
    ) -> RunOutcome:
        run_id = recorder.run_id
        messages = start.messages
        first_new = start.first_new
        resumed_turn = start.turn
        stop_blocks = 0
        continued: list[str] = []  # the parts of an answer the output limit cut, continued since
        while True:
            # a turn of the event loop per step: a store that commits at once (`ports.commit_now_of`) and a model
            # and tools that answer at once would otherwise hold the loop for the whole run (other runs, streams,
            # a cancellation wait for an await that suspends)
            await asyncio.sleep(0)
            state.continuations_left = state.plan.max_output_continuations - len(continued)
            if resumed_turn is not None:
                turn, resumed_turn = resumed_turn, None
            else:
                turn = await self._models.turn(recorder, state, messages)
                assistant = assistant_message(turn)
                if assistant is not None:
                    messages.append(assistant)
                start.answered, start.in_flight = frozenset(), None
            if (
                turn.completed.stop_reason == "max_output_tokens"
                and not turn.tool_calls
                and state.continuations_left > 0
            ):
                continued.append(turn.text)
                self._observer.notice(
                    run_id,
                    f"the answer reached the output limit; asking the model to continue it "
                    f"({len(continued)}/{state.plan.max_output_continuations})",
                )
                await recorder.append(MessageInjectedV2(kind="continuation", text=CONTINUE_PROMPT))
                messages.append(Message.user(CONTINUE_PROMPT))
                continue
            if not turn.tool_calls:
                final_text = join_parts([*continued, turn.text])  # a clean seam (runtime/continuation.py)
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
                    new_messages=tuple(messages[max(1, first_new - state.context.shift) :]),
                )
            stop_blocks = 0
            continued.clear()
            state.steps += 1
            self._observer.step(run_id, state.steps - 1, "tool_call")
            switch_to: str | None = None
            # a resumed turn skips the calls whose result is in the log (and in `messages`)
            pending = [call for call in turn.tool_calls if call.tool_call_id not in start.answered]
            for group in _groups(pending, turn, state, start):
                if len(group) > 1:
                    await recorder.flush()  # the batch runs its calls before it records them: facts first
                    results = await self._tools.batch(spec, recorder, state, group)
                else:
                    (call,) = group
                    in_flight = start.in_flight
                    if in_flight is not None and in_flight.tool_call_id == call.tool_call_id:
                        results = [await self._tools.resume_call(spec, recorder, state, call, in_flight)]
                    else:
                        error = turn.call_errors.get(call.tool_call_id)
                        results = [await self._tools.call(spec, recorder, state, call, error)]
                for call, result in zip(group, results, strict=True):
                    messages.append(tool_result_message(call, result.content, result.is_error))
                    if not result.is_error and result.tool_name == SWITCH_TOOL and result.data is not None:
                        target = result.data.get("agent")
                        if isinstance(target, str):
                            switch_to = target
                if len(group) > 1 and self._hooks is not None:
                    await self._after_batch(run_id, state, group, results)
            if switch_to is not None and switch_to != state.plan.agent_name:
                if planner is None:
                    raise RunFailure(
                        ErrorInfo.of("configuration", "switch_unavailable", "agent switching is not wired for this run")
                    )
                previous = state.plan.agent_name
                await recorder.flush()  # planning may start the new agent's servers: facts first
                state.plan = await planner(switch_to)
                state.switch_count += 1
                await recorder.append(
                    AgentSwitchedV1(from_agent=previous, to_agent=switch_to, switch_count=state.switch_count)
                )
                messages[0] = Message.system(state.plan.system_prompt)
                self._observer.agent_switched(run_id, previous, switch_to)

    async def _after_batch(
        self, run_id: RunId, state: LoopState, group: list[ModelToolCall], results: list[ToolResult]
    ) -> None:
        """PostToolBatch: a block (or `continue: false`) ends the run before the next model call, as in Claude Code."""
        assert self._hooks is not None
        calls = [
            BatchedCall(
                tool_name=call.name,
                arguments=call.arguments,
                tool_call_id=str(call.tool_call_id),
                content=result.content,
            )
            for call, result in zip(group, results, strict=True)
        ]
        decision = await self._hooks.post_tool_batch(run_id, state.plan.agent_name, calls)
        if decision.block_reason is not None:
            raise RunFailure(
                ErrorInfo.of(
                    "hook",
                    "batch_blocked",
                    f"a PostToolBatch hook ended the run after a parallel batch: {decision.block_reason}",
                )
            )

    # ---- bookkeeping -----------------------------------------------------------------------------------------

    async def _close_active(self, recorder: RunRecorder, state: LoopState, error: ErrorInfo) -> None:
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

    async def _fail(self, recorder: RunRecorder, state: LoopState, error: ErrorInfo, partial_text: str) -> RunOutcome:
        await self._close_active(recorder, state, error)
        if self._hooks is not None:  # StopFailure: recorded in the run, before the run's last fact
            with contextlib.suppress(BearAgentError):
                await self._hooks.stop_failure(recorder.run_id, state.plan.agent_name, error, partial_text)
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


def _groups(calls: list[ModelToolCall], turn: ModelTurn, state: LoopState, start: _Start) -> list[list[ModelToolCall]]:
    """The calls of a turn in order, consecutive read-only ones grouped to run in parallel (`ToolCalls.batch`);
    everything else (side effects, runtime tools, a call that breaks a limit, the in-flight call of a resumed run)
    alone."""
    plan = state.plan
    in_flight = start.in_flight.tool_call_id if start.in_flight is not None else None

    def parallel(call: ModelToolCall) -> bool:
        bound = plan.tools.get(call.name)
        return (
            bound is not None
            and bound.source != "runtime"
            and plan.side_effect(call.name) == "read_only"
            and call.invalid_arguments is None
            and call.tool_call_id not in turn.call_errors
            and call.tool_call_id != in_flight
        )

    groups: list[list[ModelToolCall]] = []
    for call in calls:
        if parallel(call) and groups and len(groups[-1]) >= 1 and parallel(groups[-1][-1]):
            groups[-1].append(call)
        else:
            groups.append([call])
    return groups


@dataclass(slots=True)
class _Start:
    """Where the loop starts: the messages so far, and for a resumed run the turn it stopped in."""

    messages: list[Message]
    first_new: int
    turn: ModelTurn | None = None
    answered: frozenset[ToolCallId] = frozenset()
    in_flight: InFlightCall | None = None

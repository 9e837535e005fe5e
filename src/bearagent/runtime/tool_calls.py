"""One tool call of a run: `ToolCallRequested` (the budget check), the call through the agent's gate (or the
failure the loop decides itself: invalid arguments, an unknown tool, a turn's limits, the switch limit), its
result as a fact, the to-do list it updates; and, for a resumed run, the call that was in flight when the run
stopped (run again if read-only, answered from its approval, else abandoned, never repeated). The failures the
loop decides itself are `tool_refusals.py`; a call's file changes, `call_capture.py`."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence

from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import ActivityId, IdGenerator, RunId
from bearagent.domain.models import ModelToolCall
from bearagent.domain.run_events import (
    TodosUpdatedV1,
    ToolCallAbandonedV1,
    ToolCallCompletedV2,
    ToolCallFailedV2,
    ToolCallRequestedV2,
    ToolCallStartedV1,
)
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.ports import ApprovalDeferred, ToolContext
from bearagent.rewind.capture import CAPTURED_TOOLS
from bearagent.runtime.call_capture import CallCapture
from bearagent.runtime.cursor import InFlightCall
from bearagent.runtime.loop_state import TODO_TOOL, Active, LoopState, admit
from bearagent.runtime.observer import RunObserver
from bearagent.runtime.plan import AgentPlan, RunSpec
from bearagent.runtime.recorder import RunRecorder
from bearagent.runtime.tool_refusals import refusal

MAX_PARALLEL_TOOLS = 8
"""How many read-only calls of one turn run at once."""
ABANDONED_MESSAGE = (
    "interrupted; the outcome is unknown: check before you redo it. (The run was interrupted while {tool} was "
    "running, and BearAgent never runs a call that may have had effects twice on its own.)"
)


class ToolCalls:
    """Makes the tool calls of the runs of one loop."""

    def __init__(
        self,
        *,
        ids: IdGenerator,
        observer: RunObserver,
        recorder_of: Callable[[RunId], Awaitable[RunRecorder | None]] | None = None,
    ) -> None:
        self._ids = ids
        self._observer = observer
        self._capture = CallCapture(observer=observer, recorder_of=recorder_of)

    async def call(
        self,
        spec: RunSpec,
        recorder: RunRecorder,
        state: LoopState,
        call: ModelToolCall,
        limit_error: ErrorInfo | None = None,
        continuing: ActivityId | None = None,
    ) -> ToolResult:
        """Run one tool call through the gate as a new activity (or, `continuing`, in the activity a resumed run
        left running: a call whose approval was answered while the run waited)."""
        plan = state.plan
        bound = plan.tools.get(call.name)
        internal = bound.internal_name if bound is not None else call.name
        activity = Active(
            kind="tool_call",
            activity_id=continuing if continuing is not None else self._ids.new(ActivityId),
            tool_call_id=call.tool_call_id,
            tool_name=internal,
        )
        if continuing is None:
            await admit(
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
        result = refusal(state, call, request, limit_error)
        if result is None:
            if internal in CAPTURED_TOOLS:
                result = await self._capture.captured(
                    spec, recorder, state, call, request, internal, lambda: self._context(spec, recorder, state, call)
                )
            else:
                result = await plan.gate.call(request, self._context(spec, recorder, state, call))
        await self._finish(recorder, state, call, activity, result)
        return result

    async def batch(
        self, spec: RunSpec, recorder: RunRecorder, state: LoopState, calls: Sequence[ModelToolCall]
    ) -> list[ToolResult]:
        """Read-only calls of one turn, run concurrently (at most `MAX_PARALLEL_TOOLS` at once, hooks still per
        call), their facts then recorded in call order: Requested + Started + Completed/Failed of each, so the log
        reads as if they ran one after another. Only as many run as the tool-call budget has room for; a call that
        needs an approval (`ApprovalDeferred`) and the calls beyond the budget run alone afterwards, in order. A
        crash mid-batch leaves the batch's calls without results: a resume runs them again (they are read-only)."""
        plan = state.plan
        projection = recorder.projection
        room = len(calls)
        if projection is not None:
            room = max(0, projection.budget_limits.max_tool_calls - projection.usage.tool_calls)
        parallel = list(calls[:room])
        gate = asyncio.Semaphore(MAX_PARALLEL_TOOLS)

        async def run_one(call: ModelToolCall) -> ToolResult | None:
            bound = plan.tools[call.name]
            request = ToolRequest(tool_call_id=call.tool_call_id, name=bound.internal_name, arguments=call.arguments)
            context = dataclasses.replace(self._context(spec, recorder, state, call), parallel=True)
            async with gate:
                try:
                    return await plan.gate.call(request, context)
                except ApprovalDeferred:
                    return None

        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(run_one(call)) for call in parallel]
        done: list[ToolResult | None] = [task.result() for task in tasks]
        done += [None] * (len(calls) - len(done))
        results: list[ToolResult] = []
        for call, result in zip(calls, done, strict=True):
            if result is None:
                results.append(await self.call(spec, recorder, state, call))
                continue
            bound = plan.tools[call.name]
            activity = Active(
                kind="tool_call",
                activity_id=self._ids.new(ActivityId),
                tool_call_id=call.tool_call_id,
                tool_name=bound.internal_name,
            )
            await admit(
                recorder,
                ToolCallRequestedV2(
                    activity_id=activity.activity_id,
                    tool_call_id=call.tool_call_id,
                    tool_name=bound.internal_name,
                    arguments=call.arguments,
                    provider_call_id=call.provider_call_id,
                    source=bound.source,
                ),
                ToolCallStartedV1(activity_id=activity.activity_id, tool_call_id=call.tool_call_id),
            )
            state.active = activity
            self._observer.tool_call(recorder.run_id, str(call.tool_call_id), call.name, call.arguments)
            await self._finish(recorder, state, call, activity, result)
            results.append(result)
        return results

    async def settle(self, spec: RunSpec, recorder: RunRecorder) -> None:
        """On resuming a run whose process died during a captured call: record that call's file changes in it now
        (`CallCapture.settle`)."""
        await self._capture.settle(spec, recorder)

    def warm(self, spec: RunSpec, plan: AgentPlan) -> None:
        """When the run may call Bash, start the workspace's first look in the background (`CallCapture.warm`)."""
        self._capture.warm(spec, plan)

    def _context(self, spec: RunSpec, recorder: RunRecorder, state: LoopState, call: ModelToolCall) -> ToolContext:
        plan = state.plan
        return ToolContext(
            workspace_root=spec.workspace_root,
            run_id=recorder.run_id,
            session_id=spec.session_id,
            tool_call_id=call.tool_call_id,
            agent_name=plan.agent_name,
            ids=self._ids,
            settings=plan.tool_settings,
            deadline=state.deadline,
        )

    async def _finish(
        self, recorder: RunRecorder, state: LoopState, call: ModelToolCall, activity: Active, result: ToolResult
    ) -> None:
        """Record a call's result (and the to-do list it updates) and show it. The result is held (`RunRecorder.hold`)
        and committed with the next fact the loop appends, which follows with no external action in between."""
        if result.is_error:
            recorder.hold(
                ToolCallFailedV2(activity_id=activity.activity_id, tool_call_id=call.tool_call_id, result=result)
            )
        else:
            recorder.hold(
                ToolCallCompletedV2(activity_id=activity.activity_id, tool_call_id=call.tool_call_id, result=result)
            )
        state.active = None
        if not result.is_error and activity.tool_name == TODO_TOOL and result.data is not None:
            todos = result.data.get("todos")
            if isinstance(todos, (list, tuple)):
                await recorder.append(TodosUpdatedV1.model_validate({"todos": todos}))
        self._observer.tool_result(recorder.run_id, str(call.tool_call_id), call.name, result.content, result.is_error)

    async def resume_call(
        self, spec: RunSpec, recorder: RunRecorder, state: LoopState, call: ModelToolCall, in_flight: InFlightCall
    ) -> ToolResult:
        """The call a stopped run had in flight. Answered approval: it never ran, so it runs now (the broker has the
        answer). Otherwise it may have run: a read-only tool runs again; any other is abandoned, never repeated."""
        projection = recorder.projection
        active = projection.active_activity_id if projection is not None else None
        if in_flight.approval_id is not None and active == in_flight.activity_id:
            # it waited at the gate for an approval, so it never ran: the answer decides (the broker has it), or,
            # with no answer it can trust, the gate asks again
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
            return await self.call(spec, recorder, state, call, continuing=in_flight.activity_id)
        side_effect = state.plan.side_effect(call.name)
        if side_effect == "read_only":
            self._observer.notice(recorder.run_id, f"{call.name} was running when the run stopped; running it again")
            return await self.call(spec, recorder, state, call)
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

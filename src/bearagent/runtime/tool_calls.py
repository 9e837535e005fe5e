"""One tool call of a run: `ToolCallRequested` (the budget check), the call through the agent's gate (or the
failure the loop decides itself: invalid arguments, an unknown tool, a turn's limits, the switch limit), its
result as a fact, the to-do list it updates; and, for a resumed run, the call that was in flight when the run
stopped (run again if read-only, answered from its approval, else abandoned, never repeated)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import threading
from collections.abc import Awaitable, Callable, Sequence

from bearagent.domain.diagnostics import name_list
from bearagent.domain.errors import ErrorInfo
from bearagent.domain.ids import ActivityId, IdGenerator, RunId
from bearagent.domain.models import ModelToolCall
from bearagent.domain.run_events import (
    FilesChangedV1,
    TodosUpdatedV1,
    ToolCallAbandonedV1,
    ToolCallCompletedV2,
    ToolCallFailedV2,
    ToolCallRequestedV2,
    ToolCallStartedV1,
)
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.ports import ApprovalDeferred, ToolContext
from bearagent.rewind.capture import CAPTURED_TOOLS, Late, capture_for
from bearagent.runtime.cursor import InFlightCall
from bearagent.runtime.loop_state import SWITCH_TOOL, TODO_TOOL, Active, LoopState, admit
from bearagent.runtime.observer import RunObserver
from bearagent.runtime.plan import AgentPlan, RunSpec
from bearagent.runtime.recorder import RunRecorder
from bearagent.runtime.review import review_changes, review_on

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
        self._recorder_of = recorder_of
        """Another run's recorder at its last sequence (the loop's), for a dead call's changes recorded late."""

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
        result = self._refused(state, call, request, limit_error)
        if result is None:
            if internal in CAPTURED_TOOLS:
                result = await self._captured(spec, recorder, state, call, request, internal)
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

    async def _record_late(self, recorder: RunRecorder, late: Late) -> None:
        """A dead call's file changes, recorded in its own run when that run still takes them (so that rewinding it
        undoes them), else in this one (the note names the dead run)."""
        where = recorder
        if late.run_id != str(recorder.run_id) and self._recorder_of is not None:
            with contextlib.suppress(Exception):  # no such run, or it moved on meanwhile: recorded here instead
                dead = await self._recorder_of(RunId(late.run_id))
                if dead is not None:
                    await dead.append(late.event)
                    where = dead
        if where is recorder:
            await recorder.append(late.event)
        self._observer.notice(
            recorder.run_id,
            f"recorded {len(late.event.changes)} file change(s) of a call whose process stopped (run {where.run_id})",
        )

    async def settle(self, spec: RunSpec, recorder: RunRecorder) -> None:
        """On resuming a run whose process died during a captured call: record that call's file changes in it now,
        before anything else changes the tree (`WorkspaceCapture.settle`)."""
        capture = capture_for(spec.workspace_root)
        try:
            late = await asyncio.to_thread(capture.settle, str(recorder.run_id))
        except OSError:
            return
        if late is None:
            return
        try:
            if late.event.changes:
                await recorder.append(late.event)
                self._observer.notice(
                    recorder.run_id, f"recorded {len(late.event.changes)} file change(s) of the call that was cut off"
                )
        except BaseException:
            capture.forget()  # not recorded: the marker stays and the next look finds them again
            raise
        await asyncio.to_thread(capture.settled)

    def warm(self, spec: RunSpec, plan: AgentPlan) -> None:
        """When the run may call Bash, start the workspace's first look (a full scan in a new process, the contents
        a new workspace stores once) in the background, while the model answers: the first Bash call then only
        waits for what is left of it (`WorkspaceCapture.warm`)."""
        if not any(tool.internal_name == "Bash" for tool in plan.tools.values()):
            return
        capture = capture_for(spec.workspace_root)

        def look() -> None:
            with contextlib.suppress(Exception):  # best effort: the call's own look does whatever is left undone
                capture.warm()

        threading.Thread(target=look, name="bearagent-rewind-warm", daemon=True).start()

    async def _captured(
        self,
        spec: RunSpec,
        recorder: RunRecorder,
        state: LoopState,
        call: ModelToolCall,
        request: ToolRequest,
        internal: str,
    ) -> ToolResult:
        """A call that may change workspace files, between two scans of the tree (`rewind/capture.py`): what it
        changed is recorded as `FilesChanged` before its result, each change with what it replaced."""
        capture = capture_for(spec.workspace_root)
        tool_call_id = str(call.tool_call_id)
        run_id = str(recorder.run_id)
        paths = capture.paths_of(call.arguments) if internal != "Bash" else None
        if paths is not None and capture.pending() is not None:
            paths = None  # a dead call's changes are pending: the whole tree is looked at, to record them
        try:
            if paths is not None:  # a file tool: only the path it names is read, before and after
                await asyncio.to_thread(capture.before_paths, run_id, tool_call_id, internal, paths)
                late = None
            else:
                _scanned, late = await asyncio.to_thread(capture.before, run_id, tool_call_id, internal)
        except OSError as exc:  # the state directory cannot be written: the call runs, reported as not captured
            result = await state.plan.gate.call(request, self._context(spec, recorder, state, call))
            await recorder.append(
                FilesChangedV1.model_validate(
                    {"tool_call_id": tool_call_id, "tool_name": internal, "note": f"not captured: {exc}"[:2_000]}
                )
            )
            return result
        if late is not None and late.event.changes:
            await self._record_late(recorder, late)
        context = self._context(spec, recorder, state, call)
        try:
            result = await state.plan.gate.call(request, context)
        finally:
            try:
                if paths is not None:
                    changed = await asyncio.to_thread(capture.after_paths, tool_call_id, internal, paths)
                else:
                    changed = await asyncio.to_thread(capture.after, tool_call_id, internal)
            except OSError as exc:
                changed = FilesChangedV1.model_validate(
                    {"tool_call_id": tool_call_id, "tool_name": internal, "note": f"not captured: {exc}"[:2_000]}
                )
            if changed.changes or changed.note is not None:
                await recorder.append(changed)
        if internal == "Bash" and changed.changes and review_on(context):  # sandbox.review: approve or revert
            result = await review_changes(state.plan.gate, context, request, result, changed, recorder, self._observer)
        return result

    def _refused(
        self, state: LoopState, call: ModelToolCall, request: ToolRequest, limit_error: ErrorInfo | None
    ) -> ToolResult | None:
        """The failure the loop decides itself, without the gate (None: the call goes to the gate)."""
        plan = state.plan
        if limit_error is not None:
            return ToolResult.failure(request, limit_error)
        if call.invalid_arguments is not None:
            return ToolResult.failure(
                request,
                ErrorInfo.of(
                    "validation",
                    "invalid_tool_arguments",
                    f"the arguments for {call.name} could not be used: {call.invalid_arguments}. "
                    "Call the tool again with a valid JSON object.",
                ),
            )
        if request.name == SWITCH_TOOL and state.switch_count >= plan.max_switches:
            return ToolResult.failure(
                request,
                ErrorInfo.of(
                    "permission",
                    "switch_limit",
                    f"this run already switched agents {state.switch_count} time(s), the most agent "
                    f"{plan.agent_name}'s policy allows (policy.max_switches: {plan.max_switches}); continue the "
                    "task with the current agent",
                ),
            )
        if plan.tools.get(call.name) is None and call.name in plan.taken_by_run:
            return ToolResult.failure(
                request,
                ErrorInfo.of(
                    "permission",
                    "tool_denied",
                    f"{call.name} call denied: this run's --disallowed-tools takes the tool {call.name!r} away. "
                    "To allow it, run again without it in --disallowed-tools.",
                ),
            )
        if plan.tools.get(call.name) is None:
            available = name_list(sorted(plan.tools)) or "none"
            return ToolResult.failure(
                request,
                ErrorInfo.of(
                    "tool",
                    "unknown_tool",
                    f"there is no tool named {call.name!r} for agent {plan.agent_name}; available tools: {available}",
                ),
            )
        return None

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

"""The file changes of a run's tool calls (`rewind/capture.py`): a call that may change workspace files runs between
two looks at the tree and what it changed is recorded as `FilesChanged` before its result (reviewed, with
`sandbox.review`, when Bash changed files); the changes of a call whose process died are recorded late, in its own
run when it still takes them; the first look starts in the background while the model answers."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Callable

from bearagent.domain.ids import RunId
from bearagent.domain.models import ModelToolCall
from bearagent.domain.run_events import FilesChangedV1
from bearagent.domain.tools import ToolRequest, ToolResult
from bearagent.ports import ToolContext
from bearagent.rewind.capture import Late, capture_for
from bearagent.runtime.loop_state import LoopState
from bearagent.runtime.observer import RunObserver
from bearagent.runtime.plan import AgentPlan, RunSpec
from bearagent.runtime.recorder import RunRecorder
from bearagent.runtime.review import review_changes, review_on


class CallCapture:
    """Captures the file changes of the tool calls of the runs of one loop."""

    def __init__(
        self,
        *,
        observer: RunObserver,
        recorder_of: Callable[[RunId], Awaitable[RunRecorder | None]] | None = None,
    ) -> None:
        self._observer = observer
        self._recorder_of = recorder_of
        """Another run's recorder at its last sequence (the loop's), for a dead call's changes recorded late."""

    async def record_late(self, recorder: RunRecorder, late: Late) -> None:
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

    async def captured(
        self,
        spec: RunSpec,
        recorder: RunRecorder,
        state: LoopState,
        call: ModelToolCall,
        request: ToolRequest,
        internal: str,
        context_of: Callable[[], ToolContext],
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
            result = await state.plan.gate.call(request, context_of())
            await recorder.append(
                FilesChangedV1.model_validate(
                    {"tool_call_id": tool_call_id, "tool_name": internal, "note": f"not captured: {exc}"[:2_000]}
                )
            )
            return result
        if late is not None and late.event.changes:
            await self.record_late(recorder, late)
        context = context_of()
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


__all__ = ["CallCapture"]

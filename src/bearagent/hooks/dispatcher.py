"""Fire one hook event: select the matching handlers, run them in parallel, merge their answers (docs/hooks.md).

- Selection (`hooks/selection.py`, over `hooks/matching.py`): a group's `matcher`, then each handler's `if`;
  identical handlers of one event run once; a handler with `once: true` runs once per session.
- Handlers of one event run concurrently, as in Claude Code; their answers are merged in config order
  (`hooks/outcome.py`), so the result never depends on who finished first.
- `async: true` (a command handler) starts in the background and the event does not wait for it: nothing it
  answers decides anything. Its execution is still an event of the run's log: it is recorded at the run's next
  hook point after it finished, and a run waits for its own background handlers (each bounded by its timeout)
  before its Stop / SubagentStop hooks fire (`wait_background`). The log is only written from those points, never
  from the background task itself, so a recording never races the loop's own appends. What it answers as
  `additionalContext` or `systemMessage` is kept for the model: the session's next prompt carries it (Claude Code
  delivers it "on the next conversation turn"), through the session's `pending_context` list.
Beyond Claude Code: `on_failure`, declared capabilities, and a cap on consecutive Stop/SubagentStop blocks.

An event no group names returns at once; the input builder, matchers and runners load with the first that has any.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from bearagent.domain._base import JsonValue
from bearagent.domain.specs import HookEventName, HookHandlerSpec, HookMatcherSpec
from bearagent.domain.trace_context import of_call
from bearagent.hooks.code_pins import code_changed, pin_code
from bearagent.hooks.execution_facts import HookRecorder, executed_fact, record_fact, stop_cap_fact
from bearagent.hooks.outcome import (
    HandlerOutcome,
    HookDecision,
    HookOutcome,
    background_outcome,
    merge,
    refuse_beyond_capabilities,
    resolve,
    rewake_text,
)
from bearagent.hooks.protocol import MAX_TEXT_CHARS, HandlerFailure, HandlerResult, HookReply, JsonDict, bound_text
from bearagent.hooks.selection import SelectedHandler, select_handlers
from bearagent.hooks.transcript import TranscriptWriter
from bearagent.runtime.plan import STOP_BLOCK_CAP

if TYPE_CHECKING:
    from bearagent.domain.trace_context import TraceContext
    from bearagent.hooks.mcp_tool import McpCaller
    from bearagent.hooks.runners import AgentJudge, Judge, PythonHookFunction, RunnerContext
    from bearagent.rewind.workspace_writes import WritesRecord
    from bearagent.sandbox.settings import SandboxSettings

firing_hook_event: ContextVar[str | None] = ContextVar("bearagent_firing_hook_event", default=None)
"""The hook event whose handler is running in this task (None outside handlers): a judge run started by a handler
uses it to never fire hooks of the same event again."""

DEFAULT_STOP_BLOCK_CAP = STOP_BLOCK_CAP
STOP_EVENTS: frozenset[str] = frozenset({"Stop", "SubagentStop"})


@dataclass(frozen=True, slots=True)
class HookSettings:
    workspace_root: Path
    session_id: str
    permission_mode: str = "default"
    stop_block_cap: int = DEFAULT_STOP_BLOCK_CAP
    max_context_chars: int = MAX_TEXT_CHARS
    env: Mapping[str, str] | None = None
    """Environment for command and http handlers (and `${VAR}` expansion); None = `os.environ` at fire time."""
    cwd: Path | None = None
    """The `cwd` input field; None = the workspace root."""
    sandbox: SandboxSettings | None = None
    """The merged sandbox settings: with `hooks: true`, command handlers run in the sandbox (None = off)."""
    writes: WritesRecord | None = None  # the user's record of runs' writes (rewind/workspace_writes.py); None: none
    trace_context: TraceContext | None = None
    """The run's W3C trace context (plugins'): http headers, commands' `TRACEPARENT`/`TRACESTATE` (None: none)."""


class HookDispatcher:
    """Runs the hooks of one session. `record` receives one `HookExecutedV1` per handler execution (sync or async);
    the caller appends it to the run's event log. `mcp_caller` calls a tool of a configured MCP server for
    `mcp_tool` handlers (None: the caller the runtime's MCP connections publish, `current_mcp_caller`)."""

    def __init__(
        self,
        groups: Sequence[HookMatcherSpec],
        *,
        settings: HookSettings,
        transcript: TranscriptWriter,
        python_handlers: Mapping[str, PythonHookFunction] | None = None,
        judge: Judge | None = None,
        agent_judge: AgentJudge | None = None,
        record: HookRecorder | None = None,
        mcp_caller: McpCaller | None = None,
        pending_context: list[str] | None = None,
    ) -> None:
        self._groups = tuple(groups)
        self._python_handlers = dict(python_handlers or {})
        self._judge = judge
        self._agent_judge = agent_judge
        self._record = record
        self._mcp_caller = mcp_caller
        self.transcript = transcript
        self.settings = settings
        self._stop_blocks: dict[tuple[str, str | None, str | None], int] = {}
        self._background: set[asyncio.Task[None]] = set()
        self._finished: list[tuple[str, HandlerOutcome, HookHandlerSpec]] = []
        self._wakes: dict[str, list[str]] = {}
        self.pending_context: list[str] = pending_context if pending_context is not None else []
        """Context for the model with the session's next prompt (SessionStart's, async handlers'): shared by the
        dispatchers of one session, taken by the UserPromptSubmit point (`take_context`)."""
        self._pins = pin_code(
            self._groups,
            settings.workspace_root,
            settings.env if settings.env is not None else os.environ,
            settings.sandbox,
        )

    @property
    def groups(self) -> tuple[HookMatcherSpec, ...]:
        return self._groups

    def has_hooks(self, event_name: HookEventName) -> bool:
        return any(group.event == event_name for group in self._groups)

    async def fire(
        self,
        event_name: HookEventName,
        payload: Mapping[str, JsonValue],
        *,
        tool_name: str | None = None,
        run_id: str | None = None,
        agent_name: str | None = None,
        permission_mode: str | None = None,
    ) -> HookOutcome:
        """Run every handler matching `event_name` with `payload` (the event's own fields; common fields are added
        here) and merge their answers. `tool_name` overrides the matcher target; `permission_mode` overrides the
        session's for this event. Hooks scoped to an agent (`HookMatcherSpec.agent`) run only when `agent_name`
        names that agent."""
        await self._record_finished()
        if not self.has_hooks(event_name):
            return HookOutcome(event=event_name)
        from bearagent.hooks.hook_input import CommonInput, build_hook_input, match_target
        from bearagent.hooks.mcp_tool import current_mcp_caller
        from bearagent.hooks.runners import RunnerContext, describe_handler

        fields = dict(payload)
        agent_id = fields.get("agent_id")
        stop_key = (event_name, run_id, agent_id if isinstance(agent_id, str) else None)
        if event_name in STOP_EVENTS and "stop_hook_active" not in fields:
            fields["stop_hook_active"] = self._stop_blocks.get(stop_key, 0) > 0
        settings = self.settings
        common = CommonInput(
            session_id=settings.session_id,
            transcript_path=str(self.transcript.path),
            cwd=str(settings.cwd or settings.workspace_root),
            hook_event_name=event_name,
            permission_mode=permission_mode or settings.permission_mode,
            run_id=run_id,
            agent_name=agent_name,
        )
        hook_input = build_hook_input(common, fields)
        target = tool_name if tool_name is not None else match_target(event_name, fields)
        selected, problems = select_handlers(
            self._groups,
            event_name,
            target,
            agent_name,
            fields,
            workspace_root=settings.workspace_root,
            session=self.transcript,
        )
        if not selected and not problems:
            return HookOutcome(event=event_name)
        ctx = RunnerContext(
            workspace_root=settings.workspace_root,
            env=dict(settings.env if settings.env is not None else os.environ),
            python_handlers=self._python_handlers,
            judge=self._judge,
            agent_judge=self._agent_judge,
            sandbox=settings.sandbox,
            mcp=self._mcp_caller or current_mcp_caller.get(),
            trace=of_call(settings.trace_context, run_id, fields.get("tool_use_id")),
            session_id=settings.session_id,
            writes=settings.writes,
        )
        waited = [item for item in selected if not item.spec.run_async]
        for item in selected:
            if item.spec.run_async:
                self._start_background(item, event_name, hook_input, ctx)
        results = await asyncio.gather(*(self._timed(item.spec, event_name, hook_input, ctx) for item in waited))
        outcomes: list[HandlerOutcome] = []
        for item, (result, duration_ms) in zip(waited, results, strict=True):
            outcome = resolve(
                event_name, item.spec, item.group.source, describe_handler(item.spec), result, duration_ms
            )
            outcomes.append(outcome)
            await self._emit(event_name, outcome, item.spec)
        merged = merge(
            event_name,
            fields,
            outcomes,
            problems,
            max_context_chars=settings.max_context_chars,
            background=len(selected) - len(waited),
        )
        if event_name in STOP_EVENTS:
            merged = await self._apply_stop_cap(merged, stop_key)
        return merged

    async def _timed(
        self, spec: HookHandlerSpec, event: str, hook_input: JsonDict, ctx: RunnerContext
    ) -> tuple[HandlerResult, int]:
        from bearagent.hooks.runners import run_handler

        firing_hook_event.set(event)  # this handler's own task: judges started from here know what fired them
        if spec.status_message:  # Claude Code's spinner text: a notice in the terminal as the handler starts
            from bearagent.runtime.run_context import current_run

            run = current_run.get()
            if run is not None:
                run.observer.notice(run.recorder.run_id, f"{event} hook: {spec.status_message}")
        started = time.monotonic()
        refused = await asyncio.to_thread(code_changed, self._pins, spec, self.settings.workspace_root)
        result = refused or await run_handler(spec, event, hook_input, ctx)
        if isinstance(result, HandlerFailure) and result.kind == "sandbox_unavailable":
            from bearagent.runtime.run_context import current_run

            if (run := current_run.get()) is not None:  # fail closed, and say so where the user looks
                run.observer.notice(run.recorder.run_id, f"{event} hook.sandbox_unavailable: {result.message}")
        return result, int((time.monotonic() - started) * 1000)

    # ---- async handlers ----------------------------------------------------------------------------------------

    def _start_background(self, item: SelectedHandler, event: str, hook_input: JsonDict, ctx: RunnerContext) -> None:
        from bearagent.hooks.runners import describe_handler

        async def run() -> None:
            result, duration_ms = await self._timed(item.spec, event, hook_input, ctx)
            if item.spec.async_rewake and (wake := rewake_text(result)) is not None:  # keyed by the firing run
                self._wakes.setdefault(str(hook_input.get("run_id")), []).append(wake)
            elif isinstance(result, HookReply) and "context" in item.spec.capabilities:
                said = [t for t in (result.system_message, result.additional_context) if t]
                if said:
                    self.pending_context.append(bound_text("\n".join(said), self.settings.max_context_chars))
            label = f"async {describe_handler(item.spec)}"
            self._finished.append(
                (event, background_outcome(item.spec, item.group.source, label, result, duration_ms), item.spec)
            )

        task = asyncio.ensure_future(run())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def take_context(self) -> list[str]:
        """The context waiting for the next prompt, once (the list stays the session's)."""
        taken = list(self.pending_context)
        self.pending_context.clear()
        return taken

    def take_wakes(self, run_id: str) -> list[str]:  # what the run's `asyncRewake` handlers said on exit 2, once
        return self._wakes.pop(run_id, [])

    async def wait_background(self) -> list[HandlerOutcome]:
        """Wait for the background handlers still running (each ends within its own timeout), record every finished
        one, and return them. The loop calls this before a run's Stop hooks, so they land in the run's log."""
        while self._background:
            await asyncio.gather(*tuple(self._background), return_exceptions=True)
        return await self._record_finished()

    async def _record_finished(self) -> list[HandlerOutcome]:
        done, self._finished = self._finished, []
        for event, outcome, spec in done:
            await self._emit(event, outcome, spec)
        return [outcome for _, outcome, _ in done]

    # ---- the log -------------------------------------------------------------------------------------------------

    async def _emit(self, event: str, outcome: HandlerOutcome, spec: HookHandlerSpec) -> None:
        if self._record is not None:
            await record_fact(self._record, executed_fact(event, outcome, spec))

    async def _apply_stop_cap(self, outcome: HookOutcome, key: tuple[str, str | None, str | None]) -> HookOutcome:
        if not outcome.blocked:
            self._stop_blocks.pop(key, None)
            return outcome
        count = self._stop_blocks.get(key, 0) + 1
        cap = self.settings.stop_block_cap
        if count <= cap:
            self._stop_blocks[key] = count
            return outcome
        self._stop_blocks.pop(key, None)
        note = (
            f"{outcome.event} hooks blocked stopping {count} times in a row; the cap ({cap}) overrides them and lets "
            "the agent stop (make the hook honour `stop_hook_active`: when it is true, let the agent stop)"
        )
        await record_fact(self._record, stop_cap_fact(outcome.event, note))
        return replace(
            outcome,
            blocked=False,
            block_reason=None,
            stop_cap_overridden=True,
            system_messages=(*outcome.system_messages, note),
        )


__all__ = [
    "DEFAULT_STOP_BLOCK_CAP",
    "HandlerOutcome",
    "HookDecision",
    "HookDispatcher",
    "HookOutcome",
    "HookRecorder",
    "HookSettings",
    "firing_hook_event",
    "refuse_beyond_capabilities",
]
